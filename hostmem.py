"""Process memory and MMIO views, shared by the HAL (real mappings) and the mock devices (the memory they back):
mmap(2) through libc, so a mapping can be placed at a chosen address, and `MMIO` views whose writes are plain
stores on hardware and calls into the model on a mock."""

from __future__ import annotations

import ctypes
import mmap
import os
from collections.abc import Callable

PROT_NONE, PROT_READ, PROT_WRITE = 0, mmap.PROT_READ, mmap.PROT_WRITE
MAP_SHARED, MAP_PRIVATE, MAP_ANONYMOUS = mmap.MAP_SHARED, mmap.MAP_PRIVATE, mmap.MAP_ANONYMOUS
MAP_FIXED, MAP_NORESERVE = 0x10, 0x4000  # <sys/mman.h> on Linux
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 0x01, 0x02  # <linux/falloc.h>
MAP_FAILED = ctypes.c_void_p(-1).value


PAGE = 4096


def page_align(n: int) -> int:
    """n rounded up to whole pages."""
    return -(-n // PAGE) * PAGE


def os_mmap(address: int, length: int, prot: int, flags: int, fd: int, offset: int) -> int:
    """mmap(2): the mapping's CPU address; OSError with the errno on failure."""
    got = _libc.mmap(address or None, length, prot, flags, fd, offset)
    if got in (None, MAP_FAILED):
        err = ctypes.get_errno()
        raise OSError(err, f"mmap of {length:#x} bytes: {os.strerror(err)}")
    return got


def os_munmap(address: int, length: int) -> None:
    if _libc.munmap(address, length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"munmap of {length:#x} bytes at {address:#x}: {os.strerror(err)}")


def same(a: int, b: int, length: int) -> bool:
    """Whether length bytes at two CPU addresses are equal (memcmp: no copy, no temporary array)."""
    return _libc.memcmp(a, b, length) == 0


def view(address: int, length: int) -> memoryview:
    """The bytes of process memory at a CPU address (a mapping the HAL made)."""
    return memoryview((ctypes.c_char * length).from_address(address)).cast("B")


class MMIO:
    """Registers or doorbells: `mmio[i] = value` writes dword (or qword) i, `mmio[i]` reads it."""

    def __init__(self, address: int, length: int, width: int = 4):
        self.bytes = view(address, length)  # the mapping itself, for block copies
        self._words = self.bytes.cast("I" if width == 4 else "Q")

    def __setitem__(self, index: int, value: int) -> None:
        self._words[index] = value

    def __getitem__(self, index: int) -> int:
        return self._words[index]


class CallbackMMIO(MMIO):
    """An MMIO view of a mock device: reads and writes are calls into the model (a QEMU MemoryRegionOps)."""

    def __init__(self, read: Callable[[int], int], write: Callable[[int, int], None]):
        self._read, self._write = read, write

    def __setitem__(self, index: int, value: int) -> None:
        self._write(index, value)

    def __getitem__(self, index: int) -> int:
        return self._read(index)


def copy_file(src: int, src_at: int, dst: int, dst_at: int, n: int) -> int:
    """n bytes from one file (a memfd) to another, in the kernel and sparsely: where the source is a hole (pages
    nothing wrote), the destination's whole pages there become a hole too, rather than pages of zeros being made.
    The bytes done, in order from the start: fewer than n where the kernel would not go on."""
    pos = 0
    try:
        while pos < n:
            try:
                data = min(os.lseek(src, src_at + pos, os.SEEK_DATA) - src_at, n)
            except OSError:  # ENXIO: no data past pos
                data = n
            if data > pos:
                _zero(src, src_at, dst, dst_at, pos, data)
                pos = data
            if pos < n:
                end = min(os.lseek(src, src_at + pos, os.SEEK_HOLE) - src_at, n)
                _copy_range(src, src_at, dst, dst_at, pos, end)
                pos = end
    except OSError:
        pass
    return pos


def _copy_range(src: int, src_at: int, dst: int, dst_at: int, start: int, end: int) -> None:
    while start < end:
        got = os.copy_file_range(src, dst, end - start, src_at + start, dst_at + start)
        if not got:
            raise OSError("copy_file_range copied nothing")
        start += got


def _zero(src: int, src_at: int, dst: int, dst_at: int, start: int, end: int) -> None:
    """The destination of a hole of the source: its whole pages punched out, the partial ones copied (as zeros)."""
    lo, hi = page_align(dst_at + start), (dst_at + end) // PAGE * PAGE
    if hi <= lo or _libc.fallocate(dst, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, lo, hi - lo):
        _copy_range(src, src_at, dst, dst_at, start, end)
        return
    _copy_range(src, src_at, dst, dst_at, start, lo - dst_at)
    _copy_range(src, src_at, dst, dst_at, hi - dst_at, end)


def shared_pages(name: str, size: int) -> tuple[int, int]:
    """Shared memory (a mock's memory object, a doorbell page): the mock's own mapping of it and its memfd; closed
    again if either fails."""
    memfd = os.memfd_create(name, os.MFD_CLOEXEC)
    try:
        os.ftruncate(memfd, size)
        return os_mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0), memfd
    except OSError:
        os.close(memfd)
        raise
