"""The emulator's kernel corpus for tests: its cases (tests/kernels/emu/cases.py) and their code objects, compiled
once per (file, arch, wave size) with clang-22."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

import usergpu

CORPUS = Path(__file__).parent / "emu"
_spec = importlib.util.spec_from_file_location("emu_cases", CORPUS / "cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


@cache
def code_object(file: str, arch: str, wave: int) -> bytes:
    options = ["-I", str(CORPUS), "-I", str(CORPUS.parent)] + (["-mwavefrontsize64"] if wave == 64 else [])
    return usergpu.compile_opencl((CORPUS / file).read_text(), arch, options)
