"""The kernel's user-memory accessors, for the mock device files: copy_from_user, copy_to_user, strndup_user and
the page pinning of get_user_pages, on this process's own memory.

A mock device file runs inside the process that calls it, so a pointer a caller puts in an ioctl struct is an
address in our own memory. Dereferencing it directly would turn a bad one into SIGSEGV or SIGBUS; the kernel
answers EFAULT. So every access goes through process_vm_readv/process_vm_writev on our own pid: the kernel walks
our page tables for them and reports an address it cannot reach (NULL, unmapped, PROT_NONE, read-only for a write,
the kernel half, past the end of a file mapping) as a short count or EFAULT, never as a signal. A copy that
stops short is EFAULT too, as copy_from_user's nonzero "bytes not copied" is.
"""

from __future__ import annotations

import ctypes
import errno
import os

PAGE = 4096
TASK_SIZE_MAX = (1 << 47) - PAGE  # x86-64 with 4-level paging: access_ok() refuses anything from here on


class _iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
_CALLS = {}
for _name in ("process_vm_readv", "process_vm_writev"):
    _call = getattr(_libc, _name)
    _call.argtypes = [ctypes.c_int, ctypes.POINTER(_iovec), ctypes.c_ulong, ctypes.POINTER(_iovec), ctypes.c_ulong,
                      ctypes.c_ulong]
    _call.restype = ctypes.c_ssize_t
    _CALLS[_name] = _call


def fail(code: int, what: str) -> OSError:
    """The errno a mock kernel call answers, after what failed."""
    return OSError(code, f"{what}: {os.strerror(code)}")


def efault(what: str, address: int, size: int) -> OSError:
    return fail(errno.EFAULT, f"{what}: {size:#x} bytes at {address:#x}")


def access_ok(address: int, size: int) -> bool:
    """access_ok(): the range is in the user half and does not wrap."""
    return 0 <= address and 0 <= size and address + size <= TASK_SIZE_MAX


def _transfer(call: str, buf: ctypes.Array, address: int, what: str) -> None:
    size = len(buf)
    if size == 0:
        return
    mine, theirs = _iovec(ctypes.addressof(buf), size), _iovec(address, size)
    done = _CALLS[call](os.getpid(), ctypes.byref(mine), 1, ctypes.byref(theirs), 1, 0)
    if done == size:
        return
    err = ctypes.get_errno() if done < 0 else errno.EFAULT
    if err == errno.EFAULT:
        raise efault(what, address, size)
    raise OSError(err, f"{what}: {call} on this process: {os.strerror(err)}")


def _checked(address: int, size: int, what: str) -> None:
    if not access_ok(address, size):
        raise efault(what, address, size)


def copy_from_user(address: int, size: int, what: str = "copy_from_user") -> bytearray:
    """size bytes of caller memory at address; EFAULT unless all of them can be read."""
    _checked(address, size, what)
    out = bytearray(size)
    _transfer("process_vm_readv", (ctypes.c_char * size).from_buffer(out), address, what)
    return out


def copy_to_user(address: int, data: bytes | bytearray, what: str = "copy_to_user") -> None:
    """Write data to caller memory at address; EFAULT unless all of it can be written (a copy that stops at a
    bad page has written the bytes before it, as the kernel's does)."""
    _checked(address, len(data), what)
    _transfer("process_vm_writev", (ctypes.c_char * len(data)).from_buffer_copy(data), address, what)


def get_struct(address: int, ctype: type, what: str) -> ctypes.Structure:
    """A struct (or array) read from caller memory."""
    return ctype.from_buffer(copy_from_user(address, ctypes.sizeof(ctype), what))


def put_struct(address: int, value: ctypes.Structure | ctypes.Array, what: str) -> None:
    copy_to_user(address, bytes(value), what)


def strndup_user(address: int, limit: int, what: str) -> bytes:
    """A NUL-terminated string of caller memory, read a page at a time up to limit bytes (strndup_user): EFAULT if
    it runs into memory that cannot be read, EINVAL if it has no NUL within limit bytes."""
    out = b""
    while len(out) <= limit:
        at = address + len(out)
        chunk = bytes(copy_from_user(at, min(PAGE - at % PAGE, limit + 1 - len(out)), what))
        if b"\0" in chunk:
            return out + chunk[: chunk.index(b"\0")]
        out += chunk
    raise OSError(errno.EINVAL, f"{what}: no NUL in the {limit} bytes at {address:#x}")


def pin_user_pages(address: int, size: int, write: bool, what: str) -> None:
    """get_user_pages(): every page of [address, address + size) is mapped in this process, readable and (write)
    writable; EFAULT otherwise. What a device will reach through its IOMMU or its VM from then on."""
    _checked(address, size, what)
    if size == 0:
        return
    need = "rw" if write else "r"
    at, end = address, address + size
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split(maxsplit=2)[:2]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if hi <= at:
                continue
            if lo > at or not all(p in perms for p in need):
                break
            at = hi
            if at >= end:
                return
    raise efault(what, address, size)


IOC_IN, IOC_OUT = 1, 2  # _IOC_WRITE (the kernel reads the struct), _IOC_READ (it writes it back)


def with_user_struct(arg: int, struct: type, in_size: int, out_size: int, what: str, handler) -> None:
    """An ioctl's struct as the kernel's entry copies it (kfd_ioctl, drm_ioctl): in_size bytes of the caller's copied
    in, zero-filled up to the kernel's own size; handler run on that copy; out_size bytes copied back whether it
    failed or not (a MAP's n_success, a WAIT's wait_result). A copy that faults is EFAULT."""
    kdata = bytearray(max(in_size, out_size, ctypes.sizeof(struct)))
    if in_size:
        kdata[:in_size] = copy_from_user(arg, in_size, what)
    try:
        handler(struct.from_buffer(kdata))
    finally:
        if out_size:
            copy_to_user(arg, kdata[:out_size], what)
