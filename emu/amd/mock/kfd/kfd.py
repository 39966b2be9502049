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

The ioctls live in one module per group of kfd_chardev.c's (kfd_process: the process as a whole, kfd_memory,
kfd_queues, kfd_events), mixins of KFDFile, whose table of handlers is the one dispatch.
"""

from __future__ import annotations

import bisect
import errno
import functools
import os
import threading
from collections import Counter

import numpy as np

from usergpu.autogen import kfd
from usergpu.autogen._support import Ioctl
from usergpu.emu.amd.mock.cdna import PARTITIONS, PARTS, xccs_per_partition
from usergpu.emu.amd.mock.gpu import GPU, RingQueue
from usergpu.emu.amd.mock.kfd import amdgpu_sysfs, topology
from usergpu.emu.amd.mock.kfd.amdgpu_device import VM_RESERVED_VRAM, VRAM
from usergpu.emu.amd.mock.kfd.kfd_events import EventIoctls
from usergpu.emu.amd.mock.kfd.kfd_memory import VRAM_AVAILABILITY_ALIGN, MemoryIoctls
from usergpu.emu.amd.mock.kfd.kfd_process import ProcessIoctls
from usergpu.emu.amd.mock.kfd.kfd_queues import QueueIoctls, ctx_save_restore_sizes
from usergpu.emu.amd.mock.kfd.objects import (
    BO,
    DOORBELL_PAGE,
    MMAP_GPU_ID_SHIFT,
    MMAP_TYPE_DOORBELL,
    MMAP_TYPE_EVENTS,
    MMAP_TYPE_SHIFT,
    SIGNAL_EVENT_LIMIT,
    Event,
    Held,
    memory_exception,
)
from usergpu.emu.amd.mock.kfd.render import RenderFile
from usergpu.emu.mock.scheduler import Scheduler, settle
from usergpu.emu.mock.tinygrad.agent import DoorbellAgent
from usergpu.emu.mock.uaccess import IOC_IN, IOC_OUT, fail, with_user_struct
from usergpu.errors import DeviceNotFound
from usergpu.hostmem import MAP_SHARED, CallbackMMIO, os_mmap, os_munmap, shared_pages, view

# what the package's importers take from here: the device files, and constants they check the mock against
TOPOLOGY = "/sys/devices/virtual/kfd/kfd/topology"
# arch -> (gfx_target_version, PCI device id, marketing name, SIMDs, CUs per SA, arrays)
ARCHS = {"gfx1100": (110000, 0x744C, "Radeon RX 7900 XTX", 192, 8, 12),
         "gfx1200": (120000, 0x7551, "Radeon RX 9070 XT", 128, 8, 8),
         "gfx1201": (120001, 0x7550, "Radeon RX 9070 XT", 128, 8, 8)}
RESERVE_MEM_LIMIT = 3 << 29  # amdgpu_amdkfd_gpuvm.c


def mem_limits(vram: int) -> dict[str, int]:
    """amdgpu_amdkfd_gpuvm_init_mem_limits on this machine: what all GTT and user pages may total (RAM less 1/64
    and 1.5 GiB), what GTT may (TTM's default, half of RAM), and the VRAM a GPU of `vram` bytes leaves after its
    page tables (ESTIMATE_PT_SIZE)."""
    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    system = ram - (ram >> 6)
    system = system >> 1 if system < 2 * RESERVE_MEM_LIMIT else system - RESERVE_MEM_LIMIT
    return {"system": system, "ttm": ram >> 1, "vram": vram - max((ram + vram) >> 14, VM_RESERVED_VRAM)}


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
        self._by_va: list[tuple[int, int]] = []  # (va, handle) of every object, in order: bo_at's index
        self.next_handle = 0
        self.held: dict[int, Held] = {}  # queue id -> the objects its buffers are in
        self.events: dict[int, Event] = {}
        self.event_page: BO | None = None
        self.runtime = kfd.struct_kfd_runtime_info()  # what RUNTIME_ENABLE set (the kfd_process's runtime_info)
        self.lock = threading.RLock()  # the process's calls and the doorbell agent's runs, one at a time
        self.waiters = threading.Condition(self.lock)  # WAIT_EVENTS sleeps on it while the GPUs run
        self.agent = DoorbellAgent(self.run, self.lock)
        hal.unmapped.append(self.agent.unmapped)
        self._publish()
        hal.install("/dev/kfd", lambda: KFDFile(self))
        for n in self.nodes:
            hal.install(f"/dev/dri/renderD{128 + n.index}", lambda n=n: RenderFile(self, n))
            n.gpu.interrupt_handlers.append(self._interrupt)
            n.gpu.fault_handlers.append(lambda address, access, n=n: self._vm_fault(n, address, access))
            n.gpu.hang_handlers.append(lambda error, n=n: self._queue_reset(n))
            n.gpu.over_bus = functools.partial(self.over_bus, n)
            n.gpu.backing = functools.partial(self.backing, n)

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
                caches = topology.caches(PARTS[self.arch], n.index, n.gpu.xccs)
                self.hal.mount(f"{TOPOLOGY}/nodes/{n.index + 1}/caches", {
                    str(i): {"properties": "".join(f"{k} {v}\n" for k, v in cache.items())}
                    for i, cache in enumerate(caches)})
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

    def bo_at(self, n: Node, address: int, size: int = 1) -> BO | None:
        """The memory object n's VM maps [address, address + size) in, if one does: the one n maps that starts
        nearest below the address (the objects one VM maps never overlap: MAP refuses a range already mapped)."""
        for i in range(bisect.bisect_right(self._by_va, (address, 1 << 64)) - 1, -1, -1):
            bo = self.bos[self._by_va[i][1]]
            if n.gpu_id in bo.mapped:
                return bo if address + size <= bo.va + bo.size else None
        return None

    def over_bus(self, n: Node, address: int) -> bool:
        """Whether n reaches a GPU address of its VM over its bus: system memory (GTT, user pages) or another board's
        VRAM (a compute partition's is its board's). What an SDMA copy's rate depends on."""
        bo = self.bo_at(n, address)
        return bo is not None and (not bo.flags & kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM
                                   or self.node(bo.gpu_id, "").board != n.board)

    def backing(self, n: Node, address: int, size: int) -> tuple[int, int] | None:
        """The memfd and offset of the memory n's VM maps [address, address + size) to, where one object holds it."""
        bo = self.bo_at(n, address, size)
        return None if bo is None or bo.memfd is None else (bo.memfd, address - bo.va)

    def bo(self, handle: int, what: str, code: int = errno.EINVAL) -> BO:
        """The object a handle names: its GPU must be the process's (EINVAL), the object that GPU's (code)."""
        self.node(handle >> 32, what)
        if handle not in self.bos:
            raise fail(code, f"{what}: no memory object with handle {handle:#x}")
        return self.bos[handle]

    def run(self) -> tuple[bool, bool]:
        """Every GPU's queues until none can make progress (a doorbell, or a wait that must see the GPU's work);
        a queue waiting on another GPU's write resumes when that GPU has run. A fault or a hang stops its queue
        and is raised to the caller. Whether anything ran, and whether work is left stalled."""
        with self.lock:
            return settle([(n.scheduler, n.gpu) for n in self.nodes])

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

    def _queue_reset(self, n: Node) -> None:
        """A queue stopped on anything but a VM fault (an illegal instruction, a trap, a malformed packet, a wave
        past its budget): on hardware it hangs, amdkfd's hang detection resets it and kfd_signal_reset_event tells
        the process: every HW-exception event fires with its GPU, memory_lost 1 and reset_cause GPU_HANG. The mock
        does at once what hang detection does after its timeout."""
        data = kfd.struct_kfd_hsa_hw_exception_data(reset_cause=kfd.KFD_HW_EXCEPTION_GPU_HANG, memory_lost=1,
                                                    gpu_id=n.gpu_id)
        for ev in self.events.values():
            if ev.event_type == kfd.KFD_IOC_EVENT_HW_EXCEPTION:
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
        self._by_va.remove((bo.va, bo.handle))

    def add(self, bo: BO) -> None:
        """A new memory object."""
        self.bos[bo.handle] = bo
        bisect.insort(self._by_va, (bo.va, bo.handle))

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


class KFDFile(ProcessIoctls, MemoryIoctls, QueueIoctls, EventIoctls):
    """/dev/kfd, opened: the ioctls of kfd_chardev.c (by group, in the mixins), its doorbell and event-page mmaps."""

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

    # ---- mmaps ----------------------------------------------------------------------------------------------------
    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        """The event page (kfd_event_mmap: at most the KFD_SIGNAL_EVENT_LIMIT slots, EINVAL before one is set), or
        a GPU's doorbell page (kfd_doorbell_mmap: the whole page or EINVAL), memory that the doorbell agent
        watches for the process's stores (and traps: a store through a memoryview runs the queues at once)."""
        if offset >> MMAP_TYPE_SHIFT == MMAP_TYPE_DOORBELL:
            mapped = os_mmap(address, length, prot, flags | MAP_SHARED, self._doorbells(length, offset), 0)
            self.kfd.agent.trap(mapped, length)
            return mapped
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
            address, memfd = shared_pages(f"kfd-doorbells-{gpu_id:#x}", DOORBELL_PAGE)
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
