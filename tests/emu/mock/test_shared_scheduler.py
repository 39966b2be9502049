"""The one scheduler every mock machine runs its queues on (emu/mock/scheduler.py), with queues of its own making:
a doorbell runs until no queue makes progress, so a wait satisfied by a queue stepped after it resumes in the same
run; a queue that raises stops alone and its error comes after the others ran; a machine's GPUs share one."""

from __future__ import annotations

import pytest

from usergpu.emu.mock.scheduler import Scheduler, scheduler_of
from usergpu.errors import Error


class Flag:
    """A queue that sets a flag after `steps` steps of its own."""

    def __init__(self, flags: dict, name: str, steps: int = 1):
        self.flags, self.name, self.left = flags, name, steps

    @property
    def busy(self) -> bool:
        return self.left > 0

    def step(self) -> bool:
        if not self.left:
            return False
        self.left -= 1
        if not self.left:
            self.flags[self.name] = True
        return True


class Wait:
    """A queue that waits for a flag, then sets its own."""

    def __init__(self, flags: dict, waits_for: str, name: str):
        self.flags, self.waits_for, self.name, self.done = flags, waits_for, name, False

    @property
    def busy(self) -> bool:
        return not self.done

    def step(self) -> bool:
        if self.done or not self.flags.get(self.waits_for):
            return False
        self.flags[self.name] = self.done = True
        return True


class Broken:
    busy = False

    def step(self) -> bool:
        raise Error("the queue stopped")


def test_a_wait_on_a_queue_stepped_later_resumes_in_the_same_run():
    flags: dict = {}
    scheduler = Scheduler([Wait(flags, "b", "a"), Wait(flags, "c", "b"), Flag(flags, "c", steps=3)])
    assert scheduler.run() is False
    assert flags == {"a": True, "b": True, "c": True}


def test_a_wait_nobody_satisfies_leaves_work_stalled():
    flags: dict = {}
    scheduler = Scheduler([Wait(flags, "never", "a"), Flag(flags, "b")])
    assert scheduler.run() is True
    assert flags == {"b": True}


def test_an_error_stops_its_queue_alone_and_is_raised_after_the_others_ran():
    flags: dict = {}
    scheduler = Scheduler([Broken(), Flag(flags, "b", steps=2)])
    with pytest.raises(Error, match="the queue stopped"):
        scheduler.run()
    assert flags == {"b": True}


def test_a_removed_queue_is_stepped_no_more():
    flags: dict = {}
    queue = Flag(flags, "a")
    scheduler = Scheduler()
    scheduler.add(queue)
    scheduler.remove(queue)
    scheduler.remove(queue)  # twice does nothing
    assert scheduler.run() is False and not flags


def test_the_gpus_of_one_machine_share_its_scheduler():
    machine, other = object(), object()
    assert scheduler_of(machine) is scheduler_of(machine)
    assert scheduler_of(machine) is not scheduler_of(other)
    assert scheduler_of(None) is not scheduler_of(None)  # a GPU of no machine has its own
