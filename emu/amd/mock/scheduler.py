"""The mock GPU's deterministic cooperative scheduler: step every queue in turn until none makes progress, so a
queue stalled on a wait resumes when another queue's write satisfies it (as a doorbell does on the mock)."""

from __future__ import annotations

from usergpu.emu.amd.mock.gpu import RingQueue
from usergpu.errors import Error


class Scheduler:
    """The queues of one GPU, stepped round-robin in the order they were added."""

    def __init__(self, queues: list[RingQueue] | None = None):
        self.queues: list[RingQueue] = list(queues or [])

    def add(self, queue: RingQueue) -> None:
        self.queues.append(queue)

    def remove(self, queue: RingQueue) -> None:
        self.queues.remove(queue)

    def run(self) -> bool:
        """Step the queues until none makes progress; whether work remains stalled. A queue that stops on an error
        stops alone: the others run on, then the first error is raised."""
        errors: list[Error] = []
        progress = True
        while progress:
            progress = False
            for queue in self.queues:
                try:
                    progress |= queue.step()
                except Error as e:
                    errors.append(e)
        if errors:
            raise errors[0]
        return any(queue.busy for queue in self.queues)
