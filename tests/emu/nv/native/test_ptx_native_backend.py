"""Which backend runs PTX, and what the native one keeps of the reference's behaviour: the choice by USERGPU_EMU,
the reference without clang-22 (one warning), traced launches on the reference (said once), the on-disk kernel
cache, faults, hangs and unsupported instructions raised with the reference's very messages, time slices, and every
instruction of the bench's kernels in C."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from ptx_harness import HEADER, both, native_only

import usergpu
from usergpu.emu import native as shared_native
from usergpu.emu.memory import Memory
from usergpu.emu.native import build
from usergpu.emu.nv import launch
from usergpu.emu.nv.ptx import executor as reference
from usergpu.emu.nv.ptx import native
from usergpu.emu.nv.ptx.launch import compiled, module_of, slices
from usergpu.emu.nv.ptx.native import codegen
from usergpu.emu.nv.ptx.native import executor as native_executor
from usergpu.emu.nv.ptx.semantics import UnsupportedPTX
from usergpu.emu.nv.ptx.state import State
from usergpu.errors import GPUFault, GPUHang, LaunchError

BENCH = Path(__file__).resolve().parents[4] / "bench" / "nv_emu_kernels.cu"


def kernel(body: str, decls: str = "") -> str:
    """A kernel of one .u64 parameter (a buffer, its address in %a0) around body."""
    return HEADER.format(arch="sm_90") + textwrap.dedent(f"""\
        .visible .entry k(.param .u64 out)
        {{
        .reg .b32 %r<4>;
        .reg .b64 %a<2>;
        .reg .pred %p;
        {decls}
        ld.param.u64 %a0, [out];
        cvta.to.global.u64 %a0, %a0;
        mov.u32 %r0, %tid.x;
        mul.wide.u32 %a1, %r0, 4;
        add.s64 %a1, %a0, %a1;
        {textwrap.dedent(body).strip()}
        ret;
        }}
        """)


TWICE = kernel("shl.b32 %r1, %r0, 1;\nst.global.b32 [%a1], %r1;")


def test_usergpu_emu_picks_the_backend(monkeypatch):
    monkeypatch.setenv("USERGPU_EMU", "numpy")
    assert native.execute() is reference.execute
    if build.compiler() is not None:
        monkeypatch.setenv("USERGPU_EMU", "native")
        assert native.execute() is native_executor.execute
        monkeypatch.delenv("USERGPU_EMU")
        assert native.execute() is native_executor.execute
    monkeypatch.setenv("USERGPU_EMU", "fast")
    with pytest.raises(LaunchError, match="USERGPU_EMU='fast'.*native.*numpy"):
        native.execute()
    with pytest.raises(LaunchError, match="USERGPU_EMU='fast'"):
        launch(TWICE, "k", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32)])


def test_without_clang_the_reference_runs_after_one_warning(monkeypatch, capsys):
    monkeypatch.setattr(build, "compiler", lambda: None)
    monkeypatch.setattr(shared_native, "_SAID", set())
    monkeypatch.delenv("USERGPU_EMU", raising=False)
    assert native.execute() is reference.execute and native.execute() is reference.execute
    out = launch(TWICE, "k", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32)])[0]
    assert (out == 2 * np.arange(32)).all()
    assert capsys.readouterr().err.count("clang-22 is not installed") == 1


@native_only
def test_a_traced_launch_runs_on_the_reference_and_says_so_once(monkeypatch, capfd):
    monkeypatch.setenv("USERGPU_TRACE", "1")
    monkeypatch.setenv("USERGPU_EMU", "native")
    monkeypatch.setattr(shared_native, "_SAID", set())
    for _ in range(2):
        out = launch(TWICE, "k", (1, 1, 1), (32, 1, 1), [np.zeros(32, np.uint32)])[0]
        assert (out == 2 * np.arange(32)).all()
    err = capfd.readouterr().err
    assert err.count("a traced launch runs on the numpy reference backend") == 1
    assert err.count("shl.b32") == 2  # the reference's trace: each instruction once per launch (32 lanes together)


def _twice_state() -> tuple[State, np.ndarray]:
    """TWICE's one warp as a State of its own, and the buffer it writes."""
    mem, out = Memory(), np.zeros(32, np.uint32)
    c = compiled(module_of(TWICE), "k")
    st = State(c.prog, mem, 0, 1, (32, 1, 1), (1, 1, 1), mem.map(out).to_bytes(8, "little"), 0, 132)
    st.globals, st.time_ns = {}, 0
    return st, out


@native_only
@pytest.mark.parametrize("trace", [True, False])
def test_an_execute_with_trace_runs_on_the_reference_and_says_so(trace, monkeypatch, capfd):
    monkeypatch.setattr(shared_native, "_SAID", set())
    monkeypatch.delenv("USERGPU_TRACE", raising=False)
    st, out = _twice_state()
    assert native_executor.execute(compiled(module_of(TWICE), "k"), st, trace=trace)
    assert (out == 2 * np.arange(32)).all()
    err = capfd.readouterr().err
    assert err.count("a traced launch runs on the numpy reference backend") == trace
    assert ("[k] line" in err) == trace  # the reference's trace of each instruction
    assert (getattr(st, "native", None) is None) == trace  # the C's view of the State: made only to run the C


