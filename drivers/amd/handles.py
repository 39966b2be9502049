"""What an AMD driver (KFD, AM) hands the runtime: memory mapped at one address for the CPU and the GPU, and
queues with their doorbells."""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.hostmem import MMIO, view


@dataclass
class Memory:
    """A memory object mapped for this GPU: va is its address for the CPU and the GPU alike."""

    va: int
    size: int
    handle: int
    kind: str

    def view(self) -> memoryview:
        return view(self.va, self.size)


@dataclass
class Queue:
    queue_id: int
    doorbell: MMIO
    doorbell_index: int
    buffers: tuple[Memory, ...] = ()  # what the driver allocated for it (EOP buffer, CWSR area), freed with it

    def ring(self, value: int) -> None:
        """Ring the doorbell with the new write pointer."""
        self.doorbell[self.doorbell_index] = value
