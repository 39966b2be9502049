"""The native backend: each kernel translated to C from the same decode and semantics table as the reference
(numpy) backend, compiled once with clang-22 (emu/native), run through cffi. `executor_class()` picks the backend:
USERGPU_EMU=numpy forces the reference; without clang-22 the reference runs, after one warning."""

from __future__ import annotations

from usergpu.emu import native as shared
from usergpu.emu.amd.exec.executor import Executor


def executor_class() -> type[Executor]:
    """The Executor that runs kernels here: native where clang-22 is, unless USERGPU_EMU=numpy."""
    if not shared.wanted():
        return Executor
    from usergpu.emu.amd.exec.native import build
    from usergpu.emu.amd.exec.native.executor import NativeExecutor

    return NativeExecutor if shared.available(build.compiler) else Executor
