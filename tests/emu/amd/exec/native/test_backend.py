"""Which backend runs, and what the native one keeps of the reference's behaviour: the choice by USERGPU_EMU, the
fallback without clang-22, traced and profiled dispatches on the reference (said once), the on-disk kernel cache,
time slices, and every ALU opcode of the semantics table getting C from it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import test_exec_opcodes

import usergpu
from usergpu.emu import native as shared_native
from usergpu.emu.amd import launch
from usergpu.emu.amd.exec import dispatch
from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.native import build, codegen, executor_class
from usergpu.emu.amd.exec.native import executor as native
from usergpu.emu.amd.exec.native.cexpr import Untranslatable
from usergpu.emu.native import build as shared_build
from usergpu.errors import LaunchError
from usergpu.isa import amd as isa

SAXPY = "__kernel void saxpy(__global float *y, __global const float *x, float a) { int i = get_global_id(0); " \
        "y[i] = a * x[i] + y[i]; }"
# opcodes the semantics table defines with no C form: numpy's vector transcendentals (exp2, log2, sin, cos) are its
# own implementations, not libm's, so C could not match them bit for bit; and the few whose expression calls a
# helper with a keyword or a Python-only algorithm. They run on the reference backend, one wave at a time.
NOT_NATIVE = {"v_exp_f32", "v_exp_f16", "v_log_f32", "v_log_f16", "v_sin_f32", "v_sin_f16", "v_cos_f32",
              "v_cos_f16", "v_s_exp_f32", "v_s_exp_f16", "v_s_log_f32", "v_s_log_f16", "v_msad_u8",
              "v_trig_preop_f64", "v_cvt_f32_bf16"}  # the last: gfx950's, built in exec/cdna.py
# vector instructions built outside the table's expressions that still go to the reference
NOT_YET = ("v_dot", "v_fma_mix", "v_cvt_f32_fp8", "v_cvt_f32_bf8", "v_cvt_pk_f32_", "v_cvt_pk_fp8", "v_cvt_pk_bf8",
           "v_cvt_sr_")


def test_usergpu_emu_picks_the_backend(monkeypatch):
    monkeypatch.setenv("USERGPU_EMU", "numpy")
    assert executor_class() is Executor
    monkeypatch.setenv("USERGPU_EMU", "native")
    assert executor_class() is native.NativeExecutor
    monkeypatch.delenv("USERGPU_EMU")
    assert executor_class() is native.NativeExecutor
    monkeypatch.setenv("USERGPU_EMU", "fast")
    with pytest.raises(LaunchError, match="USERGPU_EMU='fast'.*native.*numpy"):
        executor_class()


def test_without_clang_the_reference_runs_after_one_warning(monkeypatch, capsys):
    monkeypatch.setattr(build, "compiler", lambda: None)
    monkeypatch.setattr(shared_native, "_SAID", set())
    assert executor_class() is Executor and executor_class() is Executor
    assert capsys.readouterr().err.count("clang-22 is not installed") == 1


def test_a_traced_dispatch_runs_on_the_reference_and_says_so_once(monkeypatch, capfd):
    monkeypatch.setenv("USERGPU_TRACE", "1")
    monkeypatch.setattr(shared_native, "_SAID", set())
    co = usergpu.compile_opencl(SAXPY, "gfx1100")
    for _ in range(2):
        y = launch(co, "saxpy", (1, 1, 1), (32, 1, 1), [np.ones(32, np.float32), np.arange(32, dtype=np.float32),
                                                         np.float32(2)])[0]
        assert (y == 2 * np.arange(32) + 1).all()
    err = capfd.readouterr().err
    assert err.count("runs on the numpy reference backend") == 1


def test_a_kernel_compiles_once_and_is_loaded_from_the_disk_cache(tmp_path):
    program = textwrap.dedent(f"""
        import numpy as np, usergpu
        from usergpu.emu.amd import launch
        from usergpu.emu.amd.exec.native import codegen
        if AGAIN:  # the second process must not generate C: the library is on disk
            codegen.Emitter.source = None
        co = usergpu.compile_opencl({SAXPY!r}, "gfx1100")
        y = launch(co, "saxpy", (1, 1, 1), (64, 1, 1), [np.ones(64, np.float32), np.ones(64, np.float32),
                                                        np.float32(3)])[0]
        assert (y == 4).all()
    """)
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "USERGPU_EMU": "native"}
    for again in (False, True):
        subprocess.run([sys.executable, "-c", program.replace("AGAIN", str(again))], env=env, check=True, timeout=120)
    assert len(list((tmp_path / "usergpu" / "native").glob("*.so"))) == 1


def test_a_time_sliced_dispatch_yields_and_ends_with_the_same_answer():
    code = isa.asm("s_mov_b32 s1, 0\ns_mov_b32 s2, 0x30d40\nloop:\ns_add_u32 s1, s1, 1\nv_add_nc_u32 v1, v1, 1\n"
                   "s_cmp_lt_u32 s1, s2\n"
                   "s_cbranch_scc1 loop\ns_endpgm", "gfx1100")
    w_native = _run_sliced(code)
    assert (w_native.v[1] == 200000).all()


def test_in_the_background_a_kernel_is_built_quick_then_optimised_as_it_runs(monkeypatch, tmp_path):
    """Background mode (USERGPU_EMU_BACKGROUND=1): a kernel not compiled before runs on the reference, and is built
    in a worker thread only once it has run HOT_S there (a suite's one-off kernels never wait for clang): first
    quickly (-O0), and once that build has run it TIER_S, optimised. Each build, once made, runs it; a quick build
    an earlier process made runs at once (the kernel was hot then), an optimised one is found by its bytes."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(native, "_builds", {})
    monkeypatch.setattr(native, "_reference_s", {})
    monkeypatch.setattr(native, "_discovered", {})
    code = isa.asm("s_mov_b32 s1, 0\nloop:\ns_add_u32 s1, s1, 1\nv_add_nc_u32 v1, v1, 3\ns_cmpk_lt_u32 s1, 0xbb7\n"
                   "s_cbranch_scc1 loop\ns_endpgm", "gfx1100")  # 2999 iterations: 8997 in v1
    reference_run = Executor.run

    def run(expect: str) -> None:
        """Run the kernel once, on the reference or a build (quick, optimised) as expected."""
        ran = []
        monkeypatch.setattr(Executor, "run", lambda *a: ran.append(1) or reference_run(*a))
        ex = _executor(code)
        ex.background = True
        assert ex.run() and (ex.w.v[1] == 8997).all()
        if expect == "reference":
            assert ran
        else:
            assert not ran and (ex._cache["native"][2] is None) == (expect == "optimised")

    monkeypatch.setattr(native, "HOT_S", 1e9)
    monkeypatch.setattr(native, "LONG_S", 1e9)
    run("reference")
    assert native._builds == {} and len(native._reference_s) == 1  # ran on the reference, nothing built
    monkeypatch.setattr(native, "HOT_S", 0.0)
    monkeypatch.setattr(native, "TIER_S", 1e9)
    run("reference")  # past HOT_S: its quick build is under way
    (b,) = native._builds.values()
    b.quick.result(timeout=120)
    run("quick")
    run("quick")  # it has not run TIER_S on its quick build: no optimised build
    assert b.optimised is None
    monkeypatch.setattr(native, "TIER_S", 0.0)
    run("quick")  # past TIER_S: its optimised build is under way
    b.optimised.result(timeout=120)
    run("optimised")
    monkeypatch.setattr(native, "_builds", {})  # another process: both builds in the cache
    monkeypatch.setattr(build, "_FOUND", {})
    monkeypatch.setattr(build, "_SPANS", {})
    monkeypatch.setattr(shared_build, "_LOADED", {})
    monkeypatch.setattr(native, "HOT_S", 1e9)
    run("optimised")
    folder = tmp_path / "usergpu" / "native"
    quick = [p for p in folder.glob("*.so") if p.name.endswith("-quick.so")]
    optimised = [p for p in folder.glob("*.so") if not p.name.endswith("-quick.so")]
    assert len(quick) == len(optimised) == 1
    optimised[0].unlink()
    monkeypatch.setattr(build, "_FOUND", {})
    monkeypatch.setattr(shared_build, "_LOADED", {})
    run("quick")  # only its quick build in the cache: it runs at once


def test_a_dispatch_still_running_after_long_s_with_its_waves_not_done_is_hot_at_once(monkeypatch, tmp_path):
    """A kernel that loops in few waves (tinygrad's fused randn) is built once one dispatch of it has run LONG_S on
    the reference with most of its waves not done, whatever HOT_S says; one whose waves are all done within that
    time is not."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for name in ("_builds", "_reference_s", "_discovered"):
        monkeypatch.setattr(native, name, {})
    monkeypatch.setattr(native, "_long", set())
    monkeypatch.setattr(native, "HOT_S", 1e9)
    monkeypatch.setattr(native, "LONG_S", 0.0)  # judged after its first slice on the reference
    short = _executor(isa.asm("v_add_nc_u32 v1, v1, 3\ns_endpgm", "gfx1100"))
    short.background = True
    assert short.run() and native._long == set() and native._builds == {}
    looping = _executor(isa.asm("s_mov_b32 s1, 0\nloop:\ns_add_u32 s1, s1, 1\ns_cmpk_lt_u32 s1, 0x3fff\n"
                                "s_cbranch_scc1 loop\ns_endpgm", "gfx1100"))
    looping.background = True
    assert looping.run() and int(looping.w.s[1, 0]) == 0x3fff
    assert len(native._long) == 1 and set(native._builds) == native._long
    next(iter(native._builds.values())).quick.result(timeout=120)


def test_a_kernel_launched_again_is_not_decoded_again_unless_its_bytes_changed(monkeypatch, tmp_path):
    """Each dispatch has a program of its own, but an instruction compiled by an earlier one at the same address
    from the same bytes serves it (decoding costs a short kernel's launch more than running it), as does a kernel's
    walk for the native backend while it runs on the reference; other bytes at that address are decoded anew."""
    from usergpu.emu.amd.exec import executor as reference

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(reference, "_STEPS", {})
    monkeypatch.setattr(native, "_discovered", {})
    monkeypatch.setattr(native, "_reference_s", {})
    monkeypatch.setattr(native, "HOT_S", 1e9)  # never compiled: the reference runs each dispatch
    monkeypatch.setattr(native, "LONG_S", 1e9)
    decoded, walked = [], []
    monkeypatch.setattr(reference, "decode", lambda *a: decoded.append(a[2]) or isa.decode(*a))
    discover = codegen.discover
    monkeypatch.setattr(codegen, "discover", lambda *a: walked.append(a[1]) or discover(*a))

    def launch(value: int) -> tuple[int, int, int]:
        before = len(decoded), len(walked)
        ex = _executor(isa.asm(f"v_add_nc_u32 v1, v1, {value}\ns_endpgm", "gfx1100"))
        ex.background = True
        assert ex.run()
        return int(ex.w.v[1, 0, 0]), len(decoded) - before[0], len(walked) - before[1]

    assert launch(3) == (3, 2, 1)  # two instructions decoded, the kernel walked
    assert launch(3) == (3, 0, 0)  # the same bytes: nothing decoded or walked again
    assert launch(5) == (5, 1, 1)  # another constant at the same address: its instruction anew (s_endpgm kept)


def _executor(code: bytes) -> native.NativeExecutor:
    from usergpu.emu.amd.exec.waves import Waves
    from usergpu.emu.memory import Memory

    w = Waves(1, 32, 4)
    w.s[126] = 0xFFFFFFFF
    return native.NativeExecutor("gfx1100", code, 0, Memory(), w, np.zeros(1, np.int64), 4, 4, "kernel",
                                 dispatch.DEFAULT_BUDGET)


def _run_sliced(code: bytes):
    ex = _executor(code)
    w = ex.w
    import time

    slices = 0
    while not ex.run(time.monotonic()):  # a slice already over: one quota of steps, then back
        slices += 1
    assert slices >= 5
    return w


@pytest.mark.parametrize("arch", test_exec_opcodes.ARCHS)
def test_every_table_opcode_gets_c_from_the_table(arch):
    """An ALU opcode the reference implements from the semantics table has a C form generated from the same entry,
    unless named above with its reason: a new table entry gets both backends, or this fails."""
    missing = []
    for name in test_exec_opcodes._names(arch):
        inst = isa.decode(isa.asm(test_exec_opcodes.plan(arch, name).text, arch), arch, 0)
        try:
            kernel = codegen.Kernel(arch, test_exec_opcodes.wave_size(arch), {0: inst}, test_exec_opcodes.ACC)
            ok = codegen.Emitter(kernel).instruction(inst, 0) is not None
        except Untranslatable:
            ok = False
        if not ok and name not in NOT_NATIVE and not name.startswith(NOT_YET):
            missing.append(name)
    assert not missing, f"no C for {missing}"
