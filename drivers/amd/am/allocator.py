"""AM's VRAM allocator: first fit over a free list kept sorted by address, neighbours merged on free. Each range it
hands out is one the CPU reaches through BAR0, so the PCI function hears of it (share/unshare: a remote one keeps
a copy of exactly those ranges)."""

from __future__ import annotations

import bisect

from usergpu.drivers.pci import PCIDevice
from usergpu.errors import Error


class OutOfMemory(Error):
    """No free range of VRAM is large enough."""


class Allocator:
    def __init__(self, base: int, size: int, align: int = 4096, pci: PCIDevice | None = None):
        self.base, self.size, self.align, self.pci = base, size, align, pci
        self.free_ranges: list[tuple[int, int]] = [(base, size)]  # (start, size), sorted, never adjacent
        self.used: dict[int, int] = {}  # start -> size

    def alloc(self, size: int, align: int | None = None) -> int:
        align = max(align or self.align, self.align)
        size = -(-size // self.align) * self.align
        for i, (start, free) in enumerate(self.free_ranges):
            at = -(-start // align) * align
            if at + size <= start + free:
                del self.free_ranges[i]
                rest = [(start, at - start), (at + size, start + free - at - size)]
                for piece in reversed([r for r in rest if r[1]]):
                    self.free_ranges.insert(i, piece)
                self.used[at] = size
                if self.pci is not None:
                    self.pci.share(0, at, size)
                return at
        raise OutOfMemory(f"VRAM: no free {size:#x} bytes ({align:#x}-aligned) in [{self.base:#x}, "
                          f"{self.base + self.size:#x}): {self.used_bytes:#x} of {self.size:#x} bytes in use")

    def free(self, start: int) -> None:
        size = self.used.pop(start)
        if self.pci is not None:
            self.pci.unshare(0, start)
        i = bisect.bisect(self.free_ranges, (start, size))
        self.free_ranges.insert(i, (start, size))
        for j in (i, i - 1):  # merge with the next range, then the previous one
            if 0 <= j < len(self.free_ranges) - 1:
                (a, n), (b, m) = self.free_ranges[j], self.free_ranges[j + 1]
                if a + n == b:
                    self.free_ranges[j : j + 2] = [(a, n + m)]

    @property
    def used_bytes(self) -> int:
        return sum(self.used.values())
