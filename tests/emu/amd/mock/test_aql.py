"""The AQL queue: kernel dispatch of a compiled kernel, barriers, PM4-IB vendor packets, signals, INVALID slots."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from mockrig import VALUE, Rig, hdr, load, lohi, signal, u32, u64
from mockrig import signal_value as value

import usergpu.autogen.pm4_nv as nv
from usergpu.autogen import amdhsa as hsa
from usergpu.emu.amd.mock import AQLQueue, QueueError

START_TS, END_TS = hsa.amd_signal_t.start_ts.offset, hsa.amd_signal_t.end_ts.offset


def barrier(kind: int, deps: list[int], completion: int = 0) -> bytes:
    p = hsa.hsa_barrier_and_packet_t(header=hdr(kind))
    for i, d in enumerate(deps):
        p.dep_signal[i].handle = d
    p.completion_signal.handle = completion
    return bytes(p)


@pytest.fixture
def rig(gpu):
    return Rig(gpu, AQLQueue, 64 * 8)


def test_queue_ptr_is_the_amd_queue(rig):
    assert rig.queue.queue_ptr == rig.amd_queue


@pytest.mark.parametrize("kind,ready", [(hsa.HSA_PACKET_TYPE_BARRIER_AND, [0, 0]),
                                        (hsa.HSA_PACKET_TYPE_BARRIER_OR, [1, 0])])
def test_barriers_wait_then_signal_completion(gpu, rig, interrupts, kind, ready):
    deps = [signal(gpu, 1), signal(gpu, 1)]
    mailbox = gpu.mem.map(8)
    done = signal(gpu, 1, mailbox=mailbox, event=77)
    rig.submit(barrier(kind, deps, done))
    assert not rig.queue.step() and rig.queue.busy and rig.read_ptr() == 0
    for d, v in zip(deps, ready, strict=True):
        gpu.mem.write_bytes(d + VALUE, v.to_bytes(8, "little"))
    assert rig.queue.step() and not rig.queue.busy and rig.read_ptr() == 1
    assert value(gpu, done) == 0 and u64(gpu, mailbox) == 77 and interrupts == [("CP_EOP_INTERRUPT", 77)]
    assert u64(gpu, done + END_TS) > 0


def test_invalid_slot_stalls_until_published(gpu, rig):
    done = signal(gpu, 1)
    packet = bytearray(barrier(hsa.HSA_PACKET_TYPE_BARRIER_AND, [], done))
    packet[0] = hsa.HSA_PACKET_TYPE_INVALID
    rig.submit(packet)
    assert not rig.queue.step() and rig.queue.busy
    gpu.mem.write_bytes(rig.ring, bytes([hsa.HSA_PACKET_TYPE_BARRIER_AND]))
    assert rig.queue.step() and value(gpu, done) == 0


def test_pm4_ib_vendor_packet(gpu, rig):
    out = gpu.mem.map(8)
    body = np.array([nv.PACKET3(nv.PACKET3_WRITE_DATA, 3), nv.WRITE_DATA_DST_SEL(5), *lohi(out), 0x5A5A], np.uint32)
    va = gpu.mem.map(body)
    done = signal(gpu, 1)
    jump = [nv.PACKET3(nv.PACKET3_INDIRECT_BUFFER, 2), va & 0xFFFFFFFC, va >> 32, nv.INDIRECT_BUFFER_VALID | len(body)]
    words = np.zeros(16, np.uint32)
    words[0] = hdr(hsa.HSA_PACKET_TYPE_VENDOR_SPECIFIC) | 1 << 16  # AmdFormat PM4_IB
    words[1:5], words[5] = jump, 0xA
    packet = bytearray(words.tobytes())
    packet[56:64] = done.to_bytes(8, "little")
    rig.submit(packet)
    rig.queue.step()
    assert u32(gpu, out) == 0x5A5A and value(gpu, done) == 0


def test_unsupported_packets_stop_the_queue(gpu, rig):
    rig.submit(barrier(hsa.HSA_PACKET_TYPE_BARRIER_AND, []))
    rig.submit(barrier(hsa.HSA_PACKET_TYPE_AGENT_DISPATCH, []))
    with pytest.raises(QueueError, match="AGENT_DISPATCH \\(type 4\\) at ring offset 0x40"):
        rig.queue.step()
    assert rig.read_ptr() == 1


def test_kernel_dispatch_of_a_compiled_kernel(gpu, rig, vadd_co):
    k = vadd_co.kernels["vadd"]
    base = load(gpu, vadd_co)
    n = 320
    a, b, c = np.arange(n, dtype=np.int32), np.full(n, 7, np.int32), np.zeros(n, np.int32)
    kernarg = gpu.mem.map(np.array([gpu.mem.map(a), gpu.mem.map(b), gpu.mem.map(c)], np.uint64))
    done = signal(gpu, 1)
    p = hsa.hsa_kernel_dispatch_packet_t(header=hdr(hsa.HSA_PACKET_TYPE_KERNEL_DISPATCH), setup=1,
                                         workgroup_size_x=64, workgroup_size_y=1, workgroup_size_z=1,
                                         grid_size_x=n, grid_size_y=1, grid_size_z=1,
                                         kernel_object=base + k.descriptor_addr, kernarg_address=kernarg)
    p.completion_signal.handle = done
    assert ctypes.sizeof(p) == 64
    rig.submit(bytes(p))
    rig.queue.step()
    assert (c == a + 7).all() and value(gpu, done) == 0
    assert u64(gpu, done + END_TS) - u64(gpu, done + START_TS) > 20
    assert gpu.regs["COMPUTE_NUM_THREAD_X"] & 0x3FF == 64
