"""What the mock GPU's shader sequencers see of a dispatch while profiling: where each wave runs, what it executes
(the emulator's steps), when (a simple timing model), and the exact counts of the performance-counter events.

Shape (SHAPES, per gfx family, per XCC: a CDNA part's XCCs each dispatch their share of the workgroups, gpu.py):
shader engines, shader arrays (gfx9: SH) per engine, units per array (gfx11/gfx12: WGPs, gfx9: CUs) less those fused
off, 4 SIMDs per unit, wave slots per SIMD.

Placement: workgroups go round-robin over the XCC's shader engines, then shader arrays, then active units; a unit's
waves go round-robin over its SIMDs in launch order. A workgroup starts when each of its waves has a free slot on
its SIMD (the earliest freed), so a SIMD never holds more waves than its slots.

Timing model, in shader-clock cycles from the wave's start. A wave issues one instruction at a time; an instruction
occupies it for ISSUE[family][class] cycles (wave64 VALU on RDNA twice that: two passes of its SIMD32; CDNA's
SIMD16 takes one 4-cycle issue slot for any instruction, MFMA's matrix passes not modelled). A memory instruction
completes LATENCY[class] cycles after it issues. A wait (s_waitcnt, gfx12's s_wait_*cnt) stalls the wave until all
its memory instructions have completed: that is its stall, counted from the end of the previous instruction.
Barriers cost their issue time only. On gfx9 every time is a multiple of 4, as its trace clock counts.

Instruction classes (the mnemonic decides): SALU, SMEM, VALU, MFMA (v_mfma/v_smfmac), VMEM_RD/VMEM_WR
(buffer/tbuffer/image), FLAT_RD/FLAT_WR (flat/global/scratch), LDS, BRANCH, WAIT, NOP (s_nop, s_sleep, s_setprio:
the sequencer's own, no SALU work), BARRIER, MESSAGE (s_sendmsg), ENDPGM. COUNTED says which classes each
instruction counter counts (as rocprofiler-sdk's counter_defs.yaml describes them: VALU counts MFMA too, VMEM_RD/WR
count FLAT loads/stores; flat_* instructions, which may reach LDS, are not counted as LDS here).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import cache, cached_property

import numpy as np

from usergpu.emu.amd.mock.cdna import PARTS, Part
from usergpu.isa.amd.hw.soc import family

SIMDS = 4  # per WGP (gfx11/gfx12: two CUs of two SIMD32) or per CU (gfx9: four SIMD16)


@dataclass(frozen=True)
class Shape:
    ses: int
    sas: int  # per shader engine
    units: int  # WGPs (CUs on gfx9) per shader array, fused-off ones included
    slots: int  # wave slots per SIMD
    fused: frozenset = frozenset()  # (se, sa, unit) fused off

    def active(self, se: int, sa: int) -> list[int]:
        return [u for u in range(self.units) if (se, sa, u) not in self.fused]


def _cdna(part: Part) -> Shape:
    """An XCC of a CDNA part (cdna.py: its CU bitmaps, waves per SIMD)."""
    fused = frozenset((se, 0, cu) for se, mask in enumerate(part.active) for cu in range(part.cus_per_sh)
                      if not mask >> cu & 1)
    return Shape(part.ses, part.sh_per_se, part.cus_per_sh, part.waves_per_simd, fused)


# Navi31 (6 SEs x 2 SAs x 4 WGPs, 96 CUs) and Navi48 (4 x 2 x 4, 64 CUs), RDNA's 16 waves per SIMD; MI300X and MI350X
SHAPES = {"gfx11": Shape(6, 2, 4, 16), "gfx12": Shape(4, 2, 4, 16), **{family(a): _cdna(p) for a, p in PARTS.items()}}
TOPOLOGY = {family: (s.ses, s.sas, s.units) for family, s in SHAPES.items()}  # what gc_info gives

_RDNA = {"SALU": 1, "SMEM": 1, "VALU": 1, "MFMA": 1, "VMEM_RD": 4, "VMEM_WR": 4, "FLAT_RD": 4, "FLAT_WR": 4,
         "LDS": 2, "BRANCH": 2, "WAIT": 1, "NOP": 1, "BARRIER": 1, "MESSAGE": 1, "ENDPGM": 1}
ISSUE = {"gfx11": _RDNA, "gfx12": _RDNA, "gfx94": dict.fromkeys(_RDNA, 4), "gfx95": dict.fromkeys(_RDNA, 4)}
VALU_WAVE64 = {"gfx11": 2, "gfx12": 2, "gfx94": 1, "gfx95": 1}  # a wave64 VALU instruction's issue, times ISSUE
LATENCY = {"SMEM": 40, "VMEM_RD": 300, "VMEM_WR": 100, "FLAT_RD": 300, "FLAT_WR": 100, "LDS": 32}
CLASSES = tuple(_RDNA)
_MEMORY = ("VMEM_RD", "VMEM_WR", "FLAT_RD", "FLAT_WR")
# event name -> the classes it counts (SQ_WAVES and the cycle counters are worked out apart)
COUNTED = {"SQ_INSTS": CLASSES, "SQ_INSTS_SALU": ("SALU",), "SQ_INSTS_SMEM": ("SMEM",),
           "SQ_INSTS_VALU": ("VALU", "MFMA"), "SQ_INSTS_MFMA": ("MFMA",), "SQ_INSTS_VMEM_RD": ("VMEM_RD", "FLAT_RD"),
           "SQ_INSTS_VMEM_WR": ("VMEM_WR", "FLAT_WR"), "SQ_INSTS_VMEM": _MEMORY,
           "SQ_INSTS_FLAT": ("FLAT_RD", "FLAT_WR"), "SQ_INSTS_LDS": ("LDS",), "SQ_INSTS_BRANCH": ("BRANCH",),
           "SQ_INSTS_SENDMSG": ("MESSAGE",)}
_PREFIXES = (("v_mfma", "MFMA"), ("v_smfmac", "MFMA"), ("v_", "VALU"), ("ds_", "LDS"), ("s_load", "SMEM"),
             ("s_buffer_load", "SMEM"), ("s_store", "SMEM"), ("s_buffer_store", "SMEM"), ("s_prefetch", "SMEM"),
             ("s_dcache", "SMEM"), ("s_cbranch", "BRANCH"), ("s_branch", "BRANCH"), ("s_waitcnt", "WAIT"),
             ("s_wait_", "WAIT"), ("s_nop", "NOP"), ("s_sleep", "NOP"), ("s_setprio", "NOP"), ("s_barrier", "BARRIER"),
             ("s_sendmsg", "MESSAGE"), ("s_endpgm", "ENDPGM"))
_VMEM = (("global_", "FLAT"), ("flat_", "FLAT"), ("scratch_", "FLAT"), ("buffer_", "VMEM"), ("tbuffer_", "VMEM"),
         ("image_", "VMEM"))


@cache
def classify(text: str) -> str:
    """An instruction's class from its disassembly (worked out once per instruction text)."""
    mnemonic = text.split(None, 1)[0] if text else ""
    kind = next((k for prefix, k in _VMEM if mnemonic.startswith(prefix)), None)
    if kind:
        return f"{kind}_RD" if "load" in mnemonic else f"{kind}_WR"
    return next((cls for prefix, cls in _PREFIXES if mnemonic.startswith(prefix)), "SALU")


