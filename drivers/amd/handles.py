"""What an AMD driver (KFD, AM) hands the runtime besides memory (drivers/memobj.py): the address reservations
memory objects are mapped into, and queues with their doorbells."""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.drivers.memobj import GUARD, Memory
from usergpu.hostmem import (
    MAP_ANONYMOUS,
    MAP_FIXED,
    MAP_NORESERVE,
    MAP_PRIVATE,
    MMIO,
    PROT_NONE,
    PROT_READ,
    PROT_WRITE,
)


def reserve(hal, size: int, private: bool = False) -> int:
    """An address for a memory object of size bytes, with GUARD unmapped bytes after it that no other object
    takes, so an access one past the object faults on the GPU (and the CPU). private: the object is this
    process's own pages there (userptr, VFIO system memory); else the range waits for a device mapping."""
    va = hal.mmap(-1, size + GUARD, 0, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)
    if private:
        hal.mmap(-1, size, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, va)
    return va


def unreserve(hal, va: int, size: int) -> None:
    """Give back what reserve took for an object of size bytes at va."""
    hal.munmap(va, size + GUARD)


@dataclass
class Queue:
    queue_id: int
    doorbell: MMIO
    doorbell_index: int
    buffers: tuple[Memory, ...] = ()  # what the driver allocated for it (EOP buffer, CWSR area), freed with it

    def ring(self, value: int) -> None:
        """Ring the doorbell with the new write pointer."""
        self.doorbell[self.doorbell_index] = value
