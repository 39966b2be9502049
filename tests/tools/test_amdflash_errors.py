"""amdflash's rows of the CLI bad-input table: each bad input, run as a user runs it, is one `error:` line with the
facts (exit 1; a usage error exit 2) and no traceback. Paths and values are written with {tmp}, the test's folder:
image.bin a good image, short.bin one byte short, nomagic.bin one without the AA 55 AA 55 magic, dir a folder,
file.bin a file, immutable.bin an image the file system refuses to change; flash.bin is the mock board's flash."""

from __future__ import annotations

import subprocess

import pytest
from cli_errors import Case, check

from usergpu.emu.amd.mock.flash.spiflash import SIZE, default_image

PCI, USB = ["amdflash", "--dev", "MOCKPCI+AMD"], ["amdflash", "--dev", "MOCKUSB+AMD"]
IMAGE = "{tmp}/image.bin"

CASES = [
    # image files
    Case([*PCI, "romless", "flash", "{tmp}/missing.bin", "--yes"], "{tmp}/missing.bin: no such file", 2),
    Case([*PCI, "romless", "flash", "{tmp}/dir", "--yes"], "{tmp}/dir: is a directory", 2),
    Case([*PCI, "romless", "flash", "{tmp}/short.bin", "--yes"],
         f"short.bin: {SIZE - 1} bytes, a flash image is exactly {SIZE} bytes"),
    Case([*USB, "fw", "ifwi-all", "{tmp}/short.bin", "--yes"], f"exactly {SIZE} bytes"),
    Case([*USB, "fw", "ifwi-all", "{tmp}/nomagic.bin", "--yes"], "no AA 55 AA 55 magic at offset 0 (found 00 00"),
    Case([*PCI, "fw", "ifwi-all", "{tmp}/dir", "--yes"], "is a directory", 2),
    Case([*PCI, "romless", "verify", "{tmp}/missing.bin"], "no such file", 2),
    Case([*PCI, "romless", "verify", "{tmp}/short.bin"], f"exactly {SIZE} bytes"),
    # files written
    Case([*PCI, "romless", "dump", "{tmp}/nowhere/d.bin"], "the folder {tmp}/nowhere does not exist", 2),
    Case([*PCI, "romless", "dump", "{tmp}/dir"], "{tmp}/dir: is a directory", 2),
    Case([*USB, "fw", "dump", "{tmp}/file.bin/d.bin"], "does not exist", 2),
    Case([*PCI, "romless", "read", "0", "16", "-o", "{tmp}/nowhere/r.bin"], "does not exist", 2),
    # addresses, sizes, sectors, numbers
    Case([*PCI, "romless", "read", "-1", "16"], "'-1': an address in the flash must be 0..2097151", 2),
    Case([*PCI, "romless", "read", "abc", "16"], "'abc' is not an address in the flash", 2),
    Case([*PCI, "romless", "read", "0x200000", "4"], "must be 0..2097151", 2),
    Case([*PCI, "romless", "read", "0", "0"], "'0': a size in bytes must be 1..2097152", 2),
    Case([*PCI, "romless", "read", "0", "1e3"], "'1e3' is not a size in bytes", 2),
    Case([*USB, "romless", "read", "0x1ff000", "0x2000"], "read 0x1ff000+0x2000: the flash is 0x200000 bytes"),
    Case([*PCI, "romless", "--prescale", "99", "info"], "'99': the SCK prescaler must be 0..15", 2),
    Case([*PCI, "romless", "flash", IMAGE, "--start-sector", "-1", "--yes"], "a sector of the flash must be 0..511",
         2),
    Case([*PCI, "romless", "flash", IMAGE, "--start-sector", "512", "--yes"], "'512': a sector of the flash", 2),
    Case([*PCI, "romless", "flash", IMAGE, "--start-sector", "x", "--yes"], "'x' is not a sector of the flash", 2),
    Case([*PCI, "romless", "flash", IMAGE, "--sector-count", "0", "--yes"], "a count of sectors must be 1..512", 2),
    Case([*PCI, "romless", "flash", IMAGE, "--start-sector", "510", "--sector-count", "5", "--yes"],
         "sectors 510..514: the flash has sectors 0..511; nothing was written"),
    # boards
    Case([*USB, "--device", "99", "romless", "info"],
         "--device 99: 1 Navi31 board on the mock MOCKUSB+AMD (0 PCI, 1 behind USB bridges), numbered from 0"),
    Case([*PCI, "--device", "99", "fw", "probe"], "--device 99: 1 Navi31 board on the mock MOCKPCI+AMD (1 PCI"),
    Case([*PCI, "--device", "-1", "romless", "info"], "'-1': a board number must be >= 0", 2),
    Case(["amdflash", "--dev", "MOCKFOO+AMD", "romless", "info"], "invalid choice: 'MOCKFOO+AMD'", 2),
    Case(["amdflash", "--transport", "serial", "romless", "info"], "invalid choice: 'serial'", 2),
    Case(["amdflash"], "the following arguments are required: {romless,fw}", 2),
    Case([*PCI, "romless"], "required: {info,read,dump,verify,flash}", 2),
    # the mock board's own files and faults
    Case([*PCI, "romless", "info"], "{tmp}/dir: Is a directory: the SPI flash model keeps its array in a",
         env={"MOCKFLASH_IMAGE": "{tmp}/dir"}),
    Case([*USB, "romless", "info"], "{tmp}/file.bin: Not a directory", env={"MOCKFLASH_IMAGE": "{tmp}/file.bin/f"}),
    Case([*PCI, "romless", "info"], "{tmp}/immutable.bin: Operation not permitted",
         env={"MOCKFLASH_IMAGE": "{tmp}/immutable.bin"}),
    Case([*PCI, "romless", "info"], f"the SPI flash image is {SIZE - 1} bytes, expected {SIZE}",
         env={"MOCKFLASH_IMAGE": "{tmp}/short.bin"}),
    Case([*USB, "romless", "info"], "MOCKFLASH_FAULT item 'bogus' is not one of", env={"MOCKFLASH_FAULT": "bogus"}),
    Case([*PCI, "romless", "flash", IMAGE, "--yes"], "the ROM_SW engine is gated", env={"MOCKFLASH_GATED": "1"}),
    # writes
    Case([*PCI, "romless", "flash", IMAGE], "romless flash writes the board's SPI flash: add --yes to do it"),
    Case([*USB, "fw", "ifwi-all", IMAGE], "fw ifwi-all writes the board's SPI flash: add --yes"),
    Case([*PCI, "fw", "flash", IMAGE], "firmware-mediated writes other than ifwi-all are disabled"),
    Case([*PCI, "romless", "flash", IMAGE, "--sector-count", "1", "--yes"], "SR2.CMP is set",
         env={"MOCKFLASH_FAULT": "cmp"}),
    Case([*USB, "fw", "ifwi-all", IMAGE, "--yes"], "read back wrong at", env={"MOCKFLASH_FAULT": "cmp",
                                                                              "MOCKFLASH_GATED": "1"}),
]


