"""The deterministic cooperative scheduler every mock machine runs its queues on (AMD's PM4, AQL and SDMA queues,
NVIDIA's GPFIFO channels): a doorbell steps every queue in turn, in the order they were added, until none makes
progress, so a queue stalled on a wait resumes in the same doorbell when another queue's write satisfies it. A
queue is anything with `step() -> bool` (whether it made progress) and `busy`. A queue that stops on an Error stops
alone: the others run on, then the first error is raised (NVIDIA's channels raise none: they report a stop through
their error notifier, as the RM does)."""

from __future__ import annotations

import threading
import weakref
from typing import Protocol

from usergpu.errors import Error


class Queue(Protocol):
    busy: bool

    def step(self) -> bool: ...


class Scheduler:
    """The queues of one GPU, or of every GPU of a machine (scheduler_of)."""

    def __init__(self, queues: list[Queue] | None = None):
        self.queues: list[Queue] = list(queues or [])
        self.lock = threading.RLock()  # one doorbell at a time: a runtime may ring from several threads
        self.runs = 0  # runs so far: work done a slice at a time does one slice per run

    def add(self, queue: Queue) -> None:
        with self.lock:
            self.queues.append(queue)

    def remove(self, queue: Queue) -> None:
        with self.lock:
            if queue in self.queues:
                self.queues.remove(queue)

    def run(self) -> bool:
        """Step the queues until none makes progress; whether work remains stalled (or hung)."""
        with self.lock:
            self.runs += 1
            errors: list[Error] = []
            busy = True
            while busy:
                progress = False
                for queue in list(self.queues):
                    try:
                        progress |= queue.step()
                    except Error as e:
                        errors.append(e)
                busy = any(queue.busy for queue in self.queues)
                if not progress:  # no queue moved: none will on another pass (an idle one stays idle)
                    break
            if errors:
                raise errors[0]
            return busy


def settle(parts: list[tuple[Scheduler, object]]) -> tuple[bool, bool]:
    """Every GPU's queues (each GPU's scheduler and the GPU, whose `ticks` count its work) until none can make
    progress: a queue waiting on another GPU's write resumes when that GPU has run. Whether anything ran, and whether
    work is left stalled; a queue's Error is raised."""
    def clocks() -> list[int]:
        return [gpu.ticks for _, gpu in parts]  # type: ignore[attr-defined]

    start, stalled = clocks(), True
    while stalled:
        before = clocks()
        stalled = any([scheduler.run() for scheduler, _ in parts])
        if clocks() == before:
            break
    return clocks() != start, stalled


# id of a machine -> its scheduler, while one of its GPUs holds it (a GPU holds its machine, so the id is not reused
# before the entry goes; a machine need not be hashable)
_MACHINES: weakref.WeakValueDictionary[int, Scheduler] = weakref.WeakValueDictionary()


def scheduler_of(machine: object | None) -> Scheduler:
    """The scheduler every GPU of this machine shares, so a queue on one GPU that waits for another GPU's write
    resumes in the same doorbell (a GPU made with no machine has one of its own). The GPU keeps it: hold it in
    `gpu.scheduler`."""
    if machine is None:
        return Scheduler()
    scheduler = _MACHINES.get(id(machine))
    if scheduler is None:
        scheduler = _MACHINES[id(machine)] = Scheduler()
    return scheduler
