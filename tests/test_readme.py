"""Every command README.md shows, run as a reader runs it: through bash, exactly as written, in order, and what it
prints compared with what the README shows.

What a command is:
- A block whose lines start with `$ ` (the ```console blocks, and ```sh blocks written that way) is a session:
  each `$ ` line is a command (with the lines it runs onto after a trailing `\\`), and the lines after it, up to
  the next `$ `, are what it prints.
- In any other ```sh block each line is a command, except comments, blank lines, indented lines (the wrapped rest
  of the line above) and synopses: a line that, outside its quotes and its comment, has an optional part `[`,
  a placeholder `...` or alternatives `a|b` (`usergpu devices [--json]`, `usergpu smi ...`).
- A block whose first line is a comment naming a file (`// saxpy.cl: ...`) is that file: the reader saves it.
- EXEMPT lists the commands that are not run, each with why (they run this suite, install software, or rewrite
  the checkout); they show as skipped tests.

How a block runs: in a folder of its own that stands for the reader's clone (a link to each entry of the
checkout, so `tests/...` resolve while what the commands write stays in the folder), holding the files the README
showed before it and GIVENS (files its commands use but the README does not make). Each command is one `bash -c`;
what it exports carries to the next, as in one terminal, and a job it starts with `&` runs on until the block is
done (the next command starts once the job has printed its first line: the reader, too, waits for it to get going).
The venv's bin comes first on PATH, TMPDIR and MOCKPCI_DIR point into the folder and the usergpu variables of the
test's own environment are left out; an absolute path into a shared temporary folder (/tmp/...) is run moved into
the folder's, and fails its test: every run and every test would share it. A block runs once (one worker runs it,
the other waits for its results), and each command is a test of its own.

The comparison: stdout and stderr together, as a terminal shows them; trailing spaces and blank lines aside, it is
exact but for MASKS, the fields that change from run to run. A command shown printing `error: ...` must exit 1,
any other 0; one shown printing nothing is held to its exit status only. CHECKS holds what some outputs must also
say (the saxpy example's numbers against numpy)."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pytest

from usergpu.drivers.amd.romsw import SECTOR
from usergpu.emu.amd.mock.flash.spiflash import default_image

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent  # the venv's: usergpu, am_smi, amdflash and python
COMMAND_S, READY_S = 300, 120  # the longest a command may run, or a background job take to say it is going
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SHELLS = ("console", "sh", "bash", "shell")
FILE_BLOCK = re.compile(r"(?://|#)\s*([\w-]+\.\w+):")  # the first line of a block that is a file
QUOTED, COMMENT = re.compile(r"\"[^\"]*\"|'[^']*'"), re.compile(r"(?:^|\s)#.*")
SYNOPSIS = re.compile(r"\[|\.\.\.|[\w.]\|[\w.-]")
# a path every run and every test would share
SHARED_TMP = re.compile(r"(?<![\w.$~/-])/(tmp|var/tmp|dev/shm)(/[^\s'\";|&]*)")
# the test's own environment a reader's shell would not have: the device, mock and profiler variables
LEFT_OUT = re.compile(r"DEV|PROFILE|SQTT|PMC|MOCK\w*|(USERGPU|AM|SQTT|PMC|PROF)_\w*")
EXEMPT = {
    "make demo": "runs `setup` first, which may apt-get, pip-install into the shared .venv and download firmware; "
                 "tests/tools/test_demo.py runs the `usergpu demo` it ends with",
    "make test": "runs this test suite (this test among it)",
    "python -m usergpu.autogen": "rewrites the checkout's autogen/ (the package itself, not the reader's folder)",
    "python -m usergpu.autogen --check": "regenerates every module from llvm-mc-22 (over 6 minutes on 2 cores); "
                                         "`make autogen-check` runs it",
    "python -m usergpu.autogen --only kfd": "rewrites the checkout's autogen/kfd.py",
}
MASKS = (
    (re.compile(r"\b\d+(\.\d+)? (m?s)\b"), r"N \2"),  # a time taken: 125.7 ms, (16.3 s)
    (re.compile(r"\b\d+ (?=\([^()]*\)$)", re.M), "PID "),  # a process, `pid (command)` at the end of a row
    (re.compile(r"^((?:-+ +)*)-+$", re.M), r"\1-"),  # a table's last column (where the pid is) has its width
    (re.compile(r"^((?:flash|image) sha256 )[0-9a-f]{64}$", re.M), r"\1SHA256"),  # good.bin's, a GIVEN
)


def good_image() -> bytes:
    """good.bin, the image the rescue session flashes: another build of the board's firmware, its own bytes where
    the mock board's image has code and data and erased (FFh) where it has padding, the AA 55 AA 55 magic first."""
    board = np.frombuffer(default_image(), np.uint8).reshape(-1, SECTOR)
    build = np.frombuffer(hashlib.shake_256(b"good.bin").digest(board.size), np.uint8).reshape(-1, SECTOR)
    image = np.where((board == 0xFF).all(axis=1, keepdims=True), board, build)
    image[0, :4] = board[0, :4]
    return image.tobytes()


