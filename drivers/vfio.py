"""A PCI function through VFIO (vfio-pci): the container (/dev/vfio/vfio) with the type-1 IOMMU, the function's
IOMMU group (/dev/vfio/<group>) and the device descriptor the group hands out, whose regions are its BARs and
config space (VFIO_DEVICE_GET_REGION_INFO: each region's size and offset in the descriptor). Unlike sysfs, VFIO
maps system memory for the device's DMA (VFIO_IOMMU_MAP_DMA: this process's pages at an IO virtual address)."""

from __future__ import annotations

import ctypes

from usergpu.autogen import vfio
from usergpu.drivers.devices import PCI_DEVICES
from usergpu.drivers.hal import HAL
from usergpu.drivers.pci import BAR, MappedRegisters, PCIDevice, Registers
from usergpu.errors import DeviceNotFound, DriverError


def bound_to_vfio(hal: HAL, address: str) -> bool:
    return hal.readlink_name(f"{PCI_DEVICES}/{address}/driver") == "vfio-pci"


class VFIOPCIDevice(PCIDevice):
    can_dma = True

    def __init__(self, hal: HAL, address: str):
        self.hal, self.name = hal, address
        group = hal.readlink_name(f"{PCI_DEVICES}/{address}/iommu_group")
        if group is None or not bound_to_vfio(hal, address):
            raise DeviceNotFound(f"{address} is not bound to vfio-pci (or has no IOMMU group): `echo {address} | sudo "
                                 f"tee {PCI_DEVICES}/{address}/driver/unbind; echo vfio-pci | sudo tee "
                                 f"{PCI_DEVICES}/{address}/driver_override; echo {address} | sudo tee "
                                 "/sys/bus/pci/drivers_probe`")
        self.container = self._open("/dev/vfio/vfio")
        if self._ioctl(self.container, "VFIO_GET_API_VERSION", 0) != vfio.VFIO_API_VERSION:
            raise DriverError("VFIO_GET_API_VERSION", 0, f"the kernel's VFIO API is not {vfio.VFIO_API_VERSION}")
        if not self._ioctl(self.container, "VFIO_CHECK_EXTENSION", vfio.VFIO_TYPE1v2_IOMMU):
            raise DriverError("VFIO_CHECK_EXTENSION", 0, "no type-1 v2 IOMMU (is the IOMMU on: intel_iommu=on?)")
        self.group = self._open(f"/dev/vfio/{group}")
        status = vfio.struct_vfio_group_status(argsz=ctypes.sizeof(vfio.struct_vfio_group_status))
        self._ioctl(self.group, "VFIO_GROUP_GET_STATUS", status)
        if not status.flags & vfio.VFIO_GROUP_FLAGS_VIABLE:
            raise DriverError("VFIO_GROUP_GET_STATUS", 0, f"IOMMU group {group} is not viable: bind every function in "
                                                          f"{PCI_DEVICES}/{address}/iommu_group/devices to vfio-pci")
        self._ioctl(self.group, "VFIO_GROUP_SET_CONTAINER", ctypes.c_int(self.container))
        self._ioctl(self.container, "VFIO_SET_IOMMU", vfio.VFIO_TYPE1v2_IOMMU)
        self.device = self._ioctl(self.group, "VFIO_GROUP_GET_DEVICE_FD", ctypes.create_string_buffer(address.encode()))
        self.regions = {i: self._region(i) for i in (*range(6), vfio.VFIO_PCI_CONFIG_REGION_INDEX)}

    def _open(self, path: str) -> int:
        try:
            return self.hal.open(path)
        except OSError as e:
            raise DriverError(f"open {path}", e.errno or 0, "run as root or give your user the VFIO group's device "
                                                           "file") from None

    def _ioctl(self, fd: int, name: str, arg) -> int:
        try:
            return self.hal.ioctl(fd, getattr(vfio, name), arg)
        except OSError as e:
            raise DriverError(name, e.errno or 0, f"{self.name}: {e.strerror or ''}") from None

    def _region(self, index: int) -> vfio.struct_vfio_region_info:
        info = vfio.struct_vfio_region_info(argsz=ctypes.sizeof(vfio.struct_vfio_region_info), index=index)
        self._ioctl(self.device, "VFIO_DEVICE_GET_REGION_INFO", info)
        return info

    # ---- PCIDevice --------------------------------------------------------------------------------------------------
    def config_read(self, offset: int, size: int = 4) -> int:
        at = self.regions[vfio.VFIO_PCI_CONFIG_REGION_INDEX].offset + offset
        return int.from_bytes(self.hal.pread(self.device, size, at), "little")

    def config_write(self, offset: int, value: int, size: int = 4) -> None:
        self.hal.pwrite(self.device, value.to_bytes(size, "little"), self.regions[vfio.VFIO_PCI_CONFIG_REGION_INDEX]
                        .offset + offset)

    def bar(self, n: int) -> BAR:
        """The BAR's flags from config space, its size from VFIO's region (what the kernel sized)."""
        low = self.config_read(0x10 + 4 * n)
        is64 = (low >> 1) & 3 == 2
        high = self.config_read(0x14 + 4 * n) if is64 else 0
        return BAR(n, (high << 32 | low) & ~0xF, self.regions[n].size, is64, bool(low & 8), bool(low & 1))

    def bar_file(self, n: int) -> tuple[int, int]:
        region = self.regions[n]
        if not region.size or not region.flags & vfio.VFIO_REGION_INFO_FLAG_MMAP:
            raise DeviceNotFound(f"{self.name}: VFIO region {n} ({region.size:#x} bytes) cannot be mapped")
        return self.device, region.offset

    def map_bar(self, n: int) -> Registers:
        fd, offset = self.bar_file(n)
        try:
            return MappedRegisters(self.hal.mmio(fd, self.regions[n].size, offset), memory=self.bar(n).prefetchable)
        except OSError as e:
            raise DriverError(f"mmap VFIO region {n} of {self.name}", e.errno or 0, e.strerror or "") from None

    # ---- DMA --------------------------------------------------------------------------------------------------------
    def dma_map(self, vaddr: int, iova: int, size: int) -> None:
        """This process's pages at vaddr, readable and writable by the device at IO virtual address iova."""
        m = vfio.struct_vfio_iommu_type1_dma_map(argsz=ctypes.sizeof(vfio.struct_vfio_iommu_type1_dma_map),
                                                 flags=vfio.VFIO_DMA_MAP_FLAG_READ | vfio.VFIO_DMA_MAP_FLAG_WRITE,
                                                 vaddr=vaddr, iova=iova, size=size)
        self._ioctl(self.container, "VFIO_IOMMU_MAP_DMA", m)

    def dma_unmap(self, iova: int, size: int) -> None:
        m = vfio.struct_vfio_iommu_type1_dma_unmap(argsz=ctypes.sizeof(vfio.struct_vfio_iommu_type1_dma_unmap),
                                                   iova=iova, size=size)
        self._ioctl(self.container, "VFIO_IOMMU_UNMAP_DMA", m)

