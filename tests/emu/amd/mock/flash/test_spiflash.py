"""The GD25LQ16E model answers as the datasheet says the chip does."""

from __future__ import annotations

import struct
import time

import pytest

from usergpu.emu.amd.mock.flash import spiflash
from usergpu.emu.amd.mock.flash.spiflash import (
    SECTOR_SIZE,
    SIZE,
    T_CE,
    PowerLoss,
    SPIFlash,
    default_image,
)
from usergpu.errors import Error

BUSY, WEL = 0x01, 0x02
CMP = 0x40


def addr(address: int) -> bytes:
    return address.to_bytes(3, "big")


def sr(flash: SPIFlash, opcode: int = 0x05) -> int:
    return flash.transfer(bytes((opcode,)), 1)[0]


def wait_ready(flash: SPIFlash, timeout: float = 2.0) -> None:
    deadline = time.monotonic() + timeout
    while sr(flash) & BUSY:
        assert time.monotonic() < deadline, "BUSY never cleared"
        time.sleep(0.0005)


def read(flash: SPIFlash, address: int, count: int) -> bytes:
    return flash.transfer(b"\x03" + addr(address), count)


def wren(flash: SPIFlash) -> None:
    flash.transfer(b"\x06", 0)


def program(flash: SPIFlash, address: int, data: bytes) -> None:
    wren(flash)
    flash.transfer(b"\x02" + addr(address) + data, 0)
    wait_ready(flash)


def erase(flash: SPIFlash, opcode: int, address: int = 0) -> None:
    wren(flash)
    flash.transfer(bytes((opcode,)) + (addr(address) if opcode in (0x20, 0x52, 0xD8) else b""), 0)
    wait_ready(flash)


def write_status(flash: SPIFlash, *values: int) -> None:
    wren(flash)
    flash.transfer(b"\x01" + bytes(values), 0)
    wait_ready(flash)


@pytest.fixture
def path(tmp_path):
    return tmp_path / "rom.bin"


@pytest.fixture
def flash(path):
    with SPIFlash(path) as chip:
        yield chip


def test_identification(flash):
    assert flash.transfer(b"\x9f", 3) == bytes.fromhex("c86015")
    assert flash.transfer(b"\x9f", 6) == bytes.fromhex("c86015c86015")
    assert flash.transfer(b"\x90\x00\x00\x00", 4) == bytes.fromhex("c814c814")
    assert flash.transfer(b"\x90\x00\x00\x01", 2) == bytes.fromhex("14c8")
    assert flash.transfer(b"\xab\x00\x00\x00", 2) == b"\x14\x14"
    # without its three dummy bytes in tx, RES clocks them during rx while SO is still high-impedance
    assert flash.transfer(b"\xab", 4) == b"\xff\xff\xff\x14"


