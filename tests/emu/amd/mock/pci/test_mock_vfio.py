"""The mock VFIO answers bad requests as vfio (container.c, group.c, vfio_iommu_type1.c, vfio_pci_core.c) does:
structs it cannot reach are EFAULT, an argsz too small EINVAL, DMA it cannot pin EFAULT, IOVAs outside the
IOMMU's ranges EINVAL, and its files let go of the IOMMU when closed."""

from __future__ import annotations

import ctypes
import errno
import os

import numpy as np
import pytest

from usergpu.autogen import vfio
from usergpu.drivers.vfio import VFIOPCIDevice
from usergpu.emu.amd.mock.pci.machine import bus, machine
from usergpu.hostmem import MAP_ANONYMOUS, MAP_PRIVATE, PAGE, PROT_READ, os_mmap

BAD = [0, 0xFFFF_8000_0000_0000, (1 << 64) - 8]


@pytest.fixture
def opened(tmp_path):
    hal = machine("gfx1200", directory=tmp_path, vfio=True)
    return hal, VFIOPCIDevice(hal, bus(0))


def code(fn, *args) -> int:
    with pytest.raises(OSError) as e:
        fn(*args)
    return e.value.errno


def dma_map(size: int = PAGE, vaddr: int = 0, iova: int = 0x10_0000_0000, flags: int = 3, argsz: int = 32):
    return vfio.struct_vfio_iommu_type1_dma_map(argsz=argsz, flags=flags, vaddr=vaddr, iova=iova, size=size)


@pytest.mark.parametrize("pointer", BAD, ids=hex)
def test_structs_vfio_cannot_reach_are_efault(opened, pointer):
    hal, dev = opened
    for fd, request in ((dev.group, vfio.VFIO_GROUP_GET_STATUS), (dev.group, vfio.VFIO_GROUP_SET_CONTAINER),
                        (dev.group, vfio.VFIO_GROUP_GET_DEVICE_FD), (dev.container, vfio.VFIO_IOMMU_MAP_DMA),
                        (dev.container, vfio.VFIO_IOMMU_UNMAP_DMA), (dev.device, vfio.VFIO_DEVICE_GET_REGION_INFO)):
        assert code(hal.ioctl, fd, request, pointer) == errno.EFAULT, hex(request)


def test_an_argsz_under_the_struct_is_einval(opened):
    hal, dev = opened
    for fd, request, arg in ((dev.group, vfio.VFIO_GROUP_GET_STATUS, vfio.struct_vfio_group_status(argsz=7)),
                             (dev.container, vfio.VFIO_IOMMU_MAP_DMA, dma_map(argsz=31)),
                             (dev.device, vfio.VFIO_DEVICE_GET_REGION_INFO, vfio.struct_vfio_region_info(argsz=31))):
        assert code(hal.ioctl, fd, request, arg) == errno.EINVAL


