"""Emulator speed: lane-instructions per second and wall time for three kernels of the corpus (tests/kernels/emu),
each against numpy doing the same work in the same process (ratio: emulator time / numpy time).

    .venv/bin/python bench/emu_bench.py [arch]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import usergpu
from usergpu.emu.amd import launch

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "kernels" / "emu"


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main(arch: str = "gfx1100") -> None:
    def co(name: str) -> bytes:
        return usergpu.compile_opencl((CORPUS / name).read_text(), arch, ["-I", str(CORPUS), "-I", str(CORPUS.parent)])

    rng = np.random.default_rng(0)
    n = 1 << 20
    y, x = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    size = 256
    a, b = rng.uniform(-1, 1, (size, size)).astype(np.float32), rng.uniform(-1, 1, (size, size)).astype(np.float32)
    ints = rng.integers(-1000, 1000, 256 * 256).astype(np.int32)
    runs = [
        ("elementwise saxpy, 2^20 floats", co("math.cl"), "saxpy", (n // 256, 1, 1), (256, 1, 1),
         [y, x, np.float32(2.0), np.uint32(n)], lambda: np.float32(2.0) * x + y),
        (f"tiled matmul {size}x{size}x{size}", co("matmul.cl"), "matmul_tiled", (size // 16, size // 16, 1),
         (16, 16, 1), [a, b, np.zeros((size, size), np.float32), np.uint32(size), np.uint32(size), np.uint32(size)],
         lambda: a @ b),
        ("LDS reduction, 256 groups of 256", co("lds.cl"), "reduce_tree", (256, 1, 1), (256, 1, 1),
         [ints, np.zeros(256, np.int32)], lambda: ints.reshape(256, 256).sum(axis=1)),
    ]
    for what, code, kernel, grid, block, args, reference in runs:
        stats: dict = {}
        start = time.perf_counter()
        launch(code, kernel, grid, block, args, arch=arch, stats=stats)
        emu = time.perf_counter() - start
        ref, _ = timed(reference)
        lanes = stats["lane_instructions"]
        print(f"{arch} {what}: {emu:.2f} s, {lanes:,} lane-instructions, {lanes / emu:,.0f} lane-instructions/s; "
              f"numpy {ref * 1e3:.3f} ms; ratio {emu / ref:,.0f}x")


if __name__ == "__main__":
    main(*sys.argv[1:])
