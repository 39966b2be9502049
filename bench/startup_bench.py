"""Start-up time of the commands a user runs first: the median of N fresh processes each, as in a fresh checkout
(PYTHONDONTWRITEBYTECODE=1, no bytecode of the project's own modules; the standard library's and the
dependencies' bytecode as installed) and with the project's bytecode cached.

    .venv/bin/python bench/startup_bench.py [N]

Each mode has its own PYTHONPYCACHEPREFIX, so the __pycache__ folders of the working tree are never read. It times
the usergpu that the environment imports (PYTHONPATH=DIR, with DIR/usergpu an older checkout, times that one).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
HEX = "7e 00 82 be 00 00 80 bf 01 03 00 7e"  # s_mov_b32 s2, exec_lo / s_nop 0 / v_mov_b32 v0, v1
COMMANDS = {  # name -> (arguments, target seconds)
    "usergpu --version": (["--version"], 0.150),
    "usergpu --help": (["--help"], 0.150),
    "usergpu disasm --hex": (["disasm", "--hex", HEX, "--arch", "gfx1100"], 0.400),
}
# as a user starts it: the console script, and python -m
LAUNCHERS = {"usergpu": [str(BIN / "usergpu")], "python -m": [sys.executable, "-m", "usergpu.tools.cli"]}


def seconds(argv: list[str], prefix: Path, write: bool) -> float:
    """Wall time of one fresh process reading (and, with write, writing) bytecode under prefix."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    if not write:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start


def package_root() -> Path:
    """The folder of the usergpu package a fresh process imports."""
    code = "import os, usergpu; print(os.path.dirname(os.path.realpath(usergpu.__file__)))"
    return Path(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip())


def main(n: int = 5) -> int:
    root, over = package_root(), 0
    print(f"usergpu at {root}")
    print(f"{'command':<22} {'launcher':<10} {'no bytecode':>11} {'bytecode':>9} {'target':>7}")
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        warm, cold = Path(tmp, "warm"), Path(tmp, "cold")
        for name, (args, target) in COMMANDS.items():
            for launcher, start in LAUNCHERS.items():
                argv = [*start, *args]
                seconds(argv, warm, write=True)  # every module's bytecode, then the project's taken out
                shutil.rmtree(cold, ignore_errors=True)
                shutil.copytree(warm, cold)
                shutil.rmtree(cold / root.relative_to(root.anchor), ignore_errors=True)
                fresh = statistics.median(seconds(argv, cold, write=False) for _ in range(n))
                cached = statistics.median(seconds(argv, warm, write=False) for _ in range(n))
                over += max(fresh, cached) > target
                ms = [f"{t * 1e3:>{w}.0f} ms" for t, w in ((fresh, 8), (cached, 6), (target, 4))]
                print(f"{name:<22} {launcher:<10} {' '.join(ms)}")
    print(f"median of {n} fresh processes each; {over} of {len(COMMANDS) * len(LAUNCHERS)} over target")
    return 0


if __name__ == "__main__":
    sys.exit(main(*(int(a) for a in sys.argv[1:2])))
