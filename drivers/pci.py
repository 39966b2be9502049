"""PCI functions: config space, BARs and register access, whatever carries them. `SysfsPCIDevice` is a function
of this machine (sysfs `config` and `resource<N>` through the HAL); the USB bridge (drivers/amd/usb.py) gives the
same interface over TLPs, so code above it (a flash tool on BAR5) does not care which it has."""

from __future__ import annotations

import errno
import struct
from dataclasses import dataclass

from usergpu.drivers.devices import PCI_DEVICES
from usergpu.drivers.hal import HAL, MMIO
from usergpu.errors import DeviceNotFound, DriverError

BAR0 = 0x10  # config offset of the first BAR register
IORESOURCE_IO, IORESOURCE_MEM, IORESOURCE_PREFETCH, IORESOURCE_MEM_64 = 0x100, 0x200, 0x2000, 0x100000


@dataclass(frozen=True)
class BAR:
    index: int
    address: int  # bus address (what a TLP carries)
    size: int
    is64: bool
    prefetchable: bool
    io: bool = False


class Registers:
    """A BAR's registers: 32-bit reads and writes at byte offsets, and blocks of them."""

    def read32(self, offset: int) -> int:
        raise NotImplementedError

    def write32(self, offset: int, value: int) -> None:
        raise NotImplementedError

    def read(self, offset: int, size: int) -> bytes:
        """size bytes (a multiple of 4) from consecutive registers."""
        return struct.pack(f"<{size // 4}I", *(self.read32(offset + i) for i in range(0, size, 4)))

    def write(self, offset: int, data: bytes) -> None:
        for i, value in enumerate(struct.unpack(f"<{len(data) // 4}I", data)):
            self.write32(offset + 4 * i, value)


