"""A mock amdkfd: the sysfs topology it publishes, /dev/kfd and the render nodes, answering the real ioctl ABI
(kfd_ioctl.h structs and request numbers, the errno amdkfd gives) for MOCKGPU_COUNT GPUs of MOCKGPU_ARCH; a CDNA
GPU (gfx942, gfx950) is a topology node per compute partition of the MOCKGPU_PARTITION mode (spx: one node of its
eight XCCs; cpx: eight nodes of one XCC each, topology.py), each its own GPU to the process.

Memory objects are real shared memory (memfd): the process maps them at their GPU virtual address through the
render node, as with amdgpu, and the mock GPU sees the same pages in its VM (`gpu.mem`), mapped and unmapped by
MAP/UNMAP_MEMORY_TO_GPU; a GPU access outside them is a VM fault. Doorbells are MMIO views: a doorbell write runs
that GPU's queues (the cooperative scheduler) until none can make progress.

Every pointer an ioctl struct carries is read and written through uaccess (copy_from_user/copy_to_user), so a bad
one is EFAULT; sizes and counts are bounded as amdkfd bounds them (kmalloc's largest block, the memory limits of
amdgpu_amdkfd_reserve_mem_limit). The state is the process's (amdkfd's kfd_process), released as amdkfd's process
teardown releases it (queues destroyed, memory objects unmapped and freed, events gone): what a /dev/kfd descriptor
made goes when it closes, the rest (the VMs acquired) with the last one. amdkfd keeps a process's state until the
process exits and refuses a second VM or event page for a GPU; the mock lets each descriptor (each Device of the
runtime) make its own and take it with it, so that a Device's open/close cycle leaves nothing behind.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from usergpu.autogen import kfd
from usergpu.autogen._support import Ioctl
from usergpu.emu.amd.mock.agent import DoorbellAgent
from usergpu.emu.amd.mock.aql import AQLQueue
from usergpu.emu.amd.mock.cdna import PARTITIONS, PARTS, xccs_per_partition
from usergpu.emu.amd.mock.gpu import GPU, RingQueue
from usergpu.emu.amd.mock.kfd import amdgpu_sysfs, topology
from usergpu.emu.amd.mock.kfd.amdgpu_device import VM_RESERVED_VRAM, VRAM
from usergpu.emu.amd.mock.kfd.render import RenderFile
from usergpu.emu.amd.mock.pm4 import PM4Queue
from usergpu.emu.amd.mock.scheduler import Scheduler
from usergpu.emu.amd.mock.sdma import SDMAQueue
from usergpu.emu.amd.mock.uaccess import (
    IOC_IN,
    IOC_OUT,
    access_ok,
    copy_from_user,
    copy_to_user,
    fail,
    pin_user_pages,
    with_user_struct,
)
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
COMPUTE_TYPES = (kfd.KFD_IOC_QUEUE_TYPE_COMPUTE, kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL)  # amdkfd's KFD_QUEUE_TYPE_COMPUTE
ENGINES = {kfd.KFD_IOC_QUEUE_TYPE_COMPUTE: PM4Queue, kfd.KFD_IOC_QUEUE_TYPE_SDMA: SDMAQueue,
           kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: AQLQueue}
# the domain amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu picks: the first of these flags the request has
ALLOC_KINDS = (kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM, kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT, kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
               kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | kfd.KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
KMALLOC_MAX_SIZE = 4 << 20  # kmalloc's largest block (MAX_PAGE_ORDER 10): a larger kernel array is ENOMEM
EVENT_WAITER_SIZE = 56  # sizeof(struct kfd_event_waiter): WAIT_EVENTS allocates one per event
SIGNAL_EVENT_LIMIT = 4096  # KFD_SIGNAL_EVENT_LIMIT: slots of the event page (8 bytes each)
FIRST_NONSIGNAL_EVENT_ID = 0x40000000  # kfd_events.h: ids of events that are not signal events
MAX_QUEUES = 1024  # KFD_MAX_NUM_OF_QUEUES_PER_PROCESS: the doorbell page has one slot each
TIMEOUT_INFINITE = 0xFFFFFFFF  # KFD_EVENT_TIMEOUT_INFINITE (kfd_events.h): a wait without end
POLL = 1e-3  # seconds between looks at a queue stalled on memory, while a WAIT_EVENTS sleeps
GPUVM_SIZE = 1 << 48  # the VA range amdgpu_vm_bo_map accepts (max_pfn of a 48-bit GPUVM)
RESERVE_MEM_LIMIT = 3 << 29  # amdgpu_amdkfd_gpuvm.c
FAULT_PAGE = (1 << 48) - PAGE  # the page address bits a VM fault's IV entry carries
VRAM_AVAILABILITY_ALIGN = 2 << 20  # amdgpu_amdkfd_gpuvm.c: AVAILABLE_MEMORY counts VRAM objects in 2 MiB chunks


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


def memory_exception(gpu_id: int, address: int, access: str) -> kfd.struct_kfd_hsa_memory_exception_data:
    """What event_interrupt_wq_v11 makes of a UTCL2 fault's IV entry: the faulting page's address (the entry
    carries bits 47:12); NotPresent from its PROT_VALID bit (set: no valid PTE maps the page, the mock GPUs' only
    kind of fault); ReadOnly from its PROT_WRITE bit (set by a write, whatever the page's protection); NoExecute
    never (the v11 handler decodes no execute bit); imprecise 0 (the address is exact)."""
    data = kfd.struct_kfd_hsa_memory_exception_data(va=address & FAULT_PAGE, gpu_id=gpu_id)
    data.failure.NotPresent, data.failure.ReadOnly = 1, int(access == "write")
    return data


def mem_limits(vram: int) -> dict[str, int]:
    """amdgpu_amdkfd_gpuvm_init_mem_limits on this machine: what all GTT and user pages may total (RAM less 1/64
    and 1.5 GiB), what GTT may (TTM's default, half of RAM), and the VRAM a GPU of `vram` bytes leaves after its
    page tables (ESTIMATE_PT_SIZE)."""
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    system = ram - (ram >> 6)
    system = system >> 1 if system < 2 * RESERVE_MEM_LIMIT else system - RESERVE_MEM_LIMIT
    return {"system": system, "ttm": ram >> 1, "vram": vram - max((ram + vram) >> 14, VM_RESERVED_VRAM)}


@dataclass
class BO:
    """A memory object: its pages (memfd-backed, or the user's for USERPTR), where they are mapped, and how many
    queue buffers hold each mapping (amdgpu's bo_va queue_refcount)."""

    handle: int
    gpu_id: int
    va: int
    size: int
    flags: int
    address: int  # the CPU address of the mock's own view of the pages
    memfd: int | None
    charge: dict[str, int] = field(default_factory=dict)  # what it counts against the memory limits
    owner: object = None  # the /dev/kfd descriptor it was made through
    mapped: set[int] = field(default_factory=set)
    queue_refs: Counter = field(default_factory=Counter)  # gpu_id -> queue buffers in this object

    def array(self) -> np.ndarray:
        return np.frombuffer(view(self.address, self.size), np.uint8)


@dataclass
class Event:
    event_id: int
    event_type: int
    auto_reset: bool
    signaled: bool = False
    data: object = None  # memory exception data (a struct_kfd_hsa_memory_exception_data) for a memory event
    owner: object = None  # the /dev/kfd descriptor it was made through

    @property
    def cpu_signaled(self) -> bool:
        """SET_EVENT and RESET_EVENT act on signal events only (event_can_be_cpu_signaled)."""
        return self.event_type == kfd.KFD_IOC_EVENT_SIGNAL


@dataclass
class Held:
    """A queue's hold on the memory objects its buffers are in, the descriptor that made it, and what amdkfd
    keeps of its properties (the CREATE_QUEUE type, percentage and control stack size)."""

    owner: object
    bos: list[BO]
    queue_type: int
    percent: int  # queue_percentage's low byte: 0 makes the queue inactive (QUEUE_IS_ACTIVE)
    ctl_stack_size: int


class Node:
    """One mock GPU (a compute partition `partition` of `partitions` of board `board`, for CDNA): its topology entry
    and, per process, its VM and queues."""

    def __init__(self, index: int, arch: str, board: int | None = None, partition: int = 0, partitions: int = 1):
        self.index, self.arch = index, arch
        self.board, self.partition, self.partitions = index if board is None else board, partition, partitions
        # amdkfd's are 16-bit hashes (KFD_GPU_ID_HASH_WIDTH): any stable nonzero value serves, and an odd step keeps
        # 512 nodes' (64 boards of 8 partitions) apart
        self.gpu_id = (0x4000 + 0x1111 * (index + 1)) & 0xFFFF
        xccs = PARTS[arch].xccs // partitions if arch in PARTS else 1
        self.gpu = GPU(arch, xccs=xccs)
        self.logical_xcc_start = 0  # the dqm's current_logical_xcc_start: the next AQL queue's first logical XCC
        self.pci = (0x03 + self.board) << 8  # its board's PCI function (bus << 8 | devfn): 03:00.0, 04:00.0, ...
        self.scheduler = Scheduler()
        self.queues: dict[int, RingQueue] = {}
        self.used = Counter()  # amdgpu's adev->kfd.vram_used, and vram_used_aligned (in 2 MiB chunks)

    @functools.cached_property
    def props(self) -> dict[str, int]:
        if self.arch in PARTS:
            props = topology.properties(PARTS[self.arch], self.index, self.partition, self.partitions, self.board,
                                        self.pci)
            sizes = ctx_save_restore_sizes(props)
            return props | {"cwsr_size": sizes["cwsr_size"], "ctl_stack_size": sizes["ctl_stack_size"]}
        version, device, _, simds, cus, arrays = ARCHS[self.arch]
        props = {"cpu_cores_count": 0, "simd_count": simds, "mem_banks_count": 1, "caches_count": 0,
                 "io_links_count": 0, "p2p_links_count": 0, "cpu_core_id_base": 0,
                 "simd_id_base": 0x80001000 + 0x100 * self.index, "max_waves_per_simd": 16, "lds_size_in_kb": 64,
                 "gds_size_in_kb": 0, "num_gws": 64, "wave_front_size": 32, "array_count": arrays,
                 "simd_arrays_per_engine": 2, "cu_per_simd_array": cus, "simd_per_cu": 2,
                 "max_slots_scratch_cu": 32, "gfx_target_version": version, "vendor_id": 0x1002,
                 "device_id": device, "location_id": self.pci, "domain": 0,
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
    """The driver side of the mock: the nodes, and the state amdkfd keeps for the one process using them (its
    kfd_process): the VMs it acquired, its memory objects, queues and events."""

    def __init__(self, hal, arch: str = "gfx1100", count: int = 1, partition: str = "spx"):
        """hal: the MockHAL whose root receives the sysfs tree and whose install() takes the device files; partition
        the compute partition mode of CDNA GPUs (spx or cpx)."""
        if arch not in ARCHS and arch not in PARTS:
            raise DeviceNotFound(f"MOCKGPU_ARCH {arch!r}: the mock KFD models {', '.join([*ARCHS, *PARTS])}")
        if partition not in PARTITIONS or partition != "spx" and arch not in PARTS:
            raise DeviceNotFound(f"MOCKGPU_PARTITION {partition!r}: {arch} partitions as "
                                 f"{', '.join(PARTITIONS) if arch in PARTS else 'spx'}")
        self.hal, self.arch, self.partition = hal, arch, partition
        per = PARTS[arch].xccs // xccs_per_partition(PARTS[arch], partition) if arch in PARTS else 1
        self.nodes = [Node(board * per + p, arch, board, p, per) for board in range(count) for p in range(per)]
        self.limits = mem_limits(VRAM[arch])
        self.used = Counter()  # bytes counted against the system and TTM limits
        self.files: set[KFDFile] = set()  # the open /dev/kfd descriptors: the process lives while one does
        self.vms: dict[int, RenderFile] = {}  # gpu_id -> the render node whose VM ACQUIRE_VM made ours
        self.bos: dict[int, BO] = {}
        self.next_handle = 0
        self.held: dict[int, Held] = {}  # queue id -> the objects its buffers are in
        self.events: dict[int, Event] = {}
        self.event_page: BO | None = None
        self.runtime = kfd.struct_kfd_runtime_info()  # what RUNTIME_ENABLE set (the kfd_process's runtime_info)
        self.lock = threading.RLock()  # the process's calls and the doorbell agent's runs, one at a time
        self.waiters = threading.Condition(self.lock)  # WAIT_EVENTS sleeps on it while the GPUs run
        self.agent = DoorbellAgent(self.run, self.lock)
        self._publish()
        hal.install("/dev/kfd", lambda: KFDFile(self))
        for n in self.nodes:
            hal.install(f"/dev/dri/renderD{128 + n.index}", lambda n=n: RenderFile(self, n))
            n.gpu.interrupt_handlers.append(self._interrupt)
            n.gpu.fault_handlers.append(lambda address, access, n=n: self._vm_fault(n, address, access))

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
            if self.arch in PARTS:  # the caches kfd_fill_cache_non_crat_info lists, caches/<n>/properties
                for i, cache in enumerate(topology.caches(PARTS[self.arch], n.index, n.gpu.xccs)):
                    (d / f"caches/{i}").mkdir(parents=True, exist_ok=True)
                    (d / f"caches/{i}/properties").write_text("".join(f"{k} {v}\n" for k, v in cache.items()))
        (root / "generation_id").write_text("1\n")
        amdgpu_sysfs.publish(self)  # the PCI functions the nodes' location_ids name, bound to amdgpu
        (root / "system_properties").write_text("platform_oem 0\nplatform_id 0\nplatform_rev 0\n")

    def node(self, gpu_id: int, what: str) -> Node:
        """The process's device data for a GPU (kfd_process_device_data_by_id); EINVAL for an id it lacks."""
        for n in self.nodes:
            if n.gpu_id == gpu_id:
                return n
        raise fail(errno.EINVAL, f"{what}: no GPU with gpu_id {gpu_id:#x}")

    def bound(self, gpu_id: int, what: str, code: int = errno.ENODEV) -> Node:
        """A GPU the process may use (kfd_bind_process_to_device): its VM acquired, else ENODEV (which some
        ioctls report as ESRCH)."""
        n = self.node(gpu_id, what)
        if gpu_id not in self.vms:
            raise fail(code, f"{what}: gpu_id {gpu_id:#x} has no VM yet (AMDKFD_IOC_ACQUIRE_VM)")
        return n

    def run(self) -> tuple[bool, bool]:
        """Every GPU's queues until none can make progress (a doorbell, or a wait that must see the GPU's work);
        a queue waiting on another GPU's write resumes when that GPU has run. A fault or a hang stops its queue
        and is raised to the caller. Whether anything ran, and whether work is left stalled."""
        with self.lock:
            start, stalled = [n.gpu.ticks for n in self.nodes], True
            while stalled:
                before = [n.gpu.ticks for n in self.nodes]
                stalled = any([n.scheduler.run() for n in self.nodes])
                if [n.gpu.ticks for n in self.nodes] == before:
                    break
            return [n.gpu.ticks for n in self.nodes] != start, stalled

    def _interrupt(self, source: str, context_id: int) -> None:
        """An interrupt a GPU raised (RELEASE_MEM INT_SEL, SDMA TRAP): its context id names a signal event."""
        ev = self.events.get(context_id)
        if ev is not None:
            ev.signaled = True
            self.waiters.notify_all()

    def _vm_fault(self, n: Node, address: int, access: str) -> None:
        """A VM fault, as event_interrupt_wq_v11 and kfd_signal_vm_fault_event deliver it: every memory event of the
        process is signaled with the fault's data. The faulting queue is stopped (its engine's error), so it is
        no longer active. amdkfd evicts all the process's queues on the GPU, and keeps them and any made later
        evicted until the process ends; the mock evicts the faulting queue alone, so that a runtime that makes it
        anew (usergpu's does) goes on."""
        data = memory_exception(n.gpu_id, address, access)
        for ev in self.events.values():
            if ev.event_type == kfd.KFD_IOC_EVENT_MEMORY:
                ev.data, ev.signaled = type(data).from_buffer_copy(data), True
        self.waiters.notify_all()

    def active(self, n: Node, queue_id: int) -> bool:
        """QUEUE_IS_ACTIVE: a queue runs unless its percentage is 0 or it is evicted (its engine stopped it)."""
        return bool(self.held[queue_id].percent) and n.queues[queue_id].error is None

    # ---- the lifetimes of the process's objects ---------------------------------------------------------------
    def charge(self, n: Node, kind: int, size: int) -> dict[str, int]:
        """amdgpu_amdkfd_reserve_mem_limit: count size bytes of a kind against the limits; ENOMEM past one."""
        vram = {"vram": size, "vram_aligned": -(-size // VRAM_AVAILABILITY_ALIGN) * VRAM_AVAILABILITY_ALIGN}
        need = {kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM: vram,
                kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT: {"system": size, "ttm": size},
                kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR: {"system": size}}.get(kind, {})
        for what, bytes_ in need.items():
            used = self.counts(n, what)[what]
            if what in self.limits and used + bytes_ > self.limits[what]:
                raise fail(errno.ENOMEM, f"ALLOC_MEMORY_OF_GPU of {size:#x} bytes: {used:#x} of the {what} limit "
                                         f"{self.limits[what]:#x} are in use")
        self.uncharge(n, need, -1)
        return need

    def counts(self, n: Node, what: str) -> Counter:
        """Where a count is kept: VRAM's on its GPU, the rest (system, TTM) for the whole machine."""
        return n.used if what.startswith("vram") else self.used

    def uncharge(self, n: Node, charge: dict[str, int], sign: int = 1) -> None:
        """Give back what an object counted against the limits (sign -1: count it)."""
        for what, bytes_ in charge.items():
            self.counts(n, what)[what] -= sign * bytes_

    def unmap(self, bo: BO, n: Node) -> None:
        n.gpu.mem.unmap(bo.va)
        bo.mapped.discard(n.gpu_id)

    def release(self, bo: BO) -> None:
        """Free an object no GPU maps: the mock's view of its pages, its memfd, what it counted."""
        if bo.memfd is not None:
            os_munmap(bo.address, bo.size)
            os.close(bo.memfd)
        self.uncharge(self.node(bo.gpu_id, "free"), bo.charge)
        del self.bos[bo.handle]

    def destroy_queue(self, n: Node, queue_id: int) -> None:
        queue = n.queues.pop(queue_id)
        if queue in n.scheduler.queues:  # an inactive queue was never scheduled
            n.scheduler.remove(queue)
        for bo in self.held.pop(queue_id).bos:
            bo.queue_refs[n.gpu_id] -= 1

    def open_file(self, f: KFDFile) -> None:
        self.files.add(f)

    def close_file(self, f: KFDFile) -> None:
        """A /dev/kfd descriptor closed: what was made through it goes as kfd_process_wq_release takes a process's
        (its queues destroyed, then its memory objects unmapped and freed, its events); the last one takes it
        all and lets the VMs go. An object another descriptor's queue still uses stays until that one closes."""
        self.files.discard(f)
        last = not self.files

        def made(obj) -> bool:
            return last or obj.owner is f
        for n in self.nodes:
            for queue_id in [q for q in n.queues if made(self.held[q])]:
                self.destroy_queue(n, queue_id)
        for bo in [b for b in self.bos.values() if made(b) and not any(b.queue_refs.values())]:
            for gpu_id in list(bo.mapped):
                self.unmap(bo, self.node(gpu_id, "teardown"))
            self.release(bo)
        for event_id in [e for e, ev in self.events.items() if made(ev)]:
            del self.events[event_id]
        if self.event_page is not None and self.event_page.handle not in self.bos:
            self.event_page = None
        if last:
            for render in self.vms.values():
                render.vm = None
            self.vms.clear()
            self.runtime = kfd.struct_kfd_runtime_info()


# amdkfd's ioctl table by number: it dispatches on _IOC_NR alone and uses its own direction and size
IOCTLS = {v.nr: v for k, v in vars(kfd).items() if k.startswith("AMDKFD_IOC_") and isinstance(v, Ioctl)}


class KFDFile:
    """/dev/kfd, opened: the ioctls of kfd_chardev.c, its doorbell and event-page mmaps."""

    def __init__(self, kfd_: MockKFD):
        self.kfd, self.pid = kfd_, os.getpid()
        self.handlers = {
            kfd.AMDKFD_IOC_GET_VERSION: self.get_version, kfd.AMDKFD_IOC_ACQUIRE_VM: self.acquire_vm,
            kfd.AMDKFD_IOC_GET_PROCESS_APERTURES_NEW: self.apertures,
            kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: self.alloc, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU: self.free,
            kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU: self.map, kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: self.unmap,
            kfd.AMDKFD_IOC_CREATE_QUEUE: self.create_queue, kfd.AMDKFD_IOC_DESTROY_QUEUE: self.destroy_queue,
            kfd.AMDKFD_IOC_CREATE_EVENT: self.create_event, kfd.AMDKFD_IOC_DESTROY_EVENT: self.destroy_event,
            kfd.AMDKFD_IOC_SET_EVENT: self.set_event, kfd.AMDKFD_IOC_RESET_EVENT: self.reset_event,
            kfd.AMDKFD_IOC_WAIT_EVENTS: self.wait_events, kfd.AMDKFD_IOC_GET_CLOCK_COUNTERS: self.clock_counters,
            kfd.AMDKFD_IOC_SET_MEMORY_POLICY: self.memory_policy,
            kfd.AMDKFD_IOC_SET_SCRATCH_BACKING_VA: self.scratch_backing_va,
            kfd.AMDKFD_IOC_SET_XNACK_MODE: self.xnack_mode, kfd.AMDKFD_IOC_RUNTIME_ENABLE: self.runtime_enable,
            kfd.AMDKFD_IOC_AVAILABLE_MEMORY: self.available_memory,
            kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE: self.queue_wave_state,
        }
        self.doorbells: dict[int, tuple[int, int]] = {}  # gpu_id -> the memfd and mock mapping of its doorbells
        kfd_.open_file(self)

    def close(self) -> None:
        with self.kfd.lock:
            for memfd, address in self.doorbells.values():
                self.kfd.agent.unwatch(address)
                os_munmap(address, DOORBELL_PAGE)
                os.close(memfd)
            self.kfd.close_file(self)

    # ---- the ioctl entry, as kfd_ioctl() runs it --------------------------------------------------------------
    def ioctl(self, request: int, arg: int) -> None:
        """The caller's size of the struct is copied in (zero-filled up to amdkfd's own), the handler runs, and the
        caller's size is copied back whether it failed or not (a MAP's n_success, a WAIT's wait_result); a copy
        that faults is EFAULT."""
        nr, usize = request & 0xFF, (request >> 16) & 0x3FFF
        ioc = IOCTLS.get(nr) if kfd.AMDKFD_COMMAND_START <= nr < kfd.AMDKFD_COMMAND_END else None
        if ioc is None:
            raise fail(errno.ENOTTY, f"kfd ioctl {request:#x}")
        name = ioc.struct.__name__.removeprefix("struct_kfd_ioctl_").removesuffix("_args").upper()
        if os.getpid() != self.pid:
            raise fail(errno.EBADF, f"{name}: /dev/kfd was opened by process {self.pid}")
        if ioc not in self.handlers:
            raise fail(errno.ENOTTY, f"{name}: the mock does not model this ioctl")
        with self.kfd.lock:
            with_user_struct(arg, ioc.struct, usize if ioc.dir & IOC_IN else 0, usize if ioc.dir & IOC_OUT else 0,
                             name, self.handlers[ioc])

    # ---- ioctls ---------------------------------------------------------------------------------------------------
    def get_version(self, a) -> None:
        a.major_version, a.minor_version = kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION

    def acquire_vm(self, a) -> None:
        """fget(drm_fd) and amdgpu_file_to_fpriv: EINVAL unless it is an open render node (of this GPU: the mock
        also refuses another GPU's, whose VM amdkfd would take without noticing); a render node whose VM is some
        GPU's process VM already is EINVAL (amdgpu_amdkfd_gpuvm_acquire_process_vm); the one acquired before
        again is 0."""
        try:
            render = self.kfd.hal.device(a.drm_fd)
        except OSError:
            render = None
        n = self.kfd.node(a.gpu_id, "ACQUIRE_VM")
        if not isinstance(render, RenderFile) or render.kfd is not self.kfd or render.node is not n:
            raise fail(errno.EINVAL, f"ACQUIRE_VM: drm_fd {a.drm_fd} is not an open render node of gpu_id "
                                     f"{a.gpu_id:#x}")
        if self.kfd.vms.get(a.gpu_id) is render:
            return
        if render.vm is not None:
            raise fail(errno.EINVAL, f"ACQUIRE_VM: the VM of drm_fd {a.drm_fd} is already a compute VM")
        render.vm = a.gpu_id
        self.kfd.vms[a.gpu_id] = render

    def apertures(self, a) -> None:
        nodes = self.kfd.nodes
        if a.num_of_nodes == 0:
            a.num_of_nodes = len(nodes)
            return
        if a.num_of_nodes > len(nodes) + 1:  # kfd_topology_get_num_devices counts the CPU node too
            raise fail(errno.EINVAL, f"GET_PROCESS_APERTURES_NEW: {a.num_of_nodes} nodes, the topology has "
                                     f"{len(nodes) + 1}")
        out = (kfd.struct_kfd_process_device_apertures * min(a.num_of_nodes, len(nodes)))()
        for slot, n in zip(out, nodes, strict=False):
            slot.gpu_id = n.gpu_id
            slot.lds_base, slot.lds_limit = 0x1 << 48, (0x1 << 48) | 0xFFFFFFFF
            slot.scratch_base, slot.scratch_limit = 0x2 << 48, (0x2 << 48) | 0xFFFFFFFF
            slot.gpuvm_base, slot.gpuvm_limit = 0x1000000, (1 << 47) - 1
        a.num_of_nodes = len(out)
        copy_to_user(a.kfd_process_device_apertures_ptr, bytes(out), "GET_PROCESS_APERTURES_NEW")

    def alloc(self, a) -> None:
        """kfd_ioctl_alloc_memory_of_gpu and amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu, in their order: EINVAL for
        size 0, an unknown GPU, a doorbell or MMIO object of the wrong size, no memory domain or a user pointer of
        0; ENODEV before ACQUIRE_VM; ENOMEM past the memory limits; EFAULT for user pages that are not there.
        Nothing is left behind by a refusal."""
        what = f"ALLOC_MEMORY_OF_GPU of {a.size:#x} bytes at {a.va_addr:#x}, flags {a.flags:#x}"
        if a.size == 0:
            raise fail(errno.EINVAL, what)
        n = self.kfd.bound(a.gpu_id, what)
        if (a.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL and a.size != DOORBELL_PAGE or
                a.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP and not a.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL
                and a.size != PAGE):
            raise fail(errno.EINVAL, f"{what}: a doorbell object is {DOORBELL_PAGE:#x} bytes, an MMIO one {PAGE:#x}")
        kind = next((k for k in ALLOC_KINDS if a.flags & k), None)
        userptr = kind == kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR
        size = page_align(a.size)
        if kind is None or userptr and (a.mmap_offset == 0 or a.mmap_offset % PAGE) or size >= 1 << 64:
            raise fail(errno.EINVAL, f"{what}: no memory domain, or a user pointer {a.mmap_offset:#x} off a page")
        if userptr:
            pin_user_pages(a.mmap_offset, size, True, what)
        charge = self.kfd.charge(n, kind, size)
        self.kfd.next_handle += 1  # amdkfd's are idr ids: the mock never reuses one
        handle = (a.gpu_id << 32) | self.kfd.next_handle
        address, memfd = a.mmap_offset, None
        if not userptr:
            try:
                address, memfd = self._pages(f"kfd-bo-{handle:#x}", size)
            except OSError as e:
                self.kfd.uncharge(n, charge)
                raise fail(errno.ENOMEM, f"{what}: {e.strerror}") from None
            a.mmap_offset = handle * PAGE  # the render node's offset for it
        self.kfd.bos[handle] = BO(handle, a.gpu_id, a.va_addr, size, a.flags, address, memfd, charge, self)
        a.handle = handle

    @staticmethod
    def _pages(name: str, size: int) -> tuple[int, int]:
        """Shared memory (a memory object's, a doorbell page's) and the mock's own mapping of it; closed again if
        either fails."""
        memfd = os.memfd_create(name, os.MFD_CLOEXEC)
        try:
            os.ftruncate(memfd, size)
            return os_mmap(0, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0), memfd
        except OSError:
            os.close(memfd)
            raise

    def _bo(self, handle: int, what: str, code: int = errno.EINVAL) -> BO:
        """The object a handle names: its GPU must be the process's (EINVAL), the object that GPU's (code)."""
        self.kfd.node(handle >> 32, what)
        if handle not in self.kfd.bos:
            raise fail(code, f"{what}: no memory object with handle {handle:#x}")
        return self.kfd.bos[handle]

    def free(self, a) -> None:
        """EPERM for the event page, EINVAL for an unknown handle, EBUSY while a GPU still maps it."""
        if self.kfd.event_page is not None and a.handle == self.kfd.event_page.handle:
            raise fail(errno.EPERM, "FREE_MEMORY_OF_GPU: the event page lives as long as the process")
        bo = self._bo(a.handle, "FREE_MEMORY_OF_GPU")
        if bo.mapped:
            raise fail(errno.EBUSY, f"FREE_MEMORY_OF_GPU: {a.handle:#x} is still mapped on gpu_id "
                                    f"{', '.join(f'{g:#x}' for g in sorted(bo.mapped))}")
        self.kfd.release(bo)

    def _devices(self, a, what: str) -> list[int]:
        """The device_ids_array: EINVAL for none or n_success past it, ENOMEM for one larger than kmalloc gives,
        EFAULT for one the caller cannot read."""
        if a.n_devices == 0 or a.n_success > a.n_devices:
            raise fail(errno.EINVAL, f"{what}: {a.n_devices} devices, {a.n_success} done")
        if 4 * a.n_devices > KMALLOC_MAX_SIZE:
            raise fail(errno.ENOMEM, f"{what}: an array of {a.n_devices} device ids")
        return list((ctypes.c_uint32 * a.n_devices).from_buffer(
            copy_from_user(a.device_ids_array_ptr, 4 * a.n_devices, what)))

    def map(self, a) -> None:
        what = "MAP_MEMORY_TO_GPU"
        ids = self._devices(a, what)
        self.kfd.bound(a.handle >> 32, what)
        bo = self._bo(a.handle, what, errno.ENOMEM)
        for i in range(a.n_success, a.n_devices):
            n = self.kfd.bound(ids[i], what)
            if n.gpu_id not in bo.mapped:
                if bo.va % PAGE or not bo.va + bo.size <= GPUVM_SIZE:  # amdgpu_vm_bo_map's checks
                    raise fail(errno.EINVAL, f"{what}: VA {bo.va:#x} is off a page or past the GPUVM")
                try:
                    n.gpu.mem.map_at(bo.va, bo.array())
                except ValueError as e:  # a VA range already mapped: amdgpu_vm_bo_map's answer
                    raise fail(errno.EINVAL, f"{what}: {e}") from None
                bo.mapped.add(n.gpu_id)
            a.n_success = i + 1

    def unmap(self, a) -> None:
        """As MAP; EBUSY while a queue's buffer is in the object (unmap_bo_from_gpuvm's queue_refcount)."""
        what = "UNMAP_MEMORY_FROM_GPU"
        ids = self._devices(a, what)
        bo = self._bo(a.handle, what, errno.ENOMEM)
        for i in range(a.n_success, a.n_devices):
            n = self.kfd.node(ids[i], what)
            if bo.queue_refs[n.gpu_id]:
                raise fail(errno.EBUSY, f"{what}: a queue on gpu_id {n.gpu_id:#x} uses {a.handle:#x}")
            if n.gpu_id in bo.mapped:
                self.kfd.unmap(bo, n)
            a.n_success = i + 1

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
            bo = next((b for b in self.kfd.bos.values() if n.gpu_id in b.mapped and b.va <= address < b.va + b.size),
                      None)
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

    def create_event(self, a) -> None:
        """kfd_ioctl_create_event: an event page handle first (EINVAL for an unknown or user-pages object or one
        smaller than KFD_SIGNAL_EVENT_LIMIT slots), then the event. Signal (and debug) events take a slot of the
        page (ENOSPC when none is left); any other type, known or not, is created as amdkfd creates it, with an
        id from KFD_FIRST_NONSIGNAL_EVENT_ID. amdkfd refuses a second event page (EINVAL: one per process); the
        mock keeps the first and ignores a later one, because the runtime gives each of its Devices a page of its
        own and two Devices in one process are one kfd_process."""
        what = "CREATE_EVENT"
        if a.event_page_offset and self.kfd.event_page is None:
            self.kfd.bound(a.event_page_offset >> 32, what)
            page = self._bo(a.event_page_offset, f"{what} (event page)")
            if page.memfd is None or page.size < SIGNAL_EVENT_LIMIT * 8:
                raise fail(errno.EINVAL, f"{what}: the event page is user pages or under "
                                         f"{SIGNAL_EVENT_LIMIT * 8} bytes")
            self.kfd.event_page = page
        a.event_page_offset = 0
        events = self.kfd.events
        if a.event_type in (kfd.KFD_IOC_EVENT_SIGNAL, kfd.KFD_IOC_EVENT_DEBUG_EVENT):
            if self.kfd.event_page is None:
                raise fail(errno.EINVAL, f"{what}: the first signal event needs an event page")
            event_id = max((e for e in events if e < FIRST_NONSIGNAL_EVENT_ID), default=0) + 1
            if event_id >= self.kfd.event_page.size // 8:
                raise fail(errno.ENOSPC, f"{what}: every slot of the event page is taken")
            a.event_page_offset, a.event_slot_index = MMAP_TYPE_EVENTS << MMAP_TYPE_SHIFT, event_id
        else:
            event_id = max((e for e in events if e >= FIRST_NONSIGNAL_EVENT_ID),
                           default=FIRST_NONSIGNAL_EVENT_ID - 1) + 1
        events[event_id] = Event(event_id, a.event_type, bool(a.auto_reset), owner=self)
        a.event_id = a.event_trigger_data = event_id

    def _event(self, event_id: int, what: str, cpu: bool = False) -> Event:
        """An event of the process; EINVAL if there is none, or (cpu) it is not one the CPU may signal."""
        ev = self.kfd.events.get(event_id)
        if ev is None or cpu and not ev.cpu_signaled:
            raise fail(errno.EINVAL, f"{what}: no signal event {event_id}" if cpu else f"{what}: no event {event_id}")
        return ev

    def destroy_event(self, a) -> None:
        del self.kfd.events[self._event(a.event_id, "DESTROY_EVENT").event_id]

    def set_event(self, a) -> None:
        self._event(a.event_id, "SET_EVENT", cpu=True).signaled = True
        self.kfd.waiters.notify_all()  # a WAIT_EVENTS in another thread wakes

    def reset_event(self, a) -> None:
        self._event(a.event_id, "RESET_EVENT", cpu=True).signaled = False

    def wait_events(self, a) -> None:
        """kfd_wait_on_events: ENOMEM for more waiters than kmalloc gives, EFAULT for event data the caller
        cannot read, EINVAL for an unknown event; the result FAIL on any error. Then it waits up to the timeout
        (milliseconds; KFD_EVENT_TIMEOUT_INFINITE forever) while the GPUs run: the caller's thread runs them
        itself, and sleeps (the machine's lock given up, so the doorbell agent and other threads go on) until an
        interrupt signals an event, or a poll's time when a queue is stalled on memory another thread may
        write. Then it takes each event's state as amdkfd's waiters do (an auto-reset event's signal is
        consumed) and reports."""
        what = "WAIT_EVENTS"
        a.wait_result = kfd.KFD_IOC_WAIT_RESULT_FAIL
        size = ctypes.sizeof(kfd.struct_kfd_event_data)
        if a.num_events * EVENT_WAITER_SIZE > KMALLOC_MAX_SIZE:
            raise fail(errno.ENOMEM, f"{what}: {a.num_events} events")
        events = []
        for i in range(a.num_events):  # each event's data read, then looked up, in turn
            data = kfd.struct_kfd_event_data.from_buffer(copy_from_user(a.events_ptr + size * i, size, what))
            events.append(self._event(data.event_id, what))
        deadline = None if a.timeout == TIMEOUT_INFINITE else time.monotonic() + a.timeout / 1000

        def done() -> bool:
            on = [e.signaled for e in events]
            return not a.num_events or (all(on) if a.wait_for_all else any(on))
        while True:
            _, stalled = self.kfd.run()
            left = None if deadline is None else deadline - time.monotonic()
            if done() or left is not None and left <= 0:
                break
            self.kfd.waiters.wait(min(left or POLL, POLL) if stalled else left)
        activated = []
        for e in events:
            activated.append(e.signaled)
            e.signaled = e.signaled and not e.auto_reset
        if a.num_events and not (all(activated) if a.wait_for_all else any(activated)):
            a.wait_result = kfd.KFD_IOC_WAIT_RESULT_TIMEOUT
            return
        for i, (e, on) in enumerate(zip(events, activated, strict=True)):
            if on and e.data is not None:  # copy_signaled_event_data
                copy_to_user(a.events_ptr + size * i + kfd.struct_kfd_event_data.memory_exception_data.offset,
                             bytes(e.data), what)
        a.wait_result = kfd.KFD_IOC_WAIT_RESULT_COMPLETE

    def clock_counters(self, a) -> None:
        """Never fails: a gpu_id the process lacks reads a GPU clock of 0 (a node without a GPU)."""
        n = next((n for n in self.kfd.nodes if n.gpu_id == a.gpu_id), None)
        a.gpu_clock_counter = n.gpu.timestamp() if n else 0
        a.cpu_clock_counter = a.system_clock_counter = time.monotonic_ns()
        a.system_clock_freq = 1_000_000_000

    def memory_policy(self, a) -> None:
        policies = (kfd.KFD_IOC_CACHE_POLICY_COHERENT, kfd.KFD_IOC_CACHE_POLICY_NONCOHERENT)
        if a.default_policy not in policies or a.alternate_policy not in policies:
            raise fail(errno.EINVAL, f"SET_MEMORY_POLICY: policies {a.default_policy}, {a.alternate_policy}")
        self.kfd.bound(a.gpu_id, "SET_MEMORY_POLICY", errno.ESRCH)

    def scratch_backing_va(self, a) -> None:
        self.kfd.bound(a.gpu_id, "SET_SCRATCH_BACKING_VA")

    def xnack_mode(self, a) -> None:
        """XNACK stays off (the mock GPUs do not retry faults): asking for it is EPERM, changing anything with
        queues alive EBUSY, a negative value reads the mode."""
        if a.xnack_enabled < 0:
            a.xnack_enabled = 0
        elif self.kfd.held:
            raise fail(errno.EBUSY, "SET_XNACK_MODE: the process has queues")
        elif a.xnack_enabled:
            raise fail(errno.EPERM, "SET_XNACK_MODE: the mock GPUs do not support XNACK")

    def runtime_enable(self, a) -> None:
        """kfd_ioctl_runtime_enable, no debugger attached: enabling is EBUSY once enabled and EEXIST while the
        process has an active queue, else it records r_debug and the TTMP setup; without the enable bit it
        disables (always 0)."""
        what = "RUNTIME_ENABLE"
        if not a.mode_mask & kfd.KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK:
            self.kfd.runtime = kfd.struct_kfd_runtime_info()
            return
        if self.kfd.runtime.runtime_state != kfd.DEBUG_RUNTIME_STATE_DISABLED:
            raise fail(errno.EBUSY, f"{what}: the runtime is enabled already")
        if any(self.kfd.active(n, q) for n in self.kfd.nodes for q in n.queues):
            raise fail(errno.EEXIST, f"{what}: the process has active queues")
        self.kfd.runtime = kfd.struct_kfd_runtime_info(
            r_debug=a.r_debug, runtime_state=kfd.DEBUG_RUNTIME_STATE_ENABLED,
            ttmp_setup=int(bool(a.mode_mask & kfd.KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK)))

    def available_memory(self, a) -> None:
        """amdgpu_amdkfd_get_available_memory of a dGPU: the VRAM left under the limit, each object counted in
        2 MiB chunks, rounded down to 2 MiB; EINVAL for a GPU the process lacks (no ACQUIRE_VM needed)."""
        left = self.kfd.limits["vram"] - self.kfd.node(a.gpu_id, "AVAILABLE_MEMORY").used["vram_aligned"]
        a.available = max(left, 0) // VRAM_AVAILABILITY_ALIGN * VRAM_AVAILABILITY_ALIGN

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

    # ---- mmaps ----------------------------------------------------------------------------------------------------
    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        """The event page (kfd_event_mmap: at most the KFD_SIGNAL_EVENT_LIMIT slots, EINVAL before one is set), or
        a GPU's doorbell page (kfd_doorbell_mmap: the whole page or EINVAL), memory that the doorbell agent
        watches for the process's stores."""
        if offset >> MMAP_TYPE_SHIFT == MMAP_TYPE_DOORBELL:
            return os_mmap(address, length, prot, flags | MAP_SHARED, self._doorbells(length, offset), 0)
        if offset >> MMAP_TYPE_SHIFT != MMAP_TYPE_EVENTS:
            raise fail(errno.EINVAL, f"/dev/kfd mmap at offset {offset:#x}: neither doorbells nor events")
        page = self.kfd.event_page
        if page is None or length > SIGNAL_EVENT_LIMIT * 8:
            raise fail(errno.EINVAL, f"/dev/kfd event page mmap of {length:#x} bytes")
        return os_mmap(address, length, prot, flags | MAP_SHARED, page.memfd, 0)

    def _doorbell_gpu(self, length: int, offset: int, what: str) -> int:
        """The GPU whose doorbell page an offset names (kfd_doorbell_mmap: the whole page of a GPU of the process,
        else EINVAL)."""
        if offset >> MMAP_TYPE_SHIFT != MMAP_TYPE_DOORBELL or length != DOORBELL_PAGE:
            raise fail(errno.EINVAL, f"/dev/kfd {what} of {length:#x} bytes at offset {offset:#x}")
        return self.kfd.node((offset >> MMAP_GPU_ID_SHIFT) & 0xFFFF, "doorbell mmap").gpu_id

    def _doorbells(self, length: int, offset: int) -> int:
        """The memfd of this descriptor's doorbell page of that GPU, made (and watched) on first use."""
        gpu_id = self._doorbell_gpu(length, offset, "doorbell mmap")
        if gpu_id not in self.doorbells:
            address, memfd = self._pages(f"kfd-doorbells-{gpu_id:#x}", DOORBELL_PAGE)
            self.doorbells[gpu_id] = (memfd, address)
            self.kfd.agent.watch(address, np.frombuffer(view(address, DOORBELL_PAGE), np.uint64))
        return self.doorbells[gpu_id][0]

    def mmio(self, length: int, offset: int, width: int) -> CallbackMMIO:
        """The process's doorbell page of a GPU as MMIO (usergpu's drivers): a write runs the queues at once."""
        self._doorbell_gpu(length, offset, "MMIO")
        values: dict[int, int] = {}

        def write(index: int, value: int) -> None:
            values[index] = value
            self.kfd.run()
        return CallbackMMIO(lambda index: values.get(index, 0), write)