def test_dma_wants_pages_it_can_pin_in_the_iommus_ranges(opened):
    hal, dev = opened
    host = np.zeros(3 * PAGE, np.uint8)
    page = host.ctypes.data + (-host.ctypes.data % PAGE)
    readonly = os_mmap(0, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    for arg, want in ((dma_map(vaddr=1 << 46), errno.EFAULT),  # nothing mapped there
                      (dma_map(vaddr=readonly), errno.EFAULT),  # the device would write it
                      (dma_map(vaddr=page, iova=0xFEE0_0000), errno.EINVAL),  # the MSI window
                      (dma_map(vaddr=page, iova=1 << 48), errno.EINVAL),  # past the aperture
                      (dma_map(vaddr=page, iova=(1 << 64) - PAGE, size=2 * PAGE), errno.EINVAL),  # wraps
                      (dma_map(vaddr=page, flags=0), errno.EINVAL),  # no access
                      (dma_map(vaddr=page, flags=8), errno.EINVAL),  # a flag vfio lacks
                      (dma_map(vaddr=page, size=1 << 63), errno.EINVAL),  # larger than the aperture
                      (dma_map(vaddr=page, size=1 << 40), errno.EFAULT)):  # more pages than are mapped there
        assert code(hal.ioctl, dev.container, vfio.VFIO_IOMMU_MAP_DMA, arg) == want, arg
    hal.ioctl(dev.container, vfio.VFIO_IOMMU_MAP_DMA, dma_map(vaddr=readonly, flags=vfio.VFIO_DMA_MAP_FLAG_READ))
    hal.ioctl(dev.container, vfio.VFIO_IOMMU_MAP_DMA, dma_map(vaddr=page, size=2 * PAGE, iova=0x20_0000_0000))
    unmap = vfio.struct_vfio_iommu_type1_dma_unmap(argsz=24, iova=0x20_0000_0000, size=PAGE)
    assert code(hal.ioctl, dev.container, vfio.VFIO_IOMMU_UNMAP_DMA, unmap) == errno.EINVAL  # cuts a mapping (v2)
    everything = vfio.struct_vfio_iommu_type1_dma_unmap(argsz=24, flags=vfio.VFIO_DMA_UNMAP_FLAG_ALL)
    hal.ioctl(dev.container, vfio.VFIO_IOMMU_UNMAP_DMA, everything)
    assert everything.size == 3 * PAGE


def test_set_container_and_get_device_fd_read_what_vfio_reads(opened):
    hal, dev = opened
    group = hal.device(dev.group)
    null = os.open("/dev/null", os.O_RDONLY)
    try:
        hal.close(dev.device)
        hal.ioctl(dev.group, vfio.VFIO_GROUP_UNSET_CONTAINER, 0)
        assert code(hal.ioctl, dev.group, vfio.VFIO_GROUP_UNSET_CONTAINER, 0) == errno.EINVAL
        for fd, want in ((null, errno.EBADFD), (1 << 25, errno.EBADF), (-1, errno.EBADF),
                         (dev.group, errno.EBADFD)):
            assert code(hal.ioctl, dev.group, vfio.VFIO_GROUP_SET_CONTAINER, ctypes.c_int(fd)) == want, fd
    finally:
        os.close(null)
    assert group.container is None and board_iommu(hal).translate(0, 1) is None
    hal.ioctl(dev.group, vfio.VFIO_GROUP_SET_CONTAINER, ctypes.c_int(dev.container))
    hal.ioctl(dev.container, vfio.VFIO_SET_IOMMU, vfio.VFIO_TYPE1v2_IOMMU)
    long = ctypes.create_string_buffer(b"0" * (2 * PAGE))  # no NUL within a page
    assert code(hal.ioctl, dev.group, vfio.VFIO_GROUP_GET_DEVICE_FD, long) == errno.EINVAL
    assert hal.ioctl(dev.group, vfio.VFIO_GROUP_GET_DEVICE_FD, ctypes.create_string_buffer(bus(0).encode())) \
        >= hal.FIRST_FD


def board_iommu(hal):
    return hal.boards[0].iommu


def test_closing_the_group_takes_the_iommu_and_its_mappings(opened):
    """A group's file is released once its device's is too; the container's last group gone, the type-1 IOMMU
    is released and the board's DMA no longer reaches the pages."""
    hal, dev = opened
    host = np.zeros(2 * PAGE, np.uint8)
    page = host.ctypes.data + (-host.ctypes.data % PAGE)
    dev.dma_map(page, 0x10_0000_0000, PAGE)
    assert board_iommu(hal).translate(0x10_0000_0000, 4) == page
    hal.close(dev.group)
    assert board_iommu(hal).translate(0x10_0000_0000, 4) == page  # the open device holds the group
    hal.close(dev.device)
    assert board_iommu(hal).translate(0x10_0000_0000, 4) is None
    assert code(hal.ioctl, dev.container, vfio.VFIO_IOMMU_MAP_DMA, dma_map(vaddr=page)) == errno.EINVAL


def test_the_device_reads_config_space_within_it(opened):
    hal, dev = opened
    config = vfio.VFIO_PCI_CONFIG_REGION_INDEX << 40
    assert hal.pread(dev.device, 2, config) == (0x1002).to_bytes(2, "little")
    for length, offset, want in ((4, config + 0xFFE, errno.EFAULT), (1, config + 0x1000, errno.EFAULT),
                                 (4, 9 << 40, errno.EINVAL), (4, 0, errno.EINVAL)):
        assert code(hal.pread, dev.device, length, offset) == want
    assert hal.pread(dev.device, 0, config + 0x5000) == b""  # nothing to move: no bounds to break
    info = vfio.struct_vfio_region_info(argsz=32, index=vfio.VFIO_PCI_VGA_REGION_INDEX)
    assert code(hal.ioctl, dev.device, vfio.VFIO_DEVICE_GET_REGION_INFO, info) == errno.EINVAL
    assert code(hal.mmap, dev.device, PAGE, config) == errno.EINVAL  # config space is read, not mapped
