"""The wave executor against numpy: the kernel corpus (tests/kernels/emu) on gfx1100 and gfx1200 (wave32 and
wave64), gfx942 and gfx950 (wave64), and the typed errors a fault, a hang and an unimplemented instruction give."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import usergpu
from usergpu.emu.amd import launch
from usergpu.errors import GPUFault, GPUHang, UnsupportedInstruction

_spec = importlib.util.spec_from_file_location("corpus", Path(__file__).parents[2] / "kernels" / "corpus.py")
corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(corpus)
cases, code_object = corpus.cases, corpus.code_object
CONFIGS = [(c, arch, wave) for c in cases.CASES for arch, wave in cases.runs(c)]


@pytest.mark.parametrize(("case", "arch", "wave"),
                         [pytest.param(c, a, w, id=f"{c.name}-{a}-w{w}") for c, a, w in CONFIGS])
def test_corpus_kernel_matches_numpy(case, arch, wave):
    args = case.args(np.random.default_rng(0))
    want = case.reference(copy.deepcopy(args))
    got = launch(code_object(case.file, arch, wave), case.kernel, case.grid, case.block, args, arch=arch)
    corpus.check(got, want, case)


ERRORS = """
__kernel void oob(__global int *a, int n) { a[__builtin_amdgcn_workitem_id_x() * n] = 1; }
__kernel void spin(__global volatile int *a) { while (a[0] == 0) {} }
__kernel void cube(__global float *a) { a[0] = __builtin_amdgcn_cubeid(a[1], a[2], a[3]); }
__kernel void trap(__global int *a) { if (a[0]) __builtin_trap(); a[1] = 1; }
"""


def test_out_of_bounds_store_is_a_gpu_fault_with_address_wave_and_pc():
    co = usergpu.compile_opencl(ERRORS, "gfx1100")
    a = np.zeros(64, np.int32)
    with pytest.raises(GPUFault) as e:
        launch(co, "oob", (1, 1, 1), (32, 1, 1), [a, np.int32(1 << 20)])
    f = e.value
    assert f.access == "write" and f.kernel == "oob" and f.wave == 0 and f.pc > 0
    assert f.address % 4 == 0 and "v" in f.registers and f.registers["exec"] == 0xFFFFFFFF
    assert f"{f.address:#x}" in str(f) and f"{f.pc:#x}" in str(f)


def test_a_trap_is_a_gpu_fault_at_its_pc():
    co = usergpu.compile_opencl(ERRORS, "gfx1100")
    assert launch(co, "trap", (1, 1, 1), (32, 1, 1), [np.zeros(2, np.int32)])[0][1] == 1
    with pytest.raises(GPUFault, match="s_trap .*the kernel trapped.* kernel trap, wave 0"):
        launch(co, "trap", (1, 1, 1), (32, 1, 1), [np.ones(2, np.int32)])


def test_a_kernel_that_never_ends_is_a_gpu_hang():
    co = usergpu.compile_opencl(ERRORS, "gfx1200")
    with pytest.raises(GPUHang, match="spin: wave 0 ran 5000 instructions"):
        launch(co, "spin", (1, 1, 1), (32, 1, 1), [np.zeros(1, np.int32)], budget=5000)


def test_an_unimplemented_instruction_names_itself_and_its_pc():
    co = usergpu.compile_opencl(ERRORS, "gfx1100")
    with pytest.raises(UnsupportedInstruction, match=r"'v_cubeid_f32 .*' at pc 0x[0-9a-f]+ of kernel cube"):
        launch(co, "cube", (1, 1, 1), (32, 1, 1), [np.zeros(4, np.float32)])


@pytest.mark.parametrize(("arch", "wave"), [(a, w) for a in cases.ARCHS for w in cases.WAVES.get(a, (32, 64))])
def test_every_instruction_clang_emits_for_the_corpus_is_implemented(arch, wave):
    from exec_coverage import implemented

    from usergpu.isa import amd as isa
    from usergpu.isa.amd.codeobj import parse

    missing = set()
    for file in sorted({c.file for c in cases.CASES if (arch, wave) in cases.runs(c)}):
        text = bytes(parse(code_object(file, arch, wave)).text.data)
        offset = 0
        while offset < len(text):
            inst = isa.decode(text, arch, offset)
            if not implemented(arch, inst):
                missing.add(inst.mnemonic)
            offset += inst.size
    assert not missing, sorted(missing)


def test_denormals_flush_as_the_descriptor_says():
    src = "__kernel void dn(__global float *a) { uint i = __builtin_amdgcn_workitem_id_x(); a[i] = a[i] * 0.5f; }"
    a = np.full(32, 1e-39, np.float32)  # a denormal; half of it too
    kept = launch(usergpu.compile_opencl(src, "gfx1100"), "dn", (1, 1, 1), (32, 1, 1), [a])[0]
    flushed = launch(usergpu.compile_opencl(src, "gfx1100", ["-cl-denorms-are-zero"]), "dn", (1, 1, 1), (32, 1, 1),
                     [a])[0]
    np.testing.assert_array_equal(kept, a * np.float32(0.5))
    np.testing.assert_array_equal(flushed, np.zeros(32, np.float32))


def test_buffer_resources_bound_accesses_like_hardware():
    """MUBUF and s_buffer_load address through a buffer resource; past num_records loads read 0, stores drop."""
    from exec_harness import execute

    from usergpu.emu.memory import Memory

    mem = Memory()
    src, dst = np.arange(40, dtype=np.uint32), np.zeros(32, np.uint32)
    sgprs = {}
    for first, array, records in ((4, src, 40 * 4), (8, dst, 16 * 4)):
        base = mem.map(array)
        sgprs |= dict(zip(range(first, first + 4), (base & 0xFFFFFFFF, base >> 32, records, 0), strict=True))
    w = execute("""
        buffer_load_b32 v1, v0, s[4:7], 0 offen offset:4
        buffer_store_b32 v1, v0, s[8:11], 0 offen
        buffer_atomic_add_u32 v2, v0, s[8:11], 0 offen glc
        s_buffer_load_b64 s[0:1], s[4:7], 0x8
        s_buffer_load_b32 s2, s[4:7], 0x9c""", "gfx1100", v={0: np.arange(32) * 4, 2: [5] * 32}, s=sgprs, memory=mem)
    np.testing.assert_array_equal(dst[:16], np.arange(1, 17) + 5)  # loaded from +4, stored, then +5 atomically
    np.testing.assert_array_equal(dst[16:], 0)  # past the 16 records: dropped
    np.testing.assert_array_equal(w.v[2, 0, :16], np.arange(1, 17))  # the atomic returned the old values
    assert list(w.s[0:3, 0]) == [2, 3, 39]


def test_lds_accesses_past_the_allocation_read_0_and_write_nothing_like_hardware():
    """The harness's workgroup has 64 KiB of LDS: lanes 0..15 address its last 64 bytes, lanes 16..31 the 64 past
    it. There a store and an atomic write nothing and a load (and an atomic's returned value) is 0, on both backends
    alike; no fault."""
    from exec_harness import execute

    w = execute("""
        ds_store_b32 v0, v1
        ds_add_rtn_u32 v2, v0, v1
        ds_load_b32 v3, v0
        s_waitcnt lgkmcnt(0)""", "gfx1100", v={0: 0xFFC0 + 4 * np.arange(32), 1: 7 + np.arange(32), 2: [99] * 32})
    lanes = np.arange(32)
    np.testing.assert_array_equal(w.v[2, 0], np.where(lanes < 16, 7 + lanes, 0))  # the old value: the store's
    np.testing.assert_array_equal(w.v[3, 0], np.where(lanes < 16, 2 * (7 + lanes), 0))


def test_a_jump_out_of_the_code_is_an_instruction_fetch_fault():
    from exec_harness import execute

    with pytest.raises(GPUFault) as e:  # s_setpc to 64 KiB past the code: nothing is mapped there
        execute("s_mov_b32 s0, 0x10000\ns_mov_b32 s1, 0\ns_setpc_b64 s[0:1]", "gfx1100")
    assert (e.value.access, e.value.address, e.value.pc, e.value.why) == ("execute", 0x10000, 0x10000, "not mapped")
