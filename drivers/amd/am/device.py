"""AMDevice: a GPU opened and brought up by AM, block by block in amdgpu's order: the per-GPU lock, the PCI
function (BAR5 registers, BAR0 VRAM, BAR2 doorbells), the virtual-function check, IP discovery (which blocks, which
versions, where their registers are), the SMU's mailbox, then `boot()`: NBIO (the HDP flush's remap), GMC (page
tables, apertures), IH, the PSP (bootloader stages, sOS, ring, TMR, firmware loads), GFX (MEC) and SDMA.

A board AM brought up before (the marker in GC's SCRATCH_REG7, the TMR size in SCRATCH_REG5) keeps its firmware:
the PSP steps are skipped and the rest is set up anew (partial boot). AM_RESET=1 forces the full bring-up.

VRAM: the top RESERVED bytes hold what must stay put between processes (the discovery table, the SMU's metrics
buffer, the PSP's staging buffer and TMR); the allocator hands out the rest."""

from __future__ import annotations

import contextlib
import os

import numpy as np

from usergpu.drivers.amd.am import discovery, firmware, ih, ip, lock
from usergpu.drivers.amd.am.allocator import Allocator
from usergpu.drivers.amd.am.gfx import GFX
from usergpu.drivers.amd.am.gmc import GMC
from usergpu.drivers.amd.am.nbio import NBIO
from usergpu.drivers.amd.am.psp import PSP
from usergpu.drivers.amd.am.psp_ring import RingMemory
from usergpu.drivers.amd.am.sdma import SDMA
from usergpu.drivers.amd.am.smu import SMU
from usergpu.drivers.hal import HAL
from usergpu.drivers.pci import PCIDevice
from usergpu.errors import Error
from usergpu.isa.amd.hw import ipmaps as _ipmaps

AM_MARKER = 0xA0A0_0001  # what AM leaves in SCRATCH_REG7 once it has brought a board up (its version)
METRICS_BELOW_TOP = 128 << 10  # the SMU metrics buffer, under the 64 KiB the discovery table takes
PSP_RING_BELOW_TOP = 1 << 20  # the PSP's ring, command buffer and fence: a page each from here
PSP_STAGING_BELOW_TOP = 16 << 20  # the PSP's parts are staged here (1 MiB-aligned, below the buffers above)
RESERVED = 64 << 20  # the top of VRAM AM keeps for itself (see the module doc); the TMR starts at its bottom
TMR_SIZE = "SCRATCH_REG5"  # where AM keeps the TMR's size, so a partial boot knows the firmware's place
VRAM_USED = "SCRATCH_REG6"  # where AM keeps the MiB of VRAM its allocator has handed out, for monitors to read


class SmallBAR(Error):
    """BAR0 does not cover all of VRAM (no Resizable BAR)."""


class VirtualFunction(Error):
    """AM drives physical functions; an SR-IOV virtual function belongs to its host's driver."""


