"""The mock SQ's model of a dispatch on gfx942 and gfx950 (emu/amd/mock/profiler.py), driven by the bare emulator:
exact counts of what the waves executed (each counter as rocprofiler-sdk's counter_defs.yaml describes it), the
placement on an XCC's shader engines and active CUs within their wave slots, the timing model in 4-cycle issue
slots, and a trace's round trip: the tokens the mock's SQ writes for a dispatch decode back to each traced wave's
instructions, in order, at the model's times."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest

import usergpu
from usergpu.emu.amd.exec.dispatch import launch
from usergpu.emu.amd.mock.cdna import PARTS
from usergpu.emu.amd.mock.profiler import LATENCY, SHAPES, DispatchProfile
from usergpu.isa.amd.hw.pmc import EVENTS
from usergpu.isa.amd.sqtt import Ran, Wave, decode, dispatch_tokens, encode, wave_instructions, wave_tokens

KERNELS = Path(__file__).parents[3] / "kernels"
SOURCE = (KERNELS / "prof.cl").read_text()
MFMA = """typedef half half4 __attribute__((ext_vector_type(4)));
typedef float float16 __attribute__((ext_vector_type(16)));
__kernel void mfma(__global float *out, __global const half *a, __global const half *b) {
  uint l = get_local_id(0);
  float16 acc = __builtin_amdgcn_mfma_f32_32x32x8f16(vload4(l, a), vload4(l, b), (float16)0, 0, 0, 0);
  vstore16(acc, l, out);
}"""
ARCHS = ("gfx942", "gfx950")
# kernel -> (grid, block, arguments)
CASES = {
    "straight": ((4, 1, 1), (64, 1, 1), lambda: [np.arange(256, dtype=np.float32), np.ones(256, np.float32)]),
    "loop": ((2, 1, 1), (64, 1, 1), lambda: [np.zeros(128, np.float32), np.uint32(7)]),
    "branch": ((2, 1, 1), (64, 1, 1), lambda: [np.arange(-64, 64, dtype=np.int32)]),
    "reduce": ((3, 1, 1), (64, 1, 1), lambda: [np.zeros(3, np.float32), np.arange(192, dtype=np.float32)]),
    "mfma": ((2, 1, 1), (64, 1, 1), lambda: [np.zeros(2048, np.float32), np.ones(256, np.float16),
                                             np.ones(256, np.float16)]),
}
CYCLES = ("GRBM_GUI_ACTIVE", "SQ_BUSY_CYCLES", "SQ_WAVE_CYCLES")


def counted(mnemonic: str) -> set[str]:
    """The instruction counters an instruction adds to, by counter_defs.yaml's descriptions: VALU includes MFMA,
    VMEM_RD/WR include FLAT (global_/flat_/scratch_) loads/stores, FLAT is the FLAT encoding; every one is in
    SQ_INSTS. s_waitcnt, s_nop, s_barrier and s_endpgm are the sequencer's own."""
    out = {"SQ_INSTS"}
    if mnemonic.startswith(("v_mfma", "v_smfmac")):
        out |= {"SQ_INSTS_VALU", "SQ_INSTS_MFMA"}
    elif mnemonic.startswith("v_"):
        out.add("SQ_INSTS_VALU")
    elif mnemonic.startswith("ds_"):
        out.add("SQ_INSTS_LDS")
    elif mnemonic.startswith(("global_", "flat_", "scratch_", "buffer_")):
        out |= {"SQ_INSTS_VMEM", "SQ_INSTS_VMEM_RD" if "load" in mnemonic else "SQ_INSTS_VMEM_WR"}
        out |= {"SQ_INSTS_FLAT"} if not mnemonic.startswith("buffer_") else set()
    elif mnemonic.startswith(("s_load", "s_buffer_load")):
        out.add("SQ_INSTS_SMEM")
    elif mnemonic.startswith(("s_cbranch", "s_branch")):
        out.add("SQ_INSTS_BRANCH")
    elif mnemonic.startswith("s_sendmsg"):
        out.add("SQ_INSTS_SENDMSG")
    elif not mnemonic.startswith(("s_waitcnt", "s_nop", "s_barrier", "s_endpgm")):
        out.add("SQ_INSTS_SALU")
    return out


