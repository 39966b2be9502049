"""SDMA: the copy engines' ring buffers as sdma_v6_0.c programs its ring (SDMA<n>_QUEUE<q>_RB_*: base, size,
read-pointer writeback and write-pointer poll addresses, doorbell, then RB_ENABLE), on any of the eight queues of
each engine; an engine runs once its firmware is loaded and its halt bit (F32_CNTL on SDMA 6, MCU_CNTL on SDMA 7)
is clear. SDMA 4.4.x (MI300X, sdma_v4_4_2.c) has the same ring registers, SDMA_GFX_RB_*, in each engine's own
registers (SDMA0's instance i for engine i; AM uses the first two), one GFX ring an engine, the write-pointer poll
enabled in SDMA_GFX_RB_WPTR_POLL_CNTL."""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.drivers.amd.am.gfx import QueueSlots
from usergpu.drivers.amd.am.ip import Registers
from usergpu.isa.amd.hw import ipmaps as _ipmaps

ENGINES = (0x100, 0x10A)  # AMDGPU_NAVI10_DOORBELL_sDMA_ENGINE0/1: each engine's first (64-bit) doorbell
QUEUES = 8  # per engine on SDMA 6/7, each with its own doorbell after the engine's first


@dataclass(frozen=True)
class Ring:
    block: str  # the block holding its registers
    instance: int  # which instance of it
    prefix: str  # its registers' prefix
    halt: str  # its engine's halt register
    doorbell: int  # its 64-bit doorbell's index


def rings(family: str) -> list[Ring]:
    """The rings AM uses, the engines taken in turn."""
    mcu = _ipmaps.SDMA_MICROCONTROLLER.get(family)
    if mcu is not None:  # the queues are GC's registers
        return [Ring("GC", 0, f"SDMA{n}_QUEUE{q}_", f"SDMA{n}_{mcu}_CNTL", ENGINES[n] + q)
                for q in range(QUEUES) for n in range(len(ENGINES))]
    return [Ring("SDMA0", n, "SDMA_GFX_", "SDMA_F32_CNTL", ENGINES[n]) for n in range(len(ENGINES))]


class SDMA:
    def __init__(self, regs: Registers, family: str):
        self.regs, self.family, self.rings = regs, family, rings(family)
        self.used: dict[int, Ring] = {}  # doorbell (64-bit index) -> its ring

    def init(self) -> None:
        """Stop whatever rings a previous owner of the board left enabled, then release the engines' halt."""
        for ring in self.rings:
            self.regs.write(ring.block, ring.prefix + "RB_CNTL", 0, ring.instance)
        for block, instance, halt in {(ring.block, ring.instance, ring.halt) for ring in self.rings}:
            self.regs.write(block, halt, 0, instance)

    def fini(self) -> None:
        """Stop the rings this driver made."""
        for doorbell in list(self.used):
            self.destroy_queue(doorbell)

    def create_queue(self, ring: int, ring_bytes: int, rptr: int, wptr: int) -> int:
        """A ring on a free queue (GPU addresses); its doorbell's 64-bit index."""
        free = [r for r in self.rings if r.doorbell not in self.used]
        if not free:
            raise QueueSlots(f"SDMA: all {len(self.rings)} rings of the engines are in use")
        r = free[0]
        q = r.prefix

        def w(name: str, value: int = 0, **fields: int) -> None:
            self.regs.write(r.block, q + name, value, r.instance, **fields)
        w("RB_CNTL")
        w("RB_BASE", ring >> 8 & 0xFFFFFFFF)
        w("RB_BASE_HI", ring >> 40)
        w("RB_RPTR_ADDR_LO", rptr & 0xFFFFFFFC)
        w("RB_RPTR_ADDR_HI", rptr >> 32)
        w("RB_WPTR_POLL_ADDR_LO", wptr & 0xFFFFFFFC)
        w("RB_WPTR_POLL_ADDR_HI", wptr >> 32)
        w("DOORBELL_OFFSET", OFFSET=r.doorbell * 2)
        w("DOORBELL", ENABLE=1)
        size = (ring_bytes // 4).bit_length() - 1
        mcu = _ipmaps.SDMA_MICROCONTROLLER.get(self.family)
        if mcu is not None:
            w("RB_CNTL", RB_ENABLE=1, RB_SIZE=size, RPTR_WRITEBACK_ENABLE=1, RB_PRIV=1,
              **{f"{mcu}_WPTR_POLL_ENABLE": 1})
        else:
            w("RB_WPTR_POLL_CNTL", ENABLE=1, F32_POLL_ENABLE=1)
            w("RB_CNTL", RB_ENABLE=1, RB_SIZE=size, RPTR_WRITEBACK_ENABLE=1, RB_PRIV=1)
        self.used[r.doorbell] = r
        return r.doorbell

    def destroy_queue(self, doorbell: int) -> None:
        r = self.used.pop(doorbell)
        self.regs.write(r.block, r.prefix + "RB_CNTL", 0, r.instance)
