"""A CDNA GPU's XCCs (gpu.py, aql.py, pm4.py). Every XCC's command processor runs a compute queue (amdkfd's
init_mqd_v9_4_3 writes an MQD per XCC). An AQL queue's MQDs have compute_tg_chunk_size 1 and logical XCC ids
(start + xcc) % 8: a dispatch's workgroups go round-robin, one at a time, over the XCCs, and the packet retires once
every XCC has done its share (the completion signal goes down once, after the slowest XCC, with one interrupt), as a
runtime that knows nothing of XCCs needs. A PM4 queue's MQDs have logical id 0 and no chunks: every XCC dispatches
the whole grid and raises its own end-of-pipe interrupt, so a runtime predicates (PRED_EXEC, inside an IB) what one
XCC alone should do. Each XCC has its own registers."""

from __future__ import annotations

import numpy as np
import pytest
from mockrig import (
    Rig,
    compiled,
    dispatch_direct,
    dispatch_packet,
    hdr,
    kernel_args,
    load,
    lohi,
    signal,
    signal_value,
    u32,
    u64,
)

import usergpu.autogen.pm4_nv as nv
from usergpu.autogen import amdhsa as hsa
from usergpu.drivers.amd.kfd import KFD
from usergpu.emu.amd.mock import GPU, AQLQueue, PM4Queue, QueueError
from usergpu.emu.amd.mock import gpu as gpu_module
from usergpu.emu.amd.mock.kfd.kfd import MockKFD
from usergpu.emu.mock.hal import MockHAL
from usergpu.hostmem import PAGE

XCCS, BLOCK = 8, 64
P3 = nv.PACKET3
START_TS, END_TS = hsa.amd_signal_t.start_ts.offset, hsa.amd_signal_t.end_ts.offset
FREE = 0xFFFFFFFF  # no workgroup held
# Workgroup `held` spins until *gate is set: its XCC's share is the slowest. Each workgroup counts itself once.
KERNELS = r"""
__kernel void mark(__global int *hits, volatile __global int *gate, uint held) {
  uint g = __builtin_amdgcn_workgroup_id_x();
  if (g == held)
    while (*gate == 0) {}
  if (__builtin_amdgcn_workitem_id_x() == 0) atomic_inc(&hits[g]);
}"""


@pytest.fixture(params=["gfx942", "gfx950"])
def gpu(request) -> GPU:
    return GPU(request.param, xccs=XCCS)


@pytest.fixture
def slices(monkeypatch):
    """Short time slices, so a spinning share hands the queue back at once; room for it to spin."""
    monkeypatch.setattr(gpu_module, "DISPATCH_SLICE", 0.01)
    monkeypatch.setenv("MOCKGPU_BUDGET", str(10**9))


class Mark:
    """The mark kernel loaded on a GPU, its counters, its gate."""

    def __init__(self, gpu: GPU, groups: int, held: int = FREE):
        self.gpu, self.groups = gpu, groups
        self.co = compiled(KERNELS, gpu.arch)
        self.base = load(gpu, self.co)
        self.hits, self.gate = np.zeros(groups, np.int32), np.zeros(1, np.int32)
        self.kernarg = kernel_args(gpu, self.co, "mark", [self.hits, self.gate, held], (groups, 1, 1), (BLOCK, 1, 1))

    def aql(self, completion: int = 0, barrier: int = 1) -> bytes:
        return dispatch_packet(self.base, self.co, "mark", self.kernarg, self.groups, BLOCK, completion, barrier)

    def pm4(self) -> list[int]:
        return dispatch_direct(self.gpu, self.base, self.co, "mark", self.kernarg, self.groups, BLOCK)


def aql_rig(gpu: GPU, start: int = 0) -> Rig:
    rig = Rig(gpu, AQLQueue, 64 * 8)
    rig.queue = AQLQueue(gpu, rig.ring, rig.size, rig.rptr, rig.wptr, logical_start=start)
    return rig


def vendor_ib(gpu: GPU, body: list[int], barrier: int = 1, completion: int = 0) -> bytes:
    """An AQL vendor packet (AmdFormat PM4_IB) running body as an IB."""
    va = gpu.mem.map(np.array(body, np.uint32))
    words = np.zeros(16, np.uint32)
    words[0] = hdr(hsa.HSA_PACKET_TYPE_VENDOR_SPECIFIC, barrier) | 1 << 16
    words[1:5] = [P3(nv.PACKET3_INDIRECT_BUFFER, 2), va & 0xFFFFFFFC, va >> 32, nv.INDIRECT_BUFFER_VALID | len(body)]
    packet = bytearray(words.tobytes())
    packet[56:64] = completion.to_bytes(8, "little")
    return bytes(packet)


def write_data(address: int, value: int) -> list[int]:
    return [P3(nv.PACKET3_WRITE_DATA, 3), nv.WRITE_DATA_DST_SEL(5), *lohi(address), value]


