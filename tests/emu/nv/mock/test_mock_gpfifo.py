"""The mock NVIDIA GPU's GPFIFO channels driven directly: GP entries and the ring's GPGet/GPPut, pushbuffer headers
(INC, NON_INC, ONE_INC, IMMD, NOPs, END_PB_SEGMENT), host semaphores (32/64-bit releases, timestamps, reductions,
every acquire, the circular compare across the wrap), acquires that stall one channel until another (on this GPU or
another GPU of the machine) releases, non-stall interrupts, and bad pushbuffers stopping their channel alone with
the ROBUST_CHANNEL code and a message saying what and where."""

from __future__ import annotations

import time

import numpy as np
import pytest
from nvrig import GP_GET, Ring, Space, acquire, release, semaphore

from usergpu.autogen import nv_classes as nc
from usergpu.autogen import nv_rm_535 as rm
from usergpu.emu.nv.mock import pushbuf
from usergpu.emu.nv.mock.channel import ChannelError
from usergpu.emu.nv.mock.gpu import MockNVGPU
from usergpu.errors import Error


class Machine:
    """What owns the GPUs (the mock RM's machine): GPUs made with the same one share a scheduler."""


@pytest.fixture(params=["sm_86", "sm_90"])
def gpu(request) -> MockNVGPU:
    return MockNVGPU(Machine(), 0, request.param)


@pytest.fixture
def space(gpu) -> Space:
    return Space(gpu.new_vaspace())


def sem(space: Space, nbytes: int = 16) -> tuple[int, np.ndarray]:
    return space.alloc(nbytes, np.uint32)


def test_release_32_and_64_bit(gpu, space):
    va, mem = sem(space)
    mem[:] = 0xAAAAAAAA
    ring = Ring(gpu, space)
    ring.submit(release(va, 0x12345678))
    assert mem[0] == 0x12345678 and mem[1] == 0xAAAAAAAA  # 4 bytes, nothing after them
    ring.submit(release(va, 0x1122334455667788, wide=True))
    assert mem.view(np.uint64)[0] == 0x1122334455667788 and mem[2] == 0xAAAAAAAA
    assert ring.gp_get == 2 and not ring.channel.busy and not ring.errors


def test_release_timestamps_are_ns_and_strictly_increasing(gpu, space):
    va, mem = sem(space, 64)
    ring = Ring(gpu, space)
    before = time.monotonic_ns()
    ring.submit(release(va, 7, timestamp=True) + release(va + 16, 8, wide=True, timestamp=True)
                + release(va + 32, 9, timestamp=True))
    after = time.monotonic_ns()
    words = mem.view(np.uint64)
    stamps = [int(words[1]), int(words[3]), int(words[5])]
    assert (mem[0], int(words[2]), mem[8]) == (7, 8, 9)
    assert before <= stamps[0] < stamps[1] < stamps[2] <= after + 2


@pytest.mark.parametrize("op, value, payload, goes", [
    ("ACQUIRE", 5, 5, True), ("ACQUIRE", 6, 5, False),
    ("ACQ_STRICT_GEQ", 5, 5, True), ("ACQ_STRICT_GEQ", 4, 5, False), ("ACQ_STRICT_GEQ", 0xFFFFFFF0, 2, True),
    ("ACQ_STRICT_GEQ", 2, 0xFFFFFFF0, False),
    ("ACQ_CIRC_GEQ", 5, 5, True), ("ACQ_CIRC_GEQ", 4, 5, False),
    ("ACQ_CIRC_GEQ", 2, 0xFFFFFFF0, True),  # the counter wrapped past the payload
    ("ACQ_CIRC_GEQ", 0xFFFFFFF0, 2, False),  # the payload is 18 ahead, across the wrap
    ("ACQ_CIRC_GEQ", 0x80000000, 1, True), ("ACQ_CIRC_GEQ", 0x80000001, 1, False),  # half the range apart
    ("ACQ_AND", 0b1010, 0b0010, True), ("ACQ_AND", 0b1010, 0b0101, False),
    ("ACQ_NOR", 0b1010, 0b0101, True), ("ACQ_NOR", 0xFFFF0000, 0x0000FFFF, False)])
