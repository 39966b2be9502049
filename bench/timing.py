"""What the benchmarks share: timing a function as the median of repeated runs."""

from __future__ import annotations

import statistics
import time


def median_seconds(fn, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
