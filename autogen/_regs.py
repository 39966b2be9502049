"""The record of the generated register tables (hand-written; regs_gc_* are tables of it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from usergpu.errors import FieldError


class Reg(NamedTuple):
    """A register: dword offset within segment base_idx of its IP instance, and its fields.

    base_idx is None for an indirect register (offset is then the index written to its block's
    index register) and for the few registers whose header gives no _BASE_IDX.
    """

    offset: int
    base_idx: int | None
    fields: dict[str, tuple[int, int]]  # field -> (shift, mask in place)

    def encode(self, **fields: int) -> int:
        """The register value with these fields set (others 0); a value too wide for its field is an error."""
        out = 0
        for name, value in fields.items():
            if name not in self.fields:
                raise FieldError(f"no field {name}; the fields are {', '.join(self.fields)}")
            shift, mask = self.fields[name]
            if (value << shift) & ~mask:
                raise FieldError(f"{name}={value:#x} does not fit its field (mask {mask:#x}, shift {shift})")
            out |= value << shift
        return out

    def decode(self, value: int) -> dict[str, int]:
        """Every field's value in a register value."""
        return {name: (value & mask) >> shift for name, (shift, mask) in self.fields.items()}

    def address(self, bases: Sequence[int]) -> int:
        """The dword address, given the IP instance's segment bases (IP discovery); the MMIO byte address is 4x."""
        if self.base_idx is None:
            raise FieldError("an indirect register, or one without a BASE_IDX, has no MMIO address")
        return bases[self.base_idx] + self.offset
