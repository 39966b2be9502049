"""PTX emulator speed, both backends: lane-instructions/s of the numpy reference (USERGPU_EMU=numpy) and of the
native backend on the AMD emulator bench's six kernels written in CUDA C (bench/nv_emu_kernels.cu), the native /
reference speed-up, and each against numpy doing the same math in the same process; warm, then cold: each kernel's
first launch in a fresh process (bench/nv_emu_start.py), on the reference, on the native backend with an empty
kernel cache (a kernel new to it: link, C, clang-22, load) and with the cache that run filled.

    .venv/bin/python bench/nv_emu_bench.py [arch]

Warm: launches until the optimised build is made (in the background; optimised()), a launch, then the median of up to
RUNS launches, fewer where they pass BUDGET_S (emu_bench's). Every launch's answer, warm and cold, is checked against
numpy's, and the two backends' warm answers against each other bit for bit, so a wrong answer is never timed as fast.
The PTX is compiled here, once: no figure includes clang-22's CUDA compile. The last lines name the issue 32 targets
missed, if any.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS on one thread, as the emulator runs
import numpy as np  # noqa: E402
from emu_bench import (  # noqa: E402
    BUDGET_S,
    EVEN_STEPS,
    FMA_STEPS,
    NUMPY_RUNS,
    ODD_STEPS,
    RUNS,
    Case,
    divergent,
    fma_chain,
    warm,
)
from tabulate import tabulate  # noqa: E402
from timing import median_seconds  # noqa: E402 (bench/timing.py: run as python bench/<name>.py)

import usergpu  # noqa: E402
from usergpu.emu.native.build import CLANG, compiler  # noqa: E402
from usergpu.emu.nv import launch  # noqa: E402
from usergpu.emu.nv.ptx.native.executor import TIER_UP, settle  # noqa: E402

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "nv_emu_kernels.cu"
BACKENDS = ("numpy", "native")  # USERGPU_EMU values: the reference, then the native backend
WARM_MLIS = {"saxpy": 1000, "matmul_tiled": 800}  # issue 32: native warm M li/s at least this, by kernel
SPEEDUP = 20  # issue 32: native warm at least this many times its reference
NEW_S, CACHED_S = 1.0, 0.1  # issue 32: a kernel's start, new to the cache and cached, under these seconds
MISSED = "issue 32 target missed: "
# (label, USERGPU_EMU): the fresh processes, in this order: the second fills the kernel cache the third reads
FRESH = (("reference", "numpy"), ("new", "native"), ("cached", "native"))


def cases(rng: np.random.Generator) -> list[Case]:
    n = 1 << 20
    y, x = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    ints = rng.integers(-1000, 1000, 256 * 256).astype(np.int32)
    lanes = 1 << 16
    m = rng.uniform(1.0, 1.005, lanes).astype(np.float32)
    seeds = rng.integers(0, 1 << 32, lanes, dtype=np.uint32)

    def matmul(size: int) -> Case:
        a, b = (rng.uniform(-1, 1, (size, size)).astype(np.float32) for _ in range(2))
        return Case(f"tiled matmul {size}³", SOURCE, "matmul_tiled", (size // 16, size // 16, 1), (16, 16, 1),
                    [a, b, np.zeros((size, size), np.float32), np.uint32(size)], 2, lambda: a @ b,
                    rtol=1e-4, atol=1e-4)  # numpy sums in another order

    # divergent's parity is threadIdx.x's, as emu_kernels.cl's lane_id(): the same for 256-thread blocks
    return [
        Case("saxpy 2^20", SOURCE, "saxpy", (n // 256, 1, 1), (256, 1, 1), [y, x, np.float32(2.0), np.uint32(n)], 0,
             lambda: np.float32(2.0) * x + y),  # 2x is exact: one rounding, as numpy's
        matmul(128),
        matmul(256),
        Case("shared reduction 256×256", SOURCE, "reduce_tree", (256, 1, 1), (256, 1, 1),
             [ints, np.zeros(256, np.int32)], 1, lambda: ints.reshape(256, 256).sum(axis=1, dtype=np.int32)),
        Case(f"loop: {FMA_STEPS} FMAs × 2^16 lanes", SOURCE, "fma_chain", (lanes // 256, 1, 1), (256, 1, 1),
             [np.zeros(lanes, np.float32), m, np.uint32(FMA_STEPS)], 0, lambda: fma_chain(m, FMA_STEPS), rtol=1e-5),
        Case("divergent × 2^16 lanes", SOURCE, "divergent", (lanes // 256, 1, 1), (256, 1, 1),
             [seeds, np.uint32(EVEN_STEPS), np.uint32(ODD_STEPS)], 0, lambda: divergent(seeds, EVEN_STEPS, ODD_STEPS)),
    ]


def missed(name: str, what: str, met: bool) -> list[str]:
    """The line saying a target is missed, if it is."""
    return [] if met else [f"{MISSED}{name}: {what}"]


def run_case(case: Case, code: bytes, arch: str, stats: dict) -> np.ndarray:
    """The case's answer, launched on the backend USERGPU_EMU names."""
    return launch(code, case.kernel, case.grid, case.block, case.args, arch=arch, stats=stats)[case.out]


