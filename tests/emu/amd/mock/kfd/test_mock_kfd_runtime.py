"""What a KFD 1.17 client (tinygrad, ROCr) calls on the mock amdkfd, answered as linux-source-6.12's kfd_chardev.c
answers it: the version of the header the bindings are generated from, RUNTIME_ENABLE, AVAILABLE_MEMORY,
GET_QUEUE_WAVE_STATE with their errnos, and an allocation smaller than a page."""

from __future__ import annotations

import ctypes
import errno

import pytest
from kfdrig import ioctl, refused

from usergpu.autogen import kfd
from usergpu.drivers.amd.handles import reserve
from usergpu.drivers.amd.kfd import KFD, compute_queue_sizes
from usergpu.drivers.hal import MAP_FIXED
from usergpu.emu.memory import MemoryFault
from usergpu.hostmem import MAP_SHARED, PAGE, PROT_READ, PROT_WRITE, page_align

TWO_MIB = 2 << 20
ENABLE, TTMP = kfd.KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK, kfd.KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK


def compute_queue(dev: KFD, percent: int) -> int:
    """A PM4 queue made with a queue percentage (0: inactive, as amdkfd's QUEUE_IS_ACTIVE has it); its id."""
    sizes = compute_queue_sizes(dev.properties)
    ring, pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
    eop, cwsr = dev.alloc(sizes["eop_buffer_size"]), dev.alloc(page_align(sizes["cwsr_size"] +
                                                                          sizes["debug_memory_size"]))
    return ioctl(dev.hal, dev.fd, kfd.AMDKFD_IOC_CREATE_QUEUE, ring_base_address=ring.va, ring_size=PAGE,
                 gpu_id=dev.gpu_id, queue_type=kfd.KFD_IOC_QUEUE_TYPE_COMPUTE, queue_percentage=percent,
                 queue_priority=7, read_pointer_address=pointers.va, write_pointer_address=pointers.va + 8,
                 eop_buffer_address=eop.va, eop_buffer_size=sizes["eop_buffer_size"],
                 ctx_save_restore_address=cwsr.va, ctx_save_restore_size=sizes["cwsr_size"],
                 ctl_stack_size=sizes["ctl_stack_size"]).queue_id


# ---- the version ------------------------------------------------------------------------------------------------
def test_the_version_is_the_generated_headers_and_that_is_linux_6_12s(hal):
    dev = KFD(hal)
    got = ioctl(hal, dev.fd, kfd.AMDKFD_IOC_GET_VERSION)
    assert (got.major_version, got.minor_version) == (kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION)
    assert (got.major_version, got.minor_version) == (1, 17)  # include/uapi/linux/kfd_ioctl.h of linux 6.12
    assert "linux-source-6.12" in kfd.__doc__ and "include/uapi/linux/kfd_ioctl.h" in kfd.__doc__


# ---- RUNTIME_ENABLE -----------------------------------------------------------------------------------------------
def test_runtime_enable_as_a_runtime_calls_it_and_its_refusals(hal):
    """tinygrad and ROCr call it with mode_mask 0 after ACQUIRE_VM (disable: always 0). Enabling is EBUSY once
    enabled and EEXIST while an active queue exists (an inactive one does not count); the state is the process's,
    gone with its last descriptor."""
    dev = KFD(hal)
    for _ in range(2):
        ioctl(hal, dev.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=0)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, r_debug=0x1234000, mode_mask=ENABLE | TTMP)
    state = hal.kfd.runtime
    assert (state.runtime_state, state.r_debug, state.ttmp_setup) == (kfd.DEBUG_RUNTIME_STATE_ENABLED, 0x1234000, 1)
    refused(errno.EBUSY, hal, dev.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=ENABLE)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=TTMP)  # no enable bit: disable
    assert hal.kfd.runtime.runtime_state == kfd.DEBUG_RUNTIME_STATE_DISABLED and hal.kfd.runtime.r_debug == 0
    compute_queue(dev, 0)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=ENABLE)  # an inactive queue: queue_count 0
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=0)
    compute_queue(dev, 100)
    refused(errno.EEXIST, hal, dev.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=ENABLE)
    dev.close()
    again = KFD(hal)
    ioctl(hal, again.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=ENABLE)
    refused(errno.EBUSY, hal, again.fd, kfd.AMDKFD_IOC_RUNTIME_ENABLE, mode_mask=ENABLE)


# ---- AVAILABLE_MEMORY ---------------------------------------------------------------------------------------------
def test_available_memory_is_what_alloc_can_still_get(hal):
    """amdgpu_amdkfd_get_available_memory of a dGPU: the VRAM under the limit less each object rounded up to
    2 MiB, rounded down to 2 MiB. That much VRAM can be allocated, and then 2 MiB more cannot; GTT does not count;
    a GPU without ACQUIRE_VM answers too, an unknown gpu_id is EINVAL."""
    dev = KFD(hal)
    other = hal.kfd.nodes[1].gpu_id  # not acquired by this process
    start = ioctl(hal, dev.fd, kfd.AMDKFD_IOC_AVAILABLE_MEMORY, gpu_id=dev.gpu_id).available
    assert start == hal.kfd.limits["vram"] // TWO_MIB * TWO_MIB and 0 < start < 24 << 30
    assert ioctl(hal, dev.fd, kfd.AMDKFD_IOC_AVAILABLE_MEMORY, gpu_id=other).available == start
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_AVAILABLE_MEMORY, gpu_id=0x1234)

    def available() -> int:
        return ioctl(hal, dev.fd, kfd.AMDKFD_IOC_AVAILABLE_MEMORY, gpu_id=dev.gpu_id).available

    small, three, gtt = dev.alloc(PAGE), dev.alloc(3 << 20), dev.alloc(8 << 20, "gtt")
    assert available() == start - TWO_MIB - 2 * TWO_MIB
    for mem in (small, three, gtt):
        dev.free(mem)
    assert available() == start
    rest = ioctl(hal, dev.fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=1 << 40, size=start, gpu_id=dev.gpu_id,
                 flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM)  # sparse: no page of it exists until written
    assert available() == 0
    refused(errno.ENOMEM, hal, dev.fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=2 << 40, size=TWO_MIB,
            gpu_id=dev.gpu_id, flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=rest.handle)
    assert available() == start and hal.kfd.nodes[0].used["vram_aligned"] == 0


