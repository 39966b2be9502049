"""Test helpers: rings in a mock GPU's memory, filled the way a runtime fills them, and a real kernel loaded into it."""

from __future__ import annotations

import numpy as np

from usergpu.autogen import amdhsa
from usergpu.emu.amd.mock import GPU

PT_LOAD = 1
VADD = """__kernel void vadd(__global const int *a, __global const int *b, __global int *c) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  c[i] = a[i] + b[i];
}"""


class Rig:
    """A queue's ring of `size` bytes, its 64-bit read/write pointers (counted in `unit` bytes), and a submit."""

    def __init__(self, gpu: GPU, queue_class, size: int, pointers: int | None = None):
        self.gpu, self.size, self.unit = gpu, size, queue_class.unit
        self.ring = gpu.mem.map(size)
        if pointers is None:  # AQL: the amd_queue_t's dispatch ids, as ROCr passes them
            self.amd_queue = gpu.mem.map(np.zeros(256, np.uint8))
            self.rptr = self.amd_queue + amdhsa.amd_queue_t.read_dispatch_id.offset
            self.wptr = self.amd_queue + amdhsa.amd_queue_t.write_dispatch_id.offset
        else:
            base = gpu.mem.map(16)
            self.rptr, self.wptr = base, base + 8
        self.queue = queue_class(gpu, self.ring, size, self.rptr, self.wptr)
        self.put = 0  # bytes written so far

    def submit(self, data: bytes | list[int]) -> None:
        raw = np.asarray(data, np.uint32).tobytes() if isinstance(data, list) else bytes(data)
        for i in range(0, len(raw), 4):  # a dword at a time, wrapping at the ring's end
            self.gpu.mem.write_bytes(self.ring + (self.put + i) % self.size, raw[i : i + 4])
        self.put += len(raw)
        self.gpu.mem.write_bytes(self.wptr, (self.put // self.unit).to_bytes(8, "little"))

    def read_ptr(self) -> int:
        return int.from_bytes(self.gpu.mem.read_bytes(self.rptr, 8), "little")


def u32(gpu: GPU, address: int) -> int:
    return int.from_bytes(gpu.mem.read_bytes(address, 4), "little")


def u64(gpu: GPU, address: int) -> int:
    return int.from_bytes(gpu.mem.read_bytes(address, 8), "little")


def lohi(address: int) -> list[int]:
    return [address & 0xFFFFFFFF, address >> 32]


def load(gpu: GPU, co) -> int:
    """Map the code object's PT_LOAD segments at a 64 KiB-aligned base; the base."""
    loads = [s for s in co.segments if s.type == PT_LOAD]
    image = np.zeros(max(s.vaddr + s.memsz for s in loads), np.uint8)
    for s in loads:
        image[s.vaddr : s.vaddr + s.filesz] = np.frombuffer(co.data[s.offset : s.offset + s.filesz], np.uint8)
    return gpu.mem.map(image, align=1 << 16)
