"""The SDMA queue: copies, fills, writes, fences, traps, timestamps, atomics, polls, IBs, ring wrap-around and typed
errors."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest
from mockrig import Rig, lohi, u32, u64

import usergpu.autogen.sdma_v6 as s6
from usergpu.emu.amd.mock import GPU, QueueError, SDMAQueue
from usergpu.emu.amd.mock.gpu import BUS_RATE, COPY_RATE
from usergpu.isa.amd.hw.soc import SDMA, TIMESTAMP_HZ

# the packets below are SDMA 6's; SDMA 4.4.x (CDNA) encodes them alike, with narrower counts (its own header's)
RDNA = ("gfx11", "gfx12")


def header(op: int, sub_op: int = 0, extra: int = 0) -> int:
    return s6.SDMA_PKT_COPY_LINEAR_HEADER_OP(op) | s6.SDMA_PKT_COPY_LINEAR_HEADER_SUB_OP(sub_op) | extra


def copy(dst: int, src: int, n: int) -> list[int]:
    return [header(s6.SDMA_OP_COPY, s6.SDMA_SUBOP_COPY_LINEAR), n - 1, 0, *lohi(src), *lohi(dst)]


def fence(address: int, value: int) -> list[int]:
    return [header(s6.SDMA_OP_FENCE), *lohi(address), value]


def write_linear(address: int, *words: int) -> list[int]:
    return [header(s6.SDMA_OP_WRITE, s6.SDMA_SUBOP_WRITE_LINEAR), *lohi(address), len(words) - 1, *words]


def poll_mem(address: int, ref: int, function: int = 5) -> list[int]:
    """A wait as tinygrad's copy queue emits it: >= (or ==) on memory, retried forever."""
    poll = header(s6.SDMA_OP_POLL_REGMEM, extra=s6.SDMA_PKT_POLL_REGMEM_HEADER_FUNC(function)
                  | s6.SDMA_PKT_POLL_REGMEM_HEADER_MEM_POLL(1))
    return [poll, *lohi(address), ref, 0xFFFFFFFF,
            s6.SDMA_PKT_POLL_REGMEM_DW5_INTERVAL(4) | s6.SDMA_PKT_POLL_REGMEM_DW5_RETRY_COUNT(0xFFF)]


def indirect(address: int, dwords: int) -> list[int]:
    return [header(s6.SDMA_OP_INDIRECT, extra=s6.SDMA_PKT_INDIRECT_HEADER_VMID(0)), *lohi(address), dwords, 0, 0]


def ib(gpu, words: list[int]) -> tuple[int, int]:
    """An IB in GPU memory, padded with NOPs to 8 dwords as sdma_v6_0_ring_pad_ib does: its address and dwords."""
    words = words + [header(s6.SDMA_OP_NOP)] * (-len(words) % 8)
    return gpu.mem.map(np.array(words, np.uint32)), len(words)


def atomic(op: int, address: int, src: int, cmp: int = 0, loop: int = 0) -> list[int]:
    extra = s6.SDMA_PKT_ATOMIC_HEADER_ATOMIC_OP(op) | s6.SDMA_PKT_ATOMIC_HEADER_LOOP(loop)
    return [header(s6.SDMA_OP_ATOMIC, extra=extra),
            *lohi(address), *lohi(src & (1 << 64) - 1), *lohi(cmp), 0]


@pytest.fixture
def rig(gpu):
    return Rig(gpu, SDMAQueue, 4096, pointers=0)


def test_copy_of_the_largest_count(gpu, rig):
    """One COPY_LINEAR of as many bytes as its COUNT field holds (SDMA 4's 22 bits: 4 MiB), 64 MiB on SDMA 6."""
    n = min(SDMA[gpu.arch[:5]].SDMA_PKT_COPY_LINEAR_COUNT_COUNT(-1) + 1, 64 << 20)
    assert n == (64 << 20 if gpu.arch[:5] in RDNA else 4 << 20)
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