@native_only
def test_a_kernel_compiles_once_and_is_loaded_from_the_disk_cache(tmp_path):
    program = textwrap.dedent(f"""
        import numpy as np
        from usergpu.emu.nv import launch
        from usergpu.emu.nv.ptx.native import codegen
        if AGAIN:  # the second process must not generate C: the library is on disk
            codegen.Emitter.source = None
        out = launch({TWICE!r}, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)])[0]
        assert (out == 2 * np.arange(64)).all()
    """)
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "USERGPU_EMU": "native"}
    for again in (False, True):
        subprocess.run([sys.executable, "-c", program.replace("AGAIN", str(again))], env=env, check=True, timeout=120)
    assert len(list((tmp_path / "usergpu" / "native").glob("*.so"))) == 1


# ---- the reference's errors, word for word ------------------------------------------------------------------------
def _raises(text: str, error: type, block=(32, 1, 1), budget: int = reference.DEFAULT_BUDGET, timeout=30.0) -> str:
    """The error both backends raise (`both`: the same type and message), its message."""
    n = int(np.prod(block))
    with pytest.raises(error) as got:
        both(text, lambda stats: launch(text, "k", (1, 1, 1), block, [np.zeros(n, np.uint32)], budget=budget,
                                        stats=stats, timeout=timeout))
    return str(got.value)


FAULTS = {
    "global, past the buffer": ("add.s64 %a1, %a1, 0x100000;\nst.global.b32 [%a1], %r0;", ""),
    "global, just past the buffer": ("add.s64 %a1, %a1, 0x80;\nld.global.u32 %r1, [%a1];", ""),
    "global, at address 0 (a generic store)": ("mov.u64 %a1, 0;\nst.u32 [%a1], %r0;", ""),
    "shared, past the block's": ("shl.b32 %r1, %r0, 12;\nld.shared.u32 %r2, [%r1];\nst.global.b32 [%a1], %r2;",
                                 ".shared .align 4 .b8 s[64];"),
    "local, past the thread's": ("mov.u32 %r1, 4096;\nst.local.u32 [%r1], %r0;", ".local .align 4 .b8 l[16];"),
}


@native_only
@pytest.mark.parametrize("what", sorted(FAULTS))
def test_a_fault_is_the_references(what):
    body, decls = FAULTS[what]
    text = kernel(body, decls)
    message = _raises(text, GPUFault)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if t.startswith(("st.", "ld.")) and n > 12)
    assert message.startswith("GPU fault: ") and f"line {line}:" in message, message


# accesses through one register plus constants, checked once at their basic block's start (codegen's prechecks)
PRECHECKED = {
    "shared": ("and.b32 %r1, %r0, 3;\nshl.b32 %r1, %r1, 2;\nbar.sync 0;\nld.shared.u32 %r2, [%r1];\n"
               "ld.shared.u32 %r3, [%r1+52];\nst.global.b32 [%a1], %r3;", ".shared .align 4 .b8 s[64];"),
    "global": ("bar.sync 0;\nld.global.u32 %r2, [%a1];\nld.global.u32 %r3, [%a1+0x7c];\nst.global.b32 [%a1], %r3;",
               ""),
}


@native_only
@pytest.mark.parametrize("space", sorted(PRECHECKED))
def test_a_checked_block_faults_at_the_access_out_of_bounds(space):
    """Both loads through the register are checked at the block's start; the first is in bounds for every lane,
    the second (line of the second ld) is not for some: the fault names it, as the reference does."""
    body, decls = PRECHECKED[space]
    text = kernel(body, decls)
    message = _raises(text, GPUFault)
    line = [n for n, t in enumerate(text.splitlines(), 1) if t.startswith("ld.") and n > 12][1]
    assert f"line {line}:" in message, message


@native_only
def test_a_lane_guarded_off_an_access_out_of_bounds_does_not_fault():
    """The block's check covers every lane running, so it fails for a lane whose guard is false; the accesses then
    check their own lanes (the guarded ones), and nothing faults."""
    text = kernel("setp.lt.u32 %p, %r0, 16;\nshl.b32 %r1, %r0, 2;\n@%p st.shared.u32 [%r1], %r0;\n"
                  "setp.lt.u32 %p, %r0, 15;\nbar.sync 0;\n@%p ld.shared.u32 %r2, [%r1];\n"
                  "@%p ld.shared.u32 %r3, [%r1+4];\nadd.u32 %r2, %r2, %r3;\nst.global.b32 [%a1], %r2;",
                  ".shared .align 4 .b8 s[64];")
    ref, got = both(text, lambda stats: launch(text, "k", (1, 1, 1), (32, 1, 1), [np.ones(32, np.uint32)],
                                               stats=stats))
    lanes = np.arange(32)
    assert (got[0] == np.where(lanes < 15, 2 * lanes + 1, 0)).all()  # s[i] + s[i + 1]; registers start at 0


