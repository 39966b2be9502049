"""The mock GPU's SQ thread trace (SQTT), per shader engine, in the real token format of the arch (emu/amd/sqtt
encodes it). The registers a driver programs (autogen/_sqtt.py for their values):

- SQ_THREAD_TRACE_BUF0_* (per SE, GRBM_GFX_INDEX selects): the trace buffer's address and size.
- SQ_THREAD_TRACE_CTRL.MODE on: the SE starts a trace (a LAYOUT_HEADER); off: it stops.
- SQ_THREAD_TRACE_MASK: the WGP (SA_SEL, WGP_SEL) and SIMD (SIMD_SEL) whose waves are traced instruction by
  instruction, on SEs whose TOKEN_MASK keeps instruction tokens (TOKEN_EXCLUDE without INST).
- EVENT_WRITE THREAD_TRACE_FINISH: every tracing SE writes its tokens to its buffer, sets SQ_THREAD_TRACE_WPTR
  (32-byte units from the base; a trace that does not fit stops at the buffer's end with STATUS2.BUF0_FULL) and
  STATUS.FINISH_DONE.

A dispatch leaves, on every tracing SE, REG tokens of its entry address (COMPUTE_PGM_LO/HI). A traced wave leaves
WAVESTART, then for each instruction the token the hardware uses for its class (an INST with the op of its class,
VALUINST, IMMEDIATE for waits; none for the s_delay_alu/s_wait_alu hints), timed by profiler.py's model, and
WAVEEND for its s_endpgm. Other waves leave nothing.
"""

from __future__ import annotations

from usergpu.autogen import _sqtt as tt
from usergpu.emu.amd.soc import vgt_event
from usergpu.emu.amd.sqtt import encode
from usergpu.emu.amd.sqtt.waves import TOKENLESS

# instruction class (profiler.py) -> (token kind, INST op) of the traced wave's token for it
TOKENS = {"SALU": ("INST", 0), "SMEM": ("INST", 1), "BRANCH": ("INST", 3), "MESSAGE": ("INST", 9),
          "BARRIER": ("INST", 19), "VMEM_RD": ("INST", 47), "VMEM_WR": ("INST", 49), "LDS": ("INST", 41),
          "VALU": ("VALUINST", None), "WAIT": ("IMMEDIATE", None), "ENDPGM": ("WAVEEND", None)}
NOT_TAKEN = 4  # the INST op of a branch that fell through
LAYOUT = {"gfx11": 3, "gfx12": 4}
PGM_LO, PGM_HI = 0xC, 0xD  # a compute REG token's addr: COMPUTE_PGM_LO/HI's dword address less 0x2E00


class ThreadTrace:
    def __init__(self, gpu):
        self.gpu = gpu
        self.family = gpu.arch[:5]
        self.events: dict[int, list[tuple[str, dict, int]]] = {}  # SE -> (kind, fields, time) so far
        self.clock = 0  # shader cycles since the trace started, across dispatches
        self.finish = vgt_event(gpu.arch, "THREAD_TRACE_FINISH")

    def _reg(self, name: str, se: int) -> dict[str, int]:
        return self.gpu.table[name].decode(self.gpu.instance(name, (se, 0, 0)))

    @property
    def on(self) -> bool:
        return bool(self.events)

    def written(self, name: str, value: int) -> None:
        if name != self.gpu.canonical("SQ_THREAD_TRACE_CTRL"):
            return
        for se, _, _ in self.gpu.selected():
            mode = self._reg("SQ_THREAD_TRACE_CTRL", se)["MODE"]
            if mode == tt.SQ_TT_MODE_ON and se not in self.events:
                self.events[se] = []
                self._status(se, finish=False)

    def traced(self, se: int, sa: int, wgp: int, simd: int) -> bool:
        """Whether a wave there is traced instruction by instruction."""
        if se not in self.events or self._reg("SQ_THREAD_TRACE_TOKEN_MASK", se)["TOKEN_EXCLUDE"] >> tt.INST & 1:
            return False
        mask = self._reg("SQ_THREAD_TRACE_MASK", se)
        return (mask["SA_SEL"], mask["WGP_SEL"], mask["SIMD_SEL"]) == (sa, wgp, simd)

    def record(self, profile, program: int) -> None:
        """A dispatch, as tokens of the tracing SEs: its entry address (the COMPUTE_PGM_LO/HI writes, as REG
        tokens), then each traced wave."""
        start = self.clock
        for out in self.events.values():
            for offset, value in ((PGM_LO, program >> 8 & 0xFFFFFFFF), (PGM_HI, program >> 40)):
                out.append(("REG", {"cs": 1, "addr": offset, "data": value}, start))
        for wave in profile.traced.values():
            out = self.events[wave.se]
            ids = {"sa": wave.sa, "simd": wave.simd, "wgp": wave.wgp, "wave": wave.slot}
            out.append(("WAVESTART", ids, start))
            for inst in wave.executed:
                if inst.text.split(None, 1)[0] in TOKENLESS:
                    continue
                kind, op = TOKENS[inst.cls]
                if op is not None:
                    fields = {"wave": wave.slot, "op": NOT_TAKEN if inst.cls == "BRANCH" and not inst.taken else op}
                else:
                    fields = ids if kind == "WAVEEND" else {"wave": wave.slot}
                out.append((kind, fields, start + inst.time))
        self.clock = start + int(profile.clock.max(initial=0))

    def event(self, event_type: int) -> None:
        if event_type != self.finish:
            return
        for se, events in self.events.items():
            mask = self._reg("SQ_THREAD_TRACE_MASK", se)
            header = ("LAYOUT_HEADER", {"layout": LAYOUT[self.family], "sa": mask["SA_SEL"], "wgp": mask["WGP_SEL"],
                                        "simd": mask["SIMD_SEL"]})
            self._write(se, encode([header, *sorted(events, key=lambda e: e[2])], self.gpu.arch))
        self.events.clear()

    def _write(self, se: int, blob: bytes) -> None:
        gpu, family = self.gpu, self.family
        size = self._reg("SQ_THREAD_TRACE_BUF0_SIZE", se)["SIZE"] << 12
        if family == "gfx11":
            base = (self._reg("SQ_THREAD_TRACE_BUF0_SIZE", se)["BASE_HI"] << 32
                    | self._reg("SQ_THREAD_TRACE_BUF0_BASE", se)["BASE_LO"]) << 12
        else:
            base = (self._reg("SQ_THREAD_TRACE_BUF0_BASE_HI", se)["BASE_HI"] << 32
                    | self._reg("SQ_THREAD_TRACE_BUF0_BASE_LO", se)["BASE_LO"]) << 12
        blob = blob + bytes(-len(blob) % tt.WPTR_UNIT)
        gpu.mem.write_bytes(base, blob[:size])
        gpu.set_instances("SQ_THREAD_TRACE_WPTR", gpu.engine(se), min(len(blob), size) // tt.WPTR_UNIT)
        gpu.set_instances("SQ_THREAD_TRACE_STATUS2", gpu.engine(se), int(len(blob) > size))
        self._status(se, finish=True)

    def _status(self, se: int, finish: bool) -> None:
        fields = self.gpu.table["SQ_THREAD_TRACE_STATUS"].fields
        value = fields["FINISH_DONE"][1] if finish else fields["BUSY"][1]
        self.gpu.set_instances("SQ_THREAD_TRACE_STATUS", self.gpu.engine(se), value)
