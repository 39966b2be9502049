"""The seam between drivers and the OS: every file, sysfs, ioctl, mmap and MMIO access of a driver goes through a HAL.

HAL is the real one: os, fcntl, libc mmap. `root` re-roots its paths (a sysfs tree copied from another machine,
or one a test builds) without changing what the driver code does. MockHAL routes the same calls for the device
files a mock installs (`install(path, device)`) to that device model, and everything else to the real HAL beneath
its root. Memory a driver maps is always real process memory at a real CPU address, on a mock too (the mock backs
it with shared memory it also hands to the emulated GPU), so driver code reads and writes it the same way. Only
MMIO and doorbells differ: they are written through `MMIO` views, whose writes a mock device receives as calls.
"""

from __future__ import annotations

import ctypes
import errno as errno_
import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from usergpu.errors import DeviceNotFound
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

__all__ = ["HAL", "MAP_ANONYMOUS", "MAP_FIXED", "MAP_NORESERVE", "MAP_PRIVATE", "MAP_SHARED", "MMIO", "MockHAL",
           "PROT_NONE", "PROT_READ", "PROT_WRITE", "view"]

class HAL:
    def __init__(self, root: str | os.PathLike = "/"):
        self.root = Path(root)

    def _p(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    # ---- files and sysfs ----------------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self._p(path).exists()

    def listdir(self, path: str) -> list[str]:
        """Entries of a directory, sorted; [] if it does not exist or cannot be read."""
        try:
            return sorted(os.listdir(self._p(path)))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []

    def read_text(self, path: str) -> str | None:
        """A small file's text (sysfs attribute), or None when absent or unreadable."""
        try:
            return self._p(path).read_text()
        except (FileNotFoundError, PermissionError, OSError):
            return None

    def readlink_name(self, path: str) -> str | None:
        """Last component of a symlink's target (e.g. a PCI function's bound driver), or None."""
        try:
            return os.path.basename(os.readlink(self._p(path)))
        except OSError:
            return None

    # ---- device files -------------------------------------------------------------------------------------------
    def open(self, path: str, flags: int = os.O_RDWR | os.O_CLOEXEC) -> int:
        """A file descriptor; OSError (with its errno) when the file cannot be opened."""
        return os.open(self._p(path), flags)

    def close(self, fd: int) -> None:
        os.close(fd)

    def lock(self, path: str) -> int:
        """An exclusive lock on a file (created if needed, emptied once held), held while its descriptor is open;
        BlockingIOError if another process holds it."""
        fd = os.open(self._p(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
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
        a version); OSError with the driver's errno on failure."""
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

    def usb_backend(self):
        """The pyusb backend USB drivers enumerate and talk through: None, pyusb's own (libusb)."""
        return None


class Device(Protocol):
    """What a mock device file answers: the calls a driver makes on an open file descriptor."""

    def ioctl(self, request: int, arg) -> int | None: ...

    def pread(self, length: int, offset: int) -> bytes: ...

    def pwrite(self, data: bytes, offset: int) -> int: ...

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int: ...

    def mmio(self, length: int, offset: int, width: int) -> MMIO: ...


class MockHAL(HAL):
    """The real HAL under `root` (a sysfs tree the mock writes), with device files that a mock answers."""

    FIRST_FD = 1 << 20  # well above any real descriptor, so a mock fd is never passed to the OS

    def __init__(self, root: str | os.PathLike):
        super().__init__(root)
        self._devices: dict[str, Callable[[], Device]] = {}
        self._usb_backend = None  # a mock never reaches the host's USB devices
        self._open: dict[int, Device] = {}
        self._next_fd = self.FIRST_FD

    def install(self, path: str, opener: Callable[[], Device]) -> None:
        """A device file at path: each open calls opener for the object that serves that descriptor."""
        self._devices[path] = opener

    def install_usb(self, backend) -> None:
        """A mock USB bus: a pyusb backend (usb.backend.IBackend) presenting the mock's devices."""
        self._usb_backend = backend

    def usb_backend(self):
        if self._usb_backend is None:
            raise DeviceNotFound("this mock has no USB devices")
        return self._usb_backend

    def exists(self, path: str) -> bool:
        return path in self._devices or super().exists(path)

    def open(self, path: str, flags: int = os.O_RDWR | os.O_CLOEXEC) -> int:
        if path not in self._devices:
            return super().open(path, flags)
        return self.attach(self._devices[path]())

    def attach(self, device: Device) -> int:
        """A descriptor for a device object a mock hands out itself (as the kernel's anonymous-inode files: a VFIO
        device from its group)."""
        fd, self._next_fd = self._next_fd, self._next_fd + 1
        self._open[fd] = device
        return fd

    def device(self, fd: int) -> Device:
        """The object a mock descriptor stands for (a container handed to a VFIO group); EBADF if none."""
        dev = self._device(fd)
        if dev is None:
            raise OSError(errno_.EBADF, f"fd {fd} is not a mock device's")
        return dev

    def _device(self, fd: int) -> Device | None:
        if fd < self.FIRST_FD:
            return None
        if fd not in self._open:
            raise OSError(errno_.EBADF, f"fd {fd} is not open")
        return self._open[fd]

    def close(self, fd: int) -> None:
        if self._device(fd) is None:
            super().close(fd)
        else:
            close = getattr(self._open.pop(fd), "close", None)
            if close:
                close()

    def ioctl(self, fd: int, request: int, arg: ctypes.Structure | ctypes.Array | ctypes.c_int | int) -> int:
        dev = self._device(fd)
        if dev is None:
            return super().ioctl(fd, request, arg)
        return dev.ioctl(request, arg) or 0

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        dev = self._device(fd)
        return super().pread(fd, length, offset) if dev is None else dev.pread(length, offset)

    def pwrite(self, fd: int, data: bytes, offset: int) -> int:
        dev = self._device(fd)
        return super().pwrite(fd, data, offset) if dev is None else dev.pwrite(data, offset)

    def mmap(self, fd: int, length: int, offset: int = 0, prot: int = PROT_READ | PROT_WRITE,
             flags: int = MAP_SHARED, address: int = 0) -> int:
        dev = self._device(fd) if fd >= 0 else None
        if dev is None:
            return super().mmap(fd, length, offset, prot, flags, address)
        return dev.mmap(length, offset, prot, flags, address)

    def mmio(self, fd: int, length: int, offset: int, width: int = 4) -> MMIO:
        dev = self._device(fd)
        if dev is None:
            return super().mmio(fd, length, offset, width)
        return dev.mmio(length, offset, width)