def pred_exec(mask: int, packets: list[int]) -> list[int]:
    """PRED_EXEC (soc15d.h 0x23): dword 1 is EXEC_COUNT (bits 13:0) and VIRTUALXCCID_SELECT (bits 31:24)."""
    return [P3(0x23, 0), mask << 24 | len(packets), *packets]


@pytest.mark.parametrize("start", [0, 3])
def test_an_aql_dispatch_goes_round_robin_over_the_xccs_and_runs_each_workgroup_once(gpu, start):
    groups = 11  # not a multiple of the 8 XCCs: three XCCs take two workgroups, five one
    mark = Mark(gpu, groups)
    rig = aql_rig(gpu, start)
    shares = {ctx.xcc: ctx.share((groups, 1, 1)).tolist() for ctx in rig.queue.contexts}
    assert shares == {x: [g for g in range(groups) if g % XCCS == (start + x) % XCCS] for x in range(XCCS)}
    done = signal(gpu, 1)
    rig.submit(mark.aql(done))
    rig.queue.step()
    assert mark.hits.tolist() == [1] * groups and signal_value(gpu, done) == 0 and rig.read_ptr() == 1
    for xcc in range(XCCS):  # each XCC's CP set the dispatch up in its own registers
        with gpu.on_xcc(xcc):
            assert gpu.regs["COMPUTE_NUM_THREAD_X"] & 0x3FF == BLOCK


def test_a_dispatch_whose_completion_signal_must_count_every_xcc(gpu, interrupts, slices):
    """The XCCs finish their shares at different times; the signal changes once, when the last has."""
    mark = Mark(gpu, 11, held=2)  # XCC 2's share (workgroups 2 and 10) waits for the gate
    mailbox = gpu.mem.map(8)
    done = signal(gpu, 1, mailbox=mailbox, event=5)
    rig = aql_rig(gpu)
    rig.submit(mark.aql(done))
    for _ in range(2):  # every other XCC is done; the packet is not
        rig.queue.step()
        assert mark.hits.tolist() == [1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0]
        assert signal_value(gpu, done) == 1 and interrupts == [] and rig.read_ptr() == 0 and rig.queue.busy
    mark.gate[0] = 1
    while rig.queue.busy:
        rig.queue.step()
    assert mark.hits.tolist() == [1] * 11 and signal_value(gpu, done) == 0  # once: not 1 - 8
    assert interrupts == [("CP_EOP_INTERRUPT", 5)] and u64(gpu, mailbox) == 5 and rig.read_ptr() == 1
    assert u64(gpu, done + START_TS) < u64(gpu, done + END_TS)  # from the first XCC's start to the last's end


def test_a_grid_smaller_than_the_xccs_retires_once(gpu, interrupts):
    mark = Mark(gpu, 3)  # XCCs 3..7 have no workgroup
    done = signal(gpu, 1, mailbox=gpu.mem.map(8), event=9)
    rig = aql_rig(gpu)
    rig.submit(mark.aql(done))
    rig.queue.step()
    assert mark.hits.tolist() == [1, 1, 1] and signal_value(gpu, done) == 0
    assert interrupts == [("CP_EOP_INTERRUPT", 9)]


@pytest.mark.parametrize(("barrier", "early"), [(1, 0), (0, 7)])
def test_the_barrier_bit_waits_for_every_xcc(gpu, slices, barrier, early):
    """A packet with the barrier bit starts when every XCC has retired the ones before; without it an XCC done with
    its share goes on (here: to an IB that writes memory), as each XCC's CP does."""
    mark = Mark(gpu, 8, held=2)
    out = gpu.mem.map(4)
    rig = aql_rig(gpu)
    rig.submit(mark.aql() + vendor_ib(gpu, pred_exec(1, write_data(out, 7)), barrier))
    rig.queue.step()
    assert u32(gpu, out) == early and rig.read_ptr() == 0
    mark.gate[0] = 1
    while rig.queue.busy:
        rig.queue.step()
    assert u32(gpu, out) == 7 and rig.read_ptr() == 2


def test_a_pm4_queue_runs_on_every_xcc(gpu, interrupts):
    """amdkfd's PM4 MQD splits nothing: each XCC dispatches the whole grid and writes its own end-of-pipe event."""
    mark = Mark(gpu, 3)
    out = gpu.mem.map(8)
    rig = Rig(gpu, PM4Queue, 4096, pointers=0)
    event = nv.PACKET3_RELEASE_MEM_EVENT_TYPE(0x14) | nv.PACKET3_RELEASE_MEM_EVENT_INDEX(5)
    select = nv.PACKET3_RELEASE_MEM_DATA_SEL(1) | nv.PACKET3_RELEASE_MEM_INT_SEL(2)  # 32 bits, then an interrupt
    release = [P3(nv.PACKET3_RELEASE_MEM, 6), event, select, *lohi(out), 1, 0, 4]
    rig.submit([*mark.pm4(), *release])
    rig.queue.step()
    assert mark.hits.tolist() == [XCCS] * 3 and u32(gpu, out) == 1
    assert interrupts == [("CP_EOP_INTERRUPT", 4)] * XCCS and rig.read_ptr() == rig.put // 4