def test_acquire_compares(gpu, space, op, value, payload, goes):
    va, mem = sem(space)
    done_va, done = sem(space)
    mem[0] = value
    ring = Ring(gpu, space)
    ring.submit(acquire(va, payload, op) + release(done_va, 1))
    assert done[0] == int(goes) and ring.channel.busy != goes and ring.gp_get == int(goes)


def test_acquire_64_bit_circular(gpu, space):
    va, mem = sem(space)
    done_va, done = sem(space)
    mem.view(np.uint64)[0] = 1 << 40
    ring = Ring(gpu, space)
    ring.submit(acquire(va, (1 << 40) + 1, wide=True) + release(done_va, 1))
    assert done[0] == 0  # 32 bits would see 0 >= 1 wrapped; 64 bits see it 1 short
    mem.view(np.uint64)[0] = (1 << 40) + 1
    gpu.doorbell(ring.channel.token)
    assert done[0] == 1


def test_acquire_stalls_until_another_channel_releases(gpu, space):
    va, signal = sem(space)
    out_va, out = sem(space)
    waiter, releaser = Ring(gpu, space), Ring(gpu, space)
    waiter.submit(acquire(va, 3) + release(out_va, 0xCAFE))
    waiter.submit(release(out_va + 4, 0xBEEF))  # a later entry waits behind the stalled one
    assert (out[0], out[1]) == (0, 0) and waiter.gp_get == 0 and waiter.channel.busy
    releaser.submit(release(va, 2))
    assert out[0] == 0 and waiter.channel.busy  # 2 < 3: still waiting
    releaser.submit(release(va, 3))  # the waiter runs on in the releaser's doorbell
    assert (out[0], out[1]) == (0xCAFE, 0xBEEF) and waiter.gp_get == 2 and not waiter.channel.busy
    assert not waiter.errors and not releaser.errors


def test_acquire_across_two_gpus_of_one_machine():
    machine = Machine()
    gpus = [MockNVGPU(machine, i, "sm_90") for i in range(2)]
    shared = np.zeros(4, np.uint32)  # one memory object's pages, mapped into both GPUs' VA spaces
    spaces = [Space(g.new_vaspace(), base) for g, base in zip(gpus, (0x20_0000_0000, 0x30_0000_0000), strict=True)]
    for s in spaces:
        s.vas.map(s.next, shared.view(np.uint8))
    sem_vas = [s.next for s in spaces]
    for s in spaces:
        s.next += 1 << 16
    waiter, releaser = Ring(gpus[1], spaces[1]), Ring(gpus[0], spaces[0])
    waiter.submit(acquire(sem_vas[1], 1) + release(sem_vas[1] + 4, 0x51))
    assert shared[1] == 0 and waiter.channel.busy
    releaser.submit(release(sem_vas[0], 1))  # GPU 0's doorbell: GPU 1's channel resumes
    assert shared[1] == 0x51 and not waiter.channel.busy
    other = MockNVGPU(Machine(), 0, "sm_90")  # another machine's GPU never runs this machine's channels
    assert other.scheduler is not gpus[0].scheduler and gpus[1].scheduler is gpus[0].scheduler


def test_300_submissions_wrap_a_small_ring(gpu, space):
    va, mem = sem(space)
    ring = Ring(gpu, space, entries=16, pushbuffer=1 << 10)
    for i in range(300):
        ring.submit(release(va, i + 1, wide=True))
        assert int(mem.view(np.uint64)[0]) == i + 1 and ring.gp_get == (i + 1) % 16
    assert not ring.channel.busy and not ring.errors


def test_a_batch_of_entries_runs_in_one_doorbell(gpu, space):
    va, mem = sem(space, 64)
    ring = Ring(gpu, space, entries=8)
    for i in range(7):  # a ring filled but for one entry, rung once
        ring.submit(release(va + 4 * i, i + 10), doorbell=False)
    gpu.doorbell(ring.channel.token)
    assert list(mem[:7]) == [10, 11, 12, 13, 14, 15, 16] and ring.gp_get == 7