class AMDevice:
    def __init__(self, pci: PCIDevice, hal: HAL | None = None, reset: bool | None = None):
        hal = hal or HAL()
        self.pci, self.hal = pci, hal
        self.lock = lock.acquire(hal, pci.name)
        try:
            self.mmio = pci.map_bar(5)
            if pci.bar(0).size < self.vram_size:
                raise SmallBAR(f"{pci.name}: BAR0 shows {pci.bar(0).size >> 20} MiB of the {self.vram_size >> 20} MiB "
                               "of VRAM; AM needs all of it visible: enable Resizable BAR (and Above 4G Decoding) "
                               f"in the firmware setup, or resize it (sysfs resource0_resize of {pci.name})")
            self.vram = pci.map_bar(0)
            with self.step("discovery", "IP discovery table at the top of VRAM"):
                self.blocks = discovery.read(self.mmio, self.vram)
                self.gc_info = discovery.read_gc_info(self.mmio, self.vram)
            self.regs = ip.RegisterMap(self.blocks)
            iov = self.mmio.read32(4 * self.regs.address("NBIF", "RCC_DEV0_EPF0_RCC_IOV_FUNC_IDENTIFIER"))
            if iov & 1:
                raise VirtualFunction(f"{pci.name} is an SR-IOV virtual function (RCC_IOV_FUNC_IDENTIFIER "
                                      f"{iov:#x}): AM drives the physical function only")
            reset = os.environ.get("AM_RESET") == "1" if reset is None else reset
            marker = self.mmio.read32(4 * self.regs.address("GC", "SCRATCH_REG7"))
            self.partial = marker == AM_MARKER and not reset  # up already: bring-up resumes, not restarts
            self.smu = SMU(self.mmio, self.regs)
            with self.step("SMU", "firmware version"):
                self.smu_version = self.smu.version()
            family = _ipmaps.family(self.gc_version)
            if family is None:
                raise ip.UnsupportedGPU(f"GC {'.'.join(map(str, self.gc_version))}: AM drives GC 11, 12, 9.4 and "
                                        "9.5")
        except BaseException:
            hal.close(self.lock)
            raise
        self.family = family
        self.reg = ip.Registers(self.mmio, self.regs)

    @contextlib.contextmanager
    def step(self, block: str, what: str):
        """A bring-up step: an error in it says which GPU, block and step (its type and details unchanged)."""
        try:
            yield
        except Error as e:
            e.args = (f"{self.pci.name}: {block}: {what}: {e}",)
            raise

    def boot(self) -> None:
        """Bring the GPU up to running queues (or, on a partial boot, set up anew what a process owns): each IP
        block's init in amdgpu's order; the PSP's firmware loads between IH and GFX, unless a partial boot keeps
        them."""
        memory = np.frombuffer(self.vram.memory, np.uint8)
        self.allocator = Allocator(0, self.vram_size - RESERVED, pci=self.pci)
        ring = self.allocator.alloc(ih.RING_BYTES)
        self.nbio = NBIO(self.reg)
        self.gmc = GMC(self.reg, memory, self.allocator, self.family, self.fb_base)
        self.ih = ih.IH(self.reg, memory, ring, self.fb_base + ring,
                        lambda: self.pci.sync_for_cpu(0, ring, ih.RING_BYTES))
        self.gfx, self.sdma = GFX(self.reg, self.family), SDMA(self.reg, self.family)
        self.blocks_up: list[ip.BlockDriver] = []
        self._init("NBIO", "HDP flush remap", self.nbio)
        self._init("GMC", "page tables and apertures", self.gmc)
        self._init("IH", "interrupt ring", self.ih)
        if not self.partial or not self.firmware_alive():
            self.load_firmware()
        self._init("GFX", "MEC start", self.gfx)
        self._init("SDMA", "engine start", self.sdma)
        self.reg.write("GC", "SCRATCH_REG7", AM_MARKER)

    def _init(self, name: str, what: str, block: ip.BlockDriver) -> None:
        with self.step(name, what):
            block.init()
        self.blocks_up.append(block)

    def load_firmware(self) -> None:
        """The PSP's bootloader stages and sOS, then its ring, the TMR and every IP's firmware (MP0 13.x: the PSP
        14.x of GC 12 is not driven yet, its engines run on what the board has)."""
        if self.regs.ip("MP0").version[0] != 13:
            return
        with self.step("PSP", "bootloader and sOS"):
            psp, sos = self._psp()
            psp.boot(sos)
        with self.step("PSP", "ring, TMR and firmware loads"):
            ring = self.vram_size - PSP_RING_BELOW_TOP
            tmr = self.vram_size - RESERVED
            loads = firmware.ucodes(self.gc_version, self.regs.ip("SDMA0").version, self.regs.ip("MP1").version)
            size = psp.start(sos, loads, RingMemory(self.fb_base, ring, ring + 4096, ring + 8192), tmr,
                             RESERVED - PSP_STAGING_BELOW_TOP)
        self.reg.write("GC", TMR_SIZE, size)

    def firmware_alive(self) -> bool:
        """Whether the firmware a partial boot keeps is still running (the PSP's sOS: a reset since the last
        bring-up kills it, whatever SCRATCH_REG7 says)."""
        if self.regs.ip("MP0").version[0] != 13:
            return True
        return PSP(self.mmio, self.vram, self.regs, self.vram_size - PSP_STAGING_BELOW_TOP, self.fb_base).sos_alive()

    def _psp(self) -> tuple[PSP, firmware.Firmware]:
        major, minor, rev = self.regs.ip("MP0").version
        psp = PSP(self.mmio, self.vram, self.regs, self.vram_size - PSP_STAGING_BELOW_TOP, self.fb_base)
        return psp, firmware.load(f"psp_{major}_{minor}_{rev}_sos")

    def boot_psp(self) -> int:
        """The PSP's bootloader stages and its sOS, from the SOS firmware of this GPU's MP0 version; the sOS
        version."""
        psp, sos = self._psp()
        return psp.boot(sos)

    def metrics(self) -> dict[str, int | float]:
        return read_metrics(self.smu, self.vram, self.reg)

    def account(self) -> None:
        """Publish how much VRAM the allocator has handed out (for am_smi, in another process)."""
        self.reg.write("GC", VRAM_USED, self.allocator.used_bytes >> 20)

    @property
    def fb_base(self) -> int:
        return fb_base(self.reg)

    @property
    def vram_size(self) -> int:
        return vram_size(self.mmio)

    @property
    def gc_version(self) -> tuple[int, int, int]:
        return self.regs.ip("GC").version

    def close(self) -> None:
        """Take the blocks this process brought up down again, last first (the firmware stays for a partial boot
        of the next driver), then let the GPU go."""
        try:
            for block in reversed(getattr(self, "blocks_up", [])):
                block.fini()
            if hasattr(self, "allocator"):
                self.reg.write("GC", VRAM_USED, 0)  # no process owns VRAM once the driver lets the GPU go
        finally:
            self.pci.close()
            self.hal.close(self.lock)


def vram_size(mmio) -> int:
    """The VRAM's size in bytes (NBIO's RCC_CONFIG_MEMSIZE, in MiB)."""
    return mmio.read32(4 * discovery.RCC_CONFIG_MEMSIZE) << 20


def fb_base(regs: ip.Registers) -> int:
    """Where VRAM starts in the GPU's MC address space (the VBIOS sets the hubs' FB_LOCATION_BASE)."""
    hub, prefix = _ipmaps.FB_LOCATION[_ipmaps.family(regs.map.ip("GC").version)][1]
    return regs.read(hub, prefix + "BASE") << 24


def read_metrics(smu: SMU, vram, regs: ip.Registers) -> dict[str, int | float]:
    """The SMU's metrics, through the buffer AM keeps for them just below the discovery table at the top of VRAM
    (the same for the driver and for a monitor in another process)."""
    offset = vram_size(regs.mmio) - METRICS_BELOW_TOP
    return smu.metrics(vram, offset, fb_base(regs) + offset)
