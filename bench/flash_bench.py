"""amdflash's throughput on the mock Navi31 board, per transport (the mock USB bridge, the native mock function):
a 2 MiB dump through the ROM_SW engine, flashing 64 sectors (erase, program, read back), and a 2 MiB dump through
ROM_INDEX/ROM_DATA. The baseline, run in the same process, is the flash model itself: the same reads and the same
erase/program commands sent straight to the chip with no controller or bus between (ratio: tool / baseline).

    .venv/bin/python bench/flash_bench.py
"""

from __future__ import annotations

import os
import tempfile
import time

import numpy as np

from usergpu.drivers.amd.pspboot import PSPBoot
from usergpu.drivers.amd.romsw import PAGE, ROMSW, SECTOR, SIZE
from usergpu.drivers.hal import HAL
from usergpu.emu.amd.mock.flash.spiflash import SPIFlash
from usergpu.tools.amdflash import open_board, parser

SECTORS = 64


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def direct(path: str, image: bytes) -> tuple[float, float]:
    """(dump, flash) seconds with the chip model alone: 256-byte READs; erase and program each sector, waiting."""
    chip = SPIFlash(path)

    def wait() -> None:
        while chip.transfer(b"\x05", 1)[0] & 1:
            time.sleep(0.0002)

    def flash() -> None:
        for s in range(SECTORS):
            chip.transfer(b"\x06", 0)
            chip.transfer(b"\x20" + (s * SECTOR).to_bytes(3, "big"), 0)
            wait()
            for p in range(s * SECTOR, (s + 1) * SECTOR, PAGE):
                chip.transfer(b"\x06", 0)
                chip.transfer(b"\x02" + p.to_bytes(3, "big") + image[p : p + PAGE], 0)
                wait()

    dump = timed(lambda: [chip.transfer(b"\x03" + a.to_bytes(3, "big"), PAGE) for a in range(0, SIZE, PAGE)])
    out = dump, timed(flash)
    chip.close()
    return out


def main() -> None:
    image = b"\xaa\x55\xaa\x55" + np.random.default_rng(0).integers(0, 256, SIZE - 4, np.uint8).tobytes()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["MOCKFLASH_IMAGE"] = path = f"{tmp}/flash.bin"
        base_dump, base_flash = direct(path, image)
        print(f"{'transport':12} {'what':28} {'KiB/s':>9} {'x baseline':>11}")
        print(f"{'(chip)':12} {'dump 2 MiB':28} {SIZE / 1024 / base_dump:9.0f} {1:11.1f}")
        print(f"{'(chip)':12} {f'flash {SECTORS} sectors':28} {SECTORS * 4 / base_flash:9.0f} {1:11.1f}")
        for n, dev in enumerate(("MOCKPCI+AMD", "MOCKUSB+AMD"), 1):  # each flashes sectors the flash does not hold
            board = open_board(parser().parse_args(["--dev", dev, "romless", "info"]), HAL())
            with ROMSW(board.map_bar(5)) as spi:
                dump = timed(lambda spi=spi: spi.read(0, SIZE))
                flash = timed(lambda spi=spi, n=n: [spi.flash_sector(s, image[s * SECTOR : (s + 1) * SECTOR])
                                               for s in range(n * SECTORS, (n + 1) * SECTORS)])
            fw = timed(lambda board=board: PSPBoot(board.map_bar(5)).dump())
            for what, secs, base in (("romless dump 2 MiB", dump, base_dump),
                                     (f"romless flash {SECTORS} sectors", flash, base_flash),
                                     ("fw dump 2 MiB (dword reads)", fw, base_dump)):
                size = SIZE if "dump" in what else SECTORS * SECTOR
                print(f"{dev:12} {what:28} {size / 1024 / secs:9.0f} {secs / base:11.1f}")


if __name__ == "__main__":
    main()
