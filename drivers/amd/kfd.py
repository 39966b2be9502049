"""amdkfd from userspace: the GPUs of the topology, /dev/kfd and the render node, memory, queues and events.

The same code drives a real GPU (KFD+AMD) and the mock (MOCKKFD+AMD); only the HAL differs. Memory is mapped at
the same address for the CPU and the GPU (the VA is reserved with an anonymous mapping, then the memory object is
mapped there through the render node), so a Buffer's address serves both.
"""

from __future__ import annotations

import ctypes

from usergpu.autogen import kfd
from usergpu.autogen._support import Ioctl
from usergpu.drivers.amd.handles import Queue, reserve, unreserve
from usergpu.drivers.devices import KFD_NODES, _properties, gfx_arch
from usergpu.drivers.hal import (
    HAL,
    MAP_FIXED,
    MAP_SHARED,
    MMIO,
    PROT_READ,
    PROT_WRITE,
)
from usergpu.drivers.memobj import Memory
from usergpu.errors import DeviceNotFound, DriverError
from usergpu.hostmem import PAGE, page_align

KINDS = {"vram": kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM | kfd.KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC,
         "gtt": kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT, "userptr": kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR}
ALWAYS = kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE | \
    kfd.KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
QUEUE_TYPES = {"pm4": kfd.KFD_IOC_QUEUE_TYPE_COMPUTE, "aql": kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
               "sdma": kfd.KFD_IOC_QUEUE_TYPE_SDMA}
DOORBELL_PAGE = 0x2000
COMPUTE = ("pm4", "aql")  # amdkfd's KFD_QUEUE_TYPE_COMPUTE: the queues that need an EOP buffer and a CWSR area


