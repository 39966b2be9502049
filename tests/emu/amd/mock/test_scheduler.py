"""The cooperative scheduler: a queue stalled on a wait resumes when another queue's write satisfies it."""

from __future__ import annotations

import pytest
from mockrig import Rig, lohi, u32

import usergpu.autogen.pm4_nv as nv
import usergpu.autogen.sdma_v6 as s6
from usergpu.emu.amd.mock import PM4Queue, QueueError, SDMAQueue
from usergpu.emu.mock.scheduler import Scheduler


def wait(address: int, ref: int) -> list[int]:
    return [nv.PACKET3(nv.PACKET3_WAIT_REG_MEM, 5), nv.WAIT_REG_MEM_FUNCTION(3) | nv.WAIT_REG_MEM_MEM_SPACE(1),
            *lohi(address), ref, 0xFFFFFFFF, 4]


def write(address: int, value: int) -> list[int]:
    return [nv.PACKET3(nv.PACKET3_WRITE_DATA, 3), nv.WRITE_DATA_DST_SEL(5), *lohi(address), value]


def poll(address: int, ref: int) -> list[int]:
    return [s6.SDMA_PKT_POLL_REGMEM_HEADER_OP(s6.SDMA_OP_POLL_REGMEM) | s6.SDMA_PKT_POLL_REGMEM_HEADER_FUNC(3)
            | s6.SDMA_PKT_POLL_REGMEM_HEADER_MEM_POLL(1), *lohi(address), ref, 0xFFFFFFFF, 0]


def fence(address: int, value: int) -> list[int]:
    return [s6.SDMA_PKT_FENCE_HEADER_OP(s6.SDMA_OP_FENCE), *lohi(address), value]


def test_waits_resume_across_queues(gpu):
    flags, out = gpu.mem.map(16), gpu.mem.map(16)
    pm4, sdma = Rig(gpu, PM4Queue, 1024, pointers=0), Rig(gpu, SDMAQueue, 1024, pointers=0)
    # pm4 waits for sdma's first fence, then releases sdma's poll; sdma then writes the last word
    pm4.submit([*wait(flags, 1), *write(flags + 4, 2), *write(out, 10)])
    sdma.submit([*poll(flags + 4, 2), *fence(out + 4, 20)])
    sdma.submit(fence(flags, 1))  # behind its own poll: a deadlock unless the poll sees pm4's write
    assert Scheduler([pm4.queue, sdma.queue]).run() is True  # pm4 waits on flags, sdma polls flags + 4
    sdma2 = Rig(gpu, SDMAQueue, 1024, pointers=0)
    sdma2.submit(fence(flags, 1))
    scheduler = Scheduler([pm4.queue, sdma.queue])
    scheduler.add(sdma2.queue)
    assert scheduler.run() is False
    assert (u32(gpu, out), u32(gpu, out + 4)) == (10, 20)


def test_an_error_stops_only_its_queue(gpu):
    out = gpu.mem.map(8)
    bad, good = Rig(gpu, PM4Queue, 256, pointers=0), Rig(gpu, PM4Queue, 256, pointers=0)
    bad.submit([nv.PACKET3(0xEE, 0), 0])
    good.submit(write(out, 3))
    with pytest.raises(QueueError, match="0xee"):
        Scheduler([bad.queue, good.queue]).run()
    assert u32(gpu, out) == 3 and bad.queue.error is not None
    assert Scheduler([bad.queue, good.queue]).run() is False
