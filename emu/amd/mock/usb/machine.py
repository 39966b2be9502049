"""Machines with mock GPU boards in external USB enclosures (MOCKUSB+AMD): each board is the register-level model
MOCKPCI+AMD has (MockPCIGPU), at the end of an ASM2464PD enclosure's PCIe hierarchy (pcie_hierarchy.py) behind its
own mock bridge running the custom firmware (asm24.py); the bridges are the devices of the machine's USB bus, board
n on root hub port n + 1. The boards' state lives in MOCKPCI_DIR/<arch>-usb, shared by every process that asks for
the machine, as MOCKPCI+AMD's is: a board one process booted, the next one finds booted. The bridges' own state
(bus numbers, windows, XDATA) is this process's, as an enclosure's is lost with the cable."""

from __future__ import annotations

from pathlib import Path

from usergpu.emu.amd.mock.pci.board import MockPCIGPU
from usergpu.emu.amd.mock.pci.machine import root
from usergpu.emu.amd.mock.usb.asm24 import ASM24Backend
from usergpu.emu.amd.mock.usb.bus import USBBus
from usergpu.emu.amd.mock.usb.pcie_hierarchy import Hierarchy, enclosure_bridges
from usergpu.emu.mock.hal import MockHAL


def folder(arch: str) -> Path:
    return root() / f"{arch}-usb"


def machine(arch: str, count: int = 1) -> MockHAL:
    """The HAL of the machine with count boards of arch, each behind its own USB bridge."""
    d = folder(arch)
    d.mkdir(parents=True, exist_ok=True)
    hal = MockHAL(d)
    hal.boards = [MockPCIGPU(arch, d / "boards" / f"usb-{n}") for n in range(count)]
    hal.install_usb(USBBus([ASM24Backend(Hierarchy(enclosure_bridges(), board), port=n + 1)
                            for n, board in enumerate(hal.boards)]))
    return hal
