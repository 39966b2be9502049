"""The mock amdkfd answers what amdkfd (Linux 6.12, kfd_chardev.c) answers where a caller gets it wrong: pointers it
cannot reach are EFAULT, absurd sizes and counts ENOMEM or EINVAL with nothing left behind, the refusals of
ACQUIRE_VM, FREE and UNMAP of a queue's buffers, and closing /dev/kfd tears the process's state down."""

from __future__ import annotations

import ctypes
import errno
import os
import resource

import pytest
from kfdrig import ioctl, refused

from usergpu.autogen import kfd
from usergpu.drivers.amd.kfd import KFD
from usergpu.emu.amd.mock.kfd.kfd_events import FIRST_NONSIGNAL_EVENT_ID
from usergpu.emu.memory import MemoryFault
from usergpu.errors import DriverError
from usergpu.hostmem import MAP_ANONYMOUS, MAP_PRIVATE, PAGE, PROT_READ, PROT_WRITE, os_mmap, os_munmap

GTT, VRAM, USERPTR = (kfd.KFD_IOC_ALLOC_MEM_FLAGS_GTT, kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM,
                      kfd.KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
BAD_POINTERS = [0, 0xFFFF_8000_0000_0000, (1 << 64) - 16, 1 << 47]


def resources() -> tuple[int, int]:
    """This process's open descriptors, and its mappings of memory objects' memfds."""
    with open("/proc/self/maps") as maps:
        return len(os.listdir("/proc/self/fd")), sum("memfd:kfd-bo-" in line for line in maps)


# ---- pointers inside the structs ------------------------------------------------------------------------------
@pytest.mark.parametrize("pointer", BAD_POINTERS, ids=hex)
def test_pointers_inside_structs_are_efault(hal, pointer):
    dev = KFD(hal)
    refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
            kfd_process_device_apertures_ptr=pointer, num_of_nodes=2)
    mem = dev.alloc(PAGE, "gtt")
    after = refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=mem.handle,
                    device_ids_array_ptr=pointer, n_devices=1)
    assert after.n_success == 0
    data = refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=pointer, num_events=1)
    assert data.wait_result == kfd.KFD_IOC_WAIT_RESULT_FAIL  # written back with the failure, as amdkfd does
    if pointer >= 1 << 47:  # access_ok: a queue's buffers are in the user half (NULL is merely not mapped)
        refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_CREATE_QUEUE, gpu_id=dev.gpu_id, ring_size=PAGE,
                read_pointer_address=pointer | 8, write_pointer_address=mem.va)
    with pytest.raises(OSError) as e:  # the ioctl's own argument as a bad pointer
        hal.ioctl(dev.fd, kfd.AMDKFD_IOC_GET_VERSION.request, pointer)
    assert e.value.errno == errno.EFAULT


def test_a_read_only_buffer_is_readable_but_not_written(hal):
    dev = KFD(hal)
    page = os_mmap(0, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
            kfd_process_device_apertures_ptr=page, num_of_nodes=1)
    mem = dev.alloc(PAGE, "gtt")
    ids = ctypes.c_uint32(dev.gpu_id)
    after = refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=mem.handle,
                    device_ids_array_ptr=page, n_devices=1)  # a zero page reads gpu_id 0: no such GPU
    assert after.n_success == 0
    two = (ctypes.c_uint32 * 2)(dev.gpu_id, 0x77)
    after = refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=mem.handle,
                    device_ids_array_ptr=ctypes.addressof(two), n_devices=2)
    assert after.n_success == 1  # the first GPU is mapped: the caller may go on from there
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids),
          n_devices=1)


def test_an_event_array_running_into_a_hole_is_efault(hal):
    """Each event's data is read and looked up in turn: a whole first event, then memory that is not there."""
    dev = KFD(hal)
    event = dev.create_event(dev.alloc(8 * PAGE, "gtt"))
    pages = os_mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    os_munmap(pages + PAGE, PAGE)
    first = kfd.struct_kfd_event_data.from_address(pages + PAGE - ctypes.sizeof(kfd.struct_kfd_event_data))
    first.event_id = 0x1234
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(first), num_events=2)
    first.event_id = event
    refused(errno.EFAULT, hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(first), num_events=2)


# ---- absurd sizes and counts ------------------------------------------------------------------------------------
def test_absurd_counts_are_enomem_or_einval(hal):
    dev = KFD(hal)
    mem = dev.alloc(PAGE, "gtt")
    ids = (ctypes.c_uint32 * 1)(dev.gpu_id)
    for ioc in (kfd.AMDKFD_IOC_MAP_MEMORY_TO_GPU, kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU):
        refused(errno.ENOMEM, hal, dev.fd, ioc, handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids),
                n_devices=(1 << 32) - 1)  # kmalloc_array of 16 GiB of ids
        refused(errno.EINVAL, hal, dev.fd, ioc, handle=mem.handle, device_ids_array_ptr=ctypes.addressof(ids),
                n_devices=1, n_success=2)
    refused(errno.ENOMEM, hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(ids),
            num_events=(1 << 32) - 1)
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
            kfd_process_device_apertures_ptr=ctypes.addressof(ids), num_of_nodes=(1 << 32) - 1)
    assert ioctl(hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS, num_events=0).wait_result == \
        kfd.KFD_IOC_WAIT_RESULT_COMPLETE  # nothing to wait for is done


