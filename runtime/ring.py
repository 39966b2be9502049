"""A ring queue in userspace (PM4 and SDMA alike): packets written to a ring in GPU memory, the write pointer
(a 64-bit counter in `unit`-byte steps: dwords for PM4, bytes for SDMA) stored where the engine reads it, then the
doorbell. A queue the GPU stopped (a fault, a hang) is made anew before the error goes on."""

from __future__ import annotations

from usergpu.errors import Error

RING_SIZE = 1 << 16  # bytes


class RingQueue:
    kind = ""  # the KFD queue type: pm4 or sdma
    unit = 4

    def __init__(self, dev):
        self.dev = dev
        self.ring = dev.kfd.alloc(RING_SIZE, "gtt")
        self.pointers = dev.kfd.alloc(4096, "gtt")  # read pointer at 0, write pointer at 8
        self.eop = dev.kfd.alloc(4096, "vram") if self.kind == "pm4" else None  # the CP's end-of-pipe buffer
        self.ring_words = self.ring.view().cast("I")
        self.pointer_words = self.pointers.view().cast("Q")
        self.create()

    def create(self) -> None:
        self.pointer_words[0] = self.pointer_words[1] = self.wptr = 0
        self.queue = self.dev.kfd.create_queue(self.kind, self.ring, self.pointers.va, self.pointers.va + 8,
                                               eop=self.eop)

    def submit(self, packets: list[int]) -> None:
        n, first = len(self.ring_words), self.wptr * self.unit // 4
        for i, dword in enumerate(packets):
            self.ring_words[(first + i) % n] = dword
        self.wptr += 4 * len(packets) // self.unit
        self.pointer_words[1] = self.wptr
        try:
            self.queue.ring(self.wptr)
        except Error:
            self.dev.kfd.destroy_queue(self.queue)
            self.create()
            raise