def test_write_linear(gpu, rig):
    out = gpu.mem.map(32)
    rig.submit([*write_linear(out, 0xDEADBEEF), *write_linear(out + 8, 0x11223344, 0x55667788),  # tinygrad's write
                *write_linear(out + 16, 1, 2, 3, 4)])
    rig.queue.step()
    assert np.frombuffer(gpu.mem.read_bytes(out, 32), np.uint32).tolist() == [
        0xDEADBEEF, 0, 0x11223344, 0x55667788, 1, 2, 3, 4]
    assert rig.read_ptr() == 20 + 24 + 32 and not rig.queue.busy


def test_indirect_runs_an_ib_of_packets(gpu, rig, interrupts):
    src = gpu.mem.map(np.arange(16, dtype=np.uint8))
    out = gpu.mem.map(32)
    # sdma_v6_0_ring_emit_mem_sync: the caches, coherent here; SDMA 4.4.2 has no such packet (nor an emit_mem_sync)
    gcr = [header(s6.SDMA_OP_GCR_REQ), 0, 0, 0, 0] if gpu.arch[:5] in RDNA else []
    body, dwords = ib(gpu, [*copy(out, src, 16), *gcr, *write_linear(out + 16, 7), *fence(out + 20, 9),
                            header(s6.SDMA_OP_TRAP), 3])
    rig.submit([header(s6.SDMA_OP_NOP)] * 2 + indirect(body, dwords) + fence(out + 24, 1))
    rig.queue.step()
    assert gpu.mem.read_bytes(out, 16) == bytes(range(16))
    assert np.frombuffer(gpu.mem.read_bytes(out + 16, 12), np.uint32).tolist() == [7, 9, 1]
    assert interrupts == [("SDMA_TRAP", 3)] and rig.read_ptr() == 8 + 24 + 16


@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_sdma_4_has_no_gcr_req(arch):
    rig = Rig(GPU(arch), SDMAQueue, 4096, pointers=0)
    rig.submit([header(s6.SDMA_OP_GCR_REQ), 0, 0, 0, 0])
    with pytest.raises(QueueError, match=r"unknown \(op 0x11 sub_op 0x0\)"):
        rig.queue.step()


def test_a_poll_inside_an_ib_stalls_and_resumes_there(gpu, rig):
    counter, flag, out = gpu.mem.map(8), gpu.mem.map(8), gpu.mem.map(4)
    body, dwords = ib(gpu, [*atomic(0x6F, counter, 1), *poll_mem(flag, 2), *fence(out, 5)])  # ADD_64 before the wait
    rig.submit(indirect(body, dwords))
    assert rig.queue.step() and rig.queue.busy and u64(gpu, counter) == 1 and rig.read_ptr() == 0
    assert not rig.queue.step()
    gpu.mem.write_bytes(flag, (3).to_bytes(4, "little"))  # 3 >= 2
    assert rig.queue.step() and not rig.queue.busy
    assert u64(gpu, counter) == 1 and u32(gpu, out) == 5 and rig.read_ptr() == 24  # the add ran once


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx942", "gfx950"])
def test_poll_regmem_flushes_the_hdp_through_nbio(arch):
    gpu = GPU(arch)
    rig = Rig(gpu, SDMAQueue, 4096, pointers=0)
    req, done = 0xE26, 0xE27  # NBIO's BIF_BX_PF0_GPU_HDP_FLUSH_REQ / _DONE (test_pm4.py says where from)
    sdma0 = 1 << 10  # nbio_v4_3_hdp_flush_reg.ref_and_mask_sdma0
    out = gpu.mem.map(4)
    flush = header(s6.SDMA_OP_POLL_REGMEM, extra=s6.SDMA_PKT_POLL_REGMEM_HEADER_HDP_FLUSH(1)
                   | s6.SDMA_PKT_POLL_REGMEM_HEADER_FUNC(3))
    rig.submit([flush, done << 2, req << 2, sdma0, sdma0, s6.SDMA_PKT_POLL_REGMEM_DW5_RETRY_COUNT(0xFFF)
                | s6.SDMA_PKT_POLL_REGMEM_DW5_INTERVAL(10), *fence(out, 1)])  # as sdma_v6_0_ring_emit_hdp_flush
    rig.queue.step()
    assert not rig.queue.busy and u32(gpu, out) == 1
    assert gpu.read_reg(done) == sdma0 and gpu.hdp.flushes == 1


