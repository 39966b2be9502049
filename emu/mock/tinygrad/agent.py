"""The mock GPU noticing work as hardware does, for a client that rings doorbells with plain CPU stores (tinygrad
maps /dev/kfd at the doorbell offset, as libhsakmt does, and writes the mapping through a memoryview): a thread
watches the doorbell pages the process mapped and runs the machine's queues when a doorbell changes, and keeps
running them while a queue is stalled on a wait (a WAIT_REG_MEM, an AQL barrier, an SDMA poll) so that a CPU store
to the memory the wait polls releases it. A store through a memoryview over a doorbell mapping the machine traps
(`trap`) runs the queues at once, in the storing thread, before the thread would notice it. usergpu's own drivers
write doorbells through MMIO views, whose writes run the queues at once too: that path stays deterministic and never
starts the thread.

The machine's lock serialises the thread with the process's ioctls. Polling backs off from FAST to SLOW seconds
while nothing changes, so an idle machine costs little; a busy one shares the GIL with the client's own polling."""

from __future__ import annotations

import atexit
import ctypes
import sys
import threading
from collections.abc import Callable

import numpy as np

from usergpu.emu.mock import mmio_trap
from usergpu.errors import Error

FAST, SLOW = 50e-6, 2e-3  # seconds between polls: just after work, and when long idle
SWITCH_INTERVAL = 100e-6  # seconds a thread holds the GIL before Python offers it to another (sys.setswitchinterval)


class DoorbellAgent:
    """run() steps the machine's queues (the agent holds the lock) and answers (whether they made progress,
    whether work is left stalled). pending(), where given, says whether a queue has work it has not taken: an
    NVIDIA doorbell repeats the channel's token, so a second ring leaves the page as it was and only the channel's
    GP_PUT tells new work (an AMD doorbell holds the queue's write pointer, which moves with each ring)."""

    def __init__(self, run: Callable[[], tuple[bool, bool]], lock: threading.RLock,
                 pending: Callable[[], bool] | None = None):
        self._run, self.lock, self._pending = run, lock, pending
        self._pages: dict[int, np.ndarray] = {}  # id -> a doorbell page (uint64 words) as the mock maps it
        self._seen: dict[int, np.ndarray] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._stalled = False  # work the last run left waiting (a dispatch past its slice, a wait on memory)
        self._trapped: list[int] = []  # addresses of the client's doorbell mappings whose stores run at once
        self.errors: list[Error] = []  # what stopped a queue while the agent ran it (its event went out too)

    def watch(self, key: int, words: np.ndarray) -> None:
        """Watch a doorbell page from now on (the thread starts with the first)."""
        with self.lock:
            self._pages[key], self._seen[key] = words, words.copy()
        self.start()

    def start(self) -> None:
        """Start the thread (once); an agent given pending() needs no pages to notice work."""
        if self._thread is None:
            # the client spins on its signals holding the GIL, which Python hands over every switch interval (5 ms
            # by default): the GPU, a thread here, would wait that long for each completion a real one reports at
            # once. A short interval lets it run as soon as its doorbell or its poll comes due.
            sys.setswitchinterval(SWITCH_INTERVAL)
            self._thread = threading.Thread(target=self._loop, name="usergpu-doorbells", daemon=True)
            self._thread.start()
            atexit.register(self.stop)

    def unwatch(self, key: int) -> None:
        with self.lock:
            self._pages.pop(key, None)
            self._seen.pop(key, None)

    def stop(self) -> None:
        """End the thread (at exit, before the interpreter tears down what it uses)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _rung(self) -> bool:
        """Whether a doorbell changed since the last look (its new values become the seen ones)."""
        rung = False
        for key, words in self._pages.items():
            if not np.array_equal(words, self._seen[key]):
                self._seen[key][:] = words
                rung = True
        return rung

    def _loop(self) -> None:
        wait = FAST
        while not self._stop.wait(wait):
            with self.lock:
                due = self._rung() or self._stalled or self._pending is not None and self._pending()
                progressed = self._step() if due else False
            wait = FAST if progressed else min(wait * 2, SLOW)

    def _step(self) -> bool:
        """Run the queues (the lock held): whether they made progress; a queue that stopped is reported."""
        try:
            progressed, self._stalled = self._run()
        except Error as e:  # the queue stopped; amdkfd tells the process through its events
            self.errors.append(e)
            print(f"usergpu mock: {e}", file=sys.stderr)
            progressed, self._stalled = True, False
        return progressed

    # ---- doorbells stored through memoryviews ---------------------------------------------------------------
    def trap(self, address: int, length: int) -> None:
        """The client's mapping of a doorbell page at address: a store through a memoryview over it (tinygrad's
        MMIO) lands and runs the queues at once, in the storing thread (emu/mock/mmio_trap.py), as a doorbell write
        reaches the GPU at once: a short kernel is done before the client starts polling its signal, whose spinning
        would otherwise share the GIL with the GPU's thread. The thread still notices stores made otherwise and
        goes on with work a run left (a dispatch past its slice, a wait)."""
        def read(offset: int, size: int) -> int:
            return int.from_bytes(ctypes.string_at(address + offset, size), "little")

        def write(offset: int, size: int, value: int) -> None:
            ctypes.memmove(address + offset, value.to_bytes(size, "little"), size)
            with self.lock:
                self._rung()  # seen now: the thread need not run them again
                if self._pending is not None:
                    self._pending()  # (a machine that tells rung queues by their doorbells marks them here)
                self._step()

        mmio_trap.track(address, length, read, write)
        with self.lock:
            self._trapped.append(address)

    def unmapped(self, address: int, length: int) -> None:
        """A munmap (MockHAL's hook): trapped doorbell mappings in the range are gone."""
        with self.lock:
            for at in [a for a in self._trapped if address <= a < address + length]:
                mmio_trap.untrack(at)
                self._trapped.remove(at)