def test_immd_one_inc_non_inc_and_nops(gpu, space):
    va, mem = sem(space, 32)
    ring = Ring(gpu, space)
    run = nc.METHODS["NVC56F_SEM_EXECUTE"].encode(OPERATION=nc.NVC56F_SEM_EXECUTE_OPERATION_RELEASE)
    words = (pushbuf.one_inc(0, "NVC56F_SEM_ADDR_LO", va & 0xFFFFFFFF, va >> 32)  # LO, then HI
             + [0]  # a NOP
             + pushbuf.non_inc(0, "NVC56F_SEM_PAYLOAD_LO", 1, 2, 0x4321)  # the last one stays
             + pushbuf.immd(0, "NVC56F_SEM_EXECUTE", run))
    ring.submit(words)
    assert mem[0] == 0x4321
    ring.submit(pushbuf.immd(0, "NVC56F_SEM_PAYLOAD_LO", 0x1FFF) + pushbuf.immd(3, "NVC56F_SEM_EXECUTE", run))
    assert mem[0] == 0x1FFF  # IMMD carries 13 bits; host methods answer on any subchannel


def test_end_pb_segment_and_old_style_headers(gpu, space):
    va, mem = sem(space)
    ring = Ring(gpu, space)
    old_inc = (nc.FIELDS["NVC56F_DMA_METHOD_ADDRESS_OLD"].encode(nc.NVC56F_SEM_PAYLOAD_LO >> 2)
               | nc.FIELDS["NVC56F_DMA_METHOD_COUNT_OLD"].encode(1))  # SEC_OP 0, TERT_OP 0: INC with count 28:18
    end = nc.FIELDS["NVC56F_DMA_SEC_OP"].encode(nc.NVC56F_DMA_SEC_OP_END_PB_SEGMENT)
    words = pushbuf.inc(0, "NVC56F_SEM_ADDR_LO", va & 0xFFFFFFFF, va >> 32) + [old_inc, 0x77]
    words += pushbuf.immd(0, "NVC56F_SEM_EXECUTE", nc.NVC56F_SEM_EXECUTE_OPERATION_RELEASE)
    ring.submit(words + [end] + release(va + 4, 9))
    assert (mem[0], mem[1]) == (0x77, 0) and ring.gp_get == 1 and not ring.errors


def test_control_gp_entry_is_a_nop(gpu, space):
    va, mem = sem(space)
    ring = Ring(gpu, space)
    ring.entry(nc.FIELDS["NVC56F_GP_ENTRY1_OPCODE"].encode(nc.NVC56F_GP_ENTRY1_OPCODE_NOP) << 32)
    ring.submit(release(va, 5))
    assert mem[0] == 5 and ring.gp_get == 2


def test_reductions(gpu, space):
    va, mem = sem(space)
    ring = Ring(gpu, space)
    mem[0], mem[1], mem[2] = 40, 3, 3
    ring.submit(semaphore(va, 2, "REDUCTION", reduction="IADD") + semaphore(va + 4, 3, "REDUCTION", reduction="INC")
                + 2 * semaphore(va + 8, 3, "REDUCTION", reduction="DEC"))
    assert (mem[0], mem[1], mem[2]) == (42, 0, 1)  # INC wraps at the payload; DEC counts down


def test_non_stall_interrupt_and_reference(gpu, space):
    ring = Ring(gpu, space)
    heard = []
    gpu.interrupt_handlers.append(heard.append)
    ring.submit(pushbuf.inc(0, "NVC56F_NON_STALL_INTERRUPT", 0) + pushbuf.inc(0, "NVC56F_SET_REFERENCE", 0x55)
                + pushbuf.inc(0, "NVC56F_WFI", 0) + pushbuf.inc(0, "NVC56F_MEM_OP_A", 0, 0, 0, 0))
    reference = nc.struct_Nvc56fControl_struct.Reference.offset
    assert heard == [ring.channel] and ring.channel.interrupts == 1
    assert int(ring.userd[reference:reference + 4].view(np.uint32)[0]) == 0x55 and not ring.errors


def test_hopper_semaphore_address_uses_the_wide_field():
    gpu = MockNVGPU(None, 0, "sm_90")
    space = Space(gpu.new_vaspace(), 0x20_0000_0000)
    high = 0x1234_0000_0000  # past the 40 bits of c56f's SEM_ADDR_HI (7:0); c86f's is 24:0
    mem = np.zeros(4, np.uint32)
    space.vas.map(high, mem.view(np.uint8))
    ring = Ring(gpu, space)
    assert ring.channel.host.class_id == nc.HOPPER_CHANNEL_GPFIFO_A
    ring.submit(release(high, 0x99))
    assert mem[0] == 0x99 and not ring.errors


