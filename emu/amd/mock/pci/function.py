"""A mock PCI function: config space with sizable BARs, memory requests decoded to (BAR, offset), and the sysfs
files through which a MockHAL presents it as a native function (config, resource, resource<N>). Subclasses (the
flash board, the GPU) say what their BARs hold by answering bar_read/bar_write. A function that lost power
answers nothing: Unplugged to the USB bridge, all ones to native reads."""

from __future__ import annotations

import errno
import struct

from usergpu.emu.amd.mock.pci.pcie import UR, CompletionError, Unplugged
from usergpu.emu.mock.hal import MockHAL
from usergpu.emu.mock.uaccess import fail
from usergpu.hostmem import MAP_SHARED, MMIO, PAGE, CallbackMMIO, os_mmap

BUS, DEVFN = 1, 0  # where the function sits behind a bridge


class PCIFunction:
    """bars: n -> (bus address, size, 64-bit, prefetchable); ids: (vendor, device, class << 8 | revision,
    subsystem)."""

    def __init__(self, bars: dict[int, tuple[int, int, bool, bool]], ids: tuple[int, int, int, int]):
        self.bars = bars
        self.config = bytearray(4096)
        vendor, device, class_rev, subsystem = ids
        struct.pack_into("<HHHHI", self.config, 0, vendor, device, 0x0007, 0x0010, class_rev)
        struct.pack_into("<HH", self.config, 0x2C, vendor, subsystem)
        for n, (address, _, is64, prefetch) in bars.items():
            struct.pack_into("<I", self.config, 0x10 + 4 * n, address & 0xFFFFFFF0 | is64 << 2 | prefetch << 3)
            if is64:
                struct.pack_into("<I", self.config, 0x14 + 4 * n, address >> 32)
        self.dead = False
        self._windows: list[tuple[int, int, int]] | None = None  # (base, size, BAR) decoded; None after a config write

    # ---- what a subclass answers ------------------------------------------------------------------------------------
    def bar_memory(self, bar: int) -> int | None:
        """The CPU address of memory that backs a BAR whole (a native mapping maps it), or None: registers."""
        return None

    def bar_fd(self, bar: int) -> int | None:
        """The shared memory behind a BAR that is plain memory (parts of it can be mapped), or None."""
        return None

    def bar_map(self, bar: int, length: int, offset: int, prot: int, flags: int, address: int) -> int | None:
        """A mapping of part of a BAR that is not plain memory, for a driver that maps it into its own memory (the
        process's address), or None where the function offers none."""
        return None

    def bar_read(self, bar: int, offset: int) -> int:
        return 0

    def bar_write(self, bar: int, offset: int, value: int) -> None:
        pass

    # ---- pcie.Target ------------------------------------------------------------------------------------------------
    def config_read(self, bus: int, devfn: int, offset: int) -> int:
        self._alive()
        if (bus, devfn) != (BUS, DEVFN):
            raise CompletionError(UR, f"no function at {bus:02x}:{devfn >> 3:02x}.{devfn & 7}")
        return struct.unpack_from("<I", self.config, offset & 0xFFC)[0]

    def config_write(self, bus: int, devfn: int, offset: int, value: int, byte_enable: int = 0xF) -> None:
        old = self.config_read(bus, devfn, offset)
        mask = sum(0xFF << (8 * i) for i in range(4) if byte_enable >> i & 1)
        new = old & ~mask | value & mask
        n, high = self._bar_register(offset & 0xFFC)
        if n is not None:  # a BAR keeps its type bits and only the address bits its size allows
            size = self.bars[n][1]
            if high:
                new &= ~((size - 1) >> 32) & 0xFFFFFFFF
            else:
                new = new & ~(size - 1) & 0xFFFFFFF0 | old & 0xF
        elif 0x10 <= offset & 0xFFC < 0x28 or offset & 0xFFC in (0, 8):
            new = old  # unimplemented BARs and the read-only ids
        struct.pack_into("<I", self.config, offset & 0xFFC, new)
        self._windows = None

    def mem_read(self, address: int) -> int:
        return self.bar_read(*self._decode(address))

    def mem_write(self, address: int, value: int, byte_enable: int = 0xF) -> None:
        self.bar_write(*self._decode(address), value)

    # ---- helpers ----------------------------------------------------------------------------------------------------
    def _alive(self) -> None:
        if self.dead:
            raise Unplugged("the board lost power")

    def _bar_register(self, offset: int) -> tuple[int | None, bool]:
        for n, (_, _, is64, _) in self.bars.items():
            if offset == 0x10 + 4 * n:
                return n, False
            if is64 and offset == 0x14 + 4 * n:
                return n, True
        return None, False

    def bar_address(self, n: int) -> int:
        low = struct.unpack_from("<I", self.config, 0x10 + 4 * n)[0]
        high = struct.unpack_from("<I", self.config, 0x14 + 4 * n)[0] if self.bars[n][2] else 0
        return (high << 32 | low) & ~0xF

    def _decode(self, address: int) -> tuple[int, int]:
        """(BAR, offset in it) of a memory request; UR when no BAR decodes it (or memory decoding is off)."""
        self._alive()
        if self._windows is None:  # worked out again only when config space changes (a BAR moves, decoding off)
            self._windows = [(self.bar_address(n), size, n) for n, (_, size, _, _) in self.bars.items()
                             ] if self.config[4] & 2 else []
        for base, size, n in self._windows:
            if base <= address < base + size:
                return n, address - base
        raise CompletionError(UR, f"no BAR decodes address {address:#x}")