@pytest.fixture
def tmp(tmp_path):
    """The files the rows name (see the module's docstring)."""
    image = bytearray(default_image())
    image[0x100:0x200] = bytes(256)
    (tmp_path / "image.bin").write_bytes(image)
    (tmp_path / "short.bin").write_bytes(bytes(SIZE - 1))
    (tmp_path / "nomagic.bin").write_bytes(bytes(SIZE))
    (tmp_path / "file.bin").write_bytes(b"")
    (tmp_path / "dir").mkdir()
    immutable = tmp_path / "immutable.bin"
    immutable.write_bytes(default_image())
    locked = subprocess.run(["chattr", "+i", str(immutable)], capture_output=True).returncode == 0
    yield tmp_path, locked
    if locked:
        subprocess.run(["chattr", "-i", str(immutable)], check=True)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input_is_one_error_line(case, tmp):
    folder, locked = tmp
    if "immutable" in str(case.env) and not locked:
        pytest.skip("chattr +i needs root and a file system with the immutable flag")

    def fill(text: str) -> str:
        return text.replace("{tmp}", str(folder))

    env = {"MOCKFLASH_IMAGE": f"{folder}/flash.bin", "MOCKFLASH_FAULT": "", "MOCKFLASH_GATED": ""} | case.env
    check(Case([fill(a) for a in case.argv], fill(case.says), case.status, {k: fill(v) for k, v in env.items()}))
