"""The SDMA copy queue: linear copies between any two GPU addresses, fences and traps for signals, GPU timestamps
and memory polls, written to an SDMA ring and submitted by its write pointer (in bytes) and doorbell. The packets
are the arch's SDMA's (SDMA 4.4.x of CDNA, 6/7 of RDNA: soc.SDMA), which encode these alike."""

from __future__ import annotations

from usergpu.isa.amd.hw.soc import SDMA, family
from usergpu.runtime.amd.ring import RingQueue

COPY_MAX = 1 << 22  # bytes one COPY_LINEAR moves (its COUNT field is bytes - 1; SDMA 4.4.x's 22 bits hold it)
POLL_GEQ = 5


class SDMAPackets(list):
    """SDMA packet dwords with builders."""

    def __init__(self, arch: str = "gfx1100"):
        super().__init__()
        self.sdma = SDMA[family(arch)]

    def _header(self, op: int, sub_op: int = 0) -> int:
        return self.sdma.SDMA_PKT_COPY_LINEAR_HEADER_OP(op) | self.sdma.SDMA_PKT_COPY_LINEAR_HEADER_SUB_OP(sub_op)

    def copy(self, dst: int, src: int, size: int) -> SDMAPackets:
        for off in range(0, size, COPY_MAX):
            n = min(COPY_MAX, size - off)
            self += [self._header(self.sdma.SDMA_OP_COPY), self.sdma.SDMA_PKT_COPY_LINEAR_COUNT_COUNT(n - 1), 0,
                     (src + off) & 0xFFFFFFFF, (src + off) >> 32, (dst + off) & 0xFFFFFFFF, (dst + off) >> 32]
        return self

    def fence(self, address: int, value: int) -> SDMAPackets:
        """Write a dword when the work before has finished."""
        self += [self._header(self.sdma.SDMA_OP_FENCE), address & 0xFFFFFFFF, address >> 32, value & 0xFFFFFFFF]
        return self

    def trap(self, context: int) -> SDMAPackets:
        """An interrupt whose context id names a KFD event."""
        self += [self._header(self.sdma.SDMA_OP_TRAP), self.sdma.SDMA_PKT_TRAP_INT_CONTEXT_INT_CONTEXT(context)]
        return self

    def timestamp(self, address: int) -> SDMAPackets:
        s = self.sdma
        self += [self._header(s.SDMA_OP_TIMESTAMP, s.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL), address & 0xFFFFFFFF,
                 address >> 32]
        return self

    def wait(self, sig, value: int) -> SDMAPackets:
        """Stall until the signal's value (its low dword) is >= value."""
        address, s = sig.va + sig.VALUE, self.sdma
        self += [self._header(s.SDMA_OP_POLL_REGMEM) | s.SDMA_PKT_POLL_REGMEM_HEADER_FUNC(POLL_GEQ)
                 | s.SDMA_PKT_POLL_REGMEM_HEADER_MEM_POLL(1), address & 0xFFFFFFFF, address >> 32,
                 value & 0xFFFFFFFF, 0xFFFFFFFF,
                 s.SDMA_PKT_POLL_REGMEM_DW5_INTERVAL(10) | s.SDMA_PKT_POLL_REGMEM_DW5_RETRY_COUNT(0xFFF)]
        return self

    def signal(self, sig, value: int, context: int) -> SDMAPackets:
        """The signal's timestamp, its value (low and high dwords), then the interrupt that wakes a waiter."""
        at = sig.va + sig.VALUE
        self.timestamp(sig.va + sig.TIMESTAMP).fence(at, value & 0xFFFFFFFF).fence(at + 4, value >> 32)
        return self.trap(context)


class CopyQueue(RingQueue):
    """A user-mode SDMA queue of a device; its pointers count bytes."""

    kind, unit = "sdma", 1
