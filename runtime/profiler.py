"""Kernel profiling on the runtime: the SQ thread trace (SQTT) of every shader engine and the performance counters
(PMC) of every instance, programmed around each PM4 dispatch, and the capture they make — a directory laid out as
shared/data/sqtt's real captures are (capture.json, the code objects, one blob per shader engine), with the
counters in pmc.json, so `usergpu prof show` opens real and mock captures alike.

Knobs (environment, read by Profiler.from_env): PROFILE=1 turns profiling on, with SQTT=1 for thread traces and
PMC=1 for counters (PMC_COUNTERS=NAME,... picks them); SQTT_BUFFER_SIZE is the trace buffer per shader engine in
MiB (16); SQTT_ITRACE_SE_MASK the shader engines that trace instructions (0x1); PROF_SLOTS how many kernels'
counter samples may wait to be read (16). A full trace buffer or a slot reused before it was read is a warning that
says which knob to raise.
"""

from __future__ import annotations

import json
import os
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from usergpu.autogen import _sqtt as tt
from usergpu.autogen._pmc import BLOCKS, EVENTS, PERFMON_CNTL, PERFMON_DISABLE_AND_RESET, PERFMON_START, PERFMON_STOP
from usergpu.emu.amd.soc import GC_REGS, vgt_event
from usergpu.errors import Error

DEFAULT_COUNTERS = ("SQ_WAVES", "SQ_INSTS_VALU", "SQ_INSTS_SALU", "SQ_INSTS_LDS", "GRBM_GUI_ACTIVE")
MiB = 1 << 20


class ProfileError(Error):
    """A profiling request this device cannot do: an unknown counter, too many for a block, a bad knob."""


@dataclass
class KernelCapture:
    """What one profiled kernel left: its code object and load address, a trace blob per shader engine (with
    whether that engine traced instructions) and its counters per instance."""

    name: str
    code_object: bytes
    base: int
    traces: list[tuple[int, bytes, bool]] = field(default_factory=list)
    counters: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class _Pending:
    capture: KernelCapture
    slot: int


def _knob(name: str, default: int) -> int:
    text = os.environ.get(name)
    try:
        return default if text is None else int(text, 0)
    except ValueError:
        raise ProfileError(f"{name}={text!r}: expected an integer") from None


