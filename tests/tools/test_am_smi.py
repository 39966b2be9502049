"""am_smi on the mock: another process boots a MOCKPCI+AMD board with AM and idles or runs kernels on it, while
am_smi (in this process, as a console script and as `usergpu smi`) finds the board from its lock file and reads
its SMU metrics, VRAM use and owner; --pids --kill stops that owner."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from usergpu.tools import am_smi, cli

BUS = "0000:03:00.0"
GiB = 1 << 30
# what the mock boards of each arch answer: name, SMU firmware, VRAM
BOARD = {"gfx1100": ("Radeon RX 7900 XTX", "78.75.0", 24 * GiB), "gfx1200": ("Radeon RX 9060 XT", "104.59.0", 8 * GiB),
         "gfx942": ("Instinct MI300X", "85.124.0", 192 * GiB), "gfx950": ("Instinct MI350X", "103.30.0", 288 * GiB)}
WINDOW_S = 1.2  # past the SMU's 1 s averaging window

# The owner: boots the board, says "ready", then idles until a "busy" line asks it to launch a kernel long enough to
# keep the engines busy (100,000 iterations: some 15 ms of dispatch, against the runtime's 1 ms per launch) over
# and over; it exits when its stdin closes (the test is gone) or after a minute.
OWNER = r"""
import os, sys, threading, time
import usergpu

SRC = '''__kernel void spin(__global float *c, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  float x = 0;
  for (int k = 0; k < n; k++) x = x * 0.5f + k;
  c[i] = x;
}'''
dev = usergpu.Device("MOCKPCI+AMD")
spin = dev.load(usergpu.compile_opencl(SRC, os.environ["MOCKGPU_ARCH"])).kernels["spin"]
out = dev.alloc(16 * 64 * 4)
busy = threading.Event()

def commands():
    for line in sys.stdin:
        if line.strip() == "busy":
            busy.set()
    os._exit(0)

threading.Thread(target=commands, daemon=True).start()
print("ready", flush=True)
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if busy.is_set():
        spin(out, 100000, grid=(16, 1, 1), block=(64, 1, 1), wait=True)
    else:
        time.sleep(0.02)
"""


@pytest.fixture
def mockpci(tmp_path, monkeypatch):
    """This test's own mock machines."""
    monkeypatch.setenv("MOCKPCI_DIR", str(tmp_path))
    monkeypatch.delenv("DEV", raising=False)
    return tmp_path


