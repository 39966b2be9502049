"""Test helpers of the mock KFD: its raw ioctls, and the errno of a refused one."""

from __future__ import annotations

import errno

import pytest

from usergpu.hostmem import PAGE


def ioctl(hal, fd: int, ioc, **fields):
    """The raw ioctl on a descriptor; its struct after (the kernel writes it back even on failure)."""
    arg = ioc.struct(**fields)
    try:
        hal.ioctl(fd, ioc.request, arg)
    except OSError as e:
        e.args_after = arg
        raise
    return arg


def refused(code: int, hal, fd: int, ioc, **fields):
    with pytest.raises(OSError) as e:
        ioctl(hal, fd, ioc, **fields)
    assert e.value.errno == code, (errno.errorcode.get(e.value.errno), fields)
    return e.value.args_after


class Ring:
    """A queue (pm4 or sdma) made through usergpu's KFD driver on a one-page ring and a page for its read and
    write pointers: submit() writes packets, moves the write pointer and rings the doorbell; make() makes the
    queue (anew, after destroy) on the same memory, its pointers at 0."""

    def __init__(self, dev, kind: str):
        self.dev, self.kind, self.unit = dev, kind, 1 if kind == "sdma" else 4  # bytes per pointer count
        self.ring, self.pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
        self.words, self.ptrs = self.ring.view().cast("I"), self.pointers.view().cast("Q")
        self.make()

    def make(self) -> None:
        self.ptrs[0] = self.ptrs[1] = self.put = 0
        self.queue = self.dev.create_queue(self.kind, self.ring, self.pointers.va, self.pointers.va + 8)

    def submit(self, dwords: list[int]) -> None:
        for i, dword in enumerate(dwords):
            self.words[(self.put // 4 + i) % len(self.words)] = dword
        self.put += 4 * len(dwords)
        self.ptrs[1] = self.put // self.unit
        self.queue.ring(self.ptrs[1])

    @property
    def done(self) -> bool:
        """The engine has read everything submitted."""
        return self.ptrs[0] == self.ptrs[1]
