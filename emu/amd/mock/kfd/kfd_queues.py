"""The queue ioctls of the mock /dev/kfd (kfd_chardev.c's): user-mode queues created on a GPU's engines over
buffers in the process's memory objects, destroyed, and an inactive one's saved wave state; and the sizes amdkfd
gives a node's compute queues (the control stack, the CWSR area, the EOP buffer)."""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING

from usergpu.autogen import kfd
from usergpu.emu.amd.mock.aql import AQLQueue
from usergpu.emu.amd.mock.kfd.objects import BO, MMAP_GPU_ID_SHIFT, MMAP_TYPE_DOORBELL, MMAP_TYPE_SHIFT, Held
from usergpu.emu.amd.mock.pm4 import PM4Queue
from usergpu.emu.amd.mock.sdma import SDMAQueue
from usergpu.emu.mock.uaccess import access_ok, copy_to_user, fail
from usergpu.hostmem import PAGE, page_align

if TYPE_CHECKING:
    from usergpu.emu.amd.mock.kfd.kfd import MockKFD, Node

MIN_RING = 1024  # KFD_MIN_QUEUE_RING_SIZE: a smaller ring (even 0) is taken as this
ENOTSUPP = 524  # the kernel-internal errno amdkfd returns for an unsupported queue type
COMPUTE_TYPES = (kfd.KFD_IOC_QUEUE_TYPE_COMPUTE, kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL)  # amdkfd's KFD_QUEUE_TYPE_COMPUTE
ENGINES = {kfd.KFD_IOC_QUEUE_TYPE_COMPUTE: PM4Queue, kfd.KFD_IOC_QUEUE_TYPE_SDMA: SDMAQueue,
           kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: AQLQueue}
MAX_QUEUES = 1024  # KFD_MAX_NUM_OF_QUEUES_PER_PROCESS: the doorbell page has one slot each


