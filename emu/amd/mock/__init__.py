"""Mock AMD GPU hardware: the engines (PM4 and AQL command processors, SDMA) over a GPU VA space, and the
cooperative scheduler that runs their queues."""

from usergpu.emu.amd.mock.aql import AQLQueue
from usergpu.emu.amd.mock.gpu import GPU, QueueError
from usergpu.emu.amd.mock.pm4 import PM4Queue
from usergpu.emu.amd.mock.scheduler import Scheduler
from usergpu.emu.amd.mock.sdma import SDMAQueue

__all__ = ["GPU", "AQLQueue", "PM4Queue", "QueueError", "SDMAQueue", "Scheduler"]
