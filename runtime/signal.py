"""Signals: a 64-bit value the GPU writes (RELEASE_MEM, SDMA FENCE) with the GPU timestamp of the write beside it,
waited on by the CPU through KFD events (the write raises the interrupt that sets the device's event)."""

from __future__ import annotations

import time

from usergpu.errors import GPUHang


class Signal:
    SIZE = 16  # value, then timestamp

    def __init__(self, dev):
        self.dev = dev
        self.mem = dev.kfd.alloc(4096, "gtt")
        self.va = self.mem.va
        self._words = self.mem.view().cast("Q")

    @property
    def value(self) -> int:
        return self._words[0]

    @value.setter
    def value(self, v: int) -> None:
        self._words[0] = v

    @property
    def timestamp(self) -> int:
        """GPU clock ticks when the value was last written by the GPU."""
        return self._words[1]

    def wait(self, value: int, timeout: float | None = None) -> None:
        """Until the signal reaches value; GPUHang past the timeout."""
        limit = time.monotonic() + (self.dev.timeout if timeout is None else timeout)
        while self.value < value:
            if self.dev.kfd.wait_events([self.dev.event], timeout_ms=10) is None:
                time.sleep(0.001)
            if self.value < value and time.monotonic() > limit:
                self.dev.reset_queues()  # what the stuck queues held is lost; the device takes new work
                raise GPUHang(f"device hang detected: signal at {self.va:#x} is {self.value}, waited for {value} "
                              f"for {self.dev.timeout if timeout is None else timeout} s")
