"""Signals: a 64-bit value the GPU writes (AMD: RELEASE_MEM, SDMA FENCE; NVIDIA: a semaphore release) with the GPU
timestamp of the write beside it, waited on by the CPU (the device's poll looks for what the GPU reports meanwhile:
on AMD the KFD event the write raises, on NVIDIA the channels' error notifiers). Each vendor's signal says where its
value and timestamp lie (runtime/amd/signal.py, runtime/nv/signal.py)."""

from __future__ import annotations

import time


class Signal:
    """A signal in host-visible GPU memory: the value at VALUE, the GPU timestamp of its last write at TIMESTAMP."""

    VALUE: int
    TIMESTAMP: int

    def __init__(self, dev, value: int = 0):
        self.dev = dev
        self.mem = dev.memory(4096, "gtt")
        self.va = self.mem.va
        self._words = self.mem.view().cast("Q")
        self.prepare()
        self.value = value

    def prepare(self) -> None:
        """The words a signal's kind needs before its first use (none unless a vendor says so)."""

    def free(self) -> None:
        self.dev.release(self.mem)

    @property
    def value(self) -> int:
        return self._words[self.VALUE // 8]

    @value.setter
    def value(self, v: int) -> None:
        self._words[self.VALUE // 8] = v

    @property
    def timestamp(self) -> int:
        """GPU clock ticks when the value was last written by the GPU."""
        return self._words[self.TIMESTAMP // 8]

    def wait(self, value: int, timeout: float | None = None) -> None:
        """Until the signal reaches value; GPUHang past the timeout."""
        timeout = self.dev.timeout if timeout is None else timeout
        limit = time.monotonic() + timeout
        while self.value < value:
            self.dev.poll()
            if (now := self.value) < value and time.monotonic() > limit:
                raise self.dev.hang(f"signal at {self.va:#x} is {now}, waited for {value}", timeout)
