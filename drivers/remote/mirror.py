"""A local copy of a remote function's memory BAR (VRAM), for code that reaches VRAM through CPU pointers (page
tables, rings, buffers mapped at their GPU address): the parts a driver shares are kept in a memfd it maps like a
local BAR, and kept coherent with the board at the points PCIe ordering gives a real BAR's writes and reads:

- push (before every register or doorbell write: a posted write reaches the board after the VRAM writes before
  it): the dwords the CPU changed since the last sync, in runs; a part shared since then goes whole, so a cleared
  allocation clears the board's old data too;
- pull (sync_for_cpu: where a driver has learnt the GPU wrote, after an interrupt or a wait): the board's bytes of
  the parts asked for, read in one pipelined batch (after a push, so no CPU write is lost).

A dword the CPU and the GPU both write between two syncs is the GPU's after the pull: as on a real BAR, the two
must not write the same words unsynchronised."""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Callable

import numpy as np

from usergpu.hostmem import same

GAP = 64  # unchanged dwords between two changed ones that still go in one write (a request costs more)
CHUNK = 16 << 20  # bytes one request moves at most


class Mirror:
    def __init__(self, size: int, write: Callable[[int, bytes], None],
                 read: Callable[[list[tuple[int, int]]], list[bytes]]):
        """size: the BAR's; write(offset, data) sends bytes to it, read([(offset, size)...]) fetches parts."""
        self.size, self._write, self._read = size, write, read
        self.fd = os.memfd_create("usergpu-remote-bar", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, size)
        self.memory = mmap.mmap(self.fd, size)
        self._synced_fd = os.memfd_create("usergpu-remote-bar-synced", os.MFD_CLOEXEC)
        os.ftruncate(self._synced_fd, size)
        self._synced_map = mmap.mmap(self._synced_fd, size)
        self.local = np.frombuffer(self.memory, np.uint32)
        self.synced = np.frombuffer(self._synced_map, np.uint32)  # what the board held at the last sync
        self._addresses = tuple(ctypes.addressof(ctypes.c_char.from_buffer(m)) for m in (self.memory,
                                                                                           self._synced_map))
        self.shared: dict[int, int] = {}  # offset -> size (4 KiB-aligned)
        self.fresh: set[int] = set()  # shared since the last push: sent whole

    def share(self, offset: int, size: int) -> None:
        self.shared[offset] = size
        self.fresh.add(offset)

    def unshare(self, offset: int) -> None:
        self.shared.pop(offset, None)
        self.fresh.discard(offset)

    def push(self) -> None:
        for offset, size in self.shared.items():
            lo, hi = offset // 4, (offset + size) // 4
            if offset in self.fresh:
                self._send(lo, hi)
                continue
            if same(self._addresses[0] + offset, self._addresses[1] + offset, size):
                continue  # the common case (a push precedes every register write): one memcmp, no array
            changed = np.flatnonzero(self.local[lo:hi] != self.synced[lo:hi])
            if not changed.size:
                continue
            breaks = np.flatnonzero(np.diff(changed) > GAP)
            for start, end in zip(changed[np.r_[0, breaks + 1]], changed[np.r_[breaks, changed.size - 1]],
                                  strict=True):
                self._send(lo + int(start), lo + int(end) + 1)
        self.fresh.clear()

    def _send(self, lo: int, hi: int) -> None:
        for at in range(lo, hi, CHUNK // 4):
            end = min(at + CHUNK // 4, hi)
            self._write(4 * at, self.local[at:end].tobytes())
            self.synced[at:end] = self.local[at:end]

    def pull(self, offset: int | None = None, size: int | None = None) -> None:
        """The board's bytes of the shared parts (or of offset..offset+size) into the copy, after a push."""
        self.push()
        parts = [(offset, size)] if offset is not None else list(self.shared.items())
        pieces = [(at, min(CHUNK, start + n - at)) for start, n in parts for at in range(start, start + n, CHUNK)]
        for (at, n), data in zip(pieces, self._read(pieces), strict=True):
            self.memory[at : at + n] = data
            self._synced_map[at : at + n] = data

    def close(self) -> None:
        """Close the descriptors (the mappings live on while a view of them does)."""
        os.close(self.fd)
        os.close(self._synced_fd)
