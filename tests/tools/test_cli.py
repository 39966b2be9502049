"""The usergpu command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import usergpu
from usergpu.drivers.hal import HAL
from usergpu.tools import cli

NAVI31_NODE = "gfx_target_version 110000\nlocation_id 768\ndomain 0\n"


def test_version():
    out = subprocess.run([sys.executable, "-m", "usergpu.tools.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"usergpu {usergpu.__version__}"


def test_devices_table_and_json(sysfs, capsys):
    hal = sysfs([("0000:03:00.0", 0x1002, 0x744C, 0x030000, "amdgpu")], [("1", NAVI31_NODE)])
    assert cli.main(["devices"], hal) == 0
    out = capsys.readouterr().out
    assert "0000:03:00.0" in out and "gfx1100" in out and "amdgpu" in out
    assert "mock interfaces:" in out
    assert cli.main(["devices", "--json"], hal) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["devices"][0]["arch"] == "gfx1100" and doc["devices"][0]["device_id"] == 0x744C


def test_devices_with_none_found_is_not_an_error(tmp_path, capsys):
    assert cli.main(["devices"], HAL(tmp_path)) == 0
    assert "no AMD or NVIDIA GPU found" in capsys.readouterr().out


def test_expected_error_prints_one_line_and_exits_1(tmp_path, capsys, monkeypatch):
    def broken(hal):
        raise usergpu.Error("sysfs is not mounted")

    monkeypatch.setattr(cli.devices, "find", broken)
    assert cli.main(["devices"], HAL(tmp_path)) == 1
    assert capsys.readouterr().err == "error: sysfs is not mounted\n"


def test_usage_error_exits_2():
    with pytest.raises(SystemExit) as e:
        cli.main(["nonsense"])
    assert e.value.code == 2