MY_KERNELS = '''\
"""Runs kernels on $DEV for two minutes or until stopped; says so once the board has been busy for over a second,
the SMU's averaging window, so that a monitor shows it fully busy."""
import time

import usergpu

SPIN = """__kernel void spin(__global float *y, uint n) {
  float x = 0;
  for (uint k = 0; k < n; k++) x = x * 0.5f + k;
  y[get_global_id(0)] = x;
}"""
dev = usergpu.Device()
spin = dev.load(usergpu.compile_opencl(SPIN, arch=dev.arch)).kernels["spin"]
y = dev.alloc(1 << 20)
start, said = time.monotonic(), False
while time.monotonic() < start + 120:
    spin(y, 100000, grid=(16, 1, 1), block=(256, 1, 1))
    if not said and time.monotonic() > start + 1.2:
        print(f"running spin on {dev}", flush=True)
        said = True
'''
GIVENS = {"good.bin": good_image, "my_kernels.py": lambda: MY_KERNELS.encode()}


def saxpy_values(printed: list[str]) -> None:
    """y = fma(2, iota, random), random being the CLI's default seed 0 (usergpu run --seed)."""
    y = np.random.default_rng(0).standard_normal(1024).astype(np.float32) + 2 * np.arange(1024, dtype=np.float32)
    row = next(line for line in printed if line.split()[:2] == ["0", "float32[1024]"])
    values = [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]\d+)?", row.split("float32[1024]")[1])]
    np.testing.assert_allclose(values, [y.min(), y.max(), y.astype(np.float64).mean(), *y[:4]], rtol=1e-5)


CHECKS = {"usergpu run saxpy.cl": saxpy_values}


@dataclass(frozen=True)
class Command:
    line: int  # where its block starts in README.md: the commands of a block run as one session
    index: int  # its place in the block
    text: str  # as written
    shown: tuple[str, ...]  # what the README shows it printing

    @property
    def id(self) -> str:
        return " ".join(re.split(r"\s#\s", self.text.replace("\\\n", " "))[0].split())


def synopsis(line: str) -> bool:
    return bool(SYNOPSIS.search(COMMENT.sub("", QUOTED.sub('""', line))))