def compute_queue_sizes(props: dict[str, int]) -> dict[str, int]:
    """What CREATE_QUEUE wants with a compute queue of this node, as libhsakmt works it out: the control stack and
    context save area sizes amdkfd publishes in the topology, the debugger's bytes after the save area (32 per
    wave slot, 64-byte aligned) and an EOP buffer of a page."""
    if "cwsr_size" not in props:
        raise DriverError("KFD topology", 0, "no cwsr_size/ctl_stack_size in the node's properties: amdkfd is "
                                             "older than this driver supports (linux 6.12)")
    gfxv = props["gfx_target_version"]
    cus = props["simd_count"] // props["simd_per_cu"] // max(props.get("num_xcc", 1), 1)
    waves = cus * 32 if gfxv >= 100100 else min(cus * 40, props["array_count"] // props["simd_arrays_per_engine"]
                                                * 512)
    return {"ctl_stack_size": props["ctl_stack_size"], "cwsr_size": props["cwsr_size"],
            "debug_memory_size": -(-waves * 32 // 64) * 64, "eop_buffer_size": PAGE}


def gpu_nodes(hal: HAL) -> list[tuple[int, dict[str, int]]]:
    """(node, properties) of each GPU node in amdkfd's topology, in node order."""
    out = []
    for node in hal.listdir(KFD_NODES):
        props = _properties(hal.read_text(f"{KFD_NODES}/{node}/properties") or "")
        if node.isdigit() and props.get("gfx_target_version"):
            out.append((int(node), props))
    return sorted(out)


class KFD:
    """One GPU of amdkfd's topology, opened for this process."""

    def __init__(self, hal: HAL, index: int = 0):
        self.hal = hal
        nodes = gpu_nodes(hal)
        if index >= len(nodes):
            raise DeviceNotFound(f"KFD GPU {index}: amdkfd's topology lists {len(nodes)} GPUs")
        self.node, self.properties = nodes[index]
        self.arch = gfx_arch(self.properties["gfx_target_version"])
        self.gpu_id = int((hal.read_text(f"{KFD_NODES}/{self.node}/gpu_id") or "0").strip())
        try:
            self.fd = hal.open("/dev/kfd")
            self.drm_fd = hal.open(f"/dev/dri/renderD{self.properties['drm_render_minor']}")
        except OSError as e:
            raise DriverError(f"open {e.filename or '/dev/kfd'}", e.errno or 0,
                              "is amdgpu loaded and are you in the render group?") from None
        version = self.ioctl(kfd.AMDKFD_IOC_GET_VERSION)
        if version.major_version != 1:
            raise DriverError("AMDKFD_IOC_GET_VERSION", 0, f"KFD ABI {version.major_version}.x is not 1.x")
        self.ioctl(kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=self.drm_fd, gpu_id=self.gpu_id)
        self._doorbells: MMIO | None = None
        self._event_pages: list[Memory] = []

    def ioctl(self, ioc: Ioctl, **fields) -> ctypes.Structure:
        """An ioctl with the struct's fields set from keywords; its struct after. DriverError names the request."""
        arg = ioc.struct(**fields)
        try:
            self.hal.ioctl(self.fd, ioc.request, arg)
        except OSError as e:
            name = next(k for k, v in vars(kfd).items() if v is ioc)
            raise DriverError(name, e.errno or 0, e.strerror or "") from None
        return arg

    # ---- memory -----------------------------------------------------------------------------------------------------
    def alloc(self, size: int, kind: str = "vram", uncached: bool = False) -> Memory:
        """Memory of a kind (vram, gtt, or userptr: this process's pages), mapped for CPU and GPU at one address."""
        if kind not in KINDS:
            raise DriverError(f"alloc {kind}", 0, f"KFD memory is {', '.join(KINDS)}")
        size = page_align(size)
        va = reserve(self.hal, size, private=kind == "userptr")
        flags = KINDS[kind] | ALWAYS | (kfd.KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED if uncached else 0)
        try:
            got = self.ioctl(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=va, size=size, gpu_id=self.gpu_id,
                             flags=flags & 0xFFFFFFFF, mmap_offset=va if kind == "userptr" else 0)
        except DriverError:
            unreserve(self.hal, va, size)
            raise
        mem = Memory(va, size, got.handle, kind)
        try:
            if kind != "userptr":
                self.hal.mmap(self.drm_fd, size, got.mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, va)
            self.map(mem)
        except (DriverError, OSError):
            self.free(mem, mapped=False)
            raise
        return mem

    def map(self, mem: Memory) -> None:
        """Map memory (of this process, allocated for any GPU) into this GPU's address space at its address."""
        ids = (ctypes.c_uint32 * 1)(self.gpu_id)
        self.ioctl(kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids),
                   n_devices=1)

    def free(self, mem: Memory, mapped: bool = True) -> None:
        if mapped:
            ids = (ctypes.c_uint32 * 1)(self.gpu_id)
            self.ioctl(kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=mem.handle,
                       device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
        self.ioctl(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=mem.handle)
        unreserve(self.hal, mem.va, mem.size)

    # ---- queues -----------------------------------------------------------------------------------------------------
    def create_queue(self, kind: str, ring: Memory, read_pointer: int, write_pointer: int) -> Queue:
        """A user-mode queue (pm4, aql or sdma) on ring, with its read and write pointers at those addresses (each in
        the first page of a one-page memory object, as amdkfd requires). A compute queue gets an EOP buffer and a
        context save area of the sizes the topology gives."""
        compute = {}
        buffers: tuple[Memory, ...] = ()
        if kind in COMPUTE:
            sizes = compute_queue_sizes(self.properties)
            xccs = max(self.properties.get("num_xcc", 1), 1)
            area = page_align((sizes["cwsr_size"] + sizes["debug_memory_size"]) * xccs)  # one save area per XCC
            buffers = eop, cwsr = self.alloc(sizes["eop_buffer_size"]), self.alloc(area)
            compute = dict(eop_buffer_address=eop.va, eop_buffer_size=sizes["eop_buffer_size"],
                           ctx_save_restore_address=cwsr.va, ctx_save_restore_size=sizes["cwsr_size"],
                           ctl_stack_size=sizes["ctl_stack_size"])
        try:
            got = self.ioctl(kfd.AMDKFD_IOC_CREATE_QUEUE, ring_base_address=ring.va, ring_size=ring.size,
                             gpu_id=self.gpu_id, queue_type=QUEUE_TYPES[kind], queue_percentage=100,
                             queue_priority=7, read_pointer_address=read_pointer,
                             write_pointer_address=write_pointer, **compute)
        except DriverError:
            for mem in buffers:
                self.free(mem)
            raise
        base = got.doorbell_offset & ~(DOORBELL_PAGE - 1)
        if self._doorbells is None:
            self._doorbells = self.hal.mmio(self.fd, DOORBELL_PAGE, base, width=8)
        return Queue(got.queue_id, self._doorbells, (got.doorbell_offset - base) // 8, buffers)

    def destroy_queue(self, queue: Queue) -> None:
        self.ioctl(kfd.AMDKFD_IOC_DESTROY_QUEUE, queue_id=queue.queue_id)
        for mem in queue.buffers:
            self.free(mem)

    # ---- events -----------------------------------------------------------------------------------------------------
    def create_event(self, event_page: Memory | None = None, auto_reset: bool = True,
                     kind: int = kfd.KFD_IOC_EVENT_SIGNAL) -> int:
        """A signal event (its id: what RELEASE_MEM's INT_CTXID names); the first needs the event page."""
        got = self.ioctl(kfd.AMDKFD_IOC_CREATE_EVENT, event_page_offset=event_page.handle if event_page else 0,
                         event_type=kind, auto_reset=int(auto_reset), node_id=self.node)
        return got.event_id

    def wait_events(self, event_ids: list[int], timeout_ms: int, wait_for_all: bool = False) -> list:
        """Wait for the events; the event data of each (memory exception details for a memory event), or None on
        a timeout."""
        data = (kfd.struct_kfd_event_data * len(event_ids))()
        for d, e in zip(data, event_ids, strict=True):
            d.event_id = e
        got = self.ioctl(kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(data), num_events=len(event_ids),
                         wait_for_all=int(wait_for_all), timeout=timeout_ms)
        return list(data) if got.wait_result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE else None

    def release_event_page(self, mem: Memory) -> None:
        """The event page cannot be freed (amdkfd answers EPERM): it goes when /dev/kfd closes, its address range
        with it."""
        self._event_pages.append(mem)

    def close(self) -> None:
        self.hal.close(self.drm_fd)
        self.hal.close(self.fd)
        for mem in self._event_pages:
            unreserve(self.hal, mem.va, mem.size)