BAD = {
    "unknown host method": (pushbuf.inc(0, 0x40, 1), rm.ROBUST_CHANNEL_PBDMA_ERROR, "has no method at offset 0x40"),
    "no object": (pushbuf.inc(3, 0x300, 1), rm.ROBUST_CHANNEL_PBDMA_ERROR, "subchannel 3 has no object"),
    "unbound class": (pushbuf.inc(1, 0, nc.AMPERE_COMPUTE_B), rm.ROBUST_CHANNEL_GR_CLASS_ERROR,
                      "the channel has no object of that class"),
    "reserved opcode": ([6 << 29], rm.ROBUST_CHANNEL_PBDMA_ERROR, "is reserved"),
    "truncated": ([pushbuf.header(pushbuf.INC, 0, "NVC56F_SEM_ADDR_LO", 100)], rm.ROBUST_CHANNEL_PBDMA_ERROR,
                  "has 100 data dwords; the segment ends after 6"),  # the 6 of the release after it
    "old semaphore": (pushbuf.inc(0, "NVC56F_SEMAPHORED", 2), rm.ROBUST_CHANNEL_PBDMA_ERROR, "not modelled"),
    "illegal": (pushbuf.inc(0, "NVC56F_ILLEGAL", 7), rm.ROBUST_CHANNEL_PBDMA_ERROR, "the ILLEGAL method"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_pushbuffer_stops_its_channel_alone(gpu, space, case):
    words, code, why = BAD[case]
    va, mem = sem(space)
    bad, good = Ring(gpu, space), Ring(gpu, space)
    bad.submit(release(va, 1) + words + release(va + 4, 2))
    assert (mem[0], mem[1]) == (1, 0)  # what came before the bad method ran, nothing after it
    assert len(bad.errors) == 1 and bad.errors[0][0] == code and why in bad.errors[0][1]
    assert bad.errors[0][1].startswith(f"channel {bad.channel.token} of GPU 0: ")
    assert f"GP entry 0: the header at pushbuffer {bad.pb_va:#x} + 0x18" in bad.errors[0][1]  # after the release
    assert isinstance(bad.channel.error, ChannelError) and bad.channel.error.code == code
    bad.submit(release(va + 8, 3))
    assert mem[2] == 0 and len(bad.errors) == 1 and not bad.channel.busy  # stopped for good, reported once
    good.submit(release(va + 12, 4))
    assert mem[3] == 4 and not good.errors
    assert gpu.errors == [(bad.channel, code, bad.errors[0][1])]


def test_unmapped_pushbuffer_and_semaphore_are_mmu_faults(gpu, space):
    ring = Ring(gpu, space)
    ring.entry(pushbuf.gp_entry(0x7000_0000, 4))
    gpu.doorbell(ring.channel.token)
    assert ring.errors[0][0] == rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT and "0x70000000" in ring.errors[0][1]
    other = Ring(gpu, space)
    other.submit(release(0x7100_0000, 1))
    assert other.errors[0][0] == rm.ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT
    assert [(f.address, f.fault_type, f.access_type, f.channel) for f in gpu.mmu_faults] == [
        (0x7000_0000, 2, 0, ring.channel.token), (0x7100_0000, 2, 1, other.channel.token)]  # PTE; read, write


def test_gpput_past_the_ring_and_bad_setup(gpu, space):
    ring = Ring(gpu, space, entries=4)
    ring.userd[GP_GET + 4:GP_GET + 8] = np.frombuffer((9).to_bytes(4, "little"), np.uint8)
    gpu.doorbell(ring.channel.token)
    assert "GPPut 9 is past the ring's 4 entries" in ring.errors[0][1]
    with pytest.raises(Error, match="not a compute or copy class"):
        ring.channel.bind(0x1234)
    with pytest.raises(Error, match="no mock NVIDIA GPU for sm_70"):
        MockNVGPU(None, 0, "sm_70")


def test_destroyed_channel_no_longer_runs(gpu, space):
    va, mem = sem(space)
    ring = Ring(gpu, space)
    gpu.destroy_channel(ring.channel)
    ring.submit(release(va, 1))
    assert mem[0] == 0 and ring.channel not in gpu.channels
    assert len({Ring(gpu, space).channel.token for _ in range(3)} | {ring.channel.token}) == 4
