"""The native backend: each kernel translated to C from the same decode and semantics table as the reference
(numpy) backend, compiled once with clang-22, run through cffi. `executor_class()` picks the backend:
USERGPU_EMU=numpy forces the reference; without clang-22 the reference runs, after one warning."""

from __future__ import annotations

import os

from usergpu.emu.amd.exec.executor import Executor


def executor_class() -> type[Executor]:
    """The Executor that runs kernels here: native where clang-22 is, unless USERGPU_EMU=numpy."""
    choice = os.environ.get("USERGPU_EMU", "native")
    if choice == "numpy":
        return Executor
    if choice != "native":
        from usergpu.errors import LaunchError

        raise LaunchError(f"USERGPU_EMU={choice!r}: the emulator's backends are native (the default) and numpy")
    from usergpu.emu.amd.exec.native import build
    from usergpu.emu.amd.exec.native.executor import NativeExecutor, say_once

    if build.compiler() is None:
        say_once(f"{build.CLANG} is not installed: kernels run on the numpy reference backend (much slower)")
        return Executor
    return NativeExecutor
