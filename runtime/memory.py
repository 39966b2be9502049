"""Device memory: a Buffer is GPU memory mapped at one address for the CPU and the GPU."""

from __future__ import annotations

import numpy as np


class Buffer:
    def __init__(self, dev, size: int, kind: str = "vram"):
        self.dev, self.size = dev, size
        self.mem = dev.kfd.alloc(max(size, 1), kind)
        self.va = self.mem.va

    def view(self) -> memoryview:
        return self.mem.view()[: self.size]

    def copyin(self, data: np.ndarray | bytes | memoryview) -> None:
        """Copy host data into the buffer (after the work submitted before has finished)."""
        src = memoryview(np.ascontiguousarray(data) if isinstance(data, np.ndarray) else data).cast("B")
        if len(src) > self.size:
            raise ValueError(f"{len(src)} bytes do not fit a {self.size}-byte buffer")
        self.dev.synchronize()
        self.view()[: len(src)] = src

    def copyout(self, dtype=np.uint8, count: int | None = None) -> np.ndarray:
        """The buffer's contents (after the submitted work has finished), as count items of dtype."""
        self.dev.synchronize()
        out = np.frombuffer(self.view(), np.uint8).copy().view(dtype)
        return out if count is None else out[:count]

    def free(self) -> None:
        self.dev.kfd.free(self.mem)

    def __repr__(self) -> str:
        return f"Buffer({self.size} bytes at {self.va:#x})"
