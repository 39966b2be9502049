"""The runtime on MOCKKFD+AMD's CDNA GPUs (gfx942: MI300X, gfx950: MI350X): kernels on the AQL queue (the default on a
GPU of several XCCs, whose XCCs split a dispatch's workgroups) and on the PM4 queue (every XCC runs a PM4 queue
whole, so the runtime predicates its packets to the first XCC), SDMA 4.4 copies, signals across queues, the GPU's
timestamps and a CPX partition. (MFMA through the runtime: the corpus's mfma.cl in test_runtime.py, and the demo's
matmul in tests/tools/test_demo.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import usergpu
from usergpu.runtime.amd.pm4 import Packets
from usergpu.runtime.amd.sdma import SDMAPackets

ARCHS = ("gfx942", "gfx950")
KERNELS = r"""
__kernel void vadd(__global const int *a, __global const int *b, __global int *c) {
  uint i = __builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x();
  c[i] = a[i] + b[i];
}
__kernel void count(__global int *hits) {  // each workgroup counts itself: 1 each if it ran once
  if (__builtin_amdgcn_workitem_id_x() == 0) atomic_inc(&hits[__builtin_amdgcn_workgroup_id_x()]);
}"""
GROUPS = 11  # not a multiple of the 8 XCCs


@pytest.fixture(params=ARCHS)
def arch(request, monkeypatch) -> str:
    monkeypatch.setenv("MOCKGPU_ARCH", request.param)
    return request.param


@pytest.fixture
def device(arch):
    opened = []

    def open_(name: str = "MOCKKFD+AMD", **kw) -> usergpu.Device:
        opened.append(usergpu.Device(name, **kw))
        return opened[-1]
    yield open_
    for dev in opened:
        dev.close()


@pytest.mark.parametrize("queue", [None, "pm4"])
def test_kernels_run_once_per_workgroup_on_either_queue(device, arch, queue):
    dev = device(queue=queue)
    assert (dev.arch, dev.xccs, dev.queue_kind) == (arch, 8, queue or "aql")
    prog = dev.load(usergpu.compile_opencl(KERNELS, arch))
    a = np.arange(64 * GROUPS, dtype=np.int32)
    bufs = [dev.alloc(a.nbytes) for _ in range(3)]
    bufs[0].copyin(a)
    bufs[1].copyin(a * 3)
    seconds = prog.kernels["vadd"](*bufs, grid=(GROUPS, 1, 1), block=(64, 1, 1))
    assert seconds > 0 and (bufs[2].copyout(np.int32) == a * 4).all()
    hits = dev.alloc(4 * GROUPS)
    hits.copyin(np.zeros(GROUPS, np.int32))
    prog.kernels["count"](hits, grid=(GROUPS, 1, 1), block=(64, 1, 1))
    assert hits.copyout(np.int32).tolist() == [1] * GROUPS  # AQL: split over the XCCs; PM4: the first XCC's alone


def test_timestamps_order_the_launches(device, arch):
    dev = device()
    prog = dev.load(usergpu.compile_opencl(KERNELS, arch))
    hits = dev.alloc(4 * GROUPS)
    for _ in range(3):
        prog.kernels["count"](hits, grid=(GROUPS, 1, 1), block=(64, 1, 1), wait=False)
    spans = dev.spans()[-3:]
    assert all(s.seconds > 0 for s in spans)
    assert all(a.start + a.seconds <= b.start for a, b in zip(spans, spans[1:], strict=False))


def test_sdma_copies_and_a_signal_across_queues(device, arch):
    """A 5 MiB copy each way (SDMA 4.4's COPY_LINEAR moves 4 MiB at most: two packets); then the PM4 queue waits for
    a signal the SDMA queue sets."""
    dev = device(queue="pm4")
    data = np.random.default_rng(2).integers(0, 256, 5 << 20, dtype=np.uint8)
    buf = dev.alloc(data.nbytes)
    buf.copyin(data)
    assert (buf.copyout() == data).all()
    sig = dev.signal()
    value = dev.next_timeline_value()
    dev.compute.submit(dev.packets().wait(sig, 1).signal(dev.timeline, value, dev.event))
    dev.copy.submit(dev.sdma_packets().signal(sig, 1, dev.event))
    dev.timeline.wait(value)
    assert sig.value == 1 and sig.timestamp > 0 and dev.timeline.timestamp >= sig.timestamp


def test_a_cpx_partition_is_a_gpu_of_one_xcc(device, arch, monkeypatch):
    monkeypatch.setenv("MOCKGPU_PARTITION", "cpx")
    dev = device("MOCKKFD+AMD:5")
    assert (dev.xccs, dev.queue_kind) == (1, "pm4")
    prog = dev.load(usergpu.compile_opencl(KERNELS, arch))
    hits = dev.alloc(4 * GROUPS)
    hits.copyin(np.zeros(GROUPS, np.int32))
    prog.kernels["count"](hits, grid=(GROUPS, 1, 1), block=(64, 1, 1))
    assert hits.copyout(np.int32).tolist() == [1] * GROUPS


def test_the_packets_are_the_family_s():
    """gfx9's ACQUIRE_MEM is gfx_v9_4_3_emit_mem_sync's: CP_COHER_CNTL's I$ (bit 29), K$ (27), TC (23), TCL1 (22) and
    TC write-back (18) actions, all of memory, poll interval 10 (gfx10+'s has a GCR_CNTL dword more); SDMA 4.4's
    COPY_LINEAR moves at most 4 MiB (22 count bits), so 5 MiB is two."""
    assert Packets("gfx942").memory_barrier() == [0xC0055800, 1 << 29 | 1 << 27 | 1 << 23 | 1 << 22 | 1 << 18,
                                                  0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA]
    assert Packets("gfx1100").memory_barrier() == [0xC0065800, 0, 0xFFFFFFFF, 0xFFFFFF, 0, 0, 0xA, 0x3FF]
    copy = SDMAPackets("gfx942").copy(0x2000_0000, 0x1000_0000, 5 << 20)
    assert len(copy) == 14 and (copy[1], copy[8]) == ((4 << 20) - 1, (1 << 20) - 1)
    assert copy[10] == 0x1040_0000 and copy[12] == 0x2040_0000  # the second starts 4 MiB on


def test_a_pm4_submission_on_eight_xccs_is_an_ib_for_the_first(device, arch):
    dev = device(queue="pm4")
    dev.compute.submit(dev.packets().release_mem(dev.timeline.va + dev.timeline.VALUE, 0, 2))
    dev.synchronize()
    ring = dev.compute.ring_words
    assert ring[0] == 0xC0023F00 and ring[3] & 0xFFFFF == 2 + 8  # INDIRECT_BUFFER of PRED_EXEC + RELEASE_MEM
    ib = np.frombuffer(dev.arena_view(ring[1] | ring[2] << 32, 8), np.uint32)
    assert ib.tolist() == [0xC0002300, 1 << 24 | 8]  # PRED_EXEC: XCC 0, the 8 dwords after it