def config_read(board: PCIFunction, length: int, offset: int) -> bytes:
    """Bytes of config space, dword by dword; a function that lost power reads all ones. The caller bounds the
    range."""
    out = b""
    for at in range(offset & ~3, offset + length, 4):
        try:
            word = board.config_read(BUS, DEVFN, at)
        except Unplugged:
            word = 0xFFFFFFFF
        out += word.to_bytes(4, "little")
    return out[offset & 3 : (offset & 3) + length]


def config_write(board: PCIFunction, data: bytes, offset: int) -> int:
    """Bytes into config space as dword writes with byte enables; lost on a function that lost power."""
    for at in range(offset & ~3, offset + len(data), 4):
        lanes = [i for i in range(4) if offset <= at + i < offset + len(data)]
        value = sum(data[at + i - offset] << (8 * i) for i in lanes)
        try:
            board.config_write(BUS, DEVFN, at, value, sum(1 << i for i in lanes))
        except Unplugged:
            pass
    return len(data)


class SysfsFile:
    """A device file of the native mock function: `config` (pread/pwrite, as a sysfs binary attribute of the
    config space's size) or `resource<N>` (mmap / an MMIO view of the BAR, which pci_mmap_fits bounds; a memory
    BAR's file has no read or write)."""

    def __init__(self, board: PCIFunction, bar: int | None = None):
        self.board, self.bar = board, bar

    def _size(self) -> int:
        """The attribute's size: the config space's, or the BAR's."""
        return len(self.board.config) if self.bar is None else self.board.bars.get(self.bar, (0, 0))[1]

    def pread(self, length: int, offset: int) -> bytes:
        """sysfs_kf_bin_read: at most a page a call (kernfs), nothing at or past the end, EIO for a resource file
        (no read)."""
        size = self._size()
        length = min(length, PAGE, max(size - offset, 0))
        if length == 0:
            return b""
        if self.bar is not None:
            raise fail(errno.EIO, f"resource{self.bar} has no read (a memory BAR): map it")
        return config_read(self.board, length, offset)

    def pwrite(self, data: bytes, offset: int) -> int:
        """sysfs_kf_bin_write: EFBIG at or past the end, at most a page a call and up to the end, EIO for a
        resource file (no write)."""
        size = self._size()
        if offset >= size:
            raise fail(errno.EFBIG, f"write at {offset:#x}, past the file's {size:#x} bytes")
        data = data[: min(PAGE, size - offset)]
        if not data:
            return 0
        if self.bar is not None:
            raise fail(errno.EIO, f"resource{self.bar} has no write (a memory BAR): map it")
        return config_write(self.board, data, offset)

    def _fits(self, length: int, offset: int) -> int:
        """pci_mmap_fits: the BAR's size, if [offset, offset + length) lies in it; EINVAL otherwise."""
        size = self.board.bars.get(self.bar, (0, 0))[1] if self.bar is not None else 0
        if not size or offset + length > size:
            raise fail(errno.EINVAL, f"mmap of {length:#x} bytes at {offset:#x}: BAR {self.bar} has {size:#x}")
        return size

    def mmio(self, length: int, offset: int, width: int) -> MMIO:
        self._fits(length, offset)
        memory = self.board.bar_memory(self.bar)
        if memory is not None:  # plain memory (VRAM): mapped as it is
            return MMIO(memory + offset, length, width)
        base = self.board.bar_address(self.bar) + offset

        def read(i: int) -> int:
            try:
                return self.board.mem_read(base + width * i)
            except (Unplugged, CompletionError):
                return 0xFFFFFFFF  # a read nothing answers: all ones

        def write(i: int, value: int) -> None:
            try:
                self.board.mem_write(base + width * i, value)
            except (Unplugged, CompletionError):
                pass  # a posted write to nothing is lost

        return CallbackMMIO(read, write)

    def ioctl(self, request: int, arg: int) -> None:
        raise fail(errno.ENOTTY, "a sysfs PCI file has no ioctls")

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        """A part of a BAR mapped where asked: plain memory (VRAM) as it is, registers as the function maps them for
        a driver in this process (bar_map), if it does."""
        self._fits(length, offset)
        fd = self.board.bar_fd(self.bar)
        if fd is not None:
            return os_mmap(address, length, prot, flags | MAP_SHARED, fd, offset)
        mapped = self.board.bar_map(self.bar, length, offset, prot, flags, address)
        if mapped is None:
            raise fail(errno.EINVAL, f"the mock maps BAR {self.bar}'s registers as MMIO views only")
        return mapped


def install_pci(hal: MockHAL, board: PCIFunction, address: str) -> None:
    """The function as a native PCI function in the HAL's sysfs: ids, class, `enable`, `resource`, `config`,
    `resource<N>`."""
    d = hal.root / f"sys/bus/pci/devices/{address}"
    d.mkdir(parents=True, exist_ok=True)
    ids = struct.unpack_from("<HHI", board.config, 0)
    for name, value in (("vendor", ids[0]), ("device", ids[1]), ("class", ids[2] >> 8)):
        (d / name).write_text(f"{value:#06x}\n")
    (d / "enable").write_text("0\n")  # enable_show: the function's enable count, 0 until a driver enables it
    lines = []
    for n in range(6):
        if n in board.bars:
            base, size, is64, prefetch = board.bars[n]
            flags = 0x200 | is64 * 0x100000 | prefetch * 0x2000
            lines.append(f"{base:#018x} {base + size - 1:#018x} {flags:#018x}")
            hal.install(f"/sys/bus/pci/devices/{address}/resource{n}", lambda n=n: SysfsFile(board, n))
        else:
            lines.append(f"{0:#018x} {0:#018x} {0:#018x}")
    (d / "resource").write_text("\n".join(lines) + "\n")
    hal.install(f"/sys/bus/pci/devices/{address}/config", lambda: SysfsFile(board))
