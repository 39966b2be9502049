"""The mock board's command processors as registers program them: MEC hardware queue descriptors (the CP_HQD_*
registers of the ME/pipe/queue GRBM_GFX_CNTL selects; CP_HQD_ACTIVE 1 starts the queue, CP_HQD_DEQUEUE_REQUEST
stops it) and the SDMA engines' rings (SDMA<n>_QUEUE<q>_RB_*; RB_CNTL.RB_ENABLE starts one). The queues are the same
PM4, AQL and SDMA engines the mock KFD runs. A doorbell write (BAR2, 64-bit doorbells at the dword index a queue's
doorbell register names) runs every queue until none can make progress.

The MEC runs only with its firmware loaded (the PSP, where the board models one) and its halt released
(CP_MEC_RS64_CNTL.MEC_HALT); a queue activated without both stays inactive (CP_HQD_ACTIVE reads 0). Likewise an SDMA
engine needs its firmware and its halt bit (F32_CNTL / MCU_CNTL) clear."""

from __future__ import annotations

from usergpu.autogen import psp_gfx_if
from usergpu.emu.amd.mock.aql import AQLQueue
from usergpu.emu.amd.mock.gpu import RingQueue
from usergpu.emu.amd.mock.pm4 import PM4Queue
from usergpu.emu.amd.mock.sdma import SDMAQueue
from usergpu.emu.mock.scheduler import Scheduler
from usergpu.isa.amd.hw import ipmaps as _ipmaps

HQD = ("CP_HQD_PQ_BASE", "CP_HQD_PQ_BASE_HI", "CP_HQD_PQ_RPTR_REPORT_ADDR", "CP_HQD_PQ_RPTR_REPORT_ADDR_HI",
       "CP_HQD_PQ_WPTR_POLL_ADDR", "CP_HQD_PQ_WPTR_POLL_ADDR_HI", "CP_HQD_PQ_CONTROL", "CP_HQD_PQ_DOORBELL_CONTROL",
       "CP_HQD_AQL_CONTROL", "CP_HQD_EOP_BASE_ADDR", "CP_HQD_EOP_BASE_ADDR_HI", "CP_HQD_EOP_CONTROL")
SDMA_ENGINES, SDMA_QUEUES = 2, 8
MEC_FIRMWARE, SDMA_FIRMWARE = psp_gfx_if.GFX_FW_TYPE_RS64_MEC, psp_gfx_if.GFX_FW_TYPE_SDMA_UCODE_TH0