def ctx_save_restore_sizes(props: dict[str, int]) -> dict[str, int]:
    """amdkfd's sizes for a compute queue of a node (kfd_queue_ctx_save_restore_size, Linux 6.12): the control
    stack, the context save area (control stack + per-CU wave state), the debugger's bytes after it and the EOP
    buffer. It publishes the first two in the topology and refuses CREATE_QUEUE against all four."""
    gfxv = props["gfx_target_version"]
    cus = props["simd_count"] // props["simd_per_cu"] // max(props.get("num_xcc", 1), 1)
    pre_navi10 = gfxv < 100100
    waves = min(cus * 40, props["array_count"] // props["simd_arrays_per_engine"] * 512) if pre_navi10 else cus * 32
    # gfx950 is the kernel's that runs it (6.12 has none): "Update cwsr area size for gfx950" gives it 0x80000 bytes
    # of VGPRs and the node's whole LDS per CU
    vgprs = (0x80000 if gfxv // 100 == 904 or gfxv in (90008, 90010, 90500) else
             0x60000 if gfxv in (110000, 110001, 110501, 120000, 120001) else 0x40000)
    lds = props["lds_size_in_kb"] << 10 if gfxv == 90500 else 0x10000
    wave_state = page_align(cus * (vgprs + 0x4000 + lds + 0x1000))  # VGPRs, SGPRs, LDS, HW registers per CU
    ctl_stack = page_align(40 + waves * (8 if pre_navi10 else 12) + 8)  # header, a record per wave, the end
    if gfxv // 10000 == 10:
        ctl_stack = min(ctl_stack, 0x7000)  # the hardware's limit on gfx10
    return {"ctl_stack_size": ctl_stack, "cwsr_size": ctl_stack + wave_state,
            "debug_memory_size": -(-waves * 32 // 64) * 64, "eop_buffer_size": 0x8000 if gfxv == 80002 else 4096}


class QueueIoctls:
    """The queue ioctls of a KFDFile."""

    kfd: MockKFD

    def create_queue(self, a) -> None:
        """set_queue_properties_from_user, then the GPU (EINVAL; ESRCH before ACQUIRE_VM), then the buffers."""
        what = "CREATE_QUEUE"
        if a.queue_percentage & 0xFF > 100 or a.queue_priority > 15:
            raise fail(errno.EINVAL, f"{what}: percentage {a.queue_percentage}, priority {a.queue_priority}")
        if a.ring_base_address and not access_ok(a.ring_base_address, 8):
            raise fail(errno.EFAULT, f"{what}: ring at {a.ring_base_address:#x} is outside the user address space")
        if a.ring_size & (a.ring_size - 1):
            raise fail(errno.EINVAL, f"{what}: ring size {a.ring_size:#x} is not a power of two")
        pointers = [a.read_pointer_address, a.write_pointer_address] + [
            p for p in (a.eop_buffer_address, a.ctx_save_restore_address) if p]
        if not all(access_ok(p, 4) for p in pointers):
            raise fail(errno.EFAULT, f"{what}: a buffer address is outside the user address space")
        if a.queue_type not in ENGINES:
            raise fail(ENOTSUPP, f"{what}: queue type {a.queue_type} (the mock models PM4, AQL and SDMA)")
        a.ring_size = max(a.ring_size, MIN_RING)
        n = self.kfd.bound(a.gpu_id, what, errno.ESRCH)
        queue_id = next((q for q in range(MAX_QUEUES) if q not in self.kfd.held), None)
        if queue_id is None:
            raise fail(errno.ENOMEM, f"{what}: the process has {MAX_QUEUES} queues")
        held = self._acquire_buffers(n, a)
        engine = ENGINES[a.queue_type]
        name, extra = f"{engine.kind} queue {queue_id}", {}
        if a.queue_type in COMPUTE_TYPES:  # init_mqd_v9_4_3: each compute queue moves the logical XCC start on
            n.logical_xcc_start += 1
            if engine is AQLQueue:
                extra["logical_start"] = (n.logical_xcc_start - 1) % n.gpu.xccs
        queue = engine(n.gpu, a.ring_base_address, a.ring_size, a.read_pointer_address, a.write_pointer_address, name,
                       **extra)
        for bo in held:
            bo.queue_refs[n.gpu_id] += 1
        self.kfd.held[queue_id] = Held(self, held, a.queue_type, a.queue_percentage & 0xFF, a.ctl_stack_size)
        n.queues[queue_id] = queue
        if self.kfd.active(n, queue_id):  # an inactive queue is not mapped to the hardware: its doorbell does nothing
            n.scheduler.add(queue)
        a.queue_id = queue_id
        a.doorbell_offset = (MMAP_TYPE_DOORBELL << MMAP_TYPE_SHIFT | n.gpu_id << MMAP_GPU_ID_SHIFT) + 8 * queue_id

    def _acquire_buffers(self, n: Node, a) -> list[BO]:
        """kfd_queue_acquire_buffers: each buffer of the queue is a memory object mapped on this GPU that starts at
        the buffer's page and (where a size is expected) ends where the buffer does; a compute queue's EOP buffer and
        CWSR area are at least the node's sizes and its control stack exactly the node's; else EINVAL. The objects,
        which the queue holds until it is destroyed."""
        held = []

        def buffer(address: int, size: int, what: str) -> None:
            bo = self.kfd.bo_at(n, address)
            if bo is None or bo.va != address // PAGE * PAGE or (size >= PAGE and bo.size != size // PAGE * PAGE):
                got = f"a {bo.size:#x}-byte object at {bo.va:#x}" if bo else "nothing mapped"
                raise fail(errno.EINVAL, f"CREATE_QUEUE: the {what} at {address:#x} needs an object of {size:#x} "
                                         f"bytes starting at its page, found {got}")
            held.append(bo)

        buffer(a.write_pointer_address, PAGE, "write pointer")
        buffer(a.read_pointer_address, PAGE, "read pointer")
        buffer(a.ring_base_address, a.ring_size, "ring")
        if a.queue_type == kfd.KFD_IOC_QUEUE_TYPE_SDMA:
            return held
        sizes = ctx_save_restore_sizes(n.props)
        if a.eop_buffer_address:
            if a.eop_buffer_size < sizes["eop_buffer_size"]:
                raise fail(errno.EINVAL, f"CREATE_QUEUE: EOP buffer of {a.eop_buffer_size:#x} bytes, the node needs "
                                         f"{sizes['eop_buffer_size']:#x}")
            buffer(a.eop_buffer_address, page_align(a.eop_buffer_size), "EOP buffer")
        if a.ctl_stack_size != sizes["ctl_stack_size"] or a.ctx_save_restore_size < sizes["cwsr_size"]:
            raise fail(errno.EINVAL, f"CREATE_QUEUE: control stack {a.ctl_stack_size:#x} and CWSR area "
                                     f"{a.ctx_save_restore_size:#x} bytes, the node's are {sizes['ctl_stack_size']:#x}"
                                     f" and {sizes['cwsr_size']:#x}")
        area = (a.ctx_save_restore_size + sizes["debug_memory_size"]) * n.props["num_xcc"]
        buffer(a.ctx_save_restore_address, page_align(area), "CWSR area")
        return held

    def destroy_queue(self, a) -> None:
        n = next((n for n in self.kfd.nodes if a.queue_id in n.queues), None)
        if n is None:
            raise fail(errno.EINVAL, f"DESTROY_QUEUE: no queue {a.queue_id}")
        self.kfd.destroy_queue(n, a.queue_id)

    def queue_wave_state(self, a) -> None:
        """pqm_get_wave_state, then get_wave_state (mqd v11/v12): EFAULT for no such queue, EINVAL unless it is a
        compute queue that is not active (evicted, or made with percentage 0); then the sizes of its saved control
        stack and wave state, both growing from ctl_stack_size (the mock GPUs save no waves: 0 and 0), and their
        offsets and sizes written at ctl_stack_address (EFAULT where that cannot be written)."""
        what = "GET_QUEUE_WAVE_STATE"
        n = next((n for n in self.kfd.nodes if a.queue_id in n.queues), None)
        if n is None:
            raise fail(errno.EFAULT, f"{what}: no queue {a.queue_id}")
        held = self.kfd.held[a.queue_id]
        if held.queue_type not in COMPUTE_TYPES or self.kfd.active(n, a.queue_id):
            raise fail(errno.EINVAL, f"{what}: queue {a.queue_id} is not an inactive compute queue")
        a.ctl_stack_used_size = a.save_area_used_size = 0
        header = kfd.struct_kfd_context_save_area_header_wave_state(control_stack_offset=held.ctl_stack_size,
                                                                     wave_state_offset=held.ctl_stack_size)
        copy_to_user(a.ctl_stack_address, bytes(header), what)
