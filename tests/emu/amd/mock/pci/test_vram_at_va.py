"""VRAM shown at its GPU virtual addresses in the range a driver reserved (tinygrad's AM mock contract): a board's
VRAM runs appear there, writable both ways, and leave again with their PTEs; nothing the driver mapped or unmapped
itself is replaced, and a hole the driver made is filled only while nothing else took it."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

from usergpu.emu.amd.mock.pci.machine import machine
from usergpu.emu.amd.mock.pci.vram_at_va import VRAMAtVA
from usergpu.hostmem import (
    MAP_ANONYMOUS,
    MAP_FIXED,
    MAP_NORESERVE,
    MAP_PRIVATE,
    MAP_SHARED,
    PAGE,
    PROT_NONE,
    PROT_READ,
    PROT_WRITE,
    os_mmap,
    os_munmap,
    view,
)

PAGES = 16


@pytest.fixture
def vram():
    """A 64 KiB VRAM (memfd), each page filled with its number, and its CPU view."""
    fd = os.memfd_create("vram")
    os.ftruncate(fd, PAGES * PAGE)
    at = os_mmap(0, PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
    cpu = np.frombuffer(view(at, PAGES * PAGE), np.uint8)
    cpu[:] = np.repeat(np.arange(PAGES, dtype=np.uint8), PAGE)
    yield fd, cpu
    os_munmap(at, PAGES * PAGE)
    os.close(fd)


@pytest.fixture
def window():
    """A driver's reservation of 16 pages (PROT_NONE), told to a VRAMAtVA, and that VRAMAtVA."""
    w = os_mmap(0, PAGES * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    shown = VRAMAtVA()
    shown.mapped(w, PAGES * PAGE, reserves=True)
    yield w, shown
    os_munmap(w, PAGES * PAGE)


def page(address: int) -> int:
    return ctypes.c_uint8.from_address(address).value


def protection(address: int) -> str:
    """The permissions /proc/self/maps gives the page at address ('' where nothing is mapped)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= address < hi:
                return line.split()[1]
    return ""


def test_vram_shows_at_its_va_and_leaves_with_its_ptes(vram, window):
    fd, cpu = vram
    w, shown = window
    shown.show("board", fd, [[w + PAGE, 3 * PAGE, 2 * PAGE], [w - PAGE, 0, PAGE]])  # the second outside the window
    assert [page(w + PAGE), page(w + 2 * PAGE)] == [3, 4]
    ctypes.c_uint8.from_address(w + PAGE).value = 0xAB
    assert cpu[3 * PAGE] == 0xAB  # the CPU's store is the VRAM's
    cpu[4 * PAGE] = 0xCD
    assert page(w + 2 * PAGE) == 0xCD
    assert protection(w) == "---p" and protection(w + 3 * PAGE) == "---p"
    shown.show("board", fd, [[w + 2 * PAGE, 7 * PAGE, PAGE]])  # one page moved to other VRAM, one unmapped
    assert protection(w + PAGE) == "---p" and page(w + 2 * PAGE) == 7
    shown.show("board", fd, [])
    assert protection(w + 2 * PAGE) == "---p"


def test_what_the_driver_mapped_itself_is_never_replaced(vram, window):
    fd, _ = vram
    w, shown = window
    own = os_mmap(w, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
    shown.mapped(own, PAGE, reserves=False)
    ctypes.c_uint8.from_address(own).value = 0x5A
    shown.show("board", fd, [[w, 0, 2 * PAGE]])
    assert page(w) == 0x5A and page(w + PAGE) == 1


def test_a_hole_the_driver_unmapped_is_filled_only_while_free(vram, window):
    fd, _ = vram
    w, shown = window
    shown.show("board", fd, [[w, 2 * PAGE, 2 * PAGE]])
    os_munmap(w, 2 * PAGE)  # tinygrad's free of a cpu_access VRAM buffer munmaps its GPU address
    shown.unmapped(w, 2 * PAGE)
    shown.show("board", fd, [])
    assert protection(w) == ""  # the driver's hole stays a hole
    shown.show("board", fd, [[w, 5 * PAGE, PAGE]])  # the address reused for another buffer
    assert page(w) == 5
    other = os_mmap(w + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
    ctypes.c_uint8.from_address(other).value = 0x77  # something else took the rest of the hole, unannounced
    shown.show("board", fd, [[w, 5 * PAGE, PAGE], [w + PAGE, 9 * PAGE, PAGE]])
    assert page(w + PAGE) == 0x77


def test_a_pci_machine_learns_reservations_through_its_hal(tmp_path, monkeypatch):
    hal = machine("gfx942", directory=tmp_path)
    w = hal.mmap(-1, PAGES * PAGE, 0, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
    try:
        assert hal.host.vram_at_va.windows == [[w, w + PAGES * PAGE]]
        hal.host.remapped(hal.boards[0], [[w, 0x1000, PAGE]])
        assert page(w) == int(hal.boards[0].vram[0x1000])
    finally:
        hal.munmap(w, PAGES * PAGE)
    assert hal.host.vram_at_va.owned == [] and hal.host.vram_at_va.shown == {id(hal.boards[0]): set()}
    monkeypatch.setenv("MOCKPCI_VRAM_AT_VA", "0")
    assert machine("gfx942", directory=tmp_path).host.vram_at_va is None
