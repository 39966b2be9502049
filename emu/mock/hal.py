"""The mock side of the seam: MockHAL routes the HAL's calls for the device files a mock installs
(`install(path, device)`) to that device model, and everything else to the real HAL beneath its root. Memory a
driver maps is always real process memory at a real CPU address, on a mock too (the mock backs it with shared
memory it also hands to the emulated GPU), so driver code reads and writes it the same way. Only MMIO and doorbells
differ: they are written through `MMIO` views, whose writes a mock device receives as calls."""

from __future__ import annotations

import atexit
import ctypes
import errno as errno_
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from usergpu.drivers.hal import HAL, integer_argument, ioctl_arguments
from usergpu.emu.mock.sysfs_tree import Link, Mounts, Tree
from usergpu.errors import DeviceNotFound, DriverError
from usergpu.hostmem import (
    MAP_ANONYMOUS,
    MAP_FIXED,
    MAP_PRIVATE,
    MAP_SHARED,
    MMIO,
    PAGE,
    PROT_NONE,
    PROT_READ,
    PROT_WRITE,
    os_mmap,
    os_munmap,
)


class Device(Protocol):
    """What a mock device file answers: the calls a driver makes on an open file descriptor, with arguments MockHAL
    has already checked the way the OS would (types, ranges, sizes); an operation a device lacks answers as the
    VFS does for a file without it (ENOTTY, EINVAL, ENODEV), and close(), if it has one, runs when its descriptor
    closes. An ioctl's arg is the unsigned long the kernel's ioctl receives: a value, or the address of the
    caller's struct, which the device reads and writes only through emu/mock/uaccess (copy_from_user /
    copy_to_user), never directly."""

    def ioctl(self, request: int, arg: int) -> int | None: ...

    def pread(self, length: int, offset: int) -> bytes: ...

    def pwrite(self, data: bytes, offset: int) -> int: ...

    def mmap(self, length: int, offset: int, prot: int, flags: int, address: int) -> int: ...

    def mmio(self, length: int, offset: int, width: int) -> MMIO: ...


IOCTL_BUFSZ = 1024  # CPython's fcntl.ioctl hands the kernel a copy of a buffer up to this size, a larger one itself
MAX_RW_COUNT = 0x7FFFF000  # the most one read or write moves (INT_MAX & PAGE_MASK, fs/read_write.c)
TASK_SIZE = 1 << 47  # x86-64 user half: no mapping is longer


def _position(offset, count: int, what: str) -> int:
    """A file offset (loff_t), as rw_verify_area checks it: EINVAL if negative or if the access would pass 2^63."""
    offset = integer_argument(offset, -(1 << 63), 1 << 63, what, "offset")
    if offset < 0 or offset + count >= 1 << 63:
        raise OSError(errno_.EINVAL, f"{what} at offset {offset:#x}: {os.strerror(errno_.EINVAL)}")
    return offset


def _mapping(length, offset, what: str) -> tuple[int, int]:
    """(length, offset) of an mmap as do_mmap sees them: the offset as the unsigned long it becomes (ctypes passes
    any 64-bit pattern), EINVAL for an empty mapping or an offset off a page, ENOMEM for one longer than the
    address space, EOVERFLOW for one that runs past offset 2^64 (file_mmap_ok of a device file)."""
    length = integer_argument(length, 0, 1 << 64, what, "length")
    offset = integer_argument(offset, -(1 << 63), 1 << 64, what, "offset") & ((1 << 64) - 1)
    code = (errno_.EINVAL if length == 0 or offset % PAGE else errno_.ENOMEM if length > TASK_SIZE else
            errno_.EOVERFLOW if offset + length > 1 << 64 else 0)
    if code:
        raise OSError(code, f"{what} of {length:#x} bytes at offset {offset:#x}: {os.strerror(code)}")
    return length, offset


def _op(dev: Device, name: str, code: int):
    """A file operation of a device; one it lacks answers as the VFS does for a file without it."""
    op = getattr(dev, name, None)
    if op is None:
        raise OSError(code, f"{type(dev).__name__} has no {name}: {os.strerror(code)}")
    return op


