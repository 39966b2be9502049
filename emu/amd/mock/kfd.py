"""A mock amdkfd: the sysfs topology it publishes, /dev/kfd and the render nodes, answering the real ioctl ABI
(kfd_ioctl.h structs and request numbers, the errno amdkfd gives) for MOCKGPU_COUNT GPUs of MOCKGPU_ARCH.

Memory objects are real shared memory (memfd): the process maps them at their GPU virtual address through the
render node, as with amdgpu, and the mock GPU sees the same pages in its VM (`gpu.mem`), mapped and unmapped by
MAP/UNMAP_MEMORY_TO_GPU; a GPU access outside them is a VM fault. Doorbells are MMIO views: a doorbell write runs
that GPU's queues (the cooperative scheduler) until none can make progress.
"""

from __future__ import annotations

import ctypes
import errno
import os
import time
from dataclasses import dataclass, field

import numpy as np

from usergpu.autogen import kfd
from usergpu.emu.amd.mock.aql import AQLQueue
from usergpu.emu.amd.mock.gpu import GPU, RingQueue
from usergpu.emu.amd.mock.pm4 import PM4Queue
from usergpu.emu.amd.mock.scheduler import Scheduler
from usergpu.emu.amd.mock.sdma import SDMAQueue
from usergpu.errors import DeviceNotFound
from usergpu.hostmem import MAP_SHARED, PAGE, PROT_READ, PROT_WRITE, CallbackMMIO, os_mmap, os_munmap, page_align, view

TOPOLOGY = "/sys/devices/virtual/kfd/kfd/topology"
# mmap offset types of /dev/kfd (kfd_priv.h: KFD_MMAP_TYPE_*, KFD_MMAP_GPU_ID)
MMAP_TYPE_SHIFT, MMAP_GPU_ID_SHIFT = 62, 46
MMAP_TYPE_DOORBELL, MMAP_TYPE_EVENTS = 3, 2
DOORBELL_PAGE = 0x2000  # one process's doorbells on one GPU: 8 KiB of 64-bit doorbells
MIN_RING = 1024  # KFD_MIN_QUEUE_RING_SIZE: a smaller ring (even 0) is taken as this
ENOTSUPP = 524  # the kernel-internal errno amdkfd returns for an unsupported queue type
# arch -> (gfx_target_version, PCI device id, marketing name, SIMDs, CUs per SA, arrays)
ARCHS = {"gfx1100": (110000, 0x744C, "Radeon RX 7900 XTX", 192, 8, 12),
         "gfx1200": (120000, 0x7551, "Radeon RX 9070 XT", 128, 8, 8)}
ENGINES = {kfd.KFD_IOC_QUEUE_TYPE_COMPUTE: PM4Queue, kfd.KFD_IOC_QUEUE_TYPE_SDMA: SDMAQueue,
           kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: AQLQueue}
ALLOC_KINDS = (kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM, kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT, kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
               kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, kfd.KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)


