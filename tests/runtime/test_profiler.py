"""Profiling on MOCKKFD+AMD and MOCKPCI+AMD, gfx1100, gfx1200, gfx942 and gfx950: counters equal exact
counts of what the emulator executed, and the thread trace the mock writes decodes back to the traced wave's
instructions, in order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import usergpu
from usergpu.emu.amd.exec.dispatch import launch as emu_launch
from usergpu.isa.amd.hw.pmc import EVENTS
from usergpu.isa.amd.sqtt import decode, wave_instructions
from usergpu.isa.amd.sqtt.waves import TOKENLESS
from usergpu.runtime.amd.profiler import ProfileError
from usergpu.runtime.device import Device
from usergpu.runtime.launch import launch

KERNELS = Path(__file__).parents[1] / "kernels"
SOURCE = (KERNELS / "prof.cl").read_text()
ARCHS = ("gfx1100", "gfx1200")
# the interfaces each arch is profiled on (the KFD mock, and the AM driver on the mock PCI boards), and the queues
RUNS = [(arch, interface, "pm4") for arch in ARCHS for interface in ("MOCKKFD+AMD", "MOCKPCI+AMD")] + [
    (arch, interface, queue) for arch in ("gfx942", "gfx950") for queue in ("pm4", "aql")
    for interface in ("MOCKKFD+AMD", "MOCKPCI+AMD")]
# (kernel, grid, block, arguments)
CASES = {
    "straight": ((4, 1, 1), (64, 1, 1), lambda: [np.arange(256, dtype=np.float32), np.ones(256, np.float32)]),
    "loop": ((2, 1, 1), (64, 1, 1), lambda: [np.zeros(128, np.float32), np.uint32(7)]),
    "branch": ((2, 1, 1), (64, 1, 1), lambda: [np.arange(-64, 64, dtype=np.int32)]),
    "reduce": ((3, 1, 1), (64, 1, 1), lambda: [np.zeros(3, np.float32), np.arange(192, dtype=np.float32)]),
}
CYCLES = ("GRBM_GUI_ACTIVE", "SQ_BUSY_CYCLES", "SQ_WAVE_CYCLES", "SQ_INST_CYCLES_VALU")
# what the SQ itself runs, counted in SQ_INSTS alone
SEQUENCER = ("s_waitcnt", "s_wait_", "s_nop", "s_barrier", "s_endpgm")


def counted(mnemonic: str) -> set[str]:
    """The instruction counters an instruction adds to, as rocprofiler-sdk's counter_defs.yaml describes them (VALU
    includes MFMA, VMEM_RD/WR include FLAT loads/stores); an arch has the ones of its EVENTS."""
    kinds = (("v_mfma", {"SQ_INSTS_VALU", "SQ_INSTS_MFMA"}), ("v_", {"SQ_INSTS_VALU"}), ("ds_", {"SQ_INSTS_LDS"}),
             (("s_load", "s_buffer_load"), {"SQ_INSTS_SMEM"}), (("s_cbranch", "s_branch"), {"SQ_INSTS_BRANCH"}),
             ("s_sendmsg", {"SQ_INSTS_SENDMSG"}), (SEQUENCER, set()))
    if mnemonic.startswith(("global_", "buffer_", "flat_")):
        flat = {"SQ_INSTS_FLAT"} if not mnemonic.startswith("buffer_") else set()
        return {"SQ_INSTS", "SQ_INSTS_VMEM", "SQ_INSTS_VMEM_RD" if "load" in mnemonic else "SQ_INSTS_VMEM_WR"} | flat
    return {"SQ_INSTS"} | next((names for prefix, names in kinds if mnemonic.startswith(prefix)), {"SQ_INSTS_SALU"})


def reference(co: bytes, kernel: str, grid, block, args) -> tuple[dict, dict[int, tuple[int, ...]]]:
    """What the bare emulator executes: per counter the exact count, and the ELF addresses each wave ran in order
    (but the scheduling hints a trace has no token for)."""
    counts: dict[str, int] = {}
    pcs: dict[int, list[int]] = {}

    def observe(ex, local, first, pc, step):
        for name in counted(step.text.split()[0]):
            counts[name] = counts.get(name, 0) + len(local)
        for w in (first + local).tolist():
            pcs.setdefault(w, [])
            if step.text.split()[0] not in TOKENLESS:
                pcs[w].append(pc - ex.code_base)

    emu_launch(co, kernel, grid, block, args, observer=observe)
    counts["SQ_WAVES"] = len(pcs)
    return counts, {w: tuple(run) for w, run in pcs.items()}


def traced_waves(cap, co: bytes, arch: str) -> list[tuple[int, ...]]:
    """The PCs of each wave the capture's instruction-traced engines followed."""
    out = []
    for _, blob, itrace in cap.traces:
        runs: dict[tuple[int, int], list[list[int]]] = {}
        for i in wave_instructions(blob, co, arch, cap.base) if itrace else []:
            run = runs.setdefault((i.simd, i.wave), [[]])
            run[-1].append(i.pc)
            if i.text == "s_endpgm":
                run.append([])
        out += [tuple(r) for run in runs.values() for r in run if r]
    return out


