"""A mock VFIO (vfio-pci with the type-1 IOMMU) for mock PCI functions: /dev/vfio/vfio (a container per open),
/dev/vfio/<group> and the device descriptor the group hands out, answering the ioctls of linux/vfio.h with the
kernel's errno (container.c, group.c, vfio_iommu_type1.c, vfio_pci_core.c), the function's regions at
VFIO_PCI_INDEX_TO_OFFSET (index << 40), and the IOMMU the container programs: DMA mappings of this process's pages
at IO virtual addresses, which the boards' MMUs follow for system-memory PTEs.

Every struct an ioctl names is read and written through uaccess, so a bad address is EFAULT. Closing the files
lets go as the kernel does: a container without groups has no IOMMU any more (its mappings are gone), and a group
closed leaves its container.
"""

from __future__ import annotations

import bisect
import ctypes
import errno
import os

from usergpu.autogen import vfio
from usergpu.emu.amd.mock.pci.function import SysfsFile, config_read, config_write
from usergpu.emu.mock.uaccess import copy_from_user, copy_to_user, pin_user_pages, strndup_user

REGION_SHIFT = 40  # VFIO_PCI_OFFSET_SHIFT
PAGE = 4096
DMA_ENTRY_LIMIT = 65535  # vfio_iommu_type1's dma_entry_limit: mappings per container
IOVA_LIMIT = 1 << 48  # the IOMMU's aperture (4-level VT-d / AMD-Vi page tables)
MSI_WINDOW = (0xFEE0_0000, 0xFEF0_0000)  # x86's interrupt range, reserved in every IOMMU domain
TYPES = (vfio.VFIO_TYPE1_IOMMU, vfio.VFIO_TYPE1v2_IOMMU)
EXTENSIONS = (*TYPES, vfio.VFIO_UNMAP_ALL)  # what this type-1 IOMMU driver reports (no VADDR updates)
MAP_FLAGS = vfio.VFIO_DMA_MAP_FLAG_READ | vfio.VFIO_DMA_MAP_FLAG_WRITE
UNMAP_FLAGS = vfio.VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP | vfio.VFIO_DMA_UNMAP_FLAG_ALL


def fail(code: int, what: str) -> OSError:
    return OSError(code, f"{what}: {errno.errorcode[code]}")


def get_args(arg: int, ctype: type, minsz: int, what: str) -> ctypes.Structure:
    """The first minsz bytes of an argsz'd struct (EFAULT if unreadable), EINVAL if its argsz is under minsz."""
    got = ctype.from_buffer(copy_from_user(arg, minsz, what) + bytearray(ctypes.sizeof(ctype) - minsz))
    if got.argsz < minsz:
        raise fail(errno.EINVAL, f"{what}: argsz {got.argsz}, at least {minsz}")
    return got


def put_args(arg: int, value: ctypes.Structure, minsz: int, what: str) -> None:
    copy_to_user(arg, bytes(value)[:minsz], what)


def end_of(ctype: type, name: str) -> int:
    """offsetofend(ctype, name)."""
    field = getattr(ctype, name)
    return field.offset + field.size