@pytest.mark.parametrize(("size", "flags", "code"), [
    (1 << 63, VRAM, errno.ENOMEM), (1 << 63, GTT, errno.ENOMEM), (25 << 30, VRAM, errno.ENOMEM),
    ((1 << 64) - 1, GTT, errno.EINVAL), (0, GTT, errno.EINVAL), (PAGE, 0, errno.EINVAL),
    (PAGE, kfd.KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, errno.EINVAL), (1 << 40, USERPTR, errno.EFAULT)],
    ids=lambda v: hex(v) if isinstance(v, int) else v)
def test_absurd_allocations_are_refused_and_leave_nothing_behind(hal, size, flags, code):
    dev = KFD(hal)
    before, objects = resources(), dict(hal.kfd.bos)
    refused(code, hal, dev.fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=1 << 40, size=size, gpu_id=dev.gpu_id,
            flags=flags, mmap_offset=1 << 46)  # user pages where nothing is mapped
    assert resources() == before and hal.kfd.bos == objects and hal.kfd.nodes[0].used["vram"] == 0


def test_vram_is_counted_against_the_boards_size(hal):
    dev = KFD(hal)
    big = ioctl(hal, dev.fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=1 << 40, size=16 << 30,
                gpu_id=dev.gpu_id, flags=VRAM)  # sparse: no page of it exists until written
    refused(errno.ENOMEM, hal, dev.fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=2 << 40, size=8 << 30,
            gpu_id=dev.gpu_id, flags=VRAM)  # 24 GiB less the page tables' share
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=big.handle)
    assert hal.kfd.nodes[0].used["vram"] == 0


def test_a_failed_memfd_size_or_mapping_closes_the_memfd(hal):
    """RLIMIT_FSIZE makes the memfd's ftruncate fail (EFBIG): the object is ENOMEM and its memfd closed."""
    dev = KFD(hal)
    before = resources()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (PAGE, hard))
    try:
        refused(errno.ENOMEM, hal, dev.fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=1 << 40, size=2 * PAGE,
                gpu_id=dev.gpu_id, flags=GTT)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert resources() == before and hal.kfd.used["system"] == 0


# ---- what amdkfd refuses ----------------------------------------------------------------------------------------
def test_acquire_vm_wants_a_render_node_of_that_gpu(hal):
    dev = KFD(hal)  # GPU 0, acquired with its render node
    other = hal.open("/dev/dri/renderD129")
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        for fd in (dev.fd, null, 1 << 25, other):  # /dev/kfd, not a DRM file, no file, GPU 1's render node
            refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=fd, gpu_id=dev.gpu_id)
    finally:
        os.close(null)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=dev.drm_fd, gpu_id=dev.gpu_id)  # the same again: 0
    gpu1 = hal.kfd.nodes[1].gpu_id
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=dev.drm_fd, gpu_id=gpu1)  # GPU 0's node
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=other, gpu_id=gpu1)


def test_a_gpu_is_used_only_after_acquire_vm(hal):
    fd = hal.open("/dev/kfd")
    gpu = hal.kfd.nodes[0].gpu_id
    refused(errno.ENODEV, hal, fd, kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=1 << 40, size=PAGE, gpu_id=gpu,
            flags=GTT)
    refused(errno.ESRCH, hal, fd, kfd.AMDKFD_IOC_CREATE_QUEUE, gpu_id=gpu, ring_size=PAGE, queue_type=1,
            ring_base_address=1 << 40, read_pointer_address=1 << 40, write_pointer_address=1 << 40)


def test_events_of_any_type_are_created_as_amdkfd_creates_them(hal):
    """amdkfd 6.12 creates an event of a type it has no case for like any non-signal event (kfd_event_create's
    default: create_other_event), so the mock does too; only signal events may be set from the CPU."""
    dev = KFD(hal)
    page = dev.alloc(8 * PAGE, "gtt")
    signal = dev.create_event(page)
    assert signal < FIRST_NONSIGNAL_EVENT_ID
    for kind in (kfd.KFD_IOC_EVENT_MEMORY, 99):
        other = dev.create_event(kind=kind)
        assert other >= FIRST_NONSIGNAL_EVENT_ID
        for ioc in (kfd.AMDKFD_IOC_SET_EVENT, kfd.AMDKFD_IOC_RESET_EVENT):
            refused(errno.EINVAL, hal, dev.fd, ioc, event_id=other)
        ioctl(hal, dev.fd, kfd.AMDKFD_IOC_DESTROY_EVENT, event_id=other)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_SET_EVENT, event_id=signal)
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_DESTROY_EVENT, event_id=signal + 100)


