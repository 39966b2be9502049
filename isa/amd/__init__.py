"""What AMD's real and emulated paths both read: the instruction set of gfx1100, gfx1200, gfx942 and gfx950 (decode,
disassemble, assemble; their printers text/ and encodings encoding/), code objects (codeobj/), the dispatch register
math (dispatch.py), the SQTT codec (sqtt/) and the hardware facts drivers and mocks share (hw/).

    isa.decode(data, "gfx1100", offset)  -> Instruction (family, opcode, mnemonic, operands, size, ...)
    isa.disasm(data, "gfx1100")          -> ["s_load_b64 s[2:3], s[0:1], null", ...]  (llvm-objdump's text)
    isa.asm("v_add_f32 v0, v1, v2", "gfx1100") -> bytes

The opcode tables are learned from LLVM (usergpu.autogen.isa_<arch>, read at an arch's first use); illegal bytes
raise DecodeError, arguments these functions cannot take ArgumentError (a DecodeError: an unknown arch, data that
is not bytes, an offset outside the data), assembly that does not encode AsmError.
"""

from __future__ import annotations

import importlib

# name -> the module that holds it, loaded on first use: the code-object readers below this package (codeobj/,
# dispatch.py, hw/) do not pay for the instruction tables' machinery
_LAZY = {"AsmError": "assembler", "asm": "assembler",
         **{n: "decoder" for n in ("ARCHS", "ArgumentError", "Instruction", "Operand", "decode", "decode_all")}}
__all__ = ["ARCHS", "ArgumentError", "AsmError", "Instruction", "Operand", "asm", "decode", "decode_all", "disasm"]


def disasm(data: bytes, arch: str) -> list[str]:
    """One line per instruction, exactly as llvm-objdump -d --mcpu=ARCH prints it (without its comment)."""
    from usergpu.isa.amd.decoder import decode_all

    return [inst.text for inst in decode_all(data, arch)]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