class IOMMU:
    """IO virtual address -> this process's memory, as VFIO_IOMMU_MAP_DMA set it."""

    def __init__(self, v2: bool = True):
        self.v2 = v2
        self.maps: list[tuple[int, int, int]] = []  # (iova, vaddr, size), sorted, disjoint

    def map(self, iova: int, vaddr: int, size: int, flags: int) -> None:
        """vfio_dma_do_map: EINVAL for no access, a size or address off a page, a range that wraps or leaves the
        aperture (or meets the MSI window); EEXIST over a mapping, ENOSPC past the entry limit; EFAULT for pages
        that cannot be pinned."""
        what = f"VFIO_IOMMU_MAP_DMA of {size:#x} bytes at IOVA {iova:#x}"
        if not flags & MAP_FLAGS or not size or (size | iova | vaddr) % PAGE:
            raise fail(errno.EINVAL, f"{what}: no access, or not whole pages")
        if iova + size > 1 << 64 or vaddr + size > 1 << 64:
            raise fail(errno.EINVAL, f"{what}: the range wraps")
        if any(i < iova + size and iova < i + n for i, _, n in self.maps):
            raise fail(errno.EEXIST, f"{what}: already mapped")
        if len(self.maps) >= DMA_ENTRY_LIMIT:
            raise fail(errno.ENOSPC, f"{what}: {DMA_ENTRY_LIMIT} mappings already")
        if iova + size > IOVA_LIMIT or iova < MSI_WINDOW[1] and MSI_WINDOW[0] < iova + size:
            raise fail(errno.EINVAL, f"{what}: outside the IOMMU's IOVA ranges")
        pin_user_pages(vaddr, size, bool(flags & vfio.VFIO_DMA_MAP_FLAG_WRITE), what)
        bisect.insort(self.maps, (iova, vaddr, size))

    def unmap(self, iova: int, size: int, everything: bool = False) -> int:
        """vfio_dma_do_unmap: the bytes unmapped, whole mappings inside [iova, iova + size) (everything: all). A
        v2 IOMMU refuses a range that cuts a mapping in two (EINVAL)."""
        what = f"VFIO_IOMMU_UNMAP_DMA of {size:#x} bytes at IOVA {iova:#x}"
        if iova % PAGE or (iova or size if everything else not size or size % PAGE or iova + size > 1 << 64):
            raise fail(errno.EINVAL, what)
        end = 1 << 64 if everything else iova + size
        if self.v2 and any(i < iova < i + n or i < end < i + n for i, _, n in self.maps):
            raise fail(errno.EINVAL, f"{what}: the range cuts a mapping")
        gone = [m for m in self.maps if iova <= m[0] and m[0] + m[2] <= end]
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

    def ioctl(self, request: int, arg: int) -> int:
        """vfio_fops_unl_ioctl: the container's own requests, the rest passed to the IOMMU driver once one is
        set (EINVAL before: no driver to ask, ENOTTY from it for one it lacks)."""
        if request == vfio.VFIO_GET_API_VERSION:
            return vfio.VFIO_API_VERSION
        if request == vfio.VFIO_CHECK_EXTENSION:
            return int(arg in EXTENSIONS)
        if request == vfio.VFIO_SET_IOMMU:
            return self.set_iommu(arg)
        if self.iommu is None:
            raise fail(errno.EINVAL, f"VFIO container ioctl {request:#x} before VFIO_SET_IOMMU")
        if request == vfio.VFIO_IOMMU_MAP_DMA:
            return self.map_dma(arg)
        if request == vfio.VFIO_IOMMU_UNMAP_DMA:
            return self.unmap_dma(arg)
        raise fail(errno.ENOTTY, f"VFIO IOMMU ioctl {request:#x} (the mock models MAP_DMA and UNMAP_DMA)")

    def set_iommu(self, kind: int) -> int:
        """EINVAL without a group or with an IOMMU set already; ENODEV for a type no driver offers."""
        if not self.groups or self.iommu is not None:
            raise fail(errno.EINVAL, "VFIO_SET_IOMMU: no group in the container, or its IOMMU is set already")
        if kind not in TYPES:
            raise fail(errno.ENODEV, f"VFIO_SET_IOMMU: no IOMMU driver of type {kind}")
        self.iommu = IOMMU(v2=kind == vfio.VFIO_TYPE1v2_IOMMU)
        for group in self.groups:
            group.board.iommu = self.iommu
        return 0

    def map_dma(self, arg: int) -> int:
        what = "VFIO_IOMMU_MAP_DMA"
        ctype = vfio.struct_vfio_iommu_type1_dma_map
        m = get_args(arg, ctype, end_of(ctype, "size"), what)
        if m.flags & ~MAP_FLAGS:
            raise fail(errno.EINVAL, f"{what}: flags {m.flags:#x}")
        self.iommu.map(m.iova, m.vaddr, m.size, m.flags)
        return 0

    def unmap_dma(self, arg: int) -> int:
        """The bytes unmapped are written back in size. Dirty-page tracking is never on, so a dirty bitmap is
        EINVAL once the kernel has read its header."""
        what = "VFIO_IOMMU_UNMAP_DMA"
        ctype = vfio.struct_vfio_iommu_type1_dma_unmap
        minsz = end_of(ctype, "size")
        u = get_args(arg, ctype, minsz, what)
        dirty, everything = (u.flags & f for f in (vfio.VFIO_DMA_UNMAP_FLAG_GET_DIRTY_BITMAP,
                                                   vfio.VFIO_DMA_UNMAP_FLAG_ALL))
        if u.flags & ~UNMAP_FLAGS or dirty and (everything or u.argsz < minsz + ctypes.sizeof(vfio.struct_vfio_bitmap)):
            raise fail(errno.EINVAL, f"{what}: flags {u.flags:#x}, argsz {u.argsz}")
        if dirty:
            copy_from_user(arg + minsz, ctypes.sizeof(vfio.struct_vfio_bitmap), what)
            raise fail(errno.EINVAL, f"{what}: dirty page tracking is not on")
        u.size = self.iommu.unmap(u.iova, u.size, bool(everything))
        put_args(arg, u, minsz, what)
        return 0

    def detach(self, group: Group) -> None:
        """A group leaves; the last one takes the IOMMU with it (the type-1 driver is released: its mappings
        go)."""
        self.groups.remove(group)
        group.board.iommu = IOMMU()
        if not self.groups and self.iommu is not None:
            self.iommu.maps.clear()
            self.iommu = None


