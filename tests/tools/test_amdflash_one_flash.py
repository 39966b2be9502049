"""A mock Navi31 board has one SPI flash, whichever transport (MOCKPCI+AMD, MOCKUSB+AMD) and whichever path (the
ROM_SW engine of `romless`, the ROM_INDEX/ROM_DATA window `fw dump` reads) reaches it: what `romless flash` wrote
over one transport, `fw dump` reads back byte for byte over both, after the firmware booted (it then owns ROM_SW,
not the read window)."""

from __future__ import annotations

import numpy as np

from usergpu.drivers.amd.romsw import SECTOR
from usergpu.emu.amd.mock.flash.spiflash import default_image
from usergpu.tools import amdflash

WRITES = {"MOCKPCI+AMD": 0, "MOCKUSB+AMD": 300}  # each transport writes 4 sectors: the first half and the second
COUNT = 4


def test_romless_flash_over_either_transport_is_what_fw_dump_reads_over_both(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MOCKFLASH_IMAGE", str(tmp_path / "flash.bin"))
    monkeypatch.delenv("MOCKFLASH_FAULT", raising=False)
    image = np.frombuffer(default_image(), np.uint8).copy()
    for start in WRITES.values():
        image[start * SECTOR + 4 : (start + COUNT) * SECTOR] = np.random.default_rng(start).integers(
            0, 256, COUNT * SECTOR - 4, np.uint8)  # bytes 0..3 stay the AA 55 AA 55 magic
    assert (image != np.frombuffer(default_image(), np.uint8)).sum() > COUNT * SECTOR  # not what the board holds
    (path := tmp_path / "new.bin").write_bytes(image.tobytes())
    monkeypatch.setenv("MOCKFLASH_GATED", "0")
    for dev, start in WRITES.items():
        argv = ["--dev", dev, "romless", "flash", str(path), "--start-sector", str(start), "--sector-count", str(COUNT),
                "--yes"]
        assert amdflash.main(argv) == 0, capsys.readouterr().err
    monkeypatch.setenv("MOCKFLASH_GATED", "1")  # the firmware boots from the new image
    for dev in WRITES:
        assert amdflash.main(["--dev", dev, "fw", "dump", str(out := tmp_path / f"{dev}.bin")]) == 0, \
            capsys.readouterr().err
        assert out.read_bytes() == image.tobytes(), dev
