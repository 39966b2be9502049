"""The mock board's command processors as registers program them: MEC hardware queue descriptors (the CP_HQD_*
registers of the ME/pipe/queue GRBM_GFX_CNTL selects; CP_HQD_ACTIVE 1 starts the queue, CP_HQD_DEQUEUE_REQUEST
stops it) and the SDMA engines' rings (SDMA<n>_QUEUE<q>_RB_*; RB_CNTL.RB_ENABLE starts one). The queues are the same
PM4, AQL and SDMA engines the mock KFD runs. A doorbell write (BAR2, 64-bit doorbells at the dword index a queue's
doorbell register names) runs every queue until none can make progress.

The MEC runs only with its firmware loaded (the PSP, where the board models one) and its halt released
(CP_MEC_RS64_CNTL.MEC_HALT; CP_MEC_CNTL.MEC_ME1_HALT on gfx9); a queue activated without both stays inactive
(CP_HQD_ACTIVE reads 0). Likewise an SDMA engine needs its firmware and its halt bit (F32_CNTL / MCU_CNTL) clear. On
the CDNA boards each SDMA engine has registers of its own (SDMA_GFX_RB_*, sdma_v4_4_2.c's), and the XCCs share one
register aperture (the mock's: writes to any XCC's reach the same MEC)."""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.autogen import psp_gfx_if
from usergpu.emu.amd.mock import discovery
from usergpu.emu.amd.mock.aql import AQLQueue
from usergpu.emu.amd.mock.gpu import RingQueue
from usergpu.emu.amd.mock.pm4 import PM4Queue
from usergpu.emu.amd.mock.sdma import SDMAQueue
from usergpu.emu.mock.scheduler import Scheduler
from usergpu.isa.amd.hw import ipmaps as _ipmaps

# family -> the MEC's firmware (its halt register and field: ipmaps.MEC_CNTL); the SDMA engines' rings: sdma_rings
MEC_FIRMWARE = {"gfx11": psp_gfx_if.GFX_FW_TYPE_RS64_MEC, "gfx12": psp_gfx_if.GFX_FW_TYPE_RS64_MEC,
                "gfx94": psp_gfx_if.GFX_FW_TYPE_CP_MEC, "gfx95": psp_gfx_if.GFX_FW_TYPE_CP_MEC}
HQD = ("CP_HQD_PQ_BASE", "CP_HQD_PQ_BASE_HI", "CP_HQD_PQ_RPTR_REPORT_ADDR", "CP_HQD_PQ_RPTR_REPORT_ADDR_HI",
       "CP_HQD_PQ_WPTR_POLL_ADDR", "CP_HQD_PQ_WPTR_POLL_ADDR_HI", "CP_HQD_PQ_CONTROL", "CP_HQD_PQ_DOORBELL_CONTROL",
       "CP_HQD_AQL_CONTROL", "CP_HQD_EOP_BASE_ADDR", "CP_HQD_EOP_BASE_ADDR_HI", "CP_HQD_EOP_CONTROL")
SDMA_ENGINES, SDMA_QUEUES = 2, 8  # gfx11/12: the GC block's SDMA<n>_QUEUE<q>_ rings


@dataclass(frozen=True)
class Ring:
    """One SDMA ring's registers: its engine's block and instance, their prefix, the engine's halt register, and
    the firmware the engine runs."""

    slot: tuple
    block: str
    instance: int
    prefix: str
    halt: str
    firmware: int


def sdma_rings(board) -> list[Ring]:
    """The board's SDMA rings: on gfx11/12 eight queues of each of two engines in GC's registers; on CDNA the GFX
    ring of every engine its discovery table lists (SDMA0's instances, four an IO die), each engine in its own
    registers, running the SDMA<n> firmware of its place in the die (amdgpu loads one image per place)."""
    halt = _ipmaps.SDMA_MICROCONTROLLER.get(board.arch[:5])
    if halt is not None:  # the queues are GC's registers
        return [Ring(("SDMA", n, q), "GC", 0, f"SDMA{n}_QUEUE{q}_", f"SDMA{n}_{halt}_CNTL",
                     psp_gfx_if.GFX_FW_TYPE_SDMA_UCODE_TH0) for n in range(SDMA_ENGINES) for q in range(SDMA_QUEUES)]
    engines = [(block, inst) for block, inst, _, _ in discovery.IPS[board.arch] if block.startswith("SDMA")]
    return [Ring(("SDMA", e, 0), block, inst, "SDMA_GFX_", "SDMA_F32_CNTL",
                 getattr(psp_gfx_if, f"GFX_FW_TYPE_SDMA{e % 4}")) for e, (block, inst) in enumerate(engines)]


