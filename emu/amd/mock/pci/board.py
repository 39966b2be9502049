"""A mock AMD GPU as a PCI function (MOCKPCI+AMD): VRAM in BAR0 (sparse shared memory, the whole of it visible, as
with resizable BAR), doorbells in BAR2, registers in BAR5. At power-on its VRAM holds the IP discovery table at
the top (discovery.py), NBIO's RCC_CONFIG_MEMSIZE says the VRAM size in MiB and the hubs' FB_LOCATION registers
say where VRAM sits in the GPU's MC address space, as amdgpu expects to find them.

The board's state — VRAM, the register file, the engines' activity — is memory shared through files: a board
opened on a state directory another process already powered is the same board (its VRAM, registers and SMU), as a
second process mapping a real GPU's BARs sees what the first one did. Without a directory the board is this
process's own (memfds). IP-block models (QEMU-style callbacks) take over writes to their registers."""

from __future__ import annotations

import fcntl
import os
import weakref
from collections.abc import Callable
from pathlib import Path

import numpy as np

from usergpu.emu.amd.mock import discovery
from usergpu.emu.amd.mock.cdna import PARTS
from usergpu.emu.amd.mock.gpu import GPU
from usergpu.emu.amd.mock.hdp import HDP
from usergpu.emu.amd.mock.pci import activity
from usergpu.emu.amd.mock.pci.cp import CommandProcessor
from usergpu.emu.amd.mock.pci.function import PCIFunction
from usergpu.emu.amd.mock.pci.gmc import MMU
from usergpu.emu.amd.mock.pci.ih import IH
from usergpu.emu.amd.mock.pci.psp import MockPSP
from usergpu.emu.amd.mock.pci.rlc import RLC
from usergpu.emu.amd.mock.pci.smn import SMN
from usergpu.emu.amd.mock.pci.smu import MockSMU
from usergpu.emu.amd.mock.pci.smu_v13_0_6 import MockSMU13_0_6
from usergpu.emu.amd.mock.pci.vfio import IOMMU
from usergpu.hostmem import MAP_SHARED, PROT_READ, PROT_WRITE, os_mmap, view
from usergpu.isa.amd.hw import ipmaps as _ipmaps
from usergpu.isa.amd.hw import psp as _psp

RCC_CONFIG_MEMSIZE = 0xDE3  # NBIO's dword (amdgpu_discovery.c): VRAM size in MiB
# arch -> (PCI device id, VRAM bytes): Navi31, Navi44, and the CDNA parts of cdna.py (MI300X, MI350X)
ARCHS = {"gfx1100": (0x744C, 24 << 30), "gfx1200": (0x7590, 8 << 30),
         **{arch: (part.device_id, part.vram) for arch, part in PARTS.items()}}
CDNA = tuple(PARTS)  # (SMU 13.0.6's interface, NBIO's SMN index/data pair)
DOORBELLS, MMIO = 2 << 20, 1 << 20  # the doorbell and register BARs' sizes
FB_BASE = 0x80_0000_0000  # where the VBIOS places VRAM in the MC address space (FB_LOCATION_BASE << 24)
FB_LOCATION_SHIFT = 24  # FB_LOCATION_BASE/TOP count 16 MiB units (mmhub_v3_0_get_fb_location: << 24)
MEMSIZE_SHIFT = 20  # RCC_CONFIG_MEMSIZE counts MiB
# the BARs as amdgpu finds them (the VRAM aperture in BAR 0, doorbells in BAR 2, registers in BAR 5) and the bus
# addresses the board's are assigned: VRAM and doorbells 64-bit prefetchable high up, the registers below 4 GiB
VRAM_BAR, DOORBELL_BAR, MMIO_BAR = 0, 2, 5
VRAM_BAR_BASE, DOORBELL_BAR_BASE, MMIO_BAR_BASE = 0x80_0000_0000, 0x7F_F000_0000, 0xFCE0_0000
PCI_VENDOR_ATI = 0x1002  # PCI_VENDOR_ID_ATI (pci_ids.h): AMD's GPUs, as vendor and as subsystem vendor
PCI_CLASS_DISPLAY_VGA = 0x030000  # class code (pci_ids.h PCI_CLASS_DISPLAY_VGA << 8): a VGA-compatible display
PCI_CLASS_ACCELERATOR_PROCESSING = 0x120000  # (pci_ids.h 0x1200 << 8): what the Instinct boards are
PCI_REVISION = 0xC8  # the RX 7900 XTX's revision (lspci: rev c8), which both RDNA mock boards report
PCI_SUBSYSTEM = 0x0E3B  # the subsystem id of AMD's own RX 7900 XTX board (lspci -nn: 1002:0e3b)
# arch -> (class code | revision, subsystem id): the CDNA boards are OAM modules, revision 0, subsystem their device
IDENTITY = {"gfx1100": (PCI_CLASS_DISPLAY_VGA << 8 | PCI_REVISION, PCI_SUBSYSTEM),
            "gfx1200": (PCI_CLASS_DISPLAY_VGA << 8 | PCI_REVISION, PCI_SUBSYSTEM),
            **{arch: (PCI_CLASS_ACCELERATOR_PROCESSING << 8, part.device_id) for arch, part in PARTS.items()}}
