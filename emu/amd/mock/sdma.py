"""An SDMA queue (SDMA 6.x of gfx11, 7.x of gfx12: the packets of sdma_v6_0_0_pkt_open.h; SDMA 4.4.2/4.4.5 of CDNA:
vega10_sdma_pkt_open.h, whose packets a queue takes have the same layout with narrower counts, COPY_LINEAR's and
CONSTANT_FILL's 22 bits (sdma_v4_4_2.c's copy_max_bytes and fill_max_bytes 0x400000), and no GCR_REQ).

Ring: `size` bytes at `ring`; the read and write pointers count bytes, as sdma_v6_0.c and sdma_v4_4_2.c write them
(wptr << 2), and
packets may run across the ring's end. COPY_LINEAR and CONSTANT_FILL take count = bytes - 1 (sdma_v6_0.c's
emit_copy_buffer / emit_fill_buffer), WRITE_LINEAR count = dwords - 1 (its vm_write_pte, ring_test_ib);
CONSTANT_FILL repeats the low 1 << FILLSIZE bytes of its data (FILLSIZE 2 is the dword fill). ATOMIC's operation is
a TC op (soc21_enum.h TC_OP_ATOMIC_*): integer ops of 32 and 64 bits, with and without return (the no-return op is
the returning one + 0x40); with LOOP set a failing CMPSWAP stalls the queue until it succeeds. POLL_REGMEM polls
memory (MEM_POLL=1) or a register (its byte address in ADDR); with HDP_FLUSH it first writes VALUE to the register
ADDR_HI names, once, then polls the one ADDR_LO names (sdma_v6_0_ring_emit_hdp_flush: NBIO's GPU_HDP_FLUSH_REQ and
_DONE, hdp.py). INDIRECT runs IB_SIZE dwords of packets at IB_BASE (its low 5 bits ignored, as IB_BASE_LO's ADDR
field is bits 31:5); a queue has one IB level (one set of SDMA*_QUEUE*_IB_* registers), so IBs do not nest, and a
stall inside one resumes there (IB_RPTR). GCR_REQ's cache operations do nothing: memory is coherent here.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any, NamedTuple

from usergpu.emu.amd.mock.gpu import COMPARE, GPU, SDMA_TRAP, RingQueue
from usergpu.isa.amd.hw.soc import SDMA

IB_ALIGN = 0x1F  # the low bits of IB_BASE the engine ignores
WRITE_DATA = SDMA["gfx11"].SDMA_PKT_WRITE_UNTILED.data0.offset  # where WRITE_LINEAR's dwords begin (either header's)


def _addr(pkt: Any, field: str = "addr") -> int:
    return getattr(pkt, f"{field}_31_0") | getattr(pkt, f"{field}_63_32") << 32


def _copy_linear(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    src, dst = _addr(pkt, "src_addr"), _addr(pkt, "dst_addr")
    with q.gpu.busy("memory"), q.gpu.moving(pkt.count + 1, src, dst):
        q.gpu.copy(dst, src, pkt.count + 1)
    return True


def _constant_fill(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    if pkt.fillsize > 2:
        raise q.fail(f"FILLSIZE {pkt.fillsize} is not supported")
    n, unit = pkt.count + 1, (pkt.src_data_31_0).to_bytes(4, "little")[: 1 << pkt.fillsize]
    with q.gpu.moving(n, _addr(pkt, "dst_addr")):
        q.gpu.mem.write_bytes(_addr(pkt, "dst_addr"), (unit * (n // len(unit) + 1))[:n])
    return True


def _fence(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    q.gpu.store(_addr(pkt), 4, pkt.data)
    return True


def _trap(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    q.gpu.interrupt(SDMA_TRAP, pkt.int_context)
    return True


def _poll_regmem(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    if pkt.func not in COMPARE or pkt.hdp_flush and pkt.mem_poll:
        raise q.fail(f"FUNC {pkt.func} MEM_POLL {pkt.mem_poll} HDP_FLUSH {pkt.hdp_flush} is not supported")
    if pkt.hdp_flush:
        return q.write_then_wait(pkt.addr_63_32 >> 2, pkt.value, lambda: COMPARE[pkt.func](
            q.gpu.read_reg(pkt.addr_31_0 >> 2) & pkt.mask, pkt.value))
    value = q.gpu.load(_addr(pkt) & ~3, 4) if pkt.mem_poll else q.gpu.read_reg(_addr(pkt) >> 2)
    return COMPARE[pkt.func](value & pkt.mask, pkt.value)


def _write_linear(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    with q.gpu.moving(len(data) - WRITE_DATA, _addr(pkt, "dst_addr")):
        q.gpu.mem.write_bytes(_addr(pkt, "dst_addr"), data[WRITE_DATA:])
    return True


def _indirect(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    if q.in_ib:
        raise q.fail("an INDIRECT inside an IB: an SDMA queue has one IB level, IBs do not nest")
    base, size, mem = _addr(pkt, "ib_base") & ~IB_ALIGN, 4 * pkt.ib_size, q.gpu.mem
    q.in_ib = True
    try:
        while q.ib_rptr < size:
            nxt = q.execute(lambda pos, n: mem.read_bytes(base + pos, n), q.ib_rptr, size, f"IB {base:#x}", q.ib_rptr)
            if nxt is None:
                return False
            q.ib_rptr = nxt
    finally:
        q.in_ib = False
    q.ib_rptr = 0
    return True


def _timestamp(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    q.gpu.store(pkt.write_addr_31_3 << 3 | pkt.write_addr_63_32 << 32, 8, q.gpu.timestamp())
    return True


def _unsigned(bits: int) -> Callable[[int], int]:
    return lambda v: v & ((1 << bits) - 1)


def _signed(bits: int) -> Callable[[int], int]:
    return lambda v: (v & ((1 << bits) - 1)) - ((v >> (bits - 1) & 1) << bits)


# TC_OP_ATOMIC_*_RTN_32 opcode -> new memory value from (old, src, cmp, bits)
ATOMIC_OPS: dict[int, Callable[[int, int, int, int], int]] = {
    0x07: lambda old, src, cmp, bits: src,  # SWAP
    0x08: lambda old, src, cmp, bits: src if old == cmp else old,  # CMPSWAP
    0x0F: lambda old, src, cmp, bits: old + src,  # ADD
    0x10: lambda old, src, cmp, bits: old - src,  # SUB
    0x11: lambda old, src, cmp, bits: min(old, src, key=_signed(bits)),  # SMIN
    0x12: lambda old, src, cmp, bits: min(old, src),  # UMIN
    0x13: lambda old, src, cmp, bits: max(old, src, key=_signed(bits)),  # SMAX
    0x14: lambda old, src, cmp, bits: max(old, src),  # UMAX
    0x15: lambda old, src, cmp, bits: old & src,  # AND
    0x16: lambda old, src, cmp, bits: old | src,  # OR
    0x17: lambda old, src, cmp, bits: old ^ src,  # XOR
    0x18: lambda old, src, cmp, bits: 0 if old >= src else old + 1,  # INC
    0x19: lambda old, src, cmp, bits: src if old == 0 or old > src else old - 1,  # DEC
}
CMPSWAP = 0x08


def _atomic(q: SDMAQueue, pkt: Any, data: bytes) -> bool:
    op, bits = pkt.atomic_op & ~0x60, 64 if pkt.atomic_op & 0x20 else 32
    if op not in ATOMIC_OPS:
        raise q.fail(f"atomic operation {pkt.atomic_op:#x} is not supported")
    size, address = bits // 8, _addr(pkt)
    mask = _unsigned(bits)
    old, src, cmp = q.gpu.load(address, size), mask(_addr(pkt, "src_data")), mask(_addr(pkt, "cmp_data"))
    if pkt.loop and op == CMPSWAP and old != cmp:
        return False
    q.gpu.store(address, size, mask(ATOMIC_OPS[op](old, src, cmp, bits)))
    return True


class Packet(NamedTuple):
    name: str
    struct: type[ctypes.Structure]
    run: Callable[[SDMAQueue, Any, bytes], bool]  # (queue, the packet's structure, its bytes) -> done (False: stall)
    length: Callable[[Any], int] | None = None  # its bytes, where its fields say (else the structure's size)


def packets(s) -> dict[tuple[int, int], Packet]:
    """(op, sub_op) -> the packet, of a header's packets (its module: sdma_v4 or sdma_v6)."""
    table = {
        (s.SDMA_OP_NOP, 0): Packet("NOP", s.SDMA_PKT_NOP, lambda q, pkt, data: True, lambda pkt: 4 + 4 * pkt.count),
        (s.SDMA_OP_COPY, s.SDMA_SUBOP_COPY_LINEAR): Packet("COPY_LINEAR", s.SDMA_PKT_COPY_LINEAR, _copy_linear),
        (s.SDMA_OP_WRITE, s.SDMA_SUBOP_WRITE_LINEAR): Packet("WRITE_LINEAR", s.SDMA_PKT_WRITE_UNTILED, _write_linear,
                                                             lambda pkt: WRITE_DATA + 4 * (pkt.count + 1)),
        (s.SDMA_OP_INDIRECT, 0): Packet("INDIRECT", s.SDMA_PKT_INDIRECT, _indirect),
        (s.SDMA_OP_CONST_FILL, 0): Packet("CONSTANT_FILL", s.SDMA_PKT_CONSTANT_FILL, _constant_fill),
        (s.SDMA_OP_FENCE, 0): Packet("FENCE", s.SDMA_PKT_FENCE, _fence),
        (s.SDMA_OP_TRAP, 0): Packet("TRAP", s.SDMA_PKT_TRAP, _trap),
        (s.SDMA_OP_POLL_REGMEM, 0): Packet("POLL_REGMEM", s.SDMA_PKT_POLL_REGMEM, _poll_regmem),
        (s.SDMA_OP_TIMESTAMP, s.SDMA_SUBOP_TIMESTAMP_GET): Packet("TIMESTAMP_GET", s.SDMA_PKT_TIMESTAMP_GET,
                                                                  _timestamp),
        (s.SDMA_OP_TIMESTAMP, s.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL): Packet(
            "TIMESTAMP_GET_GLOBAL", s.SDMA_PKT_TIMESTAMP_GET_GLOBAL, _timestamp),
        (s.SDMA_OP_ATOMIC, 0): Packet("ATOMIC", s.SDMA_PKT_ATOMIC, _atomic),
    }
    if hasattr(s, "SDMA_PKT_GCR_REQ"):
        table[(s.SDMA_OP_GCR_REQ, 0)] = Packet("GCR_REQ", s.SDMA_PKT_GCR_REQ, lambda q, pkt, data: True)
    return table


