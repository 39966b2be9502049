"""Operands as the executor reads and writes them, parsed once from the decoded instruction's LLVM text.

The text is LLVM's exact syntax (the decoder guarantees it), so it says everything: the register file and range
(v5, s[4:5], ttmp3, vcc, exec_lo, null), an inline constant or literal, and VOP modifiers (-x, |x|, neg(..)),
true16 halves (v1.h).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, replace
from functools import cache

import numpy as np

# scalar register numbers of gfx11/gfx12 (ISA "scalar operand" encoding)
SPECIAL = {"vcc_lo": 106, "vcc_hi": 107, "null": 124, "m0": 125, "exec_lo": 126, "exec_hi": 127,
           "vcc": 106, "exec": 126, "flat_scratch_lo": 102, "flat_scratch_hi": 103, "flat_scratch": 102,
           "xnack_mask_lo": 104, "xnack_mask_hi": 105, "xnack_mask": 104}  # the last two pairs: gfx9's names
PAIRS = {"vcc", "exec", "flat_scratch", "xnack_mask"}
SRC_SPECIAL = {"src_scc": "scc", "src_execz": "execz", "src_vccz": "vccz"}
# the apertures' registers: high 32 bits of where flat addresses reach LDS and scratch (as the emulator maps them)
APERTURES = {"src_shared_base": 0x10000, "src_shared_limit": 0x1FFFF, "src_private_base": 0x20000,
             "src_private_limit": 0x2FFFF, "src_pops_exiting_wave_id": 0, "src_flat_scratch_base_lo": 0,
             "src_flat_scratch_base_hi": 0}
FLOATS = {"0.5": 0.5, "-0.5": -0.5, "1.0": 1.0, "-1.0": -1.0, "2.0": 2.0, "-2.0": -2.0, "4.0": 4.0, "-4.0": -4.0,
          "0.15915494": 0.15915494309189532, "0.15915494309189532": 0.15915494309189532}
INV_2PI_BITS = {"f32": 0x3E22F983, "f16": 0x3118, "f64": 0x3FC45F306DC9C882, "bf16": 0x3E22}
_REG = re.compile(r"^(v|s|ttmp|a)(?:(\d+)|\[(\d+):(\d+)\])(?:\.([lh]))?$")


@dataclass(frozen=True)
class Operand:
    kind: str  # 'v', 's', 'a' (gfx90a+ AccVGPR), 'int' (inline integer), 'float' (inline float), 'lit' (32-bit
    # literal), 'special', 'aperture' (src_shared_base ...), 'off'
    index: int = 0  # first register (s: the scalar encoding number, so ttmp0 is 108)
    count: int = 1
    value: float | int = 0
    neg: bool = False
    abs: bool = False
    half: int | None = None  # true16: 0 low, 1 high
    text: str = ""
    sext: bool = False  # gfx9 SDWA's sext(..): the selected bits sign-extended
    zero_high: bool = False  # gfx9: a 16-bit result written here clears the register's high half (ZERO_HIGH)


def parse(text: str) -> Operand:
    if text.startswith("sext(") and text.endswith(")"):
        return replace(parse(text[5:-1]), sext=True, text=text)
    t, neg, ab = text, False, False
    if t.startswith("neg(") and t.endswith(")"):
        t, neg = t[4:-1], True
    elif t.startswith("-") and len(t) > 1 and (t[1] in "|vst" or t[1:].startswith(("exec", "vcc", "m0", "null"))):
        t, neg = t[1:], True
    if t.startswith("|") and t.endswith("|"):
        t, ab = t[1:-1], True
    if t.startswith("lit(") and t.endswith(")"):  # a literal LLVM marks as such where an inline one would do
        return Operand("lit", value=int(t[4:-1], 0), neg=neg, abs=ab, text=text)
    m = _REG.match(t)
    if m:
        first = int(m.group(2) or m.group(3))
        count = 1 if m.group(2) else int(m.group(4)) - first + 1
        half = None if m.group(5) is None else int(m.group(5) == "h")
        kind = m.group(1) if m.group(1) in "va" else "s"
        return Operand(kind, first + 108 * (m.group(1) == "ttmp"), count, 0, neg, ab, half, text)
    if t in SPECIAL:
        return Operand("s", SPECIAL[t], 2 if t in PAIRS else 1, 0, neg, ab, None, text)
    if t in APERTURES:
        return Operand("aperture", value=APERTURES[t], neg=neg, abs=ab, text=text)
    if t in SRC_SPECIAL:
        return Operand("special", 0, 1, SRC_SPECIAL[t], neg, ab, None, text)
    if t == "off":
        return Operand("off", text=text)
    if t in FLOATS:
        return Operand("float", value=FLOATS[t], neg=neg, abs=ab, text=text)
    if re.fullmatch(r"-?\d+|-0x[0-9a-fA-F]+", t):  # the second: a negative immediate offset (gfx9 SMEM)
        return Operand("int", value=int(t, 0), neg=neg, abs=ab, text=text)
    if re.fullmatch(r"0x[0-9a-fA-F]+", t):
        return Operand("lit", value=int(t, 16), neg=neg, abs=ab, text=text)
    raise ValueError(f"operand {text!r}")


# a float constant gives a packed integer operation its single-precision bits (LLVM's model of the hardware; an
# unpacked one's float constant prints, and so reads, as its f16 bits: 0x4000)
INT16 = ("b16", "u16", "i16")


@cache  # read on every execution of the instruction: work it out once per operand and type
def high_half(op: Operand, typ: str) -> Operand:
    """The high 16 bits of the dword a constant supplies to a 16-bit source of type typ, which VOP3P's op_sel /
    op_sel_hi pick as its high half: an inline integer's sign extension, a literal's top half, a float's
    single-precision top half for an integer operation (v_pk_add_u16's 2.0 is 0x4000 there) and nothing beside a
    16-bit float (LLVM sets op_sel_hi 0 for a constant both halves are to read, and op_sel 1 for a zero shift)."""
    if op.kind in ("int", "lit"):
        value = (op.value >> 16) & 0xFFFF
    else:
        value = const_bits(op, "f32") >> 16 if typ in INT16 else 0
    return Operand("lit", value=value, text=op.text)


def const_bits(op: Operand, typ: str) -> int:
    """The bits an inline constant or literal supplies to an operand of type typ (e.g. 'f32', 'u64', 'f16')."""
    width = int(re.sub(r"\D", "", typ) or 32)
    mask = (1 << width) - 1
    if op.kind == "int":
        return op.value & mask
    if op.kind == "aperture":  # read as 64 bits, the aperture's base address; as 32, its high half
        return op.value << 32 if width == 64 else op.value
    if op.kind == "lit":
        if width == 64:  # a 32-bit literal: the high half of a double, else zero- or sign-extended
            return op.value << 32 if typ == "f64" else (op.value | (0xFFFFFFFF00000000 if typ == "i64"
                                                                     and op.value >> 31 else 0))
        return op.value & mask
    f = op.value
    if typ in INT16:  # the low half of the single-precision value (2.0 gives 0, 1/2pi 0xf983)
        return const_bits(op, "f32") & mask
    if f == 0.15915494309189532 and typ in INV_2PI_BITS:
        return INV_2PI_BITS[typ]
    if typ == "f64" or width == 64:
        return struct.unpack("<Q", struct.pack("<d", f))[0]
    if typ == "f16":
        return int(np.float16(f).view(np.uint16))
    if typ == "bf16":
        return struct.unpack("<I", struct.pack("<f", f))[0] >> 16
    return struct.unpack("<I", struct.pack("<f", f))[0]
