"""The deterministic cooperative scheduler of a mock NVIDIA machine: a doorbell on any GPU steps every channel of
every GPU of the machine in turn (GPUs in the order they were made, channels in the order they were made) until none
makes progress, so a channel stalled on an acquire resumes in the same doorbell when a channel of this GPU or another
releases its semaphore (as `emu/amd/mock/scheduler.py` does for one GPU's queues). Errors do not reach the caller: a
channel that stops reports through its on_error callback, as the hardware reports through the RM."""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from usergpu.emu.nv.mock.gpu import MockNVGPU


class Scheduler:
    """The GPUs of one machine."""

    def __init__(self) -> None:
        self.gpus: list[MockNVGPU] = []
        self.lock = threading.RLock()  # one doorbell at a time: the runtime may ring from several threads

    def add(self, gpu: MockNVGPU) -> None:
        self.gpus.append(gpu)

    def run(self) -> bool:
        """Step every channel until none makes progress; whether work is left stalled (or hung)."""
        with self.lock:
            progress = True
            while progress:
                progress = False
                for gpu in self.gpus:
                    for channel in list(gpu.channels):
                        progress |= channel.step()
            return any(channel.busy for gpu in self.gpus for channel in gpu.channels)


# id of a machine -> its scheduler, while one of its GPUs holds it (a GPU holds its machine, so the id is not reused
# before the entry goes; a machine need not be hashable)
_MACHINES: weakref.WeakValueDictionary[int, Scheduler] = weakref.WeakValueDictionary()


def scheduler_of(machine: object | None) -> Scheduler:
    """The scheduler every GPU of this machine shares (a GPU made with no machine has one of its own). The GPU keeps
    it: hold it in `gpu.scheduler`."""
    if machine is None:
        return Scheduler()
    scheduler = _MACHINES.get(id(machine))
    if scheduler is None:
        scheduler = _MACHINES[id(machine)] = Scheduler()
    return scheduler
