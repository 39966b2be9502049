"""Signals: a 64-bit value the GPU writes (AMD: RELEASE_MEM, SDMA FENCE; NVIDIA: a semaphore release) with the GPU
timestamp of the write beside it, waited on by the CPU (on AMD through KFD events: the write raises the interrupt
that sets the device's event)."""

from __future__ import annotations

import time

from usergpu.autogen import amdhsa as hsa

AMD_SIGNAL_KIND_USER = 1


class Signal:
    """An amd_signal_t (ROCr's layout, so AQL packets can name it): the value, and the GPU timestamp of its last
    write in end_ts."""

    VALUE, TIMESTAMP = hsa.amd_signal_t.value.offset, hsa.amd_signal_t.end_ts.offset

    def __init__(self, dev, value: int = 0):
        self.dev = dev
        self.mem = dev.memory(4096, "gtt")
        self.va = self.mem.va
        self._words = self.mem.view().cast("Q")
        self.prepare()
        self.value = value

    def prepare(self) -> None:
        """The words a signal's kind needs before its first use: an amd_signal_t says it is a user signal."""
        self._words[hsa.amd_signal_t.kind.offset // 8] = AMD_SIGNAL_KIND_USER

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


class NVSignal(Signal):
    """An NVIDIA semaphore: the 64-bit payload, then the GPU's timestamp (ns) of the release that wrote it (the
    four-word report a release with RELEASE_TIMESTAMP writes)."""

    VALUE, TIMESTAMP = 0, 8

    def prepare(self) -> None:
        pass
