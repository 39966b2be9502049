"""A mock VFIO (vfio-pci with the type-1 IOMMU) for a mock PCI function: /dev/vfio/vfio (a container per open),
/dev/vfio/<group> and the device descriptor the group hands out, answering the ioctls of linux/vfio.h with the
kernel's errno, the function's regions at VFIO_PCI_INDEX_TO_OFFSET (index << 40), and the IOMMU the container
programs: DMA mappings of this process's pages at IO virtual addresses, which the board's MMU follows for system-
memory PTEs."""

from __future__ import annotations

import bisect
import ctypes
import errno

from usergpu.autogen import vfio
from usergpu.emu.amd.mock.pci_function import SysfsFile

REGION_SHIFT = 40  # VFIO_PCI_OFFSET_SHIFT
PAGE = 4096


def fail(code: int, what: str) -> OSError:
    return OSError(code, f"{what}: {errno.errorcode[code]}")


class IOMMU:
    """IO virtual address -> this process's memory, as VFIO_IOMMU_MAP_DMA set it."""

    def __init__(self):
        self.maps: list[tuple[int, int, int]] = []  # (iova, vaddr, size), sorted, disjoint

    def map(self, iova: int, vaddr: int, size: int) -> None:
        if iova % PAGE or vaddr % PAGE or size % PAGE or not size:
            raise fail(errno.EINVAL, f"VFIO_IOMMU_MAP_DMA of {size:#x} bytes at IOVA {iova:#x}: not whole pages")
        if any(i < iova + size and iova < i + n for i, _, n in self.maps):
            raise fail(errno.EEXIST, f"VFIO_IOMMU_MAP_DMA at IOVA {iova:#x}: already mapped")
        bisect.insort(self.maps, (iova, vaddr, size))

    def unmap(self, iova: int, size: int) -> int:
        """The bytes unmapped: whole mappings inside [iova, iova + size)."""
        gone = [m for m in self.maps if iova <= m[0] and m[0] + m[2] <= iova + size]
        for m in gone:
            self.maps.remove(m)
        return sum(m[2] for m in gone)

    def translate(self, iova: int, size: int) -> int | None:
        """The address of the memory behind [iova, iova + size) if one mapping holds it all."""
        i = bisect.bisect_right(self.maps, (iova, 1 << 64, 0)) - 1
        if i < 0:
            return None
        at, vaddr, n = self.maps[i]
        return vaddr + iova - at if iova + size <= at + n else None


class Container:
    def __init__(self, hal):
        self.hal, self.iommu, self.groups = hal, None, []

    def ioctl(self, request: int, arg) -> int:
        if request == vfio.VFIO_GET_API_VERSION:
            return vfio.VFIO_API_VERSION
        if request == vfio.VFIO_CHECK_EXTENSION:
            return int(int(arg) in (vfio.VFIO_TYPE1_IOMMU, vfio.VFIO_TYPE1v2_IOMMU))
        if request == vfio.VFIO_SET_IOMMU:
            if not self.groups or int(arg) not in (vfio.VFIO_TYPE1_IOMMU, vfio.VFIO_TYPE1v2_IOMMU):
                raise fail(errno.EINVAL, "VFIO_SET_IOMMU: no group in the container, or an IOMMU type it lacks")
            self.iommu = self.groups[0].board.iommu
            return 0
        if request in (vfio.VFIO_IOMMU_MAP_DMA, vfio.VFIO_IOMMU_UNMAP_DMA):
            if self.iommu is None:
                raise fail(errno.EINVAL, "DMA mapping before VFIO_SET_IOMMU")
            if request == vfio.VFIO_IOMMU_MAP_DMA:
                self.iommu.map(arg.iova, arg.vaddr, arg.size)
            else:
                arg.size = self.iommu.unmap(arg.iova, arg.size)
            return 0
        raise fail(errno.ENOTTY, f"VFIO container ioctl {request:#x}")


