"""The mock GPU's gfx9 SQ registers on an MI300X of two XCCs (emu/amd/mock/thread_trace.py, perfmon.py): a thread
trace and counters programmed register by register as aqlprofile programs them (GC 9.4.3's SQ_THREAD_TRACE_* per
shader engine, SQ_PERFCOUNTERn per engine), each XCC's apart from the other's; the buffer an engine writes decodes,
behind the header software puts first, to what the waves executed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mockrig import load

import usergpu
from usergpu.emu.amd.exec.dispatch import launch
from usergpu.emu.amd.mock import GPU
from usergpu.isa import amd as isa
from usergpu.isa.amd.codeobj import parse
from usergpu.isa.amd.codeobj.kernargs import dispatch_packet, pack_kernargs
from usergpu.isa.amd.dispatch import kernel_registers, user_sgpr_values
from usergpu.isa.amd.hw import sqtt_regs as tt
from usergpu.isa.amd.hw.pmc import EVENTS
from usergpu.isa.amd.sqtt import decode, encode, wave_instructions

KERNELS = Path(__file__).parents[3] / "kernels"
ARCH = "gfx942"
WAVES_ONLY = tt.GFX9_WAVE_TOKENS
EVERYTHING = tt.GFX9_WAVE_TOKENS | tt.GFX9_INSTRUCTION_TOKENS


@pytest.fixture(scope="module")
def co():
    return parse(usergpu.compile_opencl((KERNELS / "prof.cl").read_text(), ARCH, ["-I", str(KERNELS)]))


class Board:
    """A two-XCC gfx942 with the loop kernel loaded: registers written per XCC, its dispatches, trace buffers."""

    def __init__(self, co, n: int = 7, groups: int = 6):
        self.gpu, self.co, self.groups = GPU(ARCH, xccs=2), co, groups
        mem = self.gpu.mem
        base = load(self.gpu, co)
        k = co.kernels["loop"]
        grid, block = (groups, 1, 1), (64, 1, 1)
        args, _ = pack_kernargs(k, [np.zeros(64 * groups, np.float32), np.uint32(n)], grid, block,
                                lambda v: mem.map(v) if isinstance(v, np.ndarray) and v.ndim else None)
        kernarg = mem.map(np.frombuffer(args, np.uint8).copy())
        packet = mem.map(np.frombuffer(dispatch_packet(k, grid, block, kernarg, 0), np.uint8).copy())
        kd = mem.read_bytes(base + k.descriptor_addr, 64)
        user = user_sgpr_values(kd, ARCH, {"kernarg_segment_ptr": kernarg, "dispatch_ptr": packet})
        self.regs = kernel_registers(kd, base + k.descriptor_addr, ARCH, (64, 1, 1), user)
        self.base, self.n = base, n
        self.buffers = [self.gpu.mem.map(1 << 20, align=4096) for _ in range(4)]

    def write(self, xcc: int, **regs: int) -> None:
        with self.gpu.on_xcc(xcc):
            for name, value in regs.items():
                self.gpu.write_reg(self.gpu.reg_address(name), value)

    def read(self, xcc: int, name: str, se: int | None = None) -> int:
        with self.gpu.on_xcc(xcc):
            if se is not None:
                self.write(xcc, GRBM_GFX_INDEX=self.index(se))
            return self.gpu.read_reg(self.gpu.reg_address(name))

    def index(self, se: int | None = None) -> int:
        return self.gpu.table["GRBM_GFX_INDEX"].encode(SE_INDEX=se or 0, SE_BROADCAST_WRITES=int(se is None),
                                                       SH_BROADCAST_WRITES=0, INSTANCE_BROADCAST_WRITES=1)

    def field(self, name: str, **fields: int) -> int:
        return self.gpu.table[name].encode(**fields)

    def start_trace(self, xcc: int, tokens: list[int], pages: int = 256) -> None:
        self.write(xcc, GRBM_GFX_INDEX=self.field("GRBM_GFX_INDEX", SE_BROADCAST_WRITES=1, SH_BROADCAST_WRITES=1,
                                                   INSTANCE_BROADCAST_WRITES=1),
                   SQ_THREAD_TRACE_MASK=self.field("SQ_THREAD_TRACE_MASK", CU_SEL=0, SH_SEL=0, SIMD_EN=0xF))
        for se, buffer in enumerate(self.buffers):
            self.write(xcc, GRBM_GFX_INDEX=self.index(se),
                       SQ_THREAD_TRACE_TOKEN_MASK=self.field("SQ_THREAD_TRACE_TOKEN_MASK", TOKEN_MASK=tokens[se]),
                       SQ_THREAD_TRACE_TOKEN_MASK2=0xFFFFFFFF, SQ_THREAD_TRACE_BASE=buffer >> 12 & 0xFFFFFFFF,
                       SQ_THREAD_TRACE_BASE2=buffer >> 44, SQ_THREAD_TRACE_SIZE=pages,
                       SQ_THREAD_TRACE_CTRL=self.field("SQ_THREAD_TRACE_CTRL", RESET_BUFFER=1),
                       SQ_THREAD_TRACE_MODE=self.field("SQ_THREAD_TRACE_MODE", MASK_CS=1, AUTOFLUSH_EN=1,
                                                       MODE=tt.SQ_THREAD_TRACE_MODE_ON))

    def stop_trace(self, xcc: int) -> None:
        self.write(xcc, GRBM_GFX_INDEX=self.field("GRBM_GFX_INDEX", SE_BROADCAST_WRITES=1, SH_BROADCAST_WRITES=1,
                                                   INSTANCE_BROADCAST_WRITES=1),
                   SQ_THREAD_TRACE_MODE=self.field("SQ_THREAD_TRACE_MODE", MASK_CS=1, AUTOFLUSH_EN=1, MODE=0))

    def dispatch(self, xcc: int) -> None:
        with self.gpu.on_xcc(xcc):
            for _ in self.gpu.dispatch(self.regs, (self.groups, 1, 1)):
                pass

    def blob(self, xcc: int, se: int) -> bytes:
        """The engine's buffer as far as WPTR says, behind the header aqlprofile puts first."""
        written = self.read(xcc, "SQ_THREAD_TRACE_WPTR", se) * tt.WPTR_UNIT
        header = encode([("LAYOUT_HEADER", {"version": 5, "simd_mask": 0xF, "cu": 0, "se": se})], ARCH)
        return header + self.gpu.mem.read_bytes(self.buffers[se], written)


