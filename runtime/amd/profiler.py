"""Kernel profiling on the runtime: the SQ thread trace (SQTT) of every shader engine and the performance counters
(PMC) of every instance, programmed around each PM4 dispatch, and the capture they make — a directory laid out as
shared/data/sqtt's real captures are (capture.json, the code objects, one blob per shader engine), with the
counters in pmc.json, so `usergpu prof show` opens real and mock captures alike. thread_trace.py programs the trace
of each format; on a GPU of several XCCs (MI300X, MI350X) every XCC's shader engines trace and count apart: the
blobs are numbered across them (XCC x's engine e is x * engines per XCC + e, as aqlprofile and tinygrad number them),
counters are named "xcc,..." by instance, and what one XCC's registers need runs under PRED_EXEC.

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

from usergpu.errors import Error
from usergpu.isa.amd.hw import sqtt_regs as tt
from usergpu.isa.amd.hw.pmc import BLOCKS, EVENTS, PERFMON_CNTL, PERFMON_DISABLE_AND_RESET, PERFMON_START, PERFMON_STOP
from usergpu.isa.amd.hw.soc import GC_REGS, family
from usergpu.isa.amd.sqtt import layout_of
from usergpu.isa.amd.sqtt.tables import GFX9
from usergpu.runtime.amd.thread_trace import Gfx9Trace, RdnaTrace

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
        self.dev, self.family = dev, family(dev.arch)
        self.regs = GC_REGS[self.family]
        props = dev.driver.properties
        sas = props["simd_arrays_per_engine"]
        self.xccs = max(props.get("num_xcc", 1), 1)
        self.ses, self.sas = props["array_count"] // sas // self.xccs, sas  # shader engines per XCC
        gfx9 = layout_of(dev.arch) is GFX9
        self.units = props["cu_per_simd_array"] // (1 if gfx9 else 2)  # gfx9: CUs; RDNA: WGPs of two CUs
        self.blocks, events = BLOCKS[self.family], EVENTS[self.family]
        unknown = [c for c in counters if c not in events]
        if unknown:
            raise ProfileError(f"PMC_COUNTERS: {', '.join(unknown)} not counted on {dev.arch}; it counts "
                               f"{', '.join(events)}")
        self.counters: list[tuple[str, str, int]] = []  # (event, block, counter number)
        for name in counters:
            block = events[name][0]
            n = sum(1 for _, b, _ in self.counters if b == block)
            if n == self.blocks[block][0]:
                raise ProfileError(f"PMC_COUNTERS: {block} has {n} counters; {name} is one too many")
            self.counters.append((name, block, n))
        self.sqtt, self.itrace_se_mask, self.slots = sqtt, itrace_se_mask, slots
        if buffer_bytes < 4096 or buffer_bytes % 4096:
            raise ProfileError(f"SQTT_BUFFER_SIZE: {buffer_bytes} bytes; a trace buffer is whole 4 KiB pages")
        self.buffer_bytes = buffer_bytes
        self.trace = (Gfx9Trace if gfx9 else RdnaTrace)(self)
        engines = self.ses * self.xccs
        self.trace_buffers = [dev.memory(self.buffer_bytes, "gtt") for _ in range(engines)] if sqtt else []
        self.samples = [(name, block, n, where) for name, block, n in self.counters
                        for where in self._instances(self.blocks[block][3])]
        self.slot_bytes = 8 * (engines + len(self.samples))  # the trace write pointers, then a qword per sample
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
    def addr(self, name: str) -> int:
        return self.dev.register_address(name)

    def set(self, p, **regs: int) -> None:
        p.set_uconfig_regs({self.addr(name): value for name, value in regs.items()})

    def index(self, se: int | None = None, sa: int | None = None, unit: int | None = None) -> int:
        """GRBM_GFX_INDEX selecting an instance of the XCC's (None: broadcast at that level; gfx9 names the shader
        array SH)."""
        reg = self.regs["GRBM_GFX_INDEX"]
        array = "SA" if "SA_INDEX" in reg.fields else "SH"
        return reg.encode(**{"SE_INDEX": se or 0, f"{array}_INDEX": sa or 0, "INSTANCE_INDEX": unit or 0,
                             "SE_BROADCAST_WRITES": int(se is None), f"{array}_BROADCAST_WRITES": int(sa is None),
                             "INSTANCE_BROADCAST_WRITES": int(unit is None)})

    def _instances(self, scope: str) -> list[tuple[int, ...]]:
        """A block's instances: (xcc,), (xcc, se) or (xcc, se, sa, wgp)."""
        xccs, ses = range(self.xccs), range(self.ses)
        if scope == "xcc":
            return [(x,) for x in xccs]
        if scope == "se":
            return [(x, se) for x in xccs for se in ses]
        return [(x, se, sa, u) for x in xccs for se in ses for sa in range(self.sas) for u in range(self.units)]

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
        if self.counters:
            self._start_counters(p)
        if self.sqtt:
            self.trace.start(p)
        return slot

    def _start_counters(self, p) -> None:
        regs, control = self.regs, PERFMON_CNTL[self.family]
        self.set(p, **{control: PERFMON_DISABLE_AND_RESET, "GRBM_GFX_INDEX": self.index()})
        for name, block, n in self.counters:
            select = f"{self.blocks[block][1]}{n}_SELECT"
            masks = {f: regs[select].fields[f][1] >> regs[select].fields[f][0]  # gfx9 SQ: every SIMD, bank, client
                     for f in ("SIMD_MASK", "SQC_BANK_MASK", "SQC_CLIENT_MASK") if f in regs[select].fields}
            self.set(p, **{select: regs[select].encode(PERF_SEL=EVENTS[self.family][name][1], **masks)})
        if "SQ_PERFCOUNTER_MASK" in regs:  # gfx9: the CUs of both shader arrays
            self.set(p, SQ_PERFCOUNTER_MASK=regs["SQ_PERFCOUNTER_MASK"].encode(SH0_MASK=0xFFFF, SH1_MASK=0xFFFF))
        for ctrl in ("SQ_PERFCOUNTER_CTRL", "SQG_PERFCOUNTER_CTRL"):
            if ctrl in regs:
                self.set(p, **{ctrl: regs[ctrl].encode(CS_EN=1)})
        p.set_sh_regs({self.addr("COMPUTE_PERFCOUNT_ENABLE") - p.pm4.PACKET3_SET_SH_REG_START: 1})
        self.set(p, **{control: PERFMON_START})

    def end(self, p, slot: int, kernel) -> None:
        """Packets that stop the trace and sample the counters into the slot after the dispatch."""
        base = self.slot_mem.va + slot * self.slot_bytes
        if self.sqtt:
            self.trace.stop(p, base)
        if self.counters:
            control = PERFMON_CNTL[self.family]
            self.set(p, **{control: self.regs[control].encode(PERFMON_STATE=PERFMON_STOP, PERFMON_SAMPLE_ENABLE=1)})
            engines = self.ses * self.xccs
            for xcc in range(self.xccs):
                def sample(q, xcc=xcc):
                    for i, (_, block, n, where) in enumerate(self.samples):
                        if where[0] == xcc:
                            self.set(q, GRBM_GFX_INDEX=self.index(*where[1:]))
                            q.copy_register(self.addr(f"{self.blocks[block][1]}{n}_LO"), base + 8 * (engines + i),
                                            qword=self.blocks[block][2])
                    self.set(q, GRBM_GFX_INDEX=self.index())
                self.trace.on_xcc(p, xcc, sample)
        prog = kernel.program
        self.pending.append(_Pending(KernelCapture(kernel.meta.name, prog.co.data, prog.buf.va), slot))

    def collect(self) -> None:
        """Read what the finished kernels left (call after the GPU is done with them)."""
        engines = self.ses * self.xccs
        wptr = self.regs["SQ_THREAD_TRACE_WPTR"].fields[self.trace.wptr][1]
        for pending in self.pending:
            cap, base = pending.capture, pending.slot * self.slot_bytes
            words = self.slot_mem.view()[base : base + self.slot_bytes]
            if self.sqtt:
                for se in range(engines):
                    written = (struct.unpack_from("<I", words, 8 * se)[0] & wptr) * tt.WPTR_UNIT
                    if written >= self.buffer_bytes:
                        warnings.warn(f"SQTT buffer of shader engine {se} full ({self.buffer_bytes} bytes) in "
                                      f"kernel {cap.name}: the trace is cut short; raise SQTT_BUFFER_SIZE",
                                      stacklevel=2)
                    blob = bytes(self.trace_buffers[se].view()[:min(written, self.buffer_bytes)])
                    cap.traces.append((se, self.trace.header(se) + blob, bool(self.itrace_se_mask >> se & 1)))
            for i, (name, block, _, where) in enumerate(self.samples):
                value = struct.unpack_from("<Q" if self.blocks[block][2] else "<I", words, 8 * (engines + i))[0]
                cap.counters.setdefault(name, {})[",".join(map(str, where[1:] if self.xccs == 1 else where))
                                                  or "gpu"] = value
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