@pytest.fixture
def owner(mockpci):
    """owner(arch): a process that has booted the board of arch with AM and holds it; killed at teardown."""
    procs = []

    def start(arch: str = "gfx1200") -> subprocess.Popen:
        env = os.environ | {"MOCKPCI_DIR": str(mockpci), "MOCKGPU_ARCH": arch}
        proc = subprocess.Popen([sys.executable, "-c", OWNER], env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        if not select.select([proc.stdout], [], [], 30)[0] or proc.stdout.readline().strip() != "ready":
            proc.kill()
            pytest.fail(f"the owner did not boot the board: {proc.communicate()[1][-2000:]}")
        return proc

    yield start
    for proc in procs:
        proc.kill()
        proc.communicate()


def busy(proc: subprocess.Popen) -> None:
    """Set the owner running kernels, and wait a full SMU averaging window of them."""
    proc.stdin.write("busy\n")
    proc.stdin.flush()
    time.sleep(WINDOW_S)


def smi(capsys, *argv) -> tuple[int, str, str]:
    """`am_smi --mock ARGV` in this process: its status, stdout and stderr."""
    status = am_smi.main(["--mock", *argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def board(capsys, *argv) -> dict:
    """The one board `am_smi --mock --json` shows."""
    status, out, err = smi(capsys, "--json", *argv)
    assert status == 0, err
    (state,) = json.loads(out)["boards"]
    return state


def test_idle_then_busy(owner, capsys):
    """The board another process booted shows up in --list and --json with its identity, firmware, limit, VRAM and
    owner; idle its GFX activity is 0, and once the owner runs kernels activity, clocks, temperatures, power, fan
    and voltage all rise, as the mock SMU derives them from what the engines execute."""
    proc = owner("gfx1200")
    name, smu_version, vram = BOARD["gfx1200"]
    status, out, err = smi(capsys, "--list")
    assert status == 0, err
    assert BUS in out and name in out and str(proc.pid) in out
    idle = board(capsys)
    expected = {"bus": BUS, "name": name, "power_state": "D0", "pid": proc.pid, "command": "-c",
                "smu_version": smu_version, "gfx_activity": 0, "power_limit": 355, "vram_total": vram}
    assert {k: idle[k] for k in expected} == expected
    assert idle["throttle_reasons"] == [] and 0 < idle["vram_used"] <= vram
    assert board(capsys)["metrics_counter"] > idle["metrics_counter"]
    busy(proc)
    hot = board(capsys)
    assert hot["pid"] == proc.pid and hot["gfx_activity"] > 30
    for field in ("gfx_clock", "memory_clock", "fabric_clock", "edge_temperature", "hotspot_temperature",
                  "memory_temperature", "power", "fan_rpm", "gfx_voltage"):
        assert hot[field] > idle[field], field
    assert idle["power"] < hot["power"] <= hot["power_limit"]
    assert hot["metrics_counter"] > idle["metrics_counter"]


def test_console_script_gfx1100(owner, mockpci):
    """`am_smi --json`, a third process, sees the gfx1100 board (firmware-loaded Navi31) busy with the owner's
    kernels; --list from there shows it too."""
    proc = owner("gfx1100")
    busy(proc)
    script = Path(sys.executable).with_name("am_smi")
    env = os.environ | {"MOCKPCI_DIR": str(mockpci), "MOCKGPU_ARCH": "gfx1100"}
    done = subprocess.run([script, "--mock", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (state,) = json.loads(done.stdout)["boards"]
    name, smu_version, vram = BOARD["gfx1100"]
    assert (state["bus"], state["name"], state["pid"], state["smu_version"]) == (BUS, name, proc.pid, smu_version)
    assert state["vram_total"] == vram and 0 < state["vram_used"] <= vram
    assert state["gfx_activity"] > 30 and state["power"] > 12
    done = subprocess.run([script, "--list"], env=env | {"DEV": "MOCKPCI+AMD"}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and BUS in done.stdout and name in done.stdout, done.stderr


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_console_script_cdna(owner, mockpci, arch):
    """`am_smi --mock --json` lists a busy mock MI300X (MI350X) with each XCC's activity above zero, from the SMU's
    MetricsTableX_t; the sensors these boards lack (edge temperature, fan, GFX voltage) are null, and the table
    shows them as "-"."""
    proc = owner(arch)
    busy(proc)
    script = Path(sys.executable).with_name("am_smi")
    env = os.environ | {"MOCKPCI_DIR": str(mockpci), "MOCKGPU_ARCH": arch}
    done = subprocess.run([script, "--mock", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (state,) = json.loads(done.stdout)["boards"]
    name, smu_version, vram = BOARD[arch]
    assert (state["bus"], state["name"], state["pid"], state["smu_version"]) == (BUS, name, proc.pid, smu_version)
    assert state["vram_total"] == vram and len(state["xcc_activity"]) == 8
    assert all(a > 30 for a in state["xcc_activity"]) and state["gfx_activity"] > 30
    assert state["edge_temperature"] is None and state["fan_rpm"] is None and state["power"] > 140
    done = subprocess.run([script, "--mock"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and name in done.stdout and " - " in done.stdout, done.stderr


def test_pids_kill(owner, capsys):
    """--pids names the owner; --pids --kill stops it, its lock goes with it, and then am_smi finds no board driven
    (an `error:` line, status 1) while --dev BUS still shows the board, ownerless."""
    proc = owner()
    status, out, _ = smi(capsys, "--pids")
    assert status == 0 and out.split()[:3] == [BUS, "pid", str(proc.pid)]
    assert proc.poll() is None
    status, out, _ = smi(capsys, "--pids", "--kill")
    assert status == 0 and f"sent SIGTERM to {proc.pid}" in out
    assert proc.wait(timeout=10) == -signal.SIGTERM
    status, out, err = smi(capsys, "--list")
    assert status == 1 and out == ""
    assert err.startswith("error: ") and "no GPU is driven by AM" in err
    assert smi(capsys, "--pids")[1].strip() == "no process drives an AMD GPU with AM"
    state = board(capsys, "--dev", BUS)
    assert (state["bus"], state["pid"], state["power_state"]) == (BUS, None, "D0")


def test_dev_one_board(owner, capsys):
    """--dev BUS shows that board alone, and --pids --dev only its owner; another bus has no owner to list."""
    proc = owner()
    state = board(capsys, "--dev", BUS)
    assert (state["bus"], state["pid"], state["smu_version"]) == (BUS, proc.pid, BOARD["gfx1200"][1])
    status, out, _ = smi(capsys, "--dev", BUS, "--list")
    assert status == 0 and out.count(BUS) == 1
    assert smi(capsys, "--pids", "--dev", BUS)[1].split()[:3] == [BUS, "pid", str(proc.pid)]
    assert "no process drives" in smi(capsys, "--pids", "--dev", "0000:04:00.0")[1]


def test_usergpu_smi(owner, capsys):
    """`usergpu smi --mock --json` is am_smi: the same board, owner and fields."""
    proc = owner()
    assert cli.main(["smi", "--mock", "--json"]) == 0
    (state,) = json.loads(capsys.readouterr().out)["boards"]
    reference = board(capsys)
    assert state.keys() == reference.keys() and state["pid"] == proc.pid
    fixed = ("bus", "name", "power_state", "pid", "command", "smu_version", "vram_total", "power_limit")
    assert {k: state[k] for k in fixed} == {k: reference[k] for k in fixed}


def test_json_composes(owner, capsys):
    """--json is a format: with --list one object (as bare --json), with --pids the owners, with --watch N
    --iterations K exactly K lines, each one JSON object of the boards, paced N seconds apart."""
    proc = owner()
    status, out, err = smi(capsys, "--list", "--json")
    assert status == 0, err
    (listed,) = json.loads(out)["boards"]
    assert (listed["bus"], listed["pid"]) == (BUS, proc.pid) and listed.keys() == board(capsys).keys()
    status, out, err = smi(capsys, "--pids", "--json")
    assert status == 0 and json.loads(out) == {"processes": [{"bus": BUS, "pid": proc.pid, "command": "-c"}]}, err
    status, out, err = smi(capsys, "--pids", "--json", "--dev", "0000:04:00.0")
    assert status == 0 and json.loads(out) == {"processes": []}, err
    status, out, err = smi(capsys, "--watch", "0.2", "--iterations", "3", "--json")
    assert status == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 3 and all([s["bus"] for s in line["boards"]] == [BUS] for line in lines)
    stamps = [line["timestamp"] for line in lines]
    assert all(b - a >= 0.2 for a, b in zip(stamps, stamps[1:], strict=False))
    assert lines[-1]["boards"][0]["metrics_counter"] > lines[0]["boards"][0]["metrics_counter"]


def test_watch_time_and_table(owner, capsys):
    """--watch_time ends a watch once its time is up; without --json each refresh reprints the table in place."""
    owner()
    start = time.monotonic()
    status, out, err = smi(capsys, "-w", "0.1", "-W", "0.5", "--json")
    assert status == 0, err
    stamps = [json.loads(line)["timestamp"] for line in out.splitlines()]
    assert 1 <= len(stamps) <= 5 and stamps[-1] - stamps[0] <= 0.5 and time.monotonic() - start < 30
    status, out, err = smi(capsys, "--watch", "0.1", "-i", "2")
    assert status == 0, err
    assert out.count("\x1b[H\x1b[2J") == 2 and out.count(BUS) == 2 and out.count("am_smi") == 2


def test_watch_until_interrupted(owner, mockpci):
    """A watch without an end runs until ^C: each line arrives as it is printed (flushed into a pipe), and ^C
    ends it with status 0 and nothing on stderr."""
    proc = owner()
    env = os.environ | {"MOCKPCI_DIR": str(mockpci)}
    watch = subprocess.Popen([Path(sys.executable).with_name("am_smi"), "--mock", "--watch", "0.2", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(2):
            assert select.select([watch.stdout], [], [], 30)[0], "no line within 30 s"
            (state,) = json.loads(watch.stdout.readline())["boards"]
            assert (state["bus"], state["pid"]) == (BUS, proc.pid)
        watch.send_signal(signal.SIGINT)
        _, err = watch.communicate(timeout=30)
    finally:
        watch.kill()
    assert watch.returncode == 0 and err == ""
