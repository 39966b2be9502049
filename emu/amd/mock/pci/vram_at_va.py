"""VRAM shown at its GPU virtual addresses in the driver's process, as tinygrad's own AM mock shows it: the range AM
reserves for the GPU's address space (System.reserve_va: a PROT_NONE mapping) gets, after each TLB invalidation, the
VRAM the page tables map there, so a CPU store to a VRAM buffer's GPU address reaches the buffer (tinygrad's
test_hcq memsets `cpu_access` buffers at their `va_addr`). No board does this — with a large BAR, AM maps a
buffer's VRAM through the BAR somewhere else, and a store at its GPU address faults — but tinygrad's tests rely on it,
so a MOCKPCI machine does it too, in every range a driver in the process reserves through the machine's HAL
(MOCKPCI_VRAM_AT_VA=0: it does not). usergpu's own AM driver maps each VRAM object at its GPU address itself, so
nothing changes for it: its mappings are its own, never replaced.

Only what is the mock's is replaced: the reservation and its own mirrors. A range the driver mapped or unmapped
itself stays the driver's; a hole the driver unmapped inside its reservation is filled with MAP_FIXED_NOREPLACE,
which fails rather than replace whatever took the hole since."""

from __future__ import annotations

import errno
import os

from usergpu.hostmem import (
    MAP_ANONYMOUS,
    MAP_FIXED,
    MAP_NORESERVE,
    MAP_PRIVATE,
    MAP_SHARED,
    PROT_NONE,
    PROT_READ,
    PROT_WRITE,
    os_mmap,
    os_munmap,
    page_align,
)

MAP_FIXED_NOREPLACE = 0x100000  # (mman-common.h, Linux 4.17) place exactly there, EEXIST if anything is mapped
Piece = tuple[int, int, int]  # (va, VRAM offset, bytes) of VRAM shown at a virtual address


def enabled() -> bool:
    return os.environ.get("MOCKPCI_VRAM_AT_VA", "1") != "0"


class VRAMAtVA:
    """The driver's reservations and the VRAM each board shows in them."""

    def __init__(self):
        self.windows: list[list[int]] = []  # [lo, hi) the driver ever reserved: where VRAM may show
        self.owned: list[list[int]] = []  # [lo, hi) the mock may replace: the reservation still, or its mirrors
        self.shown: dict[int, set[Piece]] = {}  # id(board) -> the VRAM it shows

    def mapped(self, address: int, length: int, reserves: bool) -> None:
        """The driver mapped a range: reserving it (anonymous, PROT_NONE), or for its own use."""
        if reserves:
            for spans in (self.windows, self.owned):
                _add(spans, address, address + page_align(length))
        else:
            self.unmapped(address, length)

    def unmapped(self, address: int, length: int) -> None:
        """The driver unmapped (or mapped over) a range: it is the mock's no longer."""
        lo, hi = address, address + page_align(length)
        _cut(self.owned, lo, hi)
        for board, pieces in self.shown.items():
            self.shown[board] = {p for piece in pieces for p in _outside(piece, lo, hi)}

    def show(self, board: object, memfd: int, runs: list[list[int]]) -> None:
        """A board's page tables now map runs ([va, VRAM offset, bytes]): VRAM that left a virtual address gives it
        back to the reservation, VRAM that came shows there."""
        new = {(lo, at + lo - va, hi - lo) for va, at, size in runs for lo, hi in _within(self.windows, va, va + size)}
        old = self.shown.get(id(board), set())
        for va, _, size in old - new:
            gone = [[va, va + size]]
            for lo, _, n in new:
                _cut(gone, lo, lo + n)
            for lo, hi in gone:
                _map(lo, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0)
        shown = old & new
        for piece in new - old:
            shown |= self._map_piece(memfd, piece)
        self.shown[id(board)] = shown

    def _map_piece(self, memfd: int, piece: Piece) -> set[Piece]:
        """Show a piece: over the mock's own ranges in place, in holes only where nothing took them."""
        va, at, size = piece
        shown = set()
        mine = _within(self.owned, va, va + size)
        rest = [[va, va + size]]
        for lo, hi in mine:
            _cut(rest, lo, hi)
        for (lo, hi), flag in [*((m, MAP_FIXED) for m in mine), *((r, MAP_FIXED_NOREPLACE) for r in rest)]:
            if _map(lo, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED | flag, memfd, at + lo - va):
                _add(self.owned, lo, hi)
                shown.add((lo, at + lo - va, hi - lo))
        return shown


def _map(address: int, length: int, prot: int, flags: int, fd: int, offset: int) -> bool:
    """mmap exactly at address; False where MAP_FIXED_NOREPLACE found the range taken (or the kernel placed it
    elsewhere, as one without the flag does)."""
    try:
        got = os_mmap(address, length, prot, flags, fd, offset)
    except OSError as e:
        if e.errno == errno.EEXIST:
            return False
        raise
    if got != address:
        os_munmap(got, length)
        return False
    return True


def _add(spans: list[list[int]], lo: int, hi: int) -> None:
    """Add [lo, hi) to sorted disjoint spans, merging what touches it."""
    keep = [s for s in spans if s[1] < lo or s[0] > hi]
    for s in spans:
        if not (s[1] < lo or s[0] > hi):
            lo, hi = min(lo, s[0]), max(hi, s[1])
    spans[:] = sorted([*keep, [lo, hi]])


def _cut(spans: list[list[int]], lo: int, hi: int) -> None:
    """Remove [lo, hi) from spans."""
    spans[:] = [[a, b] for s0, s1 in spans for a, b in ((s0, min(s1, lo)), (max(s0, hi), s1)) if a < b]


def _within(spans: list[list[int]], lo: int, hi: int) -> list[list[int]]:
    """The parts of [lo, hi) inside spans."""
    return [[max(lo, a), min(hi, b)] for a, b in spans if a < hi and b > lo]


def _outside(piece: Piece, lo: int, hi: int) -> list[Piece]:
    """What is left of a piece outside [lo, hi)."""
    va, at, size = piece
    parts = [[va, va + size]]
    _cut(parts, lo, hi)
    return [(a, at + a - va, b - a) for a, b in parts]
