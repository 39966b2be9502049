"""amdflash against the mock Navi31 board, over the mock USB bridge and as a native PCI function: a rescue session,
power cuts mid-flash, write protection, and every refusal leaving the flash as it was."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from usergpu.drivers.amd.romsw import SECTOR, SIZE
from usergpu.emu.amd.mock.flash.spiflash import default_image
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


def resume_argv(err: str, after: str = "resume with") -> list[str]:
    """The amdflash command an error line says to resume with, as main's argv."""
    found = re.search(after + r" `amdflash ([^`]*)`", err)
    assert found, f"no `{after}` command in {err!r}"
    return shlex.split(found[1])


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
    assert "sectors 30..36 hold the image" in out.err
    argv = resume_argv(out.err)
    assert argv == ["--dev", dev, "romless", "flash", str(image), "--start-sector", "37", "--sector-count", "13",
                    "--yes"]
    damaged = board.read_bytes()[37 * SECTOR : 38 * SECTOR]
    assert damaged != image.read_bytes()[37 * SECTOR : 38 * SECTOR]  # partly erased or programmed
    monkeypatch.delenv("MOCKFLASH_FAULT")
    status = amdflash.main(argv)
    out = capsys.readouterr()
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
    ({"MOCKFLASH_FAULT": "cmp", "MOCKFLASH_GATED": "1"}, ["fw", "ifwi-all", "{image}", "--yes"], "write-protected"),
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
    assert status == 0 and "took 19 items" in out.out and "read back" in out.out and "hard power cycle" in out.out
    assert board.read_bytes() == image.read_bytes()


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
    from usergpu.drivers.amd.pspboot import PSPBoot
    from usergpu.drivers.amd.romsw import FlashError
    from usergpu.drivers.pci import pci_devices
    from usergpu.emu.amd.mock.flash.board import Navi31Board, install
    from usergpu.emu.mock.hal import MockHAL
    from usergpu.isa.amd.hw.bar5 import PAGE_MIRROR_CNTL, ROM_CNTL, ROM_INDEX

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


def test_ifwi_all_on_a_protected_flash_fails_and_says_why(board, tmp_path, monkeypatch, capsys):
    """SR2.CMP makes every erase and program a no-op; the firmware still reports each item written."""
    image = tmp_path / "new.bin"
    image.write_bytes(new_image(7))
    monkeypatch.setenv("MOCKFLASH_FAULT", "cmp")
    monkeypatch.setenv("MOCKFLASH_GATED", "1")
    status, out = run("MOCKPCI+AMD", "fw", "ifwi-all", str(image), "--yes", capsys=capsys)
    assert status == 1 and out.out == "" and out.err.count("\n") == 1
    assert re.search(r"item 0 \(4 KiB at 0x000000\), which the firmware reported written, read back wrong at "
                     r"0x0000[0-9a-f]{2}: expected 0x[0-9a-f]{2}, got 0x[0-9a-f]{2}", out.err), out.err
    assert "write-protected flash (SR1.BP or SR2.CMP set" in out.err and "no item was written" in out.err
    assert board.read_bytes() == default_image()


def test_start_sector_alone_flashes_to_the_end(board, tmp_path, capsys):
    data = new_image(8)
    image = tmp_path / "new.bin"
    image.write_bytes(data)
    status, out = run("MOCKPCI+AMD", "romless", "flash", str(image), "--start-sector", "500", "--yes", capsys=capsys)
    assert status == 0 and "sectors 500..511: 12 written" in out.out, out.err
    assert board.read_bytes() == default_image()[: 500 * SECTOR] + data[500 * SECTOR :]


