"""AM's per-GPU lock: a second driver is refused and told who holds the board; am_smi finds the holders."""

from __future__ import annotations

import os

import pytest

from usergpu.drivers.amd.am.lock import DeviceBusy, acquire, held, owner
from usergpu.emu.mock.hal import MockHAL


def test_a_second_driver_is_refused_with_the_owner(tmp_path):
    hal = MockHAL(tmp_path)
    (tmp_path / "tmp").mkdir()
    fd = acquire(hal, "0000:03:00.0")
    who = owner(hal, "0000:03:00.0")
    assert who.pid == os.getpid() and held(hal) == [who]
    with pytest.raises(DeviceBusy, match=f"0000:03:00.0 is driven by process {os.getpid()} .*stop that process"):
        acquire(hal, "0000:03:00.0")
    (tmp_path / "tmp/usergpu_am_0000:04:00.0.lock").write_text(f"{os.getpid()} gone\n")
    assert [w.bus for w in held(hal)] == ["0000:03:00.0"]  # a file nobody holds does not count
    hal.close(fd)
    assert held(hal) == []
    hal.close(acquire(hal, "0000:03:00.0"))  # released: the next driver gets it
