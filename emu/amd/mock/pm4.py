"""A PM4 compute queue: the command processor (ME/MEC) executing type-3 packets of gfx10+ (nvd.h) and of gfx9
(soc15d.h: the same encodings of the packets a compute queue takes, but no WAIT_REG_MEM64) from a ring in GPU memory
and from the indirect buffers it calls. On a CDNA GPU every XCC's command processor runs the queue (gpu.py), and
PRED_EXEC (gfx9) makes the EXEC_COUNT dwords after it run only on the XCCs its VIRTUALXCCID_SELECT mask names (bit
n: the partition's XCC n); the MEC takes it only inside an indirect buffer (tinygrad's MI300 runtime wraps ring
packets in an IB for that), and the mock refuses one in the ring.

Ring: `size` bytes at `ring`; read and write pointers count dwords (see gpu.py for how they are read and written).
A WAIT_REG_MEM whose condition is false stalls the queue on that packet; inside an IB the CP remembers where in
each IB it stopped and resumes there (the ring's INDIRECT_BUFFER packet is consumed only when its IB completes).

Semantics from nvd.h's field comments and gfx_v11_0.c's emitters: WAIT_REG_MEM compares (value & mask) with the
reference; its OPERATION 1 (WR_WAIT_WR_REG) first writes the reference to a register, once (the HDP flush through
NBIO's GPU_HDP_FLUSH_REQ/DONE, hdp.py); RELEASE_MEM's DATA_SEL 0 none, 1 low 32 bits, 2 64 bits, 3 GPU clock,
4 system clock (the same clock here), INT_SEL 0 none, 1 interrupt, 2 interrupt after the write; COPY_DATA's selects
as Mesa's sid.h names them (0 register, 1/2 memory, 5 immediate, 9 timestamp; destination 0 register, 1/2/5 memory;
COUNT_SEL bit 16 for 64 bits); DISPATCH_DIRECT's initiator goes to COMPUTE_DISPATCH_INITIATOR (CS_W32_EN picks
wave32), and its workgroups start at (0, 0, 0). Cache operations (ACQUIRE_MEM, RELEASE_MEM's GCR bits) do nothing:
memory is coherent here; EVENT_WRITE passes its event to the GPU (thread-trace events).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import usergpu.autogen.pm4_nv as nv
import usergpu.autogen.pm4_soc15 as soc15
from usergpu.emu.amd.mock.gpu import COMPARE, GPU, RingQueue, XCCContext

NOP_ONE_DWORD = 0x3FFF  # a NOP whose count is 0x3fff is the header alone (gfx11's ring nop, 0xffff1000)
MAX_IB_DEPTH = 4
WR_ONE_ADDR = 1 << 16
WR_WAIT_WR_REG = 1  # WAIT_REG_MEM's OPERATION: write a register, then wait on another
FORCE_START_AT_000 = 1 << 2  # COMPUTE_DISPATCH_INITIATOR: workgroups from (0, 0, 0), not from COMPUTE_START_X/Y/Z
REG_ADDRESS = 0x3FFFF  # WAIT_REG_MEM's REG_POLL_ADDR / REG_WRITE_ADDR1 / REG_WRITE_ADDR2: 18-bit dword addresses
COUNT_SEL = 1 << 16
EXEC_COUNT, XCC_SELECT_SHIFT = 0x3FFF, 24  # PRED_EXEC's dword 1 (amd_gpu_pm4.h: EXEC_COUNT, VIRTUALXCCID_SELECT)
NAMES = {}
for _name, _value in [*vars(nv).items(), *vars(soc15).items()]:
    if _name.startswith("PACKET3_") and isinstance(_value, int) and 0x10 <= _value <= 0xFF:
        NAMES.setdefault(_value, _name.removeprefix("PACKET3_"))

LABELS = {op: f"{NAMES.get(op, 'unknown')} ({op:#x})" for op in range(256)}  # how errors name a packet


class Prefetch:
    """A stream's dwords read ahead to its end in one access, as the CP's fetcher does, and handed out as Python
    ints: a packet costs no memory access of its own. load(position, count) reads count dwords from a position."""

    def __init__(self, load: Callable[[int, int], bytes], end: int, most: int):
        self.load, self.end, self.most = load, end, most  # most: dwords one read may take (a ring's size)
        self.start, self.words = 0, []

    def __call__(self, pos: int, n: int) -> list[int]:
        i = pos - self.start
        if i < 0 or i + n > len(self.words):
            self.start, i = pos, 0
            self.words = np.frombuffer(self.load(pos, max(n, min(self.end - pos, self.most))), "<u4").tolist()
        return self.words[i : i + n]

    def word(self, pos: int) -> int:
        """The dword at pos (a packet's header)."""
        i = pos - self.start
        return self.words[i] if 0 <= i < len(self.words) else self(pos, 1)[0]


def _qword(lo: int, hi: int) -> int:
    return int(lo) | int(hi) << 32


class CommandProcessor:
    """Executes PM4 packets for a queue (PM4, or an AQL queue's PM4-IB packets), resumably: where a stall left each
    IB is the executing XCC's (its XCCContext)."""

    def __init__(self, queue: RingQueue):
        self.queue, self.gpu = queue, queue.gpu
        self.handlers = HANDLERS[queue.gpu.arch[:5]]
        self.skip = 0  # dwords a PRED_EXEC whose mask leaves this XCC out has the packets after it skip

    def packet(self, read: Prefetch, pos: int, end: int, where: str, offset: int, depth: int) -> int | None:
        """Execute the packet at dword pos of a stream (ring or IB) ending at dword end; the position after it,
        or None when it stalls. offset is its byte offset in that stream, for errors."""
        header = read.word(pos)
        kind = header >> 30
        if kind != nv.PACKET_TYPE3:
            self.queue.at(f"type-{kind}" + (f" ({header:#010x})" if kind != nv.PACKET_TYPE2 else ""), where, offset)
            if kind != nv.PACKET_TYPE2:
                raise self.queue.fail(f"type-{kind} packets are not supported on a compute queue")
            self.gpu.packet_done()
            return pos + 1
        op, count = (header >> 8) & 0xFF, (header >> 16) & 0x3FFF
        self.queue.at(LABELS[op], where, offset)
        if op == nv.PACKET3_NOP and count == NOP_ONE_DWORD:
            self.gpu.packet_done()
            return pos + 1
        nxt = pos + count + 2
        if nxt > end:
            raise self.queue.fail(f"truncated: its header says {count + 2} dwords, only {end - pos} are there")
        got = self.handlers.get(op)
        if got is None:
            raise self.queue.fail("unknown or unsupported opcode")
        if count + 1 < got[0]:
            raise self.queue.fail(f"malformed: {count + 1} body dwords, it needs {got[0]}")
        done = got[1](self, read(pos + 1, count + 1), depth)
        skip, self.skip = self.skip, 0  # a PRED_EXEC's (the packets of an IB it called have taken theirs)
        if not done:
            return None
        self.gpu.packet_done()
        if nxt + skip > end:
            raise self.queue.fail(f"PRED_EXEC's EXEC_COUNT {skip} runs past the end of the {where}")
        return nxt + skip

    # ---- values in registers and memory --------------------------------------------------------------
    def _read_reg(self, address: int, size: int) -> int:
        return sum(self.gpu.read_reg(address + i) << 32 * i for i in range(size // 4))

    def _write_reg(self, address: int, size: int, value: int) -> None:
        for i in range(size // 4):
            self.gpu.write_reg(address + i, value >> 32 * i)

    # ---- handlers: (self, body dwords, IB depth) -> done (False: stall) --------------------------------
    def _nop(self, body: list[int], depth: int) -> bool:
        return True

    def _event_write(self, body: list[int], depth: int) -> bool:
        self.gpu.event(int(body[0]) & 0x3F)  # EVENT_TYPE: the thread-trace events matter here, cache ones do not
        return True

    def _pred_exec(self, body: list[int], depth: int) -> bool:
        if not depth:
            raise self.queue.fail("PRED_EXEC in the ring: the MEC executes it inside an indirect buffer only")
        if not int(body[0]) >> XCC_SELECT_SHIFT >> self.queue.ctx.xcc & 1:
            self.skip = int(body[0]) & EXEC_COUNT
        return True

    def _dispatch_direct(self, body: list[int], depth: int) -> bool:
        if self.queue.ctx.running is None:
            self.gpu.regs["COMPUTE_DISPATCH_INITIATOR"] = int(body[3])
            start = [self.gpu.regs.get(f"COMPUTE_START_{axis}", 0) for axis in "XYZ"]
            if not int(body[3]) & FORCE_START_AT_000 and any(start):
                raise self.queue.fail(f"a dispatch from COMPUTE_START_X/Y/Z {tuple(start)} (FORCE_START_AT_000 "
                                      "clear) is not supported: the mock's dispatches start at workgroup (0, 0, 0)")
        return self.queue.run_dispatch(self.gpu.regs, (int(body[0]), int(body[1]), int(body[2])))

    def _release_mem(self, body: list[int], depth: int) -> bool:
        data_sel, int_sel = int(body[1]) >> 29 & 7, int(body[1]) >> 24 & 7
        if data_sel not in RELEASE_DATA or int_sel > 2:
            raise self.queue.fail(f"DATA_SEL {data_sel} / INT_SEL {int_sel} is not supported")
        size, value = RELEASE_DATA[data_sel](self, _qword(body[4], body[5]))
        if size:
            self.gpu.store(_qword(body[2], body[3]), size, value)
        if int_sel:
            self.queue.end_of_pipe_interrupt(int(body[6]))
        return True

    def _wait(self, control: int, address: int, size: int, reference: int, mask: int) -> bool:
        function, mem_space, operation = control & 7, control >> 4 & 3, control >> 6 & 3
        if function not in COMPARE or mem_space > 1 or operation:
            raise self.queue.fail(f"FUNCTION {function} MEM_SPACE {mem_space} OPERATION {operation} not supported")
        value = self.gpu.load(address & ~3, size) if mem_space else self._read_reg(address, size)
        return COMPARE[function](value & mask, reference)

    def _write_wait(self, control: int, write: int, poll: int, reference: int, mask: int) -> bool:
        """WR_WAIT_WR_REG: REFERENCE written to the register at dword 2, then a wait on the one at dword 3 comparing
        (value & MASK) with (REFERENCE & MASK). The packet stands for amdgpu's write-then-wait fallback
        (amdgpu_ring_emit_reg_write_reg_wait_helper: reg0 = ref, then wait for reg1 & mask == mask), which
        gmc_v11_0's TLB flush relies on with a ref of more bits than its mask."""
        function, mem_space = control & 7, control >> 4 & 3
        if function not in COMPARE or mem_space:
            raise self.queue.fail(f"FUNCTION {function} MEM_SPACE {mem_space} not supported (WR_WAIT_WR_REG writes "
                                  "and polls registers)")
        return self.queue.write_then_wait(write, reference, lambda: COMPARE[function](
            self.gpu.read_reg(poll) & mask, reference & mask))

    def _wait_reg_mem(self, body: list[int], depth: int) -> bool:
        control = int(body[0])
        if control >> 6 & 3 == WR_WAIT_WR_REG:
            return self._write_wait(control, int(body[1]) & REG_ADDRESS, int(body[2]) & REG_ADDRESS, int(body[3]),
                                    int(body[4]))
        return self._wait(control, _qword(body[1], body[2]), 4, int(body[3]), int(body[4]))

    def _wait_reg_mem64(self, body: list[int], depth: int) -> bool:
        return self._wait(int(body[0]), _qword(body[1], body[2]), 8, _qword(body[3], body[4]),
                          _qword(body[5], body[6]))

    def _indirect_buffer(self, body: list[int], depth: int) -> bool:
        if depth >= MAX_IB_DEPTH:
            raise self.queue.fail(f"IBs nested deeper than {MAX_IB_DEPTH}")
        address, size = _qword(int(body[0]) & ~3, int(body[1]) & 0xFFFF), int(body[2]) & 0xFFFFF
        mem = self.gpu.mem
        read = Prefetch(lambda pos, n: mem.read_bytes(address + 4 * pos, 4 * n), size, size)
        resume = self.queue.ctx.resume
        pos = resume.pop(depth, 0)
        while pos < size:
            nxt = self.packet(read, pos, size, f"IB {address:#x}", 4 * pos, depth + 1)
            if nxt is None:
                resume[depth] = pos
                return False
            pos = nxt
        return True

    def _copy_data(self, body: list[int], depth: int) -> bool:
        control = int(body[0])
        src_sel, dst_sel, size = control & 0xF, control >> 8 & 0xF, 8 if control & COUNT_SEL else 4
        if src_sel not in COPY_SRC or dst_sel not in WRITE_DST:
            raise self.queue.fail(f"SRC_SEL {src_sel} / DST_SEL {dst_sel} is not supported")
        value = COPY_SRC[src_sel](self, _qword(body[1], body[2]), size)
        WRITE_DST[dst_sel](self, _qword(body[3], body[4]), size, value)
        return True

    def _write_data(self, body: list[int], depth: int) -> bool:
        control = int(body[0])
        dst_sel, address = control >> 8 & 0xF, _qword(body[1], body[2])
        if dst_sel not in WRITE_DST:
            raise self.queue.fail(f"DST_SEL {dst_sel} is not supported")
        step = 0 if control & WR_ONE_ADDR else 1
        stride = 1 if dst_sel == 0 else 4  # registers count dwords, memory bytes
        for i, value in enumerate(body[3:]):
            WRITE_DST[dst_sel](self, address + i * step * stride, 4, int(value))
        return True


def _set_regs(start: int) -> Callable[[CommandProcessor, list[int], int], bool]:
    """SET_SH_REG / SET_UCONFIG_REG: body[0] is the first register's offset from the range's start."""

    def handler(cp: CommandProcessor, body: list[int], depth: int) -> bool:
        cp.gpu.write_regs(start + (body[0] & 0xFFFF), body[1:])
        return True

    return handler


RELEASE_DATA: dict[int, Callable[[CommandProcessor, int], tuple[int, int]]] = {
    0: lambda cp, data: (0, 0), 1: lambda cp, data: (4, data), 2: lambda cp, data: (8, data),
    3: lambda cp, data: (8, cp.gpu.timestamp()), 4: lambda cp, data: (8, cp.gpu.timestamp())}
COPY_SRC: dict[int, Callable[[CommandProcessor, int, int], int]] = {
    0: lambda cp, address, size: cp._read_reg(address, size),
    1: lambda cp, address, size: cp.gpu.load(address, size), 2: lambda cp, address, size: cp.gpu.load(address, size),
    5: lambda cp, data, size: data & ((1 << 8 * size) - 1), 9: lambda cp, address, size: cp.gpu.timestamp()}
WRITE_DST: dict[int, Callable[[CommandProcessor, int, int, int], None]] = {
    0: lambda cp, address, size, value: cp._write_reg(address, size, value),
    **dict.fromkeys((1, 2, 5), lambda cp, address, size, value: cp.gpu.store(address, size, value))}

# family -> opcode -> (body dwords it needs at least, handler); the opcodes are the same numbers in nvd.h and soc15d.h
COMMON: dict[int, tuple[int, Callable[[CommandProcessor, list[int], int], bool]]] = {
    nv.PACKET3_NOP: (0, CommandProcessor._nop),
    nv.PACKET3_SET_SH_REG: (1, _set_regs(nv.PACKET3_SET_SH_REG_START)),
    nv.PACKET3_SET_UCONFIG_REG: (1, _set_regs(nv.PACKET3_SET_UCONFIG_REG_START)),
    nv.PACKET3_DISPATCH_DIRECT: (4, CommandProcessor._dispatch_direct),
    nv.PACKET3_ACQUIRE_MEM: (0, CommandProcessor._nop),
    nv.PACKET3_EVENT_WRITE: (1, CommandProcessor._event_write),
    nv.PACKET3_RELEASE_MEM: (7, CommandProcessor._release_mem),
    nv.PACKET3_WAIT_REG_MEM: (6, CommandProcessor._wait_reg_mem),
    nv.PACKET3_INDIRECT_BUFFER: (3, CommandProcessor._indirect_buffer),
    nv.PACKET3_COPY_DATA: (5, CommandProcessor._copy_data),
    nv.PACKET3_WRITE_DATA: (3, CommandProcessor._write_data),
}
RDNA = {**COMMON, nv.PACKET3_WAIT_REG_MEM64: (8, CommandProcessor._wait_reg_mem64)}
CDNA = {**COMMON, soc15.PACKET3_PRED_EXEC: (1, CommandProcessor._pred_exec)}
HANDLERS = {"gfx94": CDNA, "gfx95": CDNA, "gfx11": RDNA, "gfx12": RDNA}


class PM4Queue(RingQueue):
    """A PM4 compute queue: ring of `size` bytes at `ring`, read/write pointers (dwords) at the addresses given, run
    by every XCC with the MQD amdkfd gives a PM4 queue (logical XCC id 0, no workgroup chunks: init_mqd_v9_4_3)."""

    kind = "pm4"

    def __init__(self, gpu: GPU, ring: int, size: int, rptr_address: int, wptr_address: int, name: str | None = None):
        super().__init__(gpu, ring, size, rptr_address, wptr_address, name,
                         [XCCContext(xcc, gpu.xccs) for xcc in range(gpu.xccs)])
        self.cp = CommandProcessor(self)
        self._fetched = Prefetch(self._load, 0, 0)

    def _load(self, pos: int, n: int) -> bytes:
        return self.read_ring(pos, 4 * n)

    def _packet(self, rptr: int, wptr: int) -> int | None:
        if self._fetched.end != wptr:  # packets written since the last fetch (the write pointer only grows)
            self._fetched = Prefetch(self._load, wptr, self.size // 4)
        return self.cp.packet(self._fetched, rptr, wptr, "ring", rptr * 4 % self.size, 0)
