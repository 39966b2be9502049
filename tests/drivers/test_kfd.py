"""The KFD driver against the mock KFD: the real ioctl ABI, memory shared by CPU and GPU, errno on bad requests."""

from __future__ import annotations

import ctypes
import errno

import numpy as np
import pytest

from usergpu.autogen import kfd
from usergpu.drivers.amd.kfd import KFD, compute_queue_sizes, gpu_nodes
from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.amd.mock.kfd.kfd_queues import ctx_save_restore_sizes
from usergpu.emu.mock.hal import MockHAL
from usergpu.errors import DeviceNotFound, DriverError


@pytest.fixture
def hal(tmp_path):
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, "gfx1100", 2)
    return h


def test_topology_lists_the_mock_gpus_in_sysfs_text(hal):
    nodes = gpu_nodes(hal)
    assert [n for n, _ in nodes] == [1, 2]
    assert nodes[0][1]["gfx_target_version"] == 110000 and nodes[1][1]["drm_render_minor"] == 129
    assert KFD(hal, 1).arch == "gfx1100"
    with pytest.raises(DeviceNotFound, match="lists 2 GPUs"):
        KFD(hal, 2)


def test_memory_is_one_address_for_cpu_and_gpu(hal):
    dev = KFD(hal)
    for kind in ("vram", "gtt", "userptr"):
        mem = dev.alloc(10000, kind)
        assert mem.size == 12288
        np.frombuffer(mem.view(), np.uint32)[:4] = [1, 2, 3, 4]
        gpu = hal.kfd.nodes[0].gpu
        assert gpu.mem.read_bytes(mem.va, 16) == np.array([1, 2, 3, 4], np.uint32).tobytes()
        gpu.mem.write_bytes(mem.va + 16, b"\x07" * 4)
        assert bytes(mem.view()[16:20]) == b"\x07" * 4
        dev.free(mem)


