"""A GPU memory fault reaches the process as amdkfd (Linux 6.12) delivers it: every memory event of the process
fires with the fault's memory_exception_data (event_interrupt_wq_v11, kfd_signal_vm_fault_event), WAIT_EVENTS
copies it to the caller, and the faulting queue is evicted; a queue destroyed and made again runs."""

from __future__ import annotations

import ctypes
import errno

import numpy as np
import pytest
from kfdrig import Ring, ioctl, refused

from usergpu.autogen import kfd
from usergpu.drivers.amd.kfd import KFD, compute_queue_sizes
from usergpu.errors import Error
from usergpu.runtime.amd.pm4 import DATA_SEL_VALUE64, Packets
from usergpu.runtime.amd.sdma import SDMAPackets

UNMAPPED = 0x10000  # nothing is mapped at 64 KiB


def wait(dev: KFD, events: list[int]) -> tuple[int, list]:
    """WAIT_EVENTS for any of the events, as tinygrad waits (no time to wait): its result and the event data."""
    data = (kfd.struct_kfd_event_data * len(events))(*(kfd.struct_kfd_event_data(event_id=e) for e in events))
    got = ioctl(dev.hal, dev.fd, kfd.AMDKFD_IOC_WAIT_EVENTS, events_ptr=ctypes.addressof(data),
                num_events=len(events), wait_for_all=0, timeout=0)
    return got.wait_result, list(data)


def failure(data) -> tuple[int, int, int, int]:
    f = data.memory_exception_data.failure
    return f.NotPresent, f.ReadOnly, f.NoExecute, f.imprecise


@pytest.fixture
def dev(hal):
    d = KFD(hal)
    d.create_event(d.alloc(8 << 12, "gtt"))  # the event page
    return d


@pytest.mark.parametrize(("source", "write"), [(UNMAPPED + 0x123, False), (None, True)], ids=["read", "write"])
def test_a_fault_fires_the_memory_events_with_its_data(hal, dev, source, write):
    """tinygrad's three events: its queue's signal event, a memory event, a hardware-exception event. The fault
    (a copy from, or to, a page nothing maps) signals the memory event with the page's address, the GPU, and
    NotPresent (ReadOnly too for a write, as the v11 handler sets it from the IV entry's write bit); WAIT_EVENTS
    is COMPLETE and copies that, the other events' data untouched. Another descriptor's memory event (the same
    process) fires too."""
    signal = dev.create_event(kind=kfd.KFD_IOC_EVENT_SIGNAL)
    memory = dev.create_event(kind=kfd.KFD_IOC_EVENT_MEMORY, auto_reset=False)
    hw = dev.create_event(kind=kfd.KFD_IOC_EVENT_HW_EXCEPTION, auto_reset=False)
    second = KFD(hal)
    theirs = second.create_event(kind=kfd.KFD_IOC_EVENT_MEMORY, auto_reset=False)
    assert wait(dev, [signal, memory, hw])[0] == kfd.KFD_IOC_WAIT_RESULT_TIMEOUT
    buf = dev.alloc(1 << 12, "gtt")
    sdma = Ring(dev, "sdma")
    src, dst = (buf.va, UNMAPPED + 0x123) if write else (source, buf.va)
    with pytest.raises(Error, match="memory fault"):
        sdma.submit(SDMAPackets().copy(dst, src, 64))
    result, data = wait(dev, [signal, memory, hw])
    assert result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE
    got = data[1].memory_exception_data
    assert (got.gpu_id, got.va, got.ErrorType) == (dev.gpu_id, UNMAPPED, 0)
    assert failure(data[1]) == (1, int(write), 0, 0)
    assert bytes(data[0].memory_exception_data) == bytes(data[2].memory_exception_data) == bytes(32)
    result, data = wait(second, [theirs])
    assert result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE and data[0].memory_exception_data.va == UNMAPPED


