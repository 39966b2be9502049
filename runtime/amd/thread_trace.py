"""The thread-trace (SQTT) registers the profiler programs around a dispatch, per trace format: what starts the trace
on every shader engine (its buffer, the unit traced instruction by instruction, the tokens kept), what stops it and
leaves each engine's write pointer in memory, and the header software puts before a gfx9 buffer.

gfx11/gfx12 (as Mesa's RADV and tinygrad program them): SQ_THREAD_TRACE_BUF0_*, MASK, TOKEN_MASK, CTRL.MODE on per
SE, COMPUTE_THREAD_TRACE_ENABLE; stop with EVENT_WRITE THREAD_TRACE_FINISH, then per SE wait for FINISH_DONE, CTRL
off, wait for not BUSY, copy WPTR.

gfx9 (GC 9.4.3, as aqlprofile and tinygrad program MI300): per SE SQ_THREAD_TRACE_BASE/BASE2/SIZE, CTRL.RESET_BUFFER,
MASK (CU 0 of SH 0, every SIMD), TOKEN_MASK (a bit per token type; instruction tokens on the engines of
SQTT_ITRACE_SE_MASK), TOKEN_MASK2, MODE on (compute waves); stop with MODE off, then per SE wait for not BUSY and
copy WPTR. Each XCC has its own shader engines: their registers are written inside PRED_EXEC packets for that XCC.
"""

from __future__ import annotations

from usergpu.isa.amd.hw import sqtt_regs as tt
from usergpu.isa.amd.hw.soc import vgt_event
from usergpu.isa.amd.sqtt import encode
from usergpu.isa.amd.sqtt.tables import GFX9_VERSION


class Trace:
    """The registers of one trace format; prof is the Profiler (its device, registers, buffers, topology)."""

    wptr = "OFFSET"  # SQ_THREAD_TRACE_WPTR's field of 32-byte units written

    def __init__(self, prof):
        self.prof, self.regs = prof, prof.regs

    def header(self, se: int) -> bytes:
        return b""

    def on_xcc(self, p, xcc: int, build) -> None:
        """build(p)'s packets, run only by XCC xcc's command processor (by every one on a single-XCC GPU): the
        profiler's packets are in an IB there (AQL's PM4 IBs; a PM4 queue's IB for its first XCC), where the MEC
        takes PRED_EXEC."""
        if self.prof.xccs == 1:
            build(p)
            return
        inner = self.prof.dev.packets()
        build(inner)
        p.pred_exec(1 << xcc, inner)


class RdnaTrace(Trace):
    def start(self, p) -> None:
        prof, regs = self.prof, self.regs
        for se in range(prof.ses):
            itrace = prof.itrace_se_mask >> se & 1
            exclude = 0 if itrace else tt.NO_INSTRUCTIONS
            prof.set(p, GRBM_GFX_INDEX=prof.index(se), **self._buffer(se))
            prof.set(p, SQ_THREAD_TRACE_MASK=regs["SQ_THREAD_TRACE_MASK"].encode(
                WTYPE_INCLUDE=tt.SQ_TT_WTYPE_INCLUDE_CS_BIT, SIMD_SEL=0, WGP_SEL=0, SA_SEL=0))
            include = (tt.SQ_TT_TOKEN_MASK_SQDEC_BIT | tt.SQ_TT_TOKEN_MASK_SHDEC_BIT | tt.SQ_TT_TOKEN_MASK_GFXUDEC_BIT
                       | tt.SQ_TT_TOKEN_MASK_COMP_BIT | tt.SQ_TT_TOKEN_MASK_CONTEXT_BIT)
            prof.set(p, SQ_THREAD_TRACE_TOKEN_MASK=regs["SQ_THREAD_TRACE_TOKEN_MASK"].encode(
                REG_INCLUDE=include, TOKEN_EXCLUDE=exclude, BOP_EVENTS_TOKEN_INCLUDE=1))
            prof.set(p, SQ_THREAD_TRACE_CTRL=regs["SQ_THREAD_TRACE_CTRL"].encode(MODE=tt.SQ_TT_MODE_ON, HIWATER=5))
        spi = regs["SPI_CONFIG_CNTL"].encode(ENABLE_SQG_TOP_EVENTS=1, ENABLE_SQG_BOP_EVENTS=1)
        prof.set(p, GRBM_GFX_INDEX=prof.index(), SPI_CONFIG_CNTL=spi)
        p.set_sh_regs({prof.addr("COMPUTE_THREAD_TRACE_ENABLE") - p.pm4.PACKET3_SET_SH_REG_START: 1})

    def _buffer(self, se: int) -> dict[str, int]:
        prof = self.prof
        va, size = prof.trace_buffers[se].va, prof.buffer_bytes >> 12
        if "SQ_THREAD_TRACE_BUF0_BASE" in self.regs:  # gfx11: the high address bits share the size register
            return {"SQ_THREAD_TRACE_BUF0_SIZE": self.regs["SQ_THREAD_TRACE_BUF0_SIZE"].encode(
                SIZE=size, BASE_HI=va >> 44), "SQ_THREAD_TRACE_BUF0_BASE": (va >> 12) & 0xFFFFFFFF}
        return {"SQ_THREAD_TRACE_BUF0_SIZE": size, "SQ_THREAD_TRACE_BUF0_BASE_LO": (va >> 12) & 0xFFFFFFFF,
                "SQ_THREAD_TRACE_BUF0_BASE_HI": va >> 44}

    def stop(self, p, base: int) -> None:
        prof, status = self.prof, self.regs["SQ_THREAD_TRACE_STATUS"].fields
        p.event(vgt_event(prof.dev.arch, "THREAD_TRACE_FINISH"))
        finish, busy = status["FINISH_DONE"][1], status["BUSY"][1]
        for se in range(prof.ses):
            prof.set(p, GRBM_GFX_INDEX=prof.index(se))
            p.wait_register(prof.addr("SQ_THREAD_TRACE_STATUS"), finish, finish)
            prof.set(p, SQ_THREAD_TRACE_CTRL=0)
            p.wait_register(prof.addr("SQ_THREAD_TRACE_STATUS"), busy, 0)
            p.copy_register(prof.addr("SQ_THREAD_TRACE_WPTR"), base + 8 * se)
        prof.set(p, GRBM_GFX_INDEX=prof.index())
        p.set_sh_regs({prof.addr("COMPUTE_THREAD_TRACE_ENABLE") - p.pm4.PACKET3_SET_SH_REG_START: 0})