def test_the_event_page_is_big_enough_and_stays(hal):
    dev = KFD(hal)
    small, user = dev.alloc(PAGE, "gtt"), dev.alloc(8 * PAGE, "userptr")
    for page in (small, user):  # under KFD_SIGNAL_EVENT_LIMIT slots; user pages the kernel cannot map
        refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_CREATE_EVENT, event_page_offset=page.handle)
    page = dev.alloc(8 * PAGE, "gtt")
    dev.create_event(page)
    ids = ctypes.c_uint32(dev.gpu_id)
    ioctl(hal, dev.fd, kfd.AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle=page.handle,
          device_ids_array_ptr=ctypes.addressof(ids), n_devices=1)
    refused(errno.EPERM, hal, dev.fd, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=page.handle)


def test_a_live_queues_buffers_cannot_be_unmapped_or_freed(hal):
    """kfd_queue_acquire_buffers takes a queue_refcount on each buffer's mapping: UNMAP is EBUSY while the queue
    lives, and FREE of a mapped object EBUSY; destroying the queue lets them go."""
    dev = KFD(hal)
    ring, pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
    queue = dev.create_queue("pm4", ring, pointers.va, pointers.va + 8)
    eop, cwsr = queue.buffers
    for mem in (ring, pointers, eop, cwsr):
        with pytest.raises(DriverError, match="UNMAP_MEMORY_FROM_GPU") as e:
            dev.free(mem)
        assert e.value.errno == errno.EBUSY
        refused(errno.EBUSY, hal, dev.fd, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=mem.handle)
    dev.destroy_queue(queue)  # frees the EOP buffer and the CWSR area
    assert {eop.handle, cwsr.handle}.isdisjoint(hal.kfd.bos)
    for mem in (ring, pointers):
        dev.free(mem)
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=ring.handle)


def test_a_descriptor_is_the_opening_process_alone(hal):
    dev = KFD(hal)
    pid = os.fork()
    if pid == 0:  # the child: amdkfd answers EBADF to a process that did not open /dev/kfd
        try:
            ioctl(hal, dev.fd, kfd.AMDKFD_IOC_GET_VERSION)
            os._exit(1)
        except OSError as e:
            os._exit(0 if e.errno == errno.EBADF else 2)
    assert os.waitpid(pid, 0)[1] == 0


# ---- closing /dev/kfd -------------------------------------------------------------------------------------------
def test_closing_the_last_kfd_descriptor_releases_everything(hal):
    """As kfd_process_wq_release: queues destroyed, every memory object unmapped and freed (its memfd and the
    mock's mapping of it gone), events freed, the VMs let go; a second descriptor keeps it all until it closes."""
    KFD(hal).close()  # a first cycle: whatever the mock makes once (the machine's own state) is made
    before = resources()
    dev, second = KFD(hal), KFD(hal, 1)
    page = dev.alloc(8 * PAGE, "gtt")
    dev.create_event(page)
    ring, pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
    queue = dev.create_queue("aql", ring, pointers.va, pointers.va + 8)
    second.map(ring)
    vram = dev.alloc(1 << 20, "vram")
    for mem in (page, ring, pointers, vram, *queue.buffers):  # the driver's own mappings are the driver's to undo
        dev.hal.munmap(mem.va, mem.size)
    second.close()
    assert hal.kfd.bos and hal.kfd.events and hal.kfd.held  # what dev made stays while its descriptor is open
    dev.close()
    m = hal.kfd
    assert not (m.bos or m.events or m.held or m.vms or m.event_page or any(n.queues for n in m.nodes))
    assert m.used["system"] == 0 and m.nodes[0].used["vram"] == 0
    for n in m.nodes:  # the GPUs' VMs hold none of it
        with pytest.raises(MemoryFault):
            n.gpu.mem.mapping(ring.va)
    assert resources() == before
    KFD(hal).alloc(PAGE)  # a new process state: the GPU can be acquired again


def test_closing_a_descriptor_releases_what_was_made_through_it(hal):
    """Two Devices of one process on one GPU (the runtime's launch cache and a test's own): each one's objects,
    queues and events go when its descriptor closes; the other's stay and keep working."""
    first, second = KFD(hal), KFD(hal)
    mine = resources()
    page = first.alloc(8 * PAGE, "gtt")
    first.create_event(page)
    ring, pointers = first.alloc(PAGE, "gtt"), first.alloc(PAGE, "gtt")
    queue = first.create_queue("pm4", ring, pointers.va, pointers.va + 8)
    kept = second.alloc(PAGE, "gtt")
    for mem in (page, ring, pointers, *queue.buffers):
        first.hal.munmap(mem.va, mem.size)
    first.close()
    assert set(hal.kfd.bos) == {kept.handle} and not hal.kfd.held and not hal.kfd.events
    assert hal.kfd.event_page is None and resources()[1] == mine[1] + 2  # `kept`: the mock's view, the driver's
    second.free(second.alloc(PAGE, "gtt"))
