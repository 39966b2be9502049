"""What the mock GPU's shader sequencers see of a dispatch while profiling: where each wave runs, what it executes
(the emulator's steps), when (a simple timing model), and the exact counts of the performance-counter events.

Placement: workgroups go round-robin over shader engines, then shader arrays, then WGPs (workgroup g on SE
g % SEs, ...); the waves of a workgroup go round-robin over the WGP's four SIMDs, and take wave slots in order.

Timing model, in shader-clock cycles. Every wave starts at cycle 0 of the dispatch and issues one instruction at a
time. An instruction occupies the wave for ISSUE[class] cycles (VALU twice that in wave64). A memory instruction
completes LATENCY[class] cycles after it issues. A wait (s_waitcnt, gfx12's s_wait_*cnt) stalls the wave until all
its memory instructions have completed: that is its stall, counted from the end of the previous instruction.
Barriers cost their issue time only.

Instruction classes (the mnemonic decides): SALU, SMEM, VALU, VMEM_RD, VMEM_WR, LDS, BRANCH, WAIT, BARRIER,
MESSAGE, ENDPGM. SQ_INSTS counts every class; SQ_INSTS_SALU counts SALU only (branches, waits, barriers and
messages have no counter of their own here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

ISSUE = {"SALU": 1, "SMEM": 1, "VALU": 1, "VMEM_RD": 4, "VMEM_WR": 4, "LDS": 2, "BRANCH": 2, "WAIT": 1,
         "BARRIER": 1, "MESSAGE": 1, "ENDPGM": 1}
LATENCY = {"SMEM": 40, "VMEM_RD": 300, "VMEM_WR": 100, "LDS": 32}
CLASSES = tuple(ISSUE)
# event name -> the classes it counts (SQ_WAVES and the cycle counters are computed apart)
COUNTED = {"SQ_INSTS": CLASSES, "SQ_INSTS_SALU": ("SALU",), "SQ_INSTS_SMEM": ("SMEM",), "SQ_INSTS_VALU": ("VALU",),
           "SQ_INSTS_VMEM_RD": ("VMEM_RD",), "SQ_INSTS_VMEM_WR": ("VMEM_WR",), "SQ_INSTS_LDS": ("LDS",)}
SIMDS_PER_WGP = 4
# gfx family -> (shader engines, shader arrays per SE, WGPs per SA): Navi31 and Navi48
TOPOLOGY = {"gfx11": (6, 2, 4), "gfx12": (4, 2, 4)}
_PREFIXES = (("v_", "VALU"), ("ds_", "LDS"), ("s_load", "SMEM"), ("s_buffer_load", "SMEM"), ("s_prefetch", "SMEM"),
             ("s_dcache", "SMEM"), ("s_cbranch", "BRANCH"), ("s_branch", "BRANCH"), ("s_waitcnt", "WAIT"),
             ("s_wait_", "WAIT"), ("s_barrier", "BARRIER"),
             ("s_sendmsg", "MESSAGE"), ("s_endpgm", "ENDPGM"))
_MEMORY = ("global_", "buffer_", "flat_", "scratch_", "tbuffer_", "image_")


@cache
def classify(text: str) -> str:
    """An instruction's class from its disassembly (worked out once per instruction text)."""
    mnemonic = text.split(None, 1)[0] if text else ""
    if mnemonic.startswith(_MEMORY):
        return "VMEM_RD" if "load" in mnemonic else "VMEM_WR"
    return next((cls for prefix, cls in _PREFIXES if mnemonic.startswith(prefix)), "SALU")


@dataclass
class Executed:
    """One instruction a traced wave executed: when it issued, how long it took, how long it waited first."""

    pc: int
    text: str
    cls: str
    time: int
    duration: int
    stall: int
    taken: bool  # a branch that jumped


