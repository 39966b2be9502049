"""The usergpu command line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import usergpu
from usergpu.drivers import devices
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

    monkeypatch.setattr(devices, "find", broken)
    assert cli.main(["devices"], HAL(tmp_path)) == 1
    assert capsys.readouterr().err == "error: sysfs is not mounted\n"


def test_usage_error_exits_2():
    with pytest.raises(SystemExit) as e:
        cli.main(["nonsense"])
    assert e.value.code == 2


def test_devices_json_composes_with_mock(capsys, monkeypatch):
    monkeypatch.setenv("MOCKGPU_ARCH", "gfx1200")
    monkeypatch.setenv("MOCKGPU_COUNT", "2")
    assert cli.main(["devices", "--json", "--mock"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["arch"] for d in doc["devices"]] == ["gfx1200", "gfx1200"] and "MOCKKFD+AMD" in doc["mock_interfaces"]


def test_help_lists_every_command_with_the_help_line_it_defines_itself_with():
    listed = {a.dest: a.help for a in _subcommands(cli.parser(["--help"]))._choices_actions}
    assert listed == {name: line for name, (line, _) in cli.COMMANDS.items()}
    for name, (line, _) in cli.COMMANDS.items():  # defined in full (prof and smi by their own modules): same line
        own = {a.dest: a.help for a in _subcommands(cli.parser([name]))._choices_actions}
        assert own[name] == line, name


def _subcommands(parser):
    return next(a for a in parser._actions if a.dest == "command")


def loaded(argv: list[str]) -> set[str]:
    """The modules a fresh process has imported once `usergpu ARGV` is done."""
    code = ("import contextlib, io, json, sys\n"
            "from usergpu.tools.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n"
            f"        main({argv!r})\n"
            "    except SystemExit:\n"
            "        pass\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


HEAVY = ("numpy", "usergpu.runtime", "usergpu.emu.amd.mock", "usergpu.emu.amd.exec", "usergpu.isa.amd.codeobj",
         "usergpu.drivers", "usergpu.autogen.regs_", "tabulate")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["nonsense"]], ids=" ".join)
def test_version_and_help_load_no_subcommand(argv):
    ours = {m for m in loaded(argv) if m.startswith("usergpu")}
    assert ours == {"usergpu", "usergpu.errors", "usergpu.tools", "usergpu.tools.cli", "usergpu.tools.common"}


def test_disasm_hex_loads_the_isa_and_one_arch_table_only():
    mods = loaded(["disasm", "--hex", "7e0082be", "--arch", "gfx1100"])
    assert "usergpu.isa.amd" in mods and "usergpu.autogen.isa_gfx1100" in mods
    assert not {m for m in mods if m.startswith(("usergpu.autogen.isa_gfx1200", "usergpu.autogen.isa_gfx9"))}
    assert not {m for m in mods if m.startswith(HEAVY)}