class Group:
    def __init__(self, hal, board, address: str, viable):
        self.hal, self.board, self.address, self.viable, self.container = hal, board, address, viable, None

    def ioctl(self, request: int, arg) -> int:
        if request == vfio.VFIO_GROUP_GET_STATUS:
            arg.flags = (vfio.VFIO_GROUP_FLAGS_VIABLE if self.viable() else 0) | \
                (vfio.VFIO_GROUP_FLAGS_CONTAINER_SET if self.container else 0)
            return 0
        if request == vfio.VFIO_GROUP_SET_CONTAINER:
            container = self.hal.device(arg.value)
            if self.container or not isinstance(container, Container) or not self.viable():
                raise fail(errno.EINVAL, "VFIO_GROUP_SET_CONTAINER: in a container already, not a container, or the "
                                         "group is not viable")
            self.container = container
            container.groups.append(self)
            return 0
        if request == vfio.VFIO_GROUP_GET_DEVICE_FD:
            if self.container is None or self.container.iommu is None:
                raise fail(errno.EINVAL, "VFIO_GROUP_GET_DEVICE_FD before the container has its IOMMU")
            if ctypes.string_at(ctypes.addressof(arg)).decode() != self.address:
                raise fail(errno.ENODEV, "VFIO_GROUP_GET_DEVICE_FD: no such device in the group")
            return self.hal.attach(Device(self.board))
        raise fail(errno.ENOTTY, f"VFIO group ioctl {request:#x}")


class Device:
    """The device descriptor: its regions (BARs 0-5, config space 7) at index << 40."""

    def __init__(self, board):
        self.board = board

    def _region(self, offset: int) -> tuple[int, int]:
        return offset >> REGION_SHIFT, offset & ((1 << REGION_SHIFT) - 1)

    def ioctl(self, request: int, arg) -> int:
        if request != vfio.VFIO_DEVICE_GET_REGION_INFO:
            raise fail(errno.ENOTTY, f"VFIO device ioctl {request:#x}")
        if arg.index >= vfio.VFIO_PCI_NUM_REGIONS:
            raise fail(errno.EINVAL, f"VFIO_DEVICE_GET_REGION_INFO: region {arg.index}")
        config = arg.index == vfio.VFIO_PCI_CONFIG_REGION_INDEX
        arg.offset = arg.index << REGION_SHIFT
        arg.size = len(self.board.config) if config else self.board.bars.get(arg.index, (0, 0))[1]
        arg.flags = 0
        if arg.size:  # config space is read and written; a BAR also mapped
            arg.flags = vfio.VFIO_REGION_INFO_FLAG_READ | vfio.VFIO_REGION_INFO_FLAG_WRITE | \
                (0 if config else vfio.VFIO_REGION_INFO_FLAG_MMAP)
        return 0

    def pread(self, length: int, offset: int) -> bytes:
        region, at = self._region(offset)
        if region != vfio.VFIO_PCI_CONFIG_REGION_INDEX:
            raise fail(errno.EINVAL, f"VFIO read of region {region}: config space only")
        return SysfsFile(self.board).pread(length, at)

    def pwrite(self, data: bytes, offset: int) -> int:
        region, at = self._region(offset)
        if region != vfio.VFIO_PCI_CONFIG_REGION_INDEX:
            raise fail(errno.EINVAL, f"VFIO write of region {region}: config space only")
        return SysfsFile(self.board).pwrite(data, at)

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        region, at = self._region(offset)
        return SysfsFile(self.board, region).mmap(length, at, prot, flags, address)

    def mmio(self, length: int, offset: int, width: int):
        region, at = self._region(offset)
        return SysfsFile(self.board, region).mmio(length, at, width)


def install_vfio(hal, board, address: str, group: int) -> None:
    """The function bound to vfio-pci in the HAL's sysfs, its IOMMU group's files and the container's."""
    d = hal.root / f"sys/bus/pci/devices/{address}"
    groups = hal.root / f"sys/kernel/iommu_groups/{group}"
    (groups / "devices").mkdir(parents=True, exist_ok=True)
    driver = hal.root / "sys/bus/pci/drivers/vfio-pci"
    driver.mkdir(parents=True, exist_ok=True)
    for link, target in ((d / "iommu_group", groups), (d / "driver", driver)):
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target)
    hal.install("/dev/vfio/vfio", lambda: Container(hal))
    hal.install(f"/dev/vfio/{group}", lambda: Group(hal, board, address,
                                                    lambda: hal.readlink_name(f"/sys/bus/pci/devices/{address}/driver")
                                                    == "vfio-pci"))
