"""The event ioctls of the mock /dev/kfd (kfd_chardev.c's, kfd_events.c's rules): events created (signal events in
slots of the process's event page), destroyed, set and reset from the CPU, and waited on while the GPUs run."""

from __future__ import annotations

import ctypes
import errno
import time
from typing import TYPE_CHECKING

from usergpu.autogen import kfd
from usergpu.emu.amd.mock.kfd.objects import (
    KMALLOC_MAX_SIZE,
    MMAP_TYPE_EVENTS,
    MMAP_TYPE_SHIFT,
    SIGNAL_EVENT_LIMIT,
    Event,
    memory_exception,
)
from usergpu.emu.mock import reported_fault
from usergpu.emu.mock.uaccess import copy_from_user, copy_to_user, fail

if TYPE_CHECKING:
    from usergpu.emu.amd.mock.kfd.kfd import MockKFD

EVENT_WAITER_SIZE = 56  # sizeof(struct kfd_event_waiter): WAIT_EVENTS allocates one per event
FIRST_NONSIGNAL_EVENT_ID = 0x40000000  # kfd_events.h: ids of events that are not signal events
TIMEOUT_INFINITE = 0xFFFFFFFF  # KFD_EVENT_TIMEOUT_INFINITE (kfd_events.h): a wait without end
POLL = 1e-3  # seconds between looks at a queue stalled on memory, while a WAIT_EVENTS sleeps


