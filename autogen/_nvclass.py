"""The records of the generated NVIDIA class tables (hand-written; nv_classes is tables of them): a bit range in
NVIDIA's `hi:lo` / `MW(hi:lo)` form, a class method (a dword at an offset, with its fields) and a multi-word
structure such as the QMD (little-endian dwords, bit n of the structure is bit n % 32 of dword n // 32)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from usergpu.errors import FieldError


class Field(NamedTuple):
    """Bits hi..lo (inclusive); an indexed field (`NAME(i)` in the header) repeats every `stride` bits."""

    hi: int
    lo: int
    stride: int = 0

    @property
    def width(self) -> int:
        return self.hi - self.lo + 1

    def at(self, i: int | None = None) -> tuple[int, int]:
        """(hi, lo) of the field, or of element i of an indexed one."""
        if (i is None) != (self.stride == 0):
            raise FieldError("an indexed field takes an element index" if self.stride else "not an indexed field")
        if i is not None and i < 0:
            raise FieldError(f"element {i} of an indexed field")
        shift = (i or 0) * self.stride
        return self.hi + shift, self.lo + shift

    def encode(self, value: int, i: int | None = None) -> int:
        """value in place; a value that does not fit the field is an error."""
        lo = self.lo if i is None and not self.stride else self.at(i)[1]
        if not 0 <= value < 1 << (self.hi - self.lo + 1):
            raise FieldError(f"{value:#x} does not fit {self.width} bits")
        return value << lo

    def decode(self, word: int, i: int | None = None) -> int:
        lo = self.lo if i is None and not self.stride else self.at(i)[1]  # a plain field: no checks to make
        return (word >> lo) & ((1 << (self.hi - self.lo + 1)) - 1)


def _pack(fields: Mapping[str, Field], values: Mapping[str, int | Sequence[int]], bits: int) -> int:
    """The value of `bits` bits with the named fields set (an indexed field takes one value per element)."""
    out = 0
    for name, value in values.items():
        if name not in fields:
            raise FieldError(f"no field {name}; the fields are {', '.join(fields)}")
        f = fields[name]
        elements = [(i, v) for i, v in enumerate(value)] if f.stride else [(None, value)]
        for i, v in elements:
            if f.at(i)[0] >= bits:
                raise FieldError(f"{name}{'' if i is None else f'({i})'} lies past bit {bits - 1}")
            try:
                out |= f.encode(v, i)
            except FieldError as e:
                raise FieldError(f"{name}: {e}") from None
    return out


class Method(NamedTuple):
    """A class method: its byte offset in the class's method space (`NAME(i)` methods repeat every `stride` bytes)
    and the fields of the dword written to it."""

    offset: int
    stride: int
    fields: dict[str, Field]

    def address(self, i: int | None = None) -> int:
        if (i is None) != (self.stride == 0):
            raise FieldError("an indexed method takes an element index" if self.stride else "not an indexed method")
        return self.offset + (i or 0) * self.stride

    def encode(self, **fields: int) -> int:
        """The method's data dword with these fields set (others 0)."""
        return _pack(self.fields, fields, 32)

    def decode(self, value: int) -> dict[str, int]:
        return {name: f.decode(value) for name, f in self.fields.items() if not f.stride}


class Layout(NamedTuple):
    """A structure of `size` bytes made of bit ranges (the QMD)."""

    size: int
    fields: dict[str, Field]

    def encode(self, **fields: int | Sequence[int]) -> bytes:
        """The structure's bytes with these fields set, others 0; an indexed field takes a sequence, element i's
        value at index i."""
        return _pack(self.fields, fields, self.size * 8).to_bytes(self.size, "little")

    def get(self, data: bytes, name: str, i: int | None = None) -> int:
        """One field (element i of an indexed one) of the structure's bytes."""
        if len(data) != self.size:
            raise FieldError(f"{len(data)} bytes, the structure has {self.size}")
        return self.value(int.from_bytes(data, "little"), name, i)

    def value(self, bits: int, name: str, i: int | None = None) -> int:
        """get, from the structure's bytes as one little-endian integer (read once for many fields)."""
        f = self.fields.get(name)
        if f is None:
            raise FieldError(f"no field {name}")
        if f.stride and f.at(i)[0] >= self.size * 8:
            raise FieldError(f"{name}({i}) lies past bit {self.size * 8 - 1}")
        return f.decode(bits, i)

    def decode(self, data: bytes) -> dict[str, int]:
        """Every plain field (indexed ones are read element by element with get)."""
        return {name: self.get(data, name) for name, f in self.fields.items() if not f.stride}
