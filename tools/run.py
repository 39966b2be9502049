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
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tabulate import tabulate

from usergpu.emu.amd import launch
from usergpu.emu.amd.exec import helpers
from usergpu.errors import CodeObjectError, CompileError, Error
from usergpu.isa.amd.codeobj import compile_opencl, parse
from usergpu.isa.text import text_of
from usergpu.runtime.buffer import byte_count
from usergpu.runtime.device import parse as parse_device
from usergpu.runtime.launch import launch as runtime_launch
from usergpu.tools.common import BadArgument, input_file, output_dir, unsigned

DTYPES = {name: t for name, t in helpers.DTYPES.items() if name != "bf16"}  # numpy has no bfloat16
BUFFER = re.compile(r"^(\w+)\[(\d+)\]:(random|zeros|ones|iota)$")
SCALAR = re.compile(r"^(\w+)=(.+)$")
AMD_ARCHS = ("gfx1100", "gfx1200", "gfx942", "gfx950")
NV_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120")
ARCHS = AMD_ARCHS + NV_ARCHS
NV_SUFFIXES = (".cu", ".ptx", ".cubin")


class SpecError(BadArgument):
    """An --arg, --grid or --block the command cannot read: says which and the forms it takes."""


def spec(text: str) -> Callable[[np.random.Generator], object]:
    """An --arg spec, read once (argparse type): what makes its value from the seeded generator. A .npy file must
    exist, TYPE[N]:FILL be of a size that can be made, TYPE=VALUE hold a value of its type."""
    if text.endswith(".npy"):
        path = input_file(text)
        return lambda rng: _npy(path)
    m = BUFFER.match(text)
    if m and m.group(1) in DTYPES:
        dtype, n, fill = DTYPES[m.group(1)], int(m.group(2)), m.group(3)
        try:
            byte_count(n * np.dtype(dtype).itemsize, f"{text}: a buffer of")
        except Error as e:
            raise SpecError(str(e)) from None
        return lambda rng: _buffer(dtype, n, fill, rng)
    m = SCALAR.match(text)
    if m and m.group(1) in DTYPES:
        value = scalar(DTYPES[m.group(1)], m.group(2), text)
        return lambda rng: value
    raise SpecError(f"{text!r}: expected TYPE[N]:random|zeros|ones|iota, FILE.npy or TYPE=VALUE "
                    f"(types: {' '.join(DTYPES)})")


def scalar(dtype, text: str, spec_text: str):
    """TYPE=VALUE's value as that numpy type; SpecError for text that is not one of its values."""
    kind = np.dtype(dtype).kind
    try:
        value = float(text) if kind == "f" else int(text, 0)
    except ValueError:
        raise SpecError(f"{spec_text}: {text!r} is not {'a number' if kind == 'f' else 'an integer'}") from None
    if kind != "f" and not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max:
        info = np.iinfo(dtype)
        raise SpecError(f"{spec_text}: {value} is outside {np.dtype(dtype)}'s {info.min}..{info.max}")
    return dtype(value)


def _npy(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, EOFError) as e:
        raise SpecError(f"--arg {path}: not a .npy array file ({e})") from None


def _buffer(dtype, n: int, fill: str, rng: np.random.Generator) -> np.ndarray:
    if fill == "random":
        values = rng.standard_normal(n) if np.dtype(dtype).kind == "f" else rng.integers(0, 1 << 16, n)
        return values.astype(dtype)
    return {"zeros": np.zeros, "ones": np.ones}[fill](n, dtype) if fill != "iota" else np.arange(n).astype(dtype)


def dims(text: str) -> tuple[int, int, int]:
    """X[,Y[,Z]] of positive integers below 2^32 (argparse type for --grid and --block)."""
    try:
        parts = [int(x) for x in text.split(",")]
    except ValueError:
        parts = []
    if not 1 <= len(parts) <= 3 or min(parts) < 1 or max(parts) >= 1 << 32:
        raise SpecError(f"{text!r}: expected X[,Y[,Z]] of positive integers below 2^32")
    return tuple(parts + [1] * (3 - len(parts)))


def add_kernel_arguments(p: argparse.ArgumentParser) -> None:
    """What says which kernel to run and with what: `usergpu run` and `usergpu prof run` take the same."""
    p.add_argument("file", type=input_file, help="FILE.cl or FILE.cu (compiled with clang-22), an AMDGPU code "
                                                 "object, or NVIDIA's FILE.ptx / FILE.cubin")
    p.add_argument("--kernel", help="the kernel to run (default: the first)")
    p.add_argument("--grid", default=(1, 1, 1), type=dims, help="workgroups: X[,Y[,Z]]")
    p.add_argument("--block", default=(64, 1, 1), type=dims, help="work-items per workgroup: X[,Y[,Z]]")
    p.add_argument("--arg", action="append", default=[], type=spec, help="an argument spec (repeat, in order)")
    p.add_argument("--arch", type=arch, help="compile for / run as this arch (default: a mock device's "
                                             "MOCKGPU_ARCH, else gfx1100, or the code object's)")
    p.add_argument("--wave64", action="store_true", help="compile a .cl for wave64")
    p.add_argument("--seed", type=unsigned, default=0, help="seed of random buffers")


def arch(text: str) -> str:
    """An arch the emulator and compiler know (argparse type)."""
    if text not in ARCHS:
        raise SpecError(f"{text!r}: the archs are {', '.join(ARCHS)}")
    return text