@pytest.mark.parametrize(("arch", "interface", "queue"), RUNS, ids=lambda v: v)
@pytest.mark.parametrize("kernel", CASES)
def test_counters_and_trace_match_the_emulator(arch, interface, queue, kernel, tmp_path, monkeypatch):
    """RDNA traces SIMD 0 of WGP 0 of SE 0, where workgroup 0's first wave runs. gfx9 traces CU 0 of every engine
    here: each of these single-wave workgroups runs first on a CU 0 of some XCC's engine (an AQL queue's XCCs take
    them in turn from the queue's first logical XCC, a PM4 queue's first XCC all), so every wave is traced once."""
    monkeypatch.setenv("MOCKGPU_ARCH", arch)
    co = usergpu.compile_opencl(SOURCE, arch, ["-I", str(KERNELS)])
    grid, block, make = CASES[kernel]
    expected, pcs = reference(co, kernel, grid, block, make())
    dev = Device(interface, queue=queue)
    names = [n for n in EVENTS[arch[:5]] if n not in CYCLES]
    gfx9 = arch.startswith("gfx9")
    prof = dev.profile(sqtt=True, counters=names, itrace_se_mask=(1 << 32) - 1 if gfx9 else 1)
    launch(co, kernel, grid, block, make(), dev)
    dev.synchronize()
    (cap,) = prof.captures
    got = {name: sum(per.values()) for name, per in cap.counters.items()}
    assert got == {n: expected.get(n, 0) for n in names}
    assert got["SQ_WAVES"] == len(pcs)
    traced = traced_waves(cap, co, arch)
    assert sorted(traced) == (sorted(pcs.values()) if gfx9 else [pcs[0]])
    kinds = set().union(*({p.kind for p in decode(b, arch)} for _, b, itrace in cap.traces if itrace))
    assert kinds >= ({"LAYOUT_HEADER", "CDNA_WAVESTART", "CDNA_WAVEEND", "CDNA_ISSUE", "CDNA_INST"}
                     if gfx9 else {"LAYOUT_HEADER", "WAVESTART", "WAVEEND"})
    out = prof.write(tmp_path / "cap")
    assert (out / "capture.json").exists() and (out / "pmc.json").exists()
    dev.close()


