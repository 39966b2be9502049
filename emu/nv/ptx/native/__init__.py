"""The PTX emulator's native backend: each linked kernel translated to C from the same parsed module, linked places
and reverse post-order as the reference (numpy) backend, compiled once with clang-22 (emu/native), run through
cffi a warp at a time. `execute()` picks the backend: USERGPU_EMU=numpy forces the reference; without clang-22 the
reference runs, after one warning."""

from __future__ import annotations

from collections.abc import Callable

from usergpu.emu import native as shared


def execute(c=None) -> Callable:
    """The executor that runs PTX here (emu/nv/ptx/executor.py's execute, or this backend's), with the Compiled c's
    library built first where given (so building it is not part of a time slice)."""
    from usergpu.emu.nv.ptx import executor as reference

    if not shared.wanted():
        return reference.execute
    from usergpu.emu.native import build

    if not shared.available(build.compiler):
        return reference.execute
    from usergpu.emu.nv.ptx.native.executor import execute, library

    if c is not None:
        library(c)
    return execute
