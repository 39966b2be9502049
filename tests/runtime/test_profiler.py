"""Profiling on MOCKKFD+AMD, gfx1100 and gfx1200: counters equal exact counts of what the emulator executed, and
the thread trace the mock writes decodes back to the traced wave's instructions, in order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import usergpu
from usergpu.emu.amd.exec.dispatch import launch as emu_launch
from usergpu.emu.amd.sqtt import decode, wave_instructions
from usergpu.emu.amd.sqtt.waves import TOKENLESS
from usergpu.runtime.device import Device
from usergpu.runtime.launch import launch
from usergpu.runtime.profiler import ProfileError

KERNELS = Path(__file__).parents[1] / "kernels"
SOURCE = (KERNELS / "prof.cl").read_text()
ARCHS = ("gfx1100", "gfx1200")
# (kernel, grid, block, arguments)
CASES = {
    "straight": ((4, 1, 1), (64, 1, 1), lambda: [np.arange(256, dtype=np.float32), np.ones(256, np.float32)]),
    "loop": ((2, 1, 1), (64, 1, 1), lambda: [np.zeros(128, np.float32), np.uint32(7)]),
    "branch": ((2, 1, 1), (64, 1, 1), lambda: [np.arange(-64, 64, dtype=np.int32)]),
    "reduce": ((3, 1, 1), (64, 1, 1), lambda: [np.zeros(3, np.float32), np.arange(192, dtype=np.float32)]),
}
# instruction classes by mnemonic, as the mock's SQ counts them (emu/amd/mock/profiler.py's documentation)
NOT_SALU = ("s_load", "s_buffer_load", "s_waitcnt", "s_wait_", "s_cbranch", "s_branch", "s_barrier", "s_sendmsg",
            "s_endpgm")

def counted(mnemonic: str) -> str | None:
    if mnemonic.startswith("v_"):
        return "SQ_INSTS_VALU"
    if mnemonic.startswith("ds_"):
        return "SQ_INSTS_LDS"
    if mnemonic.startswith(("global_", "buffer_", "flat_")):
        return "SQ_INSTS_VMEM_RD" if "load" in mnemonic else "SQ_INSTS_VMEM_WR"
    if mnemonic.startswith(("s_load", "s_buffer_load")):
        return "SQ_INSTS_SMEM"
    return None if mnemonic.startswith(NOT_SALU) else "SQ_INSTS_SALU"

@pytest.fixture(params=ARCHS)
def arch(request, monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", request.param)
    return request.param

def reference(co: bytes, kernel: str, grid, block, args) -> tuple[dict, list[int], int]:
    """What the bare emulator executes: per counter the exact count, the ELF addresses wave 0 ran in order (but
    the scheduling hints a trace has no token for), and the number of waves."""
    counts: dict[str, int] = {}
    wave0: list[int] = []
    waves = set()

    def observe(ex, local, first, pc, step):
        name = counted(step.text.split()[0])
        waves.update((first + local).tolist())
        if name:
            counts[name] = counts.get(name, 0) + len(local)
        if first == 0 and 0 in local and step.text.split()[0] not in TOKENLESS:
            wave0.append(pc - ex.code_base)

    stats: dict = {}
    emu_launch(co, kernel, grid, block, args, stats=stats, observer=observe)
    counts["SQ_INSTS"] = stats["instructions"]
    counts["SQ_WAVES"] = len(waves)
    return counts, wave0, len(waves)

@pytest.mark.parametrize("interface", ["MOCKKFD+AMD", "MOCKPCI+AMD"])
@pytest.mark.parametrize("kernel", CASES)
def test_counters_and_trace_match_the_emulator(arch, kernel, interface, tmp_path):
    co = usergpu.compile_opencl(SOURCE, arch, ["-I", str(KERNELS)])
    grid, block, make = CASES[kernel]
    expected, wave0, waves = reference(co, kernel, grid, block, make())
    dev = Device(interface)
    names = [n for n in ("SQ_WAVES", "SQ_INSTS", "SQ_INSTS_VALU", "SQ_INSTS_SALU", "SQ_INSTS_SMEM", "SQ_INSTS_LDS",
                         "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR") if arch == "gfx1100" or n != "SQ_INSTS"]
    prof = dev.profile(sqtt=True, counters=names)
    launch(co, kernel, grid, block, make(), dev)
    dev.synchronize()
    (cap,) = prof.captures
    got = {name: sum(per.values()) for name, per in cap.counters.items()}
    assert got == {n: expected.get(n, 0) for n in names}
    assert got["SQ_WAVES"] == waves
    # the traced unit is SE 0, SA 0, WGP 0, SIMD 0: workgroup 0's first wave is there
    (blob,) = [b for se, b, itrace in cap.traces if itrace]
    insts = wave_instructions(blob, co, arch, cap.base)
    assert [i.pc for i in insts if i.wave == 0] == wave0
    assert {p.kind for p in decode(blob, arch)} >= {"LAYOUT_HEADER", "WAVESTART", "WAVEEND"}
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
    expected, wave0, _ = reference(co, "branch", grid, block, make())
    dev = Device("MOCKKFD+AMD", queue="aql")
    prof = dev.profile(sqtt=True, counters=["SQ_WAVES", "SQ_INSTS_VALU"])
    launch(co, "branch", grid, block, make(), dev)
    (cap,) = prof.captures
    assert {n: sum(v.values()) for n, v in cap.counters.items()} == {n: expected[n] for n in cap.counters}
    (blob,) = [b for _, b, itrace in cap.traces if itrace]
    assert [i.pc for i in wave_instructions(blob, co, "gfx1100", cap.base) if i.wave == 0] == wave0
