"""SOPK's 16-bit immediate is sign-extended where the operation is signed (s_cmpk_*_i32, s_movk_i32, s_addk_i32,
s_mulk_i32) and zero-extended where it is not (s_cmpk_*_u32): tinygrad's LLVM code compares an int16 against -449
as s_cmpk_gt_i32 s7, 0xfe3f."""

from __future__ import annotations

import pytest
from exec_harness import execute

CASES = [
    ("s_mov_b32 s7, 1\ns_cmpk_gt_i32 s7, 0xfe3f", 1),  # 1 > -449
    ("s_mov_b32 s7, 1\ns_cmpk_gt_u32 s7, 0xfe3f", 0),  # 1 > 65087: no
    ("s_movk_i32 s7, 0xfe3f\ns_cmpk_eq_i32 s7, 0xfe3f", 1),
    ("s_movk_i32 s7, 0xfe3f\ns_cmpk_eq_u32 s7, 0xfe3f", 0),  # 0xfffffe3f is not 0xfe3f
    ("s_mov_b32 s7, -2\ns_cmpk_lt_i32 s7, 0xffff", 1),  # -2 < -1
]


@pytest.mark.parametrize("arch", ["gfx1100", "gfx942"])
@pytest.mark.parametrize(("program", "scc"), CASES, ids=[c[0].split("\n")[-1] for c in CASES])
def test_a_sopk_compare_reads_its_immediate_as_its_type_does(arch, program, scc):
    w = execute(f"{program}\ns_cselect_b32 s1, 1, 0", arch, lanes=64 if arch == "gfx942" else 32)
    assert int(w.s[1, 0]) == scc
