"""Device memory: a Buffer is GPU memory mapped at one address for the CPU and the GPU. Small copies are CPU
copies through that mapping; large ones go through the SDMA engine, staged in host-visible memory."""

from __future__ import annotations

import numpy as np

DIRECT_MAX = 1 << 20  # bytes copied by the CPU; larger copies go through SDMA


class Buffer:
    def __init__(self, dev, size: int, kind: str = "vram"):
        self.dev, self.size = dev, size
        self.mem = dev.driver.alloc(max(size, 1), kind)
        self.va = self.mem.va

    def view(self) -> memoryview:
        return self.mem.view()[: self.size]

    def copyin(self, data: np.ndarray | bytes | memoryview) -> None:
        """Copy host data into the buffer (after the work submitted before has finished)."""
        src = memoryview(np.ascontiguousarray(data) if isinstance(data, np.ndarray) else data).cast("B")
        if len(src) > self.size:
            raise ValueError(f"{len(src)} bytes do not fit a {self.size}-byte buffer")
        self.dev.synchronize()
        if len(src) <= DIRECT_MAX:
            self.view()[: len(src)] = src
            return
        for off, stage in self.dev.staged(len(src)):
            n = min(stage.size, len(src) - off)
            stage.view()[:n] = src[off : off + n]
            self.dev.sdma_copy(self.va + off, stage.va, n)

    def copyout(self, dtype=np.uint8, count: int | None = None) -> np.ndarray:
        """The buffer's contents (after the submitted work has finished), as count items of dtype."""
        self.dev.synchronize()
        nbytes = self.size if count is None else count * np.dtype(dtype).itemsize
        if nbytes <= DIRECT_MAX:
            return np.frombuffer(self.view()[:nbytes], np.uint8).copy().view(dtype)
        out = np.empty(nbytes, np.uint8)
        for off, stage in self.dev.staged(nbytes):
            n = min(stage.size, nbytes - off)
            self.dev.sdma_copy(stage.va, self.va + off, n)
            out[off : off + n] = np.frombuffer(stage.view()[:n], np.uint8)
        return out.view(dtype)

    def free(self) -> None:
        self.dev.driver.free(self.mem)

    def __repr__(self) -> str:
        return f"Buffer({self.size} bytes at {self.va:#x})"
