"""One process per GPU: AM takes an exclusive lock file per PCI function before it touches the device, and writes
its pid and command into it, so a second driver is refused with who holds the board, and tools can find the boards
AM drives (and their owners) from the lock files (`held`)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from usergpu.drivers.hal import HAL
from usergpu.errors import Error

LOCK_DIR = "/tmp"
PREFIX = "usergpu_am_"


class DeviceBusy(Error):
    """Another process drives this GPU."""


@dataclass(frozen=True)
class Owner:
    bus: str  # the PCI address
    pid: int
    command: str


def lock_path(bus: str) -> str:
    return f"{LOCK_DIR}/{PREFIX}{bus}.lock"


def owner(hal: HAL, bus: str) -> Owner | None:
    """Who the lock file says holds the GPU (None: nobody wrote one)."""
    text = hal.read_text(lock_path(bus)) or ""
    pid, _, command = text.strip().partition(" ")
    return Owner(bus, int(pid), command) if pid.isdigit() else None


def acquire(hal: HAL, bus: str) -> int:
    """Hold the GPU at bus for this process; its lock descriptor (closing it releases the GPU)."""
    try:
        fd = hal.lock(lock_path(bus))
    except BlockingIOError:
        who = owner(hal, bus)
        held = f"process {who.pid} ({who.command})" if who else "another process"
        raise DeviceBusy(f"the GPU at {bus} is driven by {held}; stop that process first or pick another GPU") \
            from None
    hal.pwrite(fd, f"{os.getpid()} {' '.join(sys.argv)[:200]}\n".encode(), 0)
    return fd


def held(hal: HAL) -> list[Owner]:
    """The GPUs some process holds now (its lock is taken), with their owners, in address order."""
    out = []
    for name in sorted(hal.listdir(LOCK_DIR)):
        if not (name.startswith(PREFIX) and name.endswith(".lock")):
            continue
        bus = name[len(PREFIX) : -len(".lock")]
        try:
            hal.close(hal.lock(lock_path(bus)))  # free: nobody drives it
        except BlockingIOError:
            out.append(owner(hal, bus) or Owner(bus, 0, "?"))
    return out
