"""The seam between drivers and the OS: every file, sysfs, ioctl, mmap and MMIO access of a driver goes through a
HAL. `HAL` is the real one: each call as the real OS answers it (os, fcntl, libc mmap) beneath a root directory;
`root` re-roots the paths (a sysfs tree copied from another machine, one a test builds, a mock machine's) without
changing what driver code does. A mock machine's HAL (emu/mock/hal.py's MockHAL) is the same interface with mock
device files beneath it, and its arguments pass the same check (ioctl_arguments). Drivers take the HAL and the
memory and mapping names they use from here; the runtime picks a HAL by the device string."""

from __future__ import annotations

import ctypes
import errno as errno_
import fcntl
import os
from pathlib import Path

from usergpu.errors import DriverError
from usergpu.hostmem import (
    MAP_ANONYMOUS,
    MAP_FIXED,
    MAP_NORESERVE,
    MAP_PRIVATE,
    MAP_SHARED,
    MMIO,
    PROT_NONE,
    PROT_READ,
    PROT_WRITE,
    os_mmap,
    os_munmap,
    view,
)

CDATA = (ctypes.Structure, ctypes.Union, ctypes.Array, ctypes._SimpleCData, ctypes._Pointer)


class HAL:
    def __init__(self, root: str | os.PathLike = "/"):
        self.root = Path(root)

    def host_path(self, path: str) -> Path:
        """Where a path of the machine lies on this host: beneath root."""
        return self.root / path.lstrip("/")

    # ---- files and sysfs ----------------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self.host_path(path).exists()

    def listdir(self, path: str) -> list[str]:
        """Entries of a directory, sorted; [] if it does not exist or cannot be read."""
        try:
            return sorted(os.listdir(self.host_path(path)))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []

    def read_text(self, path: str) -> str | None:
        """A small file's text (sysfs attribute), or None when absent or unreadable."""
        try:
            return self.host_path(path).read_text()
        except (FileNotFoundError, PermissionError, OSError):
            return None

    def readlink_name(self, path: str) -> str | None:
        """Last component of a symlink's target (e.g. a PCI function's bound driver), or None."""
        try:
            return os.path.basename(os.readlink(self.host_path(path)))
        except OSError:
            return None

    # ---- device files -------------------------------------------------------------------------------------------
    def open(self, path: str, flags: int = os.O_RDWR | os.O_CLOEXEC) -> int:
        """A file descriptor; OSError (with its errno) when the file cannot be opened."""
        return os.open(self.host_path(path), flags)

    def close(self, fd: int) -> None:
        os.close(fd)

    def lock(self, path: str) -> int:
        """An exclusive lock on a file (created if needed, emptied once held), held while its descriptor is open;
        BlockingIOError if another process holds it."""
        fd = os.open(self.host_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        return fd

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        """Bytes of a file at an offset (a PCI function's config space)."""
        return os.pread(fd, length, offset)

    def pwrite(self, fd: int, data: bytes, offset: int) -> int:
        return os.pwrite(fd, data, offset)

    def ioctl(self, fd: int, request: int, arg: ctypes.Structure | ctypes.Array | ctypes.c_int | int) -> int:
        """The ioctl, reading and writing arg in place (an int goes by value); its return value (a new descriptor,
        a version); OSError with the driver's errno on failure, DriverError for an argument of the wrong type."""
        ioctl_arguments(request, arg)
        return fcntl.ioctl(fd, request, arg)

    def mmap(self, fd: int, length: int, offset: int = 0, prot: int = PROT_READ | PROT_WRITE,
             flags: int = MAP_SHARED, address: int = 0) -> int:
        """mmap(2) of a device file (fd -1: anonymous memory): the CPU address."""
        return os_mmap(address, length, prot, flags, fd, offset)

    def munmap(self, address: int, length: int) -> None:
        os_munmap(address, length)

    def mmio(self, fd: int, length: int, offset: int, width: int = 4) -> MMIO:
        """Registers or doorbells of a device file, mapped: an MMIO view."""
        return MMIO(self.mmap(fd, length, offset), length, width)

    def remote_servers(self) -> list[str]:
        """The remote PCI servers whose functions this machine's drivers see too: REMOTE=host:port[,host:port]
        (tinygrad's variable)."""
        return [a.strip() for a in os.environ.get("REMOTE", "").split(",") if a.strip()]

    def usb_backend(self):
        """The pyusb backend USB drivers enumerate and talk through: None, pyusb's own (libusb)."""
        return None


def integer_argument(value, low: int, high: int, what: str, name: str) -> int:
    """An integer argument within the C type that carries it. Anything else is refused before the call, where
    os/fcntl/ctypes would raise TypeError or OverflowError on the real HAL: DriverError, so a driver sees one kind
    of failure for a bad argument on either HAL."""
    if isinstance(value, int) and low <= value < high:
        return value
    raise DriverError(what, errno_.EINVAL, f"{name} {value!r} is not an integer in [{low:#x}, {high:#x})")


def ioctl_arguments(request, arg) -> tuple[int, str]:
    """(request, its name for errors), once request and arg are what an ioctl takes (a 32-bit request; an int
    argument as an unsigned long, or a ctypes object): anything else is DriverError on the real and the mock HAL
    alike, where fcntl would raise TypeError or OverflowError."""
    what = f"ioctl {request:#x}" if isinstance(request, int) else "ioctl"
    request = integer_argument(request, 0, 1 << 32, what, "request")
    if isinstance(arg, int):
        integer_argument(arg, 0, 1 << 64, what, "argument")
    elif not isinstance(arg, CDATA):
        raise DriverError(what, errno_.EINVAL, f"the argument is a {type(arg).__name__}: an ioctl takes an int or "
                                               "a ctypes object (a struct, an array, a c_int)")
    return request, what


__all__ = ["HAL", "MAP_ANONYMOUS", "MAP_FIXED", "MAP_NORESERVE", "MAP_PRIVATE", "MAP_SHARED", "MMIO", "PROT_NONE",
           "PROT_READ", "PROT_WRITE", "integer_argument", "ioctl_arguments", "view"]
