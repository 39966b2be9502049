"""IH: the interrupt handler's ring as ih_v6_0.c sets it up — a ring in VRAM (IH_RB_BASE, size in IH_RB_CNTL) the
IH writes IV entries into, advancing IH_RB_WPTR (a byte offset); the driver reads the entries up to it and moves
IH_RB_RPTR after them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from usergpu.drivers.amd.am.ip import Registers
from usergpu.isa.amd.hw import ih as _ih

RING_BYTES = 256 << 10


class IH:
    def __init__(self, regs: Registers, vram: np.ndarray, address: int, mc: int, sync: Callable[[], None]):
        """address: the ring's VRAM offset; mc: its MC address (what the IH is given); sync: makes what the IH
        wrote to the ring visible to the CPU (PCIDevice.sync_for_cpu of it)."""
        self.regs, self.ring = regs, vram[address : address + RING_BYTES].view(np.uint32)
        self.mc, self.rptr, self.sync = mc, 0, sync

    def init(self) -> None:
        self.regs.write("OSSSYS", "IH_RB_CNTL", 0)
        self.regs.write("OSSSYS", "IH_RB_BASE", self.mc >> 8 & 0xFFFFFFFF)
        self.regs.write("OSSSYS", "IH_RB_BASE_HI", self.mc >> 40)
        self.regs.write("OSSSYS", "IH_RB_RPTR", 0)
        self.regs.write("OSSSYS", "IH_RB_WPTR", 0)
        self.regs.write("OSSSYS", "IH_RB_CNTL", RB_ENABLE=1, ENABLE_INTR=1, WPTR_OVERFLOW_ENABLE=1,
                        RB_SIZE=(RING_BYTES // 4).bit_length() - 1)

    def fini(self) -> None:
        self.regs.write("OSSSYS", "IH_RB_CNTL", 0)

    def poll(self) -> list[dict[str, int]]:
        """The entries written since the last poll, decoded (amdgpu_ih.c's fields)."""
        wptr = self.regs.read("OSSSYS", "IH_RB_WPTR")
        if wptr & 1:  # RB_OVERFLOW: the IH dropped entries; what is in the ring is still good. Clear the flag.
            cntl = self.regs.read("OSSSYS", "IH_RB_CNTL")
            self.regs.write("OSSSYS", "IH_RB_CNTL", cntl | self.regs.table("OSSSYS", "IH_RB_CNTL").encode(
                WPTR_OVERFLOW_CLEAR=1))
            self.regs.write("OSSSYS", "IH_RB_CNTL", cntl)
        wptr &= RING_BYTES - 4
        if self.rptr != wptr:
            self.sync()
        out = []
        while self.rptr != wptr:
            at = self.rptr // 4
            out.append(_ih.decode(self.ring[at : at + _ih.ENTRY_BYTES // 4].tolist()))
            self.rptr = (self.rptr + _ih.ENTRY_BYTES) % RING_BYTES
        self.regs.write("OSSSYS", "IH_RB_RPTR", self.rptr)
        return out