# name -> size (None: the VRAM's); "firmware": words the models' firmware keeps to itself (the SMU's table address)
STATE_FILES = {"vram": None, "mmio": MMIO, "activity": 8 * activity.WORDS, "firmware": 4096}


class MockPCIGPU(PCIFunction):
    def __init__(self, arch: str = "gfx1100", state: str | os.PathLike | None = None):
        """state: the directory the board's shared state lives in (made and powered on if new); None: private."""
        device, vram = ARCHS[arch]
        super().__init__({VRAM_BAR: (VRAM_BAR_BASE, vram, True, True),
                          DOORBELL_BAR: (DOORBELL_BAR_BASE, DOORBELLS, True, True),
                          MMIO_BAR: (MMIO_BAR_BASE, MMIO, False, False)},
                         (PCI_VENDOR_ATI, device, *IDENTITY[arch]))
        self.arch, self.vram_size = arch, vram
        fds, fresh, guard = _state(arch, vram, state)
        self.memfd = fds["vram"]
        self.vram_address = os_mmap(0, vram, PROT_READ | PROT_WRITE, MAP_SHARED, self.memfd, 0)
        self.vram = np.frombuffer(view(self.vram_address, vram), np.uint8)
        self.regs = self._shared(fds["mmio"], MMIO, np.uint32)  # the register file, by dword address
        self.activity = activity.Activity(self._shared(fds["activity"], STATE_FILES["activity"], np.int64))
        self.firmware = self._shared(fds["firmware"], STATE_FILES["firmware"], np.int64)
        for name in ("mmio", "activity", "firmware"):
            os.close(fds[name])  # mapped: the mappings keep the memory
        weakref.finalize(self, os.close, self.memfd)  # VRAM's stays open while the board is: parts of it get mapped
        self.on_write: dict[int, Callable[[int], None]] = {}  # dword address -> the model a write there runs
        self.on_read: dict[int, Callable[[], None]] = {}  # dword address -> the model that updates it when read
        self.gpu = GPU(arch)  # the engines: the same CP, SDMA and emulator as the mock KFD's
        self.gpu.activity = self.activity
        self.iommu = IOMMU()  # what VFIO (or pagemap, host.py) maps of this process's memory for the board's DMA
        self.host = None  # the machine's host side (host.py), for a driver that maps the BARs itself
        faults = set(filter(None, os.environ.get("MOCKPCI_FAULT", "").split(",")))
        mailbox = (self.address("MP1", f"MP1_SMN_C2PMSG_{n}") for n in (66, 82, 90))
        self.smu = (MockSMU13_0_6 if arch in CDNA else MockSMU)(self, *mailbox, silent="smu-silent" in faults)
        self.psp = None  # MP0 13.x only so far (Navi31, MI300X, MI350X); 14.x's bootloader is not modelled yet
        if self.ip("MP0")[0][0] == 13:
            bootloader = (self.address("MP0", f"MP0_SMN_C2PMSG_{n}") for n in (35, 36, 58, 81))
            self.psp = MockPSP(self, *bootloader, never_ready="psp-never-ready" in faults)
        self.smn = SMN(self, MMIO_BAR, {_psp.MP1_PUB_SCRATCH0: lambda: self.smu.version}) if arch in CDNA else None
        self.mmu = MMU(self, self.gpu)
        self.cp = CommandProcessor(self, self.gpu)
        self.rlc = RLC(self)
        self.ih = IH(self, self.gpu, self.cp.run)
        self.hdp = HDP(self)
        if fresh:
            self.power_on()
        if guard is not None:
            os.close(guard)  # powered: other processes may open it now

    def _shared(self, fd: int, size: int, dtype) -> np.ndarray:
        return np.frombuffer(view(os_mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), size), dtype)

    def power_on(self) -> None:
        """What the board holds when power comes up: the discovery table, the straps the VBIOS sets, and each
        model's reset state."""
        self.regs[RCC_CONFIG_MEMSIZE] = self.vram_size >> MEMSIZE_SHIFT
        for hub in _ipmaps.FB_LOCATION[self.arch[:5]]:
            self.regs[self.address(hub[0], hub[1] + "BASE")] = FB_BASE >> FB_LOCATION_SHIFT
            self.regs[self.address(hub[0], hub[1] + "TOP")] = (FB_BASE + self.vram_size - 1) >> FB_LOCATION_SHIFT
        blob = discovery.table(self.arch)
        top = self.vram_size - discovery.DISCOVERY_TMR_OFFSET
        self.vram[top : top + len(blob)] = np.frombuffer(blob, np.uint8)
        for model in (self.smu, self.psp):
            if model is not None:
                model.power_on()

    def ip(self, block: str, instance: int = 0) -> tuple[tuple[int, int, int], tuple[int, ...]]:
        """The block's version and segment bases (of an instance of it) in this GPU's discovery table."""
        _, _, version, bases = next(ip for ip in discovery.IPS[self.arch] if ip[:2] == (block, instance))
        return version, bases

    def address(self, block: str, name: str, instance: int = 0) -> int:
        """Where this GPU has one of its registers (dword): the block's base from its discovery table."""
        return _ipmaps.address(block, *self.ip(block, instance), name)

    def table(self, block: str, name: str):
        """A register's generated description (fields) in this GPU's map of the block."""
        return _ipmaps.table(block, self.ip(block)[0], name)

    def mc_to_vram(self, address: int, size: int = 1) -> int:
        """The VRAM offset of an MC address in the FB aperture (what the PSP and SMU are given); ValueError outside
        it."""
        hub, prefix = _ipmaps.FB_LOCATION[self.arch[:5]][1]
        base = int(self.regs[self.address(hub, prefix + "BASE")]) << FB_LOCATION_SHIFT
        if not (base <= address and address + size <= base + self.vram_size):
            raise ValueError(f"MC address {address:#x} (+{size:#x}) is outside VRAM [{base:#x}, "
                             f"{base + self.vram_size:#x})")
        return address - base

    def bar_memory(self, bar: int) -> int | None:
        """VRAM is plain memory: a native mapping of BAR0 maps it directly."""
        return self.vram_address if bar == VRAM_BAR else None

    def bar_fd(self, bar: int) -> int | None:
        """The shared memory behind a BAR that is plain memory (a part of VRAM can be mapped from it)."""
        return self.memfd if bar == VRAM_BAR else None

    def bar_map(self, bar: int, length: int, offset: int, prot: int, flags: int, address: int) -> int | None:
        """The registers trapped, the doorbells watched (host.py)."""
        if self.host is None or bar not in (DOORBELL_BAR, MMIO_BAR):
            return None
        return self.host.map_bar(self, bar, bar == MMIO_BAR, length, offset, prot, flags, address)

    def bar_read(self, bar: int, offset: int) -> int:
        if bar == VRAM_BAR:
            return int(self.vram[offset : offset + 4].view(np.uint32)[0])
        if bar != MMIO_BAR:
            return 0
        if offset // 4 in self.on_read:
            self.on_read[offset // 4]()
        return int(self.regs[offset // 4])

    def bar_write(self, bar: int, offset: int, value: int) -> None:
        if bar == VRAM_BAR:
            self.vram[offset : offset + 4].view(np.uint32)[0] = value
        elif bar == DOORBELL_BAR:
            self.hdp.doorbell()
            self.cp.doorbell(offset // 4)
        elif bar == MMIO_BAR:
            self.regs[offset // 4] = value
            if offset // 4 in self.on_write:
                self.on_write[offset // 4](value)


def _state(arch: str, vram: int, state: str | os.PathLike | None) -> tuple[dict[str, int], bool, int | None]:
    """The file descriptors of the board's state, whether it is new (to be powered on) and the lock held on the
    directory until it is (None: private state)."""
    sizes = {name: vram if size is None else size for name, size in STATE_FILES.items()}
    if state is None:
        fds = {name: os.memfd_create(f"mockpci-{arch}-{name}") for name in sizes}
        for name, fd in fds.items():
            os.ftruncate(fd, sizes[name])  # sparse: pages exist once written
        return fds, True, None
    d = Path(state)
    d.mkdir(parents=True, exist_ok=True)
    guard = os.open(d / "board.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(guard, fcntl.LOCK_EX)  # one process powers a new board on; the others wait for it
    stamp = d / "arch"
    fresh = not stamp.exists()
    if not fresh and stamp.read_text() != arch:
        os.close(guard)
        raise ValueError(f"mock board state {d} is a {stamp.read_text()}, not a {arch}")
    fds = {name: os.open(d / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600) for name in sizes}
    if fresh:
        for name, fd in fds.items():
            os.ftruncate(fd, sizes[name])
        stamp.write_text(arch)
    return fds, fresh, guard
