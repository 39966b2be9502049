"""The pages behind the mock RM's memory objects. Video and system memory are shared memory (a memfd): the process
maps it through the device file named in NV_ESC_RM_MAP_MEMORY (MAP_SHARED, so its stores land in the same pages),
and the mock GPUs see the same pages through `array` in their VA spaces. An OS-descriptor object is the caller's
own pages, pinned (get_user_pages: every page there, writable), and seen through a view of them.

The mock's view is a Python mmap: whatever still holds `array` (a VA space that maps it, a channel's USERD) keeps
the pages alive after the object is freed, as UVM's duplicate of a memory object keeps its pages on hardware; the
memfd itself is closed at the free (a process mapping of it keeps the pages too)."""

from __future__ import annotations

import mmap
import os

import numpy as np

from usergpu.emu.mock.uaccess import pin_user_pages
from usergpu.hostmem import MAP_FIXED, MAP_SHARED, os_mmap, view


class Pages:
    """size bytes of shared memory: `array` is the mock's (and the GPUs') view."""

    def __init__(self, size: int, name: str):
        self.size = size
        self.memfd: int | None = os.memfd_create(name, os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.memfd, size)
            self.array = np.frombuffer(mmap.mmap(self.memfd, size), np.uint8)
        except OSError:
            os.close(self.memfd)
            raise

    def map_into(self, address: int, length: int, offset: int, prot: int, flags: int) -> int:
        """Map length bytes from offset into the process at address (0: anywhere; else MAP_FIXED)."""
        if self.memfd is None:
            raise OSError(22, "the memory object is freed")
        flags = flags | MAP_SHARED | (MAP_FIXED if address else 0)
        return os_mmap(address, length, prot, flags, self.memfd, offset)

    def close(self) -> None:
        if self.memfd is not None:
            os.close(self.memfd)
            self.memfd = None


class UserPages:
    """The caller's pages at address, pinned: OSError (EFAULT) if any is missing or read-only."""

    memfd = None

    def __init__(self, address: int, size: int, write: bool = True):
        pin_user_pages(address, size, write, "RM OS descriptor")
        self.size = size
        self.array = np.frombuffer(view(address, size), np.uint8)

    def close(self) -> None:
        """Unpinning leaves the caller's pages as they are."""