def optimised(case: Case, code: bytes, arch: str) -> None:
    """Launch the case until its kernel has run long enough for its optimised build (TIER_UP), then wait for that
    build (made in the background): the native backend's warm figures are the optimised build's."""
    ran = 0
    while ran <= TIER_UP:
        stats: dict = {}
        run_case(case, code, arch, stats)
        ran += stats["lane_instructions"]
    settle()


def check(case: Case, want: np.ndarray, got: np.ndarray) -> None:
    np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol, err_msg=case.name)


def warm_rows(arch: str, code: bytes) -> tuple[list[list], list[str]]:
    """The warm table's rows, and the lines to say under it (targets missed, lane counts that differ)."""
    rows, said = [], []
    for case in cases(np.random.default_rng(0)):
        want = case.numpy()
        got = {}
        for backend in BACKENDS:
            os.environ["USERGPU_EMU"] = backend  # read by every launch (emu/nv/ptx/native: execute())
            optimised(case, code, arch)
            got[backend] = warm(lambda stats, case=case: run_case(case, code, arch, stats),
                                lambda out, case=case, want=want: check(case, want, out))
        (ref, ref_runs, ref_lanes, ref_out), (nat, nat_runs, nat_lanes, nat_out) = got["numpy"], got["native"]
        np.testing.assert_array_equal(nat_out.view(np.uint8), ref_out.view(np.uint8),
                                      err_msg=f"{case.name}: the backends differ")
        base = median_seconds(case.numpy, NUMPY_RUNS)
        ref_rate, nat_rate = ref_lanes / ref / 1e6, nat_lanes / nat / 1e6
        target = WARM_MLIS.get(case.kernel, 0)
        said += missed(case.name, f"native warm {nat_rate:,.0f} M li/s, under {target:,}", nat_rate >= target)
        said += missed(case.name, f"native warm {nat_rate / ref_rate:,.1f}x its reference, under {SPEEDUP}x",
                       nat_rate >= SPEEDUP * ref_rate)
        if nat_lanes != ref_lanes:
            said.append(f"note: {case.name}: native counted {nat_lanes:,} lane-instructions, the reference "
                        f"{ref_lanes:,}")
        rows.append([case.name, f"{nat_lanes:,}", f"{ref * 1e3:,.1f}", f"{ref_rate:,.1f}", f"{nat * 1e3:,.2f}",
                     f"{nat_rate:,.0f}", f"≥ {target:,}" if target else "", f"{nat_rate / ref_rate:,.1f}x",
                     f"{base * 1e3:,.3f}", f"{nat / base:,.1f}x", f"{ref_runs}/{nat_runs}"])
    return rows, said


