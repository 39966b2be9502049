"""amdflash against the mock Navi31 board, over the mock USB bridge and as a native PCI function: a rescue session,
power cuts mid-flash, write protection, and every refusal leaving the flash as it was."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from usergpu.drivers.amd.romsw import SECTOR, SIZE
from usergpu.emu.amd.mock.spiflash import default_image
from usergpu.tools import amdflash

TRANSPORTS = ("MOCKUSB+AMD", "MOCKPCI+AMD")


@pytest.fixture
def board(tmp_path, monkeypatch):
    """The flash file of a fresh mock board (created on first use), no faults."""
    image = tmp_path / "flash.bin"
    monkeypatch.setenv("MOCKFLASH_IMAGE", str(image))
    for var in ("MOCKFLASH_FAULT", "MOCKFLASH_GATED"):
        monkeypatch.delenv(var, raising=False)
    return image


def run(dev, *argv, capsys=None):
    status = amdflash.main(["--dev", dev, *argv])
    out = capsys.readouterr() if capsys else None
    return status, out


def new_image(seed: int) -> bytes:
    """A random image with the magic, blank pages and a blank sector, like a real one."""
    data = np.random.default_rng(seed).integers(0, 256, SIZE, np.uint8)
    data[:4] = [0xAA, 0x55, 0xAA, 0x55]
    data[5 * SECTOR : 6 * SECTOR] = 0xFF
    data[9 * SECTOR + 512 : 9 * SECTOR + 1024] = 0xFF
    return data.tobytes()


def flash_bytes(board) -> bytes:
    return board.read_bytes() if board.exists() else default_image()


@pytest.mark.parametrize("dev", TRANSPORTS)
def test_rescue_session(dev, board, tmp_path, capsys):
    before = tmp_path / "before.bin"
    assert run(dev, "romless", "dump", str(before), capsys=capsys)[0] == 0
    assert before.read_bytes() == default_image()
    image = tmp_path / "new.bin"
    image.write_bytes(new_image(1))
    status, out = run(dev, "romless", "flash", str(image), "--yes", capsys=capsys)
    assert status == 0, out.err
    assert "512 written" in out.out or "511 written" in out.out
    status, out = run(dev, "romless", "verify", str(image), capsys=capsys)
    assert status == 0 and hashlib.sha256(image.read_bytes()).hexdigest() in out.out
    after = tmp_path / "after.bin"
    assert run(dev, "romless", "dump", str(after), capsys=capsys)[0] == 0
    assert after.read_bytes() == image.read_bytes() == board.read_bytes()


@pytest.mark.parametrize("dev", TRANSPORTS)
@pytest.mark.parametrize("step", ["erase", "program"])
def test_power_loss_then_resume(dev, step, board, tmp_path, monkeypatch, capsys):
    image = tmp_path / "new.bin"
    image.write_bytes(new_image(2))
    first = 30  # flash a range around the damaged sector to keep the test short
    monkeypatch.setenv("MOCKFLASH_FAULT", f"power-loss:{step}:sector=37")
    status, out = run(dev, "romless", "flash", str(image), "--start-sector", str(first), "--sector-count", "20",
                      "--yes", capsys=capsys)
    assert status == 1 and out.err.startswith("error: ") and out.err.count("\n") == 1
    assert "resume with --start-sector 37 --sector-count 13" in out.err
    damaged = board.read_bytes()[37 * SECTOR : 38 * SECTOR]
    assert damaged != image.read_bytes()[37 * SECTOR : 38 * SECTOR]  # partly erased or programmed
    monkeypatch.delenv("MOCKFLASH_FAULT")
    status, out = run(dev, "romless", "flash", str(image), "--start-sector", "37", "--sector-count", "13", "--yes",
                      capsys=capsys)
    assert status == 0, out.err
    got = board.read_bytes()
    assert got[first * SECTOR : 50 * SECTOR] == image.read_bytes()[first * SECTOR : 50 * SECTOR]
    assert got[50 * SECTOR :] == default_image()[50 * SECTOR :]


@pytest.mark.parametrize("dev", TRANSPORTS)
def test_cmp_needs_clear_cmp(dev, board, tmp_path, monkeypatch, capsys):
    image = tmp_path / "new.bin"
    image.write_bytes(new_image(3))
    monkeypatch.setenv("MOCKFLASH_FAULT", "cmp")
    status, out = run(dev, "romless", "flash", str(image), "--sector-count", "2", "--yes", capsys=capsys)
    assert status == 1 and "SR2.CMP is set" in out.err and "--clear-cmp" in out.err
    assert board.read_bytes() == default_image()
    monkeypatch.delenv("MOCKFLASH_FAULT")
    status, out = run(dev, "romless", "info", capsys=capsys)
    assert "CMP=1" in out.out  # the bit persists, as a non-volatile status bit does
    status, out = run(dev, "romless", "flash", str(image), "--sector-count", "2", "--clear-cmp", "--yes",
                      capsys=capsys)
    assert status == 0, out.err
    assert board.read_bytes()[: 2 * SECTOR] == image.read_bytes()[: 2 * SECTOR]
    assert "CMP=0" in run(dev, "romless", "info", capsys=capsys)[1].out


@pytest.mark.parametrize("dev", TRANSPORTS)
@pytest.mark.parametrize(("setup", "argv", "message"), [
    ({}, ["romless", "flash", "{short}", "--yes"], "exactly 2097152 bytes"),
    ({}, ["romless", "flash", "{image}"], "add --yes"),
    ({}, ["romless", "flash", "{image}", "--start-sector", "510", "--sector-count", "5", "--yes"], "sectors 0..511"),
    ({"MOCKFLASH_FAULT": "jedec=EF4015"}, ["romless", "flash", "{image}", "--yes"], "JEDEC id EF 40 15"),
    ({"MOCKFLASH_GATED": "1"}, ["romless", "flash", "{image}", "--yes"], "ROM_SW engine is gated"),
    ({"MOCKFLASH_FAULT": "stuck-busy"}, ["romless", "info"], "stayed busy"),
    ({}, ["fw", "ifwi-all", "{image}"], "add --yes"),
    ({}, ["fw", "flash", "{image}"], "disabled"),
    ({}, ["romless", "--prescale", "16", "info"], "0..15"),
])
def test_refusals_leave_the_flash_alone(dev, setup, argv, message, board, tmp_path, monkeypatch, capsys):
    (tmp_path / "short.bin").write_bytes(bytes(SIZE - 1))
    (tmp_path / "image.bin").write_bytes(new_image(4))
    for k, v in setup.items():
        monkeypatch.setenv(k, v)
    before = flash_bytes(board)
    argv = [a.format(short=tmp_path / "short.bin", image=tmp_path / "image.bin") for a in argv]
    status, out = run(dev, *argv, capsys=capsys)
    assert status == 1 and message in out.err and out.err.startswith("error: ") and out.err.count("\n") == 1
    assert flash_bytes(board) == before


@pytest.mark.parametrize("dev", TRANSPORTS)
@pytest.mark.parametrize(("damage", "message"), [
    (lambda d: d[: SIZE // 2] * 2, "halves are identical"),
    (lambda d: b"\xff" * 4 + d[4:], "no AA 55 AA 55 magic"),
])
def test_fw_dump_refuses_a_bad_read(dev, damage, message, board, tmp_path, capsys):
    board.write_bytes(damage(default_image()))
    status, out = run(dev, "fw", "dump", str(tmp_path / "d.bin"), capsys=capsys)
    assert status == 1 and message in out.err
    assert not (tmp_path / "d.bin").exists()


@pytest.mark.parametrize("dev", TRANSPORTS)
def test_fw_probe_dump_and_ifwi_all(dev, board, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MOCKFLASH_GATED", "1")
    status, out = run(dev, "fw", "probe", capsys=capsys)
    assert status == 0 and "SPI model id" in out.out and "response 0x00c86015" in out.out
    assert "error 0x0000" in out.out
    image = tmp_path / "new.bin"
    image.write_bytes(new_image(5))
    status, out = run(dev, "fw", "ifwi-all", str(image), "--yes", capsys=capsys)
    assert status == 0 and "took 19 items" in out.out and "hard power cycle" in out.out
    assert board.read_bytes() == image.read_bytes()
    status, out = run(dev, "fw", "dump", str(tmp_path / "d.bin"), capsys=capsys)
    assert status == 0 and (tmp_path / "d.bin").read_bytes() == image.read_bytes()


@pytest.mark.parametrize("dev", TRANSPORTS)
def test_read_prints_or_saves_bytes(dev, board, tmp_path, capsys):
    status, out = run(dev, "romless", "read", "0x100", "32", capsys=capsys)
    image = default_image()
    assert status == 0 and f"000100  {image[0x100:0x110].hex(' ')}" in out.out
    assert hashlib.sha256(image[0x100:0x120]).hexdigest() in out.out
    assert run(dev, "romless", "read", "0x1000", "0x2000", "-o", str(tmp_path / "r.bin"), capsys=capsys)[0] == 0
    assert (tmp_path / "r.bin").read_bytes() == image[0x1000:0x3000]
    status, out = run(dev, "romless", "read", "0x1ff000", "0x2000", capsys=capsys)
    assert status == 1 and "the flash is 0x200000 bytes" in out.err


def test_fw_dump_restores_the_controller_and_refuses_a_dead_board(tmp_path):
    from usergpu.autogen._bar5 import PAGE_MIRROR_CNTL, ROM_CNTL, ROM_INDEX
    from usergpu.drivers.amd.pspboot import PSPBoot
    from usergpu.drivers.amd.romsw import FlashError
    from usergpu.drivers.hal import MockHAL
    from usergpu.drivers.pci import pci_devices
    from usergpu.emu.amd.mock.board import Navi31Board, install

    hal = MockHAL(tmp_path / "root")
    board = Navi31Board(tmp_path / "flash.bin", fault="", gated=True)
    install(hal, board)
    regs = pci_devices(hal, 0x1002)[0].map_bar(5)
    state = {ROM_CNTL: 0x0A000002, PAGE_MIRROR_CNTL: 0x123, ROM_INDEX: 0x4440}
    for r, v in state.items():
        regs.write32(r, v)
    assert PSPBoot(regs).dump() == default_image()
    assert {r: regs.read32(r) for r in state} == state
    board.dead = True
    with pytest.raises(FlashError, match="reading ROM_CNTL: BAR5 reads all ones"):
        PSPBoot(regs).dump()
