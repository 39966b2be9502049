"""SDMA: the copy engines' ring buffers as sdma_v6_0.c programs its ring (SDMA<n>_QUEUE<q>_RB_*: base, size,
read-pointer writeback and write-pointer poll addresses, doorbell, then RB_ENABLE), on any of the eight queues of
each engine; an engine runs once its firmware is loaded and its halt bit (F32_CNTL on SDMA 6, MCU_CNTL on SDMA 7)
is clear."""

from __future__ import annotations

from usergpu.drivers.amd.am.gfx import QueueSlots
from usergpu.drivers.amd.am.ip import Registers
from usergpu.isa.amd.hw import ipmaps as _ipmaps

ENGINES = (0x100, 0x10A)  # AMDGPU_NAVI10_DOORBELL_sDMA_ENGINE0/1: each engine's first (64-bit) doorbell
QUEUES = 8  # per engine, each with its own doorbell after the engine's first


class SDMA:
    def __init__(self, regs: Registers, family: str):
        self.regs, self.mcu = regs, _ipmaps.SDMA_MICROCONTROLLER[family]
        self.used: dict[int, tuple[int, int]] = {}  # doorbell (64-bit index) -> (engine, queue)

    def init(self) -> None:
        """Stop whatever rings a previous owner of the board left enabled, then release the engines' halt."""
        for n in range(len(ENGINES)):
            for q in range(QUEUES):
                self.regs.write("GC", f"SDMA{n}_QUEUE{q}_RB_CNTL", 0)
            self.regs.write("GC", f"SDMA{n}_{self.mcu}_CNTL", 0)

    def fini(self) -> None:
        """Stop the rings this driver made."""
        for doorbell in list(self.used):
            self.destroy_queue(doorbell)

    def create_queue(self, ring: int, ring_bytes: int, rptr: int, wptr: int) -> int:
        """A ring on a free queue, the engines taken in turn (GPU addresses); its doorbell's 64-bit index."""
        free = [(n, q) for q in range(QUEUES) for n in range(len(ENGINES)) if (n, q) not in self.used.values()]
        if not free:
            raise QueueSlots(f"SDMA: all {len(ENGINES) * QUEUES} rings of the {len(ENGINES)} engines are in use")
        n, queue = free[0]
        doorbell = ENGINES[n] + queue
        q, w = f"SDMA{n}_QUEUE{queue}_", self.regs.write
        w("GC", q + "RB_CNTL", 0)
        w("GC", q + "RB_BASE", ring >> 8 & 0xFFFFFFFF)
        w("GC", q + "RB_BASE_HI", ring >> 40)
        w("GC", q + "RB_RPTR_ADDR_LO", rptr & 0xFFFFFFFC)
        w("GC", q + "RB_RPTR_ADDR_HI", rptr >> 32)
        w("GC", q + "RB_WPTR_POLL_ADDR_LO", wptr & 0xFFFFFFFC)
        w("GC", q + "RB_WPTR_POLL_ADDR_HI", wptr >> 32)
        w("GC", q + "DOORBELL_OFFSET", OFFSET=doorbell * 2)
        w("GC", q + "DOORBELL", ENABLE=1)
        w("GC", q + "RB_CNTL", RB_ENABLE=1, RB_SIZE=(ring_bytes // 4).bit_length() - 1, RPTR_WRITEBACK_ENABLE=1,
          RB_PRIV=1, **{f"{self.mcu}_WPTR_POLL_ENABLE": 1})
        self.used[doorbell] = (n, queue)
        return doorbell

    def destroy_queue(self, doorbell: int) -> None:
        n, queue = self.used.pop(doorbell)
        self.regs.write("GC", f"SDMA{n}_QUEUE{queue}_RB_CNTL", 0)
