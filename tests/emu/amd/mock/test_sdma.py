"""The SDMA queue: copies, fills, fences, traps, timestamps, atomics, polls, ring wrap-around and typed errors."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from mockrig import Rig, lohi, u32, u64

import usergpu.autogen.sdma_v6 as s6
from usergpu.emu.amd.mock import QueueError, SDMAQueue


def header(op: int, sub_op: int = 0, extra: int = 0) -> int:
    return s6.SDMA_PKT_COPY_LINEAR_HEADER_OP(op) | s6.SDMA_PKT_COPY_LINEAR_HEADER_SUB_OP(sub_op) | extra


def copy(dst: int, src: int, n: int) -> list[int]:
    return [header(s6.SDMA_OP_COPY, s6.SDMA_SUBOP_COPY_LINEAR), n - 1, 0, *lohi(src), *lohi(dst)]


def fence(address: int, value: int) -> list[int]:
    return [header(s6.SDMA_OP_FENCE), *lohi(address), value]


def atomic(op: int, address: int, src: int, cmp: int = 0, loop: int = 0) -> list[int]:
    extra = s6.SDMA_PKT_ATOMIC_HEADER_ATOMIC_OP(op) | s6.SDMA_PKT_ATOMIC_HEADER_LOOP(loop)
    return [header(s6.SDMA_OP_ATOMIC, extra=extra),
            *lohi(address), *lohi(src & (1 << 64) - 1), *lohi(cmp), 0]


@pytest.fixture
def rig(gpu):
    return Rig(gpu, SDMAQueue, 4096, pointers=0)


def test_copy_64_mib(gpu, rig):
    n = 64 << 20
    src = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    dst = np.zeros(n, np.uint8)
    rig.submit(copy(gpu.mem.map(dst), gpu.mem.map(src), n))
    rig.queue.step()
    assert hashlib.sha256(dst).digest() == hashlib.sha256(src).digest()
    assert rig.read_ptr() == 28  # bytes


def test_constant_fill(gpu, rig):
    out = np.zeros(16, np.uint8)
    va = gpu.mem.map(out)
    fill = s6.SDMA_OP_CONST_FILL
    rig.submit([header(fill, extra=s6.SDMA_PKT_CONSTANT_FILL_HEADER_FILLSIZE(2)), *lohi(va), 0x04030201, 10 - 1,
                header(fill), *lohi(va + 12), 0x77, 3 - 1])
    rig.queue.step()
    assert out.tolist() == [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 0, 0, 0x77, 0x77, 0x77, 0]


def test_fence_trap_timestamps_and_nop(gpu, rig, interrupts):
    out = gpu.mem.map(32)
    get = s6.SDMA_OP_TIMESTAMP
    nop = header(s6.SDMA_OP_NOP, extra=s6.SDMA_PKT_NOP_HEADER_COUNT(2))
    rig.submit([*fence(out, 0xFEED), header(s6.SDMA_OP_TRAP), 5, nop, 0, 0,
                header(get, s6.SDMA_SUBOP_TIMESTAMP_GET), *lohi(out + 8),
                header(get, s6.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL), *lohi(out + 16)])
    rig.queue.step()
    assert u32(gpu, out) == 0xFEED and interrupts == [("SDMA_TRAP", 5)]
    assert 0 < u64(gpu, out + 8) < u64(gpu, out + 16)


@pytest.mark.parametrize("op,start,src,cmp,result", [
    (47, 10, 5, 0, 15), (111, 10, -1, 0, 9),  # ADD_RTN_64 / ADD_64 (-1: the decrement a signal gets)
    (0x0F, 0xFFFFFFFF, 1, 0, 0), (0x10, 10, 3, 0, 7),  # 32-bit ADD wraps, SUB
    (0x08, 7, 9, 7, 9), (0x08, 6, 9, 7, 6),  # CMPSWAP_RTN_32 succeeds / fails
    (0x34, 3, 8, 0, 8), (0x31, 3, -2, 0, (1 << 64) - 2),  # UMAX_64, SMIN_64
    (0x15, 0b1100, 0b1010, 0, 0b1000), (0x16, 0b1100, 0b1010, 0, 0b1110), (0x17, 0b1100, 0b1010, 0, 0b0110),
    (0x27, 1, 2, 0, 2), (0x18, 4, 4, 0, 0), (0x18, 3, 4, 0, 4), (0x19, 0, 4, 0, 4), (0x19, 3, 4, 0, 2)])
def test_atomics(gpu, rig, op, start, src, cmp, result):
    cell = gpu.mem.map(np.array([start], np.uint64))
    rig.submit(atomic(op, cell, src, cmp))
    rig.queue.step()
    mask = (1 << 64) - 1 if op & 0x20 else 0xFFFFFFFF
    assert u64(gpu, cell) & mask == result & mask


def test_looping_cmpswap_stalls_until_it_succeeds(gpu, rig):
    cell = gpu.mem.map(np.array([1], np.uint64))
    rig.submit(atomic(0x28, cell, 5, cmp=2, loop=1))
    rig.queue.step()
    assert rig.queue.busy and u64(gpu, cell) == 1
    gpu.mem.write_bytes(cell, (2).to_bytes(8, "little"))
    rig.queue.step()
    assert not rig.queue.busy and u64(gpu, cell) == 5


def test_poll_regmem_stalls_then_resumes(gpu, rig):
    flag, out = gpu.mem.map(8), gpu.mem.map(8)
    poll = header(s6.SDMA_OP_POLL_REGMEM, extra=s6.SDMA_PKT_POLL_REGMEM_HEADER_FUNC(5)
                  | s6.SDMA_PKT_POLL_REGMEM_HEADER_MEM_POLL(1))
    rig.submit([poll, *lohi(flag), 3, 0xFF, 10, *fence(out, 1)])
    assert not rig.queue.step() and rig.queue.busy
    gpu.mem.write_bytes(flag, (0x104).to_bytes(4, "little"))  # masked: 4 >= 3
    assert rig.queue.step() and u32(gpu, out) == 1


def test_ring_wraps(gpu):
    rig = Rig(gpu, SDMAQueue, 64, pointers=0)  # 16-byte fences straddle a 64-byte ring's end after the first 3
    out = gpu.mem.map(4 * 30)
    for i in range(30):
        rig.submit(fence(out + 4 * i, i))
        if i % 3 == 2:
            rig.queue.step()
    assert np.frombuffer(gpu.mem.read_bytes(out, 120), np.uint32).tolist() == list(range(30))
    rig.submit([header(s6.SDMA_OP_NOP)] * 5 + copy(out, out + 4, 4))  # a 28-byte copy across the end
    rig.queue.step()
    assert u32(gpu, out) == 1


@pytest.mark.parametrize("words,says", [
    ([header(0x3F)], r"unknown \(op 0x3f sub_op 0x0\) at ring offset 0x8"),
    ([header(s6.SDMA_OP_COPY, s6.SDMA_SUBOP_COPY_LINEAR), 0, 0], "truncated.*COPY_LINEAR"),
    (atomic(0x01, 0, 0), "atomic operation 0x1"),
    (fence(0x10, 1), "GPU memory fault.*FENCE "),
])
def test_bad_packets_stop_the_queue(gpu, rig, words, says):
    rig.submit([header(s6.SDMA_OP_NOP, extra=s6.SDMA_PKT_NOP_HEADER_COUNT(1)), 0, *words])
    with pytest.raises(QueueError, match=says) as e:
        rig.queue.step()
    assert e.value.offset == 8 and rig.read_ptr() == 8
    assert not rig.queue.step()