def test_power_loss_during_ifwi_all_says_how_to_resume(board, tmp_path, monkeypatch, capsys):
    """The firmware is left mid-transfer; after a power cycle the SPI engine finishes from the first item not
    written (a firmware that boots no more leaves it free)."""
    data = new_image(9)
    image = tmp_path / "new.bin"
    image.write_bytes(data)
    monkeypatch.setenv("MOCKFLASH_FAULT", "power-loss:program:sector=420")  # in the last item, sectors 416..511
    monkeypatch.setenv("MOCKFLASH_GATED", "1")
    status, out = run("MOCKPCI+AMD", "fw", "ifwi-all", str(image), "--yes", capsys=capsys)
    assert status == 1 and out.err.count("\n") == 1
    assert "BAR5 reads all ones" in out.err and "18 items are written and read back, sector 416" in out.err
    assert f"or redo `amdflash --dev MOCKPCI+AMD fw ifwi-all {image} --yes`" in out.err
    argv = resume_argv(out.err)
    assert argv == ["--dev", "MOCKPCI+AMD", "romless", "flash", str(image), "--start-sector", "416", "--yes"]
    assert board.read_bytes()[: 416 * SECTOR] == data[: 416 * SECTOR]
    monkeypatch.delenv("MOCKFLASH_FAULT")
    monkeypatch.delenv("MOCKFLASH_GATED")
    assert amdflash.main(argv) == 0, capsys.readouterr().err
    assert board.read_bytes() == data


@pytest.mark.parametrize("dev", TRANSPORTS)
def test_boards_on_different_images_share_no_state(dev, tmp_path, monkeypatch, capsys):
    """One after the other in a process, as MOCKFLASH_IMAGE says: a power loss on the first leaves the second
    whole."""
    data = new_image(10)
    image = tmp_path / "new.bin"
    image.write_bytes(data)
    monkeypatch.setenv("MOCKFLASH_IMAGE", str(tmp_path / "a.bin"))
    monkeypatch.setenv("MOCKFLASH_FAULT", "power-loss:erase:sector=1")
    assert run(dev, "romless", "flash", str(image), "--sector-count", "3", "--yes", capsys=capsys)[0] == 1
    monkeypatch.setenv("MOCKFLASH_IMAGE", str(tmp_path / "b.bin"))
    monkeypatch.delenv("MOCKFLASH_FAULT")
    status, out = run(dev, "romless", "flash", str(image), "--sector-count", "3", "--yes", capsys=capsys)
    assert status == 0 and "3 written" in out.out, out.err
    assert (tmp_path / "b.bin").read_bytes()[: 3 * SECTOR] == data[: 3 * SECTOR]
    assert (tmp_path / "a.bin").read_bytes()[SECTOR : 2 * SECTOR] != data[SECTOR : 2 * SECTOR]


def test_two_boards_in_one_machine_share_no_state(tmp_path, capsys):
    """Two mock boards as two PCI functions of one machine, each on its own image: --device picks one, a power
    loss on board 0 leaves board 1 answering under its number, and a third is not there."""
    from usergpu.emu.amd.mock.flash.board import Navi31Board, install
    from usergpu.emu.mock.hal import MockHAL

    data = new_image(11)
    image = tmp_path / "new.bin"
    image.write_bytes(data)
    hal = MockHAL(tmp_path / "root")
    install(hal, Navi31Board(tmp_path / "a.bin", fault="power-loss:erase:sector=1", gated=False), "0000:0b:00.0")
    install(hal, Navi31Board(tmp_path / "b.bin", fault="", gated=False), "0000:0c:00.0")
    flash = ["romless", "flash", str(image), "--sector-count", "3", "--yes"]
    assert amdflash.main(["--transport", "pci", *flash], hal) == 1
    assert "resume with `amdflash --transport pci romless flash" in capsys.readouterr().err
    assert amdflash.main(["--transport", "pci", "--device", "1", *flash], hal) == 0, capsys.readouterr().err
    assert (tmp_path / "b.bin").read_bytes()[: 3 * SECTOR] == data[: 3 * SECTOR]
    assert amdflash.main(["--transport", "pci", "romless", "info"], hal) == 1  # board 0 is still board 0, dead
    assert "BAR5 reads all ones" in capsys.readouterr().err
    assert amdflash.main(["--transport", "pci", "--device", "2", "romless", "info"], hal) == 1
    assert "--device 2: 2 Navi31 boards over PCI (2 PCI, 0 behind USB bridges)" in capsys.readouterr().err


