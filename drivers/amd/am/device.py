"""AMDevice: a GPU opened by AM, as far as its bring-up goes today — the per-GPU lock, the PCI function (BAR5
registers, BAR0 VRAM), the virtual-function check, IP discovery (which blocks, which versions, where their
registers are), whether AM already brought this board up (the marker in GC's SCRATCH_REG7; AM_RESET=1 forces a
full bring-up), the SMU's mailbox and the PSP's bootloader stages up to a running sOS. The PSP ring, TMR and
firmware loads, the GMC page tables, IH and the GFX/SDMA queues are the steps still to come."""

from __future__ import annotations

import os

from usergpu.drivers.amd.am import discovery, firmware, ip, lock
from usergpu.drivers.amd.am.psp import PSP
from usergpu.drivers.amd.am.smu import SMU
from usergpu.drivers.hal import HAL
from usergpu.drivers.pci import PCIDevice
from usergpu.errors import Error

AM_MARKER = 0xA0A0_0001  # what AM leaves in SCRATCH_REG7 once it has brought a board up (its version)
METRICS_BELOW_TOP = 128 << 10  # the SMU metrics buffer, under the 64 KiB the discovery table takes
PSP_STAGING_BELOW_TOP = 16 << 20  # the PSP's parts are staged here (1 MiB-aligned, below the buffers above)


class VirtualFunction(Error):
    """AM drives physical functions; an SR-IOV virtual function belongs to its host's driver."""


class AMDevice:
    def __init__(self, pci: PCIDevice, hal: HAL | None = None, reset: bool | None = None):
        hal = hal or HAL()
        self.pci, self.hal = pci, hal
        self.lock = lock.acquire(hal, pci.name)
        try:
            self.mmio, self.vram = pci.map_bar(5), pci.map_bar(0)
            self.blocks = discovery.read(self.mmio, self.vram)
            self.regs = ip.RegisterMap(self.blocks)
            iov = self.mmio.read32(4 * self.regs.address("NBIF", "RCC_DEV0_EPF0_RCC_IOV_FUNC_IDENTIFIER"))
            if iov & 1:
                raise VirtualFunction(f"{pci.name} is an SR-IOV virtual function (RCC_IOV_FUNC_IDENTIFIER "
                                      f"{iov:#x}): AM drives the physical function only")
            reset = os.environ.get("AM_RESET") == "1" if reset is None else reset
            marker = self.mmio.read32(4 * self.regs.address("GC", "SCRATCH_REG7"))
            self.partial = marker == AM_MARKER and not reset  # up already: bring-up resumes, not restarts
            self.smu = SMU(self.mmio, self.regs)
            self.smu_version = self.smu.version()
        except BaseException:
            hal.close(self.lock)
            raise

    def boot_psp(self) -> int:
        """The PSP's bootloader stages and its sOS, from the SOS firmware of this GPU's MP0 version; the sOS
        version."""
        major, minor, rev = self.regs.ip("MP0").version
        psp = PSP(self.mmio, self.vram, self.regs, self.vram_size - PSP_STAGING_BELOW_TOP)
        return psp.boot(firmware.load(f"psp_{major}_{minor}_{rev}_sos"))

    def metrics(self) -> dict[str, int | float]:
        """The SMU's metrics, through a buffer just below the discovery table at the top of VRAM."""
        offset = self.vram_size - METRICS_BELOW_TOP
        return self.smu.metrics(self.vram, offset, self.fb_base + offset)

    @property
    def fb_base(self) -> int:
        """Where VRAM starts in the GPU's MC address space (the VBIOS sets the hubs' FB_LOCATION_BASE)."""
        return self.mmio.read32(4 * self.regs.address("MMHUB", "MMMC_VM_FB_LOCATION_BASE")) << 24

    @property
    def vram_size(self) -> int:
        return self.mmio.read32(4 * discovery.RCC_CONFIG_MEMSIZE) << 20

    @property
    def gc_version(self) -> tuple[int, int, int]:
        return self.regs.ip("GC").version

    def close(self) -> None:
        self.hal.close(self.lock)