@pytest.fixture(scope="module", params=ARCHS)
def arch(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def code(arch) -> dict[str, bytes]:
    return {"prof": usergpu.compile_opencl(SOURCE, arch, ["-I", str(KERNELS)]),
            "mfma": usergpu.compile_opencl(MFMA, arch)}


class Run:
    """A dispatch on the bare emulator with the mock SQ watching: the profile, and what the emulator reports."""

    def __init__(self, arch: str, co: bytes, kernel: str, grid, block, args, traced=lambda *where: False):
        threads = int(np.prod(block))
        per_group = -(-threads // 64)
        self.profile = DispatchProfile(arch[:5], per_group * int(np.prod(grid)), per_group, True, traced, threads)
        self.counts: collections.Counter = collections.Counter()
        self.pcs: dict[int, list[int]] = collections.defaultdict(list)  # wave -> the ELF addresses it ran
        self.stats: dict = {}
        self.base = self.entry = None  # where the code is loaded, the kernel's entry address

        def observe(ex, local, first, pc, step):
            self.profile.observe(ex, local, first, pc, step)
            for name in counted(step.text.split()[0]):
                self.counts[name] += len(local)
            for w in (first + local).tolist():
                self.pcs[w].append(pc - ex.code_base)
            if self.entry is None:  # the first step: the entry
                self.base, self.entry = ex.code_base, pc

        launch(co, kernel, grid, block, args, stats=self.stats, observer=observe)


def _co(code, kernel):
    return code["mfma" if kernel == "mfma" else "prof"]


@pytest.mark.parametrize("kernel", CASES)
def test_instruction_counters_are_exact(arch, code, kernel):
    grid, block, make = CASES[kernel]
    run = Run(arch, _co(code, kernel), kernel, grid, block, make())
    for name, (block_name, _) in EVENTS[arch[:5]].items():
        if name in CYCLES:
            continue
        scope = {"SQ": "se", "GRBM": "xcc"}[block_name]
        got = sum(run.profile.event(name, scope).values())
        want = {"SQ_WAVES": len(run.pcs), "SQ_INSTS": run.stats["instructions"]}.get(name, run.counts[name])
        assert got == want, name
    assert run.counts["SQ_INSTS_MFMA"] == (2 if kernel == "mfma" else 0)  # a wave64 workgroup each, one MFMA
    # workgroup g runs on the XCC's shader engine g % 4; the counts are per engine
    waves = run.profile.event("SQ_WAVES", "se")
    assert waves == {(0, g % 4): 1 for g in range(int(np.prod(grid)))}


@pytest.mark.parametrize("kernel", ["straight", "reduce"])
def test_cycles_are_whole_issue_slots_and_waits_wait_for_memory(arch, code, kernel):
    grid, block, make = CASES[kernel]
    run = Run(arch, _co(code, kernel), kernel, grid, block, make(), traced=lambda *where: True)
    p = run.profile
    for w, traced in p.traced.items():
        times = [e.time for e in traced.executed]
        assert all(t % 4 == 0 for t in times) and times == sorted(times)
        assert p.clock[w] == 4 * len(traced.executed) + sum(e.stall for e in traced.executed)
        issued: list[tuple[int, str]] = []  # memory instructions not yet waited for
        for e in traced.executed:
            if e.cls in LATENCY:
                issued.append((e.time + LATENCY[e.cls], e.cls))
            elif e.cls == "WAIT":  # the model waits for all of them
                ready = max((t for t, _ in issued), default=0)
                assert e.stall == max(ready - (e.time - e.stall), 0)
                issued.clear()
    assert sum(p.event("SQ_WAVE_CYCLES", "se").values()) == int(p.clock.sum()) // 4
    assert p.event("GRBM_GUI_ACTIVE", "xcc") == {(0,): int(p.end.max())}
    for (_, se), busy in p.event("SQ_BUSY_CYCLES", "se").items():
        assert busy == int(p.end[p.se == se].max())  # every wave of an engine starts at 0 here


def test_waves_take_active_cus_and_free_slots(arch, code):
    """400 workgroups of 4 waves: more waves than the XCC has slots, so some wait for a slot."""
    run = Run(arch, code["prof"], "straight", (400, 1, 1), (256, 1, 1),
              [np.zeros(400 * 256, np.float32), np.ones(400 * 256, np.float32)])
    p, shape, part = run.profile, SHAPES[arch[:5]], PARTS[arch]
    for w in range(len(p.clock)):
        assert part.active[p.se[w]] >> p.unit[w] & 1  # never on a fused-off CU
        assert p.se[w] == w // 4 % part.ses
    group = np.arange(len(p.clock)) // 4
    for g in range(400):  # a workgroup's waves start together
        assert len(set(p.start[group == g].tolist())) == 1
    resident = collections.defaultdict(list)
    for w in range(len(p.clock)):
        resident[p.se[w], p.unit[w], p.simd[w]].append((int(p.start[w]), int(p.end[w]), int(p.slot[w])))
    assert max(len(v) for v in resident.values()) > shape.slots  # some SIMD had more waves than slots
    for waves in resident.values():
        for slot in range(shape.slots):  # a slot holds one wave at a time
            spans = sorted((s, e) for s, e, k in waves if k == slot)
            assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
        assert {k for _, _, k in waves} <= set(range(shape.slots))


@pytest.mark.parametrize("kernel", CASES)
def test_traced_instructions_are_the_executed_ones(arch, code, kernel):
    """The traced unit is CU 0 of SH 0 of shader engine 0, every SIMD (what aqlprofile traces); the mock writes the
    tokens of that engine's waves, which decode to each traced wave's executed PCs at the model's times."""
    grid, block, make = CASES[kernel]
    run = Run(arch, _co(code, kernel), kernel, grid, block, make(),
              traced=lambda xcc, se, sa, cu, simd: (se, cu) == (0, 0))
    p = run.profile
    assert p.traced
    waves = [Wave(int(p.sa[w]), int(p.unit[w]), int(p.simd[w]), int(p.slot[w]), int(p.start[w]), int(p.end[w]),
                  int(p.threads[w]), tuple(Ran(e.pc, e.text, e.size, int(p.start[w]) + e.time, e.stall, e.taken)
                                           for e in p.traced[w].executed) if w in p.traced else None)
             for w in np.flatnonzero(p.se == 0).tolist()]
    header = ("LAYOUT_HEADER", {"version": {"gfx94": 5, "gfx95": 6}[arch[:5]], "simd_mask": 0xF, "cu": 0, "se": 0})
    blob = encode([header, *dispatch_tokens(arch, run.entry, 0), *wave_tokens(arch, waves)], arch)
    decoded = wave_instructions(blob, _co(code, kernel), arch, run.base)
    by_wave = collections.defaultdict(list)
    for i in decoded:
        by_wave[i.simd, i.wave].append(i)
    for w, traced in p.traced.items():
        got = by_wave.pop((traced.simd, int(p.slot[w])))
        assert [i.pc for i in got] == run.pcs[w]
        assert [(i.time, i.stall) for i in got] == [(int(p.start[w]) + e.time - e.stall, e.stall)
                                                   for e in traced.executed]
    assert not by_wave
    starts = [q for q in decode(blob, arch) if q.kind == "CDNA_WAVESTART"]  # every wave of the engine
    assert len(starts) == len(waves) and all(q.fields["count"] == 64 for q in starts)