@dataclass
class Executed:
    """One instruction a traced wave executed: when it issued (cycles from the wave's start), how long it took,
    how long it waited first."""

    pc: int
    text: str
    size: int  # bytes of its encoding
    cls: str
    time: int
    duration: int
    stall: int
    taken: bool  # a branch that jumped


@dataclass
class TracedWave:
    wave: int  # the dispatch's wave number
    xcc: int
    se: int
    sa: int
    unit: int
    simd: int
    executed: list[Executed] = field(default_factory=list)


class DispatchProfile:
    """Placement, timing and counts of one XCC's dispatch of waves (waves_per_group to a workgroup of threads
    work-items, wave64 or wave32). traced(xcc, se, sa, unit, simd) says which waves to log instruction by
    instruction (a thread trace's target); counts are kept for every wave. start / slot / end (cycles from the
    dispatch's start) are known once it ran."""

    def __init__(self, family: str, waves: int, waves_per_group: int, wave64: bool, traced=lambda *where: False,
                 threads: int | None = None, xcc: int = 0):
        self.family, self.shape, self.xcc = family, SHAPES[family], xcc
        shape = self.shape
        self.waves_per_group, lanes = waves_per_group, 64 if wave64 else 32
        self.issue = dict(ISSUE[family])
        if wave64:
            self.issue["VALU"] *= VALU_WAVE64[family]
        wave = np.arange(waves)
        group, index = wave // waves_per_group, wave % waves_per_group
        self.se, self.sa = group % shape.ses, group // shape.ses % shape.sas
        self.unit = np.zeros(waves, np.int64)
        for se in range(shape.ses):
            for sa in range(shape.sas):
                here = (self.se == se) & (self.sa == sa)
                units = np.array(shape.active(se, sa))
                self.unit[here] = units[group[here] // (shape.ses * shape.sas) % len(units)]
        # a unit's waves take its SIMDs in turn, in launch order
        keys = np.stack([self.se, self.sa, self.unit], axis=1)
        _, unit_of = np.unique(keys, axis=0, return_inverse=True)
        order = np.argsort(unit_of.ravel(), kind="stable")
        rank = np.empty(waves, np.int64)
        counts = np.bincount(unit_of.ravel())
        rank[order] = np.arange(waves) - np.repeat(np.cumsum(counts) - counts, counts)
        self.simd = rank % SIMDS
        threads = waves_per_group * lanes if threads is None else threads
        self.threads = np.clip(threads - index * lanes, 0, lanes)  # the lanes each wave was launched with
        self.clock = np.zeros(waves, np.int64)  # each wave's cycles so far, from its start
        self.ready = np.zeros(waves, np.int64)  # when the wave's outstanding memory instructions are all done
        self.counts = {cls: np.zeros(waves, np.int64) for cls in CLASSES}
        self.valu_cycles = np.zeros(waves, np.int64)
        places, place_of = np.unique(np.stack([self.se, self.sa, self.unit, self.simd], axis=1), axis=0,
                                     return_inverse=True)  # asked once per SIMD, not per wave
        self.is_traced = np.array([traced(xcc, *map(int, where)) for where in places], bool)[place_of.ravel()]
        self.traced = {w: TracedWave(w, xcc, *map(int, places[place_of.ravel()[w]]))
                       for w in np.flatnonzero(self.is_traced).tolist()}

    def observe(self, ex, local: np.ndarray, first: int, pc: int, step) -> None:
        """The executor's hook: its waves local (first + local dispatch-wide) executed the instruction at pc."""
        waves = first + local
        cls = classify(step.text)
        issue = self.issue[cls]
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
            self.traced[w].executed.append(Executed(pc, step.text, step.size, cls, int(start[i]), issue,
                                                    int(stall[i]), cls == "BRANCH" and nxt != pc + step.size))

    # ---- after the dispatch ran -----------------------------------------------------------------------------
    @cached_property
    def _schedule(self) -> tuple[np.ndarray, np.ndarray]:
        """(start, slot) of every wave: workgroups in order, each wave taking the slot of its SIMD freed first."""
        waves = len(self.clock)
        start, slot = np.zeros(waves, np.int64), np.zeros(waves, np.int64)
        simd_of = np.stack([self.se, self.sa, self.unit, self.simd], axis=1).tolist()
        free: dict[tuple, list[tuple[int, int]]] = {}
        duration = self.clock.tolist()
        for g in range(0, waves, self.waves_per_group):
            group = range(g, min(g + self.waves_per_group, waves))
            taken = [heapq.heappop(free.setdefault(tuple(simd_of[w]), [(0, s) for s in range(self.shape.slots)]))
                     for w in group]
            begin = max(t for t, _ in taken)
            for w, (_, s) in zip(group, taken, strict=True):
                start[w], slot[w] = begin, s
                heapq.heappush(free[tuple(simd_of[w])], (begin + duration[w], s))
        return start, slot

    @property
    def start(self) -> np.ndarray:
        return self._schedule[0]

    @property
    def slot(self) -> np.ndarray:
        return self._schedule[1]

    @property
    def end(self) -> np.ndarray:
        return self.start + self.clock

    def event(self, name: str, scope: str) -> dict[tuple, int]:
        """An event's count per instance: scope "xcc" {(xcc,): n}, "se" {(xcc, se): n}, "wgp" {(xcc, se, sa, wgp):
        n} (only instances some wave ran on)."""
        columns = {"xcc": (), "se": (self.se,), "wgp": (self.se, self.sa, self.unit)}[scope]
        keys = np.stack([np.full(len(self.se), self.xcc), *columns], axis=1)
        where, wave_to = np.unique(keys, axis=0, return_inverse=True)
        wave_to = wave_to.ravel()
        if name in ("GRBM_GUI_ACTIVE", "SQ_BUSY_CYCLES"):  # cycles some wave of the instance was resident
            per = [_covered(self.start[wave_to == i], self.end[wave_to == i]) for i in range(len(where))]
        else:
            if name == "SQ_WAVES":
                per_wave = np.ones(len(self.clock), np.int64)
            elif name == "SQ_WAVE_CYCLES":  # quad-cycles
                per_wave = self.clock // 4
            elif name == "SQ_INST_CYCLES_VALU":
                per_wave = self.valu_cycles
            else:
                per_wave = sum(self.counts[cls] for cls in COUNTED[name])
            per = np.bincount(wave_to, weights=per_wave, minlength=len(where)).tolist()
        return {tuple(int(k) for k in w): int(n) for w, n in zip(where, per, strict=True)}


def _covered(starts: np.ndarray, ends: np.ndarray) -> int:
    """The length of the union of the intervals [start, end)."""
    total, reach = 0, None
    for s, e in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if reach is None or s > reach:
            total, reach = total + e - s, e
        elif e > reach:
            total, reach = total + e - reach, e
    return total