def executed(co, groups: int, n: int) -> dict[int, list[int]]:
    """The ELF addresses each wave of the loop kernel runs, from the bare emulator."""
    pcs: dict[int, list[int]] = {}

    def observe(ex, local, first, pc, step):
        for w in (first + local).tolist():
            pcs.setdefault(w, []).append(pc - ex.code_base)
    launch(co, "loop", (groups, 1, 1), (64, 1, 1), [np.zeros(64 * groups, np.float32), np.uint32(n)], observer=observe)
    return pcs


def test_an_xccs_trace_decodes_to_what_its_waves_ran(co):
    board = Board(co)
    board.start_trace(1, [EVERYTHING, WAVES_ONLY, WAVES_ONLY, WAVES_ONLY])
    for se in range(4):
        assert board.read(1, "SQ_THREAD_TRACE_STATUS", se) == board.field("SQ_THREAD_TRACE_STATUS", BUSY=1)
    board.dispatch(1)
    board.stop_trace(1)
    reference = executed(co, board.groups, board.n)
    for se in range(4):
        status = board.read(1, "SQ_THREAD_TRACE_STATUS", se)
        wptr, cntr = board.read(1, "SQ_THREAD_TRACE_WPTR", se), board.read(1, "SQ_THREAD_TRACE_CNTR", se)
        assert status == 0 and wptr == cntr > 0
        packets = decode(board.blob(1, se), ARCH)
        kinds = {p.kind for p in packets}
        starts = [p for p in packets if p.kind == "CDNA_WAVESTART"]
        assert len(starts) == sum(1 for g in range(board.groups) if g % 4 == se)  # workgroup g on SE g % 4
        assert ({"CDNA_ISSUE", "CDNA_INST"} <= kinds) == (se == 0)
    # shader engine 0 traced CU 0, where workgroup 0 (a wave) ran; workgroup 4 ran on its CU 1
    insts = wave_instructions(board.blob(1, 0), co.data, ARCH, board.base)
    assert [i.pc for i in insts] == reference[0]
    with board.gpu.on_xcc(0):  # the other XCC traced nothing
        assert board.read(0, "SQ_THREAD_TRACE_STATUS", 0) == 0 and not board.gpu.thread_trace.on


