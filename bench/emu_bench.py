"""Emulator speed, both backends in one run: warm lane-instructions/s of the numpy reference (USERGPU_EMU=numpy)
and of the native backend for six kernels, the speed-up, and each against numpy doing the same math in the same
process (ratio: emulator time / numpy time); then the cold time of saxpy's first launch in a fresh process
(PYTHONDONTWRITEBYTECODE=1), with an empty and with a warm kernel cache.

    .venv/bin/python bench/emu_bench.py [arch]

Warm: a launch first (the native backend compiles the kernel, both fill their decode caches), then the median of up
to RUNS launches, fewer where they pass BUDGET_S (the reference's big kernels get one). Every launch's answer is
checked against numpy's, and the two backends' against each other bit for bit, so a wrong answer is never timed as
fast. The code objects are compiled here, once: no figure includes clang-22's OpenCL compile. numpy's BLAS runs on
one thread (OPENBLAS_NUM_THREADS, unless set), like the emulator.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# numpy's BLAS on one thread, as the emulator runs: on a busy machine its threads' wake-ups cost a 128³ matmul 16 ms
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402
from tabulate import tabulate  # noqa: E402
from timing import median_seconds  # noqa: E402 (bench/timing.py: run as python bench/<name>.py)

import usergpu  # noqa: E402
from usergpu.emu.amd import launch  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "kernels" / "emu"
INCLUDES = ["-I", str(CORPUS), "-I", str(CORPUS.parent)]
RUNS, BUDGET_S = 5, 1.0  # timed launches per backend and kernel: at most RUNS, stopping once BUDGET_S is spent
NUMPY_RUNS = 5
BACKENDS = ("numpy", "native")  # USERGPU_EMU values: the reference, then the native backend
FMA_STEPS, EVEN_STEPS, ODD_STEPS = 200, 16, 32
LCG_A, LCG_C, MIX = np.uint32(1664525), np.uint32(1013904223), np.uint32(0x9E3779B9)  # as in emu_kernels.cl


@dataclass(frozen=True)
class Case:
    name: str
    source: Path
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: list
    out: int  # which of the arrays launch returns holds the answer
    numpy: Callable[[], np.ndarray]  # the same math in numpy: timed, and the answer every launch is checked against
    rtol: float = 0.0  # 0: numpy's answer bit for bit (the kernel's math is exact or rounds as numpy does)
    atol: float = 0.0


def fma_chain(m: np.ndarray, steps: int) -> np.ndarray:
    acc = np.zeros_like(m)
    for _ in range(steps):
        acc = acc * m + np.float32(1)
    return acc


def divergent(x: np.ndarray, even_steps: int, odd_steps: int) -> np.ndarray:
    """emu_kernels.cl's divergent kernel as masks: a lane's parity picks its outer length, a value's low bit its
    branch, and the odd branch steps the LCG while the step number is at most the value's top three bits."""
    steps = np.where(np.arange(len(x)) & 1, odd_steps, even_steps)
    for j in range(max(even_steps, odd_steps)):
        live = j < steps
        odd = live & (x & 1 == 1)
        for k in range(8):
            x = np.where(odd & (k <= x >> 29), x * LCG_A + LCG_C, x)
        x = np.where(live & ~odd, (x >> 1) ^ MIX, x)
    return x


