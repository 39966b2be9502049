"""GPU virtual memory for the emulator: host byte arrays mapped at GPU addresses, every access bounds-checked.

Addresses come from a bump allocator with an unmapped guard gap after each mapping, so an access one past a
buffer's end faults instead of reading its neighbour.
"""

from __future__ import annotations

import numpy as np

BASE = 0x7F00_0000_0000  # where the allocator starts: well away from 0, like a real GPU VA space
GUARD = 1 << 16


class MemoryFault(Exception):
    """Raised inside the executor; it adds the kernel, wave and PC and raises usergpu.GPUFault."""

    def __init__(self, address: int, access: str, why: str = "not mapped"):
        self.address, self.access, self.why = address, access, why
        super().__init__(f"{access} of {address:#x}: {why}")


class Memory:
    def __init__(self) -> None:
        self._bases: list[int] = []
        self._bufs: list[np.ndarray] = []
        self._next = BASE

    def map(self, data: np.ndarray | int, align: int = 256) -> int:
        """Map a host array (shared: the GPU's writes land in it) or a zeroed block of n bytes; its address."""
        buf = np.zeros(data, np.uint8) if isinstance(data, int) else np.ascontiguousarray(data).reshape(-1).view(
            np.uint8)
        addr = -(-self._next // align) * align
        self._bases.append(addr)
        self._bufs.append(buf)
        self._next = addr + max(len(buf), 1) + GUARD
        return addr

    def _locate(self, addr: np.ndarray, nbytes: int, access: str) -> np.ndarray:
        """The mapping index of each address, checking the whole access lies inside it."""
        bases = np.asarray(self._bases, np.uint64)
        idx = np.searchsorted(bases, addr, side="right").astype(np.int64) - 1
        ok = idx >= 0
        ends = np.asarray([b + len(buf) for b, buf in zip(self._bases, self._bufs, strict=True)], np.uint64)
        ok[ok] &= addr[ok] + np.uint64(nbytes) <= ends[idx[ok]]
        if not ok.all():
            bad = int(addr[~ok][0])
            raise MemoryFault(bad, access, "not mapped" if idx[~ok][0] < 0 or bad >= ends[idx[~ok][0]]
                              else f"{nbytes}-byte access runs past the end of its buffer")
        return idx

    def read(self, addr: np.ndarray, nbytes: int) -> np.ndarray:
        """Bytes at each address: shape (len(addr), nbytes)."""
        addr = np.asarray(addr, np.uint64).reshape(-1)
        out = np.empty((len(addr), nbytes), np.uint8)
        if not len(addr):
            return out
        idx = self._locate(addr, nbytes, "read")
        for i in np.unique(idx):
            sel = idx == i
            off = (addr[sel] - np.uint64(self._bases[i])).astype(np.int64)
            out[sel] = self._bufs[i][off[:, None] + np.arange(nbytes)]
        return out

    def write(self, addr: np.ndarray, data: np.ndarray) -> None:
        """Store data (shape (len(addr), nbytes)) at each address; later lanes win where addresses repeat."""
        addr = np.asarray(addr, np.uint64).reshape(-1)
        if not len(addr):
            return
        nbytes = data.shape[1]
        idx = self._locate(addr, nbytes, "write")
        for i in np.unique(idx):
            sel = idx == i
            off = (addr[sel] - np.uint64(self._bases[i])).astype(np.int64)
            self._bufs[i][off[:, None] + np.arange(nbytes)] = data[sel]
