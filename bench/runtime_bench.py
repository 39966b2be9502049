"""Runtime overheads on the mock GPUs (MOCKKFD+AMD: the KFD driver over the mock KFD; MOCKPCI+AMD: AM over the
register-level mock GPU; MOCK+NV: the RM driver over the mock RM, UVM and GPU), each against a baseline run in the
same process: an empty kernel's launch (submit -> completion signal waited) against the bare emulator's launch of
the same kernel and against a plain Python function call, and copyin / copyout of 64 MiB (through the SDMA or copy
engine) against numpy copying the same bytes (ratio: runtime / baseline).

    .venv/bin/python bench/runtime_bench.py [launches] [DEVICE ...]
"""

from __future__ import annotations

import statistics
import sys

import numpy as np
from timing import median_seconds  # bench/timing.py: run as python bench/<name>.py

import usergpu
from usergpu.tools.showcase import bare_emulator, nvidia

EMPTY = {"opencl": "__kernel void empty(void) {}", "cuda": 'extern "C" __global__ void empty() {}'}
COPY = 64 << 20  # bytes
COPIES = 5  # repetitions of each copy


def nothing(**kw) -> None:
    """A plain Python function call with the launch's keywords: the floor any Python launch path stands on."""


def main(launches: int = 200, device: str = "MOCKKFD+AMD") -> None:
    dev = usergpu.Device(device)
    co = (usergpu.assemble_ptx(usergpu.compile_cuda(EMPTY["cuda"], dev.arch), dev.arch) if nvidia(dev.arch) else
          usergpu.compile_opencl(EMPTY["opencl"], dev.arch))
    kernel = dev.load(co).kernels["empty"]
    emu_launch = bare_emulator(dev.arch)
    grid, block = (1, 1, 1), (64, 1, 1)
    kernel(grid=grid, block=block)  # warm up both paths
    emu_launch(co, "empty", grid, block, [], arch=dev.arch)
    gpu: list[float] = []
    runtime = median_seconds(lambda: gpu.append(kernel(grid=grid, block=block, wait=True)), launches)
    emu = median_seconds(lambda: emu_launch(co, "empty", grid, block, [], arch=dev.arch), launches)
    call = median_seconds(lambda: nothing(grid=grid, block=block), launches)
    print(f"{dev.name} ({dev.arch}) empty-kernel launch, median of {launches}: {runtime * 1e6:,.1f} µs "
          f"(GPU time {statistics.median(gpu) * 1e6:.2f} µs); bare emulator launch {emu * 1e6:,.1f} µs; "
          f"ratio {runtime / emu:.2f}x; a Python call {call * 1e6:.2f} µs (launch {runtime / call:,.0f}x, bare "
          f"emulator {emu / call:,.0f}x)")

    src = np.random.default_rng(0).integers(0, 256, COPY, np.uint8)
    host = np.empty_like(src)
    buf = dev.alloc(COPY)
    memcpy = median_seconds(lambda: np.copyto(host, src), COPIES)
    copyin = median_seconds(lambda: buf.copyin(src), COPIES)
    copyout = median_seconds(lambda: buf.copyout(np.uint8, COPY), COPIES)
    assert np.array_equal(buf.copyout(np.uint8, COPY), src)
    buf.free()
    dev.close()
    mbs = {name: COPY / 1e6 / s for name, s in (("memcpy", memcpy), ("copyin", copyin), ("copyout", copyout))}
    print(f"{COPY >> 20} MiB, median of {COPIES}: numpy memcpy {mbs['memcpy']:,.0f} MB/s; "
          f"copyin {mbs['copyin']:,.0f} MB/s (ratio {copyin / memcpy:.1f}x the time); "
          f"copyout {mbs['copyout']:,.0f} MB/s (ratio {copyout / memcpy:.1f}x the time)")


if __name__ == "__main__":
    for name in sys.argv[2:] or ("MOCKKFD+AMD", "MOCKPCI+AMD", "MOCK+NV"):
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 200, name)
