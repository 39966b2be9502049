"""The CUDA kernel corpus for tests: its cases (tests/kernels/nv/cases.py), their PTX (clang-22) and cubins (ptxas),
each built once per (file, arch, options); the check of a kernel's outputs against its references; and the PTX
opcodes the corpus contains."""

from __future__ import annotations

import importlib.util
import re
import shutil
from functools import cache
from pathlib import Path

import numpy as np

import usergpu

NV = Path(__file__).parent / "nv"


def _load(name: str, path: Path):
    """A module by its path (the corpus folders are not packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


corpus = _load("corpus", Path(__file__).with_name("corpus.py"))
TOOLCHAIN = "needs clang-22 (Debian) and ptxas (PyPI nvidia-cuda-nvcc, the nv extra)"


def tool(name: str) -> Path | None:
    """A tool or file of NVIDIA's PyPI packages (bin/ptxas, bin/nvdisasm, nvvm/libdevice/...), None without them."""
    from usergpu.errors import ToolchainError
    from usergpu.isa.nv.compile import nvidia_tool

    try:
        return nvidia_tool(name)
    except ToolchainError:
        return None


def has_toolchain() -> bool:
    """Whether CUDA C compiles (clang-22) and PTX assembles (ptxas) here."""
    return bool(shutil.which("clang-22") and tool("bin/ptxas"))
cases = _load("nv_cases", NV / "cases.py")


@cache
def ptx(file: str, arch: str, options: tuple[str, ...] = ()) -> bytes:
    return usergpu.compile_cuda((NV / file).read_text(), arch, ["-I", str(NV), *options])


@cache
def cubin(file: str, arch: str, options: tuple[str, ...] = ()) -> bytes:
    return usergpu.assemble_ptx(ptx(file, arch, options), arch)


def builds(arch: str | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """Every (file, options) the cases compile (for arch, or for any)."""
    return sorted({(c.file, c.options) for c in cases.CASES if arch is None or arch in c.archs})


def _ordered(x: np.ndarray) -> np.ndarray:
    """Floats as integers in the order of their values, one step per representable value (both zeros are 0)."""
    bits = x.view(f"i{x.itemsize}").astype(np.int64)
    return np.where(bits < 0, -(bits & np.int64((1 << (8 * x.itemsize - 1)) - 1)), bits)


def _check_ulp(out: np.ndarray, ref: np.ndarray, ulp: int) -> None:
    """out within ulp units in the last place of ref rounded to out's type; NaN where (and only where) ref is."""
    with np.errstate(over="ignore", invalid="ignore"):
        want = ref.astype(out.dtype)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want), err_msg="NaN results differ")
    ok = ~np.isnan(want)
    dist = np.abs(_ordered(out[ok]).astype(object) - _ordered(want[ok]))  # Python ints: inf to -inf overflows int64
    bad = np.flatnonzero(dist > ulp)
    assert not len(bad), (f"{len(bad)} results more than {ulp} ulp off, e.g. got {out[ok][bad[:5]]}, correctly "
                          f"rounded {want[ok][bad[:5]]} ({dist[bad[:5]]} ulp)")


def check(got: list, want: list, case) -> None:
    """Each output array against its reference (None: not checked): AnyOrder as a multiset; floats within the
    case's ulp, or its tolerances (NaNs equal; with none, signed zeros must match too); integers exactly."""
    assert len(got) == len(want)
    for out, ref in zip(got, want, strict=True):
        if ref is None:
            continue
        if isinstance(ref, cases.AnyOrder):
            np.testing.assert_array_equal(np.sort(out, axis=None), np.sort(ref.values, axis=None))
        elif case.ulp and out.dtype.kind == "f":
            _check_ulp(out, np.asarray(ref), case.ulp)
        else:
            corpus.check([out], [ref], case)
            if out.dtype.kind == "f" and not (case.rtol or case.atol):
                same = ~np.isnan(out) & ~np.isnan(ref)
                np.testing.assert_array_equal(np.signbit(out[same]), np.signbit(ref[same]), err_msg="signs differ")


# ---- the opcodes of the corpus's PTX -------------------------------------------------------------------------------

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LEADING = re.compile(r"^(?:\s*(?:[{}]|[$%\w]+\s*:))*\s*")  # braces and labels before a statement
_GUARD = re.compile(r"^@!?%\w+\s+")


def opcodes(text: str) -> set[str]:
    """The instruction mnemonics (with every dot-modifier) of a PTX module: its statements (split at ';') less
    directives, labels, braces, comments and @%p / @!%p guards, first token each."""
    ops = set()
    for statement in _COMMENTS.sub("", text).split(";"):
        s = _GUARD.sub("", _LEADING.sub("", statement))
        if s and not s.startswith("."):
            ops.add(s.split(None, 1)[0])
    return ops


def corpus_instructions() -> dict[str, set[str]]:
    """Per arch (cases.ARCHS), every PTX opcode clang-22 emits for the corpus."""
    return {arch: set().union(*(opcodes(ptx(f, arch, o).decode()) for f, o in builds(arch))) for arch in cases.ARCHS}
