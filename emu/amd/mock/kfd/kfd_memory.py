"""The memory ioctls of the mock /dev/kfd (kfd_chardev.c's): memory objects allocated, freed, mapped to and unmapped
from GPUs; the memory policy, scratch and XNACK settings; the VRAM left to allocate."""

from __future__ import annotations

import ctypes
import errno
from typing import TYPE_CHECKING

from usergpu.autogen import kfd
from usergpu.emu.amd.mock.kfd.objects import BO, DOORBELL_PAGE, KMALLOC_MAX_SIZE
from usergpu.emu.mock.uaccess import copy_from_user, fail, pin_user_pages
from usergpu.hostmem import PAGE, page_align, shared_pages

if TYPE_CHECKING:
    from usergpu.emu.amd.mock.kfd.kfd import MockKFD

# the domain amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu picks: the first of these flags the request has
ALLOC_KINDS = (kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM, kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT, kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR,
               kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | kfd.KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
GPUVM_SIZE = 1 << 48  # the VA range amdgpu_vm_bo_map accepts (max_pfn of a 48-bit GPUVM)
VRAM_AVAILABILITY_ALIGN = 2 << 20  # amdgpu_amdkfd_gpuvm.c: AVAILABLE_MEMORY counts VRAM objects in 2 MiB chunks


class MemoryIoctls:
    """The memory ioctls of a KFDFile."""

    kfd: MockKFD

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
                address, memfd = shared_pages(f"kfd-bo-{handle:#x}", size)
            except OSError as e:
                self.kfd.uncharge(n, charge)
                raise fail(errno.ENOMEM, f"{what}: {e.strerror}") from None
            a.mmap_offset = handle * PAGE  # the render node's offset for it
        self.kfd.add(BO(handle, a.gpu_id, a.va_addr, size, a.flags, address, memfd, charge, self))
        a.handle = handle

    def free(self, a) -> None:
        """EPERM for the event page, EINVAL for an unknown handle, EBUSY while a GPU still maps it."""
        if self.kfd.event_page is not None and a.handle == self.kfd.event_page.handle:
            raise fail(errno.EPERM, "FREE_MEMORY_OF_GPU: the event page lives as long as the process")
        bo = self.kfd.bo(a.handle, "FREE_MEMORY_OF_GPU")
        if bo.mapped:
            raise fail(errno.EBUSY, f"FREE_MEMORY_OF_GPU: {a.handle:#x} is still mapped on gpu_id "
                                    f"{', '.join(f'{g:#x}' for g in sorted(bo.mapped))}")
        self.kfd.release(bo)

    @staticmethod
    def _devices(a, what: str) -> list[int]:
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
        bo = self.kfd.bo(a.handle, what, errno.ENOMEM)
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
        bo = self.kfd.bo(a.handle, what, errno.ENOMEM)
        for i in range(a.n_success, a.n_devices):
            n = self.kfd.node(ids[i], what)
            if bo.queue_refs[n.gpu_id]:
                raise fail(errno.EBUSY, f"{what}: a queue on gpu_id {n.gpu_id:#x} uses {a.handle:#x}")
            if n.gpu_id in bo.mapped:
                self.kfd.unmap(bo, n)
            a.n_success = i + 1

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

    def available_memory(self, a) -> None:
        """amdgpu_amdkfd_get_available_memory of a dGPU: the VRAM left under the limit, each object counted in
        2 MiB chunks, rounded down to 2 MiB; EINVAL for a GPU the process lacks (no ACQUIRE_VM needed)."""
        left = self.kfd.limits["vram"] - self.kfd.node(a.gpu_id, "AVAILABLE_MEMORY").used["vram_aligned"]
        a.available = max(left, 0) // VRAM_AVAILABILITY_ALIGN * VRAM_AVAILABILITY_ALIGN
