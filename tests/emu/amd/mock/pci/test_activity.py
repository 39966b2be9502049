"""The engines' activity as the mock SMU samples it (activity.py): the busy share of the last second, whether the
work came as a few long pieces or as more short ones than its ring of samples holds."""

from __future__ import annotations

import numpy as np
import pytest

from usergpu.emu.amd.mock.pci.activity import SAMPLES, WINDOW_NS, WORDS, Activity

MS = 1_000_000


def run(activity: Activity, pieces: int, busy_ns: int, period_ns: int, start: int = 10 * WINDOW_NS) -> int:
    """pieces of GFX work, each busy_ns long, one every period_ns from start; the time after the last."""
    t = start
    for _ in range(pieces):
        activity.begin("gfx", t)
        activity.end("gfx", t + busy_ns)
        t += period_ns
    return t


@pytest.mark.parametrize(("pieces", "busy_ns", "period_ns", "share"), [
    (3, 400 * MS, 1000 * MS, 40),        # long dispatches: 0.4 s of each second
    (10 * SAMPLES, MS // 4, MS, 25),     # a tight loop of tiny ones for 2.5 s: the ring holds a quarter second
    (10 * SAMPLES, 3 * MS // 4, MS, 75),
])
def test_the_busy_share_of_the_last_second(pieces, busy_ns, period_ns, share):
    activity = Activity(np.zeros(WORDS, np.int64))
    end = run(activity, pieces, busy_ns, period_ns)
    assert abs(activity.percent("gfx", end) - share) <= 1


def test_idle_since_power_on_is_zero_and_work_running_counts_up_to_now():
    activity = Activity(np.zeros(WORDS, np.int64))
    assert activity.percent("gfx", 5 * WINDOW_NS) == 0
    activity.begin("gfx", 5 * WINDOW_NS)
    assert activity.percent("gfx", 5 * WINDOW_NS + WINDOW_NS // 2) == 50
    assert activity.percent("memory", 5 * WINDOW_NS + WINDOW_NS // 2) == 0