class Profiler:
    def __init__(self, dev, sqtt: bool = True, counters: list[str] | tuple[str, ...] = (), buffer_bytes: int = 16 * MiB,
                 itrace_se_mask: int = 0x1, slots: int = 16):
        self.dev, family = dev, dev.arch[:5]
        self.regs = GC_REGS[family]
        props = dev.driver.properties
        sas = props["simd_arrays_per_engine"]
        self.ses, self.sas, self.wgps = props["array_count"] // sas, sas, props["cu_per_simd_array"] // 2
        events = EVENTS[family]
        unknown = [c for c in counters if c not in events]
        if unknown:
            raise ProfileError(f"PMC_COUNTERS: {', '.join(unknown)} not counted on {dev.arch}; it counts "
                               f"{', '.join(events)}")
        self.counters: list[tuple[str, str, int]] = []  # (event, block, counter number)
        for name in counters:
            block = events[name][0]
            n = sum(1 for _, b, _ in self.counters if b == block)
            if n == BLOCKS[block][0]:
                raise ProfileError(f"PMC_COUNTERS: {block} has {n} counters; {name} is one too many")
            self.counters.append((name, block, n))
        self.sqtt, self.itrace_se_mask, self.slots = sqtt, itrace_se_mask, slots
        if buffer_bytes < 4096 or buffer_bytes % 4096:
            raise ProfileError(f"SQTT_BUFFER_SIZE: {buffer_bytes} bytes; a trace buffer is whole 4 KiB pages")
        self.buffer_bytes = buffer_bytes
        self.trace_buffers = [dev.memory(self.buffer_bytes, "gtt") for _ in range(self.ses)] if sqtt else []
        self.samples = [(name, block, n, where) for name, block, n in self.counters for where in self._instances(block)]
        self.slot_bytes = 8 * (self.ses + len(self.samples))  # the trace write pointers, then a qword per sample
        self.slot_mem = dev.memory(max(slots * self.slot_bytes, 4096), "gtt")
        self.next_slot = 0
        self.pending: list[_Pending] = []
        self.captures: list[KernelCapture] = []

    @classmethod
    def from_env(cls, dev) -> Profiler | None:
        if os.environ.get("PROFILE") != "1":
            return None
        counters = [c for c in os.environ.get("PMC_COUNTERS", ",".join(DEFAULT_COUNTERS)).split(",") if c]
        return cls(dev, os.environ.get("SQTT") == "1", counters if os.environ.get("PMC") == "1" else [],
                   _knob("SQTT_BUFFER_SIZE", 16) * MiB, _knob("SQTT_ITRACE_SE_MASK", 0x1), _knob("PROF_SLOTS", 16))

    # ---- registers ----------------------------------------------------------------------------------------------
    def _addr(self, name: str) -> int:
        return self.dev.register_address(name)

    def _set(self, p, **regs: int) -> None:
        p.set_uconfig_regs({self._addr(name): value for name, value in regs.items()})

    def _index(self, se: int | None = None, sa: int | None = None, wgp: int | None = None) -> int:
        """GRBM_GFX_INDEX selecting an instance (None: broadcast at that level)."""
        return self.regs["GRBM_GFX_INDEX"].encode(
            SE_INDEX=se or 0, SA_INDEX=sa or 0, INSTANCE_INDEX=wgp or 0, SE_BROADCAST_WRITES=int(se is None),
            SA_BROADCAST_WRITES=int(sa is None), INSTANCE_BROADCAST_WRITES=int(wgp is None))

    def _instances(self, block: str) -> list[tuple[int, ...]]:
        if block == "GRBM":
            return [()]
        if block == "SQG":
            return [(se,) for se in range(self.ses)]
        return [(se, sa, wgp) for se in range(self.ses) for sa in range(self.sas) for wgp in range(self.wgps)]

    def _buffer_regs(self, se: int) -> dict[str, int]:
        va, size = self.trace_buffers[se].va, self.buffer_bytes >> 12
        if "SQ_THREAD_TRACE_BUF0_BASE" in self.regs:  # gfx11: the high address bits share the size register
            return {"SQ_THREAD_TRACE_BUF0_SIZE": self.regs["SQ_THREAD_TRACE_BUF0_SIZE"].encode(
                SIZE=size, BASE_HI=va >> 44), "SQ_THREAD_TRACE_BUF0_BASE": (va >> 12) & 0xFFFFFFFF}
        return {"SQ_THREAD_TRACE_BUF0_SIZE": size, "SQ_THREAD_TRACE_BUF0_BASE_LO": (va >> 12) & 0xFFFFFFFF,
                "SQ_THREAD_TRACE_BUF0_BASE_HI": va >> 44}

    # ---- around a dispatch --------------------------------------------------------------------------------------
    def begin(self, p) -> int:
        """Packets that start the counters and the trace before a dispatch; the kernel's slot."""
        if self.sqtt and self.pending:
            self.dev.synchronize()  # one trace buffer per engine: the last kernel's trace is read first
        if len(self.pending) == self.slots:
            lost = self.pending.pop(0)
            warnings.warn(f"profiling slot of kernel {lost.capture.name} reused before it was read (PROF_SLOTS="
                          f"{self.slots}): its counters are lost; raise PROF_SLOTS or synchronize more often",
                          stacklevel=3)
        slot, self.next_slot = self.next_slot, (self.next_slot + 1) % self.slots
        family = self.dev.arch[:5]
        if self.counters:
            self._set(p, **{PERFMON_CNTL[family]: PERFMON_DISABLE_AND_RESET, "GRBM_GFX_INDEX": self._index()})
            for name, block, n in self.counters:
                select = f"{BLOCKS[block][1]}{n}_SELECT"
                self._set(p, **{select: self.regs[select].encode(PERF_SEL=EVENTS[family][name][1])})
            for ctrl in ("SQ_PERFCOUNTER_CTRL", "SQG_PERFCOUNTER_CTRL"):
                self._set(p, **{ctrl: self.regs[ctrl].encode(CS_EN=1)})
            self._set(p, **{PERFMON_CNTL[family]: PERFMON_START})
        if self.sqtt:
            self._start_trace(p)
        return slot

    def _start_trace(self, p) -> None:
        regs = self.regs
        for se in range(self.ses):
            itrace = self.itrace_se_mask >> se & 1
            exclude = 0 if itrace else tt.NO_INSTRUCTIONS
            self._set(p, GRBM_GFX_INDEX=self._index(se), **self._buffer_regs(se))
            self._set(p, SQ_THREAD_TRACE_MASK=regs["SQ_THREAD_TRACE_MASK"].encode(
                WTYPE_INCLUDE=tt.SQ_TT_WTYPE_INCLUDE_CS_BIT, SIMD_SEL=0, WGP_SEL=0, SA_SEL=0))
            include = (tt.SQ_TT_TOKEN_MASK_SQDEC_BIT | tt.SQ_TT_TOKEN_MASK_SHDEC_BIT | tt.SQ_TT_TOKEN_MASK_GFXUDEC_BIT
                       | tt.SQ_TT_TOKEN_MASK_COMP_BIT | tt.SQ_TT_TOKEN_MASK_CONTEXT_BIT)
            self._set(p, SQ_THREAD_TRACE_TOKEN_MASK=regs["SQ_THREAD_TRACE_TOKEN_MASK"].encode(
                REG_INCLUDE=include, TOKEN_EXCLUDE=exclude, BOP_EVENTS_TOKEN_INCLUDE=1))
            self._set(p, SQ_THREAD_TRACE_CTRL=regs["SQ_THREAD_TRACE_CTRL"].encode(MODE=tt.SQ_TT_MODE_ON, HIWATER=5))
        spi = regs["SPI_CONFIG_CNTL"].encode(ENABLE_SQG_TOP_EVENTS=1, ENABLE_SQG_BOP_EVENTS=1)
        self._set(p, GRBM_GFX_INDEX=self._index(), SPI_CONFIG_CNTL=spi)
        p.set_sh_regs({self._addr("COMPUTE_THREAD_TRACE_ENABLE") - 0x2C00: 1})

    def end(self, p, slot: int, kernel) -> None:
        """Packets that stop the trace and sample the counters into the slot after the dispatch."""
        family, base = self.dev.arch[:5], self.slot_mem.va + slot * self.slot_bytes
        regs = self.regs
        if self.sqtt:
            p.event(vgt_event(self.dev.arch, "THREAD_TRACE_FINISH"))
            finish = regs["SQ_THREAD_TRACE_STATUS"].fields["FINISH_DONE"][1]
            busy = regs["SQ_THREAD_TRACE_STATUS"].fields["BUSY"][1]
            for se in range(self.ses):
                self._set(p, GRBM_GFX_INDEX=self._index(se))
                p.wait_register(self._addr("SQ_THREAD_TRACE_STATUS"), finish, finish)
                self._set(p, SQ_THREAD_TRACE_CTRL=0)
                p.wait_register(self._addr("SQ_THREAD_TRACE_STATUS"), busy, 0)
                p.copy_register(self._addr("SQ_THREAD_TRACE_WPTR"), base + 8 * se)
            self._set(p, GRBM_GFX_INDEX=self._index())
            p.set_sh_regs({self._addr("COMPUTE_THREAD_TRACE_ENABLE") - 0x2C00: 0})
        if self.counters:
            self._set(p, **{PERFMON_CNTL[family]: regs[PERFMON_CNTL[family]].encode(
                PERFMON_STATE=PERFMON_STOP, PERFMON_SAMPLE_ENABLE=1)})
            for i, (_, block, n, where) in enumerate(self.samples):
                self._set(p, GRBM_GFX_INDEX=self._index(*where) if where else self._index())
                wide = BLOCKS[block][2]
                p.copy_register(self._addr(f"{BLOCKS[block][1]}{n}_LO"), base + 8 * (self.ses + i), qword=wide)
            self._set(p, GRBM_GFX_INDEX=self._index())
        prog = kernel.program
        self.pending.append(_Pending(KernelCapture(kernel.meta.name, prog.co.data, prog.buf.va), slot))

    def collect(self) -> None:
        """Read what the finished kernels left (call after the GPU is done with them)."""
        for pending in self.pending:
            cap, base = pending.capture, pending.slot * self.slot_bytes
            words = self.slot_mem.view()[base : base + self.slot_bytes]
            if self.sqtt:
                for se in range(self.ses):
                    wptr = struct.unpack_from("<I", words, 8 * se)[0] & self.regs["SQ_THREAD_TRACE_WPTR"].fields[
                        "OFFSET"][1]
                    size = min(wptr * tt.WPTR_UNIT, self.buffer_bytes)
                    if wptr * tt.WPTR_UNIT >= self.buffer_bytes:
                        warnings.warn(f"SQTT buffer of shader engine {se} full ({self.buffer_bytes} bytes) in "
                                      f"kernel {cap.name}: the trace is cut short; raise SQTT_BUFFER_SIZE",
                                      stacklevel=2)
                    cap.traces.append((se, bytes(self.trace_buffers[se].view()[:size]),
                                       bool(self.itrace_se_mask >> se & 1)))
            for i, (name, block, _, where) in enumerate(self.samples):
                value = struct.unpack_from("<Q" if BLOCKS[block][2] else "<I", words, 8 * (self.ses + i))[0]
                cap.counters.setdefault(name, {})[",".join(map(str, where)) or "gpu"] = value
            self.captures.append(cap)
        self.pending.clear()

    # ---- the capture directory ----------------------------------------------------------------------------------
    def release(self) -> None:
        """Give the trace buffers and sample slots back (what was collected stays, for write)."""
        for mem in [*self.trace_buffers, self.slot_mem]:
            self.dev.release(mem)
        self.trace_buffers, self.slot_mem = [], None

    def write(self, directory: str | os.PathLike) -> Path:
        """The captures so far as a capture directory (see the module doc); its path."""
        self.dev.synchronize()
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        programs, traces, pmc = [], [], []
        for k, cap in enumerate(self.captures):
            (out / f"prog{k}.elf").write_bytes(cap.code_object)
            programs.append({"file": f"prog{k}.elf", "name": cap.name, "base": cap.base, "tag": k})
            for i, (se, blob, itrace) in enumerate(cap.traces):
                name = f"kern{k}_se{se}_{i}.bin"
                (out / name).write_bytes(blob)
                traces.append({"file": name, "kern": k, "se": se, "itrace": itrace, "exec_tag": k})
            if cap.counters:
                pmc.append({"kern": k, "name": cap.name, "counters": cap.counters})
        (out / "capture.json").write_text(json.dumps({"arch": self.dev.arch, "programs": programs,
                                                      "traces": traces}, indent=1))
        if pmc:
            (out / "pmc.json").write_text(json.dumps(pmc, indent=1))
        return out
