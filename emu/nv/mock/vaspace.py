"""A GPU virtual address space of the mock NVIDIA GPU (a FERMI_VASPACE_A object): the memory objects' host pages
mapped at GPU addresses, shared with whoever else maps them (the CPU, the other GPUs' VA spaces). The engines read
and write it here; an access may span adjacent mappings, as it may span pages on hardware, and an access that meets
an unmapped address raises MemoryFault (the channel turns it into an MMU fault)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from usergpu.emu.memory import Memory, MemoryFault


class VASpace:
    """`memory` is what the PTX emulator runs on; `images` holds the cubin images the compute engine loaded in
    this VA space, by (mapping base, bytes), each with what it mapped for itself (its .global variables)."""

    def __init__(self) -> None:
        self.memory = Memory()
        self.images: dict[tuple[int, bytes], Any] = {}
        self.last_image: dict[int, tuple[bytes, Any]] = {}  # base -> the (bytes, image) launched from there last
        self.system: set[int] = set()  # the bases of mappings of system memory (reached over the host bus)

    def map(self, va: int, pages: np.ndarray, system: bool = False) -> None:
        """Map a memory object's host pages (a uint8 array, shared, not copied) at va; system: system memory."""
        self.memory.map_at(va, pages)
        if system:
            self.system.add(va)

    def unmap(self, va: int) -> None:
        """Remove the mapping that starts at va (and what an image loaded from it mapped)."""
        self.memory.unmap(va)
        self.system.discard(va)
        self.last_image.pop(va, None)
        for key in [k for k in self.images if k[0] == va]:
            self.images.pop(key).unload(self.memory)

    def over_bus(self, va: int) -> bool:
        """Whether va is system memory (False where nothing is mapped)."""
        try:
            return self.memory.mapping(va)[0] in self.system
        except MemoryFault:
            return False

    def _views(self, va: int, n: int, access: str) -> Iterator[np.ndarray]:
        """The host bytes of [va, va + n), a view per mapping they lie in."""
        while n > 0:
            base, buf = self.memory.mapping(va, access)
            take = min(n, base + len(buf) - va)
            yield buf[va - base:va - base + take]
            va, n = va + take, n - take

    def read(self, va: int, n: int) -> np.ndarray:
        """A copy of n bytes at va."""
        if n > 0:
            base, buf = self.memory.mapping(va, "read")
            if va + n <= base + len(buf):  # inside one mapping, as nearly every access is
                return buf[va - base:va - base + n].copy()
        views = list(self._views(va, n, "read"))
        return views[0].copy() if len(views) == 1 else np.concatenate(views) if views else np.zeros(0, np.uint8)

    def write(self, va: int, data: np.ndarray | bytes) -> None:
        data = np.frombuffer(data, np.uint8) if isinstance(data, bytes | bytearray) else data.reshape(-1).view(np.uint8)
        if len(data):
            base, buf = self.memory.mapping(va, "write")
            if va + len(data) <= base + len(buf):
                buf[va - base:va - base + len(data)] = data
                return
        done = 0
        for view in self._views(va, len(data), "write"):
            view[:] = data[done:done + len(view)]
            done += len(view)

    def copy(self, dst: int, src: int, n: int) -> None:
        """n bytes from src to dst (as if read whole first: overlapping ranges copy what src held)."""
        self.write(dst, self.read(src, n))

    def load(self, va: int, nbytes: int) -> int:
        """An unsigned little-endian integer."""
        return int.from_bytes(self.read(va, nbytes).tobytes(), "little")

    def store(self, va: int, nbytes: int, value: int) -> None:
        self.write(va, (value & ((1 << 8 * nbytes) - 1)).to_bytes(nbytes, "little"))