class MappedRegisters(Registers):
    """A BAR mapped into this process (or a mock's MMIO view of it). A prefetchable BAR is memory (VRAM): blocks of
    it copy at once; registers are read and written a dword at a time."""

    def __init__(self, mmio: MMIO, memory: bool = False):
        self.mmio = mmio
        self.memory = getattr(mmio, "bytes", None) if memory else None

    def read32(self, offset: int) -> int:
        return self.mmio[offset // 4]

    def write32(self, offset: int, value: int) -> None:
        self.mmio[offset // 4] = value

    def read(self, offset: int, size: int) -> bytes:
        if self.memory is None:
            return super().read(offset, size)
        return bytes(self.memory[offset : offset + size])

    def write(self, offset: int, data: bytes) -> None:
        if self.memory is None:
            super().write(offset, data)
        else:
            self.memory[offset : offset + len(data)] = data


class PCIDevice:
    """One PCI function. Subclasses carry config accesses and map BARs; those that reach an IOMMU (VFIO) also map
    system memory for the function's DMA (can_dma)."""

    name = ""
    can_dma = False

    def config_read(self, offset: int, size: int = 4) -> int:
        raise NotImplementedError

    def config_write(self, offset: int, value: int, size: int = 4) -> None:
        raise NotImplementedError

    def bar(self, n: int) -> BAR:
        raise NotImplementedError

    def map_bar(self, n: int) -> Registers:
        raise NotImplementedError

    def bar_file(self, n: int) -> tuple[int, int]:
        """(descriptor, offset) through which any part of BAR n can be mapped (mmap at offset + the part's)."""
        raise NotImplementedError

    def mmio(self, n: int, width: int = 4) -> MMIO:
        """BAR n as an MMIO view of width-byte words (doorbells: 8)."""
        fd, offset = self.bar_file(n)
        return self.hal.mmio(fd, self.bar(n).size, offset, width)

    def share(self, n: int, offset: int, size: int) -> None:
        """A part of memory BAR n that the CPU reaches through a mapping of bar_file(n) from now on. A local BAR
        is the memory itself: only a function that keeps a copy of it (a remote one) needs to know."""

    def unshare(self, n: int, offset: int) -> None:
        """The part shared at offset is no longer reached through the mapping."""

    def sync_for_cpu(self, n: int, offset: int | None = None, size: int | None = None) -> None:
        """Make what the GPU wrote to the shared parts of BAR n (or offset..offset+size) visible to the CPU's
        mapping (the DMA API's sync_for_cpu): nothing to do where the mapping is the BAR."""

    def close(self) -> None:
        """Let go of what the function object holds beyond its descriptors (a remote one's copy of VRAM)."""

    def dma_map(self, vaddr: int, iova: int, size: int) -> None:
        raise DriverError("DMA map", 0, f"{self.name}: no IOMMU to map system memory through (open it with VFIO)")

    def dma_unmap(self, iova: int, size: int) -> None:
        raise DriverError("DMA unmap", 0, f"{self.name}: no IOMMU to map system memory through (open it with VFIO)")

    @property
    def vendor_id(self) -> int:
        return self.config_read(0, 2)

    @property
    def device_id(self) -> int:
        return self.config_read(2, 2)

    def bar_from_config(self, n: int) -> BAR:
        """A BAR from its registers, sized the standard way (all ones written, the size mask read back, the value
        restored). Memory decoding is off meanwhile, as the PCI spec asks."""
        low = self.config_read(BAR0 + 4 * n)
        io, is64, prefetchable = bool(low & 1), (low >> 1) & 3 == 2, bool(low & 8)
        regs = [BAR0 + 4 * n] + ([BAR0 + 4 * n + 4] if is64 else [])
        command = self.config_read(4, 2)
        self.config_write(4, command & ~3, 2)
        saved = [self.config_read(r) for r in regs]
        for r in regs:
            self.config_write(r, 0xFFFFFFFF)
        mask = sum(self.config_read(r) << (32 * i) for i, r in enumerate(regs))
        for r, v in zip(regs, saved, strict=True):
            self.config_write(r, v)
        self.config_write(4, command, 2)
        bits = 32 * len(regs)
        mask &= ~(3 if io else 0xF)
        size = ((~mask) & ((1 << bits) - 1)) + 1 if mask else 0
        address = sum(v << (32 * i) for i, v in enumerate(saved)) & ~(3 if io else 0xF)
        return BAR(n, address, size, is64, prefetchable, io)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


def access_hint(path: str, address: str) -> str:
    return (f"run as root or `sudo chmod a+rw {path}`; if a kernel driver holds the function, unbind it first: "
            f"`echo {address} | sudo tee {PCI_DEVICES}/{address}/driver/unbind`")


class SysfsPCIDevice(PCIDevice):
    """A function of this machine through sysfs: `config` for config space, `resource<N>` mapped for BAR N."""

    def __init__(self, hal: HAL, address: str):
        self.hal, self.name = hal, address
        self.path = f"{PCI_DEVICES}/{address}"
        if not hal.exists(self.path):
            raise DeviceNotFound(f"PCI function {address}: no {self.path}")
        self._config = self.open_file("config")

    def open_file(self, name: str) -> int:
        """A file of the function's sysfs folder, opened (config, resource<N>): DriverError with the fix for EACCES."""
        path = f"{self.path}/{name}"
        try:
            return self.hal.open(path)
        except OSError as e:
            why = access_hint(path, self.name) if e.errno in (errno.EACCES, errno.EPERM) else ""
            raise DriverError(f"open {path}", e.errno or 0, why) from None

    def config_read(self, offset: int, size: int = 4) -> int:
        data = self.hal.pread(self._config, size, offset)
        if len(data) < size:  # sysfs gives an unprivileged reader the first 64 bytes only
            raise DriverError(f"read {self.path}/config at {offset:#x}", errno.EACCES, access_hint(
                f"{self.path}/config", self.name))
        return int.from_bytes(data, "little")

    def config_write(self, offset: int, value: int, size: int = 4) -> None:
        self.hal.pwrite(self._config, value.to_bytes(size, "little"), offset)

    def bar(self, n: int) -> BAR:
        """From sysfs `resource` (start, end, flags per line): the kernel's view, no config-space sizing."""
        lines = (self.hal.read_text(f"{self.path}/resource") or "").splitlines()
        if n >= len(lines):
            raise DeviceNotFound(f"{self.name}: no BAR {n} in {self.path}/resource")
        start, end, flags = (int(x, 16) for x in lines[n].split()[:3])
        return BAR(n, start, end - start + 1 if end else 0, bool(flags & IORESOURCE_MEM_64),
                   bool(flags & IORESOURCE_PREFETCH), bool(flags & IORESOURCE_IO))

    def bar_file(self, n: int) -> tuple[int, int]:
        return self.open_file(f"resource{n}"), 0

    def map_bar(self, n: int) -> Registers:
        bar = self.bar(n)
        if not bar.size or bar.io:
            raise DeviceNotFound(f"{self.name}: BAR {n} is {'an I/O BAR' if bar.io else 'not implemented'}")
        fd = self.open_file(f"resource{n}")
        try:
            return MappedRegisters(self.hal.mmio(fd, bar.size, 0), memory=bar.prefetchable)
        except OSError as e:
            raise DriverError(f"mmap {self.path}/resource{n}", e.errno or 0, access_hint(
                f"{self.path}/resource{n}", self.name)) from None


def pci_devices(hal: HAL | None = None, vendor: int | None = None, device: int | None = None) -> list[SysfsPCIDevice]:
    """The functions of this machine with that vendor (and device) id, in address order."""
    hal = hal or HAL()
    out = []
    for address in sorted(hal.listdir(PCI_DEVICES)):
        ids = [int(hal.read_text(f"{PCI_DEVICES}/{address}/{f}") or "0", 16) for f in ("vendor", "device")]
        if (vendor is None or ids[0] == vendor) and (device is None or ids[1] == device):
            out.append(SysfsPCIDevice(hal, address))
    return out