class Group:
    def __init__(self, hal, board, address: str, viable):
        self.hal, self.board, self.address, self.viable, self.container = hal, board, address, viable, None
        self.devices: list[Device] = []
        self.closed = False

    def ioctl(self, request: int, arg: int) -> int:
        handlers = {vfio.VFIO_GROUP_GET_STATUS: self.get_status, vfio.VFIO_GROUP_SET_CONTAINER: self.set_container,
                    vfio.VFIO_GROUP_UNSET_CONTAINER: self.unset_container,
                    vfio.VFIO_GROUP_GET_DEVICE_FD: self.get_device_fd}
        if request not in handlers:
            raise fail(errno.ENOTTY, f"VFIO group ioctl {request:#x}")
        return handlers[request](arg)

    def get_status(self, arg: int) -> int:
        ctype = vfio.struct_vfio_group_status
        minsz = end_of(ctype, "flags")
        status = get_args(arg, ctype, minsz, "VFIO_GROUP_GET_STATUS")
        status.flags = (vfio.VFIO_GROUP_FLAGS_CONTAINER_SET | vfio.VFIO_GROUP_FLAGS_VIABLE if self.container else
                        vfio.VFIO_GROUP_FLAGS_VIABLE if self.viable() else 0)
        put_args(arg, status, minsz, "VFIO_GROUP_GET_STATUS")
        return 0

    def set_container(self, arg: int) -> int:
        """get_user of the fd (EFAULT), fdget (EBADF), EINVAL in a container already, EBADFD for a file that is no
        container, EBUSY for a group some other driver still holds (not viable)."""
        what = "VFIO_GROUP_SET_CONTAINER"
        fd = ctypes.c_int.from_buffer(copy_from_user(arg, 4, what)).value
        container = self._file(fd, what)
        if self.container is not None:
            raise fail(errno.EINVAL, f"{what}: the group is in a container already")
        if not isinstance(container, Container):
            raise fail(errno.EBADFD, f"{what}: fd {fd} is not a VFIO container")
        if not self.viable():
            raise fail(errno.EBUSY, f"{what}: a function of the group is bound to another driver")
        self.container = container
        container.groups.append(self)
        if container.iommu is not None:
            self.board.iommu = container.iommu
        return 0

    def _file(self, fd: int, what: str):
        """The open file behind a descriptor: a mock device, or None for one the OS has; EBADF if none is open."""
        if fd >= self.hal.FIRST_FD:
            try:
                return self.hal.device(fd)
            except OSError:
                raise fail(errno.EBADF, f"{what}: fd {fd}") from None
        try:
            os.fstat(fd)
        except (OSError, OverflowError, ValueError):
            raise fail(errno.EBADF, f"{what}: fd {fd}") from None
        return None

    def unset_container(self, arg: int) -> int:
        """EINVAL outside a container, EBUSY while a device of the group is open."""
        if self.container is None:
            raise fail(errno.EINVAL, "VFIO_GROUP_UNSET_CONTAINER: the group is in no container")
        if self.devices:
            raise fail(errno.EBUSY, "VFIO_GROUP_UNSET_CONTAINER: a device of the group is open")
        self.container.detach(self)
        self.container = None
        return 0

    def get_device_fd(self, arg: int) -> int:
        """strndup_user of the name (EFAULT, EINVAL without a NUL in a page), ENODEV for a device the group lacks,
        EINVAL before the container has its IOMMU."""
        what = "VFIO_GROUP_GET_DEVICE_FD"
        name = strndup_user(arg, PAGE, what)
        if name != self.address.encode():
            raise fail(errno.ENODEV, f"{what}: no device {name[:64]!r} in the group")
        if self.container is None or self.container.iommu is None:
            raise fail(errno.EINVAL, f"{what} before the container has its IOMMU")
        device = Device(self.board, self)
        self.devices.append(device)
        return self.hal.attach(device)

    def close(self) -> None:
        """The group's file is released once its devices are closed too (each holds a reference to it); then it
        leaves its container."""
        self.closed = True
        if not self.devices and self.container is not None:
            self.container.detach(self)
            self.container = None


