"""An SDMA queue (SDMA 6.x of gfx11, 7.x of gfx12: the packets of sdma_v6_0_0_pkt_open.h).

Ring: `size` bytes at `ring`; the read and write pointers count bytes, as sdma_v6_0.c writes them (wptr << 2), and
packets may run across the ring's end. COPY_LINEAR and CONSTANT_FILL take count = bytes - 1 (sdma_v6_0.c's
emit_copy_buffer / emit_fill_buffer); CONSTANT_FILL repeats the low 1 << FILLSIZE bytes of its data (FILLSIZE 2 is
the dword fill). ATOMIC's operation is a TC op (soc21_enum.h TC_OP_ATOMIC_*): integer ops of 32 and 64 bits, with
and without return (the no-return op is the returning one + 0x40); with LOOP set a failing CMPSWAP stalls the
queue until it succeeds. POLL_REGMEM polls memory (MEM_POLL=1) or a register (its byte address in ADDR).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import usergpu.autogen.sdma_v6 as s6
from usergpu.emu.amd.mock.gpu import COMPARE, SDMA_TRAP, RingQueue


def _addr(pkt: Any, field: str = "addr") -> int:
    return getattr(pkt, f"{field}_31_0") | getattr(pkt, f"{field}_63_32") << 32


def _copy_linear(q: SDMAQueue, pkt: Any) -> bool:
    mem = q.gpu.mem
    with q.gpu.busy("memory"):
        mem.write_bytes(_addr(pkt, "dst_addr"), mem.read_bytes(_addr(pkt, "src_addr"), pkt.count + 1))
    return True


def _constant_fill(q: SDMAQueue, pkt: Any) -> bool:
    if pkt.fillsize > 2:
        raise q.fail(f"FILLSIZE {pkt.fillsize} is not supported")
    n, unit = pkt.count + 1, (pkt.src_data_31_0).to_bytes(4, "little")[: 1 << pkt.fillsize]
    q.gpu.mem.write_bytes(_addr(pkt, "dst_addr"), (unit * (n // len(unit) + 1))[:n])
    return True


def _fence(q: SDMAQueue, pkt: Any) -> bool:
    q.gpu.store(_addr(pkt), 4, pkt.data)
    return True


def _trap(q: SDMAQueue, pkt: Any) -> bool:
    q.gpu.interrupt(SDMA_TRAP, pkt.int_context)
    return True


def _poll_regmem(q: SDMAQueue, pkt: Any) -> bool:
    if pkt.func not in COMPARE:
        raise q.fail(f"FUNC {pkt.func} is not supported")
    value = q.gpu.load(_addr(pkt) & ~3, 4) if pkt.mem_poll else q.gpu.read_reg(_addr(pkt) >> 2)
    return COMPARE[pkt.func](value & pkt.mask, pkt.value)


def _timestamp(q: SDMAQueue, pkt: Any) -> bool:
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


def _atomic(q: SDMAQueue, pkt: Any) -> bool:
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


# (op, sub_op) -> (name, packet structure, handler); NOP's length is 1 + its COUNT
PACKETS: dict[tuple[int, int], tuple[str, type[ctypes.Structure], Callable[[SDMAQueue, Any], bool]]] = {
    (s6.SDMA_OP_NOP, 0): ("NOP", s6.SDMA_PKT_NOP, lambda q, pkt: True),
    (s6.SDMA_OP_COPY, s6.SDMA_SUBOP_COPY_LINEAR): ("COPY_LINEAR", s6.SDMA_PKT_COPY_LINEAR, _copy_linear),
    (s6.SDMA_OP_CONST_FILL, 0): ("CONSTANT_FILL", s6.SDMA_PKT_CONSTANT_FILL, _constant_fill),
    (s6.SDMA_OP_FENCE, 0): ("FENCE", s6.SDMA_PKT_FENCE, _fence),
    (s6.SDMA_OP_TRAP, 0): ("TRAP", s6.SDMA_PKT_TRAP, _trap),
    (s6.SDMA_OP_POLL_REGMEM, 0): ("POLL_REGMEM", s6.SDMA_PKT_POLL_REGMEM, _poll_regmem),
    (s6.SDMA_OP_TIMESTAMP, s6.SDMA_SUBOP_TIMESTAMP_GET): ("TIMESTAMP_GET", s6.SDMA_PKT_TIMESTAMP_GET, _timestamp),
    (s6.SDMA_OP_TIMESTAMP, s6.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL): ("TIMESTAMP_GET_GLOBAL",
                                                                 s6.SDMA_PKT_TIMESTAMP_GET_GLOBAL, _timestamp),
    (s6.SDMA_OP_ATOMIC, 0): ("ATOMIC", s6.SDMA_PKT_ATOMIC, _atomic),
}
OP_NAMES = {v: k.removeprefix("SDMA_OP_") for k, v in reversed(vars(s6).items()) if k.startswith("SDMA_OP_")}


class SDMAQueue(RingQueue):
    """An SDMA queue: ring of `size` bytes at `ring`, read/write pointers (bytes) at the addresses given."""

    unit, kind = 1, "sdma"

    def _packet(self, rptr: int, wptr: int) -> int | None:
        header = int.from_bytes(self.read_ring(rptr, 4), "little")
        op, sub_op = header & 0xFF, header >> 8 & 0xFF
        name, struct, handler = PACKETS.get((op, sub_op), (None, None, None))
        self.at(f"{name or OP_NAMES.get(op, 'unknown')} (op {op:#x} sub_op {sub_op:#x})", "ring", rptr % self.size)
        if struct is None:
            raise self.fail("unknown or unsupported packet")
        length = 4 + 4 * (header >> 16 & 0x3FFF) if op == s6.SDMA_OP_NOP else ctypes.sizeof(struct)
        if rptr + length > wptr:
            raise self.fail(f"truncated: it is {length} bytes, only {wptr - rptr} are there")
        pkt = struct.from_buffer_copy(self.read_ring(rptr, length).ljust(ctypes.sizeof(struct), b"\0"))
        if not handler(self, pkt):
            return None
        self.gpu.packet_done()
        return rptr + length