def session(lines: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The `$ ` commands of a block, each with the lines shown after it."""
    found: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            found.append((line[2:], []))
        elif found and found[-1][0].endswith("\\"):
            found[-1] = (found[-1][0] + "\n" + line, [])
        elif found:
            found[-1][1].append(line)
    return [(text, tuple(shown)) for text, shown in found]


def script(lines: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The commands of a block of commands without `$ `: its lines that are neither comment nor synopsis."""
    return [(line, ()) for line in lines if line.strip() and not line[0].isspace() and not line.startswith("#")
            and not synopsis(line)]


def parse(text: str) -> tuple[list[Command], list[tuple[int, str, str]]]:
    """The README's commands, and its files as (line, name, content)."""
    commands, files = [], []
    for block in FENCE.finditer(text):
        line, lines = text.count("\n", 0, block.start()) + 1, block[2].splitlines()
        named = FILE_BLOCK.match(lines[0]) if lines else None
        if named:
            files.append((line, named[1], block[2]))
        elif block[1] in SHELLS:
            found = session(lines) if any(x.startswith("$ ") for x in lines) else script(lines)
            commands += [Command(line, i, text, shown) for i, (text, shown) in enumerate(found)]
    return commands, files


COMMANDS, FILES = parse((ROOT / "README.md").read_text())


@dataclass
class Outcome:
    status: int
    output: str
    moved: list[str]  # the shared paths it named, run moved into the folder


def prepare(folder: Path, line: int) -> None:
    """The reader's clone, with the files the README showed before `line` and the givens."""
    (folder / "tmp").mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name != ".git":
            (folder / entry.name).symlink_to(entry)
    files = {name: make() for name, make in GIVENS.items()}
    files |= {name: content.encode() for at, name, content in FILES if at < line}
    for name, content in files.items():
        (folder / name).unlink(missing_ok=True)
        (folder / name).write_bytes(content)


def alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False


def started(log: Path, group: int) -> None:
    """Until the background job writes its first line (or is gone)."""
    deadline = time.monotonic() + READY_S
    while "\n" not in log.read_text(errors="replace") and alive(group) and time.monotonic() < deadline:
        time.sleep(0.05)


def stop(groups: list[int]) -> None:
    """End the background jobs the block started (their process groups, while they still exist)."""
    for group in groups:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if alive(group):
                os.killpg(group, sig)
            deadline = time.monotonic() + 10
            while alive(group) and time.monotonic() < deadline:
                time.sleep(0.05)


def run_block(line: int, folder: Path) -> list[Outcome | None]:
    """Run the commands of the block at `line` in order, each through bash in the state the last left."""
    prepare(folder, line)
    tmp, logs = folder / "tmp", folder.with_name(folder.name + "-logs")
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if not LEFT_OUT.fullmatch(k)}
    env |= {"PATH": f"{BIN}{os.pathsep}{env['PATH']}", "TMPDIR": str(tmp), "MOCKPCI_DIR": str(tmp / "mockpci"),
            "PWD": str(folder), "PYTHONUNBUFFERED": "1"}  # Python writes each line at once, as to a terminal
    outcomes: list[Outcome | None] = []
    groups: list[int] = []
    try:
        for command in (c for c in COMMANDS if c.line == line):
            if command.id in EXEMPT:
                outcomes.append(None)
                continue
            moved = [m[0] for m in SHARED_TMP.finditer(command.text)]
            text = SHARED_TMP.sub(lambda m: f"{tmp}{m[2]}", command.text)
            log, state, jobs = (logs / f"{command.index}.{kind}" for kind in ("out", "env", "jobs"))
            after = f'\n__status=$?; jobs -p > "{jobs}"; env -0 > "{state}"; exit $__status\n'
            with open(log, "wb") as out:
                proc = subprocess.Popen(["bash", "-c", text + after], cwd=env["PWD"], env=env, stdin=subprocess.DEVNULL,
                                        stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
                try:
                    status = proc.wait(COMMAND_S)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    status = proc.wait()
            if state.exists():
                env = dict(item.split("=", 1) for item in state.read_text().split("\0") if "=" in item)
                env.pop("SHLVL", None)
            if jobs.exists() and jobs.read_text().strip():
                groups.append(proc.pid)
                started(log, proc.pid)
            outcomes.append(Outcome(status, log.read_text(errors="replace"), moved))
    finally:
        stop(groups)
    return outcomes


@pytest.fixture(scope="session")
def shared(tmp_path_factory, worker_id) -> Path:
    """A folder every worker of this run sees."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@functools.cache
def outcomes(line: int, shared: Path) -> list[Outcome | None]:
    """The block's outcomes: run by the first worker to need them, read by the others."""
    done = shared / f"readme-{line}.json"
    with open(shared / f"readme-{line}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            found = run_block(line, shared / f"readme-{line}")
            done.write_text(json.dumps([o and asdict(o) for o in found]))
    return [o and Outcome(**o) for o in json.loads(done.read_text())]


def masked(lines: list[str] | tuple[str, ...]) -> list[str]:
    text = "\n".join(line.rstrip() for line in lines).rstrip("\n")
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text.split("\n")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.id)
def test_command(command, shared):
    if command.id in EXEMPT:
        pytest.skip(f"not run: {EXEMPT[command.id]}")
    got = outcomes(command.line, shared)[command.index]
    where = f"README.md:{command.line}: `{command.id}`"
    assert not got.moved, (f"{where} names {', '.join(got.moved)}, a folder every run and every test shares; "
                           "name a path in the reader's folder (the test ran it with its own TMPDIR in its place)")
    printed = got.output.splitlines()
    if command.shown:
        assert masked(printed) == masked(command.shown), f"{where} printed (exit status {got.status}):\n{got.output}"
    expected = 1 if command.shown and command.shown[0].startswith("error:") else 0
    assert got.status == expected, f"{where} exited {got.status}, not {expected}:\n{got.output}"
    for prefix, check in CHECKS.items():
        if command.id.startswith(prefix):
            check(printed)


def test_tables_name_readme_commands():
    """Each given is a file a README command uses and the README does not make; each exemption and check names a
    README command: none outlives what it stands for."""
    ids, made = [c.id for c in COMMANDS], {name for _, name, _ in FILES}
    assert [name for name in GIVENS if name in made or not any(name in c.text for c in COMMANDS)] == []
    assert [name for name in EXEMPT if name not in ids] == []
    assert [name for name in CHECKS if not any(i.startswith(name) for i in ids)] == []


@pytest.mark.parametrize("line, is_synopsis", [
    ("usergpu --version", False),
    ('usergpu disasm --arch gfx1100 --hex "01 05 00 06"  # raw bytes', False),
    ('usergpu run k.cl --arg "f32[1024]:random" --arg f32=2', False),
    ("usergpu disasm k.co | grep s_endpgm  # a pipe", False),
    ("usergpu devices [--json] [--mock]  # AMD/NVIDIA GPUs", True),
    ("usergpu smi ...", True),
    ("USERGPU_TRACE=1 usergpu run ...", True),
    ("usergpu prof run FILE.cl|FILE.co --kernel K", True),
    ("amdflash --transport auto|usb|pci info", True),
], ids=str)
def test_synopsis_rule(line, is_synopsis):
    assert synopsis(line) == is_synopsis