# ---- GET_QUEUE_WAVE_STATE -----------------------------------------------------------------------------------------
def test_wave_state_of_an_inactive_compute_queue_and_the_refusals(hal):
    """pqm_get_wave_state: EFAULT for a queue id the process lacks; EINVAL for an active queue or an SDMA one; an
    inactive compute queue (percentage 0: never run) has saved no waves: both sizes 0, and the header written at
    ctl_stack_address puts control stack and wave state at ctl_stack_size, empty (16 bytes, nothing after)."""
    dev = KFD(hal)
    ctl_stack = compute_queue_sizes(dev.properties)["ctl_stack_size"]
    header = (ctypes.c_uint32 * 8)(*[0xFFFFFFFF] * 8)
    where = ctypes.addressof(header)
    refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_id=7, ctl_stack_address=where)
    live = compute_queue(dev, 100)
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_id=live, ctl_stack_address=where)
    ring, pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
    sdma = dev.create_queue("sdma", ring, pointers.va, pointers.va + 8).queue_id
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_id=sdma, ctl_stack_address=where)
    idle = compute_queue(dev, 0)
    got = ioctl(hal, dev.fd, kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_id=idle, ctl_stack_address=where,
                ctl_stack_used_size=5, save_area_used_size=5)
    assert (got.ctl_stack_used_size, got.save_area_used_size) == (0, 0)
    assert list(header) == [ctl_stack, 0, ctl_stack, 0] + [0xFFFFFFFF] * 4
    for bad in (0, 1 << 47):
        refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_id=idle, ctl_stack_address=bad)


def test_an_inactive_queue_is_not_run(hal):
    """A queue made with percentage 0 is not mapped to the hardware: its doorbell does nothing."""
    dev = KFD(hal)
    idle = compute_queue(dev, 0)
    n = hal.kfd.nodes[0]
    assert idle in n.queues and n.queues[idle] not in n.scheduler.queues
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_DESTROY_QUEUE, queue_id=idle)
    assert idle not in n.queues


# ---- an object smaller than a page --------------------------------------------------------------------------------
def test_a_gtt_object_of_0x100_bytes_is_a_page(hal):
    """amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu makes a PAGE_ALIGN(size) object (tinygrad's 0x100-byte uncached
    GTT 'gart' holding a queue's pointers); amdkfd leaves the caller's size as it was, the render node maps the
    size asked (its pages: one) and no more than the object, and the GPU sees the whole page."""
    dev = KFD(hal)
    flags = (kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED
             | kfd.KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | kfd.KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE
             | kfd.KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE | kfd.KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE
             | kfd.KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC)
    va = reserve(hal, PAGE)
    got = ioctl(hal, dev.fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=va, size=0x100, gpu_id=dev.gpu_id,
                flags=flags)
    bo = hal.kfd.bos[got.handle]
    assert got.size == 0x100 and bo.size == PAGE and bo.charge == {"system": PAGE, "ttm": PAGE}
    with pytest.raises(OSError) as e:
        hal.mmap(dev.drm_fd, PAGE + 1, got.mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, va)
    assert e.value.errno == errno.EINVAL
    assert hal.mmap(dev.drm_fd, got.size, got.mmap_offset, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, va) == va
    ids = ctypes.c_uint32(dev.gpu_id)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=got.handle, device_ids_array_ptr=ctypes.addressof(ids),
          n_devices=1)
    gpu = hal.kfd.nodes[0].gpu
    ctypes.c_uint64.from_address(va + 0x80).value = 0x1122334455667788  # the CPU's store, through the render node
    assert gpu.load(va + 0x80, 8) == 0x1122334455667788
    gpu.store(va + PAGE - 4, 4, 7)  # the GPU's, past the 0x100 bytes asked, in the page
    assert ctypes.c_uint32.from_address(va + PAGE - 4).value == 7
    with pytest.raises(MemoryFault):
        gpu.load(va + PAGE, 4)
    sizes = compute_queue_sizes(dev.properties)  # a queue's pointers in it, as tinygrad puts them
    ring = dev.alloc(PAGE, "gtt")
    eop, cwsr = dev.alloc(PAGE), dev.alloc(page_align(sizes["cwsr_size"] + sizes["debug_memory_size"]))
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_CREATE_QUEUE, ring_base_address=ring.va, ring_size=PAGE, gpu_id=dev.gpu_id,
          queue_type=kfd.KFD_IOC_QUEUE_TYPE_COMPUTE_AQL, queue_percentage=100, read_pointer_address=va + 0x80,
          write_pointer_address=va + 0x88, eop_buffer_address=eop.va, eop_buffer_size=PAGE,
          ctx_save_restore_address=cwsr.va, ctx_save_restore_size=sizes["cwsr_size"],
          ctl_stack_size=sizes["ctl_stack_size"])
