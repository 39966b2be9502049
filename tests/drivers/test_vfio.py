"""A PCI function through VFIO, on the mock (emu/amd/mock/pci/vfio.py): the container, group and device ioctls as
vfio-pci answers them (linux/vfio.h's request numbers, the kernel's errno), the regions, and DMA mappings that the
board's MMU follows."""

from __future__ import annotations

import ctypes
import errno

import numpy as np
import pytest

from usergpu.autogen import vfio
from usergpu.drivers.vfio import VFIOPCIDevice
from usergpu.emu.amd.mock.pci.board import RCC_CONFIG_MEMSIZE, MockPCIGPU
from usergpu.emu.amd.mock.pci.function import install_pci
from usergpu.emu.amd.mock.pci.machine import machine
from usergpu.emu.amd.mock.pci.vfio import install_vfio
from usergpu.emu.mock.hal import MockHAL
from usergpu.errors import DeviceNotFound, DriverError

BUS = "0000:03:00.0"


def test_the_function_through_vfio(tmp_path):
    hal = machine("gfx1200", directory=tmp_path, vfio=True)
    board = hal.boards[0]
    dev = VFIOPCIDevice(hal, BUS)
    assert (dev.vendor_id, dev.device_id) == (0x1002, 0x7590)
    assert dev.regions[vfio.VFIO_PCI_CONFIG_REGION_INDEX].offset == 7 << 40
    assert [dev.regions[n].size for n in (0, 2, 5)] == [board.vram_size, 2 << 20, 1 << 20]
    assert dev.bar(0).prefetchable and dev.bar(0).is64 and dev.bar(0).size == board.vram_size
    assert dev.map_bar(5).read32(4 * RCC_CONFIG_MEMSIZE) == board.vram_size >> 20
    dev.map_bar(0).write(0x1000, b"vram")
    assert bytes(board.vram[0x1000:0x1004]) == b"vram"


def test_dma_mappings_follow_the_kernels_rules(tmp_path):
    hal = machine("gfx1200", directory=tmp_path, vfio=True)
    board, dev = hal.boards[0], VFIOPCIDevice(hal, BUS)
    page = np.zeros(8192, np.uint8)
    host = page.ctypes.data + (-page.ctypes.data % 4096)
    dev.dma_map(host, 0x10_0000_0000, 4096)
    ctypes.memmove(host, b"host", 4)
    assert board.iommu.translate(0x10_0000_0000 + 1, 3) == host + 1
    with pytest.raises(DriverError, match=r"VFIO_IOMMU_MAP_DMA .*EEXIST"):
        dev.dma_map(host, 0x10_0000_0000, 4096)
    with pytest.raises(DriverError, match=r"VFIO_IOMMU_MAP_DMA .*EINVAL"):
        dev.dma_map(host + 1, 0x20_0000_0000, 4096)
    dev.dma_unmap(0x10_0000_0000, 4096)
    assert board.iommu.translate(0x10_0000_0000, 4) is None


def test_a_function_not_bound_to_vfio_pci_is_explained(tmp_path):
    hal = machine("gfx1200", directory=tmp_path)
    with pytest.raises(DeviceNotFound, match=rf"{BUS} is not bound to vfio-pci .*driver_override"):
        VFIOPCIDevice(hal, BUS)


def test_raw_ioctls_get_vfios_errno(tmp_path):
    """The order vfio-pci insists on: a device only from a group in a container whose IOMMU is set."""
    hal = MockHAL(tmp_path)
    board = MockPCIGPU("gfx1200")
    install_pci(hal, board, BUS)
    install_vfio(hal, board, BUS, 12)
    container, group = hal.open("/dev/vfio/vfio"), hal.open("/dev/vfio/12")
    assert hal.ioctl(container, vfio.VFIO_GET_API_VERSION, 0) == vfio.VFIO_API_VERSION
    assert hal.ioctl(container, vfio.VFIO_CHECK_EXTENSION, vfio.VFIO_TYPE1v2_IOMMU) == 1
    with pytest.raises(OSError) as e:
        hal.ioctl(container, vfio.VFIO_SET_IOMMU, vfio.VFIO_TYPE1v2_IOMMU)  # no group in it yet
    assert e.value.errno == errno.EINVAL
    hal.ioctl(group, vfio.VFIO_GROUP_SET_CONTAINER, ctypes.c_int(container))
    name = ctypes.create_string_buffer(BUS.encode())
    with pytest.raises(OSError) as e:
        hal.ioctl(group, vfio.VFIO_GROUP_GET_DEVICE_FD, name)  # the IOMMU is not set yet
    assert e.value.errno == errno.EINVAL
    hal.ioctl(container, vfio.VFIO_SET_IOMMU, vfio.VFIO_TYPE1v2_IOMMU)
    with pytest.raises(OSError) as e:
        hal.ioctl(group, vfio.VFIO_GROUP_GET_DEVICE_FD, ctypes.create_string_buffer(b"0000:04:00.0"))
    assert e.value.errno == errno.ENODEV
    device = hal.ioctl(group, vfio.VFIO_GROUP_GET_DEVICE_FD, name)
    info = vfio.struct_vfio_region_info(argsz=ctypes.sizeof(vfio.struct_vfio_region_info), index=9)
    with pytest.raises(OSError) as e:
        hal.ioctl(device, vfio.VFIO_DEVICE_GET_REGION_INFO, info)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError) as e:
        hal.ioctl(group, vfio.VFIO_GROUP_SET_CONTAINER, ctypes.c_int(container))  # in a container already
    assert e.value.errno == errno.EINVAL