def test_pred_exec_picks_the_xccs_inside_an_ib(gpu, interrupts):
    mark = Mark(gpu, 3)
    user0 = gpu.reg_address("COMPUTE_USER_DATA_0") - nv.PACKET3_SET_SH_REG_START
    body = [*pred_exec(0b100100, [P3(nv.PACKET3_SET_SH_REG, 1), user0 + 8, 0x55]),  # XCCs 2 and 5
            *pred_exec(1, mark.pm4()), P3(nv.PACKET3_SET_SH_REG, 1), user0 + 9, 7]
    va = gpu.mem.map(np.array(body, np.uint32))
    rig = Rig(gpu, PM4Queue, 4096, pointers=0)
    rig.submit([P3(nv.PACKET3_INDIRECT_BUFFER, 2), *lohi(va), nv.INDIRECT_BUFFER_VALID | len(body)])
    rig.queue.step()
    assert mark.hits.tolist() == [1, 1, 1]  # the dispatch ran on XCC 0 alone
    for xcc in range(XCCS):
        with gpu.on_xcc(xcc):
            assert gpu.regs.get("COMPUTE_USER_DATA_8") == (0x55 if xcc in (2, 5) else None)
            assert gpu.regs["COMPUTE_USER_DATA_9"] == 7


def test_pred_exec_in_the_ring_is_refused(gpu):
    rig = Rig(gpu, PM4Queue, 4096, pointers=0)
    rig.submit(pred_exec(1, [P3(nv.PACKET3_NOP, 0), 0]))
    with pytest.raises(QueueError, match="PRED_EXEC in the ring: the MEC executes it inside an indirect buffer only"):
        rig.queue.step()


def test_pred_exec_may_not_run_past_its_ib(gpu):
    va = gpu.mem.map(np.array([P3(0x23, 0), 1 << 25 | 9], np.uint32))  # XCC 1 only, 9 dwords that are not there
    rig = Rig(gpu, PM4Queue, 4096, pointers=0)
    rig.submit([P3(nv.PACKET3_INDIRECT_BUFFER, 2), *lohi(va), nv.INDIRECT_BUFFER_VALID | 2])
    with pytest.raises(QueueError, match=f"EXEC_COUNT 9 runs past the end of the IB {va:#x}"):
        rig.queue.step()


def test_the_hdp_flush_registers_are_one_for_every_xcc(gpu):
    """NBIO's GPU_HDP_FLUSH_REQ/DONE are outside GC: each XCC's CP writes and polls the same pair."""
    rig = Rig(gpu, PM4Queue, 4096, pointers=0)
    req, done = gpu.reg_address("BIF_BX_PF0_GPU_HDP_FLUSH_REQ"), gpu.reg_address("BIF_BX_PF0_GPU_HDP_FLUSH_DONE")
    rig.submit([P3(nv.PACKET3_WAIT_REG_MEM, 5), nv.WAIT_REG_MEM_FUNCTION(3) | nv.WAIT_REG_MEM_OPERATION(1), req, done,
                1, 1, 0x20])
    rig.queue.step()
    assert not rig.queue.busy and gpu.hdp.flushes == XCCS and gpu.read_reg(done) == 1


def test_amdkfd_maps_compute_queues_on_every_xcc_from_a_moving_logical_start(tmp_path):
    """init_mqd_v9_4_3 (dqm->current_logical_xcc_start++ for every compute queue): an AQL queue's XCC x takes
    logical id (start + x) % 8 with chunks of one workgroup; a PM4 queue's every XCC id 0, no chunks; SDMA no XCC."""
    hal = MockHAL(tmp_path)
    hal.kfd = MockKFD(hal, "gfx942", 1)
    dev = KFD(hal)
    ring, pointers = dev.alloc(PAGE, "gtt"), dev.alloc(PAGE, "gtt")
    made = [dev.create_queue(kind, ring, pointers.va, pointers.va + 8) for kind in ("aql", "pm4", "sdma", "aql")]
    queues = [hal.kfd.nodes[0].queues[q.queue_id] for q in made]
    split = [[(c.xcc, c.logical, c.chunk) for c in q.contexts] for q in queues]
    assert split[0] == [(x, x, 1) for x in range(XCCS)]
    assert split[1] == [(x, 0, 0) for x in range(XCCS)]
    assert split[2] == [(0, 0, 0)]
    assert split[3] == [(x, (2 + x) % XCCS, 1) for x in range(XCCS)]  # the PM4 queue moved the start on too
    dev.close()
