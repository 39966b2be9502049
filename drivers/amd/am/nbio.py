"""NBIO: the bus interface's remap page — the HDP flush registers mapped into BAR5's MMIO hole (nbio_v4_3.c) — and
the HDP flush itself (hdp_v6_0.c): CPU writes to VRAM through BAR0 pass the HDP, which must be flushed before the
GPU reads what they wrote (before ringing a doorbell)."""

from __future__ import annotations

from usergpu.autogen import kfd
from usergpu.drivers.amd.am import discovery
from usergpu.drivers.amd.am.ip import Registers

MMIO_REG_HOLE = 0x80000 - 4096  # BAR5 byte offset of the remap page (MMIO_REG_HOLE_OFFSET, 4 KiB pages)


class NBIO:
    def __init__(self, regs: Registers):
        self.regs = regs
        self.flush_at = MMIO_REG_HOLE + kfd.KFD_MMIO_REMAP_HDP_MEM_FLUSH_CNTL

    def init(self) -> None:
        self.regs.write("NBIF", "BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL", self.flush_at)
        self.regs.write("NBIF", "BIF_BX0_REMAP_HDP_REG_FLUSH_CNTL",
                        MMIO_REG_HOLE + kfd.KFD_MMIO_REMAP_HDP_REG_FLUSH_CNTL)

    def fini(self) -> None:
        """Nothing to undo: the remap stays valid for the next driver."""

    def flush_hdp(self) -> None:
        """Write the remapped HDP_MEM_FLUSH_CNTL, then read a plain register to post the write (as amdgpu does:
        reading the remapped one back misbehaves on some platforms)."""
        self.regs.mmio.write32(self.flush_at, 0)
        self.regs.mmio.read32(4 * discovery.RCC_CONFIG_MEMSIZE)


def smn_read(regs: Registers, address: int) -> int:
    """A register past BAR5 by its byte address on the SMN bus, through NBIO's BIF_BX0_PCIE_INDEX2 / _DATA2 pair
    (bits 39:32 in _INDEX2_HI), as amdgpu_device_indirect_rreg_ext reads one."""
    high = address >> 32 & 0xFF
    regs.write("NBIF", "BIF_BX0_PCIE_INDEX2", address & 0xFFFFFFFF)
    if high:
        regs.write("NBIF", "BIF_BX0_PCIE_INDEX2_HI", high)
    value = regs.read("NBIF", "BIF_BX0_PCIE_DATA2")
    if high:
        regs.write("NBIF", "BIF_BX0_PCIE_INDEX2_HI", 0)
    return value


class FlushedDoorbells:
    """The doorbell BAR as queues ring it: the HDP flushed first, so the engine sees the packets the CPU wrote."""

    def __init__(self, doorbells, nbio: NBIO):
        self.doorbells, self.nbio = doorbells, nbio

    def __setitem__(self, index: int, value: int) -> None:
        self.nbio.flush_hdp()
        self.doorbells[index] = value

    def __getitem__(self, index: int) -> int:
        return self.doorbells[index]