class Gfx9Trace(Trace):
    wptr = "WPTR"

    def _mode(self, on: bool) -> int:
        mode = tt.SQ_THREAD_TRACE_MODE_ON if on else tt.SQ_THREAD_TRACE_MODE_OFF
        return self.regs["SQ_THREAD_TRACE_MODE"].encode(MASK_CS=1, AUTOFLUSH_EN=1, MODE=mode)

    def start(self, p) -> None:
        prof, regs = self.prof, self.regs
        prof.set(p, GRBM_GFX_INDEX=prof.index(), SQ_THREAD_TRACE_MASK=regs["SQ_THREAD_TRACE_MASK"].encode(
            CU_SEL=0, SH_SEL=0, SIMD_EN=0xF, SQ_STALL_EN=1, SPI_STALL_EN=1, REG_STALL_EN=1))

        def program(q, xcc: int) -> None:
            for local in range(prof.ses):
                se = xcc * prof.ses + local  # the engine's number across the XCCs
                itrace = prof.itrace_se_mask >> se & 1
                va = prof.trace_buffers[se].va >> 12
                prof.set(q, GRBM_GFX_INDEX=prof.index(local, 0))
                prof.set(q, SQ_THREAD_TRACE_TOKEN_MASK=regs["SQ_THREAD_TRACE_TOKEN_MASK"].encode(
                    TOKEN_MASK=tt.GFX9_WAVE_TOKENS | (tt.GFX9_INSTRUCTION_TOKENS if itrace else 0), REG_MASK=0xF),
                    SQ_THREAD_TRACE_TOKEN_MASK2=0xFFFFFFFF)
                prof.set(q, SQ_THREAD_TRACE_BASE=va & 0xFFFFFFFF, SQ_THREAD_TRACE_BASE2=va >> 32,
                         SQ_THREAD_TRACE_SIZE=prof.buffer_bytes >> 12,
                         SQ_THREAD_TRACE_CTRL=regs["SQ_THREAD_TRACE_CTRL"].encode(RESET_BUFFER=1))
                prof.set(q, SQ_THREAD_TRACE_MODE=self._mode(True))
            prof.set(q, GRBM_GFX_INDEX=prof.index())
        for xcc in range(prof.xccs):
            self.on_xcc(p, xcc, lambda q, xcc=xcc: program(q, xcc))

    def stop(self, p, base: int) -> None:
        prof = self.prof
        prof.set(p, GRBM_GFX_INDEX=prof.index(), SQ_THREAD_TRACE_MODE=self._mode(False))
        busy = self.regs["SQ_THREAD_TRACE_STATUS"].fields["BUSY"][1]

        def wait(q, xcc: int) -> None:
            for local in range(prof.ses):
                prof.set(q, GRBM_GFX_INDEX=prof.index(local, 0))
                q.wait_register(prof.addr("SQ_THREAD_TRACE_STATUS"), busy, 0)
                q.copy_register(prof.addr("SQ_THREAD_TRACE_WPTR"), base + 8 * (xcc * prof.ses + local))
            prof.set(q, GRBM_GFX_INDEX=prof.index())
        for xcc in range(prof.xccs):
            self.on_xcc(p, xcc, lambda q, xcc=xcc: wait(q, xcc))

    def header(self, se: int) -> bytes:
        """What aqlprofile puts before an engine's buffer: the unit traced (CU 0, every SIMD), the engine."""
        fields = {"version": GFX9_VERSION[self.prof.family], "simd_mask": 0xF, "cu": 0, "sa": 0, "se": se}
        return encode([("LAYOUT_HEADER", fields)], self.prof.dev.arch)
