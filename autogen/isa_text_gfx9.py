"""Operand printers particular to gfx9 (hand-written facts of LLVM's AMDGPU syntax, not generated); merged into
isa_text.PRINTERS."""

from __future__ import annotations

from usergpu.autogen import isa_text

PRINTERS: dict[str, tuple[tuple[str, ...], isa_text.Printer]] = {}