def test_mock_boards_remove_their_folders(tmp_path):
    """Each run of a mock board makes a sysfs folder in $TMPDIR; none is left once the process ends, whether the
    command worked or failed."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    runs = [["--dev", "MOCKPCI+AMD", "romless", "info"], ["--dev", "MOCKUSB+AMD", "romless", "info"],
            ["--dev", "MOCKPCI+AMD", "--device", "3", "romless", "info"]]
    code = f"from usergpu.tools.amdflash import main; print([main(a) for a in {runs!r}])"
    env = os.environ | {"TMPDIR": str(tmp), "MOCKFLASH_IMAGE": str(tmp_path / "flash.bin")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.splitlines()[-1] == "[0, 0, 1]", out.stderr
    assert list(tmp.glob("amdflash-mock-*")) == []


def spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "usergpu.tools.amdflash", *argv], env=os.environ | env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(board, data: bytes, sector: int, proc: subprocess.Popen, timeout: float = 180) -> None:
    """Until the flash file holds data's sector (the tool is writing), while proc runs."""
    deadline = time.monotonic() + timeout
    part = slice(sector * SECTOR, (sector + 1) * SECTOR)
    while not (board.exists() and board.read_bytes()[part] == data[part]):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"sector {sector} never written"
        time.sleep(0.01)


@pytest.mark.parametrize(("signals", "status", "verify"), [
    pytest.param([signal.SIGINT], 130, True, id="SIGINT"),
    pytest.param([signal.SIGTERM], 143, False, id="SIGTERM"),
    pytest.param([signal.SIGINT, signal.SIGINT], 130, False, id="SIGINT-twice"),
])
def test_a_signal_mid_flash_stops_cleanly_and_says_how_to_resume(signals, status, verify, board, tmp_path, capsys):
    """One signal: the sector being written is finished; a second: it is abandoned. Either way the command ends
    with one error line and 128 + the signal, and the printed command finishes the job (`verify` agrees; once, as
    it reads the whole flash)."""
    data = default_image()[: 448 * SECTOR] + new_image(12)[448 * SECTOR :]
    image = tmp_path / "new.bin"
    image.write_bytes(data)
    proc = spawn(["--dev", "MOCKPCI+AMD", "romless", "flash", str(image), "--start-sector", "448", "--yes"],
                 {"MOCKFLASH_IMAGE": str(board)})
    wait_for(board, data, 448, proc)
    for signo in signals:
        proc.send_signal(signo)
        time.sleep(0.005)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == status and out == "" and "Traceback" not in err, err
    assert err.startswith(f"error: interrupted by {signo.name}; ") and err.count("\n") == 1, err
    argv = resume_argv(err)
    start = int(argv[argv.index("--start-sector") + 1])
    assert argv == ["--dev", "MOCKPCI+AMD", "romless", "flash", str(image), "--start-sector", str(start), "--yes"]
    if len(signals) == 1:  # sector 448 was being written, so it is finished
        assert 448 < start < 512 and f"; sectors 448..{start - 1} hold the image (each read back): " in err
    flashed = board.read_bytes()
    assert flashed[: start * SECTOR] == data[: start * SECTOR]  # every sector before it whole
    after = (start + len(signals) - 1) * SECTOR  # one signal leaves the sector named untouched, two may not
    assert flashed[after:] == default_image()[after:]
    assert amdflash.main(argv) == 0, capsys.readouterr().err
    assert board.read_bytes() == data
    if verify:
        assert amdflash.main(["--dev", "MOCKPCI+AMD", "romless", "verify", str(image)]) == 0
        assert "verified: the flash holds the image" in capsys.readouterr().out


def test_a_signal_mid_ifwi_all_stops_after_the_item_and_says_how_to_resume(board, tmp_path, capsys):
    data = new_image(13)[: 64 * SECTOR] + default_image()[64 * SECTOR :]  # so that the resume has little to do
    image = tmp_path / "new.bin"
    image.write_bytes(data)
    proc = spawn(["--dev", "MOCKPCI+AMD", "fw", "ifwi-all", str(image), "--yes"],
                 {"MOCKFLASH_IMAGE": str(board), "MOCKFLASH_GATED": "1"})
    wait_for(board, data, 0, proc)  # item 0 is sector 0
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and out == "" and err.count("\n") == 1, err
    assert err.startswith("error: interrupted by SIGINT; ") and "power the board fully off and on" in err
    argv = resume_argv(err)
    start = int(argv[argv.index("--start-sector") + 1])
    assert f"items are written and read back, sector {start} is the first not written" in err
    assert board.read_bytes()[: start * SECTOR] == data[: start * SECTOR]
    assert amdflash.main(argv) == 0, capsys.readouterr().err  # the firmware no longer gates the engine
    assert board.read_bytes() == data
