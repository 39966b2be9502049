"""GPU virtual memory for the emulator: host byte arrays mapped at GPU addresses, every access bounds-checked.

`map` hands out addresses from a bump allocator with an unmapped guard gap after each mapping, so an access one
past a buffer's end faults instead of reading its neighbour; `map_at` places an array where the caller says (a
mock GPU's VRAM or a runtime's buffer at its own VA). Either way the array is shared: the GPU's writes land in it.
"""

from __future__ import annotations

import bisect

import numpy as np

from usergpu.errors import Error

BASE = 0x7F00_0000_0000  # where the allocator starts: well away from 0, like a real GPU VA space
GUARD = 1 << 16


class MemoryFault(Exception):
    """Raised inside the executor; it adds the kernel, wave and PC and raises usergpu.GPUFault."""

    def __init__(self, address: int, access: str, why: str = "not mapped"):
        self.address, self.access, self.why = address, access, why
        super().__init__(f"{access} of {address:#x}: {why}")


class MappingError(Error, ValueError):
    """A mapping that cannot be made or removed: overlapping ranges, or no mapping at the address given."""


def _host_bytes(data: np.ndarray | int) -> np.ndarray:
    """A host array's bytes (a view: shared with it), or a zeroed block of n bytes."""
    if isinstance(data, int):
        return np.zeros(data, np.uint8)
    return np.ascontiguousarray(data).reshape(-1).view(np.uint8)


class Memory:
    def __init__(self) -> None:
        self._bases: list[int] = []  # sorted
        self._bufs: list[np.ndarray] = []
        # the same as arrays, changed with them (a suite maps thousands of buffers: making these anew at each
        # change cost a launch more than it ran): base, end, host address of the bytes, writable
        self.table = {"base": np.zeros(0, np.uint64), "end": np.zeros(0, np.uint64),
                      "host": np.zeros(0, np.uint64), "writable": np.zeros(0, np.uint8)}
        self._next = BASE
        self._reindex()

    # ---- mapping -------------------------------------------------------------------------------------------
    def map(self, data: np.ndarray | int, align: int = 256) -> int:
        """Map a host array (shared: the GPU's writes land in it) or a zeroed block of n bytes; its address.
        The range and a guard gap after it stay clear of every other mapping."""
        buf = _host_bytes(data)
        size = max(len(buf), 1) + GUARD
        addr = -(-self._next // align) * align
        while (end := self._clash(addr, size)) is not None:
            addr = -(-(end + GUARD) // align) * align
        self._insert(addr, buf)
        self._next = addr + size
        return addr

    def map_at(self, address: int, data: np.ndarray | int) -> int:
        """Map a host array (shared, not copied) or a zeroed block of n bytes at a chosen GPU address."""
        buf = _host_bytes(data)
        i = bisect.bisect_right(self._bases, address)
        for j in (i - 1, i):  # the only neighbours that can overlap [address, address + len)
            if 0 <= j < len(self._bases):
                lo, hi = self._bases[j], self._bases[j] + len(self._bufs[j])
                if lo < address + max(len(buf), 1) and address < max(hi, lo + 1):
                    raise MappingError(f"cannot map [{address:#x}, {address + len(buf):#x}): it overlaps the "
                                       f"mapping [{lo:#x}, {hi:#x})")
        self._insert(address, buf)
        return address

    def unmap(self, address: int) -> None:
        """Remove the mapping that starts at address."""
        i = bisect.bisect_left(self._bases, address)
        if i == len(self._bases) or self._bases[i] != address:
            raise MappingError(f"no mapping starts at {address:#x}")
        del self._bases[i], self._bufs[i]
        self.table = {k: np.delete(a, i) for k, a in self.table.items()}
        self._reindex()

    def mapping(self, address: int, access: str = "read") -> tuple[int, np.ndarray]:
        """The mapping that holds address: its GPU address and its (shared) bytes."""
        return self._span(address, 1, access)

    def _clash(self, addr: int, size: int) -> int | None:
        """The end of the mapping whose range, guard gap included, meets [addr, addr + size); None if none does.
        Mappings are sorted and disjoint, so only the last one that starts before the range ends can meet it."""
        i = bisect.bisect_right(self._bases, addr + size - 1) - 1
        end = self._bases[i] + max(len(self._bufs[i]), 1) if i >= 0 else None
        return end if end is not None and end + GUARD > addr else None

    def _insert(self, addr: int, buf: np.ndarray) -> None:
        i = bisect.bisect_right(self._bases, addr)
        self._bases.insert(i, addr)
        self._bufs.insert(i, buf)
        row = {"base": addr, "end": addr + len(buf), "host": buf.ctypes.data, "writable": buf.flags.writeable}
        self.table = {k: np.insert(a, i, row[k]) for k, a in self.table.items()}
        self._reindex()

    def _reindex(self) -> None:
        # what users work out from the mappings (the native executor's view of the table), made when first asked
        # for: a launch maps several buffers before anything reads them
        self.derived: dict = {}

    # ---- access --------------------------------------------------------------------------------------------
    def _locate(self, addr: np.ndarray, nbytes: int, access: str) -> np.ndarray:
        """The mapping index of each address, checking the whole access lies inside it."""
        bases, ends = self.table["base"], self.table["end"]
        idx = np.searchsorted(bases, addr, side="right").astype(np.int64) - 1
        ok = idx >= 0
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

    def read_bytes(self, address: int, n: int) -> bytes:
        """n bytes from address, all inside one mapping."""
        base, buf = self._span(address, n, "read")
        return buf[address - base : address - base + n].tobytes()

    def write_bytes(self, address: int, data: bytes) -> None:
        """Store data at address, all inside one mapping."""
        base, buf = self._span(address, len(data), "write")
        if not buf.flags.writeable:
            raise MemoryFault(address, "write", "a read-only mapping")
        buf.data[address - base : address - base + len(data)] = data  # a memoryview takes bytes as they are

    def copy(self, dst: int, src: int, n: int) -> None:
        """n bytes from src to dst (each inside one mapping; they may overlap), without a copy in between."""
        src_base, src_buf = self._span(src, n, "read")
        dst_base, dst_buf = self._span(dst, n, "write")
        if not dst_buf.flags.writeable:
            raise MemoryFault(dst, "write", "a read-only mapping")
        dst_buf[dst - dst_base : dst - dst_base + n] = src_buf[src - src_base : src - src_base + n]

    def word(self, address: int, size: int) -> np.ndarray:
        """The size-byte (4 or 8) little-endian word at address as a one-element array on the mapping's bytes (reads
        and writes through it are the memory's); good while `derived` is the same dict (no mapping changed)."""
        base, buf = self._span(address, size, "read")
        return buf[address - base : address - base + size].view(f"<u{size}")

    def _span(self, address: int, n: int, access: str) -> tuple[int, np.ndarray]:
        """The base and bytes of the mapping that holds [address, address + n): one address, so a bisect of the
        bases (the packet processors' reads and writes go here, a few at a time) rather than _locate's arrays."""
        i = bisect.bisect_right(self._bases, address) - 1
        if i < 0 or address >= self._bases[i] + len(self._bufs[i]):
            raise MemoryFault(address, access, "not mapped")
        if address + n > self._bases[i] + len(self._bufs[i]):
            raise MemoryFault(address, access, f"{n}-byte access runs past the end of its buffer")
        return self._bases[i], self._bufs[i]
