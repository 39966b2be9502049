"""The early PSP boot-firmware mailbox of a Navi31 (MP0 13.0.0 C2PMSG registers in BAR5): the host writes an
argument to COMMAND_DATA and a command id to COMMAND, then rings DOORBELL; the firmware answers in the same
registers: COMMAND reads with bit 31 (ready) set and the error code in its low 16 bits, COMMAND_DATA holds the
response.

Commands: 0x01 boot partition, 0x06 frame-buffer state, 0x07 transfer type, 0x08/0x09/0x0A start/data/end of a
transfer, 0x0B SPI model id. The register offsets and command ids are the firmware's; how an IFWI transfer
proceeds is this model's (the firmware's own sequencing is not public): after START the firmware asks for one item
of the image at a time, as a response word `phase << 24 | size_4k << 12 | offset_4k`; the host copies those bytes
of the image to the start of VRAM (BAR0) and sends DATA with their size; the firmware programs them into the flash
and asks for the next item; phase TERMINAL means all were written, and END closes the transfer. A new IFWI runs
only after a hard power cycle.
"""

from __future__ import annotations

import time

from usergpu.isa.amd.hw.bar5 import (
    MP0_COMMAND,
    MP0_COMMAND_DATA,
    MP0_DOORBELL,
    MP0_READY,
    PSP_BOOT_PARTITION,
    PSP_END_TRANSFER,
    PSP_FB_STATE,
    PSP_IFWI_ALL,
    PSP_PHASE_TERMINAL,
    PSP_SPI_MODEL_ID,
    PSP_START_TRANSFER,
    PSP_TRANSFER_DATA,
    PSP_TRANSFER_TYPE,
)

OK, ERR_INVALID_COMMAND, ERR_INVALID_PARAM, ERR_SEQUENCE = 0x0000, 0x0001, 0x0002, 0x0003
SECTOR = 4096
# The items of an IFWI update, (offset, size) in 4 KiB units: the layout the model's firmware writes, 19 regions
# covering the 2 MiB image (first half: boot loaders and directories; second half: the mirrored copy).
ITEMS = ((0, 1), (1, 15), (16, 16), (32, 32), (64, 16), (80, 16), (96, 32), (128, 32), (160, 48), (208, 48),
         (256, 1), (257, 15), (272, 16), (288, 32), (320, 16), (336, 16), (352, 32), (384, 32), (416, 96))


def request(phase: int, item: tuple[int, int] = (0, 0)) -> int:
    return phase << 24 | item[1] << 12 | item[0]


class PSPBoot:
    """The mailbox over the board's flash model (`transfer(tx, rx_len)`, what the firmware drives) and its VRAM."""

    def __init__(self, flash, vram: bytearray):
        self.flash, self.vram = flash, vram
        self.command, self.data = MP0_READY, 0
        self.transfer_type = 0
        self.phase = None  # the item the firmware asked for last, during a transfer

    def read(self, offset: int) -> int | None:
        return {MP0_COMMAND: self.command, MP0_COMMAND_DATA: self.data, MP0_DOORBELL: 0}.get(offset)

    def write(self, offset: int, value: int) -> bool:
        if offset == MP0_COMMAND:
            self.command = value & 0xFF
        elif offset == MP0_COMMAND_DATA:
            self.data = value
        elif offset == MP0_DOORBELL:
            error, self.data = self._run(self.command & 0xFF, self.data)
            self.command = MP0_READY | error
        else:
            return False
        return True

    def _run(self, command: int, arg: int) -> tuple[int, int]:
        """(error, response) of a command."""
        if command == PSP_BOOT_PARTITION:
            return OK, 0
        if command == PSP_FB_STATE:
            return OK, 1  # memory trained: VRAM is usable for transfers
        if command == PSP_SPI_MODEL_ID:
            return OK, int.from_bytes(self.flash.transfer(b"\x9f", 3), "big")  # the JEDEC id, as the PSP reads it
        if command == PSP_TRANSFER_TYPE:
            if arg != PSP_IFWI_ALL:
                return ERR_INVALID_PARAM, 0
            self.transfer_type = arg
            return OK, 0
        if command == PSP_START_TRANSFER:
            if self.transfer_type != PSP_IFWI_ALL or arg != 2 * 1024 * 1024:
                return ERR_SEQUENCE if self.transfer_type != PSP_IFWI_ALL else ERR_INVALID_PARAM, 0
            self.phase = 0
            return OK, request(1, ITEMS[0])
        if command == PSP_TRANSFER_DATA:
            if self.phase is None or self.phase >= len(ITEMS):
                return ERR_SEQUENCE, 0
            offset, size = (n * SECTOR for n in ITEMS[self.phase])
            if arg != size:
                return ERR_INVALID_PARAM, request(self.phase + 1, ITEMS[self.phase])
            self._program(offset, bytes(self.vram[:size]))
            self.phase += 1
            if self.phase == len(ITEMS):
                return OK, request(PSP_PHASE_TERMINAL)
            return OK, request(self.phase + 1, ITEMS[self.phase])
        if command == PSP_END_TRANSFER:
            if self.phase != len(ITEMS):
                return ERR_SEQUENCE, 0
            self.phase, self.transfer_type = None, 0
            return OK, 0
        return ERR_INVALID_COMMAND, 0

    def _spi(self, *commands: bytes) -> None:
        """Each command after a write enable, then until the flash is no longer busy."""
        for tx in commands:
            self.flash.transfer(b"\x06", 0)
            self.flash.transfer(tx, 0)
            while self.flash.transfer(b"\x05", 1)[0] & 1:
                time.sleep(0.0001)

    def _program(self, offset: int, data: bytes) -> None:
        """Erase the sectors, then program the pages that are not blank: as a flasher does."""
        self._spi(*(b"\x20" + (offset + o).to_bytes(3, "big") for o in range(0, len(data), SECTOR)))
        self._spi(*(b"\x02" + (offset + o).to_bytes(3, "big") + data[o : o + 256] for o in range(0, len(data), 256)
                    if data[o : o + 256].count(0xFF) != 256))