class CommandProcessor:
    def __init__(self, board, gpu):
        self.board, self.gpu = board, gpu
        self.scheduler = Scheduler()
        self.hqds: dict[tuple[int, int, int], dict[str, int]] = {}  # (me, pipe, queue) -> its HQD registers
        self.queues: dict[object, tuple[int, RingQueue]] = {}  # slot -> (doorbell dword index, queue)
        self.addr = {n: board.address("GC", n) for n in HQD + ("GRBM_GFX_CNTL", "CP_HQD_ACTIVE",
                                                               "CP_HQD_DEQUEUE_REQUEST", "CP_MEC_RS64_CNTL")}
        for name in HQD:  # each slot has its own: reads and writes reach the one GRBM_GFX_CNTL selects
            board.on_write[self.addr[name]] = lambda v, name=name: self.hqd().__setitem__(name, v)
            board.on_read[self.addr[name]] = lambda name=name: self._show(name)
        board.on_write[self.addr["CP_HQD_ACTIVE"]] = self._activate
        board.on_write[self.addr["CP_HQD_DEQUEUE_REQUEST"]] = self._dequeue
        board.on_read[self.addr["CP_HQD_ACTIVE"]] = self._active
        self.sdma_halt = f"{_ipmaps.SDMA_MICROCONTROLLER[board.arch[:5]]}_CNTL"
        for n in range(SDMA_ENGINES):
            for q in range(SDMA_QUEUES):
                board.on_write[board.address("GC", f"SDMA{n}_QUEUE{q}_RB_CNTL")] = \
                    lambda v, n=n, q=q: self._sdma(n, q, v)
            board.on_write[board.address("GC", f"SDMA{n}_{self.sdma_halt}")] = lambda v, n=n: self._sdma_engine(n)

    # ---- MEC ------------------------------------------------------------------------------------------------------
    def selected(self) -> tuple[int, int, int]:
        f = self.board.table("GC", "GRBM_GFX_CNTL").decode(int(self.board.regs[self.addr["GRBM_GFX_CNTL"]]))
        return f["MEID"], f["PIPEID"], f["QUEUEID"]

    def hqd(self) -> dict[str, int]:
        return self.hqds.setdefault(self.selected(), {})

    def _show(self, name: str) -> None:
        self.board.regs[self.addr[name]] = self.hqd().get(name, 0)

    def _field(self, name: str, value: int, field: str) -> int:
        return self.board.table("GC", name).decode(value)[field]

    def mec_running(self) -> bool:
        halted = self._field("CP_MEC_RS64_CNTL", int(self.board.regs[self.addr["CP_MEC_RS64_CNTL"]]), "MEC_HALT")
        return not halted and self._firmware(MEC_FIRMWARE)

    def _firmware(self, fw_type: int) -> bool:
        psp = self.board.psp
        return psp is None or psp.has_firmware(fw_type)

    def _active(self) -> None:
        self.board.regs[self.addr["CP_HQD_ACTIVE"]] = int(self.selected() in self.queues)

    def _activate(self, value: int) -> None:
        slot = self.selected()
        if not value & 1 or slot in self.queues or not self.mec_running():
            return
        h = self.hqd()
        ring = (h.get("CP_HQD_PQ_BASE_HI", 0) << 32 | h.get("CP_HQD_PQ_BASE", 0)) << 8
        size = 4 << (self._field("CP_HQD_PQ_CONTROL", h.get("CP_HQD_PQ_CONTROL", 0), "QUEUE_SIZE") + 1)
        rptr = h.get("CP_HQD_PQ_RPTR_REPORT_ADDR_HI", 0) << 32 | h.get("CP_HQD_PQ_RPTR_REPORT_ADDR", 0)
        wptr = h.get("CP_HQD_PQ_WPTR_POLL_ADDR_HI", 0) << 32 | h.get("CP_HQD_PQ_WPTR_POLL_ADDR", 0)
        doorbell = h.get("CP_HQD_PQ_DOORBELL_CONTROL", 0)
        aql = self._field("CP_HQD_AQL_CONTROL", h.get("CP_HQD_AQL_CONTROL", 0), "CONTROL0")
        engine = AQLQueue if aql else PM4Queue
        name = "{} queue (ME {} pipe {} queue {})".format(engine.kind, *slot)
        self._start(slot, self._field("CP_HQD_PQ_DOORBELL_CONTROL", doorbell, "DOORBELL_OFFSET"),
                    engine(self.gpu, ring, size, rptr, wptr, name))

    def _dequeue(self, value: int) -> None:
        if value:
            self._stop(self.selected())

    # ---- SDMA -----------------------------------------------------------------------------------------------------
    def _sdma_engine(self, n: int) -> None:
        """An engine's halt bit written: each of its rings runs or stops with it."""
        for queue in range(SDMA_QUEUES):
            self._sdma(n, queue, None)

    def _sdma(self, n: int, queue: int, cntl: int | None) -> None:
        """A ring (re)programmed or its engine's halt bit written: the ring runs while enabled and unhalted."""
        q = f"SDMA{n}_QUEUE{queue}_"

        def reg(name: str) -> int:
            return int(self.board.regs[self.board.address("GC", q + name)])
        cntl = reg("RB_CNTL") if cntl is None else cntl
        halted = int(self.board.regs[self.board.address("GC", f"SDMA{n}_{self.sdma_halt}")]) & 1
        self._stop(("SDMA", n, queue))
        if not cntl & 1 or halted or not self._firmware(SDMA_FIRMWARE):
            return
        size = 4 << self._field(q + "RB_CNTL", cntl, "RB_SIZE")
        ring = (reg("RB_BASE_HI") << 32 | reg("RB_BASE")) << 8
        rptr = reg("RB_RPTR_ADDR_HI") << 32 | reg("RB_RPTR_ADDR_LO")
        wptr = reg("RB_WPTR_POLL_ADDR_HI") << 32 | reg("RB_WPTR_POLL_ADDR_LO")
        doorbell = self._field(q + "DOORBELL_OFFSET", reg("DOORBELL_OFFSET"), "OFFSET")
        self._start(("SDMA", n, queue), doorbell, SDMAQueue(self.gpu, ring, size, rptr, wptr, f"sdma{n} queue{queue}"))

    # ---- queues and doorbells -------------------------------------------------------------------------------------
    def _start(self, slot, doorbell: int, queue: RingQueue) -> None:
        self.queues[slot] = (doorbell, queue)
        self.scheduler.add(queue)

    def _stop(self, slot) -> None:
        if slot in self.queues:
            self.scheduler.remove(self.queues.pop(slot)[1])

    def doorbell(self, index: int) -> None:
        """A doorbell write at dword index: if a queue listens there, run the engines."""
        if any(d == index for d, _ in self.queues.values()):
            self.run()

    def run(self) -> None:
        self.scheduler.run()
