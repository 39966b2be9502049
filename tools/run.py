"""usergpu run: compile (or load) a kernel, make its arguments from specs, run it and summarise the outputs.

Argument specs, in the kernel's argument order:
  f32[1024]:random   a buffer of 1024 float32 (random, zeros, ones, or iota: 0, 1, 2, ...)
  data.npy           a buffer loaded from a .npy file
  u32=1000           a scalar by value (i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64)
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

import numpy as np
from tabulate import tabulate

from usergpu.emu.amd import launch
from usergpu.emu.amd.codeobj import compile_opencl, parse
from usergpu.emu.amd.exec import helpers
from usergpu.errors import Error
from usergpu.runtime.launch import launch as runtime_launch

DTYPES = {name: t for name, t in helpers.DTYPES.items() if name != "bf16"}  # numpy has no bfloat16
BUFFER = re.compile(r"^(\w+)\[(\d+)\]:(random|zeros|ones|iota)$")
SCALAR = re.compile(r"^(\w+)=(.+)$")
DEVICES = ("emu", "MOCKKFD+AMD", "KFD+AMD", "AMD")  # emu: the bare emulator; the rest: through the runtime


class SpecError(Error):
    """An --arg, --grid or --block the command cannot read: says which and the forms it takes."""


def argument(spec: str, rng: np.random.Generator):
    """A numpy array or scalar from one --arg spec."""
    if spec.endswith(".npy"):
        return np.load(spec)
    m = BUFFER.match(spec)
    if m and m.group(1) in DTYPES:
        dtype, n, fill = DTYPES[m.group(1)], int(m.group(2)), m.group(3)
        if fill == "random":
            values = rng.standard_normal(n) if np.dtype(dtype).kind == "f" else rng.integers(0, 1 << 16, n)
            return values.astype(dtype)
        return {"zeros": np.zeros, "ones": np.ones}[fill](n, dtype) if fill != "iota" else np.arange(n).astype(dtype)
    m = SCALAR.match(spec)
    if m and m.group(1) in DTYPES:
        dtype = DTYPES[m.group(1)]
        return dtype(float(m.group(2)) if np.dtype(dtype).kind == "f" else int(m.group(2), 0))
    raise SpecError(f"--arg {spec!r}: expected TYPE[N]:random|zeros|ones|iota, FILE.npy or TYPE=VALUE "
                    f"(types: {' '.join(DTYPES)})")


def dims(text: str, what: str) -> tuple[int, int, int]:
    try:
        parts = [int(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if not 1 <= len(parts) <= 3 or min(parts) < 1:
        raise SpecError(f"--{what} {text!r}: expected X[,Y[,Z]] of positive integers")
    return tuple(parts + [1] * (3 - len(parts)))


def add_kernel_arguments(p: argparse.ArgumentParser) -> None:
    """What says which kernel to run and with what: `usergpu run` and `usergpu prof run` take the same."""
    p.add_argument("file", help="FILE.cl (compiled with clang-22) or an AMDGPU code object")
    p.add_argument("--kernel", help="the kernel to run (default: the first)")
    p.add_argument("--grid", default="1", help="workgroups: X[,Y[,Z]]")
    p.add_argument("--block", default="64", help="work-items per workgroup: X[,Y[,Z]]")
    p.add_argument("--arg", action="append", default=[], help="an argument spec (repeat, in order)")
    p.add_argument("--arch", help="compile for / run as this arch (default: gfx1100, or the code object's)")
    p.add_argument("--wave64", action="store_true", help="compile a .cl for wave64")
    p.add_argument("--seed", type=int, default=0, help="seed of random buffers")


def prepare(args: argparse.Namespace):
    """(code object, kernel name, argument values, grid, block) from a command line's file, --kernel, --arg,
    --grid and --block; a mock device string also sets MOCKGPU_ARCH to the code object's arch."""
    path = Path(args.file)
    if not path.exists():
        raise SpecError(f"{path}: no such file")
    if path.suffix == ".cl":
        options = ["-I", str(path.parent)] + (["-mwavefrontsize64"] if args.wave64 else [])
        co = parse(compile_opencl(path.read_text(), args.arch or "gfx1100", options))
    else:
        co = parse(path.read_bytes())
    kernel = args.kernel or next(iter(co.kernels))
    if kernel not in co.kernels:
        raise SpecError(f"--kernel {kernel}: {path} has {', '.join(co.kernels)}")
    rng = np.random.default_rng(args.seed)
    values = [argument(s, rng) for s in args.arg]
    if args.dev.upper().startswith("MOCK") and co.arch:
        os.environ.setdefault("MOCKGPU_ARCH", co.arch)
    return co, kernel, values, dims(args.grid, "grid"), dims(args.block, "block")


def run(args: argparse.Namespace) -> int:
    if args.dev != "emu" and args.dev.split(":")[0].upper() not in DEVICES:
        raise SpecError(f"--dev {args.dev!r}: this version runs kernels on {', '.join(DEVICES)}")
    co, kernel, values, grid, block = prepare(args)
    start = time.perf_counter()
    if args.dev == "emu":
        outputs = launch(co, kernel, grid, block, values, arch=args.arch)
    else:  # through the runtime: the driver of the device string, on its GPU (or mock)
        outputs = runtime_launch(co.data, kernel, grid, block, values, args.dev)
    seconds = time.perf_counter() - start
    rows = []
    for i, out in enumerate(outputs):
        head = ", ".join(f"{x:.6g}" if out.dtype.kind == "f" else str(x) for x in out[:4])
        stats = [out.min(), out.max(), f"{out.astype(np.float64).mean():.6g}"] if out.size else ["-"] * 3
        rows.append([i, f"{out.dtype}[{out.size}]", *stats, head + (", ..." if out.size > 4 else "")])
        if args.save:
            Path(args.save).mkdir(parents=True, exist_ok=True)
            np.save(Path(args.save) / f"out{i}.npy", out)
    print(f"{kernel} on {args.dev} ({co.arch}): {seconds * 1e3:.1f} ms")
    print(tabulate(rows, headers=["buffer", "type", "min", "max", "mean", "first"]))
    return 0