def test_the_faulting_queue_is_evicted_and_one_made_anew_runs(hal, dev):
    """After the fault the queue runs nothing more (a later packet and doorbell do nothing) and, being inactive,
    answers GET_QUEUE_WAVE_STATE (no waves saved); destroyed and made again on the same ring, it runs."""
    out = dev.alloc(1 << 12, "gtt")
    words = np.frombuffer(out.view(), np.uint64)
    pm4 = Ring(dev, "pm4")
    with pytest.raises(Error, match="memory fault"):
        pm4.submit(Packets().release_mem(UNMAPPED, 1, DATA_SEL_VALUE64))
    pm4.submit(Packets().release_mem(out.va, 5, DATA_SEL_VALUE64))
    assert words[0] == 0 and not pm4.done
    header = (ctypes.c_uint32 * 4)()
    got = ioctl(hal, dev.fd, kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_id=pm4.queue.queue_id,
                ctl_stack_address=ctypes.addressof(header))
    ctl_stack = compute_queue_sizes(dev.properties)["ctl_stack_size"]
    assert (got.ctl_stack_used_size, got.save_area_used_size, *header) == (0, 0, ctl_stack, 0, ctl_stack, 0)
    dev.destroy_queue(pm4.queue)
    pm4.make()
    refused(errno.EINVAL, hal, dev.fd, kfd.AMDKFD_IOC_GET_QUEUE_WAVE_STATE, queue_id=pm4.queue.queue_id,
            ctl_stack_address=ctypes.addressof(header))  # active again
    pm4.submit(Packets().release_mem(out.va, 5, DATA_SEL_VALUE64))
    assert words[0] == 5 and pm4.done


def test_tinygrads_fault_knob_reports_its_address_for_that_wait_only(dev, monkeypatch):
    """MOCKGPU_EMU_FAULTADDR (tinygrad's mock contract): while it is set, a wait on a memory event reports an MMU
    fault at that exact address on the first GPU; nothing faulted, so once it is unset the events are as they were
    (the memory event unsignaled, a wait times out)."""
    signal = dev.create_event(kind=kfd.KFD_IOC_EVENT_SIGNAL)
    memory = dev.create_event(kind=kfd.KFD_IOC_EVENT_MEMORY, auto_reset=False)
    monkeypatch.setenv("MOCKGPU_EMU_FAULTADDR", "0xDEADBEE1")
    result, data = wait(dev, [signal, memory])
    got = data[1].memory_exception_data
    assert result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE
    assert (got.gpu_id, got.va, failure(data[1])) == (dev.gpu_id, 0xDEADBEE1, (1, 0, 0, 0))
    assert bytes(data[0].memory_exception_data) == bytes(32)
    monkeypatch.delenv("MOCKGPU_EMU_FAULTADDR")
    assert wait(dev, [signal, memory])[0] == kfd.KFD_IOC_WAIT_RESULT_TIMEOUT
    monkeypatch.setenv("MOCKGPU_EMU_FAULTADDR", "nothex")
    with pytest.raises(Error, match="MOCKGPU_EMU_FAULTADDR 'nothex': a GPU address in hex"):
        wait(dev, [memory])


def test_a_queue_stopped_by_anything_but_a_vm_fault_is_reset_and_the_hw_exception_events_fire(dev):
    """An unknown packet (as an illegal instruction or a trap would) stops the queue: on hardware it hangs, and
    amdkfd's hang detection resets it and signals every HW-exception event (kfd_signal_reset_event: the GPU,
    memory_lost 1, reset_cause GPU_HANG); the memory event does not fire (no VM fault)."""
    memory = dev.create_event(kind=kfd.KFD_IOC_EVENT_MEMORY, auto_reset=False)
    hw = dev.create_event(kind=kfd.KFD_IOC_EVENT_HW_EXCEPTION, auto_reset=False)
    with pytest.raises(Error, match="unknown"):
        Ring(dev, "pm4").submit([0xC000FF00])  # a type-3 header of opcode 0xFF, which no PM4 packet has
    result, data = wait(dev, [memory, hw])
    got = data[1].hw_exception_data
    assert result == kfd.KFD_IOC_WAIT_RESULT_COMPLETE
    assert (got.gpu_id, got.memory_lost, got.reset_cause, got.reset_type) == (dev.gpu_id, 1,
                                                                               kfd.KFD_HW_EXCEPTION_GPU_HANG, 0)
    assert bytes(data[0].memory_exception_data) == bytes(32)
