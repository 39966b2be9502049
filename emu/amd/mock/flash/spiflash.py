"""A model of the GigaDevice GD25LQ16E: the 2 MiB (16 Mbit) 1.8 V SPI NOR flash that holds a Radeon RX 7900
(Navi31) board's firmware image, as the mock GPU's SPI ROM controller sees it, one chip-select assertion at a time.

Facts from the GigaDevice GD25LQ16E datasheet, with the SFDP layout from JEDEC JESD216 (SFDP rev 1.0, basic flash
parameter table v1.0):

- Identification: RDID 9Fh -> C8 60 15, REMS 90h -> C8 14 (14 C8 when address bit 0 is set), RES ABh -> 14, which
  also ends deep power-down (B9h). RDSFDP 5Ah: the SFDP header, one parameter header and the 9-dword basic table.
- Array: 256-byte pages, 4 KiB sectors, 32/64 KiB blocks; 3-byte addresses (A23..A21 are ignored), reads wrap at the
  end of the array. READ 03h, FAST READ 0Bh (one dummy byte). Page program 02h only clears bits, and bytes past the
  end of the page wrap to its start (of more than 256, the last 256 count). Erase 20h/52h/D8h/60h/C7h.
- Status registers: SR1 = BUSY, WEL, BP0..BP4, SRP0; SR2 = SRP1, QE, S10 (read-only, 0 here), LB1..LB3 (one-time
  programmable), CMP, SUS; SR3 = DRV0/DRV1 (bits 5, 6: output drive strength). WRSR 01h (SR1, or SR1 then SR2),
  31h (SR2), 11h (SR3). A write after WREN (06h) is non-volatile and takes tW; one after 50h is volatile: it takes
  effect at once and is gone at the next power-up.
- Write protection by BP4..BP0 and CMP (the datasheet's table for the 16 Mbit part): BP2..BP0 pick the size, BP3
  chooses the bottom instead of the top, BP4 switches from 64 KiB blocks to 4 KiB sectors (at most 32 KiB), BP2 = BP1
  = 1 protects everything, CMP = 1 protects the complement. WP# is taken as high (not asserted), so SRP0/SRP1 are
  stored but lock nothing.

What is left out: the dual/quad I/O reads and quad page program (the Navi31 SPI ROM controller shifts one bit at a
time; the SFDP table says so too), suspend/resume, the security registers and software reset: their opcodes are
ignored, as the chip ignores an opcode it does not know.

A transfer is the whole bus transaction, so what the chip drives is aligned to the bytes clocked, not to tx: a read
command's data starts right after its opcode, address and dummy bytes; tx bytes past those shift data out unseen, and
if tx stops short, the rest of the header is clocked during rx (the controller holds MOSI low, so missing address bytes
are zero) while the chip's output is high-impedance (reads as FFh). Writes take their data from tx only.

The array is the file at `path`, mapped shared, so each program or erase is in the file at once and any other
SPIFlash on that path (another process, a later power-up) sees it. The non-volatile status bits live in `path.sr`.
Fault injection (MOCKFLASH_FAULT) is documented at `parse_faults`.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import re
import struct
import time
from dataclasses import dataclass, field

import numpy as np

from usergpu.errors import Error

SIZE = 2 << 20
PAGE_SIZE = 256
SECTOR_SIZE = 4 << 10
BLOCK32_SIZE = 32 << 10
BLOCK64_SIZE = 64 << 10
SECTORS = SIZE // SECTOR_SIZE

JEDEC_ID = bytes((0xC8, 0x60, 0x15))  # GigaDevice, GD25LQ memory type, 16 Mbit
MANUFACTURER_ID, DEVICE_ID = 0xC8, 0x14  # as REMS and RES report them
IMAGE_MAGIC = bytes((0xAA, 0x55, 0xAA, 0x55))

# opcodes
RDID, REMS, RES, DP = 0x9F, 0x90, 0xAB, 0xB9
RDSR1, RDSR2, RDSR3 = 0x05, 0x35, 0x15
WREN, WRDI, VWREN = 0x06, 0x04, 0x50
WRSR, WRSR2, WRSR3 = 0x01, 0x31, 0x11
READ, FAST_READ, RDSFDP = 0x03, 0x0B, 0x5A
PP, SE, BE32, BE64, CE, CE_ALT = 0x02, 0x20, 0x52, 0xD8, 0x60, 0xC7

# status register bits
SR1_BUSY, SR1_WEL = 0x01, 0x02
SR1_BP3, SR1_BP4 = 0x20, 0x40  # BP3: protect from the bottom; BP4: 4 KiB sectors instead of 64 KiB blocks
SR2_LB, SR2_CMP = 0x38, 0x40
WRITABLE = (0xFC, 0x7B, 0x60)  # SR1: BP0..BP4, SRP0; SR2: SRP1, QE, LB1..LB3, CMP; SR3: DRV0, DRV1
OTP = (0x00, SR2_LB, 0x00)  # bits a write can set but never clear

# BUSY times, named after the datasheet's AC characteristics: status-register write cycle tW, page program tPP,
# sector erase tSE, block erase tBE1 (32 KiB) and tBE2 (64 KiB), chip erase tCE. The real part's typical times are
# a fraction of a millisecond for tPP, milliseconds for tW, tens of milliseconds for tSE, tenths of a second for a
# block and seconds for the chip; these are scaled down, the long ones the most, so that erasing and programming the
# whole chip sector by sector costs a test under 3 s of BUSY (512 x tSE + 8192 x tPP).
T_W = 1e-3
T_PP = 0.2e-3
T_SE = 2e-3
T_BE32 = 5e-3
T_BE64 = 8e-3
T_CE = 50e-3


class PowerLoss(Exception):
    """The injected power cut happened: the board lost power in the middle of a program or erase. Deliberately not a
    usergpu Error: nothing went wrong in the model, the mock board is meant to catch this and power down."""


@dataclass(frozen=True)
class Faults:
    """What MOCKFLASH_FAULT asks for (see `parse_faults`)."""

    power_loss: frozenset[tuple[str, int]] = field(default_factory=frozenset)  # ("erase"|"program", sector)
    stuck_busy: bool = False
    jedec: bytes = JEDEC_ID
    cmp: bool = False


def parse_faults(text: str) -> Faults:
    """MOCKFLASH_FAULT's text: comma-separated items, any of
    `power-loss:erase:sector=N` (the first erase covering 4 KiB sector N is cut short: the sectors it reached before
    N are erased, sector N's first half is FFh and its second half as it was, the rest untouched; then PowerLoss),
    `power-loss:program:sector=N` (the first page program inside sector N programs only the first half of the bytes
    sent; then PowerLoss), `stuck-busy` (BUSY reads 1 forever, every other command is ignored), `jedec=XXXXXX`
    (RDID answers those three bytes) and `cmp` (SR2.CMP is 1 at power-up, as if a tool left it set)."""
    power_loss, stuck, jedec, cmp = set(), False, JEDEC_ID, False
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if m := re.fullmatch(r"power-loss:(erase|program):sector=(\d+|0x[0-9a-fA-F]+)", item):
            sector = int(m[2], 0)
            if sector >= SECTORS:
                raise Error(f"MOCKFLASH_FAULT item {item!r}: sector {sector} is past the last sector, {SECTORS - 1}")
            power_loss.add((m[1], sector))
        elif m := re.fullmatch(r"jedec=([0-9a-fA-F]{6})", item):
            jedec = bytes.fromhex(m[1])
        elif item == "stuck-busy":
            stuck = True
        elif item == "cmp":
            cmp = True
        else:
            raise Error(f"MOCKFLASH_FAULT item {item!r} is not one of power-loss:erase:sector=N, "
                        "power-loss:program:sector=N, stuck-busy, jedec=XXXXXX, cmp")
    return Faults(frozenset(power_loss), stuck, jedec, cmp)


def _sfdp_space() -> bytes:
    """The 256-byte SFDP space: header, one parameter header, the JEDEC basic flash parameter table at 30h."""
    table = 0x30
    space = bytearray(b"\xff" * 256)
    space[0:8] = b"SFDP" + bytes((0x00, 0x01, 0x00, 0xFF))  # rev 1.0, 0 = one parameter header, unused
    space[8:16] = bytes((0x00, 0x00, 0x01, 9)) + table.to_bytes(3, "little") + b"\xff"  # JEDEC table v1.0, 9 dwords
    space[table:table + 36] = struct.pack(
        "<9I",
        0xFF8020E5,  # 4 KiB erase everywhere (20h), writes of >= 64 bytes, non-volatile BP bits, 3-byte addresses only,
        # no DTR and none of the 1-1-2/1-2-2/1-4-4/1-1-4 reads
        SIZE * 8 - 1,  # density: bits - 1
        0, 0,  # 1-4-4, 1-1-4, 1-1-2, 1-2-2 read parameters: none
        0xFFFFFFEE, 0x0000FFFF, 0x0000FFFF,  # no 2-2-2 or 4-4-4 reads
        0x520F200C,  # erase type 1: 2^12 bytes by 20h; type 2: 2^15 bytes by 52h
        0x0000D810)  # erase type 3: 2^16 bytes by D8h; no type 4
    return bytes(space)


SFDP = _sfdp_space()

# opcode -> bytes before the data the chip drives (opcode, address, dummy)
READ_HEADERS = {RDID: 1, RDSR1: 1, RDSR2: 1, RDSR3: 1, REMS: 4, RES: 4, READ: 4, FAST_READ: 5, RDSFDP: 5}
# erase opcode with an address -> (size, BUSY time)
BLOCK_ERASES = {SE: (SECTOR_SIZE, T_SE), BE32: (BLOCK32_SIZE, T_BE32), BE64: (BLOCK64_SIZE, T_BE64)}


def default_image() -> bytes:
    """A stand-in for a Navi31 board's SPI image, the same every time: the AA 55 AA 55 signature, then a pseudo-random
    body per 1 MiB half (each half seeded differently, so the halves differ), the last 4 KiB of each 64 KiB block and
    the top 384 KiB of each half left erased (FFh), like the padding and free space of a real image."""
    half = SIZE // 2
    image = np.empty(SIZE, dtype=np.uint8)
    for index in range(2):
        seed = f"usergpu mock Navi31 SPI image, half {index}".encode()
        body = np.frombuffer(hashlib.shake_256(seed).digest(half), dtype=np.uint8).reshape(-1, BLOCK64_SIZE).copy()
        body[:, -SECTOR_SIZE:] = 0xFF
        body[-6:] = 0xFF
        image[index * half:(index + 1) * half] = body.reshape(-1)
    image[:len(IMAGE_MAGIC)] = np.frombuffer(IMAGE_MAGIC, dtype=np.uint8)
    return image.tobytes()


def _cycle(pattern: bytes, start: int, count: int) -> bytes:
    """`count` bytes of `pattern` repeated, from index `start`: what a register read gives while it is clocked."""
    start %= len(pattern)
    return (pattern * ((start + count) // len(pattern) + 1))[start:start + count]


class SPIFlash:
    """A GD25LQ16E on a chip select: `transfer` is one CS# low ... high."""

    SIZE = SIZE

    def __init__(self, path: str | os.PathLike, fault: str = ""):
        self.path = os.fspath(path)
        self._faults = parse_faults(fault)
        try:
            self._map = self._open(self.path)
            self._nonvolatile = self._load_status()
            if self._faults.cmp:
                self._nonvolatile[1] |= SR2_CMP
                self._save_status()
        except OSError as e:
            raise Error(f"{e.filename or self.path}: {e.strerror or e}: the SPI flash model keeps its array in a "
                        f"{SIZE}-byte file it reads and writes (made if missing) and its status registers beside it "
                        f"(.sr)") from None
        self._array = np.frombuffer(self._map, dtype=np.uint8)
        self._status = list(self._nonvolatile)  # what the chip uses: differs after a volatile write
        self._wel = False
        self._volatile_enable = False  # 50h arms the next command only
        self._busy_until = 0.0
        self._deep_power_down = False
        self._power_lost = ""

    @classmethod
    def _open(cls, path: str) -> mmap.mmap:
        """The image at path mapped shared, made first if missing."""
        if not os.path.exists(path):
            folder = os.path.dirname(os.path.abspath(path))
            if os.path.exists(folder) and not os.path.isdir(folder):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), folder)
            os.makedirs(folder, exist_ok=True)
            cls._create(path)
        with open(path, "r+b") as file:
            size = os.fstat(file.fileno()).st_size
            if size != SIZE:
                raise Error(f"{path}: the SPI flash image is {size} bytes, expected {SIZE}")
            return mmap.mmap(file.fileno(), SIZE)

    @staticmethod
    def _create(path: str) -> None:
        # built aside and linked in whole, so a process opening the path at the same time never sees half an image
        temporary = f"{path}.{os.getpid()}.new"
        with open(temporary, "wb") as file:
            file.write(default_image())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)

    @property
    def _status_path(self) -> str:
        return self.path + ".sr"

    def _load_status(self) -> list[int]:
        try:
            with open(self._status_path, "rb") as file:
                saved = file.read()
        except FileNotFoundError:
            return [0, 0, 0]
        if len(saved) != 3:
            raise Error(f"{self._status_path}: the status-register file is {len(saved)} bytes, expected 3 "
                        "(SR1, SR2, SR3)")
        return [value & mask for value, mask in zip(saved, WRITABLE, strict=True)]

    def _save_status(self) -> None:
        with open(self._status_path, "wb") as file:
            file.write(bytes(self._nonvolatile))

    def close(self) -> None:
        """Flush the array to the file and unmap it."""
        if self._map.closed:
            return
        self._array = None  # the view must go before the map can close
        self._map.flush()
        self._map.close()

    def __enter__(self) -> SPIFlash:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- state --------------------------------------------------------------------------------------------------

    def _operating(self) -> bool:
        """A program, erase or non-volatile status write is still running."""
        return time.monotonic() < self._busy_until

    def _busy(self) -> bool:
        return self._faults.stuck_busy or self._operating()

    def _start(self, seconds: float) -> None:
        # WEL stays set while the operation runs and is clear once it is done (status_register shows it)
        self._wel = False
        self._busy_until = time.monotonic() + seconds

    def status_register(self, index: int) -> int:
        """SR1, SR2 or SR3 (index 0, 1, 2) as RDSR reads it now."""
        value = self._status[index]
        if index == 0:
            operating = self._operating()
            value |= SR1_BUSY * (operating or self._faults.stuck_busy) | SR1_WEL * (operating or self._wel)
        return value

    def _protected_span(self) -> tuple[int, int]:
        """[start, end) of the array the BP bits select, before CMP."""
        bp = self._status[0] & 0x7C
        level = (bp >> 2) & 0x7  # BP2..BP0
        if level == 0:
            return 0, 0
        if level >= 6:  # BP2 = BP1 = 1: all, whatever BP4, BP3 and BP0 say
            return 0, SIZE
        size = min(SECTOR_SIZE << (level - 1), BLOCK32_SIZE) if bp & SR1_BP4 else BLOCK64_SIZE << (level - 1)
        return (0, size) if bp & SR1_BP3 else (SIZE - size, SIZE)

    def protected(self, address: int) -> bool:
        """Whether the byte at `address` is write-protected by the status registers' BP and CMP bits."""
        if not 0 <= address < SIZE:
            raise Error(f"address {address:#x} is outside the {SIZE:#x}-byte SPI flash")
        start, end = self._protected_span()
        return (start <= address < end) != bool(self._status[1] & SR2_CMP)

    def _touches_protected(self, start: int, end: int) -> bool:
        low, high = self._protected_span()
        if self._status[1] & SR2_CMP:  # only [low, high) is writable
            return not (low <= start and end <= high)
        return start < high and low < end

    # -- the bus ------------------------------------------------------------------------------------------------

    def transfer(self, tx: bytes, rx_len: int) -> bytes:
        """One SPI transaction (CS# low ... high): tx = opcode, address bytes, dummy bytes and data out, exactly as the
        controller shifted them; then rx_len bytes clocked in (returned). Data out beyond what the command takes is
        ignored. Raises PowerLoss when an injected power cut happens, and on every transfer after it."""
        if self._power_lost:
            raise PowerLoss(self._power_lost)
        if self._array is None:
            raise Error(f"{self.path}: SPI flash used after close()")
        idle = b"\xff" * rx_len  # SO high-impedance
        if not tx:
            return idle
        opcode = tx[0]
        volatile_enable, self._volatile_enable = self._volatile_enable, False
        if self._deep_power_down and opcode != RES:
            return idle
        if self._busy() and opcode not in (RDSR1, RDSR2, RDSR3):
            return idle
        if opcode in READ_HEADERS:
            return self._read_command(opcode, tx, rx_len)
        if opcode == WREN:
            self._wel = True
        elif opcode == WRDI:
            self._wel = False
        elif opcode == VWREN:
            self._volatile_enable = True
        elif opcode == DP:
            self._deep_power_down = True
        elif opcode == WRSR and len(tx) >= 2:
            self._write_status({0: tx[1]} | ({1: tx[2]} if len(tx) >= 3 else {}), volatile_enable)
        elif opcode in (WRSR2, WRSR3) and len(tx) >= 2:
            self._write_status({1 if opcode == WRSR2 else 2: tx[1]}, volatile_enable)
        elif opcode == PP and len(tx) >= 5:
            self._program(int.from_bytes(tx[1:4], "big") % SIZE, tx[4:])
        elif opcode in (SE, BE32, BE64) and len(tx) >= 4:
            size, seconds = BLOCK_ERASES[opcode]
            start = int.from_bytes(tx[1:4], "big") % SIZE & -size
            self._erase(opcode, start, start + size, seconds)
        elif opcode in (CE, CE_ALT):
            self._erase(opcode, 0, SIZE, T_CE)
        # anything else (including a write command cut short before its last byte) is ignored, as the chip does
        return idle

    def _read_command(self, opcode: int, tx: bytes, rx_len: int) -> bytes:
        length = READ_HEADERS[opcode]
        short = max(0, length - len(tx))  # header bytes still to be clocked during rx
        if rx_len <= short:
            return b"\xff" * rx_len
        header = bytes(tx[:length]) + bytes(short)
        skip, count = max(0, len(tx) - length), rx_len - short
        address = int.from_bytes(header[1:4], "big")
        if opcode == RES:
            self._deep_power_down = False
        if opcode in (READ, FAST_READ):
            data = self._read((address + skip) % SIZE, count)
        elif opcode == RDSFDP:
            data = _cycle(SFDP, address + skip, count)
        elif opcode == REMS:
            data = _cycle(bytes((MANUFACTURER_ID, DEVICE_ID)), (address & 1) + skip, count)
        elif opcode == RES:
            data = bytes((DEVICE_ID,)) * count
        elif opcode == RDID:
            data = _cycle(self._faults.jedec, skip, count)
        else:  # RDSRn: the register, again and again while clocked
            data = bytes((self.status_register((RDSR1, RDSR2, RDSR3).index(opcode)),)) * count
        return b"\xff" * short + data

    def _read(self, address: int, count: int) -> bytes:
        if address + count <= SIZE:
            return self._map[address:address + count]
        parts, remaining = [], count
        while remaining:  # wraps at the end of the array
            chunk = min(remaining, SIZE - address)
            parts.append(self._map[address:address + chunk])
            address, remaining = 0, remaining - chunk
        return b"".join(parts)

    def _write_status(self, values: dict[int, int], volatile_enable: bool) -> None:
        """WRSR: after WREN a non-volatile write (tW, saved); after 50h a volatile one (at once, not saved)."""
        def merged(old: int, index: int) -> int:
            mask = WRITABLE[index]
            return (old & ~mask) | (values[index] & mask) | (old & OTP[index])

        if self._wel:
            for index in values:
                self._nonvolatile[index] = self._status[index] = merged(self._nonvolatile[index], index)
            self._save_status()
            self._start(T_W)
        elif volatile_enable:
            for index in values:
                self._status[index] = merged(self._status[index], index)

    def _program(self, address: int, data: bytes) -> None:
        if not self._wel:
            return
        base, offset = address & -PAGE_SIZE, address % PAGE_SIZE
        if self._touches_protected(base, base + PAGE_SIZE):
            self._wel = False
            return
        if len(data) > PAGE_SIZE:  # the page buffer keeps the last 256 bytes, each at its wrapped position
            offset, data = (offset + len(data) - PAGE_SIZE) % PAGE_SIZE, data[-PAGE_SIZE:]
        cut = ("program", base // SECTOR_SIZE) in self._faults.power_loss
        if cut:
            data = data[:len(data) // 2]
        latch = np.full(PAGE_SIZE, 0xFF, dtype=np.uint8)
        latch[:len(data)] = np.frombuffer(data, dtype=np.uint8)
        self._array[base:base + PAGE_SIZE] &= np.roll(latch, offset)  # programming only clears bits
        if cut:
            self._lose_power(f"power lost during page program (02h) at {address:#08x}: sector {base // SECTOR_SIZE} "
                             f"has only the first {len(data)} of the bytes sent programmed")
        self._start(T_PP)

    def _erase(self, opcode: int, start: int, end: int, seconds: float) -> None:
        if not self._wel:
            return
        if self._touches_protected(start, end):
            self._wel = False
            return
        cut = [sector for kind, sector in self._faults.power_loss
               if kind == "erase" and start <= sector * SECTOR_SIZE < end]
        if cut:
            sector = min(cut)
            at = sector * SECTOR_SIZE
            self._array[start:at + SECTOR_SIZE // 2] = 0xFF
            self._lose_power(f"power lost during erase ({opcode:02X}h) of {start:#08x}..{end - 1:#08x}: sector "
                             f"{sector} ({at:#08x}) left half erased")
        self._array[start:end] = 0xFF
        self._start(seconds)

    def _lose_power(self, message: str) -> None:
        self._map.flush()
        self._power_lost = message
        raise PowerLoss(message)
