"""tinygrad on usergpu's mock GPU, two ways.

Programs: per program the wall time, and the share of it spent inside usergpu's mock (the doorbell agent's CPU time
running the GPU, plus the time the process spends in the mock's ioctls, WAIT_EVENTS included), with the same program
on tinygrad's own CPU device in the same process as the baseline.

    .venv/bin/python bench/tinygrad_bench.py [--arch gfx1100] [N]

It runs itself under `usergpu mock` (DEV=MOCKKFD+AMD:LLVM; the CPU device compiles with CC=clang-22); each
program is run once to compile, then timed as the median of N runs (default 3).

Suites: tinygrad's own test suites (SUITES) from its source tree in ../shared/tinygrad (unpacked once into the
cache), each run with pytest -n 2 on tinygrad's own mock (DEV=MOCKKFD+AMD MOCKGPU=1) and through
`usergpu mock --dev MOCKKFD+AMD`, interleaved, ROUNDS times (the first round fills both sides' kernel caches);
per run the wall time and pytest's counts, then each suite's ratio in the last round.

    .venv/bin/python bench/tinygrad_bench.py --suites [--rounds 2] [SUITE ...]
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

# name -> pytest arguments, in tinygrad's tree (test_ops: a slice of the elementwise, reduce and matmul tests)
SUITES = {"test_tiny": ["test/test_tiny.py"], "test_dtype_alu": ["test/backend/test_dtype_alu.py"],
          "test_ops_slice": ["test/backend/test_ops.py", "-k", "test_add or test_sub or test_mul or test_div or "
                             "test_sum or test_max or test_relu or test_exp or test_matmul"]}
OWN, OURS = "tinygrad's mock", "usergpu mock"
TREE = Path(__file__).resolve().parents[2] / "shared" / "tinygrad" / "tinygrad-a9069c17.tar.xz"
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


def tree() -> Path:
    """tinygrad's source tree, unpacked from TREE into the cache the first time."""
    import tarfile

    from usergpu.emu.amd.exec.native.build import cache_dir

    root = cache_dir().parent / "tinygrad"
    out = root / TREE.name.removesuffix(".tar.xz")
    if not (out / "tinygrad").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(TREE) as tar:
            tar.extractall(root, filter="data")
    return out


def counts(output: str) -> str:
    """pytest's closing counts ('47 passed, 13 skipped')."""
    found = re.findall(r"(\d+ (?:passed|failed|skipped|errors?|xfailed|xpassed))", output.splitlines()[-1]
                       if output.strip() else "")
    return ", ".join(found) or "no summary"


def suites(names: list[str], rounds: int) -> int:
    from tabulate import tabulate

    if "test_ops_slice" in names and importlib.util.find_spec("torch") is None:
        print("test_ops_slice: test_ops.py checks tinygrad against torch, which is not installed here: left out")
        names = [n for n in names if n != "test_ops_slice"]
    where = tree()
    env = {**os.environ, "PYTHONPATH": str(where), "CC": "clang-22"}
    pytest = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-rf", "-p", "no:cacheprovider"]
    usergpu = str(Path(sys.executable).parent / "usergpu")
    sides = {OWN: ([], {"DEV": "MOCKKFD+AMD", "MOCKGPU": "1"}),
             OURS: ([usergpu, "mock", "--dev", "MOCKKFD+AMD", "--"], {})}
    rows, last = [], {}
    for r in range(1, rounds + 1):
        for name in names:
            for side, (prefix, extra) in sides.items():
                start = time.perf_counter()
                done = subprocess.run([*prefix, *pytest, *SUITES[name]], cwd=where, env={**env, **extra},
                                      capture_output=True, text=True)
                wall = time.perf_counter() - start
                failed = " ".join(re.findall(r"^FAILED (\S+)", done.stdout, re.M))
                rows.append([r, name, side, f"{wall:.1f}", counts(done.stdout) + (f" ({failed})" if failed else "")])
                last[name, side] = (wall, counts(done.stdout))
                print(*rows[-1], sep="  |  ", flush=True)
    print(tabulate(rows, headers=["round", "suite", "mock", "wall s", "pytest"]))
    print()
    ratios = [[name, f"{last[name, OWN][0]:.1f}", f"{last[name, OURS][0]:.1f}",
               f"{last[name, OWN][0] / last[name, OURS][0]:.2f}x", "yes" if last[name, OWN][1] == last[name, OURS][1]
               else "NO"] for name in names]
    print(tabulate(ratios, headers=["suite (last round)", "tinygrad's mock s", "usergpu mock s",
                                    "usergpu faster by", "same counts"]))
    return 0


def main() -> int:
    args = sys.argv[1:]
    if "--suites" in args:
        rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 2
        names = [a for a in args if a in SUITES] or list(SUITES)
        return suites(names, rounds)
    if os.environ.get("USERGPU_TINYGRAD_BENCH") == "child":
        return child(int(args[0]) if args else 3)
    arch = args[args.index("--arch") + 1] if "--arch" in args else "gfx1100"
    rest = [a for a in args if a not in ("--arch", arch)]
    usergpu = Path(sys.executable).parent / "usergpu"
    env = {**os.environ, "USERGPU_TINYGRAD_BENCH": "child", "DEV": "MOCKKFD+AMD:LLVM", "CC": "clang-22"}
    return subprocess.run([str(usergpu), "mock", "--arch", arch, "--", sys.executable, __file__, *rest],
                          env=env).returncode


if __name__ == "__main__":
    sys.exit(main())