def test_ibs_do_not_nest(gpu, rig):
    inner, n = ib(gpu, fence(gpu.mem.map(4), 1))
    outer, m = ib(gpu, [header(s6.SDMA_OP_NOP)] * 8 + indirect(inner, n))
    rig.submit(indirect(outer, m))
    with pytest.raises(QueueError, match=f"IBs do not nest: packet INDIRECT .* at IB {outer:#x} offset 0x20 bytes"):
        rig.queue.step()


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
    (write_linear(0x1000, 1, 2, 3)[:5], "truncated: it is 28 bytes, only 20.*WRITE_LINEAR"),
    ([header(s6.SDMA_OP_POLL_REGMEM, extra=s6.SDMA_PKT_POLL_REGMEM_HEADER_HDP_FLUSH(1)
             | s6.SDMA_PKT_POLL_REGMEM_HEADER_MEM_POLL(1)), 0, 0, 0, 0, 0], "MEM_POLL 1 HDP_FLUSH 1"),
])
def test_bad_packets_stop_the_queue(gpu, rig, words, says):
    rig.submit([header(s6.SDMA_OP_NOP, extra=s6.SDMA_PKT_NOP_HEADER_COUNT(1)), 0, *words])
    with pytest.raises(QueueError, match=says) as e:
        rig.queue.step()
    assert e.value.offset == 8 and rig.read_ptr() == 8
    assert not rig.queue.step()


@pytest.mark.parametrize("over_bus", [False, True], ids=["vram", "over-the-bus"])
def test_a_copy_takes_its_bytes_time_at_the_boards_rate(gpu, rig, over_bus):
    """The clock advances with the bytes a copy moves: at the board's VRAM copy rate, or its bus's where an end is
    system memory or a peer's VRAM; so the bandwidth a runtime computes from timestamps around it is the board's."""
    n = 4 << 20
    src, dst, out = gpu.mem.map(np.zeros(n, np.uint8)), gpu.mem.map(np.zeros(n, np.uint8)), gpu.mem.map(16)
    gpu.over_bus = lambda address: over_bus and address == dst
    get = header(s6.SDMA_OP_TIMESTAMP, s6.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL)
    rig.submit([get, *lohi(out), *copy(dst, src, n), get, *lohi(out + 8)])
    rig.queue.step()
    seconds = (u64(gpu, out + 8) - u64(gpu, out)) / TIMESTAMP_HZ
    rate = (BUS_RATE if over_bus else COPY_RATE)[gpu.arch]
    assert n / rate <= seconds <= n / rate + 1e-7  # and a packet's tick


def test_a_copy_takes_no_less_wall_time_than_the_board_would(gpu, rig, monkeypatch):
    """A copy the host finishes sooner than the board's rate allows still takes the board's time, so the time
    between timestamps around it is never more than the time the host waited for it (at a 1 GB/s bus: 4 ms)."""
    monkeypatch.setitem(BUS_RATE, gpu.arch, 1e9)
    gpu.over_bus = lambda address: True
    n = 4 << 20
    src, dst, out = gpu.mem.map(np.zeros(n, np.uint8)), gpu.mem.map(np.zeros(n, np.uint8)), gpu.mem.map(16)
    get = header(s6.SDMA_OP_TIMESTAMP, s6.SDMA_SUBOP_TIMESTAMP_GET_GLOBAL)
    rig.submit([get, *lohi(out), *copy(dst, src, n), get, *lohi(out + 8)])
    start = time.perf_counter()
    rig.queue.step()
    waited = time.perf_counter() - start
    assert n / 1e9 <= (u64(gpu, out + 8) - u64(gpu, out)) / TIMESTAMP_HZ <= waited
