"""The mock device files' user-memory accessors answer a bad address as the kernel's copy_from_user/copy_to_user
do, with EFAULT, and never touch memory they may not (no signal: the copies go through process_vm_readv/writev)."""

from __future__ import annotations

import ctypes
import errno

import pytest

from usergpu.emu.mock.uaccess import copy_from_user, copy_to_user, pin_user_pages, strndup_user
from usergpu.hostmem import (
    MAP_ANONYMOUS,
    MAP_FIXED,
    MAP_PRIVATE,
    PAGE,
    PROT_NONE,
    PROT_READ,
    PROT_WRITE,
    os_mmap,
    os_munmap,
)

BAD = {"NULL": 0, "the NULL page": 0x800, "the kernel half": 0xFFFF_8000_0000_1000, "non-canonical": 1 << 47,
       "wrapping": (1 << 64) - 8}


@pytest.fixture(scope="module")
def pages():
    """[read-write][read-only][PROT_NONE][read-write][unmapped]: addresses of each."""
    base = os_mmap(0, 5 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    for i, prot in ((0, PROT_READ | PROT_WRITE), (1, PROT_READ), (3, PROT_READ | PROT_WRITE)):
        os_mmap(base + i * PAGE, PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
    ctypes.memmove(base, b"hello\0", 6)
    os_munmap(base + 4 * PAGE, PAGE)
    return {"rw": base, "ro": base + PAGE, "none": base + 2 * PAGE, "rw2": base + 3 * PAGE, "gone": base + 4 * PAGE}


def efault(fn, *args) -> None:
    with pytest.raises(OSError) as e:
        fn(*args)
    assert e.value.errno == errno.EFAULT


def test_good_memory_is_copied_both_ways(pages):
    assert bytes(copy_from_user(pages["rw"], 5)) == b"hello"
    copy_to_user(pages["rw"] + 8, b"world")
    assert ctypes.string_at(pages["rw"] + 8, 5) == b"world"
    assert bytes(copy_from_user(pages["ro"], 4)) == bytes(4)  # a read-only page reads
    assert copy_from_user(0, 0) == bytearray()  # nothing to copy is no fault, as in the kernel


@pytest.mark.parametrize("where", BAD)
def test_bad_addresses_are_efault(where):
    efault(copy_from_user, BAD[where], 8)
    efault(copy_to_user, BAD[where], b"x" * 8)


def test_protections_and_holes_are_efault(pages):
    efault(copy_to_user, pages["ro"], b"x")  # read-only: readable, not writable
    efault(copy_from_user, pages["none"], 1)
    efault(copy_from_user, pages["gone"], 1)
    efault(copy_from_user, pages["rw"] + PAGE - 4, 4 + PAGE + 1)  # runs from good pages into PROT_NONE
    efault(copy_from_user, (1 << 47) - PAGE - 4, 8)  # straddles the top of the user half


def test_a_copy_out_that_stops_at_a_bad_page_wrote_the_bytes_before_it(pages):
    at = pages["rw2"] + PAGE - 3
    efault(copy_to_user, at, b"abcdef")
    assert ctypes.string_at(at, 3) == b"abc"


def test_strndup_user_reads_up_to_a_nul(pages):
    assert strndup_user(pages["rw"], PAGE, "name") == b"hello"
    at = pages["rw2"] + PAGE - 4  # a string whose NUL is the last byte before unmapped memory
    ctypes.memmove(at, b"abc\0", 4)
    assert strndup_user(at, PAGE, "name") == b"abc"
    ctypes.memmove(at, b"abcd", 4)  # no NUL before the hole: the read runs into it
    efault(strndup_user, at, PAGE, "name")
    ctypes.memmove(pages["rw2"], b"x" * PAGE, PAGE)
    with pytest.raises(OSError) as e:  # no NUL within the limit: EINVAL, as strndup_user gives
        strndup_user(pages["rw2"], 100, "name")
    assert e.value.errno == errno.EINVAL
    efault(strndup_user, 0, PAGE, "name")


def test_pinning_wants_every_page_mapped_with_the_access(pages):
    pin_user_pages(pages["rw"], PAGE, True, "pin")
    pin_user_pages(pages["ro"], PAGE, False, "pin")
    efault(pin_user_pages, pages["ro"], PAGE, True, "pin")
    efault(pin_user_pages, pages["rw"], 2 * PAGE, True, "pin")  # the second page is read-only
    efault(pin_user_pages, pages["none"], PAGE, False, "pin")
    efault(pin_user_pages, pages["rw2"], 2 * PAGE, False, "pin")  # a hole after the page
    efault(pin_user_pages, 0, PAGE, False, "pin")
