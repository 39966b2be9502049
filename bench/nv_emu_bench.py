"""PTX emulator speed: warm lane-instructions/s on the AMD emulator bench's six kernels written in CUDA C
(bench/nv_emu_kernels.cu), each against numpy doing the same math in the same process (ratio: emulator time / numpy
time).

    .venv/bin/python bench/nv_emu_bench.py [arch]

A launch first (parse, link and compile its instructions), then the median of up to RUNS launches, fewer where they
pass BUDGET_S. Every answer is checked against numpy's, so a wrong answer is never timed as fast. The PTX is compiled
here, once: no figure includes clang-22.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS on one thread, as the emulator runs
import numpy as np  # noqa: E402
from emu_bench import EVEN_STEPS, FMA_STEPS, NUMPY_RUNS, ODD_STEPS, divergent, fma_chain  # noqa: E402
from tabulate import tabulate  # noqa: E402
from timing import median_seconds  # noqa: E402 (bench/timing.py: run as python bench/<name>.py)

import usergpu  # noqa: E402
from usergpu.emu.nv import launch  # noqa: E402

HERE = Path(__file__).resolve().parent
RUNS, BUDGET_S = 5, 2.0


def cases(rng: np.random.Generator) -> list[tuple]:
    """(name, kernel, grid, block, args, output index, numpy, rtol, atol)"""
    n = 1 << 20
    y, x = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ints = rng.integers(-1000, 1000, 256 * 256).astype(np.int32)
    lanes = 1 << 16
    m = rng.uniform(1.0, 1.005, lanes).astype(np.float32)
    seeds = rng.integers(0, 1 << 32, lanes, dtype=np.uint32)

    def matmul(size: int) -> tuple:
        a, b = (rng.uniform(-1, 1, (size, size)).astype(np.float32) for _ in range(2))
        return (f"tiled matmul {size}³", "matmul_tiled", (size // 16, size // 16), (16, 16),
                [a, b, np.zeros((size, size), np.float32), np.uint32(size)], 2, lambda: a @ b, 1e-4, 1e-4)

    # divergent's parity is threadIdx.x's, as emu_kernels.cl's lane_id(): the same for 256-thread blocks
    return [
        ("saxpy 2^20", "saxpy", (n // 256,), (256,), [y, x, np.float32(2.0), np.uint32(n)], 0,
         lambda: np.float32(2.0) * x + y, 0, 0),
        matmul(128), matmul(256),
        ("shared reduction 256×256", "reduce_tree", (256,), (256,), [ints, np.zeros(256, np.int32)], 1,
         lambda: ints.reshape(256, 256).sum(axis=1, dtype=np.int32), 0, 0),
        (f"loop: {FMA_STEPS} FMAs × 2^16 lanes", "fma_chain", (lanes // 256,), (256,),
         [np.zeros(lanes, np.float32), m, np.uint32(FMA_STEPS)], 0, lambda: fma_chain(m, FMA_STEPS), 1e-5, 0),
        ("divergent × 2^16 lanes", "divergent", (lanes // 256,), (256,),
         [seeds, np.uint32(EVEN_STEPS), np.uint32(ODD_STEPS)], 0, lambda: divergent(seeds, EVEN_STEPS, ODD_STEPS),
         0, 0),
    ]


def main(arch: str = "sm_90") -> None:
    code = usergpu.compile_cuda((HERE / "nv_emu_kernels.cu").read_text(), arch)
    rows = []
    for name, kernel, grid, block, args, out, numpy, rtol, atol in cases(np.random.default_rng(0)):
        want = numpy()
        times: list[float] = []
        stats: dict = {}
        for first in (True, *[False] * RUNS):
            stats = {}
            start = time.perf_counter()
            got = launch(code, kernel, grid, block, args, arch=arch, stats=stats)[out]
            if not first:
                times.append(time.perf_counter() - start)
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
            if sum(times) > BUDGET_S:
                break
        secs, base = statistics.median(times), median_seconds(numpy, NUMPY_RUNS)
        lanes = stats["lane_instructions"]
        rows.append([name, f"{lanes:,}", f"{secs * 1e3:,.1f}", f"{lanes / secs / 1e6:,.1f}", f"{base * 1e3:,.3f}",
                     f"{secs / base:,.0f}x", str(len(times))])
    print(f"{arch}, warm: median of up to {RUNS} launches after a first one; numpy: median of {NUMPY_RUNS}; "
          "M li/s: million lane-instructions per second")
    print(tabulate(rows, headers=["kernel", "lane-instr", "ms", "M li/s", "numpy ms", "emu/numpy", "runs"],
                   colalign=("left", *["right"] * 6), disable_numparse=True))


if __name__ == "__main__":
    main(*sys.argv[1:])
