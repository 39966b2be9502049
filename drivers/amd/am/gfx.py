"""GFX: the compute engine (MEC) and its hardware queue descriptors, as gfx_v11_0.c (gfx_v9_4_3.c) fills a compute
MQD — here written straight into the HQD registers of a (pipe, queue) slot of ME 1, selected with GRBM_GFX_CNTL:
ring base, size, read-pointer report and write-pointer poll addresses, EOP buffer, doorbell, AQL mode, then
CP_HQD_ACTIVE. The MEC runs only once its firmware is loaded (PSP) and CP_MEC_RS64_CNTL (gfx9: CP_MEC_CNTL)
releases its halt. On MI300X the queues are XCC 0's (the first instance of GC)."""

from __future__ import annotations

from usergpu.drivers.amd.am.ip import Registers
from usergpu.errors import Error
from usergpu.isa.amd.hw import ipmaps as _ipmaps

MEC_RING0 = 0x003  # AMDGPU_NAVI10_DOORBELL_MEC_RING0: the first compute queue's (64-bit) doorbell
# family -> ME 1's (pipes, queues per pipe): GC 12.0 has one MEC of 2 pipes of 4 queues (gfx_v12_0_sw_init), the
# others 4 of 8
MEC_SLOTS = {"gfx12": (2, 4)}
PIPES, QUEUES = 4, 8
EOP_BYTES = 4096  # GFX11_MEC_HPD_SIZE is 2 KiB; a page keeps the buffer alone in it


class QueueSlots(Error):
    """Every hardware queue slot of an engine is in use."""


class GFX:
    def __init__(self, regs: Registers, family: str):
        self.regs, self.cntl = regs, _ipmaps.MEC_CNTL[family]
        self.pipes, self.queues = MEC_SLOTS.get(family, (PIPES, QUEUES))
        self.slots: dict[int, tuple[int, int]] = {}  # doorbell (64-bit index) -> (pipe, queue)

    def init(self) -> None:
        """Release the MEC's halt, route its doorbell range to it (bytes of the doorbell BAR), let its pipes send
        EOP interrupts and dequeue whatever queues a previous owner of the board left active."""
        self.regs.write("GC", "CP_MEC_DOORBELL_RANGE_LOWER", MEC_RING0 * 8)
        self.regs.write("GC", "CP_MEC_DOORBELL_RANGE_UPPER", (MEC_RING0 + self.pipes * self.queues) * 8 - 4)
        name, _, run = self.cntl
        self.regs.write("GC", name, **run)
        self._end_of_pipe_interrupts(1)
        for pipe in range(self.pipes):
            for queue in range(self.queues):
                self._select(pipe, queue, me=1)
                if self.regs.read("GC", "CP_HQD_ACTIVE") & 1:
                    self._dequeue(pipe, queue)
        self._select()

    def fini(self) -> None:
        """Dequeue the queues this driver made; the pipes' EOP interrupts off."""
        for doorbell in list(self.slots):
            self.destroy_queue(doorbell)
        self._end_of_pipe_interrupts(0)

    def _end_of_pipe_interrupts(self, on: int) -> None:
        """The pipes' EOP interrupts (a RELEASE_MEM's INT_SEL: the events), as amdgpu's
        gfx_v11_0_set_compute_eop_interrupt_state sets CP_ME1_PIPE<p>_INT_CNTL.TIME_STAMP_INT_ENABLE."""
        for pipe in range(self.pipes):
            self.regs.write("GC", f"CP_ME1_PIPE{pipe}_INT_CNTL", TIME_STAMP_INT_ENABLE=on)

    def _select(self, pipe: int = 0, queue: int = 0, me: int = 0) -> None:
        self.regs.write("GC", "GRBM_GFX_CNTL", MEID=me, PIPEID=pipe, QUEUEID=queue)

    def create_queue(self, aql: bool, ring: int, ring_bytes: int, rptr: int, wptr: int, eop: int) -> int:
        """A compute queue on a free slot (GPU addresses: ring, read-pointer report, write-pointer poll, EOP
        buffer); its doorbell's 64-bit index."""
        free = [(p, q) for q in range(self.queues) for p in range(self.pipes) if (p, q) not in self.slots.values()]
        if not free:
            raise QueueSlots(f"GFX: all {self.pipes * self.queues} compute queue slots of ME 1 are in use")
        pipe, queue = free[0]
        doorbell = MEC_RING0 + pipe * self.queues + queue
        w = self.regs.write
        self._select(pipe, queue, me=1)
        try:
            w("GC", "CP_HQD_PQ_BASE", ring >> 8 & 0xFFFFFFFF)
            w("GC", "CP_HQD_PQ_BASE_HI", ring >> 40)
            w("GC", "CP_HQD_PQ_RPTR_REPORT_ADDR", rptr & 0xFFFFFFFC)
            w("GC", "CP_HQD_PQ_RPTR_REPORT_ADDR_HI", rptr >> 32)
            w("GC", "CP_HQD_PQ_WPTR_POLL_ADDR", wptr & 0xFFFFFFF8)
            w("GC", "CP_HQD_PQ_WPTR_POLL_ADDR_HI", wptr >> 32)
            w("GC", "CP_HQD_EOP_BASE_ADDR", eop >> 8 & 0xFFFFFFFF)
            w("GC", "CP_HQD_EOP_BASE_ADDR_HI", eop >> 40)
            w("GC", "CP_HQD_EOP_CONTROL", EOP_SIZE=(EOP_BYTES // 4).bit_length() - 2)
            w("GC", "CP_HQD_AQL_CONTROL", CONTROL0=int(aql))
            w("GC", "CP_HQD_PQ_CONTROL", QUEUE_SIZE=(ring_bytes // 4).bit_length() - 2, RPTR_BLOCK_SIZE=5,
              UNORD_DISPATCH=1, PRIV_STATE=1, KMD_QUEUE=1)
            w("GC", "CP_HQD_PQ_DOORBELL_CONTROL", DOORBELL_OFFSET=doorbell * 2, DOORBELL_EN=1)
            w("GC", "CP_HQD_ACTIVE", 1)
            self.regs.wait("GC", "CP_HQD_ACTIVE", 1, 1, f"activating compute queue (ME 1, pipe {pipe}, queue "
                                                       f"{queue}): is the MEC firmware loaded and running?")
        finally:
            self._select()
        self.slots[doorbell] = (pipe, queue)
        return doorbell

    def destroy_queue(self, doorbell: int) -> None:
        pipe, queue = self.slots.pop(doorbell)
        self._select(pipe, queue, me=1)
        try:
            self._dequeue(pipe, queue)
        finally:
            self._select()

    def _dequeue(self, pipe: int, queue: int) -> None:
        """Stop the selected slot's queue."""
        self.regs.write("GC", "CP_HQD_DEQUEUE_REQUEST", 1)
        self.regs.wait("GC", "CP_HQD_ACTIVE", 1, 0, f"dequeuing compute queue (pipe {pipe}, queue {queue})")
        self.regs.write("GC", "CP_HQD_DEQUEUE_REQUEST", 0)
