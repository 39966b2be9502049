"""A ring queue in userspace (PM4 and SDMA alike): packets written to a ring in GPU memory, the write pointer
(a 64-bit counter in `unit`-byte steps: dwords for PM4, bytes for SDMA) stored where the engine reads it, then the
doorbell. A queue the GPU stopped (a fault, a hang) is made anew before the error goes on."""

from __future__ import annotations

import time
from array import array

from usergpu.errors import Error

RING_SIZE = 1 << 16  # bytes


class RingQueue:
    kind = ""  # the KFD queue type: pm4 or sdma
    unit = 4

    def __init__(self, dev):
        self.dev = dev
        self.ring = dev.memory(RING_SIZE, "gtt")
        self.pointers = dev.memory(4096, "gtt")  # read pointer at 0, write pointer at 8
        self.ring_words = self.ring.view().cast("I")
        self.pointer_words = self.pointers.view().cast("Q")
        self.create()

    def create(self) -> None:
        self.pointer_words[0] = self.pointer_words[1] = self.wptr = 0
        self.queue = self.dev.driver.create_queue(self.kind, self.ring, self.pointers.va, self.pointers.va + 8)

    def submit(self, packets: list[int]) -> None:
        self._wait_for_room(4 * len(packets))
        words, n = array("I", packets), len(self.ring_words)
        first = self.wptr * self.unit // 4 % n
        head = min(len(words), n - first)  # what fits before the ring's end; the rest wraps to its start
        self.ring_words[first : first + head] = words[:head]
        self.ring_words[: len(words) - head] = words[head:]
        self.wptr += 4 * len(packets) // self.unit
        self.pointer_words[1] = self.wptr
        try:
            self.queue.ring(self.wptr)
        except Error:
            self.dev.driver.destroy_queue(self.queue)
            self.create()
            raise

    def _wait_for_room(self, nbytes: int) -> None:
        """Until the engine has read far enough that nbytes fit without overwriting what it has not read."""
        if nbytes > RING_SIZE:
            raise Error(f"{nbytes} bytes of packets do not fit the {RING_SIZE}-byte {self.kind} ring")
        limit = time.monotonic() + self.dev.timeout
        while (self.wptr - self.pointer_words[0]) * self.unit + nbytes > RING_SIZE:
            self.dev.poll()
            if time.monotonic() > limit:
                raise self.dev.hang(f"the {self.kind} ring stayed full (read pointer {self.pointer_words[0]}, "
                                    f"write pointer {self.wptr})", self.dev.timeout)
