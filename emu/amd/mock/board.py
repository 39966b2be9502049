"""A mock Navi31 board for the rescue tools: the GPU's PCI function (config space with sizable BARs), BAR5's SMUIO
ROM controller and PSP boot mailbox over a GD25LQ16E flash model, and enough VRAM in BAR0 to stage firmware
transfers. One board answers both ways a tool reaches a real one: PCIe requests from the mock USB bridge
(MOCKUSB+AMD) and the sysfs files of a native PCI function in a MockHAL (MOCKPCI+AMD).

The flash persists in the file MOCKFLASH_IMAGE names, so separate runs of a tool see one board; MOCKFLASH_FAULT
injects faults into the flash (see spiflash.py) and MOCKFLASH_GATED=1 boots the firmware, which takes the ROM_SW
engine. A power loss ends the run the way a pulled cable does: over USB the device disconnects; natively every
read returns all ones, as a function that fell off the bus does.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from usergpu.drivers.hal import MockHAL
from usergpu.emu.amd.mock.pcie import UR, CompletionError, Unplugged
from usergpu.emu.amd.mock.psp_boot import PSPBoot
from usergpu.emu.amd.mock.smuio_rom import SMUIORom
from usergpu.emu.amd.mock.spiflash import PowerLoss, SPIFlash
from usergpu.hostmem import CallbackMMIO

VENDOR, DEVICE, REVISION, CLASS = 0x1002, 0x744C, 0xC8, 0x030000  # Radeon RX 7900 XTX
BUS, DEVFN = 1, 0  # where the function sits behind the bridge
STAGING = 1 << 20  # bytes of VRAM the model backs (the rest of BAR0 reads as zero)
# BAR n: (bus address, size, 64-bit, prefetchable); BAR2 holds doorbells, BAR5 the registers
BARS = {0: (0x10_0000_0000, 256 << 20, True, True), 2: (0x10_1000_0000, 2 << 20, True, True),
        5: (0xFCC0_0000, 1 << 20, False, False)}
SYSFS_ADDRESS = "0000:0b:00.0"


def default_image_path() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "usergpu" / "mockflash-navi31.bin"


class Navi31Board:
    """The function's config space and BARs (a pcie.Target), over the models of its flash, ROM controller and
    PSP mailbox."""

    def __init__(self, image: str | os.PathLike | None = None, fault: str | None = None, gated: bool | None = None):
        env = os.environ
        path = Path(image or env.get("MOCKFLASH_IMAGE") or default_image_path())
        path.parent.mkdir(parents=True, exist_ok=True)
        self.flash = SPIFlash(path, env.get("MOCKFLASH_FAULT", "") if fault is None else fault)
        self.vram = bytearray(STAGING)
        self.rom = SMUIORom(self.flash, env.get("MOCKFLASH_GATED") == "1" if gated is None else gated)
        self.psp = PSPBoot(self.flash, self.vram)
        self.config = bytearray(4096)
        struct.pack_into("<HHHHI", self.config, 0, VENDOR, DEVICE, 0x0007, 0x0010, CLASS << 8 | REVISION)
        struct.pack_into("<HH", self.config, 0x2C, VENDOR, 0x0E3B)  # subsystem
        for n, (address, _, is64, prefetch) in BARS.items():
            struct.pack_into("<I", self.config, 0x10 + 4 * n, address & 0xFFFFFFF0 | is64 << 2 | prefetch << 3)
            if is64:
                struct.pack_into("<I", self.config, 0x14 + 4 * n, address >> 32)
        self.dead = False

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
            size = BARS[n][1]
            if high:
                new &= ~((size - 1) >> 32) & 0xFFFFFFFF
            else:
                new = new & ~(size - 1) & 0xFFFFFFF0 | old & 0xF
        elif 0x10 <= offset & 0xFFC < 0x28 or offset & 0xFFC in (0, 8):
            new = old  # unimplemented BARs and the read-only ids
        struct.pack_into("<I", self.config, offset & 0xFFC, new)

    def mem_read(self, address: int) -> int:
        target, offset = self._decode(address)
        try:
            if target == 5:
                value = self.rom.read(offset)
                return (self.psp.read(offset) if value is None else value) or 0
            return int.from_bytes(self.vram[offset : offset + 4], "little") if offset < STAGING else 0
        except PowerLoss:
            self.dead = True
            raise Unplugged("power lost while the flash was busy") from None

    def mem_write(self, address: int, value: int, byte_enable: int = 0xF) -> None:
        target, offset = self._decode(address)
        try:
            if target == 5:
                if not self.rom.write(offset, value):
                    self.psp.write(offset, value)
            elif offset < STAGING:
                self.vram[offset : offset + 4] = value.to_bytes(4, "little")
        except PowerLoss:
            self.dead = True
            raise Unplugged("power lost while the flash was busy") from None

    # ---- helpers ----------------------------------------------------------------------------------------------------
    def _alive(self) -> None:
        if self.dead:
            raise Unplugged("the board lost power")

    def _bar_register(self, offset: int) -> tuple[int | None, bool]:
        for n, (_, _, is64, _) in BARS.items():
            if offset == 0x10 + 4 * n:
                return n, False
            if is64 and offset == 0x14 + 4 * n:
                return n, True
        return None, False

    def bar_address(self, n: int) -> int:
        low = struct.unpack_from("<I", self.config, 0x10 + 4 * n)[0]
        high = struct.unpack_from("<I", self.config, 0x14 + 4 * n)[0] if BARS[n][2] else 0
        return (high << 32 | low) & ~0xF

    def _decode(self, address: int) -> tuple[int, int]:
        """(BAR, offset in it) of a memory request; UR when no BAR decodes it (or memory decoding is off)."""
        self._alive()
        if self.config[4] & 2:
            for n, (_, size, _, _) in BARS.items():
                base = self.bar_address(n)
                if base <= address < base + size:
                    return n, address - base
        raise CompletionError(UR, f"no BAR decodes address {address:#x}")

    def close(self) -> None:
        self.flash.close()


class SysfsFile:
    """A device file of the native mock function: `config` (pread/pwrite) or `resource<N>` (an MMIO view)."""

    def __init__(self, board: Navi31Board, bar: int | None = None):
        self.board, self.bar = board, bar

    def pread(self, length: int, offset: int) -> bytes:
        out = b""
        for at in range(offset & ~3, offset + length, 4):
            try:
                word = self.board.config_read(BUS, DEVFN, at)
            except Unplugged:
                word = 0xFFFFFFFF
            out += word.to_bytes(4, "little")
        return out[offset & 3 : (offset & 3) + length]

    def pwrite(self, data: bytes, offset: int) -> int:
        start = offset & ~3
        for at in range(start, offset + len(data), 4):
            lanes = [i for i in range(4) if offset <= at + i < offset + len(data)]
            value = sum(data[at + i - offset] << (8 * i) for i in lanes)
            try:
                self.board.config_write(BUS, DEVFN, at, value, sum(1 << i for i in lanes))
            except Unplugged:
                pass
        return len(data)

    def mmio(self, length: int, offset: int, width: int) -> CallbackMMIO:
        base = self.board.bar_address(self.bar) + offset

        def read(i: int) -> int:
            try:
                return self.board.mem_read(base + 4 * i)
            except (Unplugged, CompletionError):
                return 0xFFFFFFFF  # a read nothing answers: all ones

        def write(i: int, value: int) -> None:
            try:
                self.board.mem_write(base + 4 * i, value)
            except (Unplugged, CompletionError):
                pass  # a posted write to nothing is lost

        return CallbackMMIO(read, write)

    def ioctl(self, request: int, arg) -> None:
        raise OSError(25, "a sysfs PCI file has no ioctls")

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int:
        raise OSError(22, "the mock maps BARs as MMIO views only")


def install_pci(hal: MockHAL, board: Navi31Board, address: str = SYSFS_ADDRESS) -> None:
    """The board as a native PCI function in the HAL's sysfs: ids, class, `resource`, `config`, `resource<N>`."""
    d = hal.root / f"sys/bus/pci/devices/{address}"
    d.mkdir(parents=True, exist_ok=True)
    for name, value in (("vendor", VENDOR), ("device", DEVICE), ("class", CLASS)):
        (d / name).write_text(f"{value:#06x}\n")
    lines = []
    for n in range(6):
        if n in BARS:
            base, size, is64, prefetch = BARS[n]
            flags = 0x200 | is64 * 0x100000 | prefetch * 0x2000
            lines.append(f"{base:#018x} {base + size - 1:#018x} {flags:#018x}")
            hal.install(f"/sys/bus/pci/devices/{address}/resource{n}", lambda n=n: SysfsFile(board, n))
        else:
            lines.append(f"{0:#018x} {0:#018x} {0:#018x}")
    (d / "resource").write_text("\n".join(lines) + "\n")
    hal.install(f"/sys/bus/pci/devices/{address}/config", lambda: SysfsFile(board))