class EventIoctls:
    """The event ioctls of a KFDFile."""

    kfd: MockKFD

    def create_event(self, a) -> None:
        """kfd_ioctl_create_event: an event page handle first (EINVAL for an unknown or user-pages object or one
        smaller than KFD_SIGNAL_EVENT_LIMIT slots), then the event. Signal (and debug) events take a slot of the
        page (ENOSPC when none is left); any other type, known or not, is created as amdkfd creates it, with an
        id from KFD_FIRST_NONSIGNAL_EVENT_ID. amdkfd refuses a second event page (EINVAL: one per process); the
        mock keeps the first and ignores a later one, because the runtime gives each of its Devices a page of its
        own and two Devices in one process are one kfd_process."""
        what = "CREATE_EVENT"
        if a.event_page_offset and self.kfd.event_page is None:
            self.kfd.bound(a.event_page_offset >> 32, what)
            page = self.kfd.bo(a.event_page_offset, f"{what} (event page)")
            if page.memfd is None or page.size < SIGNAL_EVENT_LIMIT * 8:
                raise fail(errno.EINVAL, f"{what}: the event page is user pages or under "
                                         f"{SIGNAL_EVENT_LIMIT * 8} bytes")
            self.kfd.event_page = page
        a.event_page_offset = 0
        events = self.kfd.events
        if a.event_type in (kfd.KFD_IOC_EVENT_SIGNAL, kfd.KFD_IOC_EVENT_DEBUG_EVENT):
            if self.kfd.event_page is None:
                raise fail(errno.EINVAL, f"{what}: the first signal event needs an event page")
            event_id = max((e for e in events if e < FIRST_NONSIGNAL_EVENT_ID), default=0) + 1
            if event_id >= self.kfd.event_page.size // 8:
                raise fail(errno.ENOSPC, f"{what}: every slot of the event page is taken")
            a.event_page_offset, a.event_slot_index = MMAP_TYPE_EVENTS << MMAP_TYPE_SHIFT, event_id
        else:
            event_id = max((e for e in events if e >= FIRST_NONSIGNAL_EVENT_ID),
                           default=FIRST_NONSIGNAL_EVENT_ID - 1) + 1
        events[event_id] = Event(event_id, a.event_type, bool(a.auto_reset), owner=self)
        a.event_id = a.event_trigger_data = event_id

    def _event(self, event_id: int, what: str, cpu: bool = False) -> Event:
        """An event of the process; EINVAL if there is none, or (cpu) it is not one the CPU may signal."""
        ev = self.kfd.events.get(event_id)
        if ev is None or cpu and not ev.cpu_signaled:
            raise fail(errno.EINVAL, f"{what}: no signal event {event_id}" if cpu else f"{what}: no event {event_id}")
        return ev

    def destroy_event(self, a) -> None:
        del self.kfd.events[self._event(a.event_id, "DESTROY_EVENT").event_id]

    def set_event(self, a) -> None:
        self._event(a.event_id, "SET_EVENT", cpu=True).signaled = True
        self.kfd.waiters.notify_all()  # a WAIT_EVENTS in another thread wakes

    def _reported_fault(self, events: list[Event]) -> dict[int, object]:
        """The memory events of a wait that MOCKGPU_EMU_FAULTADDR signals, each with the fault's data at that exact
        address on the first GPU (by event id); for this wait only (the events' own state is untouched)."""
        address = reported_fault()
        if address is None:
            return {}
        data = memory_exception(self.kfd.nodes[0].gpu_id, address, "read")
        data.va = address
        return {e.event_id: data for e in events if e.event_type == kfd.KFD_IOC_EVENT_MEMORY}

    def reset_event(self, a) -> None:
        self._event(a.event_id, "RESET_EVENT", cpu=True).signaled = False

    def wait_events(self, a) -> None:
        """kfd_wait_on_events: ENOMEM for more waiters than kmalloc gives, EFAULT for event data the caller
        cannot read, EINVAL for an unknown event; the result FAIL on any error. Then it waits up to the timeout
        (milliseconds; KFD_EVENT_TIMEOUT_INFINITE forever) while the GPUs run: the caller's thread runs them
        itself, and sleeps (the machine's lock given up, so the doorbell agent and other threads go on) until an
        interrupt signals an event, or a poll's time when a queue is stalled on memory another thread may
        write. Then it takes each event's state as amdkfd's waiters do (an auto-reset event's signal is
        consumed) and reports."""
        what = "WAIT_EVENTS"
        a.wait_result = kfd.KFD_IOC_WAIT_RESULT_FAIL
        size = ctypes.sizeof(kfd.struct_kfd_event_data)
        if a.num_events * EVENT_WAITER_SIZE > KMALLOC_MAX_SIZE:
            raise fail(errno.ENOMEM, f"{what}: {a.num_events} events")
        events = []
        for i in range(a.num_events):  # each event's data read, then looked up, in turn
            data = kfd.struct_kfd_event_data.from_buffer(copy_from_user(a.events_ptr + size * i, size, what))
            events.append(self._event(data.event_id, what))
        deadline = None if a.timeout == TIMEOUT_INFINITE else time.monotonic() + a.timeout / 1000
        reported = self._reported_fault(events)

        def signaled(e: Event) -> bool:
            return e.signaled or e.event_id in reported

        def done() -> bool:
            on = [signaled(e) for e in events]
            return not a.num_events or (all(on) if a.wait_for_all else any(on))
        while True:
            _, stalled = self.kfd.run()
            left = None if deadline is None else deadline - time.monotonic()
            if done() or left is not None and left <= 0:
                break
            self.kfd.waiters.wait(min(left or POLL, POLL) if stalled else left)
        activated = []
        for e in events:
            activated.append(signaled(e))
            e.signaled = e.signaled and not e.auto_reset
        if a.num_events and not (all(activated) if a.wait_for_all else any(activated)):
            a.wait_result = kfd.KFD_IOC_WAIT_RESULT_TIMEOUT
            return
        for i, (e, on) in enumerate(zip(events, activated, strict=True)):
            data = reported.get(e.event_id, e.data)
            if on and data is not None:  # copy_signaled_event_data
                copy_to_user(a.events_ptr + size * i + kfd.struct_kfd_event_data.memory_exception_data.offset,
                             bytes(data), what)
        a.wait_result = kfd.KFD_IOC_WAIT_RESULT_COMPLETE