def test_bad_counters_are_refused(monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", "gfx1100")
    dev = Device("MOCKKFD+AMD")
    with pytest.raises(ProfileError, match="SQ_NOPE not counted on gfx1100"):
        dev.profile(counters=["SQ_NOPE"])
    with pytest.raises(ProfileError, match="SQG has 8 counters"):
        dev.profile(counters=["SQ_WAVES", "SQ_INSTS", "SQ_INSTS_LDS", "SQ_INSTS_SALU", "SQ_INSTS_SMEM",
                              "SQ_INSTS_VALU", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR", "SQ_INST_CYCLES_VALU"])

def test_cdna_blocks_and_engines(monkeypatch):
    """MI300X: SQ counts per shader engine of each XCC, 16 counters; a trace buffer per engine, 32 in all, the
    engines SQTT_ITRACE_SE_MASK names tracing instructions; each blob opens with the MI300 header of its engine."""
    monkeypatch.setenv("MOCKGPU_ARCH", "gfx942")
    dev = Device("MOCKKFD+AMD")
    with pytest.raises(ProfileError, match="SQ has 16 counters; SQ_WAVES is one too many"):
        dev.profile(counters=["SQ_WAVES"] * 17)
    prof = dev.profile(sqtt=True, counters=["SQ_WAVES", "GRBM_GUI_ACTIVE"], itrace_se_mask=0x30, buffer_bytes=1 << 16)
    co = usergpu.compile_opencl(SOURCE, "gfx942", ["-I", str(KERNELS)])
    launch(co, "straight", (4, 1, 1), (64, 1, 1), [np.zeros(256, np.float32), np.ones(256, np.float32)], dev)
    dev.synchronize()
    (cap,) = prof.captures
    assert [(se, itrace) for se, _, itrace in cap.traces] == [(se, se in (4, 5)) for se in range(32)]
    for se, blob, _ in cap.traces:
        head = decode(blob, "gfx942")[0]
        assert (head.kind, head.version, head.se, head.cu, head.simd_mask) == ("LAYOUT_HEADER", 5, se, 0, 0xF)
    assert len(cap.counters["SQ_WAVES"]) == 32 and len(cap.counters["GRBM_GUI_ACTIVE"]) == 8  # (XCC, SE); XCC
    dev.close()


def test_a_full_trace_buffer_and_reused_slots_warn(monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", "gfx1100")
    co = usergpu.compile_opencl(SOURCE, "gfx1100", ["-I", str(KERNELS)])
    dev = Device("MOCKKFD+AMD")
    prof = dev.profile(sqtt=True, buffer_bytes=4096)
    with pytest.warns(UserWarning, match="SQTT buffer of shader engine 0 full .*raise SQTT_BUFFER_SIZE"):
        launch(co, "loop", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.float32), np.uint32(400)], dev)
    assert len(prof.captures[0].traces[0][1]) == 4096
    prof = dev.profile(sqtt=False, counters=["SQ_WAVES"], slots=2)
    kernel = dev.load(co).kernels["straight"]
    a, b = dev.alloc(256 * 4), dev.alloc(256 * 4)
    with pytest.warns(UserWarning, match="slot of kernel straight reused .*raise PROF_SLOTS"):
        for _ in range(3):
            kernel(a, b, grid=(4, 1, 1), block=(64, 1, 1), wait=False)
    dev.synchronize()
    assert [sum(c.counters["SQ_WAVES"].values()) for c in prof.captures] == [8, 8]  # 4 workgroups of 2 waves


def test_knobs_from_the_environment(monkeypatch, tmp_path):
    for k, v in {"MOCKGPU_ARCH": "gfx1200", "PROFILE": "1", "SQTT": "1", "PMC": "1", "PMC_COUNTERS": "SQ_WAVES",
                 "SQTT_ITRACE_SE_MASK": "0x3", "PROF_SLOTS": "4", "SQTT_BUFFER_SIZE": "2"}.items():
        monkeypatch.setenv(k, v)
    co = usergpu.compile_opencl(SOURCE, "gfx1200", ["-I", str(KERNELS)])
    dev = Device("MOCKKFD+AMD")
    assert (dev.profiler.slots, dev.profiler.buffer_bytes, dev.profiler.itrace_se_mask) == (4, 2 << 20, 3)
    launch(co, "straight", (4, 1, 1), (64, 1, 1), [np.zeros(256, np.float32), np.ones(256, np.float32)], dev)
    dev.synchronize()
    (cap,) = dev.profiler.captures
    assert [itrace for _, _, itrace in cap.traces] == [True, True, False, False]  # Navi48: 4 shader engines
    assert sum(cap.counters["SQ_WAVES"].values()) == 8
    monkeypatch.setenv("PROF_SLOTS", "many")
    with pytest.raises(ProfileError, match="PROF_SLOTS='many'"):
        Device("MOCKKFD+AMD")


def test_kernels_on_an_aql_queue_are_profiled_too(monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", "gfx1100")
    co = usergpu.compile_opencl(SOURCE, "gfx1100", ["-I", str(KERNELS)])
    grid, block, make = CASES["branch"]
    expected, pcs = reference(co, "branch", grid, block, make())
    dev = Device("MOCKKFD+AMD", queue="aql")
    prof = dev.profile(sqtt=True, counters=["SQ_WAVES", "SQ_INSTS_VALU"])
    launch(co, "branch", grid, block, make(), dev)
    (cap,) = prof.captures
    assert {n: sum(v.values()) for n, v in cap.counters.items()} == {n: expected[n] for n in cap.counters}
    assert traced_waves(cap, co, "gfx1100") == [pcs[0]]
