"""tinygrad on usergpu's mock GPU, two ways.

Programs: per program the wall time, and the share of it spent inside usergpu's mock (the doorbell agent's CPU time
running the GPU, plus the time the process spends in the mock's ioctls, WAIT_EVENTS included), with the same program
on tinygrad's own CPU device in the same process as the baseline.

    .venv/bin/python bench/tinygrad_bench.py [--arch gfx1100] [N]

It runs itself under `usergpu mock` (DEV=MOCKKFD+AMD:LLVM; the CPU device compiles with CC=clang-22); each
program is run once to compile, then timed as the median of N runs (default 3).

Suites: tinygrad's mocked CI jobs (JOBS: testamd, testmockam, testnvidia, hcq2), each suite run from tinygrad's
source tree in ../shared/tinygrad (unpacked once into the cache) with the job's DEV and environment, on tinygrad's own
mock (DEV=... MOCKGPU=1: its KFD mock; its NV mock needs gpuocelot and its AM mocks fetch firmware Debian does not
have, so those are not run here) and through `usergpu mock`, side by side: per suite pytest's counts and the wall time,
then each job's totals. Each side keeps its own tinygrad kernel cache (CACHEDB), empty at the start of the run, as two
CI runners would: tinygrad's mock compiles its emulated instructions into that cache too, and whichever side ran a
suite second would otherwise find the suite's kernels compiled by the first. pytest runs with -n 2 as tinygrad's CI
runs -n auto, except where a suite drives one PCI or USB board (one board takes one driver at a time). Suites that need
torch are left out where torch is not installed.

    .venv/bin/python bench/tinygrad_bench.py --suites [--job JOB ...] [--suite NAME ...] [--dev DEV ...] [--rounds N]
"""

from __future__ import annotations

import argparse
import compileall
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import usergpu
from usergpu.tools.tinygrad_ci import JOBS, OURS, OWN, run_suite, tree

PROGRAMS = ("add 1M", "sum 1M", "matmul 128 f32", "matmul 64 f16", "conv2d", "mlp step", "jit x8")


def programs(device: str) -> dict:
    """name -> a function running the program on device (realised and copied out)."""
    import numpy as np
    from tinygrad import Tensor, TinyJit, dtypes
    from tinygrad.helpers import Context

    rng = np.random.default_rng(0)
    x1m = rng.standard_normal(1 << 20).astype(np.float32)
    a128, a64 = rng.standard_normal((128, 128)).astype(np.float32), rng.standard_normal((64, 64)).astype(np.float16)
    img = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    t = lambda a: Tensor(a, device=device)  # noqa: E731

    def mlp():
        w1, w2 = t(a128[:, :32].copy()), t(a128[:32, :10].copy())
        with Context(TRAINING=1):
            from tinygrad.nn.optim import SGD
            opt = SGD([w1, w2], lr=0.01)
            loss = ((t(a128) @ w1).relu() @ w2).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return w1.numpy()

    @TinyJit
    def step(a, b):
        return ((a * b).relu().contiguous() + 1).sum(axis=1).realize()

    def jit():
        a, b = t(a128), t(a128)
        for _ in range(8):
            out = step(a, b)
        return out.numpy()
    return {
        "add 1M": lambda: (t(x1m) + t(x1m)).numpy(),
        "sum 1M": lambda: t(x1m).sum().numpy(),
        "matmul 128 f32": lambda: (t(a128) @ t(a128)).numpy(),
        "matmul 64 f16": lambda: t(a64).matmul(t(a64), dtype=dtypes.float32).numpy(),
        "conv2d": lambda: t(img).conv2d(t(w), padding=1).numpy(),
        "mlp step": mlp,
        "jit x8": jit,
    }


