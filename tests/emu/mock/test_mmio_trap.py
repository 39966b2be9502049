"""Trapped register mappings: a memoryview over a tracked range reads and writes through the range's functions, in
any element width a driver casts it to (a narrower write is a read-modify-write of its dword, a wider access its
dwords); memoryviews elsewhere are the builtin's, and the builtin is back once no range is tracked."""

from __future__ import annotations

import builtins
import ctypes

import pytest

from usergpu.emu.mock import mmio_trap

REAL = builtins.memoryview


@pytest.fixture
def regs():
    """Eight dword registers behind a tracked 32-byte buffer; the log of (op, offset, value)."""
    memory = (ctypes.c_uint8 * 32)()
    values, log = [0x11111111 * k for k in range(8)], []

    def read32(at: int) -> int:
        log.append(("r", at))
        return values[at // 4]

    def write32(at: int, value: int) -> None:
        log.append(("w", at, value))
        values[at // 4] = value

    address = ctypes.addressof(memory)
    mmio_trap.track(address, 32, *mmio_trap.dwords(read32, write32))
    yield address, values, log
    mmio_trap.untrack(address)


def over(address: int, size: int):
    return memoryview((ctypes.c_uint8 * size).from_address(address))  # as tinygrad's to_mv makes one


def test_dword_reads_and_writes_are_the_registers(regs):
    address, values, log = regs
    mv = over(address, 32).cast("I")
    assert isinstance(mv, memoryview) and len(mv) == 8
    assert mv[3] == 0x33333333 and log == [("r", 12)]
    mv[2] = 0xDEADBEEF
    assert values[2] == 0xDEADBEEF and log[-1] == ("w", 8, 0xDEADBEEF)
    assert mv[1:3].tolist() == [0x11111111, 0xDEADBEEF] and mv[-1] == 0x77777777
    mv[4:6] = [1, 2]
    assert values[4:6] == [1, 2]


def test_other_widths_split_or_merge_dwords(regs):
    address, values, log = regs
    over(address + 4, 28).cast("Q")[0] = 0x0000000A_0000000B  # registers 1 and 2
    assert values[1:3] == [0xB, 0xA]
    over(address + 13, 1)[0] = 0xEE  # byte 1 of register 3: the rest of the dword kept
    assert values[3] == 0x3333EE33
    assert over(address, 32).cast("H")[7] == 0x3333  # the high half of register 3
    assert over(address + 8, 8).cast("Q").tolist() == [0x3333EE33_0000000A]


def test_untracked_memory_is_the_builtins_and_the_builtin_returns(regs):
    address, _, _ = regs
    plain = (ctypes.c_uint8 * 4)()
    assert type(memoryview(plain)) is REAL and type(memoryview(b"ab")) is REAL
    assert builtins.memoryview is not REAL
    mmio_trap.untrack(address)
    assert builtins.memoryview is REAL and type(over(address, 32)) is REAL


def test_a_slice_assignment_of_the_wrong_length_is_refused(regs):
    address, _, _ = regs
    with pytest.raises(ValueError, match="2 values for 3 elements"):
        over(address, 32).cast("I")[0:3] = [1, 2]