@dataclass
class TracedWave:
    wave: int  # the dispatch's wave number
    se: int
    sa: int
    wgp: int
    simd: int
    slot: int
    start: int = 0
    end: int = 0
    executed: list[Executed] = field(default_factory=list)


class DispatchProfile:
    """Placement, timing and counts of one dispatch. traced(se, sa, wgp, simd) says which waves to log
    instruction by instruction (a thread trace's target); counts are kept for every wave."""

    def __init__(self, family: str, waves: int, waves_per_group: int, wave64: bool, traced=lambda *where: False):
        ses, sas, wgps = TOPOLOGY[family]
        self.shape = (ses, sas, wgps)
        wave = np.arange(waves)
        group, index = wave // waves_per_group, wave % waves_per_group
        self.se, self.sa, self.wgp = group % ses, group // ses % sas, group // (ses * sas) % wgps
        self.simd = index % SIMDS_PER_WGP
        self.wave64 = wave64
        self.clock = np.zeros(waves, np.int64)
        self.ready = np.zeros(waves, np.int64)  # when the wave's outstanding memory instructions are all done
        self.counts = {cls: np.zeros(waves, np.int64) for cls in CLASSES}
        self.valu_cycles = np.zeros(waves, np.int64)
        slots: dict[tuple, int] = {}
        self.traced: dict[int, TracedWave] = {}
        for w in range(waves):
            where = (int(self.se[w]), int(self.sa[w]), int(self.wgp[w]), int(self.simd[w]))
            slot = slots[where] = slots.get(where, -1) + 1
            if traced(*where):
                self.traced[w] = TracedWave(w, *where, slot)
        self.is_traced = np.zeros(waves, bool)
        self.is_traced[list(self.traced)] = True

    def observe(self, ex, local: np.ndarray, first: int, pc: int, step) -> None:
        """The executor's hook: its waves local (first + local dispatch-wide) executed the instruction at pc."""
        waves = first + local
        cls = classify(step.text)
        issue = ISSUE[cls] * (2 if cls == "VALU" and self.wave64 else 1)
        stall = np.maximum(self.ready[waves] - self.clock[waves], 0) if cls == "WAIT" else np.zeros(len(waves),
                                                                                                   np.int64)
        start = self.clock[waves] + stall
        self.clock[waves] = start + issue
        if cls in LATENCY:
            self.ready[waves] = np.maximum(self.ready[waves], start + LATENCY[cls])
        self.counts[cls][waves] += 1
        if cls == "VALU":
            self.valu_cycles[waves] += issue
        for i in np.flatnonzero(self.is_traced[waves]).tolist():  # the few traced waves, not every wave
            w, nxt = int(waves[i]), int(ex.w.pc[local[i]])
            t = self.traced[w]
            t.executed.append(Executed(pc, step.text, cls, int(start[i]), issue, int(stall[i]),
                                       cls == "BRANCH" and nxt != pc + step.size))
            t.end = int(self.clock[w])

    def event(self, name: str, block: str) -> dict[tuple, int]:
        """An event's count per instance of its block: GRBM {(): n}, SQG {(se,): n}, SQ {(se, sa, wgp): n}."""
        if name == "GRBM_GUI_ACTIVE":
            return {(): int(self.clock.max()) if len(self.clock) else 0}
        if name == "SQ_WAVES":
            per_wave = np.ones(len(self.clock), np.int64)
        elif name == "SQ_INST_CYCLES_VALU":
            per_wave = self.valu_cycles
        else:
            per_wave = sum(self.counts[cls] for cls in COUNTED[name])
        keys = np.stack({"SQG": (self.se,), "SQ": (self.se, self.sa, self.wgp)}[block], axis=1)
        where, wave_to = np.unique(keys, axis=0, return_inverse=True)
        sums = np.bincount(wave_to.ravel(), weights=per_wave, minlength=len(where))
        return {tuple(int(k) for k in w): int(n) for w, n in zip(where, sums, strict=True)}
