"""Small runtime types the generated modules are built from (hand-written; the modules are tables of them)."""

from __future__ import annotations

import ctypes
from typing import Any, NamedTuple


class Struct(ctypes.Structure):
    """A C struct; its repr shows the fields."""

    _cname_: str | None = None  # spelling in C, for the ABI test; None for an anonymous record

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{f[0]}={getattr(self, f[0])!r}' for f in self._fields_)})"


class Union(ctypes.Union):
    """A C union."""

    _cname_: str | None = None

    __repr__ = Struct.__repr__


class Ioctl(NamedTuple):
    """An ioctl request number (Linux _IOC encoding) and the struct it carries."""

    request: int
    struct: Any

    @property
    def nr(self) -> int:
        return self.request & 0xFF

    @property
    def type(self) -> int:
        return (self.request >> 8) & 0xFF

    @property
    def size(self) -> int:
        return (self.request >> 16) & 0x3FFF

    @property
    def dir(self) -> int:
        """_IOC_NONE 0, _IOC_WRITE 1, _IOC_READ 2 (bits 30..31)."""
        return self.request >> 30


class FieldMacro(NamedTuple):
    """A C macro that packs its arguments into a dword: const | (arg << shift) & mask, per argument."""

    const: int
    fields: tuple[tuple[str, int, int], ...]  # (parameter, shift, mask in place)

    def __call__(self, *args: int) -> int:
        if len(args) != len(self.fields):
            raise TypeError(f"takes {len(self.fields)} arguments ({', '.join(f[0] for f in self.fields)})")
        out = self.const
        for (_, shift, mask), a in zip(self.fields, args, strict=True):
            out |= (a << shift) & mask
        return out