class NvCode:
    """An NVIDIA kernel file as `usergpu run` uses it: its PTX (or cubin) bytes, its arch and its kernels. A cubin
    is read for its own (stock ones from ptxas or nvcc too: the runtime loads them where the GPU runs SASS)."""

    def __init__(self, data: bytes, arch: str | None):
        from usergpu.isa.nv import cubin, ptx

        self.data = data
        code = cubin.parse(data) if data[:4] == b"\x7fELF" else ptx.parse(data)
        self.arch, self.kernels = arch or code.arch, code.kernels

    def cubin(self) -> bytes:
        """What a device loads: the cubin, or the PTX assembled by ptxas for the arch."""
        from usergpu.isa.nv import assemble_ptx

        return self.data if self.data[:4] == b"\x7fELF" else assemble_ptx(self.data, self.arch or "sm_90")


def _nv(path: Path, arch: str | None) -> NvCode:
    from usergpu.isa.nv import compile_cuda

    if arch is not None and arch not in NV_ARCHS:
        raise SpecError(f"--arch {arch}: an NVIDIA kernel runs as {', '.join(NV_ARCHS)}")
    data = path.read_bytes()
    if path.suffix == ".cu":
        data = compile_cuda(text_of(data, "CUDA C"), arch or "sm_90", ["-I", str(path.parent)])
    return NvCode(data, arch)


def prepare(args: argparse.Namespace):
    """(code object, kernel name, argument values, grid, block) from a command line's file, --kernel, --arg,
    --grid and --block; a .cl is compiled for --arch, else a mock device's MOCKGPU_ARCH, else gfx1100, and a mock
    device string sets MOCKGPU_ARCH to the code object's arch where it is unset. A .cu is compiled for --arch, else
    a mock device's MOCKGPU_NV_ARCH, else sm_90 (a mock device string sets MOCKGPU_NV_ARCH likewise); a .cu, .ptx
    or .cubin gives an NvCode."""
    path = Path(args.file)
    mock = args.dev.upper().startswith("MOCK")
    mock_arch = os.environ.get("MOCKGPU_ARCH") if mock else None  # the mock GPU's (one it has no GPU for it says)
    target = args.arch or (mock_arch if mock_arch in AMD_ARCHS else "gfx1100")
    try:
        if path.suffix in NV_SUFFIXES:
            co = _nv(path, args.arch or (os.environ.get("MOCKGPU_NV_ARCH") if mock else None))
        elif path.suffix == ".cl":
            options = ["-I", str(path.parent)] + (["-mwavefrontsize64"] if args.wave64 else [])
            co = parse(compile_opencl(text_of(path.read_bytes(), "OpenCL C"), target, options))
        else:
            co = parse(path.read_bytes())
    except (CodeObjectError, CompileError) as e:  # say which file: the compiler names its own temporary one
        raise CodeObjectError(f"{path}: {e}") from None
    if not co.kernels:
        raise SpecError(f"{path} has no kernels")
    kernel = args.kernel or next(iter(co.kernels))
    if isinstance(co, NvCode):
        from usergpu.isa.nv.launch_check import find_kernel

        try:
            kernel = find_kernel(co.kernels, kernel, str(path))
        except Error:
            raise SpecError(f"--kernel {kernel}: {path} has {', '.join(co.kernels)}") from None
    elif kernel not in co.kernels:
        raise SpecError(f"--kernel {kernel}: {path} has {', '.join(co.kernels)}")
    rng = np.random.default_rng(args.seed)
    values = [make(rng) for make in args.arg]
    if mock and co.arch:
        os.environ.setdefault("MOCKGPU_NV_ARCH" if isinstance(co, NvCode) else "MOCKGPU_ARCH", co.arch)
    return co, kernel, values, args.grid, args.block


def add_parser(sub, help_line: str) -> None:
    """`usergpu run`'s arguments."""
    p = sub.add_parser("run", help=help_line, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_kernel_arguments(p)
    p.add_argument("--dev", default="emu", type=device,
                   help="where to run: emu (the bare emulator), MOCKKFD+AMD[:N], MOCKPCI+AMD[:N], KFD+AMD[:N], "
                        "PCI+AMD[:N], MOCK+NV[:N], NVK+NV[:N]")
    p.add_argument("--save", type=output_dir, help="write each output buffer as DIR/outN.npy")
    p.set_defaults(run=lambda args, hal: run(args))


def device(text: str) -> str:
    """emu, or a device string the runtime takes (argparse type for --dev)."""
    if text != "emu":
        try:
            parse_device(text)
        except Error as e:
            raise SpecError(str(e)) from None
    return text


def run(args: argparse.Namespace) -> int:
    co, kernel, values, grid, block = prepare(args)
    start = time.perf_counter()
    if isinstance(co, NvCode) and args.dev == "emu":
        from usergpu.emu.nv import launch as nv_launch

        outputs = nv_launch(co.data, kernel, grid, block, values, arch=co.arch)
    elif isinstance(co, NvCode):
        if not parse_device(args.dev)[0].endswith("+NV"):
            raise SpecError(f"--dev {args.dev}: an NVIDIA kernel runs on emu, MOCK+NV[:N] or NVK+NV[:N]")
        outputs = runtime_launch(co.cubin(), kernel, grid, block, values, args.dev)
    elif args.dev == "emu":
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
            Path(args.save).mkdir(exist_ok=True)
            np.save(Path(args.save) / f"out{i}.npy", out)
    print(f"{kernel} on {args.dev} ({co.arch}): {seconds * 1e3:.1f} ms")
    print(tabulate(rows, headers=["buffer", "type", "min", "max", "mean", "first"]))
    return 0
