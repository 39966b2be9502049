"""MockHAL's entry to a mock device file: arguments of the wrong Python type are a DriverError before any device
code runs, sizes and offsets get the errno the kernel gives, ioctl arguments travel as fcntl.ioctl passes them
(an int by value, a ctypes object through a copy of at most 1024 bytes), and an operation a device lacks answers as
the VFS does."""

from __future__ import annotations

import ctypes
import errno

import pytest

from usergpu.autogen import kfd
from usergpu.drivers.amd.kfd import KFD
from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.mock.hal import MockHAL
from usergpu.errors import DriverError
from usergpu.hostmem import PAGE


@pytest.fixture
def hal(tmp_path):
    h = MockHAL(tmp_path)
    h.kfd = MockKFD(h, "gfx1100", 1)
    h.driver = KFD(h)
    return h


VERSION = kfd.AMDKFD_IOC_GET_VERSION.request
WRONG = [None, "str", 1.5, b"bytes", [1, 2], object()]


def code(fn, *args) -> int:
    with pytest.raises(OSError) as e:
        fn(*args)
    return e.value.errno


@pytest.mark.parametrize("arg", WRONG, ids=lambda v: type(v).__name__)
def test_an_ioctl_argument_of_the_wrong_type_is_a_driver_error(hal, arg):
    with pytest.raises(DriverError, match=r"ioctl 0x80084b01 failed: .*the argument is a \w+: an ioctl takes an"):
        hal.ioctl(hal.driver.fd, VERSION, arg)


@pytest.mark.parametrize("arg", WRONG, ids=lambda v: type(v).__name__)
def test_the_real_hal_refuses_the_same_arguments_the_same_way(arg, tmp_path):
    import os

    from usergpu.drivers.hal import HAL

    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        with pytest.raises(DriverError, match=r"the argument is a \w+: an ioctl takes an"):
            HAL().ioctl(fd, VERSION, arg)
    finally:
        os.close(fd)


@pytest.mark.parametrize("request_", [None, "x", 1.0, -1, 1 << 32], ids=repr)
def test_a_request_that_is_no_request_number_is_a_driver_error(hal, request_):
    with pytest.raises(DriverError, match="request"):
        hal.ioctl(hal.driver.fd, request_, kfd.struct_kfd_ioctl_get_version_args())


@pytest.mark.parametrize("fd", [None, "3", 1.0], ids=repr)
def test_a_descriptor_that_is_no_int_is_a_driver_error(hal, fd):
    with pytest.raises(DriverError) as e:
        hal.ioctl(fd, VERSION, 0)
    assert e.value.errno == errno.EBADF


def test_an_int_argument_is_the_address_the_kernel_reads(hal):
    version = kfd.struct_kfd_ioctl_get_version_args()
    hal.ioctl(hal.driver.fd, VERSION, ctypes.addressof(version))  # a pointer passed as the raw unsigned long
    assert version.major_version == kfd.KFD_IOCTL_MAJOR_VERSION
    for bad in (0, 0xFFFF_8000_0000_0000, (1 << 64) - 1):
        assert code(hal.ioctl, hal.driver.fd, VERSION, bad) == errno.EFAULT
    with pytest.raises(DriverError):  # not an unsigned long at all
        hal.ioctl(hal.driver.fd, VERSION, 1 << 64)


