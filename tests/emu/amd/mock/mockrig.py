"""Test helpers: rings in a mock GPU's memory, filled the way a runtime fills them, AQL packets and signals, a real
kernel loaded into it and the PM4 packets that dispatch it."""

from __future__ import annotations

import functools

import numpy as np

import usergpu.autogen.pm4_nv as nv
from usergpu.autogen import amdhsa
from usergpu.autogen import amdhsa as hsa
from usergpu.emu.amd.mock import GPU
from usergpu.isa.amd.codeobj import compile_opencl, parse
from usergpu.isa.amd.codeobj.kernargs import pack_kernargs
from usergpu.isa.amd.dispatch import kernel_registers, user_sgpr_values

VALUE = hsa.amd_signal_t.value.offset

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


@functools.cache
def compiled(source: str, arch: str):
    """OpenCL source compiled for an arch (once per test process), parsed."""
    return parse(compile_opencl(source, arch))


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


def hdr(kind: int, barrier: int = 1) -> int:
    """An AQL packet's header of that type, system-scope fences, with or without the barrier bit."""
    return kind << hsa.HSA_PACKET_HEADER_TYPE | barrier << hsa.HSA_PACKET_HEADER_BARRIER | (
        hsa.HSA_FENCE_SCOPE_SYSTEM << hsa.HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE)


def signal(gpu: GPU, value: int, mailbox: int = 0, event: int = 0) -> int:
    """An amd_signal_t of that value in GPU memory (an event mailbox and id if given): its address."""
    s = hsa.amd_signal_t(kind=hsa.AMD_SIGNAL_KIND_USER, event_mailbox_ptr=mailbox, event_id=event)
    s.value = value
    return gpu.mem.map(np.frombuffer(bytes(s), np.uint8).copy())


def signal_value(gpu: GPU, sig: int) -> int:
    return int.from_bytes(gpu.mem.read_bytes(sig + VALUE, 8), "little", signed=True)


def kernel_args(gpu: GPU, co, kernel: str, args: list, grid: tuple, block: tuple) -> int:
    """The kernel's argument segment (arrays mapped where they are, as pointers) in GPU memory: its address."""
    raw, _ = pack_kernargs(co.kernels[kernel], args, grid, block,
                           lambda v: gpu.mem.map(v) if isinstance(v, np.ndarray) else None)
    return gpu.mem.map(np.frombuffer(raw, np.uint8).copy())


def dispatch_packet(base: int, co, kernel: str, kernarg: int, groups: int, block: int, completion: int = 0,
                    barrier: int = 1) -> bytes:
    """A one-dimensional KERNEL_DISPATCH of groups workgroups of block work-items of the loaded kernel."""
    p = hsa.hsa_kernel_dispatch_packet_t(header=hdr(hsa.HSA_PACKET_TYPE_KERNEL_DISPATCH, barrier), setup=1,
                                         workgroup_size_x=block, workgroup_size_y=1, workgroup_size_z=1,
                                         grid_size_x=groups * block, grid_size_y=1, grid_size_z=1,
                                         kernel_object=base + co.kernels[kernel].descriptor_addr,
                                         kernarg_address=kernarg)
    p.completion_signal.handle = completion
    return bytes(p)


def dispatch_direct(gpu: GPU, base: int, co, kernel: str, kernarg: int, groups: int, block: int) -> list[int]:
    """PM4 packets that dispatch the loaded kernel as a runtime does: its COMPUTE_* registers from the descriptor
    (SET_SH_REG each), then DISPATCH_DIRECT over groups workgroups."""
    kd_va = base + co.kernels[kernel].descriptor_addr
    kd = gpu.mem.read_bytes(kd_va, 64)
    regs = kernel_registers(kd, kd_va, gpu.arch, (block, 1, 1),
                            user_sgpr_values(kd, gpu.arch, {"kernarg_segment_ptr": kernarg}))
    packets = []
    for name, value in regs.items():
        if name != "COMPUTE_DISPATCH_INITIATOR":
            packets += [nv.PACKET3(nv.PACKET3_SET_SH_REG, 1), gpu.reg_address(name) - nv.PACKET3_SET_SH_REG_START,
                        value]
    return [*packets, nv.PACKET3(nv.PACKET3_DISPATCH_DIRECT, 3), groups, 1, 1, regs["COMPUTE_DISPATCH_INITIATOR"]]
