"""true16 on RDNA3 and RDNA4: a 16-bit operand is the low or high half of a VGPR (op_sel in VOP3, bit 7 of the
register in VOP1/2/C), and a write to one half keeps the other. gfx12's tables are learned in LLVM's real-true16
mode, as gfx11's are, so both arches run these the same way; tinygrad's LLVM code for gfx12 relies on the halves.
An SGPR source's half is op_sel's too (VOP3, VOP3P, v_fma_mix): the text shows it only there; a VOP3P constant
supplies the halves of its dword (LLVM clears op_sel_hi where both halves are to read it), a float's
single-precision dword where the operation is on integers."""

from __future__ import annotations

import pytest
from exec_harness import execute

V0, V1 = 0xBC10_8088, 0x1234_5678  # v0.h = -1.015625 (f16), v0.l = a negative denormal
S0 = 0x3C00_4000  # s0: 1.0 (f16) high, 2.0 low

CASES = [  # as LLVM prints them (VOP3's op_sel shown)
    ("v_and_b16 v1.h, 0x7f, v0.h op_sel:[0,1,1]", 1, 0x0010_5678),  # VOP3, op_sel on a source and the destination
    ("v_lshrrev_b16 v1.l, 8, v0.h op_sel:[0,1,0]", 1, 0x1234_00BC),
    ("v_add_nc_u16 v1.h, 0x2000, v0.l op_sel:[0,0,1]", 1, 0xA088_5678),
    ("v_mov_b16_e32 v1.h, v0.l", 1, 0x8088_5678),  # VOP1: the destination's half by bit 7 (v129)
    ("v_cvt_f32_f16_e32 v2, v0.h", 2, 0xBF82_0000),  # VOP1: the source's half by bit 7
    ("v_add_f16_e32 v1.l, v0.l, v0.h", 1, 0x1234_BC10),  # VOP2
    ("v_cndmask_b16 v1.h, 0x5f00, v0.l, vcc_lo", 1, 0x5F00_5678),  # vcc_lo 0: the first source
    ("v_cmp_eq_u16_e32 vcc_lo, 0x88, v0.h\nv_cndmask_b16 v1.h, v0.l, v0.h, vcc_lo", 1, 0x8088_5678),  # VOPC
    ("v_add_f16_e64 v1.l, s0, v0.l op_sel:[1,0,0]", 1, 0x1234_3C00),  # s0's high half: 1.0 (and a denormal)
    ("v_add_f16_e64 v1.l, s0, v0.l", 1, 0x1234_4000),  # its low half: 2.0
    ("v_pk_add_u16 v1, v1, s0", 1, 0x4E34_9678),  # each half of s0 in its own lane half
    ("v_pk_lshlrev_b16 v1, 4, s0 op_sel_hi:[0,1]", 1, 0xC000_0000),  # tinygrad's fp8 sign: the constant's low half
    ("v_fma_mix_f32 v2, s0, 1.0, 0 op_sel:[1,0,0] op_sel_hi:[1,0,0]", 2, 0x3F80_0000),
    # a VOP3P constant is a dword whose halves op_sel picks: 8's high half is 0, -1's 0xffff, 1.0's (f16) 0
    ("v_pk_lshrrev_b16 v1, 8, v0 op_sel:[1,0] op_sel_hi:[0,0]", 1, 0x0080_8088),  # tinygrad's byte split
    ("v_pk_add_u16 v1, v1, -1", 1, 0x1233_5677),
    ("v_pk_add_f16 v1, v0, 1.0", 1, 0xBC10_3C00),  # only the low half adds 1.0 (the denormal vanishes)
    ("v_pk_add_f16 v1, v0, 1.0 op_sel_hi:[1,0]", 1, 0xA400_3C00),  # both read its low half: -1.015625 + 1.0
    # to an integer operation a float constant is its single-precision dword: 2.0 is 0x40000000, 1/2pi 0x3e22f983
    ("v_pk_add_u16 v1, v1, 2.0 op_sel:[0,1]", 1, 0x5234_9678),  # tinygrad's emulated half: exponent + 0x4000
    ("v_pk_add_u16 v1, v1, 2.0", 1, 0x5234_5678),
    ("v_pk_add_u16 v1, v1, 0.15915494", 1, 0x5056_4FFB),
]


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200"])
@pytest.mark.parametrize(("program", "reg", "want"), CASES, ids=[c[0].split("\n")[-1] for c in CASES])
def test_16_bit_operands_are_vgpr_halves(arch, program, reg, want):
    w = execute(program, arch, v={0: [V0] * 32, 1: [V1] * 32, 2: [0] * 32}, s={0: S0, 106: 0})
    assert int(w.v[reg, 0, 0]) == want, f"{arch}: v{reg} = {int(w.v[reg, 0, 0]):#010x}, want {want:#010x}"
