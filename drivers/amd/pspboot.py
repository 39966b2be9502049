"""An AMD board's flash through its PSP boot firmware (the MP0 mailbox in BAR5) and the ROM_INDEX/ROM_DATA window:
the way in when the firmware is up and owns the SPI engine. Queries, a dump a dword at a time, and the whole-image
(IFWI) update; the firmware writes the flash, the host feeds it the items of the image it asks for and reads each
back, since a firmware that reports an item written may have written nothing (a write-protected flash)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator

from usergpu.drivers.amd.romsw import ALL_ONES, SIZE, FlashError, check_read_back, lost
from usergpu.drivers.pci import Registers
from usergpu.isa.amd.hw.bar5 import (
    MP0_COMMAND,
    MP0_COMMAND_DATA,
    MP0_DOORBELL,
    MP0_READY,
    PAGE_MIRROR_CNTL,
    PSP_BOOT_PARTITION,
    PSP_END_TRANSFER,
    PSP_FB_STATE,
    PSP_IFWI_ALL,
    PSP_PHASE_TERMINAL,
    PSP_SPI_MODEL_ID,
    PSP_START_TRANSFER,
    PSP_TRANSFER_DATA,
    PSP_TRANSFER_TYPE,
    ROM_CNTL,
    ROM_DATA,
    ROM_INDEX,
)

MAGIC = bytes.fromhex("AA55AA55")
MAX_ITEMS = 19  # the most items an IFWI update asks for
COMMAND_TIMEOUT, DATA_TIMEOUT = 1.0, 30.0  # a query; an item the firmware programs into the flash
QUERIES = {"boot partition": PSP_BOOT_PARTITION, "frame-buffer state": PSP_FB_STATE, "SPI model id": PSP_SPI_MODEL_ID}
BLOCK = 4096
# Why an item the firmware reported written can read back otherwise: the firmware does not lift the flash's
# write protection, and a protected flash ignores erase and program without an error.
UNWRITTEN = (": the firmware's writes did not take, as on a write-protected flash (SR1.BP or SR2.CMP set; with the "
             "firmware not running, `amdflash romless info` shows them and `amdflash romless flash` clears them, CMP "
             "with --clear-cmp)")


def check_image(image: bytes, what: str) -> None:
    """A whole-flash image as the boards carry it: 2 MiB, the magic at 0, two halves that are not one copy."""
    if len(image) != SIZE:
        raise FlashError(f"{what}: {len(image)} bytes, a flash image is exactly {SIZE} bytes (2 MiB)")
    if image[:4] != MAGIC:
        raise FlashError(f"{what}: no AA 55 AA 55 magic at offset 0 (found {image[:4].hex(' ').upper()})")
    if image[: SIZE // 2] == image[SIZE // 2 :]:
        raise FlashError(f"{what}: the two 1 MiB halves are identical: the read wrapped around (a mirrored "
                         f"address space), not a real image")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class PSPBoot:
    def __init__(self, regs: Registers):
        self.regs = regs

    def command(self, command: int, argument: int = 0, timeout: float = COMMAND_TIMEOUT) -> tuple[int, int]:
        """(error, response) of one mailbox command."""
        self._wait_ready(f"before command {command:#04x}", timeout)
        self.regs.write32(MP0_COMMAND_DATA, argument)
        self.regs.write32(MP0_COMMAND, command)
        self.regs.write32(MP0_DOORBELL, 1)
        value = self._wait_ready(f"command {command:#04x}", timeout)
        return value & 0xFFFF, self.regs.read32(MP0_COMMAND_DATA)

    def _wait_ready(self, what: str, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while not (value := self.regs.read32(MP0_COMMAND)) & MP0_READY or value == ALL_ONES:
            if value == ALL_ONES:
                raise lost(f"PSP mailbox, {what}")
            if time.monotonic() > deadline:
                raise FlashError(f"PSP mailbox, {what}: not ready after {timeout} s (COMMAND={value:#010x})")
            time.sleep(0.0005)
        return value

    def probe(self) -> list[tuple[str, int, int, int]]:
        """(query, command, error, response) of each query."""
        return [(name, cmd, *self.command(cmd)) for name, cmd in QUERIES.items()]

    def read(self, offset: int, size: int, progress: Callable[[int], None] | None = None) -> bytes:
        """size bytes of the flash from offset (both whole 4 KiB blocks) through ROM_INDEX/ROM_DATA, a dword at a
        time; the controller's registers as they were after."""
        if self.regs.read32(ROM_CNTL) == ALL_ONES:
            raise lost("reading ROM_CNTL")
        saved = {r: self.regs.read32(r) for r in (ROM_CNTL, PAGE_MIRROR_CNTL, ROM_INDEX)}
        out = bytearray()
        try:
            for block in range(offset, offset + size, BLOCK):
                self.regs.write32(ROM_INDEX, block)
                out += b"".join(self.regs.read32(ROM_DATA).to_bytes(4, "little") for _ in range(BLOCK // 4))
                if progress:
                    progress(BLOCK)
        finally:
            for r, v in saved.items():
                self.regs.write32(r, v)
        return bytes(out)

    def dump(self, progress: Callable[[int], None] | None = None) -> bytes:
        """The whole flash (see read), refused unless it looks like a board's image."""
        data = self.read(0, SIZE, progress)
        check_image(data, "the dump")
        return data

    def ifwi_start(self) -> int:
        """Open a whole-image (IFWI) update: the firmware's first request. Nothing is written yet."""
        error, ready = self.command(PSP_FB_STATE)
        if error or ready != 1:
            raise FlashError(f"PSP frame-buffer state: error {error:#06x}, state {ready}: VRAM is not ready to stage "
                             f"the image; nothing was written")
        error, _ = self.command(PSP_TRANSFER_TYPE, PSP_IFWI_ALL)
        if error:
            raise FlashError(f"PSP transfer type IFWI-all: error {error:#06x}; nothing was written")
        error, request = self.command(PSP_START_TRANSFER, SIZE)
        if error:
            raise FlashError(f"PSP start of transfer: error {error:#06x} (request {request:#010x}); nothing was "
                             f"written")
        return request

    def ifwi_items(self, image: bytes, vram: Registers, request: int, between: Callable[[], None] | None = None
                   ) -> Iterator[tuple[int, int]]:
        """From the first request on, feed the firmware the items of image it asks for (staged at the start of
        VRAM) until it says all are written, then close the transfer. Yields (offset, size) of each item once the
        firmware has written it and it reads back as the image: the firmware's word that it wrote is not taken.
        between() runs before each item is staged (where a caller may stop with no item half written)."""
        check_image(image, "the image")
        count = 0
        while True:
            phase, size, offset = request >> 24, (request >> 12 & 0xFFF) * BLOCK, (request & 0xFFF) * BLOCK
            if phase == PSP_PHASE_TERMINAL:
                break
            if between:
                between()
            if count == MAX_ITEMS or offset + size > SIZE or not size:
                raise FlashError(f"PSP transfer: request {request:#010x} (phase {phase}, {size} bytes at "
                                 f"{offset:#x}) after {count} items is not one this tool can serve; stopped")
            vram.write(0, image[offset : offset + size])
            error, request = self.command(PSP_TRANSFER_DATA, size, DATA_TIMEOUT)
            if error:
                raise FlashError(f"PSP transfer, item {count}: error {error:#06x} (request {request:#010x})")
            check_read_back(f"item {count} ({size >> 10} KiB at {offset:#08x}), which the firmware reported written,",
                            offset, image[offset : offset + size], self.read(offset, size), UNWRITTEN)
            count += 1
            yield offset, size
        error, _ = self.command(PSP_END_TRANSFER)
        if error:
            raise FlashError(f"PSP end of transfer: error {error:#06x}")