PACKETS = {family: packets(module) for family, module in SDMA.items()}  # family -> (op, sub_op) -> the packet
OP_NAMES = {family: {v: k.removeprefix("SDMA_OP_") for k, v in reversed(vars(module).items())
                     if k.startswith("SDMA_OP_")} for family, module in SDMA.items()}


class SDMAQueue(RingQueue):
    """An SDMA queue: ring of `size` bytes at `ring`, read/write pointers (bytes) at the addresses given."""

    unit, kind = 1, "sdma"

    def __init__(self, gpu: GPU, ring: int, size: int, rptr_address: int, wptr_address: int, name: str | None = None):
        super().__init__(gpu, ring, size, rptr_address, wptr_address, name)
        self.packets, self.op_names = PACKETS[gpu.arch[:5]], OP_NAMES[gpu.arch[:5]]
        self.in_ib = False  # executing an IB's packets
        self.ib_rptr = 0  # the byte offset in the IB of its next packet (a stalled one waits there)

    def _packet(self, rptr: int, wptr: int) -> int | None:
        return self.execute(self.read_ring, rptr, wptr, "ring", rptr % self.size)

    def execute(self, read: Callable[[int, int], bytes], pos: int, end: int, where: str, offset: int) -> int | None:
        """Execute the packet at byte pos of a stream (ring or IB) that read(pos, n) reads and that ends at byte end;
        the position after it, or None when it stalls. offset is its byte offset in that stream, for errors."""
        header = int.from_bytes(read(pos, 4), "little")
        op, sub_op = header & 0xFF, header >> 8 & 0xFF
        packet = self.packets.get((op, sub_op))
        name = packet.name if packet else self.op_names.get(op, "unknown")
        self.at(f"{name} (op {op:#x} sub_op {sub_op:#x})", where, offset)
        if packet is None:
            raise self.fail("unknown or unsupported packet")
        size = ctypes.sizeof(packet.struct)
        head = read(pos, min(size, end - pos))
        pkt = packet.struct.from_buffer_copy(head.ljust(size, b"\0"))
        length = packet.length(pkt) if packet.length else size
        if pos + length > end:
            raise self.fail(f"truncated: it is {length} bytes, only {end - pos} are there")
        if not packet.run(self, pkt, head[:length] if length <= len(head) else read(pos, length)):
            return None
        self.gpu.packet_done()
        return pos + length
