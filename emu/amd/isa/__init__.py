"""AMD GPU ISA: decode, disassemble and assemble machine code of gfx1100, gfx1200, gfx942 and gfx950.

    isa.decode(data, "gfx1100", offset)  -> Instruction (family, opcode, mnemonic, operands, size, ...)
    isa.disasm(data, "gfx1100")          -> ["s_load_b64 s[2:3], s[0:1], null", ...]  (llvm-objdump's text)
    isa.asm("v_add_f32 v0, v1, v2", "gfx1100") -> bytes

The opcode tables are learned from LLVM (usergpu.autogen.isa_<arch>, read at an arch's first use); illegal bytes
raise DecodeError, arguments these functions cannot take ArgumentError (a DecodeError: an unknown arch, data that
is not bytes, an offset outside the data), assembly that does not encode AsmError.
"""

from usergpu.emu.amd.isa.asm import AsmError, asm
from usergpu.emu.amd.isa.decoder import ARCHS, ArgumentError, Instruction, Operand, decode, decode_all


def disasm(data: bytes, arch: str) -> list[str]:
    """One line per instruction, exactly as llvm-objdump -d --mcpu=ARCH prints it (without its comment)."""
    return [inst.text for inst in decode_all(data, arch)]


__all__ = ["ARCHS", "ArgumentError", "AsmError", "Instruction", "Operand", "asm", "decode", "decode_all", "disasm"]
