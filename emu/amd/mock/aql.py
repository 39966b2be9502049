"""An AQL queue: the CP's packet processor for HSA packets (64-byte slots) in a ring in GPU memory.

Pointers: as ROCr creates the queue through KFD, rptr_address is the amd_queue_t's read_dispatch_id and
wptr_address its write_dispatch_id: 64-bit packet indices (the slot is the index modulo the ring's slots). The
amd_queue_t the kernels get as queue_ptr is therefore rptr_address - offsetof(amd_queue_t, read_dispatch_id).

Packets (header type, HSA spec): KERNEL_DISPATCH (the CP's work: user SGPRs from the kernel descriptor,
COMPUTE_* registers, ceil(grid_size / workgroup_size) workgroups), BARRIER_AND / BARRIER_OR (up to 5 dependent
signals, done when all / any have value 0; none at all counts as done), VENDOR_SPECIFIC with AmdFormat
AMD_AQL_FORMAT_PM4_IB (its 4-dword INDIRECT_BUFFER packet runs on the PM4 command processor). An INVALID slot
(not yet published) stalls the queue, as does an unmet barrier. The header's barrier bit needs nothing: packets run
one after another. A completion signal (amd_signal_t) gets start_ts/end_ts, its value decremented by one, and, when
it has an event mailbox, event_id written there and a CP_EOP_INTERRUPT with event_id as context.

On a CDNA GPU every XCC's command processor takes every packet (amdkfd maps an AQL queue on each XCC with
compute_tg_chunk_size 1 and compute_current_logic_xcc_id (start + xcc) % XCCs, start moving on by one per queue:
init_mqd_v9_4_3), so a dispatch's workgroups go round-robin to the XCCs one at a time, the first to XCC `start`. A
packet is retired once, when the last XCC has done its part: the completion signal is decremented once, after every
XCC's workgroups have finished, and interrupts once, as a runtime that knows nothing of XCCs (ROCr waits for the
signal to reach 0) needs. A packet with the header's barrier bit waits until every XCC has retired the packets before
it; a vendor PM4 IB runs on each XCC (its PRED_EXEC picks which do what).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from usergpu.autogen import amdhsa as hsa
from usergpu.emu.amd.mock.gpu import GPU, RingQueue, XCCContext
from usergpu.emu.amd.mock.pm4 import CommandProcessor, Prefetch
from usergpu.isa.amd.dispatch import kernel_registers, user_sgpr_values

SLOT = 64
AMD_AQL_FORMAT_PM4_IB = 1  # ROCr amd_aql_queue.cpp: the vendor header of a PM4-IB packet
PM4_IB_DWORDS = 4  # its ib_jump_cmd: one INDIRECT_BUFFER packet
KD_BYTES = ctypes.sizeof(hsa.kernel_descriptor_t)
COMPLETION = hsa.hsa_kernel_dispatch_packet_t.completion_signal.offset  # the same offset in every packet type
TYPE_NAMES = {v: k.removeprefix("HSA_PACKET_TYPE_") for k, v in vars(hsa).items() if k.startswith("HSA_PACKET_TYPE_")}


def _signal_field(name: str) -> int:
    return getattr(hsa.amd_signal_t, name).offset


class AQLQueue(RingQueue):
    """An AQL queue: ring of `size` bytes at `ring`, packet indices at rptr_address / wptr_address; logical_start:
    the logical XCC id of its first XCC (amdkfd's current_logical_xcc_start when it was made)."""

    unit, kind = SLOT, "aql"

    def __init__(self, gpu: GPU, ring: int, size: int, rptr_address: int, wptr_address: int, name: str | None = None,
                 logical_start: int = 0):
        n = gpu.xccs
        super().__init__(gpu, ring, size, rptr_address, wptr_address, name,
                         [XCCContext(xcc, n, (logical_start + xcc) % n, 1) for xcc in range(n)])
        self.queue_ptr = rptr_address - hsa.amd_queue_t.read_dispatch_id.offset
        self.cp = CommandProcessor(self)
        self.done: dict[int, int] = {}  # packet index -> the XCCs that have done their part of it
        self.started: set[int] = set()  # the packets an XCC has begun and not every XCC has done

    def _packet(self, rptr: int, wptr: int) -> int | None:
        raw = self.read_ring(rptr, SLOT)
        kind = raw[0]
        self.at(f"{TYPE_NAMES.get(kind, 'unknown')} (type {kind})", "ring", rptr * SLOT % self.size)
        if kind == hsa.HSA_PACKET_TYPE_INVALID:
            return None
        if kind not in PACKETS:
            raise self.fail("unknown or unsupported packet type")
        barrier = int.from_bytes(raw[:2], "little") >> hsa.HSA_PACKET_HEADER_BARRIER & 1
        if barrier and self.taken < rptr:  # an XCC has a packet before this one left to retire
            return None
        if not PACKETS[kind](self, raw, rptr):
            return None
        self.gpu.packet_done()
        self.done[rptr] = self.done.get(rptr, 0) + 1
        if self.done[rptr] == len(self.contexts):  # the last XCC retires the packet
            del self.done[rptr]
            self.started.discard(rptr)
            self.complete(int.from_bytes(raw[COMPLETION : COMPLETION + 8], "little"))
        return rptr + 1

    def first(self, index: int) -> bool:
        """Whether the executing XCC is the first to begin the packet at index (which counts it begun)."""
        begun = index in self.started
        self.started.add(index)
        return not begun

    def slot(self, index: int) -> int:
        return self.ring + index * SLOT % self.size

    def signal_value(self, handle: int) -> int:
        return int.from_bytes(self.gpu.mem.read_bytes(handle + _signal_field("value"), 8), "little", signed=True)

    def complete(self, handle: int) -> None:
        """Signal a packet's completion on its amd_signal_t (none if the handle is 0)."""
        if not handle:
            return
        gpu = self.gpu
        gpu.store(handle + _signal_field("end_ts"), 8, gpu.timestamp())
        gpu.store(handle + _signal_field("value"), 8, self.signal_value(handle) - 1)
        mailbox = gpu.load(handle + _signal_field("event_mailbox_ptr"), 8)
        if mailbox:
            event = gpu.load(handle + _signal_field("event_id"), 4)
            gpu.store(mailbox, 8, event)
            self.end_of_pipe_interrupt(event)


def _kernel_dispatch(q: AQLQueue, raw: bytes, index: int) -> bool:
    pkt = hsa.hsa_kernel_dispatch_packet_t.from_buffer_copy(raw)
    gpu, dims = q.gpu, pkt.setup & 3
    kd = gpu.mem.read_bytes(pkt.kernel_object, KD_BYTES)
    preload = hsa.kernel_descriptor_t.from_buffer_copy(kd).kernarg_preload
    kernarg = pkt.kernarg_address or 0
    length, first = preload & hsa.KERNARG_PRELOAD_SPEC_LENGTH, preload >> hsa.KERNARG_PRELOAD_SPEC_OFFSET_SHIFT
    preload_bytes = 4 * (length + first)
    values = {"dispatch_ptr": q.slot(index), "queue_ptr": q.queue_ptr, "kernarg_segment_ptr": kernarg,
              "dispatch_id": index, "private_segment_size": pkt.private_segment_size,
              "kernarg_preload": gpu.mem.read_bytes(kernarg, preload_bytes) if preload else b""}
    block = (pkt.workgroup_size_x, pkt.workgroup_size_y, pkt.workgroup_size_z)[:dims] + (1,) * (3 - dims)
    sizes = (pkt.grid_size_x, pkt.grid_size_y, pkt.grid_size_z)[:dims] + (1,) * (3 - dims)
    if dims == 0 or min(block) < 1:
        raise q.fail(f"malformed: {dims} dimensions, workgroup size {block}")
    if q.ctx.running is None:  # the packet's first step starts the dispatch; later ones go on with it
        if pkt.completion_signal.handle and q.first(index):
            gpu.store(pkt.completion_signal.handle + _signal_field("start_ts"), 8, gpu.timestamp())
        user = user_sgpr_values(kd, gpu.isa, values)
        gpu.regs.update(kernel_registers(kd, pkt.kernel_object, gpu.isa, block, user, pkt.group_segment_size,
                                         pkt.private_segment_size))
    return q.run_dispatch(gpu.regs, tuple(-(-s // b) for s, b in zip(sizes, block, strict=True)))


def _barrier(combine: Callable[[list[bool]], bool]) -> Callable[[AQLQueue, bytes, int], bool]:
    def handler(q: AQLQueue, raw: bytes, index: int) -> bool:
        deps = [h.handle for h in hsa.hsa_barrier_and_packet_t.from_buffer_copy(raw).dep_signal if h.handle]
        return not deps or combine([q.signal_value(h) == 0 for h in deps])

    return handler


def _vendor(q: AQLQueue, raw: bytes, index: int) -> bool:
    if hsa.hsa_amd_vendor_packet_header_t.from_buffer_copy(raw).AmdFormat != AMD_AQL_FORMAT_PM4_IB:
        raise q.fail(f"vendor packet format {raw[2]} is not supported (only PM4_IB, {AMD_AQL_FORMAT_PM4_IB})")
    words = Prefetch(lambda pos, n: raw[4 + 4 * pos : 4 + 4 * (pos + n)], PM4_IB_DWORDS, PM4_IB_DWORDS)
    where = f"AQL slot {index * SLOT % q.size:#x} ib_jump_cmd"
    return q.cp.packet(words, 0, PM4_IB_DWORDS, where, 4, 0) is not None


PACKETS: dict[int, Callable[[AQLQueue, bytes, int], bool]] = {
    hsa.HSA_PACKET_TYPE_KERNEL_DISPATCH: _kernel_dispatch,
    hsa.HSA_PACKET_TYPE_BARRIER_AND: _barrier(all),
    hsa.HSA_PACKET_TYPE_BARRIER_OR: _barrier(any),
    hsa.HSA_PACKET_TYPE_VENDOR_SPECIFIC: _vendor,
}