def test_bad_requests_get_the_drivers_errno(hal):
    dev = KFD(hal)
    with pytest.raises(DriverError) as e:
        dev.ioctl(kfd.AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, va_addr=0x10000, size=0, gpu_id=dev.gpu_id,
                  flags=kfd.KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
    assert e.value.errno == errno.EINVAL and "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU" in str(e.value)
    with pytest.raises(DriverError) as e:
        dev.ioctl(kfd.AMDKFD_IOC_FREE_MEMORY_OF_GPU, handle=0x1234)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(DriverError) as e:
        dev.ioctl(kfd.AMDKFD_IOC_ACQUIRE_VM, drm_fd=dev.drm_fd, gpu_id=77)
    assert e.value.errno == errno.EINVAL
    ring = dev.alloc(4096, "gtt")
    with pytest.raises(DriverError) as e:  # a ring size that is not a power of two
        dev.ioctl(kfd.AMDKFD_IOC_CREATE_QUEUE, ring_base_address=ring.va, ring_size=3000, gpu_id=dev.gpu_id,
                  queue_type=kfd.KFD_IOC_QUEUE_TYPE_COMPUTE, read_pointer_address=ring.va,
                  write_pointer_address=ring.va + 8)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as raw:  # an ioctl number amdkfd does not have
        hal.ioctl(dev.fd, (3 << 30) | (8 << 16) | (0x4B << 8) | 0x7F, kfd.struct_kfd_ioctl_get_version_args())
    assert raw.value.errno == errno.ENOTTY
    small = (ctypes.c_uint8 * 4)()  # a buffer smaller than the request says
    with pytest.raises(OSError) as raw:
        hal.ioctl(dev.fd, kfd.AMDKFD_IOC_GET_VERSION.request, small)
    assert raw.value.errno == errno.EFAULT


def test_ctx_save_restore_sizes_are_amdkfds():
    """Worked by hand from kfd_queue_ctx_save_restore_size (Linux 6.12). Navi31: 96 CUs, 32 waves each; a control
    stack of 40 + 3072 * 12 + 8 bytes in pages; per CU 0x60000 VGPR + 0x4000 SGPR + 0x10000 LDS + 0x1000 HW reg."""
    navi31 = {"gfx_target_version": 110000, "simd_count": 192, "simd_per_cu": 2, "num_xcc": 1, "array_count": 12,
              "simd_arrays_per_engine": 2}
    assert ctx_save_restore_sizes(navi31) == {"ctl_stack_size": 0xA000, "cwsr_size": 0xA000 + 96 * 0x75000,
                                           "debug_memory_size": 3072 * 32, "eop_buffer_size": 4096}
    navi21 = navi31 | {"gfx_target_version": 100300, "simd_count": 160}  # 80 CUs would need 0x8000: gfx10 caps it
    assert ctx_save_restore_sizes(navi21)["ctl_stack_size"] == 0x7000
    mi300 = {"gfx_target_version": 90402, "simd_count": 1216, "simd_per_cu": 4, "num_xcc": 8, "array_count": 32,
             "simd_arrays_per_engine": 1}  # 38 CUs per XCC, 40 waves each at 8 bytes, the wider VGPR file
    assert ctx_save_restore_sizes(mi300)["cwsr_size"] == 0x3000 + 38 * 0x95000
    for props in (navi31, navi21, mi300):  # what the driver works out agrees with what the kernel checks
        kernel = ctx_save_restore_sizes(props)
        assert compute_queue_sizes(props | kernel) == kernel


def test_compute_queues_need_amdkfds_buffers(hal):
    """CREATE_QUEUE as kfd_queue_acquire_buffers checks it: pointers in a one-page object, the ring its own object,
    the control stack and CWSR area the sizes the topology publishes."""
    dev = KFD(hal)
    props = gpu_nodes(hal)[0][1]
    assert (props["ctl_stack_size"], props["cwsr_size"]) == (0xA000, 0xA000 + 96 * 0x75000)
    ring, pointers, big = dev.alloc(4096, "gtt"), dev.alloc(4096, "gtt"), dev.alloc(8192, "gtt")

    def create(**over):
        fields = dict(ring_base_address=ring.va, ring_size=4096, gpu_id=dev.gpu_id,
                      queue_type=kfd.KFD_IOC_QUEUE_TYPE_SDMA, read_pointer_address=pointers.va,
                      write_pointer_address=pointers.va + 8) | over
        return dev.ioctl(kfd.AMDKFD_IOC_CREATE_QUEUE, **fields)

    dev.ioctl(kfd.AMDKFD_IOC_DESTROY_QUEUE, queue_id=create().queue_id)
    for bad in (dict(read_pointer_address=big.va), dict(write_pointer_address=0x7000_0000),
                dict(ring_size=8192), dict(ring_base_address=big.va + 4096),
                dict(queue_type=kfd.KFD_IOC_QUEUE_TYPE_COMPUTE)):  # no CWSR area, control stack 0
        with pytest.raises(DriverError, match="CREATE_QUEUE") as e:
            create(**bad)
        assert e.value.errno == errno.EINVAL, bad
    queue = dev.create_queue("pm4", ring, pointers.va, pointers.va + 8)
    eop, cwsr = queue.buffers
    assert eop.size == 4096 and cwsr.size == 0xA000 + 96 * 0x75000 + 3072 * 32
    dev.destroy_queue(queue)
    assert {eop.handle, cwsr.handle}.isdisjoint(hal.kfd.bos)


def test_version_and_clock(hal):
    dev = KFD(hal)
    v = dev.ioctl(kfd.AMDKFD_IOC_GET_VERSION)
    assert (v.major_version, v.minor_version) == (kfd.KFD_IOCTL_MAJOR_VERSION, kfd.KFD_IOCTL_MINOR_VERSION)
    c = dev.ioctl(kfd.AMDKFD_IOC_GET_CLOCK_COUNTERS, gpu_id=dev.gpu_id)
    assert c.system_clock_freq == 1_000_000_000 and c.cpu_clock_counter > 0


def test_handles_are_not_reused_while_objects_live(hal):
    dev = KFD(hal)
    a, b = dev.alloc(4096, "gtt"), dev.alloc(4096, "gtt")
    dev.free(a)
    c = dev.alloc(4096, "gtt")
    assert c.handle not in (a.handle, b.handle)
    dev.free(b)
    dev.free(c)
