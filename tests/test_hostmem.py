"""hostmem.copy_file: a copy between memfds in the kernel, sparse where the source was never written."""

from __future__ import annotations

import os

import numpy as np
import pytest

from usergpu.hostmem import PAGE, copy_file


def memfd(data: dict[int, bytes], size: int) -> int:
    fd = os.memfd_create("t", os.MFD_CLOEXEC)
    os.ftruncate(fd, size)
    for at, chunk in data.items():
        os.pwrite(fd, chunk, at)
    return fd


@pytest.mark.parametrize("dst_at", [0, 100, PAGE])
def test_a_copy_is_byte_for_byte_and_the_source_holes_stay_holes(dst_at):
    """Data, an eight-page hole, data: the destination (first filled with 0xFF) ends as the source's bytes, and the
    hole's whole pages there hold no data (punched, not made)."""
    size = 16 * PAGE
    rng = np.random.default_rng(3)
    head, tail = rng.bytes(3 * PAGE + 17), rng.bytes(2 * PAGE)
    src = memfd({0: head, 12 * PAGE: tail}, size)
    dst = memfd({0: b"\xff" * (size + 2 * PAGE)}, size + 2 * PAGE)
    try:
        assert copy_file(src, 0, dst, dst_at, size) == size
        assert os.pread(dst, size, dst_at) == os.pread(src, size, 0)
        assert os.pread(dst, dst_at, 0) == b"\xff" * dst_at  # nothing before the copy's start
        hole_start = -(-(dst_at + -(-len(head) // PAGE) * PAGE) // PAGE) * PAGE  # the source holds whole pages
        assert os.lseek(dst, hole_start, os.SEEK_DATA) >= (dst_at + 12 * PAGE) // PAGE * PAGE
    finally:
        os.close(src)
        os.close(dst)


def test_a_source_that_is_all_hole_copies_as_zeros():
    src, dst = memfd({}, 4 * PAGE), memfd({0: b"\x01" * (4 * PAGE)}, 4 * PAGE)
    try:
        assert copy_file(src, 0, dst, 0, 4 * PAGE - 5) == 4 * PAGE - 5
        assert os.pread(dst, 4 * PAGE, 0) == bytes(4 * PAGE - 5) + b"\x01" * 5
    finally:
        os.close(src)
        os.close(dst)
