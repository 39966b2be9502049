"""A mock Navi31 board for the rescue tools: the GPU's PCI function (config space with sizable BARs), BAR5's SMUIO
ROM controller and PSP boot mailbox over a GD25LQ16E flash model, and enough VRAM in BAR0 to stage firmware
transfers. One board answers both ways a tool reaches a real one: PCIe requests from the mock USB bridge
(MOCKUSB+AMD) and the sysfs files of a native PCI function in a MockHAL (MOCKPCI+AMD).

The flash persists in the file MOCKFLASH_IMAGE names, so separate runs of a tool see one board; MOCKFLASH_FAULT
injects faults into the flash (see spiflash.py) and MOCKFLASH_GATED=1 boots the firmware, which takes the ROM_SW
engine. A power loss ends the run the way a pulled cable does: over USB the device disconnects; natively every
read returns all ones, as a function that fell off the bus does.
"""

from __future__ import annotations

import os
from pathlib import Path

from usergpu.emu.amd.mock.flash.psp_boot import PSPBoot
from usergpu.emu.amd.mock.flash.smuio_rom import SMUIORom
from usergpu.emu.amd.mock.flash.spiflash import PowerLoss, SPIFlash
from usergpu.emu.amd.mock.pci.function import PCIFunction, install_pci
from usergpu.emu.amd.mock.pci.pcie import Unplugged
from usergpu.emu.mock.hal import MockHAL

VENDOR, DEVICE, REVISION, CLASS = 0x1002, 0x744C, 0xC8, 0x030000  # Radeon RX 7900 XTX
STAGING = 1 << 20  # bytes of VRAM the model backs (the rest of BAR0 reads as zero)
# BAR n: (bus address, size, 64-bit, prefetchable); BAR2 holds doorbells, BAR5 the registers
BARS = {0: (0x10_0000_0000, 256 << 20, True, True), 2: (0x10_1000_0000, 2 << 20, True, True),
        5: (0xFCC0_0000, 1 << 20, False, False)}
SYSFS_ADDRESS = "0000:0b:00.0"


def default_image_path() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "usergpu" / "mockflash-navi31.bin"


class Navi31Board(PCIFunction):
    """The flash board: BAR5's ROM controller and PSP mailbox over the flash model, BAR0's staging VRAM."""

    def __init__(self, image: str | os.PathLike | None = None, fault: str | None = None, gated: bool | None = None):
        super().__init__(BARS, (VENDOR, DEVICE, CLASS << 8 | REVISION, 0x0E3B))
        env = os.environ
        path = Path(image or env.get("MOCKFLASH_IMAGE") or default_image_path())
        self.flash = SPIFlash(path, env.get("MOCKFLASH_FAULT", "") if fault is None else fault)
        self.vram = bytearray(STAGING)
        self.rom = SMUIORom(self.flash, env.get("MOCKFLASH_GATED") == "1" if gated is None else gated)
        self.psp = PSPBoot(self.flash, self.vram)

    def bar_read(self, bar: int, offset: int) -> int:
        try:
            if bar == 5:
                value = self.rom.read(offset)
                return (self.psp.read(offset) if value is None else value) or 0
            return int.from_bytes(self.vram[offset : offset + 4], "little") if offset < STAGING else 0
        except PowerLoss:
            self.dead = True
            raise Unplugged("power lost while the flash was busy") from None

    def bar_write(self, bar: int, offset: int, value: int) -> None:
        try:
            if bar == 5:
                if not self.rom.write(offset, value):
                    self.psp.write(offset, value)
            elif offset < STAGING:
                self.vram[offset : offset + 4] = value.to_bytes(4, "little")
        except PowerLoss:
            self.dead = True
            raise Unplugged("power lost while the flash was busy") from None

    def close(self) -> None:
        self.flash.close()


def install(hal: MockHAL, board: Navi31Board, address: str = SYSFS_ADDRESS) -> None:
    """The board as a native PCI function of the HAL."""
    install_pci(hal, board, address)


def board_hal(transport: str) -> MockHAL:
    """A mock HAL holding a fresh mock Navi31 board (its flash in $MOCKFLASH_IMAGE) on the transport: behind the
    mock USB bridge ("usb"), or as a native PCI function ("pci"). Its sysfs folder goes with it (or at exit)."""
    from usergpu.emu.amd.mock.usb.asm24 import ASM24Backend

    hal = MockHAL.temporary("amdflash-mock-")
    board = Navi31Board()
    if transport == "usb":
        hal.install_usb(ASM24Backend(board))
    else:
        install(hal, board)
    return hal