def _ioctl(dev: Device, request, arg) -> int:
    """The ioctl as the real HAL makes it (fcntl.ioctl): an int goes by value; a ctypes object's bytes go through
    a copy of at most IOCTL_BUFSZ bytes (the object itself if larger), copied back after, failure or not. A
    buffer shorter than the size a request with a direction encodes is EFAULT (the kernel would copy past it).
    The copy ends at an inaccessible page, so a device that reads or writes past it (amdkfd copies the caller's
    size whatever the direction bits say) gets EFAULT, never the caller's heap."""
    request, what = ioctl_arguments(request, arg)
    call = _op(dev, "ioctl", errno_.ENOTTY)
    if isinstance(arg, int):
        return call(request, arg) or 0
    size, wants = ctypes.sizeof(arg), (request >> 16) & 0x3FFF
    if request >> 30 and size < wants:
        raise OSError(errno_.EFAULT, f"{what}: the request is for {wants} bytes, the {type(arg).__name__} has "
                                     f"{size}")
    if size > IOCTL_BUFSZ:
        return call(request, ctypes.addressof(arg)) or 0
    bounce = _bounce()
    ctypes.memset(bounce, 0, IOCTL_BUFSZ)  # nothing of an earlier call shows past the caller's bytes
    ctypes.memmove(bounce, ctypes.addressof(arg), size)
    try:
        return call(request, bounce) or 0
    finally:
        ctypes.memmove(ctypes.addressof(arg), bounce, size)


