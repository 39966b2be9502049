"""A mock AMD GPU as a PCI function (MOCKPCI+AMD): VRAM in BAR0 (sparse shared memory, the whole of it visible, as
with resizable BAR), doorbells in BAR2, registers in BAR5. At power-on its VRAM holds the IP discovery table at
the top (discovery.py) and NBIO's RCC_CONFIG_MEMSIZE says the VRAM size in MiB, as amdgpu expects to find them.

Registers are kept per dword address; IP-block models (QEMU-style callbacks) take over their blocks' ranges as
they are added."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from usergpu.autogen import _ipmaps
from usergpu.emu.amd.mock import discovery
from usergpu.emu.amd.mock.pci_function import PCIFunction
from usergpu.emu.amd.mock.psp import MockPSP
from usergpu.emu.amd.mock.smu import MockSMU
from usergpu.hostmem import MAP_SHARED, PROT_READ, PROT_WRITE, os_mmap, view

RCC_CONFIG_MEMSIZE = 0xDE3  # NBIO's dword (amdgpu_discovery.c): VRAM size in MiB
# arch -> (PCI device id, VRAM bytes)
ARCHS = {"gfx1100": (0x744C, 24 << 30), "gfx1200": (0x7590, 8 << 30)}
DOORBELLS, MMIO = 2 << 20, 1 << 20


class MockPCIGPU(PCIFunction):
    def __init__(self, arch: str = "gfx1100"):
        device, vram = ARCHS[arch]
        super().__init__({0: (0x80_0000_0000, vram, True, True), 2: (0x7F_F000_0000, DOORBELLS, True, True),
                          5: (0xFCE0_0000, MMIO, False, False)}, (0x1002, device, 0x030000 << 8 | 0xC8, 0x0E3B))
        self.arch, self.vram_size = arch, vram
        self.memfd = os.memfd_create(f"mockpci-{arch}-vram")
        os.ftruncate(self.memfd, vram)  # sparse: pages exist once written
        self.vram_address = os_mmap(0, vram, PROT_READ | PROT_WRITE, MAP_SHARED, self.memfd, 0)
        self.vram = np.frombuffer(view(self.vram_address, vram), np.uint8)
        self.regs: dict[int, int] = {RCC_CONFIG_MEMSIZE: vram >> 20}
        self.on_write: dict[int, Callable[[int], None]] = {}  # dword address -> the model a write there runs
        faults = set(filter(None, os.environ.get("MOCKPCI_FAULT", "").split(",")))
        mailbox = (self.address("MP1", f"MP1_SMN_C2PMSG_{n}") for n in (66, 82, 90))
        self.smu = MockSMU(self, *mailbox, silent="smu-silent" in faults)
        self.psp = None  # MP0 13.x only so far (Navi31); 14.x's bootloader is not modelled yet
        if arch == "gfx1100":
            bootloader = (self.address("MP0", f"MP0_SMN_C2PMSG_{n}") for n in (35, 36, 58, 81))
            self.psp = MockPSP(self, *bootloader, never_ready="psp-never-ready" in faults)
        blob = discovery.table(arch)
        top = vram - discovery.DISCOVERY_TMR_OFFSET
        self.vram[top : top + len(blob)] = np.frombuffer(blob, np.uint8)

    def address(self, block: str, name: str) -> int:
        """Where this GPU has one of its registers (dword): the block's base from its discovery table."""
        _, _, version, bases = next(ip for ip in discovery.IPS[self.arch] if ip[0] == block)
        return _ipmaps.address(block, version, bases, name)

    def bar_memory(self, bar: int) -> int | None:
        """VRAM is plain memory: a native mapping of BAR0 maps it directly."""
        return self.vram_address if bar == 0 else None

    def bar_read(self, bar: int, offset: int) -> int:
        if bar == 0:
            return int(self.vram[offset : offset + 4].view(np.uint32)[0])
        return self.regs.get(offset // 4, 0) if bar == 5 else 0

    def bar_write(self, bar: int, offset: int, value: int) -> None:
        if bar == 0:
            self.vram[offset : offset + 4].view(np.uint32)[0] = value
        elif bar == 5:
            self.regs[offset // 4] = value
            if offset // 4 in self.on_write:
                self.on_write[offset // 4](value)
