"""The PTX emulator's start, in this fresh process: each kernel of the bench (bench/nv_emu_bench.py; its first
case, the second matmul's kernel being the first's) launched four times on the backend USERGPU_EMU names, with the
kernel cache XDG_CACHE_HOME gives. Prints one JSON line: the imports' seconds, the one-time work's (the PTX module
parsed, an empty kernel launched), and per kernel the first launch's seconds, the fastest of the three after it (on
the native backend, once its optimised build is made: bench/nv_emu_bench.py's optimised()) and its
lane-instructions. Every answer is checked against numpy's.
bench/nv_emu_bench.py runs it once per backend and cache.

    USERGPU_EMU=native XDG_CACHE_HOME=/tmp/empty .venv/bin/python bench/nv_emu_start.py kernels.ptx [arch]
"""

from __future__ import annotations

import time

START = time.perf_counter()  # before the imports, which the figures give apart

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from nv_emu_bench import cases, check, optimised, run_case  # noqa: E402 (run as python bench/nv_emu_start.py)

from usergpu.emu.nv import launch  # noqa: E402
from usergpu.emu.nv.ptx.launch import module_of  # noqa: E402
from usergpu.errors import Error  # noqa: E402

# an empty kernel, launched once before the bench's: what any process's first launch costs (the emulator's lazy
# imports, the native backend's cffi module of its C State; clang-22 where the cache is empty) falls on it
NOP = ".version 8.0\n.target {arch}\n.address_size 64\n.visible .entry nop()\n{{\n\tret;\n}}\n"  # str.format: {arch}


def main(ptx: str, arch: str = "sm_90") -> None:
    imports = time.perf_counter() - START
    try:
        code = Path(ptx).read_bytes()
    except OSError as e:
        raise SystemExit(f"nv_emu_start: the PTX file: {e}") from None
    start = time.perf_counter()
    module_of(code)
    launch(NOP.format(arch=arch), "nop", (1, 1, 1), (1, 1, 1), [], arch=arch)
    once = time.perf_counter() - start
    kernels = {}
    for case in cases(np.random.default_rng(0)):
        if any(k["kernel"] == case.kernel for k in kernels.values()):
            continue  # its library is loaded: the second matmul's first launch is not a kernel's start
        want = case.numpy()
        times: list[float] = []
        for i in range(4):
            if i == 1 and os.environ.get("USERGPU_EMU") != "numpy":
                optimised(case, code, arch)
            stats = {}
            start = time.perf_counter()
            got = run_case(case, code, arch, stats)
            times.append(time.perf_counter() - start)
            check(case, want, got)
        kernels[case.name] = {"kernel": case.kernel, "first": times[0], "again": min(times[1:]),
                              "lanes": stats["lane_instructions"]}
    print(json.dumps({"imports": imports, "once": once, "kernels": kernels}))


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        raise SystemExit("usage: .venv/bin/python bench/nv_emu_start.py kernels.ptx [arch]")
    try:
        main(*sys.argv[1:])
    except Error as e:  # PTX that is not, a bad arch: usergpu's words, not a traceback
        raise SystemExit(f"nv_emu_start: {e}") from None
