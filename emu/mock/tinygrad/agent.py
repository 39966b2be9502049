"""The mock GPU noticing work as hardware does, for a client that rings doorbells with plain CPU stores (tinygrad
maps /dev/kfd at the doorbell offset, as libhsakmt does, and writes the mapping through a memoryview): a thread
watches the doorbell pages the process mapped and runs the machine's queues when a doorbell changes, and keeps
running them while a queue is stalled on a wait (a WAIT_REG_MEM, an AQL barrier, an SDMA poll) so that a CPU store
to the memory the wait polls releases it. usergpu's own drivers write doorbells through MMIO views, whose writes run
the queues at once, in the caller's thread: that path stays deterministic and never starts the thread.

The machine's lock serialises the thread with the process's ioctls. Polling backs off from FAST to SLOW seconds
while nothing changes, so an idle machine costs little; a busy one shares the GIL with the client's own polling."""

from __future__ import annotations

import atexit
import sys
import threading
from collections.abc import Callable

import numpy as np

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
        wait, stalled = FAST, False
        while not self._stop.wait(wait):
            progressed = False
            with self.lock:
                if self._rung() or stalled or self._pending is not None and self._pending():
                    try:
                        progressed, stalled = self._run()
                    except Error as e:  # the queue stopped; amdkfd tells the process through its events
                        self.errors.append(e)
                        print(f"usergpu mock: {e}", file=sys.stderr)
                        progressed, stalled = True, False
            wait = FAST if progressed else min(wait * 2, SLOW)