def cases(rng: np.random.Generator) -> list[Case]:
    n = 1 << 20
    y, x = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ints = rng.integers(-1000, 1000, 256 * 256).astype(np.int32)
    lanes = 1 << 16
    m = rng.uniform(1.0, 1.005, lanes).astype(np.float32)
    seeds = rng.integers(0, 1 << 32, lanes, dtype=np.uint32)

    def matmul(size: int) -> Case:
        a, b = (rng.uniform(-1, 1, (size, size)).astype(np.float32) for _ in range(2))
        return Case(f"tiled matmul {size}³", CORPUS / "matmul.cl", "matmul_tiled", (size // 16, size // 16, 1),
                    (16, 16, 1), [a, b, np.zeros((size, size), np.float32), *[np.uint32(size)] * 3], 2,
                    lambda: a @ b, rtol=1e-4, atol=1e-4)  # numpy sums in another order

    return [
        Case("saxpy 2^20", CORPUS / "math.cl", "saxpy", (n // 256, 1, 1), (256, 1, 1),
             [y, x, np.float32(2.0), np.uint32(n)], 0, lambda: np.float32(2.0) * x + y),  # 2x exact: one rounding
        matmul(128),
        matmul(256),
        Case("LDS reduction 256×256", CORPUS / "lds.cl", "reduce_tree", (256, 1, 1), (256, 1, 1),
             [ints, np.zeros(256, np.int32)], 1, lambda: ints.reshape(256, 256).sum(axis=1, dtype=np.int32)),
        Case(f"loop: {FMA_STEPS} FMAs × 2^16 lanes", HERE / "emu_kernels.cl", "fma_chain", (lanes // 256, 1, 1),
             (256, 1, 1), [np.zeros(lanes, np.float32), m, np.uint32(FMA_STEPS)], 0,
             lambda: fma_chain(m, FMA_STEPS), rtol=1e-5),  # numpy rounds twice a step: ~3e-7 off; a step less: 5e-3
        Case("divergent × 2^16 lanes", HERE / "emu_kernels.cl", "divergent", (lanes // 256, 1, 1), (256, 1, 1),
             [seeds, np.uint32(EVEN_STEPS), np.uint32(ODD_STEPS)], 0,
             lambda: divergent(seeds, EVEN_STEPS, ODD_STEPS)),
    ]


def warm(run: Callable[[dict], np.ndarray], check: Callable[[np.ndarray], None]) -> tuple[float, int, int, np.ndarray]:
    """(median seconds, timed runs, lane-instructions, answer) of a launch after a first one; every answer checked."""
    check(run({}))
    times: list[float] = []
    while len(times) < RUNS and sum(times) < BUDGET_S:
        stats: dict = {}
        start = time.perf_counter()
        out = run(stats)
        times.append(time.perf_counter() - start)
        check(out)
    return statistics.median(times), len(times), stats["lane_instructions"], out


def warm_rows(arch: str, codes: dict[Path, bytes]) -> tuple[list[list], list[str]]:
    rows, notes = [], []
    for case in cases(np.random.default_rng(0)):
        want = case.numpy()

        def check(got: np.ndarray, case: Case = case, want: np.ndarray = want) -> None:
            np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol, err_msg=case.name)

        def run(stats: dict, case: Case = case) -> np.ndarray:
            return launch(codes[case.source], case.kernel, case.grid, case.block, case.args, arch=arch,
                          stats=stats)[case.out]

        got = {}
        for backend in BACKENDS:
            os.environ["USERGPU_EMU"] = backend  # read by every launch (exec.native.executor_class)
            got[backend] = warm(run, check)
        (ref, ref_runs, ref_lanes, ref_out), (nat, nat_runs, nat_lanes, nat_out) = got["numpy"], got["native"]
        np.testing.assert_array_equal(nat_out.view(np.uint8), ref_out.view(np.uint8),
                                      err_msg=f"{case.name}: the backends differ")
        if nat_lanes != ref_lanes:
            notes.append(f"{case.name}: native counted {nat_lanes:,} lane-instructions, the reference {ref_lanes:,}")
        base = median_seconds(case.numpy, NUMPY_RUNS)
        rows.append([case.name, f"{ref_lanes:,}", f"{ref * 1e3:,.1f}", f"{ref_lanes / ref / 1e6:,.1f}",
                     f"{nat * 1e3:,.2f}", f"{nat_lanes / nat / 1e6:,.0f}", f"{ref / nat:,.1f}x",
                     f"{base * 1e3:,.3f}", f"{ref / base:,.0f}x", f"{nat / base:,.1f}x", f"{ref_runs}/{nat_runs}"])
    return rows, notes


# A fresh process: its imports, saxpy's first launch on the native backend, then a second (what a launch costs once
# all is loaded), both checked; prints what it measured.
CHILD = """
import json, sys, time
spawned, start = float(sys.argv[3]), time.perf_counter()
import numpy as np
from usergpu.emu.amd import launch
imports, process = time.perf_counter() - start, time.time() - spawned
co, n = open(sys.argv[1], "rb").read(), 1 << 20
rng = np.random.default_rng(0)
y, x = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
times = []
for _ in range(2):
    start = time.perf_counter()
    out = launch(co, "saxpy", (n // 256, 1, 1), (256, 1, 1), [y, x, np.float32(2.0), np.uint32(n)], arch=sys.argv[2])
    times.append(time.perf_counter() - start)
    np.testing.assert_array_equal(out[0], np.float32(2.0) * x + y)
print(json.dumps({"imports": imports, "process": process, "launch": times[0], "again": times[1]}))
"""
COLD = (("empty", "compiles the kernel", 1.0), ("warm", "loads it from the cache", 0.1))  # cache, what, target s


def cold_rows(arch: str, saxpy: bytes) -> list[list]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="emu-bench-") as tmp:
        elf = Path(tmp, "math.co")
        elf.write_bytes(saxpy)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "USERGPU_EMU": "native",
               "XDG_CACHE_HOME": str(Path(tmp, "cache"))}
        for cache, what, target in COLD:
            done = subprocess.run([sys.executable, "-c", CHILD, str(elf), arch, repr(time.time())], env=env,
                                  capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"the fresh process for a {cache} cache failed:\n{done.stderr}")
            got = json.loads(done.stdout.splitlines()[-1])
            rows.append([f"{cache} cache ({what})", f"{got['process'] * 1e3:,.0f}", f"{got['imports'] * 1e3:,.0f}",
                         f"{got['launch'] * 1e3:,.0f}", f"< {target * 1e3:,.0f}", f"{got['again'] * 1e3:,.0f}"])
    return rows


def main(arch: str = "gfx1100") -> None:
    sources = (CORPUS / "math.cl", CORPUS / "matmul.cl", CORPUS / "lds.cl", HERE / "emu_kernels.cl")
    codes = {p: usergpu.compile_opencl(p.read_text(), arch, INCLUDES) for p in sources}
    rows, notes = warm_rows(arch, codes)
    print(f"{arch}, warm: median of up to {RUNS} launches after a first one (runs: reference/native); numpy: median "
          f"of {NUMPY_RUNS}; M li/s: million lane-instructions per second")
    print(tabulate(rows, headers=["kernel", "lane-instr", "ref ms", "ref M li/s", "native ms", "native M li/s",
                                  "native/ref", "numpy ms", "ref/numpy", "native/numpy", "runs"],
                   colalign=("left", *["right"] * 10), disable_numparse=True))
    for note in notes:
        print(f"note: {note}")
    print(f"\n{arch}, cold: saxpy 2^20's first launch on the native backend in a fresh process "
          "(PYTHONDONTWRITEBYTECODE=1; its code object compiled beforehand)")
    print(tabulate(cold_rows(arch, codes[CORPUS / "math.cl"]),
                   headers=["kernel cache", "start + imports ms", "imports ms", "first launch ms", "target ms",
                            "second launch ms"], colalign=("left", *["right"] * 5), disable_numparse=True))


if __name__ == "__main__":
    main(*sys.argv[1:])
