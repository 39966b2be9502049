"""The AQL queue: HSA packets (kernel dispatch, barrier-AND, AMD vendor PM4 IB) in 64-byte slots, published by
writing the header last, submitted by the write dispatch id in the queue's amd_queue_t and the doorbell."""

from __future__ import annotations

import ctypes

from usergpu.autogen import amdhsa as hsa
from usergpu.errors import Error

SLOTS = 256
SLOT = 64
AMD_AQL_FORMAT_PM4_IB = 1  # ROCr's vendor packet format for a PM4 indirect buffer
SYSTEM = hsa.HSA_FENCE_SCOPE_SYSTEM


def header(kind: int, barrier: bool = True) -> int:
    return (kind << hsa.HSA_PACKET_HEADER_TYPE | int(barrier) << hsa.HSA_PACKET_HEADER_BARRIER
            | SYSTEM << hsa.HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE | SYSTEM << hsa.HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE)


def kernel_dispatch(kd_va: int, kernarg_va: int, grid: tuple, block: tuple, lds: int, scratch: int,
                    completion: int) -> bytes:
    """A KERNEL_DISPATCH packet: grid counts workgroups here; the packet's grid size is in work-items."""
    p = hsa.hsa_kernel_dispatch_packet_t(
        header=header(hsa.HSA_PACKET_TYPE_KERNEL_DISPATCH), setup=3, workgroup_size_x=block[0],
        workgroup_size_y=block[1], workgroup_size_z=block[2], grid_size_x=grid[0] * block[0],
        grid_size_y=grid[1] * block[1], grid_size_z=grid[2] * block[2], private_segment_size=scratch,
        group_segment_size=lds, kernel_object=kd_va, kernarg_address=kernarg_va)
    p.completion_signal.handle = completion
    return bytes(p)


def barrier_and(signals: list[int], completion: int = 0) -> bytes:
    """Wait until every signal (up to 5 amd_signal_t addresses) has value 0."""
    p = hsa.hsa_barrier_and_packet_t(header=header(hsa.HSA_PACKET_TYPE_BARRIER_AND))
    for slot, s in zip(p.dep_signal, signals, strict=False):
        slot.handle = s
    p.completion_signal.handle = completion
    return bytes(p)


def pm4_ib(jump: list[int]) -> bytes:
    """An AMD vendor packet running a PM4 indirect buffer (signals, timestamps) in queue order: its ib_jump_cmd is
    the INDIRECT_BUFFER packet jump (4 dwords, pm4.Packets.indirect_buffer)."""
    raw = bytearray(SLOT)
    hdr = hsa.hsa_amd_vendor_packet_header_t(header=header(hsa.HSA_PACKET_TYPE_VENDOR_SPECIFIC),
                                             AmdFormat=AMD_AQL_FORMAT_PM4_IB)
    raw[: ctypes.sizeof(hdr)] = bytes(hdr)
    raw[4:20] = b"".join(d.to_bytes(4, "little") for d in jump)
    return bytes(raw)


class AQLQueue:
    """A user-mode AQL queue of a device (a KFD COMPUTE_AQL queue)."""

    def __init__(self, dev):
        self.dev = dev
        self.ring = dev.memory(SLOTS * SLOT, "gtt")
        self.amd_queue = dev.memory(4096, "gtt")
        self.slots = self.ring.view()
        self.create()

    def create(self) -> None:
        self.index = 0
        for name in ("read_dispatch_id", "write_dispatch_id"):
            self._id(name)[0] = 0
        base = self.amd_queue.va
        self.queue = self.dev.driver.create_queue("aql", self.ring, base + hsa.amd_queue_t.read_dispatch_id.offset,
                                               base + hsa.amd_queue_t.write_dispatch_id.offset)

    def _id(self, name: str) -> memoryview:
        off = getattr(hsa.amd_queue_t, name).offset
        return self.amd_queue.view()[off : off + 8].cast("Q")

    def submit(self, packets: list[bytes]) -> None:
        """Write each packet, its header last (the CP sees a slot once the header is valid), then the doorbell."""
        for p in packets:
            off = self.index % SLOTS * SLOT
            self.slots[off + 2 : off + SLOT] = p[2:]
            self.slots[off : off + 2] = p[:2]
            self.index += 1
        self._id("write_dispatch_id")[0] = self.index
        try:
            self.queue.ring(self.index - 1)
        except Error:
            self.dev.driver.destroy_queue(self.queue)
            self.create()
            raise