def test_default_image(path, flash):
    image = default_image()
    assert image == default_image()
    assert len(image) == SIZE and image[:4] == bytes.fromhex("aa55aa55")
    assert image[: SIZE // 2] != image[SIZE // 2:]
    assert b"\xff" * (256 << 10) in image[: SIZE // 2] and b"\xff" * (256 << 10) in image[SIZE // 2:]
    assert image.count(0xFF) < SIZE // 2  # mostly content, not an erased chip
    assert path.read_bytes() == image
    assert read(flash, 0, SIZE) == image


def test_read_wraps_and_fast_read(flash):
    image = default_image()
    assert read(flash, SIZE - 2, 4) == image[-2:] + image[:2]
    assert read(flash, 0xE00010, 4) == image[0x10:0x14]  # A23..A21 are not decoded
    assert flash.transfer(b"\x0b" + addr(0x1234) + b"\x00", 16) == image[0x1234:0x1244]
    # tx past the header: the chip was already shifting data out during those bytes
    assert flash.transfer(b"\x03" + addr(0x100) + b"\x00\x00", 4) == image[0x102:0x106]


def test_second_instance_sees_changes(path):
    with SPIFlash(path) as first:
        erase(first, 0x20, 0x3000)
        with SPIFlash(path) as second:  # the same file, mapped twice
            assert read(second, 0x3000, 16) == b"\xff" * 16
            program(second, 0x3000, b"\x12\x34")
        assert read(first, 0x3000, 3) == b"\x12\x34\xff"
    with SPIFlash(path) as later:
        assert read(later, 0x3000, 3) == b"\x12\x34\xff"


def test_write_enable_latch(flash):
    before = read(flash, 0, 16)
    flash.transfer(b"\x02" + addr(0) + b"\x00" * 16, 0)  # no WREN: ignored
    flash.transfer(b"\x20" + addr(0), 0)
    assert sr(flash) & (BUSY | WEL) == 0 and read(flash, 0, 16) == before
    wren(flash)
    assert sr(flash) & WEL
    flash.transfer(b"\x04", 0)
    assert not sr(flash) & WEL
    wren(flash)
    flash.transfer(b"\x02" + addr(0) + b"\x00", 0)
    wait_ready(flash)
    assert not sr(flash) & WEL  # cleared once the program is done
    assert read(flash, 0, 1) == b"\x00"
    flash.transfer(b"\x20" + addr(0), 0)  # WEL is gone: no erase
    assert read(flash, 0, 1) == b"\x00"


def test_page_program_and_semantics(flash):
    erase(flash, 0x20, 0x1000)
    program(flash, 0x1000, b"\xf0\x0f\xff")
    program(flash, 0x1000, b"\x3c\x3c\x00")  # programming only clears bits
    assert read(flash, 0x1000, 4) == b"\x30\x0c\x00\xff"
    program(flash, 0x1000, b"\xff")  # and cannot set them again
    assert read(flash, 0x1000, 1) == b"\x30"


def test_page_program_wraps_in_page(flash):
    erase(flash, 0x20, 0x2000)
    program(flash, 0x20F0, bytes(range(32)))
    assert read(flash, 0x20F0, 16) == bytes(range(16))
    assert read(flash, 0x2000, 16) == bytes(range(16, 32))  # wrapped to the page start
    assert read(flash, 0x2100, 16) == b"\xff" * 16  # the next page is untouched
    # of more than a page, the last 256 bytes are programmed, each where the wrap puts it
    program(flash, 0x2200, bytes(range(256)) + b"\x00\x11")
    assert read(flash, 0x2200, 4) == b"\x00\x11\x02\x03" and read(flash, 0x22FE, 2) == b"\xfe\xff"


@pytest.mark.parametrize("opcode, size", [(0x20, 4 << 10), (0x52, 32 << 10), (0xD8, 64 << 10)])
def test_block_erase(flash, opcode, size):
    image = default_image()
    start = 3 * size
    erase(flash, opcode, start + size // 2 + 5)  # any address inside the block selects it
    assert read(flash, start, size) == b"\xff" * size
    assert read(flash, start - 16, 16) == image[start - 16:start]
    assert read(flash, start + size, 16) == image[start + size:start + size + 16]


@pytest.mark.parametrize("opcode", [0x60, 0xC7])
def test_chip_erase(flash, opcode):
    erase(flash, opcode)
    assert read(flash, 0, SIZE) == b"\xff" * SIZE


def test_busy_during_erase(flash):
    wren(flash)
    started = time.monotonic()
    flash.transfer(b"\xc7", 0)
    assert sr(flash) & (BUSY | WEL) == BUSY | WEL  # WEL stays set until the erase is done
    assert flash.transfer(b"\x05", 3) == bytes((BUSY | WEL,)) * 3  # re-output while clocked
    wait_ready(flash)
    assert time.monotonic() - started >= T_CE
    assert sr(flash) & (BUSY | WEL) == 0


def test_commands_ignored_while_busy(flash):
    wren(flash)
    flash.transfer(b"\xc7", 0)
    assert read(flash, 0, 4) == b"\xff" * 4
    assert flash.transfer(b"\x9f", 3) == b"\xff" * 3
    assert sr(flash, 0x35) == 0 and sr(flash) & BUSY  # the status registers still answer
    wren(flash)  # ignored: BUSY
    wait_ready(flash)
    assert not sr(flash) & WEL
    flash.transfer(b"\x02" + addr(0) + b"\x00", 0)  # so no WEL for this
    assert read(flash, 0, 1) == b"\xff"


def test_unknown_and_truncated_commands_are_ignored(flash):
    before = read(flash, 0, 16)
    assert flash.transfer(b"\x4b\x00\x00\x00\x00", 4) == b"\xff" * 4  # unique id: not modelled
    wren(flash)
    flash.transfer(b"\x20\x00\x00", 0)  # erase cut short before the last address byte
    assert read(flash, 0, 16) == before and sr(flash) & WEL


def test_deep_power_down(flash):
    flash.transfer(b"\xb9", 0)
    assert flash.transfer(b"\x9f", 3) == b"\xff" * 3
    assert sr(flash) == 0xFF
    assert flash.transfer(b"\xab\x00\x00\x00", 1) == b"\x14"
    assert flash.transfer(b"\x9f", 3) == bytes.fromhex("c86015")


PROTECTION_CASES = [  # (SR1, SR2) -> [start, end) protected
    (0x00, 0x00, 0, 0),
    (0x04, 0x00, 0x1F0000, SIZE),  # BP0: upper 1/32
    (0x08, 0x00, 0x1E0000, SIZE),  # BP1: upper 1/16
    (0x14, 0x00, 0x100000, SIZE),  # BP2 BP0: upper 1/2
    (0x24, 0x00, 0, 0x10000),  # BP3 BP0: lower 1/32
    (0x34, 0x00, 0, 0x100000),  # BP3 BP2 BP0: lower 1/2
    (0x18, 0x00, 0, SIZE),  # BP2 BP1: all
    (0x58, 0x00, 0, SIZE),  # BP4 BP2 BP1: all too (the table's "X X 1 1 X" row)
    (0x44, 0x00, 0x1FF000, SIZE),  # BP4 BP0: top 4 KiB
    (0x4C, 0x00, 0x1FC000, SIZE),  # BP4 BP1 BP0: top 16 KiB
    (0x54, 0x00, 0x1F8000, SIZE),  # BP4 BP2 BP0: top 32 KiB
    (0x64, 0x00, 0, 0x1000),  # BP4 BP3 BP0: bottom 4 KiB
    (0x70, 0x00, 0, 0x8000),  # BP4 BP3 BP2: bottom 32 KiB
]


@pytest.mark.parametrize("sr1, sr2, start, end", PROTECTION_CASES)
def test_protection_table(flash, sr1, sr2, start, end):
    write_status(flash, sr1, sr2)
    assert sr(flash) == sr1 and sr(flash, 0x35) == sr2
    for address in (0, 0xFFF, 0x1000, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0xFFFFF, 0x100000, 0x1EFFFF, 0x1F0000,
                    0x1F7FFF, 0x1F8000, 0x1FBFFF, 0x1FC000, 0x1FEFFF, 0x1FF000, SIZE - 1):
        assert flash.protected(address) == (start <= address < end), hex(address)
        # CMP protects exactly the complement
    write_status(flash, sr1, sr2 | CMP)
    assert all(flash.protected(a) == (not start <= a < end) for a in (0, 0x10000, 0x1F0000, 0x1FF000, SIZE - 1))


def test_cmp_with_bp_zero_protects_everything(flash):
    write_status(flash, 0x00, CMP)
    assert all(flash.protected(a) for a in range(0, SIZE, SECTOR_SIZE))
    write_status(flash, 0x04, CMP)  # CMP with BP0: all but the upper 64 KiB
    assert flash.protected(0x1EFFFF) and not flash.protected(0x1F0000)


def test_protected_program_and_erase_do_nothing(flash):
    image = default_image()
    write_status(flash, 0x04, 0x00)  # upper 64 KiB
    for command in (b"\x20" + addr(0x1F8000), b"\x52" + addr(0x1F0000), b"\xd8" + addr(0x1FFFFF), b"\xc7",
                    b"\x02" + addr(0x1FFF00) + b"\0"):
        wren(flash)
        flash.transfer(command, 0)
        assert sr(flash) & (BUSY | WEL) == 0  # refused at once, WEL cleared
    assert read(flash, 0x1F0000, 0x10000) == image[0x1F0000:]
    erase(flash, 0x20, 0x1EF000)  # just below the protected range
    assert read(flash, 0x1EF000, SECTOR_SIZE) == b"\xff" * SECTOR_SIZE
    write_status(flash, 0x44, 0x00)  # top 4 KiB
    erase(flash, 0x52, 0x1F8000)  # 32 KiB reaching into it: refused as a whole
    assert read(flash, 0x1F8000, 16) == image[0x1F8000:0x1F8010]
    erase(flash, 0x20, 0x1FE000)
    assert read(flash, 0x1FE000, SECTOR_SIZE) == b"\xff" * SECTOR_SIZE


def test_cmp_fault_and_clearing_it(path):
    image = default_image()
    with SPIFlash(path, fault="cmp") as flash:
        assert sr(flash, 0x35) == CMP
        erase(flash, 0x20, 0)
        assert read(flash, 0, 16) == image[:16]  # the whole array is protected
        write_status(flash, sr(flash) & 0xFC, sr(flash, 0x35) & ~CMP & 0xFF)
        assert sr(flash, 0x35) & CMP == 0 and not flash.protected(0)
        erase(flash, 0x20, 0)
        assert read(flash, 0, 16) == b"\xff" * 16
    with SPIFlash(path) as flash:  # cleared for good
        assert sr(flash, 0x35) == 0


def test_status_registers_persist(path, monkeypatch):
    monkeypatch.setattr(spiflash, "T_W", 0.05)  # long enough to see BUSY on any machine
    sidecar = path.with_name(path.name + ".sr")
    with SPIFlash(path) as flash:
        assert not sidecar.exists() and [sr(flash, op) for op in (0x05, 0x35, 0x15)] == [0, 0, 0]
        wren(flash)
        flash.transfer(b"\x01\xff\xff", 0)  # WRSR sets BUSY for tW
        assert sr(flash) & BUSY
        wait_ready(flash)
        assert sr(flash) == 0xFC and sr(flash, 0x35) == 0x7B  # BUSY, WEL, S10 and SUS are read-only
        write_status(flash, 0x00, 0x00)
        assert sr(flash, 0x35) == 0x38  # LB1..LB3 are one-time programmable
        wren(flash)
        flash.transfer(b"\x11\xff", 0)
        wait_ready(flash)
        assert sr(flash, 0x15) == 0x60  # DRV1, DRV0
        wren(flash)
        flash.transfer(b"\x31\x02", 0)  # WRSR2 alone: QE
        wait_ready(flash)
        assert sr(flash, 0x35) == 0x3A and sr(flash) == 0x00
    assert sidecar.read_bytes() == bytes((0x00, 0x3A, 0x60))
    with SPIFlash(path) as flash:
        assert [sr(flash, op) for op in (0x05, 0x35, 0x15)] == [0x00, 0x3A, 0x60]


def test_volatile_status_write_does_not_persist(path):
    sidecar = path.with_name(path.name + ".sr")
    with SPIFlash(path) as flash:
        flash.transfer(b"\x50", 0)
        assert not sr(flash) & WEL  # 50h does not set WEL
        flash.transfer(b"\x50", 0)
        flash.transfer(b"\x01\x1c", 0)
        assert sr(flash) == 0x1C  # at once, no BUSY
        assert flash.protected(0)
        flash.transfer(b"\x01\x00", 0)  # 50h covers one write only
        assert sr(flash) == 0x1C
    assert not sidecar.exists()
    with SPIFlash(path) as flash:
        assert sr(flash) == 0 and not flash.protected(0)


def test_sfdp(flash):
    space = flash.transfer(b"\x5a" + addr(0) + b"\x00", 256)
    assert space[:4] == b"SFDP" and space[4:6] == b"\x00\x01" and space[6] == 0  # rev 1.0, one parameter header
    assert space[8:12] == bytes((0x00, 0x00, 0x01, 9))  # JEDEC basic flash parameter table v1.0, 9 dwords
    table = int.from_bytes(space[12:15], "little")
    dwords = struct.unpack("<9I", space[table:table + 36])
    assert dwords[0] & 0x3 == 0x1 and (dwords[0] >> 8) & 0xFF == 0x20  # 4 KiB erase by 20h
    assert (dwords[0] >> 17) & 0x3 == 0  # 3-byte addresses only
    assert dwords[1] == 0x00FFFFFF  # 16 Mbit
    assert struct.unpack("8B", struct.pack("<2I", dwords[7], dwords[8]))[:6] == (12, 0x20, 15, 0x52, 16, 0xD8)
    assert space[0x10:table] == b"\xff" * (table - 0x10) and space[table + 36:] == b"\xff" * (256 - table - 36)
    # the Navi31 controller sends the address only: the dummy byte is clocked during rx
    assert flash.transfer(b"\x5a" + addr(0), 5) == b"\xffSFDP"


def test_power_loss_during_erase(path):
    image = default_image()
    with SPIFlash(path, fault="power-loss:erase:sector=18") as flash:
        erase(flash, 0x20, 0x1000)  # another sector: fine
        wren(flash)
        with pytest.raises(PowerLoss, match="sector 18"):
            flash.transfer(b"\xd8" + addr(0x10000), 0)  # 64 KiB block 1 = sectors 16..31
        with pytest.raises(PowerLoss):
            flash.transfer(b"\x05", 1)
    assert not issubclass(PowerLoss, Error)
    with SPIFlash(path) as flash:  # power back: the damage is in the file
        half = SECTOR_SIZE // 2
        assert read(flash, 0x10000, 2 * SECTOR_SIZE) == b"\xff" * (2 * SECTOR_SIZE)  # reached before sector 18
        assert read(flash, 0x12000, half) == b"\xff" * half
        assert read(flash, 0x12000 + half, half) == image[0x12000 + half:0x13000]
        assert read(flash, 0x13000, 0xD000) == image[0x13000:0x20000]
        assert sr(flash) & (BUSY | WEL) == 0


def test_power_loss_during_program(path):
    with SPIFlash(path, fault="power-loss:program:sector=5") as flash:
        erase(flash, 0x20, 0x5000)
        program(flash, 0x4000, b"\x00" * 256)  # sector 4: fine
        wren(flash)
        with pytest.raises(PowerLoss, match="sector 5"):
            flash.transfer(b"\x02" + addr(0x5100) + bytes(range(256)), 0)
        with pytest.raises(PowerLoss):
            read(flash, 0, 1)
    with SPIFlash(path) as flash:
        assert read(flash, 0x5100, 256) == bytes(range(128)) + b"\xff" * 128
        assert read(flash, 0x4000, 256) == b"\x00" * 256


def test_stuck_busy(path):
    with SPIFlash(path, fault="stuck-busy") as flash:
        assert sr(flash) & BUSY
        wren(flash)
        time.sleep(T_CE)
        assert sr(flash) == BUSY  # still busy, and WREN was ignored
        assert read(flash, 0, 4) == b"\xff" * 4 and flash.transfer(b"\x9f", 3) == b"\xff" * 3


def test_jedec_override(path):
    with SPIFlash(path, fault="jedec=ef4015") as flash:
        assert flash.transfer(b"\x9f", 3) == bytes.fromhex("ef4015")


def test_several_faults(path):
    with SPIFlash(path, fault=" cmp , jedec=C86016 ,") as flash:
        assert flash.transfer(b"\x9f", 3) == bytes.fromhex("c86016") and sr(flash, 0x35) == CMP


@pytest.mark.parametrize("text", ["power-loss", "power-loss:erase:sector=512", "power-loss:write:sector=1",
                                  "jedec=c860", "jedec=xyzxyz", "stuck", "cmp,bogus"])
def test_bad_fault_text(path, text):
    with pytest.raises(Error, match="MOCKFLASH_FAULT item") as caught:
        SPIFlash(path, fault=text)
    bad = text.split(",")[-1]
    assert repr(bad) in str(caught.value)


def test_wrong_size_file(path):
    path.write_bytes(b"\xff" * 4096)
    with pytest.raises(Error) as caught:
        SPIFlash(path)
    message = str(caught.value)
    assert str(path) in message and "4096" in message and "2097152" in message


@pytest.fixture
def immutable(tmp_path):
    """A flash image the file system refuses to change (chattr +i), removed from it afterwards."""
    import subprocess

    image = tmp_path / "immutable.bin"
    image.write_bytes(default_image())
    if subprocess.run(["chattr", "+i", str(image)], capture_output=True).returncode:
        pytest.skip("chattr +i needs root and a file system with the immutable flag")
    yield image
    subprocess.run(["chattr", "-i", str(image)], check=True)


@pytest.mark.parametrize(("make", "says"), [
    (lambda t: t / "dir", "Is a directory"),
    (lambda t: t / "file.bin" / "flash.bin", "Not a directory"),
])
def test_a_path_that_cannot_hold_an_image_is_an_error(tmp_path, make, says):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file.bin").write_bytes(b"")
    path = make(tmp_path)
    with pytest.raises(Error, match=says) as caught:
        SPIFlash(path)
    assert str(tmp_path) in str(caught.value) and "2097152-byte file" in str(caught.value)


def test_an_immutable_image_is_an_error(immutable):
    with pytest.raises(Error, match="Operation not permitted") as caught:
        SPIFlash(immutable)
    assert str(immutable) in str(caught.value)


def test_a_missing_folder_is_made(tmp_path):
    with SPIFlash(tmp_path / "a" / "b" / "rom.bin") as flash:
        assert read(flash, 0, 4) == bytes.fromhex("aa55aa55")


def test_two_images_share_no_state(tmp_path):
    """A power cut on one chip leaves another on a different image answering, with its own array and status."""
    with SPIFlash(tmp_path / "a.bin", fault="power-loss:erase:sector=0") as a, \
            SPIFlash(tmp_path / "b.bin", fault="cmp") as b:
        wren(a)
        with pytest.raises(PowerLoss):
            a.transfer(b"\x20" + addr(0), 0)
        assert sr(b, 0x35) == CMP and read(b, 0, 8) == default_image()[:8]
        write_status(b, 0, 0)
        erase(b, 0x20, 0x1000)
        assert read(b, 0x1000, 4) == b"\xff" * 4
    assert (tmp_path / "a.bin").read_bytes()[0x1000:0x2000] == default_image()[0x1000:0x2000]
