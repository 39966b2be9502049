"""What the emulators' native backends share: the choice of backend (USERGPU_EMU), the build of generated C with
clang-22 and its caches (build.py), the C forms of IEEE and integer edge cases (helpers.h) and the bounds-checked
access to GPU memory's mappings (gmem.h, mappings())."""

from __future__ import annotations

import os
import sys

_SAID: set[str] = set()


def say_once(what: str) -> None:
    if what not in _SAID:
        _SAID.add(what)
        print(f"usergpu: {what}", file=sys.stderr)


def wanted() -> bool:
    """USERGPU_EMU asks for the native backend (the default) rather than the numpy reference; any other value is a
    LaunchError naming both."""
    choice = os.environ.get("USERGPU_EMU", "native")
    if choice not in ("native", "numpy"):
        from usergpu.errors import LaunchError

        raise LaunchError(f"USERGPU_EMU={choice!r}: the emulator's backends are native (the default) and numpy")
    return choice == "native"


def available(compiler) -> bool:
    """clang-22 is here (compiler(): its path or None); where it is not, one warning says the reference runs."""
    from usergpu.emu.native.build import CLANG

    if compiler() is None:
        say_once(f"{CLANG} is not installed: kernels run on the numpy reference backend (much slower)")
        return False
    return True


def mappings(mem, ffi) -> tuple:
    """The C's view of a Memory's table (gmem.h: base, end, writable, host, count), made once until the mappings
    change (Memory.derived is emptied then), not once per launch. The table's arrays hold the host addresses of
    buffers the Memory keeps mapped, and a change makes new arrays: the view holds the ones it points at."""
    got = mem.derived.get("native")
    if got is None:
        t = mem.table
        host = ffi.cast("uint8_t **", ffi.from_buffer("uint64_t[]", t["host"])) if len(t["host"]) else ffi.NULL
        got = mem.derived["native"] = (t["base"], t["end"], t["writable"], host, len(t["base"]), t)
    return got


def point_at_mappings(st, mem, ffi) -> None:
    """Set a C State's mapping fields (gmem.h) to mem's table."""
    base, end, writable, host, count, _ = mappings(mem, ffi)
    st.base, st.end = ffi.from_buffer("uint64_t[]", base), ffi.from_buffer("uint64_t[]", end)
    st.writable, st.host, st.nranges, st.last = ffi.from_buffer("uint8_t[]", writable), host, count, -1
