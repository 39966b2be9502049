"""How busy a mock board's engines are, as its SMU samples it: each engine adds up the time it spends executing
(GFX: dispatches; memory: SDMA copies) in a small table of samples in the board's shared state, so the SMU model
answers with the same activity in whichever process asks (am_smi beside the process running kernels)."""

from __future__ import annotations

import time

import numpy as np

ENGINES = ("gfx", "memory")
SAMPLES = 256  # per engine: (time, busy total) after each piece of work, a ring
WINDOW_NS = 1_000_000_000  # the SMU's averaging window
# words of the shared table: per engine a ring head, a busy-since time (0: idle), then the ring of samples
STRIDE = 2 + 2 * SAMPLES
WORDS = STRIDE * len(ENGINES)


class Activity:
    def __init__(self, words: np.ndarray):
        """words: WORDS int64 of shared memory (all zero at power-on)."""
        self.words = words

    def _engine(self, engine: str) -> np.ndarray:
        i = ENGINES.index(engine)
        return self.words[i * STRIDE : (i + 1) * STRIDE]

    def begin(self, engine: str, now: int | None = None) -> None:
        self._engine(engine)[1] = time.monotonic_ns() if now is None else now

    def end(self, engine: str, now: int | None = None) -> None:
        e = self._engine(engine)
        now = time.monotonic_ns() if now is None else now
        head = int(e[0])
        last = int(e[2 + 2 * ((head - 1) % SAMPLES) + 1]) if head else 0
        slot = 2 + 2 * (head % SAMPLES)
        e[slot], e[slot + 1] = now, last + now - int(e[1] or now)
        e[1], e[0] = 0, head + 1

    def percent(self, engine: str, now: int | None = None) -> int:
        """Busy time in the last WINDOW_NS over the window, 0-100; work still running counts up to now."""
        e = self._engine(engine)
        now = time.monotonic_ns() if now is None else now
        head, since = int(e[0]), int(e[1])
        samples = [(int(e[2 + 2 * (k % SAMPLES)]), int(e[3 + 2 * (k % SAMPLES)]))
                   for k in range(max(head - SAMPLES, 0), head)]
        total = samples[-1][1] if samples else 0
        running = now - since if since else 0
        start = now - WINDOW_NS
        before = [b for t, b in samples if t <= start]
        if before or head <= SAMPLES:  # the busy total at the window's start (0: before the first piece of work)
            at_start, span = (before[-1] if before else 0), WINDOW_NS
        else:  # many short pieces of work: the ring holds less than the window, so measure over what it holds
            oldest, at_start = samples[0]
            span = now - oldest
        return max(0, min(100, (total + running - at_start) * 100 // max(span, 1)))
