"""Per-instruction edge tests of the PTX emulator: for every opcode of its semantics table, cases over types,
modifiers and edge values (each lane of one launch its own inputs), checked against host references written
independently of the emulator (ptx_refs: exact fractions rounded once, integer definitions, the ISA's NaN and
special-value rules); ptxas accepts every kernel, so the PTX tested is real. Atomics under contention are checked
for what any order of the lanes gives."""

from __future__ import annotations

from collections import Counter

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import ptx_cases_compare
import ptx_cases_control
import ptx_cases_cvt
import ptx_cases_float
import ptx_cases_int
import ptx_cases_matrix
import ptx_cases_mem
import pytest
from ptx_harness import HEADER, Case, check, kernel, run

from usergpu.emu.nv.ptx import semantics

FAMILIES = (ptx_cases_float, ptx_cases_int, ptx_cases_compare, ptx_cases_cvt, ptx_cases_mem, ptx_cases_control,
            ptx_cases_matrix)
CASES: list[Case] = [c for family in FAMILIES for c in family.cases()]
BY_OPCODE: dict[str, list[Case]] = {op: [c for c in CASES if c.opcode == op] for op in semantics.TABLE}



def test_case_names_are_unique() -> None:
    assert not [n for n, k in Counter(c.name for c in CASES).items() if k > 1]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_instruction(case: Case) -> None:
    check(case)


@pytest.mark.skipif(not nv_corpus.tool("bin/ptxas"),
                    reason="ptxas (PyPI nvidia-cuda-nvcc, the nv extra) is not installed")
@pytest.mark.parametrize("opcode", sorted(op for op, cases in BY_OPCODE.items() if cases))
def test_ptxas_accepts(opcode: str) -> None:
    """Every case's kernel assembles for sm_90: those without module-level text together in one module."""
    from usergpu import assemble_ptx

    cases = BY_OPCODE[opcode]
    plain = [c for c in cases if not c.module]
    if plain:
        assemble_ptx(HEADER.format(arch="sm_90") + "".join(kernel(c, f"k{i}") for i, c in enumerate(plain)), "sm_90")
    for c in cases:
        if c.module:
            assemble_ptx(HEADER.format(arch="sm_90") + c.module + kernel(c), "sm_90")


# ---- atomics under contention: what any order of the lanes gives ------------------------------------------------
LANES = 256


def _contended(body: str, ins: tuple, outs: tuple, lanes: list, decls: str = "") -> list[list[int]]:
    return run(Case("contended", "atom", body, ins, outs, lanes, lambda *a: None, decls=decls))


def test_atom_add_contended_global() -> None:
    """Every lane adds 1 to one word: the old values are 0..n-1 in some order, the word ends at n."""
    got = _contended("ld.param.u64 %a0, [g0];\ncvta.to.global.u64 %a0, %a0;\natom.global.add.u32 %o0, [%a0], 1;",
                     ("m4",), ("b32",), [(0,)] * LANES, ".reg .b64 %a0;")
    assert sorted(g[1] for g in got) == list(range(LANES))
    assert got[0][0] == LANES


def test_atom_shared_contended_per_block() -> None:
    """Shared atomics of different blocks touch different words: each block's counter ends at its thread count,
    and a block's olds are 0..127."""
    got = _contended("""
        mov.u32 %t0, %tid.x;
        setp.eq.u32 %p0, %t0, 0;
        @%p0 st.shared.b32 [cnt], 0;
        bar.sync 0;
        atom.shared.inc.u32 %o0, [cnt], 1000;
        bar.sync 0;
        ld.shared.b32 %o1, [cnt];""", (), ("b32", "b32"), [()] * LANES,
        ".shared .align 4 .b32 cnt;\n.reg .b32 %t0;\n.reg .pred %p0;")
    for block in range(LANES // 128):
        olds = sorted(g[0] for g in got[block * 128:(block + 1) * 128])
        assert olds == list(range(128)) and {g[1] for g in got[block * 128:(block + 1) * 128]} == {128}


def test_atom_cas_contended() -> None:
    """Every lane tries CAS(0 -> its index + 1) on one word: exactly one sees 0, the others see the winner's
    value, which the word keeps."""
    got = _contended("""
        ld.param.u64 %a0, [g0];
        cvta.to.global.u64 %a0, %a0;
        add.u32 %t0, %gi, 1;
        atom.global.cas.b32 %o0, [%a0], 0, %t0;""", ("m4",), ("b32",), [(0,)] * LANES, ".reg .b64 %a0;\n.reg .b32 %t0;")
    olds = [g[1] for g in got]
    final = got[0][0]
    assert olds.count(0) == 1 and 1 <= final <= LANES
    assert olds.index(0) == final - 1 and all(o == final for o in olds if o)


def test_atom_exch_and_inc_contended() -> None:
    """exch: the olds and the final word are the initial value and every lane's value, once each; inc with wrap
    at 9: the word goes round to n mod 10, each of 0..9 seen as often as n increments pass it."""
    got = _contended("""
        ld.param.u64 %a0, [g0];
        cvta.to.global.u64 %a0, %a0;
        add.u32 %t0, %gi, 1000;
        atom.global.exch.b32 %o0, [%a0], %t0;
        atom.global.inc.u32 %o1, [%a0+4], 9;""", ("m8",), ("b32", "b32"), [(7,)] * LANES,
        ".reg .b64 %a0;\n.reg .b32 %t0;")
    exch_final, inc_final = got[0][0] & 0xFFFFFFFF, got[0][0] >> 32
    assert sorted([g[1] for g in got] + [exch_final]) == sorted([7] + [1000 + k for k in range(LANES)])
    assert inc_final == LANES % 10
    assert Counter(g[2] for g in got) == {v: LANES // 10 + (v < LANES % 10) for v in range(10)}


def test_red_add_f32_contended() -> None:
    """Integers in f32 add exactly in any order."""
    values = np.arange(LANES, dtype=np.float32) - 100
    got = _contended("ld.param.u64 %a0, [g0];\ncvta.to.global.u64 %a0, %a0;\nred.global.add.f32 [%a0], %i1;",
                     ("m4", "b32"), (), [(0, int(v.view(np.uint32))) for v in values], ".reg .b64 %a0;")
    assert np.array(got[0][0], np.uint32).view(np.float32) == values.sum()
