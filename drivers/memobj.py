"""What every driver (KFD, AM, NV) hands the runtime: memory objects mapped at one address for the CPU and the
GPU, each followed by an unmapped guard."""

from __future__ import annotations

from dataclasses import dataclass

from usergpu.hostmem import PAGE, view

GUARD = PAGE  # address space left unmapped after each memory object, for the CPU and the GPU


@dataclass
class Memory:
    """A memory object mapped for this GPU: va is its address for the CPU and the GPU alike."""

    va: int
    size: int
    handle: int
    kind: str
    freed: bool = False  # set by the runtime when it gives the memory back: its pages may be another's then

    def view(self) -> memoryview:
        return view(self.va, self.size)
