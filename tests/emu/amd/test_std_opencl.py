"""Standard OpenCL C (tests/kernels/std: get_global_id, barrier, math, atomics, vloadn, convert_*, linked from libclc)
against numpy on the emulator for gfx1100 and gfx1200, wave32 and wave64; on gfx942 and gfx950, which the emulator
does not run, the corpus compiles and disassembles into the instructions those functions lower to."""

from __future__ import annotations

import copy
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import usergpu
from usergpu.emu.amd import launch
from usergpu.isa import amd as isa
from usergpu.isa.amd.codeobj import libclc, parse

_spec = importlib.util.spec_from_file_location("corpus", Path(__file__).parents[2] / "kernels" / "corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)
cases, code_object = corpus.std_cases, corpus.std_code_object
CONFIGS = [(c, arch, wave) for c in cases.CASES for arch in c.archs for wave in c.waves]
FILES = sorted(p.name for p in corpus.STD.glob("*.cl"))

pytestmark = pytest.mark.skipif(not libclc.LIBCLC.is_file(), reason=f"needs the Debian package {libclc.PACKAGE}")

# What OpenCL's built-in functions must lower to on each arch (gfx9 and gfx11+ spell the atomics apart; gfx12
# splits s_barrier into signal and wait)
ATOMICS = {"gfx11": ("add_u32", "sub_u32", "inc_u32", "min_i32", "max_u32", "and_b32", "or_b32", "xor_b32", "swap_b32",
                     "cmpswap_b32"),
           "gfx9": ("add", "sub", "inc", "smin", "umax", "and", "or", "xor", "swap", "cmpswap")}
BARRIER = {"gfx1100": {"s_barrier"}, "gfx1200": {"s_barrier_signal", "s_barrier_wait"}, "gfx942": {"s_barrier"},
           "gfx950": {"s_barrier"}}
LOWERED = {"ds_inc_u32", "v_sqrt_f32_e32", "v_rsq_f32_e32", "v_fma_f64", "v_div_scale_f64", "v_frexp_mant_f32_e32",
           "v_ldexp_f32", "v_cvt_f32_i32_e32", "v_cvt_u32_f32_e32", "v_cvt_f32_f64_e32", "v_cvt_f32_f16_e32",
           "v_med3_i32", "v_mul_hi_i32", "v_bcnt_u32_b32", "v_alignbit_b32"}


@pytest.mark.parametrize(("case", "arch", "wave"),
                         [pytest.param(c, a, w, id=f"{c.name}-{a}-w{w}") for c, a, w in CONFIGS])
def test_std_kernel_matches_numpy(case, arch, wave):
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = launch(code_object(case.file, arch, wave), case.kernel, case.grid, case.block, args, arch=arch)
    corpus.check(got, want, case)


def test_every_std_file_has_cases():
    assert {c.file for c in cases.CASES} == set(FILES)


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx942", "gfx950"])
def test_std_corpus_compiles_and_disassembles(arch):
    seen = set()
    for name in FILES:
        co = parse(code_object(name, arch, 32 if arch.startswith("gfx1") else 64))
        assert co.arch == arch
        assert set(co.kernels) == set(re.findall(r"__kernel\s+void\s+(\w+)", (corpus.STD / name).read_text()))
        seen |= {text.split()[0] for text in isa.disasm(bytes(co.section(".text").data), arch)}
    atomics = {f"global_atomic_{op}" for op in ATOMICS["gfx9" if arch.startswith("gfx9") else "gfx11"]}
    want = atomics | BARRIER[arch] | LOWERED
    assert want <= seen, sorted(want - seen)


def test_work_item_functions_read_the_dispatch_packet_and_the_v5_hidden_arguments():
    k = parse(code_object("workitem.cl", "gfx1100", 32)).kernels["ids"]
    assert [name for name, _, _ in k.user_sgprs] == ["dispatch_ptr", "kernarg_segment_ptr"]
    kinds = [a.value_kind for a in k.args]
    assert {"hidden_global_offset_x", "hidden_global_offset_z", "hidden_grid_dims"} <= set(kinds)


def test_std_kernels_through_the_runtime_on_the_mock_gpu():
    """The runtime's dispatch packet and hidden arguments give get_global_id and friends what the emulator does."""
    case = next(c for c in cases.CASES if c.name == "workitem.ids_3d")
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = usergpu.launch(code_object(case.file, "gfx1100", 32), case.kernel, case.grid, case.block, args,
                         device="MOCKKFD+AMD")
    corpus.check(got, want, case)
