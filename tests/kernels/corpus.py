"""The emulator's kernel corpus for tests: its cases (tests/kernels/emu/cases.py) and their code objects, compiled
once per (file, arch, wave size) with clang-22."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import numpy as np

import usergpu

CORPUS = Path(__file__).parent / "emu"


def _load(name: str, path: Path):
    """A cases module by its path (the corpus folders are not packages)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cases = _load("emu_cases", CORPUS / "cases.py")


@cache
def code_object(file: str, arch: str, wave: int) -> bytes:
    options = ["-I", str(CORPUS), "-I", str(CORPUS.parent)] + (["-mwavefrontsize64"] if wave == 64 else [])
    return usergpu.compile_opencl((CORPUS / file).read_text(), arch, options)


def check(got: list, want: list, case) -> None:
    """Each output array against the reference (None: not checked): floats within the case's tolerances (NaNs
    equal), integers exactly."""
    assert len(got) == len(want)
    for out, ref in zip(got, want, strict=True):
        if ref is None:
            continue
        if out.dtype.kind == "f":
            np.testing.assert_allclose(out, ref, rtol=case.rtol, atol=case.atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(out, ref)


# ---- the standard-OpenCL corpus (tests/kernels/std): OpenCL C's own built-in functions, linked from libclc ---------

STD = Path(__file__).parent / "std"
std_cases = _load("std_cases", STD / "cases.py")


@cache
def std_code_object(file: str, arch: str, wave: int) -> bytes:
    return usergpu.compile_opencl((STD / file).read_text(), arch, ["-mwavefrontsize64"] if wave == 64 else [])