def child(n: int) -> int:
    from tabulate import tabulate

    from usergpu.emu.mock.tinygrad.fileio import MockFileIOInterface, machine

    inside = [0.0]
    ioctl = MockFileIOInterface.ioctl

    def timed(self, request, arg):  # the process's time in the mock kernel's ioctls
        start = time.perf_counter()
        try:
            return ioctl(self, request, arg)
        finally:
            inside[0] += time.perf_counter() - start
    MockFileIOInterface.ioctl = timed

    def agent_cpu() -> float:
        thread = machine().kfd.agent._thread
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident)) if thread else 0.0

    mock, cpu = programs("AMD"), programs("CPU")
    rows = []
    for name in PROGRAMS:
        mock[name](), cpu[name]()  # compile, and the first copies
        walls, shares = [], []
        for _ in range(n):
            inside[0], agent0, start = 0.0, agent_cpu(), time.perf_counter()
            mock[name]()
            wall = time.perf_counter() - start
            walls.append(wall)
            shares.append(min(1.0, (inside[0] + agent_cpu() - agent0) / wall))
        start = time.perf_counter()
        for _ in range(n):
            cpu[name]()
        base = (time.perf_counter() - start) / n
        wall = sorted(walls)[n // 2]
        rows.append([name, f"{wall * 1e3:.1f}", f"{100 * sorted(shares)[n // 2]:.0f}%", f"{base * 1e3:.1f}",
                     f"{wall / base:.1f}x"])
    print(tabulate(rows, headers=["program", "mock ms", "in mock", "tinygrad CPU ms", "mock / CPU"]))
    return 0


def compiled(roots: list[Path]) -> None:
    """Both sides' modules byte-compiled, as a package pip installs has them: where PYTHONDONTWRITEBYTECODE is set (as
    on this project's machines) every process of a suite otherwise compiles each module it imports from its source,
    and the side with more modules of its own pays the more (a pytest worker starting usergpu's mock: 1.5 s of 3.6)."""
    for root in roots:
        compileall.compile_dir(root, quiet=1, rx=re.compile(r"[/\\]\.venv[/\\]"))


def suites(jobs: list[str], names: list[str], devs: list[str], rounds: int) -> int:
    from tabulate import tabulate

    where, torch = tree(), importlib.util.find_spec("torch") is not None
    compiled([where, Path(usergpu.__file__).parent])
    rows, totals = [], {}
    with tempfile.TemporaryDirectory(prefix="tinygrad-bench-") as caches:
        cachedb = {side: Path(caches) / f"{i}.db" for i, side in enumerate((OWN, OURS))}
        for job in jobs:
            for suite in JOBS[job]:
                if names and suite.name not in names or devs and suite.dev not in devs:
                    continue
                if suite.torch and not torch:
                    print(f"{job} {suite.name}: needs torch, which is not installed here: left out", flush=True)
                    continue
                sides = [OWN, OURS] if suite.own else [OURS]
                got = {}
                for _ in range(rounds):  # the last round's figures (the first fills both sides' kernel caches)
                    got = {side: run_suite(suite, side, where, cachedb=cachedb[side]) for side in sides}
                own = got.get(OWN)
                rows.append([job, suite.name, suite.dev, f"{own.wall:.1f}" if own else "-",
                             str(own) if own else f"not run: {suite.own_why}", f"{got[OURS].wall:.1f}", str(got[OURS])])
                for side, run in got.items():
                    totals[job, side] = totals.get((job, side), 0.0) + run.wall
                print(*rows[-1], sep="  |  ", flush=True)
    print(tabulate(rows, headers=["job", "suite", "DEV", "tinygrad's mock s", "tinygrad's mock", "usergpu mock s",
                                  "usergpu mock"]))
    print()
    print(tabulate([[job, f"{totals.get((job, OWN), 0):.1f}", f"{totals.get((job, OURS), 0):.1f}"]
                    for job in jobs], headers=["job (suites both ran, and usergpu's alone)", "tinygrad's mock s",
                                               "usergpu mock s"]))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description="tinygrad on usergpu's mock GPU: programs, or its mocked CI's suites")
    parser.add_argument("n", nargs="?", type=int, default=3, help="runs per program (the median is timed)")
    parser.add_argument("--arch", default="gfx1100", help="the mock GPU the programs run on")
    parser.add_argument("--suites", action="store_true", help="run tinygrad's mocked CI jobs side by side")
    parser.add_argument("--job", action="append", choices=list(JOBS), help="a job (repeatable; default: all)")
    parser.add_argument("--suite", action="append", default=[], help="a suite's name (repeatable)")
    parser.add_argument("--dev", action="append", default=[], help="a suite's DEV (repeatable)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each suite; the last one's figures count")
    args = parser.parse_args()
    if args.suites:
        return suites(args.job or list(JOBS), args.suite, args.dev, args.rounds)
    if os.environ.get("USERGPU_TINYGRAD_BENCH") == "child":
        return child(args.n)
    usergpu = Path(sys.executable).parent / "usergpu"
    env = {**os.environ, "USERGPU_TINYGRAD_BENCH": "child", "DEV": "MOCKKFD+AMD:LLVM", "CC": "clang-22"}
    return subprocess.run([str(usergpu), "mock", "--arch", args.arch, "--", sys.executable, __file__, str(args.n)],
                          env=env).returncode

if __name__ == "__main__":
    sys.exit(main())
