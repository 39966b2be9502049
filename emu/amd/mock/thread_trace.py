"""The mock GPU's SQ thread trace (SQTT), per shader engine, in the real token format of the arch (isa/amd/sqtt's
wave_tokens and encode). The registers a driver programs (isa/amd/hw/sqtt_regs.py for their values), per SE
(GRBM_GFX_INDEX selects):

gfx11/gfx12:
- SQ_THREAD_TRACE_BUF0_*: the trace buffer's address and size.
- SQ_THREAD_TRACE_CTRL.MODE on: the SE starts a trace (a LAYOUT_HEADER); off: it stops.
- SQ_THREAD_TRACE_MASK: the WGP (SA_SEL, WGP_SEL) and SIMD (SIMD_SEL) whose waves are traced instruction by
  instruction, on SEs whose TOKEN_MASK keeps instruction tokens (TOKEN_EXCLUDE without INST).
- EVENT_WRITE THREAD_TRACE_FINISH: every tracing SE writes its tokens to its buffer, sets SQ_THREAD_TRACE_WPTR
  (32-byte units from the base; a trace that does not fit stops at the buffer's end with STATUS2.BUF0_FULL) and
  STATUS.FINISH_DONE.

gfx9 (GC 9.4.3):
- SQ_THREAD_TRACE_BASE / BASE2 / SIZE: the buffer (4 KiB units). No header: the profiler's software puts one first.
- SQ_THREAD_TRACE_MODE.MODE on: the SE starts a trace (STATUS.BUSY); off: it writes its tokens to its buffer, sets
  WPTR and CNTR (32-byte units; one that does not fit stops at the buffer's end with STATUS.FULL) and clears BUSY.
- SQ_THREAD_TRACE_MASK: the CU (SH_SEL, CU_SEL) and SIMDs (SIMD_EN) traced instruction by instruction.
- SQ_THREAD_TRACE_TOKEN_MASK.TOKEN_MASK: the token types the SE writes (a bit per type); TOKEN_MASK2.INST_MASK: the
  CDNA_INST types it writes. Instruction tracing needs INST and ISSUE.

A dispatch leaves, on every tracing SE, REG tokens of its entry address (COMPUTE_PGM_LO/HI), then its waves' tokens,
timed by profiler.py's model.
"""

from __future__ import annotations

import numpy as np

from usergpu.isa.amd.hw import sqtt_regs as tt
from usergpu.isa.amd.hw.soc import family, vgt_event
from usergpu.isa.amd.sqtt import encode, layout_of
from usergpu.isa.amd.sqtt.emit import Ran, Wave, dispatch_tokens, wave_tokens
from usergpu.isa.amd.sqtt.tables import GFX9

LAYOUT = {"gfx11": 3, "gfx12": 4}


