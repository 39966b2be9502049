"""A driver in this process that maps a mock board's BARs itself (tinygrad's AM on DEV=MOCKPCI+AMD): its register
BAR mapping reads and writes the board's registers through memoryviews, and /proc/self/pagemap hands out page
frames (the same ones each time, none for an unmapped page) that the boards' DMA reaches as the pages."""

from __future__ import annotations

import ctypes
import struct

import pytest

from usergpu.emu.amd.mock.pci.board import RCC_CONFIG_MEMSIZE
from usergpu.emu.amd.mock.pci.host import PM_PRESENT
from usergpu.emu.amd.mock.pci.machine import bus, machine
from usergpu.emu.mock import mmio_trap
from usergpu.hostmem import MAP_ANONYMOUS, MAP_PRIVATE, PAGE, PROT_READ, PROT_WRITE, os_mmap, os_munmap

DEVICE = f"/sys/bus/pci/devices/{bus(0)}"


@pytest.fixture
def hal(tmp_path):
    return machine("gfx942", directory=tmp_path)


def frames(hal, address: int, pages: int) -> list[int]:
    fd = hal.open("/proc/self/pagemap")
    raw = hal.pread(fd, 8 * pages, address // PAGE * 8)
    return list(struct.unpack(f"<{pages}Q", raw))


def test_pagemap_frames_are_stable_and_reach_the_pages(hal):
    address = os_mmap(0, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    try:
        entries = frames(hal, address, 3)
        assert all(e & PM_PRESENT for e in entries)
        pfns = [e & ((1 << 55) - 1) for e in entries]
        assert pfns == [pfns[0] + k for k in range(3)] and frames(hal, address, 3) == entries
        assert hal.boards[0].iommu.translate(pfns[1] * PAGE, PAGE) == address + PAGE
    finally:
        os_munmap(address, 3 * PAGE)
    assert frames(hal, address, 3) == [0, 0, 0]  # no longer mapped: not present


def test_the_register_bar_mapped_is_the_boards_registers(hal):
    board = hal.boards[0]
    fd = hal.open(f"{DEVICE}/resource5")
    size = 4 * PAGE
    address = hal.mmap(fd, size, 0)
    try:
        regs = memoryview((ctypes.c_uint8 * size).from_address(address)).cast("I")
        assert regs[RCC_CONFIG_MEMSIZE] == board.vram_size >> 20
        regs[0x100] = 0x1234
        assert int(board.regs[0x100]) == 0x1234
    finally:
        hal.munmap(address, size)
    assert not hal.host.registers and type(memoryview(b"x")) is mmio_trap._REAL  # untrapped with the munmap


def test_the_doorbell_bar_mapped_is_memory_the_agent_watches(hal):
    fd = hal.open(f"{DEVICE}/resource2")
    address = hal.mmap(fd, PAGE, 0)
    ctypes.c_uint64.from_address(address).value = 5  # a plain store: no queue listens, nothing runs
    assert hal.host.agent._thread is not None and not hal.host.rung()
    hal.munmap(address, PAGE)
    assert not hal.host.doorbells  # watched no more