@native_only
def test_stores_to_one_address_keep_the_lane_order():
    """Every lane stores its %tid.x to one word, and overlapping 8-byte stores (lane i's high half is lane i + 1's
    low half): the later lane wins, as on the reference (the C may scatter a warp's stores at once)."""
    text = kernel("st.global.b32 [%a0], %r0;\nst.global.b64 [%a1+128], %a1;")
    ref, got = both(text, lambda stats: launch(text, "k", (1, 1, 1), (32, 1, 1), [np.zeros(128, np.uint32)],
                                               stats=stats))
    words = got[0]
    assert words[0] == 31
    low = int(words[32])  # lane 0's value's low half: the buffer's address
    assert [int(w) for w in words[32:64]] == [(low + 4 * i) & 0xFFFFFFFF for i in range(32)]  # each lane's low half


@native_only
def test_a_register_read_before_written_starts_at_zero_in_every_warp():
    """The k-th warps of the blocks share a scratch; a register the entry block reads before writing it is cleared
    as each warp starts (one written first is not), so every block's %r2 + %tid.x is %tid.x."""
    text = kernel("add.u32 %r2, %r2, %r0;\nmov.u32 %r3, 7;\nadd.u32 %r2, %r2, %r3;\nst.global.b32 [%a1], %r2;")
    ref, got = both(text, lambda stats: launch(text, "k", (4, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)],
                                               stats=stats))
    assert (got[0] == np.arange(64) + 7).all()


@native_only
@pytest.mark.parametrize("store", ["st.param.u32", "st.u32"])
def test_a_thread_that_writes_its_parameters_reads_its_own_back(store):
    """Each thread's param space is its own: where a thread writes a parameter (st.param, or a generic store at the
    .param variable), a load reads that thread's value, not the launch's (the C reads the launch's once where no
    thread writes one)."""
    text = kernel(f"{store} [out], %r0;\nld.param.u32 %r1, [out];\nst.global.b32 [%a1], %r1;")
    assert compiled(module_of(text), "k").prog.writes_param
    ref, got = both(text, lambda stats: launch(text, "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.uint32)],
                                               stats=stats))
    assert (got[0] == np.arange(64)).all()
    assert not compiled(module_of(TWICE), "k").prog.writes_param


@native_only
def test_a_spin_past_the_budget_is_the_references_hang():
    text = kernel("LOOP:\nadd.u32 %r1, %r1, 1;\nbra.uni LOOP;")
    message = _raises(text, GPUHang, budget=5000)
    assert "ran 5000 instruction steps without ending" in message


@native_only
def test_a_barrier_that_never_completes_is_the_references_hang():
    text = kernel("setp.lt.u32 %p, %r0, 32;\n@%p bar.sync 0;\n@!%p bar.sync 1;")
    assert "a barrier never completes" in _raises(text, GPUHang, block=(64, 1, 1))


@native_only
def test_an_unsupported_instruction_is_the_references():
    text = kernel("st.global.b32 [%a1], %r0;\nsuld.b.1d.b32.trap {%r1}, [%a0];")
    assert "is not implemented" in _raises(text, UnsupportedPTX)


@native_only
def test_a_launch_past_its_timeout_is_the_same_hang():
    text = kernel("LOOP:\nbra.uni LOOP;")
    message = _raises(text, GPUHang, budget=1 << 62, timeout=0.3)  # the clock ends it, not the budget
    assert "ran 0.3 s without ending" in message and "bra.uni LOOP" in message


@native_only
def test_time_slices_yield_on_both_and_end_at_the_same_budget():
    text = kernel("LOOP:\nbra.uni LOOP;")
    c = compiled(module_of(text), "k")

    def sliced(stats: dict) -> list[np.ndarray]:
        mem = Memory()
        params = mem.map(np.zeros(32, np.uint32)).to_bytes(8, "little")
        start, yields = time.monotonic(), 0
        for st in slices(c, mem, (1, 1, 1), (32, 1, 1), params, budget=2_000_000, stats=stats, slice_s=0.01):
            assert c.prog.code[st.p].text.startswith("bra")  # a slice stops at the spin
            yields += 1
        pytest.fail(f"the spin ended after {yields} slices, {time.monotonic() - start:.1f} s")

    with pytest.raises(GPUHang, match="ran 2000000 instruction steps without ending"):
        both("a sliced spin", sliced)


# ---- coverage of common instructions ------------------------------------------------------------------------------
@native_only
@pytest.mark.parametrize("name", ["saxpy", "matmul_tiled", "reduce_tree", "fma_chain", "divergent"])
def test_every_instruction_of_the_bench_kernels_has_c(name):
    """A regression in the native backend's cover of common instructions (these kernels' every one) fails here."""
    code = usergpu.compile_cuda(BENCH.read_text(), "sm_90")
    c = compiled(module_of(code), name)
    emitter = codegen.Emitter(c.prog, c.order, c.next)
    source = emitter.source()
    missing = [f"line {c.prog.code[i].line}: {c.prog.code[i].text}" for i in range(len(c.prog.code))
               if f"I{i}: pc = {i}; goto fallback;" in source]
    assert emitter.native == len(c.prog.code) and not missing, missing
