"""The SMUIO ROM controller of a Navi31 (SMUIO 13.0.0), as BAR5 registers: the software SPI engine (ROM_SW_*)
that shifts raw SPI transactions to the board's flash, and the ROM_INDEX/ROM_DATA window that reads it a dword at
a time. Offsets and fields are in drivers/amd/bar5.py; the behaviour is the part a flasher depends on, quirks included:

- ROM_SW_COMMAND = address << 8 | opcode; writing it runs the transaction: COMMAND_SIZE bytes of opcode and
  address (most significant first), then DATA_SIZE bytes sent from the ROM_SW_DATA window, or received into it
  when ROM_SW_RETURN_DATA_ENABLE is set. ROM_SW_STATUS.DONE is set when it ends; software clears it.
- The window holds big-endian dwords: the first byte on the wire is bits 31:24 of ROM_SW_DATA_1.
- A receive shows the bytes of the previous receive: the data of this one appears after the next (flashers
  issue each read twice).
- Once the firmware has booted it owns the engine: ROM_SW_STATUS reads 0x04000800 and commands are ignored.
"""

from __future__ import annotations

import numpy as np

from usergpu.isa.amd.hw.bar5 import (
    COMMAND_SIZE_SHIFT,
    DATA_SIZE_MASK,
    PAGE_MIRROR_CNTL,
    ROM_CNTL,
    ROM_DATA,
    ROM_INDEX,
    ROM_SW_CNTL,
    ROM_SW_COMMAND,
    ROM_SW_DATA,
    ROM_SW_DONE,
    ROM_SW_GATED,
    ROM_SW_RETURN_DATA_ENABLE,
    ROM_SW_STATUS,
    ROM_SW_WINDOW,
    SMU_GPIOPAD_A,
    SMU_GPIOPAD_EN,
    SMU_GPIOPAD_MASK,
)

PLAIN = (ROM_CNTL, PAGE_MIRROR_CNTL, ROM_SW_CNTL, SMU_GPIOPAD_MASK, SMU_GPIOPAD_A, SMU_GPIOPAD_EN)


def window_bytes(words: np.ndarray) -> bytes:
    """The window's dwords as the bytes on the wire (big-endian)."""
    return words.astype(">u4").tobytes()


def window_words(data: bytes) -> np.ndarray:
    padded = data + bytes(-len(data) % 4)
    return np.frombuffer(padded, ">u4").astype(np.uint32)


class SMUIORom:
    """The registers above over a flash model with `transfer(tx, rx_len)` (one chip select) and `SIZE`."""

    def __init__(self, flash, gated: bool = False):
        self.flash, self.gated = flash, gated
        self.regs = dict.fromkeys(PLAIN, 0)
        self.regs[ROM_CNTL] = 0x00000002  # SCK prescale as the VBIOS leaves it
        self.status = 0
        self.index = 0
        self.window = np.zeros(ROM_SW_WINDOW // 4, np.uint32)
        self.received = b""  # the last receive, shown by the next

    def read(self, offset: int) -> int | None:
        """A register's value, or None if the offset is not the controller's."""
        if offset in self.regs:
            return self.regs[offset]
        if offset == ROM_SW_STATUS:
            return ROM_SW_GATED if self.gated else self.status
        if offset == ROM_INDEX:
            return self.index
        if offset == ROM_DATA:  # the dword at ROM_INDEX (a READ on the SPI bus); the index moves on by 4
            value = int.from_bytes(self.flash.transfer(b"\x03" + self.index.to_bytes(3, "big"), 4), "little")
            self.index = (self.index + 4) % self.flash.SIZE
            return value
        if ROM_SW_DATA <= offset < ROM_SW_DATA + ROM_SW_WINDOW:
            return int(self.window[(offset - ROM_SW_DATA) // 4])
        return None

    def write(self, offset: int, value: int) -> bool:
        """A register write; False if the offset is not the controller's."""
        if offset in self.regs:
            self.regs[offset] = value
        elif offset == ROM_SW_STATUS:
            self.status = value & ROM_SW_DONE
        elif offset == ROM_INDEX:
            self.index = value & (self.flash.SIZE - 1) & ~3
        elif ROM_SW_DATA <= offset < ROM_SW_DATA + ROM_SW_WINDOW:
            self.window[(offset - ROM_SW_DATA) // 4] = value
        elif offset == ROM_SW_COMMAND:
            if not self.gated:
                self._run(value)
        elif offset != ROM_DATA:
            return False
        return True

    def _run(self, command: int) -> None:
        cntl = self.regs[ROM_SW_CNTL]
        size, command_size = min(cntl & DATA_SIZE_MASK, ROM_SW_WINDOW), (cntl >> COMMAND_SIZE_SHIFT) & 7
        head = (command & 0xFF).to_bytes(1, "little") + (command >> 8).to_bytes(3, "big")
        if cntl & ROM_SW_RETURN_DATA_ENABLE:
            got = self.flash.transfer(head[:command_size], size)
            self.window[:] = window_words(self.received.ljust(ROM_SW_WINDOW, b"\0"))
            self.received = got
        else:
            self.flash.transfer(head[:command_size] + window_bytes(self.window)[:size], 0)
        self.status |= ROM_SW_DONE