class CommandProcessor:
    def __init__(self, board, gpu):
        self.board, self.gpu = board, gpu
        self.scheduler = Scheduler()
        self.hqds: dict[tuple[int, int, int], dict[str, int]] = {}  # (me, pipe, queue) -> its HQD registers
        self.queues: dict[object, tuple[int, RingQueue]] = {}  # slot -> (doorbell dword index, queue)
        self.mec_halt, self.mec_field, _ = _ipmaps.MEC_CNTL[board.arch[:5]]
        self.mec_firmware = MEC_FIRMWARE[board.arch[:5]]
        self.addr = {n: board.address("GC", n) for n in HQD + ("GRBM_GFX_CNTL", "CP_HQD_ACTIVE",
                                                               "CP_HQD_DEQUEUE_REQUEST", self.mec_halt)}
        for name in HQD:  # each slot has its own: reads and writes reach the one GRBM_GFX_CNTL selects
            board.on_write[self.addr[name]] = lambda v, name=name: self.hqd().__setitem__(name, v)
            board.on_read[self.addr[name]] = lambda name=name: self._show(name)
        board.on_write[self.addr["CP_HQD_ACTIVE"]] = self._activate
        board.on_write[self.addr["CP_HQD_DEQUEUE_REQUEST"]] = self._dequeue
        board.on_read[self.addr["CP_HQD_ACTIVE"]] = self._active
        engines: dict[int, list[Ring]] = {}  # an engine's halt register -> its rings, which run or stop with it
        for ring in sdma_rings(board):
            board.on_write[board.address(ring.block, ring.prefix + "RB_CNTL", ring.instance)] = \
                lambda v, ring=ring: self._sdma(ring, v)
            engines.setdefault(board.address(ring.block, ring.halt, ring.instance), []).append(ring)
        for halt, rings in engines.items():
            board.on_write[halt] = lambda v, rings=rings: [self._sdma(ring, None) for ring in rings]

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
        halted = self._field(self.mec_halt, int(self.board.regs[self.addr[self.mec_halt]]), self.mec_field)
        return not halted and self._firmware(self.mec_firmware)

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
        queue = engine(self.gpu, ring, size, rptr, wptr, name)
        queue.eop_enabled = self._eop_enable(*slot[:2])
        self._start(slot, self._field("CP_HQD_PQ_DOORBELL_CONTROL", doorbell, "DOORBELL_OFFSET"), queue)

    def _eop_enable(self, me: int, pipe: int):
        """Whether the pipe sends EOP interrupts: its CP_ME<m>_PIPE<p>_INT_CNTL.TIME_STAMP_INT_ENABLE, as the driver
        set it (a pipe the GC has no such register for, as gfx12's ME 1 has 2 pipes, sends none)."""
        name = f"CP_ME{me}_PIPE{pipe}_INT_CNTL"
        try:
            at = self.board.address("GC", name)
        except KeyError:
            return lambda: False
        return lambda: bool(self._field(name, int(self.board.regs[at]), "TIME_STAMP_INT_ENABLE"))

    def _dequeue(self, value: int) -> None:
        if value:
            self._stop(self.selected())

    # ---- SDMA -----------------------------------------------------------------------------------------------------
    def _sdma(self, ring: Ring, cntl: int | None) -> None:
        """A ring (re)programmed or its engine's halt bit written: the ring runs while enabled and unhalted."""
        def reg(name: str) -> int:
            return int(self.board.regs[self.board.address(ring.block, name, ring.instance)])

        def field(name: str, value: int, f: str) -> int:
            return self.board.table(ring.block, name).decode(value)[f]
        cntl = reg(ring.prefix + "RB_CNTL") if cntl is None else cntl
        self._stop(ring.slot)
        if not cntl & 1 or reg(ring.halt) & 1 or not self._firmware(ring.firmware):
            return
        q = ring.prefix
        size = 4 << field(q + "RB_CNTL", cntl, "RB_SIZE")
        base = (reg(q + "RB_BASE_HI") << 32 | reg(q + "RB_BASE")) << 8
        rptr = reg(q + "RB_RPTR_ADDR_HI") << 32 | reg(q + "RB_RPTR_ADDR_LO")
        wptr = reg(q + "RB_WPTR_POLL_ADDR_HI") << 32 | reg(q + "RB_WPTR_POLL_ADDR_LO")
        doorbell = field(q + "DOORBELL_OFFSET", reg(q + "DOORBELL_OFFSET"), "OFFSET")
        name = "sdma{} queue{}".format(*ring.slot[1:])
        self._start(ring.slot, doorbell, SDMAQueue(self.gpu, base, size, rptr, wptr, name))

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
