"""`usergpu mock -- CMD`: the command's Python finds tinygrad's mock seam as usergpu's (also inside a repository
whose own `test` package has a mockgpu), with DEV, MOCKGPU_ARCH, MOCKGPU_COUNT set; bad input is one error line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_errors import Case, check

USERGPU = Path(sys.executable).parent / "usergpu"
PROBE = ("import json, os, test.mockgpu.mockgpu as m, test.mockgpu.usb as u; "
         "print(json.dumps({'fileio': m.MockFileIOInterface.__module__, 'usb': u.MockUSB3.__module__, "
         "**{k: os.environ.get(k) for k in ('DEV', 'MOCKGPU_ARCH', 'MOCKGPU_COUNT', 'MOCKGPU', 'MOCKGPU_PARTITION', "
         "'MOCKGPU_NV_ARCH', 'MOCKGPU_NV_RELEASE', 'REMOTE') "
         "if k in os.environ}}))")


def mock(*args: str, cwd=None, env: dict | None = None) -> dict:
    """What the probe sees under usergpu mock: this environment without DEV and MOCKGPU*, plus env."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEV", "MOCKGPU"))} | (env or {})
    out = subprocess.run([str(USERGPU), "mock", *args, "--", sys.executable, "-c", PROBE], capture_output=True,
                         text=True, cwd=cwd, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_seam_is_usergpus_with_the_environment_set(tmp_path):
    got = mock("--arch", "gfx1200", "--count", "2", cwd=tmp_path)
    assert got == {"fileio": "usergpu.emu.mock.tinygrad.fileio", "usb": "usergpu.emu.mock.tinygrad.usb3",
                   "DEV": "MOCKKFD+AMD", "MOCKGPU_ARCH": "gfx1200", "MOCKGPU_COUNT": "2", "MOCKGPU": "1"}


def test_a_cdna_gpu_and_its_partitions(tmp_path):
    got = mock("--arch", "gfx942", "--partition", "CPX", cwd=tmp_path)
    assert (got["MOCKGPU_ARCH"], got["MOCKGPU_PARTITION"], got["DEV"]) == ("gfx942", "cpx", "MOCKKFD+AMD")


def test_the_nvidia_mock_takes_its_chip_and_release(tmp_path):
    got = mock("--dev", "mock+nv", "--arch", "sm_89", "--release", "570.211.01", cwd=tmp_path)
    assert (got["DEV"], got["MOCKGPU_NV_ARCH"], got["MOCKGPU_NV_RELEASE"]) == ("MOCK+NV", "sm_89", "570.211.01")
    assert "MOCKGPU_ARCH" not in got


def test_dev_is_kept_when_set_and_replaced_by_the_option(tmp_path):
    env = {"DEV": "MOCKKFD+AMD:LLVM"}
    assert mock(cwd=tmp_path, env=env)["DEV"] == "MOCKKFD+AMD:LLVM"
    assert mock("--dev", "mock+nv", cwd=tmp_path, env=env)["DEV"] == "MOCK+NV"


def test_mock_boards_are_the_commands_own_in_its_process(tmp_path):
    """MOCKPCI+AMD: DEV stays, and the boards live in a fresh MOCKPCI_DIR that is gone after the command."""
    script = "import os; print(os.environ['DEV'], os.environ['MOCKPCI_DIR'], 'REMOTE' in os.environ)"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEV", "MOCKGPU", "MOCKPCI"))}
    out = subprocess.run([str(USERGPU), "mock", "--dev", "MOCKPCI+AMD", "--", sys.executable, "-c", script],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    dev, folder, remote = out.stdout.split()
    assert out.returncode == 0 and (dev, remote) == ("MOCKPCI+AMD", "False") and not Path(folder).exists()


def test_mock_boards_are_served_over_remote_for_the_command(tmp_path):
    """MOCKPCI+AMD --remote: the command gets DEV=PCI+AMD (a renderer after it kept) and REMOTE naming a loopback
    server that exports the board; its exit status is the command's, and the server is gone after it."""
    got = mock("--arch", "gfx1200", "--remote", cwd=tmp_path, env={"DEV": "MOCKPCI+AMD:LLVM"})
    assert got["DEV"] == "PCI+AMD:LLVM" and got["REMOTE"].startswith("127.0.0.1:")
    script = ("import os, socket, struct; s = socket.create_connection(('127.0.0.1', int(os.environ['REMOTE']"
              ".split(':')[1]))); s.sendall(struct.pack('<BIIQQQ', 3, 0, 0, 2, 2, 0)); "
              "r = s.recv(17); print(os.environ['REMOTE'], hex(struct.unpack('<BQQ', r)[1])); raise SystemExit(3)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEV", "MOCKGPU"))}
    out = subprocess.run([str(USERGPU), "mock", "--dev", "MOCKPCI+AMD", "--arch", "gfx1200", "--remote", "--",
                          sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=60)
    address, device = out.stdout.split()
    assert out.returncode == 3 and device == "0x7590"  # the gfx1200 board's device id, from its config space
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", int(address.split(":")[1])), timeout=5)


def test_a_repository_test_package_does_not_win(tmp_path):
    """Inside tinygrad's repository its `test/mockgpu/mockgpu.py` would be found first; the hook's name wins, and
    the package's other modules still import from it."""
    pkg = tmp_path / "test" / "mockgpu"
    pkg.mkdir(parents=True)
    (tmp_path / "test" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "mockgpu.py").write_text("raise SystemExit('the repository mock was imported')\n")
    (pkg / "usb.py").write_text("raise SystemExit('the repository mock was imported')\n")
    (pkg / "helpers.py").write_text("WHERE = 'repository'\n")
    got = mock(cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    assert got["fileio"] == "usergpu.emu.mock.tinygrad.fileio"
    out = subprocess.run([str(USERGPU), "mock", "--", sys.executable, "-c",
                          "import test.mockgpu.helpers as h; print(h.WHERE)"], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert out.stdout.strip() == "repository", out.stderr


def test_another_sitecustomize_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import os\nos.environ['OTHER_SITE'] = 'ran'\n")
    out = subprocess.run([str(USERGPU), "mock", "--", sys.executable, "-c",
                          "import os; print(os.environ.get('OTHER_SITE'))"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert out.stdout.strip() == "ran", out.stderr


def test_the_exit_status_is_the_commands(tmp_path):
    out = subprocess.run([str(USERGPU), "mock", "--", sys.executable, "-c", "raise SystemExit(7)"], timeout=60)
    assert out.returncode == 7


MOCK = ["usergpu", "mock"]
CASES = [
    Case([*MOCK], "mock: no command given"),
    Case([*MOCK, "--"], "mock: no command given"),
    Case([*MOCK, "--", "no-such-command-anywhere"], "mock: no-such-command-anywhere: command not found"),
    Case([*MOCK, "--arch", "gfx9", "--", "true"],
         "'gfx9': the mock GPUs are gfx1100, gfx1200, gfx1201, gfx942, gfx950, sm_80, sm_86, sm_89, sm_90, sm_120", 2),
    Case([*MOCK, "--dev", "MOCK+NV", "--arch", "gfx1100", "--", "true"],
         "mock: MOCK+NV runs sm_80, sm_86, sm_89, sm_90, sm_120; --release is MOCK+NV's"),
    Case([*MOCK, "--release", "570.211.01", "--", "true"],
         "mock: MOCKKFD+AMD runs gfx1100, gfx1200, gfx1201, gfx942, gfx950; --release is MOCK+NV's"),
    Case([*MOCK, "--partition", "tpx", "--", "true"], "'tpx': a CDNA GPU partitions as spx or cpx", 2),
    Case([*MOCK, "--dev", "MOCKUSB+AMD", "--arch", "gfx950", "--", "true"],
         "mock: MOCKUSB+AMD models gfx1100, gfx1200 boards; the CDNA parts run on MOCKKFD+AMD and MOCKPCI+AMD"),
    Case([*MOCK, "--count", "0", "--", "true"], "'0': a GPU count must be 1..64", 2),
    Case([*MOCK, "--arch", "gfx1100", "--", "true"], "mock: DEV MOCKKFD+AMD::gfx1201 names gfx1201, --arch gfx1100",
         env={"DEV": "MOCKKFD+AMD::gfx1201"}),
    Case([*MOCK, "--remote", "--", "true"], "mock: --remote is MOCKPCI+AMD's; MOCKKFD+AMD runs in the command's "
         "process"),
    Case([*MOCK, "--dev", "KFD+AMD", "--", "true"],
         "'KFD+AMD': the mocks are MOCKKFD+AMD, MOCKPCI+AMD, MOCKUSB+AMD, MOCK+NV", 2),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bad_input_is_one_error_line(case):
    check(case)


def test_dev_may_name_the_arch_as_tinygrads_own_mock_reads_it(tmp_path):
    got = mock(cwd=tmp_path, env={"DEV": "MOCKKFD+AMD::gfx1201"})
    assert (got["DEV"], got["MOCKGPU_ARCH"]) == ("MOCKKFD+AMD::gfx1201", "gfx1201")