class ThreadTrace:
    """The trace of every XCC's shader engines; register accesses reach the XCC gpu.xcc names (the one whose command
    processor runs the packet, or the dispatch)."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.engine = (_Gfx9 if layout_of(gpu.arch) is GFX9 else _Rdna)(gpu)
        self.events: dict[tuple[int, int], list[tuple[str, dict, int]]] = {}  # (XCC, SE) -> (kind, fields, time)
        self.clock: dict[int, int] = {}  # XCC -> shader cycles since its trace started, across dispatches
        gpu.on_write[gpu.canonical(self.engine.switch)] = self.written

    @property
    def on(self) -> bool:
        return bool(self.events)

    def written(self, value: int) -> None:
        """The engine's switch register written: each selected SE's trace starts or stops."""
        xcc = self.gpu.xcc
        for se, _, _ in self.gpu.selected():
            tracing = self.engine.mode(se)
            if tracing and (xcc, se) not in self.events:
                self.events[xcc, se] = []
                self.clock.setdefault(xcc, 0)
                self.engine.started(se)
            elif not tracing and (xcc, se) in self.events and self.engine.stops_on_mode:
                self._write(se, self.events.pop((xcc, se)))

    def traced(self, xcc: int, se: int, sa: int, unit: int, simd: int) -> bool:
        """Whether a wave there is traced instruction by instruction."""
        return (xcc, se) in self.events and self.engine.traced(se, sa, unit, simd)

    def record(self, profile, program: int) -> None:
        """A dispatch, as tokens of the XCC's tracing SEs: its entry address, then its waves."""
        xcc, arch = profile.xcc, self.gpu.arch
        start = self.clock.get(xcc, 0)
        ends, starts, slots = profile.end + start, profile.start + start, profile.slot
        for (x, se), out in self.events.items():
            if x != xcc:
                continue
            out += dispatch_tokens(arch, program, start)
            here = (np.flatnonzero(profile.se == se).tolist() if self.engine.every_wave
                    else [w for w, t in profile.traced.items() if t.se == se])
            waves = [Wave(int(profile.sa[w]), int(profile.unit[w]), int(profile.simd[w]), int(slots[w]),
                          int(starts[w]), int(ends[w]), int(profile.threads[w]),
                          _ran(profile.traced[w], int(starts[w])) if w in profile.traced else None) for w in here]
            out += self.engine.kept(se, wave_tokens(arch, waves))
        self.clock[xcc] = int(ends.max(initial=start))

    def event(self, event_type: int) -> None:
        if not self.events or self.engine.stops_on_mode or event_type != vgt_event(self.gpu.arch,
                                                                                   "THREAD_TRACE_FINISH"):
            return
        xcc = self.gpu.xcc
        for x, se in [k for k in self.events if k[0] == xcc]:
            self._write(se, self.events.pop((x, se)))

    def _write(self, se: int, events: list[tuple[str, dict, int]]) -> None:
        blob = encode(self.engine.header(se) + sorted(events, key=lambda e: e[2]), self.gpu.arch)
        base, size = self.engine.buffer(se)
        blob = blob + bytes(-len(blob) % tt.WPTR_UNIT)
        self.gpu.mem.write_bytes(base, blob[:size])
        self.engine.finished(se, min(len(blob), size) // tt.WPTR_UNIT, len(blob) > size)


def _ran(wave, start: int) -> tuple[Ran, ...]:
    return tuple(Ran(e.pc, e.text, e.size, start + e.time, e.stall, e.taken) for e in wave.executed)


class _Engine:
    """What one family's SQ registers say; per shader engine."""

    switch = ""  # the register whose writes start and stop a trace
    stops_on_mode = False  # the trace is written when it is switched off (else at THREAD_TRACE_FINISH)
    every_wave = False  # every wave of the SE leaves tokens (else only the instruction-traced ones)

    def __init__(self, gpu):
        self.gpu = gpu

    def reg(self, name: str, se: int) -> dict[str, int]:
        return self.gpu.table[name].decode(self.gpu.instance(name, (se, 0, 0)))

    def set(self, name: str, se: int, *flags: str) -> None:
        """The register's copies on the SE: every bit of the named fields set, the rest clear."""
        fields = self.gpu.table[name].fields
        self.gpu.set_instances(name, self.gpu.engine(se), sum(fields[f][1] for f in flags))

    def kept(self, se: int, tokens: list) -> list:
        return tokens


class _Rdna(_Engine):
    switch = "SQ_THREAD_TRACE_CTRL"

    def mode(self, se: int) -> bool:
        return self.reg("SQ_THREAD_TRACE_CTRL", se)["MODE"] == tt.SQ_TT_MODE_ON

    def started(self, se: int) -> None:
        self.set("SQ_THREAD_TRACE_STATUS", se, "BUSY")

    def traced(self, se: int, sa: int, wgp: int, simd: int) -> bool:
        if self.reg("SQ_THREAD_TRACE_TOKEN_MASK", se)["TOKEN_EXCLUDE"] >> tt.INST & 1:
            return False
        mask = self.reg("SQ_THREAD_TRACE_MASK", se)
        return (mask["SA_SEL"], mask["WGP_SEL"], mask["SIMD_SEL"]) == (sa, wgp, simd)

    def header(self, se: int) -> list:
        mask = self.reg("SQ_THREAD_TRACE_MASK", se)
        return [("LAYOUT_HEADER", {"layout": LAYOUT[family(self.gpu.arch)], "sa": mask["SA_SEL"],
                                   "wgp": mask["WGP_SEL"], "simd": mask["SIMD_SEL"]})]

    def buffer(self, se: int) -> tuple[int, int]:
        size = self.reg("SQ_THREAD_TRACE_BUF0_SIZE", se)
        if "SQ_THREAD_TRACE_BUF0_BASE" in self.gpu.table:  # gfx11: the high address bits share the size register
            hi, lo = size["BASE_HI"], self.reg("SQ_THREAD_TRACE_BUF0_BASE", se)["BASE_LO"]
        else:
            hi, lo = (self.reg("SQ_THREAD_TRACE_BUF0_BASE_HI", se)["BASE_HI"],
                      self.reg("SQ_THREAD_TRACE_BUF0_BASE_LO", se)["BASE_LO"])
        return (hi << 32 | lo) << 12, size["SIZE"] << 12

    def finished(self, se: int, wptr: int, full: bool) -> None:
        self.gpu.set_instances("SQ_THREAD_TRACE_WPTR", self.gpu.engine(se), wptr)
        self.set("SQ_THREAD_TRACE_STATUS2", se, *["BUF0_FULL"] * full)
        self.set("SQ_THREAD_TRACE_STATUS", se, "FINISH_DONE")


class _Gfx9(_Engine):
    switch = "SQ_THREAD_TRACE_MODE"
    stops_on_mode = every_wave = True

    def mode(self, se: int) -> bool:
        return self.reg("SQ_THREAD_TRACE_MODE", se)["MODE"] == tt.SQ_THREAD_TRACE_MODE_ON

    def started(self, se: int) -> None:
        self.set("SQ_THREAD_TRACE_STATUS", se, "BUSY")

    def tokens(self, se: int) -> int:
        return self.reg("SQ_THREAD_TRACE_TOKEN_MASK", se)["TOKEN_MASK"]

    def traced(self, se: int, sh: int, cu: int, simd: int) -> bool:
        if ~self.tokens(se) & (1 << tt.GFX9_INST | 1 << tt.GFX9_ISSUE):
            return False
        mask = self.reg("SQ_THREAD_TRACE_MASK", se)
        return (mask["SH_SEL"], mask["CU_SEL"]) == (sh, cu) and bool(mask["SIMD_EN"] >> simd & 1)

    def kept(self, se: int, tokens: list) -> list:
        """The tokens of the types TOKEN_MASK keeps (and of CDNA_INST, of the types INST_MASK keeps)."""
        types, insts = self.tokens(se), self.reg("SQ_THREAD_TRACE_TOKEN_MASK2", se)["INST_MASK"]
        return [t for t in tokens if types >> GFX9.by_kind[t[0]].match & 1
                and (t[0] != "CDNA_INST" or insts >> t[1]["op"] & 1)]

    def header(self, se: int) -> list:
        return []

    def buffer(self, se: int) -> tuple[int, int]:
        hi, lo = self.reg("SQ_THREAD_TRACE_BASE2", se)["ADDR_HI"], self.reg("SQ_THREAD_TRACE_BASE", se)["ADDR"]
        return (hi << 32 | lo) << 12, self.reg("SQ_THREAD_TRACE_SIZE", se)["SIZE"] << 12

    def finished(self, se: int, wptr: int, full: bool) -> None:
        for name in ("SQ_THREAD_TRACE_WPTR", "SQ_THREAD_TRACE_CNTR"):
            self.gpu.set_instances(name, self.gpu.engine(se), wptr)
        self.set("SQ_THREAD_TRACE_STATUS", se, *["FULL"] * full)