def test_token_mask_and_buffer_size(co):
    board = Board(co, n=400, groups=1)
    no_starts = EVERYTHING & ~(1 << tt.GFX9_WAVE_START)
    board.start_trace(0, [no_starts, WAVES_ONLY, WAVES_ONLY, WAVES_ONLY], pages=1)
    board.dispatch(0)
    board.stop_trace(0)
    status = board.field("SQ_THREAD_TRACE_STATUS", FULL=1)
    assert board.read(0, "SQ_THREAD_TRACE_STATUS", 0) == status  # 400 loop iterations fill a page
    assert board.read(0, "SQ_THREAD_TRACE_WPTR", 0) == 4096 // tt.WPTR_UNIT
    packets = decode(board.blob(0, 0), ARCH)
    assert "CDNA_WAVESTART" not in {p.kind for p in packets}
    assert {p.kind for p in packets} >= {"CDNA_ISSUE", "CDNA_INST", "CDNA_REG_CS_PRIV"}


def test_counters_per_engine_and_xcc(co):
    board = Board(co)
    events = EVENTS["gfx94"]
    selects = {"SQ_PERFCOUNTER0_SELECT": "SQ_WAVES", "SQ_PERFCOUNTER1_SELECT": "SQ_INSTS_VALU",
               "GRBM_PERFCOUNTER0_SELECT": "GRBM_GUI_ACTIVE"}
    for xcc in (0, 1):
        board.write(xcc, CP_PERFMON_CNTL=0, GRBM_GFX_INDEX=board.field(
            "GRBM_GFX_INDEX", SE_BROADCAST_WRITES=1, SH_BROADCAST_WRITES=1, INSTANCE_BROADCAST_WRITES=1),
            **{reg: board.field(reg, PERF_SEL=events[name][1]) for reg, name in selects.items()})
    board.write(0, CP_PERFMON_CNTL=1)  # XCC 0 counts, twice the dispatch; XCC 1 never started
    board.dispatch(0)
    board.dispatch(0)
    board.dispatch(1)
    board.write(0, CP_PERFMON_CNTL=board.field("CP_PERFMON_CNTL", PERFMON_STATE=2, PERFMON_SAMPLE_ENABLE=1))
    text = bytes(co.text.data)
    valu = {w: sum(isa.decode(text, ARCH, pc - co.text.addr).mnemonic.startswith("v_") for pc in pcs)
            for w, pcs in executed(co, board.groups, 7).items()}
    for se in range(4):
        waves = [g for g in range(board.groups) if g % 4 == se]
        assert board.read(0, "SQ_PERFCOUNTER0_LO", se) == 2 * len(waves)
        assert board.read(0, "SQ_PERFCOUNTER1_LO", se) == 2 * sum(valu[g] for g in waves)
        assert board.read(0, "SQ_PERFCOUNTER1_HI", se) == 0
        assert board.read(1, "SQ_PERFCOUNTER0_LO", se) == 0
    assert board.read(0, "GRBM_PERFCOUNTER0_LO") > 0 and board.read(1, "GRBM_PERFCOUNTER0_LO") == 0
