"""A client that maps /dev/kfd at the doorbell offset (as libhsakmt and tinygrad do) and rings doorbells with plain
stores: the mock's doorbell agent notices, runs the queue, and keeps a queue stalled on memory running until a CPU
store releases it; a store through a memoryview (tinygrad's MMIO) runs the queue at once. WAIT_EVENTS waits up to its
timeout while the GPUs run, and no longer."""

from __future__ import annotations

import ctypes
import errno
import threading
import time

import numpy as np
import pytest
from kfdrig import Ring, ioctl, refused

from usergpu.autogen import kfd
from usergpu.drivers.amd.kfd import KFD
from usergpu.emu.amd.mock.kfd.objects import DOORBELL_PAGE
from usergpu.runtime.amd.pm4 import DATA_SEL_VALUE64, Packets


@pytest.fixture
def dev(hal):
    d = KFD(hal)
    d.create_event(d.alloc(8 << 12, "gtt"))  # the event page
    return d


MAPPED: list[int] = []  # the doorbell pages the running test mapped


@pytest.fixture(autouse=True)
def unmapped_after(hal):
    """A test's doorbell pages are unmapped after it (the agent traps them no more: the process's memoryview is
    the builtin again for the tests after it)."""
    yield
    while MAPPED:
        hal.munmap(MAPPED.pop(), DOORBELL_PAGE)


def doorbell_mapping(hal, dev: KFD) -> int:
    base = (3 << 62) | (dev.gpu_id << 46)  # KFD_MMAP_TYPE_DOORBELL | KFD_MMAP_GPU_ID
    MAPPED.append(hal.mmap(dev.fd, DOORBELL_PAGE, base))
    return MAPPED[-1]


def doorbells(hal, dev: KFD, ring: Ring) -> np.ndarray:
    """The doorbell page as the process maps it, stored to as plain memory (no memoryview: numpy over ctypes)."""
    return np.ctypeslib.as_array((ctypes.c_uint64 * (DOORBELL_PAGE // 8)).from_address(doorbell_mapping(hal, dev)))


def store(ring: Ring, bells: np.ndarray, dwords: list[int]) -> None:
    """Submit as tinygrad does: packets and write pointer in memory, then the doorbell, all plain stores."""
    for i, dword in enumerate(dwords):
        ring.words[(ring.put // 4 + i) % len(ring.words)] = dword
    ring.put += 4 * len(dwords)
    ring.ptrs[1] = ring.put // ring.unit
    bells[ring.queue.doorbell_index] = ring.ptrs[1]


def until(check, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.001)
    return True


def test_a_doorbell_store_runs_the_queue(hal, dev):
    out = dev.alloc(1 << 12, "gtt")
    words = np.frombuffer(out.view(), np.uint64)
    ring = Ring(dev, "pm4")
    bells = doorbells(hal, dev, ring)
    store(ring, bells, Packets().release_mem(out.va, 7, DATA_SEL_VALUE64))
    assert until(lambda: words[0] == 7 and ring.done)


def test_a_doorbell_stored_through_a_memoryview_runs_the_queue_at_once(hal, dev):
    """tinygrad's MMIO stores through a memoryview over the mapping: the queue runs in the storing thread, before
    the store returns (the agent's thread, which would notice it later, is kept from running)."""
    out = dev.alloc(1 << 12, "gtt")
    words = np.frombuffer(out.view(), np.uint64)
    ring = Ring(dev, "pm4")
    page = (ctypes.c_uint8 * DOORBELL_PAGE).from_address(doorbell_mapping(hal, dev))
    bells = memoryview(page).cast("B").cast("Q")  # as tinygrad's MMIOInterface makes it, after the mmap
    with hal.kfd.agent.lock:  # the agent's thread cannot run the queue meanwhile: only the store can
        store(ring, bells, Packets().release_mem(out.va, 7, DATA_SEL_VALUE64))
        assert words[0] == 7 and ring.done and bells[ring.queue.doorbell_index] == ring.ptrs[1]


def test_a_cpu_store_releases_a_queue_waiting_on_memory(hal, dev):
    """WAIT_REG_MEM on a dword the CPU writes later: the queue stalls, then runs on with no doorbell rung again."""
    out = dev.alloc(1 << 12, "gtt")
    words = np.frombuffer(out.view(), np.uint32)
    ring = Ring(dev, "pm4")
    bells = doorbells(hal, dev, ring)
    store(ring, bells, Packets().wait_geq(out.va, 3).release_mem(out.va + 8, 9, DATA_SEL_VALUE64))
    time.sleep(0.05)
    assert words[2] == 0 and not ring.done
    words[0] = 3
    assert until(lambda: words[2] == 9 and ring.done)


def test_a_second_mapping_is_the_same_page_and_a_partial_one_is_refused(hal, dev):
    ring = Ring(dev, "pm4")
    a, b = doorbells(hal, dev, ring), doorbells(hal, dev, ring)
    a[5] = 123
    assert b[5] == 123
    base = (3 << 62) | (dev.gpu_id << 46)
    with pytest.raises(OSError) as e:
        hal.mmap(dev.fd, DOORBELL_PAGE // 2, base)
    assert e.value.errno == errno.EINVAL


def wait(dev: KFD, event: int, timeout_ms: int) -> tuple[int, float]:
    data = kfd.struct_kfd_event_data(event_id=event)
    start = time.monotonic()
    got = ioctl(dev.hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(data), num_events=1,
                wait_for_all=0, timeout=timeout_ms)
    return got.wait_result, time.monotonic() - start


def test_wait_events_waits_its_timeout_and_no_longer(dev):
    event = dev.create_event(kind=kfd.KFD_IOC_EVENT_SIGNAL)
    result, took = wait(dev, event, 150)
    assert result == kfd.KFD_IOC_WAIT_RESULT_TIMEOUT and 0.15 <= took < 2
    result, took = wait(dev, event, 0)
    assert result == kfd.KFD_IOC_WAIT_RESULT_TIMEOUT and took < 0.1


def test_wait_events_returns_when_another_thread_signals(dev):
    event = dev.create_event(kind=kfd.KFD_IOC_EVENT_SIGNAL)
    timer = threading.Timer(0.1, lambda: ioctl(dev.hal, dev.fd, kfd.AMDKFD_IOC_SET_EVENT, event_id=event))
    timer.start()
    result, took = wait(dev, event, 10_000)
    timer.join()
    assert result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE and 0.09 <= took < 5


def test_wait_events_returns_when_the_gpu_signals_an_interrupt(hal, dev):
    """RELEASE_MEM with an interrupt on a queue released by a CPU store while the caller sleeps in WAIT_EVENTS."""
    out = dev.alloc(1 << 12, "gtt")
    words = np.frombuffer(out.view(), np.uint32)
    event = dev.create_event(kind=kfd.KFD_IOC_EVENT_SIGNAL)
    ring = Ring(dev, "pm4")
    store(ring, doorbells(hal, dev, ring),
          Packets().wait_geq(out.va, 1).release_mem(out.va + 8, 1, DATA_SEL_VALUE64, interrupt_ctx=event))
    timer = threading.Timer(0.1, lambda: words.__setitem__(0, 1))
    timer.start()
    result, took = wait(dev, event, 10_000)
    timer.join()
    assert result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE and words[2] == 1 and took < 5


def test_an_unknown_event_is_still_einval(dev):
    refused(errno.EINVAL, dev.hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS,
            events_ptr=ctypes.addressof(kfd.struct_kfd_event_data(event_id=999)), num_events=1, timeout=100)