def test_a_buffer_smaller_than_the_request_is_efault_and_the_copy_shields_what_follows_it(hal):
    assert code(hal.ioctl, hal.driver.fd, VERSION, (ctypes.c_uint8 * 4)()) == errno.EFAULT
    # VFIO-style requests carry no size: the device writes back what the kernel would (here 32 bytes of
    # vfio_region_info), and only the caller's 8 bytes come back, as through fcntl.ioctl's 1024-byte copy
    from usergpu.autogen import vfio
    from usergpu.drivers.vfio import VFIOPCIDevice
    from usergpu.emu.amd.mock.pci.machine import bus, machine

    vhal = machine("gfx1200", directory=hal.root / "pci", vfio=True)
    fd = VFIOPCIDevice(vhal, bus(0)).device
    parent = (ctypes.c_uint8 * 64)(*([0xAA] * 64))
    small = (ctypes.c_uint8 * 8).from_buffer(parent)
    small[0] = 32  # argsz: the whole struct
    vhal.ioctl(fd, vfio.VFIO_DEVICE_GET_REGION_INFO, small)
    assert list(parent[8:]) == [0xAA] * 56 and small[4] == vfio.VFIO_REGION_INFO_FLAG_READ | \
        vfio.VFIO_REGION_INFO_FLAG_WRITE | vfio.VFIO_REGION_INFO_FLAG_MMAP  # BAR0's flags


def test_a_copy_past_the_ioctl_buffer_is_efault(hal):
    """amdkfd copies the caller's _IOC_SIZE whatever the direction bits say: within the 1024-byte copy that reads
    what follows the struct there (as through fcntl.ioctl), past it the inaccessible page after it: EFAULT."""
    no_direction = VERSION & ~(3 << 30)
    version = kfd.struct_kfd_ioctl_get_version_args()
    hal.ioctl(hal.driver.fd, no_direction | 64 << 16, version)
    assert version.major_version == kfd.KFD_IOCTL_MAJOR_VERSION
    assert code(hal.ioctl, hal.driver.fd, no_direction | 0x3FFF << 16, version) == errno.EFAULT


def test_a_device_writing_past_the_copy_gets_efault_not_the_heap(hal):
    from usergpu.emu.mock.uaccess import copy_to_user

    class Overrun:
        def ioctl(self, request: int, arg: int) -> None:
            copy_to_user(arg, b"\xee" * 2048)

    parent = (ctypes.c_uint8 * 64)()
    small = (ctypes.c_uint8 * 8).from_buffer(parent)
    assert code(hal.ioctl, hal.attach(Overrun()), 0, small) == errno.EFAULT
    assert list(small) == [0xEE] * 8 and list(parent[8:]) == [0] * 56  # what fit came back, nothing more


def test_file_operations_check_their_arguments_as_the_kernel_does(hal):
    fd = hal.driver.fd
    for args in ((fd, None, 0), (fd, 4, "0"), (fd, -1, 0), (fd, 4, 1 << 63)):
        with pytest.raises(DriverError):
            hal.pread(*args)
    assert code(hal.pread, fd, 4, -1) == errno.EINVAL  # rw_verify_area
    assert code(hal.pread, fd, 4, 0) == errno.EINVAL  # /dev/kfd has no read
    with pytest.raises(DriverError):
        hal.pwrite(fd, "text", 0)
    assert code(hal.pwrite, fd, b"x", (1 << 63) - 1) == errno.EINVAL  # would pass 2^63
    doorbells = 3 << 62 | hal.driver.gpu_id << 46
    for length, offset, want in ((0, doorbells, errno.EINVAL), (PAGE, doorbells + 1, errno.EINVAL),
                                 ((1 << 47) + PAGE, 0, errno.ENOMEM), (2 * PAGE, (1 << 64) - PAGE, errno.EOVERFLOW)):
        assert code(hal.mmap, fd, length, offset) == want
        assert code(hal.mmio, fd, length, offset, 8) == want
    for args in ((fd, None, 0), (fd, PAGE, 1.5), (fd, PAGE, 0, "rw"), (fd, PAGE, 0, 3, 1, -1)):
        with pytest.raises(DriverError):
            hal.mmap(*args)
    for width in (2, 4.0, None):
        with pytest.raises(DriverError):
            hal.mmio(fd, 0x2000, doorbells, width)
    assert code(hal.mmap, hal.driver.drm_fd, 1 << 40, 0x123 * PAGE) == errno.EINVAL  # no such memory object
    assert code(hal.pwrite, hal.driver.drm_fd, b"x", 0) == errno.EINVAL  # a render node has no write here
