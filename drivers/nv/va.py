"""Addresses for the driver's memory, chosen below 1 TiB: GP entries and SEND_PCAS_A carry 40-bit addresses, so
pushbuffers and QMDs must lie there, and one window for every object keeps the rule simple. Each object gets an
unmapped guard page after it (as the AMD drivers' reserve does), so a kernel running one past its end faults."""

from __future__ import annotations

import errno

from usergpu.drivers.memobj import GUARD
from usergpu.hostmem import MAP_ANONYMOUS, MAP_NORESERVE, MAP_PRIVATE, PROT_NONE

WINDOW = (0x10_0000_0000, 0x100_0000_0000)  # [64 GiB, 1 TiB)
MAP_FIXED_NOREPLACE = 0x100000  # <sys/mman.h>: place at the address or fail with EEXIST, never replace a mapping
ALIGN = 1 << 16
_next = [WINDOW[0]]


def reserve(hal, size: int) -> int:
    """An address in the window for an object of size bytes, with GUARD bytes after it, reserved (PROT_NONE)."""
    span = -(-(size + GUARD) // ALIGN) * ALIGN
    tried = 0
    while tried < WINDOW[1] - WINDOW[0]:
        at = _next[0] if _next[0] + span <= WINDOW[1] else WINDOW[0]
        _next[0] = at + span
        tried += span
        try:
            got = hal.mmap(-1, size + GUARD, 0, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                           MAP_FIXED_NOREPLACE, at)
        except OSError as e:
            if e.errno != errno.EEXIST:
                raise
            continue
        if got == at:
            return got
        hal.munmap(got, size + GUARD)  # a kernel before 4.17 took the address as a hint only
    raise OSError(errno.ENOMEM, f"no {size:#x} bytes free below {WINDOW[1]:#x}")


def unreserve(hal, va: int, size: int) -> None:
    hal.munmap(va, size + GUARD)
