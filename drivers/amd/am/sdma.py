"""SDMA: the copy engines' ring buffers as sdma_v6_0.c programs them — per engine one ring (SDMA<n>_QUEUE0_RB_*):
base, size, read-pointer writeback and write-pointer poll addresses, doorbell, then RB_ENABLE; the engine runs
once its firmware is loaded and its halt bit (F32_CNTL on SDMA 6, MCU_CNTL on SDMA 7) is clear."""

from __future__ import annotations

from usergpu.autogen import _ipmaps
from usergpu.drivers.amd.am.gfx import QueueSlots
from usergpu.drivers.amd.am.ip import Registers

ENGINES = (0x100, 0x10A)  # AMDGPU_NAVI10_DOORBELL_sDMA_ENGINE0/1: each engine's (64-bit) doorbell


class SDMA:
    def __init__(self, regs: Registers, family: str):
        self.regs, self.mcu = regs, _ipmaps.SDMA_MICROCONTROLLER[family]
        self.used: set[int] = set()  # engines whose ring is in use

    def init(self) -> None:
        """Stop whatever rings a previous owner of the board left enabled, then release the engines' halt."""
        for n in range(len(ENGINES)):
            self.regs.write("GC", f"SDMA{n}_QUEUE0_RB_CNTL", 0)
            self.regs.write("GC", f"SDMA{n}_{self.mcu}_CNTL", 0)

    def create_queue(self, ring: int, ring_bytes: int, rptr: int, wptr: int) -> int:
        """A free engine's ring (GPU addresses); its doorbell's 64-bit index."""
        free = [n for n in range(len(ENGINES)) if n not in self.used]
        if not free:
            raise QueueSlots(f"SDMA: both engines' rings are in use ({len(ENGINES)} engines)")
        n = free[0]
        q, w = f"SDMA{n}_QUEUE0_", self.regs.write
        w("GC", q + "RB_CNTL", 0)
        w("GC", q + "RB_BASE", ring >> 8 & 0xFFFFFFFF)
        w("GC", q + "RB_BASE_HI", ring >> 40)
        w("GC", q + "RB_RPTR_ADDR_LO", rptr & 0xFFFFFFFC)
        w("GC", q + "RB_RPTR_ADDR_HI", rptr >> 32)
        w("GC", q + "RB_WPTR_POLL_ADDR_LO", wptr & 0xFFFFFFFC)
        w("GC", q + "RB_WPTR_POLL_ADDR_HI", wptr >> 32)
        w("GC", q + "DOORBELL_OFFSET", OFFSET=ENGINES[n] * 2)
        w("GC", q + "DOORBELL", ENABLE=1)
        w("GC", q + "RB_CNTL", RB_ENABLE=1, RB_SIZE=(ring_bytes // 4).bit_length() - 1, RPTR_WRITEBACK_ENABLE=1,
          RB_PRIV=1, **{f"{self.mcu}_WPTR_POLL_ENABLE": 1})
        self.used.add(n)
        return ENGINES[n]

    def destroy_queue(self, doorbell: int) -> None:
        n = ENGINES.index(doorbell)
        self.regs.write("GC", f"SDMA{n}_QUEUE0_RB_CNTL", 0)
        self.used.discard(n)