class _Copy:
    """One thread's ioctl copy: the last IOCTL_BUFSZ bytes of a page followed by an inaccessible one, unmapped
    when its thread ends."""

    def __init__(self):
        self.region = os_mmap(0, 2 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        os_mmap(self.region, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
        self.address = self.region + PAGE - IOCTL_BUFSZ

    def __del__(self):
        os_munmap(self.region, 2 * PAGE)


_copies = threading.local()


def _bounce() -> int:
    """The ioctl copy's address, made once per thread (a mock device never issues an ioctl itself, so one copy
    serves every call of a thread; threads in ioctls at once, a WAIT_EVENTS and a SET_EVENT, have their own, as
    each has its kernel stack)."""
    if not hasattr(_copies, "copy"):
        _copies.copy = _Copy()
    return _copies.copy.address


class MockHAL(HAL):
    """The real HAL under `root` (a sysfs tree the mock writes), with device files that a mock answers."""

    FIRST_FD = 1 << 20  # well above any real descriptor, so a mock fd is never passed to the OS

    def __init__(self, root: str | os.PathLike):
        super().__init__(root)
        self._devices: dict[str, Callable[[], Device]] = {}
        self._usb_backend = None  # a mock never reaches the host's USB devices
        self._open: dict[int, Device] = {}
        self._next_fd = self.FIRST_FD
        self.unmapped: list[Callable[[int, int], None]] = []  # told of each munmap (what a device mapped there goes)
        self.mapped: list[Callable[[int, int, int, int], None]] = []  # told of each mmap: (address, length, prot, fd)
        self.mounts = Mounts()  # the sysfs directories held in memory (sysfs_tree.py)

    def remote_servers(self) -> list[str]:
        """A mock machine reaches no other machine."""
        return []

    @classmethod
    def temporary(cls, prefix: str) -> MockHAL:
        """A MockHAL whose root is a new temporary folder (a mock machine's sysfs and procfs), removed at exit."""
        root = tempfile.mkdtemp(prefix=prefix)
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        return cls(root)

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

    def mount(self, path: str, tree: Tree) -> None:
        """A read-only sysfs directory at path, held in memory (sysfs_tree.py)."""
        self.mounts.mount(str(self.host_path(path)), tree)

    def exists(self, path: str) -> bool:
        return path in self._devices or super().exists(path) or self.mounts.find(str(self.host_path(path))) is not None

    def entries(self, path: str) -> list[str]:
        """A directory's entries as os.listdir gives them (a mounted tree's included), its OSError where it has none."""
        node = self.mounts.find(str(self.host_path(path)))
        if isinstance(node, dict):
            return sorted(node)
        if isinstance(node, str):
            raise OSError(errno_.ENOTDIR, f"{path}: {os.strerror(errno_.ENOTDIR)}")
        return os.listdir(self.host_path(path))

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(self.entries(path))
        except OSError:
            return []

    def read_text(self, path: str) -> str | None:
        node = self.mounts.find(str(self.host_path(path)))
        return node if isinstance(node, str) else super().read_text(path)

    def readlink(self, path: str) -> str:
        """A symlink's target, a mounted tree's too (os.readlink's OSError where path is none)."""
        node = self.mounts.find(str(self.host_path(path)), follow=False)
        return node.target if isinstance(node, Link) else os.readlink(self.host_path(path))

    def readlink_name(self, path: str) -> str | None:
        try:
            return os.path.basename(self.readlink(path))
        except OSError:
            return None

    def open(self, path: str, flags: int = os.O_RDWR | os.O_CLOEXEC) -> int:
        if path in self._devices:
            return self.attach(self._devices[path]())
        served = self.mounts.open(str(self.host_path(path)), flags)
        return super().open(path, flags) if served is None else self.attach(served)

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
        if not isinstance(fd, int):
            raise DriverError(f"fd {fd!r}", errno_.EBADF, "a file descriptor is an int")
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
        return super().ioctl(fd, request, arg) if dev is None else _ioctl(dev, request, arg)

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        dev = self._device(fd)
        if dev is None:
            return super().pread(fd, length, offset)
        length = min(integer_argument(length, 0, 1 << 63, "pread", "length"), MAX_RW_COUNT)
        offset = _position(offset, length, "pread")
        return _op(dev, "pread", errno_.EINVAL)(length, offset)

    def pwrite(self, fd: int, data: bytes, offset: int) -> int:
        dev = self._device(fd)
        if dev is None:
            return super().pwrite(fd, data, offset)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DriverError("pwrite", errno_.EINVAL, f"data of type {type(data).__name__}: bytes are written")
        data = bytes(data)[:MAX_RW_COUNT]
        offset = _position(offset, len(data), "pwrite")
        return _op(dev, "pwrite", errno_.EINVAL)(data, offset)

    def mmap(self, fd: int, length: int, offset: int = 0, prot: int = PROT_READ | PROT_WRITE,
             flags: int = MAP_SHARED, address: int = 0) -> int:
        dev = self._device(fd)
        if dev is None:
            got = super().mmap(fd, length, offset, prot, flags, address)
        else:
            length, offset = _mapping(length, offset, "mmap")
            prot, flags = (integer_argument(v, -(1 << 31), 1 << 31, "mmap", n)
                           for v, n in ((prot, "prot"), (flags, "flags")))
            address = integer_argument(address, 0, 1 << 64, "mmap", "address")
            got = _op(dev, "mmap", errno_.ENODEV)(length, offset, prot, flags, address)
        for hook in self.mapped:
            hook(got, length, prot, fd)
        return got

    def munmap(self, address: int, length: int) -> None:
        for hook in self.unmapped:
            hook(address, length)
        super().munmap(address, length)

    def mmio(self, fd: int, length: int, offset: int, width: int = 4) -> MMIO:
        dev = self._device(fd)
        if dev is None:
            return super().mmio(fd, length, offset, width)
        length, offset = _mapping(length, offset, "mmio")
        if integer_argument(width, 0, 9, "mmio", "width") not in (4, 8) or length % width:
            raise DriverError("mmio", errno_.EINVAL, f"{length:#x} bytes of {width!r}-byte registers")
        return _op(dev, "mmio", errno_.ENODEV)(length, offset, width)


def link(path: Path, target: str) -> None:
    """A relative symlink at path (replacing one a publish before made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        path.unlink()
    path.symlink_to(target)
