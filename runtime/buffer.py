"""Device memory: a Buffer is GPU memory mapped at one address for the CPU and the GPU. Small copies are CPU
copies through that mapping; large ones go through the GPU's copy engine (SDMA on AMD, the copy class on NVIDIA),
staged in host-visible memory.

A buffer's pages are whole pages, and the page after them is never mapped for the GPU (the drivers leave a guard
page), so a buffer placed `at_end` ends where its pages do: a kernel touching one byte past it faults, as on the
bare emulator. A freed buffer refuses every use with BufferError (its pages may belong to another buffer by then).
"""

from __future__ import annotations

import numpy as np

from usergpu.errors import Error

DIRECT_MAX = 1 << 20  # bytes copied by the CPU; larger copies go through the copy engine
MAX_BYTES = 1 << 46  # more than any GPU's memory: a size past it is a mistake, refused before asking the driver


class BufferError(Error):
    """A buffer used after it was freed, or a size, offset or copy that does not fit it: says which and why."""


def byte_count(size, what: str = "size") -> int:
    """A size in bytes given by a caller: a non-negative int (numpy's integers too) no larger than MAX_BYTES."""
    if isinstance(size, bool) or not isinstance(size, int | np.integer):
        raise BufferError(f"{what} {size!r}: a number of bytes is an int, not {type(size).__name__}")
    if not 0 <= size <= MAX_BYTES:
        raise BufferError(f"{what} {size}: a number of bytes is 0..{MAX_BYTES:#x}")
    return int(size)


class Buffer:
    def __init__(self, dev, size: int, kind: str = "vram", at_end: bool = False):
        self.dev, self.size = dev, byte_count(size)
        self._mem = dev.memory(max(self.size, 1), kind)
        self.offset = self._mem.size - self.size if at_end else 0  # where the buffer starts in its pages

    @property
    def mem(self):
        """The driver's memory object; BufferError once freed (by free() or by closing its device)."""
        return self._live()

    def _live(self):
        if self._mem is None or self._mem.freed:
            closed = " (its device was closed)" if self._mem else ""
            raise BufferError(f"buffer of {self.size} bytes was freed{closed}: it can no longer be read, written or "
                              "passed to a kernel")
        return self._mem

    @property
    def va(self) -> int:
        return self.mem.va + self.offset

    def view(self) -> memoryview:
        return self.mem.view()[self.offset : self.offset + self.size]

    def copyin(self, data: np.ndarray | bytes | memoryview, offset: int = 0) -> None:
        """Copy host data into the buffer at a byte offset (after the work submitted before has finished)."""
        src = memoryview(np.ascontiguousarray(data) if isinstance(data, np.ndarray) else data).cast("B")
        offset = self._fits(offset, len(src), "copyin of")
        self.dev.synchronize()
        if len(src) <= DIRECT_MAX:
            self.view()[offset : offset + len(src)] = src
            return
        for off, stage in self.dev.staged(len(src)):
            n = min(stage.size, len(src) - off)
            stage.view()[:n] = src[off : off + n]
            self.dev.dma_copy(self.va + offset + off, stage.va, n)

    def copyout(self, dtype=np.uint8, count: int | None = None, offset: int = 0) -> np.ndarray:
        """The buffer's contents from a byte offset (after the submitted work has finished), as count items of
        dtype (default: as many as fit)."""
        itemsize = np.dtype(dtype).itemsize
        nbytes = (self.size - byte_count(offset, "offset")) // itemsize * itemsize if count is None \
            else byte_count(count, "count") * itemsize
        offset = self._fits(offset, nbytes, "copyout of")
        self.dev.synchronize()
        if nbytes <= DIRECT_MAX:
            return np.frombuffer(self.view()[offset : offset + nbytes], np.uint8).copy().view(dtype)
        out = np.empty(nbytes, np.uint8)
        for off, stage in self.dev.staged(nbytes):
            n = min(stage.size, nbytes - off)
            self.dev.dma_copy(stage.va, self.va + offset + off, n)
            out[off : off + n] = np.frombuffer(stage.view()[:n], np.uint8)
        return out.view(dtype)

    def _fits(self, offset, nbytes: int, what: str) -> int:
        """offset, checked: [offset, offset + nbytes) lies inside the buffer, which is not freed."""
        offset = byte_count(offset, "offset")
        self._live()  # a freed buffer says so before anything else
        if offset + nbytes > self.size:
            raise BufferError(f"{what} {nbytes} bytes at offset {offset} runs past the end of a {self.size}-byte "
                              "buffer")
        return offset

    def free(self) -> None:
        """Give the memory back; any later use of the buffer raises BufferError."""
        self.dev.release(self.mem)
        self._mem = None

    def __repr__(self) -> str:
        state = "freed" if self._mem is None or self._mem.freed else f"at {self.va:#x}"
        return f"Buffer({self.size} bytes {state})"