def fresh(ptx: Path, arch: str, backend: str, cache: Path) -> dict:
    """bench/nv_emu_start.py's figures from a fresh process on a backend, with cache as XDG_CACHE_HOME."""
    env = {**os.environ, "USERGPU_EMU": backend, "XDG_CACHE_HOME": str(cache)}
    done = subprocess.run([sys.executable, str(HERE / "nv_emu_start.py"), str(ptx), arch], env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"the fresh process on {backend} ({cache}) failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def cold_rows(arch: str, code: bytes) -> tuple[list[list], list[str], list[str]]:
    """The cold table's rows, the targets missed, and each fresh process's one-time costs (not in the rows)."""
    with tempfile.TemporaryDirectory(prefix="nv-emu-bench-") as tmp:
        ptx = Path(tmp, "kernels.ptx")
        ptx.write_bytes(code)
        got = {label: fresh(ptx, arch, backend, Path(tmp, "cache")) for label, backend in FRESH}
    rows, said = [], []
    for name in got["reference"]["kernels"]:
        ref, new, hit = (got[label]["kernels"][name] for label, _ in FRESH)
        new_start, hit_start = new["first"] - new["again"], hit["first"] - hit["again"]
        for what, start, limit in (("new to the cache", new_start, NEW_S), ("cached", hit_start, CACHED_S)):
            said += missed(name, f"{what}, starts in {start * 1e3:,.0f} ms, not under {limit * 1e3:,.0f}",
                           start < limit)
        rows.append([name, f"{ref['first'] * 1e3:,.0f}", f"{ref['lanes'] / ref['first'] / 1e6:,.1f}",
                     f"{new['first'] * 1e3:,.0f}", f"{new['lanes'] / new['first'] / 1e6:,.1f}",
                     f"{ref['first'] / new['first']:,.1f}x", f"{new_start * 1e3:,.0f}", f"{hit_start * 1e3:,.0f}"])
    once = [f"{label}: imports {got[label]['imports'] * 1e3:,.0f} ms, then {got[label]['once'] * 1e3:,.0f} ms"
            for label, _ in FRESH]
    return rows, said, once


def main(arch: str = "sm_90") -> None:
    if compiler() is None:  # the native backend would fall back to the reference, timed twice under two names
        raise SystemExit(f"{CLANG} is not installed: the native backend cannot run, so it cannot be timed")
    code = usergpu.compile_cuda(SOURCE.read_text(), arch)
    cold, cold_missed, once = cold_rows(arch, code)
    rows, said = warm_rows(arch, code)
    print(f"{arch}, warm: median of up to {RUNS} launches after a first one, fewer past {BUDGET_S:g} s (runs: "
          f"reference/native); numpy: median of {NUMPY_RUNS}; M li/s: million lane-instructions per second")
    print(tabulate(rows, headers=["kernel", "lane-instr", "ref ms", "ref M li/s", "native ms", "native M li/s",
                                  "target", "native/ref", "numpy ms", "native/numpy", "runs"],
                   colalign=("left", *["right"] * 10), disable_numparse=True))
    print(f"\n{arch}, cold: each kernel's first launch (its first case's) in a fresh process "
          "(bench/nv_emu_start.py), on the reference and on the native backend with an empty kernel cache (new: "
          "link, C, clang-22, load); start: that first launch's time minus the process's fastest later launch of the "
          "kernel, new to the cache, and cached (the next fresh process: the library on disk, not in memory)")
    print(tabulate(cold, headers=["kernel", "ref first ms", "ref M li/s", "native first ms", "native M li/s",
                                  "native/ref", f"start new ms (< {NEW_S * 1e3:,.0f})",
                                  f"start cached ms (< {CACHED_S * 1e3:,.0f})"],
                   colalign=("left", *["right"] * 7), disable_numparse=True))
    print(f"one-time per fresh process, not in the rows: {'; '.join(once)} (the PTX module parsed and an empty "
          "kernel launched: the emulator's lazy imports; native: its C State's cffi module, and new: clang-22)")
    for line in said + cold_missed:
        print(line)
    if not any(line.startswith(MISSED) for line in said + cold_missed):
        print(f"issue 32 targets met: saxpy ≥ 1 G li/s warm, the tiled matmul ≥ 0.8 G, native ≥ {SPEEDUP}x its "
              f"reference, a start under {NEW_S:g} s new and {CACHED_S:g} s cached")


if __name__ == "__main__":
    if len(sys.argv) > 2:
        raise SystemExit("usage: .venv/bin/python bench/nv_emu_bench.py [arch]")
    try:
        main(*sys.argv[1:])
    except usergpu.Error as e:  # a bad arch: clang-22's or the launch check's words, not a traceback
        raise SystemExit(f"nv_emu_bench: {e}") from None