def ctx_save_restore_sizes(props: dict[str, int]) -> dict[str, int]:
    """amdkfd's sizes for a compute queue of a node (kfd_queue_ctx_save_restore_size, Linux 6.12): the control
    stack, the context save area (control stack + per-CU wave state), the debugger's bytes after it and the EOP
    buffer. It publishes the first two in the topology and refuses CREATE_QUEUE against all four."""
    gfxv = props["gfx_target_version"]
    cus = props["simd_count"] // props["simd_per_cu"] // max(props.get("num_xcc", 1), 1)
    pre_navi10 = gfxv < 100100
    waves = min(cus * 40, props["array_count"] // props["simd_arrays_per_engine"] * 512) if pre_navi10 else cus * 32
    vgprs = (0x80000 if gfxv // 100 == 904 or gfxv in (90008, 90010) else
             0x60000 if gfxv in (110000, 110001, 110501, 120000, 120001) else 0x40000)
    wave_state = page_align(cus * (vgprs + 0x4000 + 0x10000 + 0x1000))  # VGPRs, SGPRs, LDS, HW registers per CU
    ctl_stack = page_align(40 + waves * (8 if pre_navi10 else 12) + 8)  # header, a record per wave, the end
    if gfxv // 10000 == 10:
        ctl_stack = min(ctl_stack, 0x7000)  # the hardware's limit on gfx10
    return {"ctl_stack_size": ctl_stack, "cwsr_size": ctl_stack + wave_state,
            "debug_memory_size": -(-waves * 32 // 64) * 64, "eop_buffer_size": 0x8000 if gfxv == 80002 else 4096}


def fail(code: int, what: str) -> OSError:
    return OSError(code, f"{what}: {os.strerror(code)}")


@dataclass
class BO:
    """A memory object: its pages (memfd-backed, or the user's for USERPTR) and where they are mapped."""

    handle: int
    gpu_id: int
    va: int
    size: int
    flags: int
    address: int  # the CPU address of the mock's own view of the pages
    memfd: int | None
    mapped: set[int] = field(default_factory=set)

    def array(self) -> np.ndarray:
        return np.frombuffer(view(self.address, self.size), np.uint8)


@dataclass
class Event:
    event_id: int
    event_type: int
    auto_reset: bool
    signaled: bool = False
    data: object = None  # memory exception data for a memory event


class Node:
    """One mock GPU: its topology entry and, per process, its VM and queues."""

    def __init__(self, index: int, arch: str):
        self.index, self.arch = index, arch
        self.gpu_id = 0x4000 + 0x1111 * (index + 1)  # amdkfd's are hashes; any stable nonzero value serves
        self.gpu = GPU(arch)
        self.scheduler = Scheduler()
        self.queues: dict[int, RingQueue] = {}

    @property
    def props(self) -> dict[str, int]:
        version, device, _, simds, cus, arrays = ARCHS[self.arch]
        props = {"cpu_cores_count": 0, "simd_count": simds, "mem_banks_count": 1, "caches_count": 0,
                 "io_links_count": 0, "p2p_links_count": 0, "cpu_core_id_base": 0,
                 "simd_id_base": 0x80001000 + 0x100 * self.index, "max_waves_per_simd": 16, "lds_size_in_kb": 64,
                 "gds_size_in_kb": 0, "num_gws": 64, "wave_front_size": 32, "array_count": arrays,
                 "simd_arrays_per_engine": 2, "cu_per_simd_array": cus, "simd_per_cu": 2,
                 "max_slots_scratch_cu": 32, "gfx_target_version": version, "vendor_id": 0x1002,
                 "device_id": device, "location_id": (0x03 + self.index) << 8, "domain": 0,
                 "drm_render_minor": 128 + self.index, "hive_id": 0, "num_sdma_engines": 2,
                 "num_sdma_xgmi_engines": 0, "num_sdma_queues_per_engine": 6, "num_cp_queues": 8,
                 "max_engine_clk_fcompute": 2500, "local_mem_size": 0, "fw_version": 2140, "capability": 0,
                 "sdma_fw_version": 21, "unique_id": 0x1000 + self.index, "num_xcc": 1,
                 "max_engine_clk_ccompute": 3000}
        sizes = ctx_save_restore_sizes(props)
        return props | {"cwsr_size": sizes["cwsr_size"], "ctl_stack_size": sizes["ctl_stack_size"]}

    def properties(self) -> str:
        """The topology's properties file."""
        return "".join(f"{k} {v}\n" for k, v in self.props.items())


class MockKFD:
    """The driver side of the mock: nodes, memory objects and events of the one process using it."""

    def __init__(self, hal, arch: str = "gfx1100", count: int = 1):
        """hal: the MockHAL whose root receives the sysfs tree and whose install() takes the device files."""
        if arch not in ARCHS:
            raise DeviceNotFound(f"MOCKGPU_ARCH {arch!r}: the mock KFD models {', '.join(ARCHS)}")
        self.hal, self.arch = hal, arch
        self.nodes = [Node(i, arch) for i in range(count)]
        self.bos: dict[int, BO] = {}
        self.next_handle = 0
        self.events: dict[int, Event] = {}
        self.event_page: BO | None = None
        self._publish()
        hal.install("/dev/kfd", lambda: KFDFile(self))
        for n in self.nodes:
            hal.install(f"/dev/dri/renderD{128 + n.index}", lambda: RenderFile(self))
            n.gpu.interrupt_handlers.append(self._interrupt)

    def _publish(self) -> None:
        """The topology as amdkfd lays it out in sysfs: node 0 the CPU, then one node per GPU."""
        root = self.hal.root / TOPOLOGY.lstrip("/")
        cpu = root / "nodes/0"
        cpu.mkdir(parents=True, exist_ok=True)
        (cpu / "properties").write_text("cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\nlocation_id 0\n"
                                        "domain 0\n")
        (cpu / "gpu_id").write_text("0\n")
        for n in self.nodes:
            d = root / f"nodes/{n.index + 1}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "properties").write_text(n.properties())
            (d / "gpu_id").write_text(f"{n.gpu_id}\n")
            (d / "name").write_text(f"{self.arch}\n")
        (root / "generation_id").write_text("1\n")
        for n in self.nodes:  # the PCI functions the nodes' location_ids name, bound to amdgpu
            version, device, *_ = ARCHS[self.arch]
            pci = self.hal.root / f"sys/bus/pci/devices/0000:{0x03 + n.index:02x}:00.0"
            pci.mkdir(parents=True, exist_ok=True)
            for name, value in (("vendor", 0x1002), ("device", device), ("class", 0x030000)):
                (pci / name).write_text(f"{value:#06x}\n")
            driver = self.hal.root / "sys/bus/pci/drivers/amdgpu"
            driver.mkdir(parents=True, exist_ok=True)
            if not (pci / "driver").exists():
                (pci / "driver").symlink_to(driver)
        (root / "system_properties").write_text("platform_oem 0\nplatform_id 0\nplatform_rev 0\n")

    def node(self, gpu_id: int, what: str) -> Node:
        for n in self.nodes:
            if n.gpu_id == gpu_id:
                return n
        raise fail(errno.EINVAL, f"{what}: no GPU with gpu_id {gpu_id:#x}")

    def run(self) -> None:
        """Every GPU's queues until none can make progress (a doorbell, or a wait that must see the GPU's work);
        a queue waiting on another GPU's write resumes when that GPU has run. A fault or a hang stops its queue
        and is raised to the caller."""
        stalled = True
        while stalled:
            before = [n.gpu.ticks for n in self.nodes]
            stalled = any([n.scheduler.run() for n in self.nodes])
            if [n.gpu.ticks for n in self.nodes] == before:
                return

    def _interrupt(self, source: str, context_id: int) -> None:
        """An interrupt a GPU raised (RELEASE_MEM INT_SEL, SDMA TRAP): its context id names a signal event."""
        ev = self.events.get(context_id)
        if ev is not None:
            ev.signaled = True


class RenderFile:
    """A render node: the process maps memory objects' pages at their GPU address through it."""

    def __init__(self, kfd_: MockKFD):
        self.kfd = kfd_

    def ioctl(self, request: int, arg: ctypes.Structure) -> None:
        raise fail(errno.ENOTTY, f"render node ioctl {request:#x}: the mock serves only mmap")

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        bo = next((b for b in self.kfd.bos.values() if b.memfd is not None and b.handle * PAGE == offset), None)
        if bo is None or length > bo.size:
            raise fail(errno.EINVAL, f"mmap of {length:#x} bytes at offset {offset:#x}: no such memory object")
        return os_mmap(address, length, prot, flags | MAP_SHARED, bo.memfd, 0)

    def mmio(self, length: int, offset: int, width: int) -> CallbackMMIO:
        raise fail(errno.EINVAL, "a render node has no MMIO")


class KFDFile:
    """/dev/kfd, opened: the ioctls of kfd_chardev.c, its doorbell and event-page mmaps."""

    def __init__(self, kfd_: MockKFD):
        self.kfd = kfd_
        self.handlers = {
            kfd.AMDKFD_IOC_GET_VERSION: self.get_version, kfd.AMDKFD_IOC_ACQUIRE_VM: self.acquire_vm,
            kfd.AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: self.apertures,
            kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: self.alloc, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU: self.free,
            kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU: self.map, kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: self.unmap,
            kfd.AMDKFD_IOC_CREATE_QUEUE: self.create_queue, kfd.AMDKFD_IOC_DESTROY_QUEUE: self.destroy_queue,
            kfd.AMDKFD_IOC_CREATE_EVENT: self.create_event, kfd.AMDKFD_IOC_DESTROY_EVENT: self.destroy_event,
            kfd.AMDKFD_IOC_SET_EVENT: self.set_event, kfd.AMDKFD_IOC_RESET_EVENT: self.reset_event,
            kfd.AMDKFD_IOC_WAIT_EVENTS: self.wait_events, kfd.AMDKFD_IOC_GET_CLOCK_COUNTERS: self.clock_counters,
            kfd.AMDKFD_IOC_SET_MEMORY_POLICY: lambda a: None, kfd.AMDKFD_IOC_SET_SCRATCH_BACKING_VA: lambda a: None,
            kfd.AMDKFD_IOC_SET_XNACK_MODE: lambda a: None,
        }
        self.by_nr = {ioc.nr: ioc for ioc in self.handlers}
        self.acquired: set[int] = set()

    # ---- the ioctl entry, as kfd_ioctl() checks it --------------------------------------------------------------
    def ioctl(self, request: int, arg: ctypes.Structure) -> None:
        nr, size = request & 0xFF, (request >> 16) & 0x3FFF
        if (request >> 8) & 0xFF != kfd.AMDKFD_IOCTL_BASE or nr not in self.by_nr:
            raise fail(errno.ENOTTY, f"kfd ioctl {request:#x}")
        ioc = self.by_nr[nr]
        if ctypes.sizeof(arg) < size:
            raise fail(errno.EFAULT, f"{ioc.struct.__name__}: {size} bytes asked, the buffer has {ctypes.sizeof(arg)}")
        # the kernel copies in the caller's size, zero-filling up to its own, runs, and copies the caller's size back
        kernel = ioc.struct()
        n = min(size, ctypes.sizeof(kernel))
        ctypes.memmove(ctypes.addressof(kernel), ctypes.addressof(arg), n)
        self.handlers[ioc](kernel)
        ctypes.memmove(ctypes.addressof(arg), ctypes.addressof(kernel), n)

    # ---- ioctls ---------------------------------------------------------------------------------------------------
    def get_version(self, a) -> None:
        a.major_version, a.minor_version = kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION

    def acquire_vm(self, a) -> None:
        self.kfd.node(a.gpu_id, "ACQUIRE_VM")
        self.acquired.add(a.gpu_id)

    def apertures(self, a) -> None:
        if a.num_of_nodes == 0:
            a.num_of_nodes = len(self.kfd.nodes)
            return
        out = (kfd.struct_kfd_process_device_apertures * len(self.kfd.nodes)).from_address(
            a.kfd_process_device_apertures_ptr)
        for slot, n in zip(out, self.kfd.nodes[: a.num_of_nodes], strict=False):
            slot.gpu_id = n.gpu_id
            slot.lds_base, slot.lds_limit = 0x1 << 48, (0x1 << 48) | 0xFFFFFFFF
            slot.scratch_base, slot.scratch_limit = 0x2 << 48, (0x2 << 48) | 0xFFFFFFFF
            slot.gpuvm_base, slot.gpuvm_limit = 0x1000000, (1 << 47) - 1
        a.num_of_nodes = min(a.num_of_nodes, len(self.kfd.nodes))

    def alloc(self, a) -> None:
        self.kfd.node(a.gpu_id, "ALLOC_MEMORY_OF_GPU")
        kind = a.flags & sum(ALLOC_KINDS)
        if a.size == 0 or kind not in ALLOC_KINDS or a.va_addr % PAGE or a.size % PAGE:
            raise fail(errno.EINVAL, f"ALLOC_MEMORY_OF_GPU of {a.size:#x} bytes at {a.va_addr:#x}, flags {a.flags:#x}")
        self.kfd.next_handle += 1  # amdkfd's are idr ids: never reused while the object lives
        handle = (a.gpu_id << 32) | self.kfd.next_handle
        if kind == kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR:
            if a.mmap_offset % PAGE:
                raise fail(errno.EINVAL, f"ALLOC_MEMORY_OF_GPU: user pointer {a.mmap_offset:#x} is not page-aligned")
            bo = BO(handle, a.gpu_id, a.va_addr, a.size, a.flags, a.mmap_offset, None)
        else:
            memfd = os.memfd_create(f"kfd-bo-{handle:#x}")
            os.ftruncate(memfd, a.size)
            address = os_mmap(0, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0)
            bo = BO(handle, a.gpu_id, a.va_addr, a.size, a.flags, address, memfd)
            a.mmap_offset = handle * PAGE  # the render node's offset for it
        self.kfd.bos[handle] = bo
        a.handle = handle

    def _bo(self, handle: int, what: str) -> BO:
        if handle not in self.kfd.bos:
            raise fail(errno.EINVAL, f"{what}: no memory object with handle {handle:#x}")
        return self.kfd.bos[handle]

    def free(self, a) -> None:
        bo = self._bo(a.handle, "FREE_MEMORY_OF_GPU")
        for gpu_id in list(bo.mapped):
            self.kfd.node(gpu_id, "FREE_MEMORY_OF_GPU").gpu.mem.unmap(bo.va)
        if bo.memfd is not None:
            os_munmap(bo.address, bo.size)
            os.close(bo.memfd)
        del self.kfd.bos[a.handle]

    def _devices(self, a, what: str) -> list[Node]:
        if a.n_devices == 0 or a.n_success > a.n_devices:
            raise fail(errno.EINVAL, f"{what}: {a.n_devices} devices, {a.n_success} done")
        ids = (ctypes.c_uint32 * a.n_devices).from_address(a.device_ids_array_ptr)
        return [self.kfd.node(i, what) for i in ids[a.n_success:]]

    def map(self, a) -> None:
        bo = self._bo(a.handle, "MAP_MEMORY_TO_GPU")
        for n in self._devices(a, "MAP_MEMORY_TO_GPU"):
            if n.gpu_id not in bo.mapped:
                try:
                    n.gpu.mem.map_at(bo.va, bo.array())
                except ValueError as e:  # a VA range already mapped: amdgpu_vm_bo_map's answer
                    raise fail(errno.EINVAL, f"MAP_MEMORY_TO_GPU: {e}") from None
                bo.mapped.add(n.gpu_id)
            a.n_success += 1

    def unmap(self, a) -> None:
        bo = self._bo(a.handle, "UNMAP_MEMORY_FROM_GPU")
        for n in self._devices(a, "UNMAP_MEMORY_FROM_GPU"):
            if n.gpu_id in bo.mapped:
                n.gpu.mem.unmap(bo.va)
                bo.mapped.discard(n.gpu_id)
            a.n_success += 1

    def create_queue(self, a) -> None:
        n = self.kfd.node(a.gpu_id, "CREATE_QUEUE")
        if a.queue_percentage & 0xFF > 100 or a.queue_priority > 15:
            raise fail(errno.EINVAL, f"CREATE_QUEUE: percentage {a.queue_percentage}, priority {a.queue_priority}")
        if a.ring_size & (a.ring_size - 1):
            raise fail(errno.EINVAL, f"CREATE_QUEUE: ring size {a.ring_size:#x} is not a power of two")
        if a.queue_type not in ENGINES:
            raise fail(ENOTSUPP, f"CREATE_QUEUE: queue type {a.queue_type}")
        a.ring_size = max(a.ring_size, MIN_RING)
        self._acquire_buffers(n, a)
        queue_id = max((q for node in self.kfd.nodes for q in node.queues), default=-1) + 1
        queue = ENGINES[a.queue_type](n.gpu, a.ring_base_address, a.ring_size, a.read_pointer_address,
                                      a.write_pointer_address, f"{ENGINES[a.queue_type].kind} queue {queue_id}")
        n.queues[queue_id] = queue
        n.scheduler.add(queue)
        a.queue_id = queue_id
        a.doorbell_offset = (MMAP_TYPE_DOORBELL << MMAP_TYPE_SHIFT | n.gpu_id << MMAP_GPU_ID_SHIFT) + 8 * queue_id

    def _acquire_buffers(self, n: Node, a) -> None:
        """kfd_queue_acquire_buffers: each buffer of the queue is a memory object mapped on this GPU that starts at
        the buffer's page and (where a size is expected) ends where the buffer does; a compute queue's EOP buffer and
        CWSR area are at least the node's sizes and its control stack exactly the node's; else EINVAL."""
        def buffer(address: int, size: int, what: str) -> None:
            bo = next((b for b in self.kfd.bos.values() if n.gpu_id in b.mapped and b.va <= address < b.va + b.size),
                      None)
            if bo is None or bo.va != address // PAGE * PAGE or (size >= PAGE and bo.size != size // PAGE * PAGE):
                got = f"a {bo.size:#x}-byte object at {bo.va:#x}" if bo else "nothing mapped"
                raise fail(errno.EINVAL, f"CREATE_QUEUE: the {what} at {address:#x} needs an object of {size:#x} "
                                         f"bytes starting at its page, found {got}")

        buffer(a.write_pointer_address, PAGE, "write pointer")
        buffer(a.read_pointer_address, PAGE, "read pointer")
        buffer(a.ring_base_address, a.ring_size, "ring")
        if a.queue_type == kfd.KFD_IOC_QUEUE_TYPE_SDMA:
            return
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

    def destroy_queue(self, a) -> None:
        for n in self.kfd.nodes:
            if a.queue_id in n.queues:
                n.scheduler.remove(n.queues.pop(a.queue_id))
                return
        raise fail(errno.EINVAL, f"DESTROY_QUEUE: no queue {a.queue_id}")

    def create_event(self, a) -> None:
        if a.event_type == kfd.KFD_IOC_EVENT_SIGNAL and self.kfd.event_page is None:
            if not a.event_page_offset:
                raise fail(errno.EINVAL, "CREATE_EVENT: the first signal event needs an event page")
            self.kfd.event_page = self._bo(a.event_page_offset, "CREATE_EVENT (event page)")
        event_id = max(self.kfd.events, default=0) + 1
        self.kfd.events[event_id] = Event(event_id, a.event_type, bool(a.auto_reset))
        a.event_id, a.event_slot_index = event_id, event_id

    def _event(self, event_id: int, what: str) -> Event:
        if event_id not in self.kfd.events:
            raise fail(errno.EINVAL, f"{what}: no event {event_id}")
        return self.kfd.events[event_id]

    def destroy_event(self, a) -> None:
        del self.kfd.events[self._event(a.event_id, "DESTROY_EVENT").event_id]

    def set_event(self, a) -> None:
        self._event(a.event_id, "SET_EVENT").signaled = True

    def reset_event(self, a) -> None:
        self._event(a.event_id, "RESET_EVENT").signaled = False

    def wait_events(self, a) -> None:
        """Run the GPUs (what the waiter waits for happens as the queues run), then report: the mock cannot make
        progress while the caller is blocked, so an event still unsignaled is a timeout at once."""
        data = (kfd.struct_kfd_event_data * a.num_events).from_address(a.events_ptr)
        events = [self._event(d.event_id, "WAIT_EVENTS") for d in data]
        self.kfd.run()
        done = [e.signaled for e in events]
        if all(done) if a.wait_for_all else any(done):
            for d, e in zip(data, events, strict=True):
                if e.signaled and e.data is not None:
                    d.memory_exception_data = e.data
                if e.signaled and e.auto_reset:
                    e.signaled = False
            a.wait_result = kfd.KFD_IOC_WAIT_RESULT_COMPLETE
        else:
            a.wait_result = kfd.KFD_IOC_WAIT_RESULT_TIMEOUT

    def clock_counters(self, a) -> None:
        n = self.kfd.node(a.gpu_id, "GET_CLOCK_COUNTERS")
        a.gpu_clock_counter = n.gpu.timestamp()
        a.cpu_clock_counter = a.system_clock_counter = time.monotonic_ns()
        a.system_clock_freq = 1_000_000_000

    # ---- mmaps ----------------------------------------------------------------------------------------------------
    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        if offset >> MMAP_TYPE_SHIFT == MMAP_TYPE_EVENTS and self.kfd.event_page is not None:
            page = self.kfd.event_page
            return os_mmap(address, length, prot, flags | MAP_SHARED, page.memfd, 0) if page.memfd is not None \
                else page.address
        raise fail(errno.EINVAL, f"/dev/kfd mmap at offset {offset:#x}: doorbells are MMIO (hal.mmio)")

    def mmio(self, length: int, offset: int, width: int) -> CallbackMMIO:
        if offset >> MMAP_TYPE_SHIFT != MMAP_TYPE_DOORBELL:
            raise fail(errno.EINVAL, f"/dev/kfd MMIO at offset {offset:#x}")
        self.kfd.node((offset >> MMAP_GPU_ID_SHIFT) & 0xFFFF, "doorbell mmap")
        values: dict[int, int] = {}

        def write(index: int, value: int) -> None:
            values[index] = value
            self.kfd.run()
        return CallbackMMIO(lambda index: values.get(index, 0), write)