class Device:
    """The device descriptor: its regions (BARs 0-5, the ROM 6, config space 7) at index << 40."""

    def __init__(self, board, group: Group):
        self.board, self.group = board, group

    def close(self) -> None:
        self.group.devices.remove(self)
        if self.group.closed:
            self.group.close()

    @staticmethod
    def _region(offset: int, what: str) -> tuple[int, int]:
        index = offset >> REGION_SHIFT
        if index >= vfio.VFIO_PCI_NUM_REGIONS:
            raise fail(errno.EINVAL, f"{what}: region {index}")
        return index, offset & ((1 << REGION_SHIFT) - 1)

    def ioctl(self, request: int, arg: int) -> int:
        if request != vfio.VFIO_DEVICE_GET_REGION_INFO:
            raise fail(errno.ENOTTY, f"VFIO device ioctl {request:#x} (the mock models GET_REGION_INFO)")
        what, ctype = "VFIO_DEVICE_GET_REGION_INFO", vfio.struct_vfio_region_info
        minsz = end_of(ctype, "offset")
        info = get_args(arg, ctype, minsz, what)
        if info.index >= vfio.VFIO_PCI_VGA_REGION_INDEX:  # no VGA region: vfio-pci built without VFIO_PCI_VGA
            raise fail(errno.EINVAL, f"{what}: region {info.index}")
        config = info.index == vfio.VFIO_PCI_CONFIG_REGION_INDEX
        info.offset = info.index << REGION_SHIFT
        info.size = len(self.board.config) if config else self.board.bars.get(info.index, (0, 0))[1]
        info.flags = 0
        if info.size:  # config space is read and written; a BAR also mapped
            info.flags = vfio.VFIO_REGION_INFO_FLAG_READ | vfio.VFIO_REGION_INFO_FLAG_WRITE | \
                (0 if config else vfio.VFIO_REGION_INFO_FLAG_MMAP)
        put_args(arg, info, minsz, what)
        return 0

    def _config(self, count: int, offset: int, what: str) -> int:
        """vfio_config_do_rw's bounds: EFAULT unless [pos, pos + count) is in config space; EINVAL for a region
        other than config space (the mock does not read or write BARs through the descriptor)."""
        region, at = self._region(offset, what)
        if region != vfio.VFIO_PCI_CONFIG_REGION_INDEX:
            raise fail(errno.EINVAL, f"{what} of region {region}: the mock reads and writes config space only")
        if count and (at >= len(self.board.config) or at + count > len(self.board.config)):
            raise fail(errno.EFAULT, f"{what} of {count} bytes at config offset {at:#x}")
        return at

    def pread(self, length: int, offset: int) -> bytes:
        return config_read(self.board, length, self._config(length, offset, "VFIO read"))

    def pwrite(self, data: bytes, offset: int) -> int:
        return config_write(self.board, data, self._config(len(data), offset, "VFIO write"))

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        region, at = self._region(offset, "VFIO mmap")
        return SysfsFile(self.board, region).mmap(length, at, prot, flags, address)

    def mmio(self, length: int, offset: int, width: int):
        region, at = self._region(offset, "VFIO mmap")
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
