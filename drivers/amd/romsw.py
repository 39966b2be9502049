"""An AMD board's SPI flash through the SMUIO software SPI engine (ROM_SW_* in BAR5): raw SPI transactions with no
firmware involved, so it works on a board whose flash is empty or corrupt. Any transport's BAR5 `Registers` serve
(a native mapping or TLPs over USB). The engine's rules (drivers/amd/bar5.py for the registers): the data window
holds big-endian dwords, and a read shows the bytes of the previous read, so every read is issued twice.

Flashing is per 4 KiB sector: skip a sector that already holds the image, else erase it, program its pages that
are not blank, read it back and compare. Nothing is written unless the chip is the one expected, and the status
register's protection is only changed as asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from usergpu.drivers.pci import Registers
from usergpu.errors import Error
from usergpu.isa.amd.hw.bar5 import (
    COMMAND_SIZE_SHIFT,
    ROM_CNTL,
    ROM_SW_CNTL,
    ROM_SW_COMMAND,
    ROM_SW_DATA,
    ROM_SW_DONE,
    ROM_SW_GATED,
    ROM_SW_RETURN_DATA_ENABLE,
    ROM_SW_STATUS,
    ROM_SW_WINDOW,
    SCK_PRESCALE_REFCLK_MASK,
    SCK_PRESCALE_REFCLK_OVERRIDE,
    SCK_PRESCALE_REFCLK_SHIFT,
)

# SPI NOR commands (JEDEC common set, as the GD25LQ16E datasheet lists them)
RDID, RDSR1, RDSR2, RDSR3, WREN, WRSR, READ, PP, SE = 0x9F, 0x05, 0x35, 0x15, 0x06, 0x01, 0x03, 0x02, 0x20
BUSY, WEL, BP_MASK, CMP = 0x01, 0x02, 0x7C, 0x40  # SR1 BUSY, WEL, BP4..BP0; SR2 CMP
CHIPS = {bytes.fromhex("C86015"): ("GigaDevice GD25LQ16E", 2 << 20)}  # JEDEC id -> (name, bytes)
SIZE, SECTOR, PAGE = 2 << 20, 4096, 256
# Bounds on waits: above the datasheet maxima (tSE 300 ms, tPP 2.4 ms, tW 30 ms), with room for slow buses.
DONE_TIMEOUT, ERASE_TIMEOUT, PROGRAM_TIMEOUT, WRSR_TIMEOUT = 0.5, 1.0, 0.1, 0.2
ALL_ONES = 0xFFFFFFFF


class FlashError(Error):
    """The flash or its controller refused, timed out or read back wrong; the message says where and what."""


def lost(what: str) -> FlashError:
    return FlashError(f"{what}: BAR5 reads all ones: the board stopped answering (power lost, link down or the "
                      f"cable pulled)")


@dataclass(frozen=True)
class Status:
    sr1: int
    sr2: int
    sr3: int

    def describe(self) -> str:
        bp = (self.sr1 & BP_MASK) >> 2
        return (f"SR1={self.sr1:#04x} (BUSY={self.sr1 & 1} WEL={self.sr1 >> 1 & 1} BP={bp:#x} SRP0={self.sr1 >> 7}) "
                f"SR2={self.sr2:#04x} (SRP1={self.sr2 & 1} QE={self.sr2 >> 1 & 1} CMP={self.sr2 >> 6 & 1}) "
                f"SR3={self.sr3:#04x}")


class ROMSW:
    """The engine, opened: refuses a board whose firmware owns it; restores ROM_CNTL when closed."""

    def __init__(self, regs: Registers, prescale: int | None = None):
        self.regs = regs
        status = regs.read32(ROM_SW_STATUS)
        if status == ALL_ONES:
            raise lost("reading ROM_SW_STATUS")
        if status == ROM_SW_GATED:
            raise FlashError(f"the ROM_SW engine is gated (ROM_SW_STATUS={status:#010x}): the GPU firmware has booted "
                             f"and owns the SPI flash; use `amdflash fw ...`, or power the board up without firmware")
        self.rom_cntl = regs.read32(ROM_CNTL)
        if prescale is not None:
            if not 0 <= prescale <= 15:
                raise FlashError(f"--prescale {prescale}: the SCK prescaler takes 0..15")
            regs.write32(ROM_CNTL, self.rom_cntl & ~SCK_PRESCALE_REFCLK_MASK | prescale << SCK_PRESCALE_REFCLK_SHIFT
                         | SCK_PRESCALE_REFCLK_OVERRIDE)

    def close(self) -> None:
        self.regs.write32(ROM_CNTL, self.rom_cntl)

    def __enter__(self) -> ROMSW:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        try:
            self.close()
        except Error:
            if kind is None:  # an error already on its way says more than this one
                raise

    # ---- transactions -------------------------------------------------------------------------------------------
    def transaction(self, opcode: int, address: int | None = None, tx: bytes = b"", rx: int = 0) -> bytes:
        """One SPI transaction: opcode, the 24-bit address if given, then tx sent or rx bytes received (the bytes of
        the previous receive: see read_command)."""
        size = len(tx) or rx
        if tx:
            padded = tx + bytes(-len(tx) % 4)
            self.regs.write(ROM_SW_DATA, np.frombuffer(padded, ">u4").astype("<u4").tobytes())
        command_size = 1 if address is None else 4
        self.regs.write32(ROM_SW_CNTL, size | command_size << COMMAND_SIZE_SHIFT | (ROM_SW_RETURN_DATA_ENABLE if rx
                                                                                     else 0))
        self.regs.write32(ROM_SW_STATUS, 0)
        self.regs.write32(ROM_SW_COMMAND, (address or 0) << 8 | opcode)
        deadline = time.monotonic() + DONE_TIMEOUT
        while not (status := self.regs.read32(ROM_SW_STATUS)) & ROM_SW_DONE or status == ALL_ONES:
            if status == ALL_ONES:
                raise lost(f"SPI command {opcode:#04x}")
            if time.monotonic() > deadline:
                raise FlashError(f"SPI command {opcode:#04x}: ROM_SW_STATUS.DONE not set after {DONE_TIMEOUT} s "
                                 f"(ROM_SW_STATUS={status:#010x})")
        if not rx:
            return b""
        words = self.regs.read(ROM_SW_DATA, -(-rx // 4) * 4)
        return np.frombuffer(words, "<u4").astype(">u4").tobytes()[:rx]

    def read_command(self, opcode: int, rx: int, address: int | None = None) -> bytes:
        """A read issued twice: the second shows the data of the first."""
        self.transaction(opcode, address, rx=rx)
        return self.transaction(opcode, address, rx=rx)

    def jedec_id(self) -> bytes:
        return self.read_command(RDID, 3)

    def status(self) -> Status:
        return Status(*(self.read_command(op, 1)[0] for op in (RDSR1, RDSR2, RDSR3)))

    def check_chip(self) -> tuple[str, int]:
        """(name, size) of the flash; FlashError for a chip this tool does not know (or one stuck busy: a busy chip
        answers nothing but its status)."""
        self.wait_ready(ERASE_TIMEOUT, "waiting for the flash to be idle")
        jedec = self.jedec_id()
        if jedec not in CHIPS:
            known = ", ".join(f"{k.hex(' ').upper()} ({v[0]})" for k, v in CHIPS.items())
            raise FlashError(f"unknown SPI flash: JEDEC id {jedec.hex(' ').upper()}, expected {known}; nothing "
                             f"was written")
        return CHIPS[jedec]

    def wait_ready(self, timeout: float, what: str) -> None:
        """Until SR1.BUSY clears."""
        deadline = time.monotonic() + timeout
        while (sr1 := self.read_command(RDSR1, 1)[0]) & BUSY:
            if time.monotonic() > deadline:
                raise FlashError(f"{what}: the flash stayed busy for {timeout} s (SR1={sr1:#04x})")
            time.sleep(0.0002)

    def write_enable(self, what: str) -> None:
        self.transaction(WREN)
        sr1 = self.read_command(RDSR1, 1)[0]
        if not sr1 & WEL:
            raise FlashError(f"{what}: the write-enable latch did not set (SR1={sr1:#04x})")

    # ---- the array ----------------------------------------------------------------------------------------------
    def read(self, address: int, size: int, progress: Callable[[int], None] | None = None) -> bytes:
        """size bytes from address, in window-sized reads."""
        out = bytearray()
        for at in range(address, address + size, ROM_SW_WINDOW):
            n = min(ROM_SW_WINDOW, address + size - at)
            out += self.read_command(READ, n, at)
            if progress:
                progress(n)
        return bytes(out)

    def unprotect(self, clear_cmp: bool) -> Status:
        """Clear the block-protect bits (and SR2.CMP, only when asked) so the whole array can be written."""
        st = self.status()
        if st.sr2 & CMP and not clear_cmp:
            raise FlashError(f"SR2.CMP is set ({st.describe()}): the protection is complemented, so the array is "
                             f"write-protected; rerun with --clear-cmp to clear it; nothing was written")
        if st.sr1 & BP_MASK or st.sr2 & CMP:
            self.write_enable("clearing the protection bits")
            self.transaction(WRSR, tx=bytes([st.sr1 & ~BP_MASK & 0xFF, st.sr2 & ~CMP & 0xFF]))
            self.wait_ready(WRSR_TIMEOUT, "writing the status registers")
            st = self.status()
            if st.sr1 & BP_MASK or st.sr2 & CMP:
                raise FlashError(f"the status-register write did not take ({st.describe()}): is WP# held low or "
                                 f"SRP set?")
        return st

    def erase_sector(self, address: int) -> None:
        self.write_enable(f"erasing sector {address // SECTOR}")
        self.transaction(SE, address)
        self.wait_ready(ERASE_TIMEOUT, f"erasing sector {address // SECTOR} at {address:#08x}")

    def program_page(self, address: int, data: bytes) -> None:
        self.write_enable(f"programming the page at {address:#08x}")
        self.transaction(PP, address, tx=data)
        self.wait_ready(PROGRAM_TIMEOUT, f"programming the page at {address:#08x}")

    def flash_sector(self, index: int, data: bytes) -> bool:
        """Make sector index hold data: False if it already did; FlashError if the read-back differs."""
        address = index * SECTOR
        if self.read(address, SECTOR) == data:
            return False
        self.erase_sector(address)
        for off in range(0, SECTOR, PAGE):
            page = data[off : off + PAGE]
            if page.count(0xFF) != PAGE:
                self.program_page(address + off, page)
        check_read_back(f"sector {index}", address, data, self.read(address, SECTOR))
        return True


def check_read_back(what: str, address: int, expected: bytes, got: bytes, why: str = "") -> None:
    """FlashError naming the first byte where what was read back (got, from address) is not what was written."""
    if got != expected:
        at = next(i for i, (e, g) in enumerate(zip(expected, got, strict=True)) if e != g)
        raise FlashError(f"{what} read back wrong at {address + at:#08x}: expected {expected[at]:#04x}, got "
                         f"{got[at]:#04x}{why}")
