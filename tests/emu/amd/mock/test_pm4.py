"""The PM4 compute queue: every packet it executes, ring wrap-around, IBs, stalls, and typed errors."""

from __future__ import annotations

import numpy as np
import pytest
from mockrig import Rig, load, lohi, u32, u64

import usergpu.autogen.pm4_nv as nv
from usergpu.emu.amd.mock import GPU, PM4Queue, QueueError
from usergpu.isa.amd.dispatch import kernel_registers, user_sgpr_values

P3 = nv.PACKET3
SCRATCH_REG0 = 0xC040  # SOC21: GC seg1 base 0xA000 + regSCRATCH_REG0 0x2040
# NBIO's BIF_BX_PF0_GPU_HDP_FLUSH_REQ / _DONE on Navi31 and Navi44 alike: NBIO seg2 base 0xD20 (tinygrad's navi_offsets
# NBIO_BASE__INST0_SEG2) + 0x106 / 0x107 (nbio_4_3_0_offset.h and nbif_6_3_1_offset.h agree)
HDP_FLUSH_REQ, HDP_FLUSH_DONE = 0xE26, 0xE27


def write_data(address: int, *words: int, dst_sel: int = 5) -> list[int]:
    return [P3(nv.PACKET3_WRITE_DATA, 2 + len(words)), nv.WRITE_DATA_DST_SEL(dst_sel), *lohi(address), *words]


def release_mem(address: int, data_sel: int, data: int = 0, int_sel: int = 0, ctx: int = 0) -> list[int]:
    event = nv.PACKET3_RELEASE_MEM_EVENT_TYPE(0x14) | nv.PACKET3_RELEASE_MEM_EVENT_INDEX(5)  # CACHE_FLUSH_AND_INV_TS
    return [P3(nv.PACKET3_RELEASE_MEM, 6), event,
            nv.PACKET3_RELEASE_MEM_DATA_SEL(data_sel) | nv.PACKET3_RELEASE_MEM_INT_SEL(int_sel), *lohi(address),
            *lohi(data), ctx]


def wait_mem(address: int, ref: int, function: int = 3, mask: int = 0xFFFFFFFF) -> list[int]:
    return [P3(nv.PACKET3_WAIT_REG_MEM, 5), nv.WAIT_REG_MEM_FUNCTION(function) | nv.WAIT_REG_MEM_MEM_SPACE(1),
            *lohi(address), ref, mask, 4]


def write_wait(write: int, poll: int, ref: int, mask: int, function: int = 3) -> list[int]:
    """WAIT_REG_MEM's WR_WAIT_WR_REG, as gfx_v11_0_wait_reg_mem emits it (and tinygrad's memory_barrier)."""
    return [P3(nv.PACKET3_WAIT_REG_MEM, 5), nv.WAIT_REG_MEM_FUNCTION(function) | nv.WAIT_REG_MEM_OPERATION(1), write,
            poll, ref, mask, 0x20]


def ib(address: int, dwords: int) -> list[int]:
    return [P3(nv.PACKET3_INDIRECT_BUFFER, 2), address & 0xFFFFFFFC, address >> 32, nv.INDIRECT_BUFFER_VALID | dwords]


@pytest.fixture
def rig(gpu):
    return Rig(gpu, PM4Queue, 4096, pointers=0)


@pytest.fixture(params=["gfx1100", "gfx1200"])
def rdna_rig(request):
    """A queue of a GPU whose packets are nvd.h's only (WAIT_REG_MEM64: soc15d.h has none)."""
    return Rig(GPU(request.param), PM4Queue, 4096, pointers=0)


def test_registers_and_write_data(gpu, rig):
    out = gpu.mem.map(64)
    rig.submit([P3(nv.PACKET3_SET_SH_REG, 2), 0x20C, 0x1234, 0x5678,  # COMPUTE_PGM_LO at 0x2e0c, then _HI
                P3(nv.PACKET3_SET_UCONFIG_REG, 1), SCRATCH_REG0 - nv.PACKET3_SET_UCONFIG_REG_START, 7,
                *write_data(out, 1, 2, 3), *write_data(SCRATCH_REG0 + 1, 9, dst_sel=0)])
    assert rig.queue.step() and rig.read_ptr() == rig.put // 4
    assert gpu.regs["COMPUTE_PGM_LO"] == 0x1234 and gpu.regs["COMPUTE_PGM_HI"] == 0x5678
    assert gpu.regs["SCRATCH_REG0"] == 7 and gpu.regs["SCRATCH_REG1"] == 9
    assert np.frombuffer(gpu.mem.read_bytes(out, 12), np.uint32).tolist() == [1, 2, 3]
    assert gpu.reg_address("SCRATCH_REG0") == SCRATCH_REG0 and gpu.reg_name(0x2E0C) == "COMPUTE_PGM_LO"
    assert not rig.queue.step() and not rig.queue.busy  # nothing new


def test_nops_of_every_kind(gpu, rig):
    out = gpu.mem.map(8)
    rig.submit([nv.CP_PACKET2, P3(nv.PACKET3_NOP, 0x3FFF), P3(nv.PACKET3_NOP, 3), 0, 0, 0, 0,
                P3(nv.PACKET3_ACQUIRE_MEM, 6), 0, 0, 0, 0, 0, 0, 0, P3(nv.PACKET3_EVENT_WRITE, 0), 7,
                *write_data(out, 5)])
    rig.queue.step()
    assert u32(gpu, out) == 5 and rig.read_ptr() == rig.put // 4


def test_copy_data(gpu, rig):
    src, out = gpu.mem.map(np.array([0x11111111, 0x22222222], np.uint32)), gpu.mem.map(64)
    gpu.regs["SCRATCH_REG0"] = 0xABCD
    copy = nv.PACKET3_COPY_DATA
    rig.submit([P3(copy, 4), 0 | 5 << 8, SCRATCH_REG0, 0, *lohi(out),  # register -> memory
                P3(copy, 4), 5 | 5 << 8 | 1 << 16, 0x89ABCDEF, 0x01234567, *lohi(out + 8),  # 64-bit immediate
                P3(copy, 4), 1 | 0 << 8 | 1 << 16, *lohi(src), SCRATCH_REG0 + 2, 0,  # memory -> 2 registers
                P3(copy, 4), 9 | 5 << 8 | 1 << 16, 0, 0, *lohi(out + 16)])  # GPU clock
    rig.queue.step()
    assert u32(gpu, out) == 0xABCD and u64(gpu, out + 8) == 0x0123456789ABCDEF
    assert (gpu.regs["SCRATCH_REG2"], gpu.regs["SCRATCH_REG3"]) == (0x11111111, 0x22222222)
    assert 0 < u64(gpu, out + 16) <= gpu.timestamp()


def test_release_mem_data_timestamps_and_interrupts(gpu, rig, interrupts):
    out = gpu.mem.map(64)
    rig.submit([*release_mem(out, 1, 0xDEADBEEFCAFE), *release_mem(out + 8, 2, 0x1122334455667788),
                *release_mem(out + 16, 3), *release_mem(out + 24, 3, int_sel=2, ctx=42),
                *release_mem(out + 32, 0, int_sel=1, ctx=43), *release_mem(out + 40, 3)])
    rig.queue.step()
    assert u64(gpu, out) == 0xBEEFCAFE and u64(gpu, out + 8) == 0x1122334455667788
    stamps = [u64(gpu, out + o) for o in (16, 24, 40)]
    assert stamps == sorted(stamps) and len(set(stamps)) == 3 and stamps[0] > 0
    assert interrupts == [("CP_EOP_INTERRUPT", 42), ("CP_EOP_INTERRUPT", 43)]


def test_ring_wraps(gpu):
    rig = Rig(gpu, PM4Queue, 64, pointers=0)  # 16 dwords: five-dword packets straddle the end
    out = gpu.mem.map(4 * 40)
    for i in range(40):
        rig.submit(write_data(out + 4 * i, i + 100))
        rig.queue.step()
    assert np.frombuffer(gpu.mem.read_bytes(out, 160), np.uint32).tolist() == list(range(100, 140))
    assert rig.read_ptr() == 200


def test_indirect_buffers_nest(gpu, rig):
    out = gpu.mem.map(16)
    inner = np.array(write_data(out + 4, 2), np.uint32)
    inner_va = gpu.mem.map(inner)
    outer = np.array([*write_data(out, 1), *ib(inner_va, len(inner)), *write_data(out + 8, 3)], np.uint32)
    rig.submit(ib(gpu.mem.map(outer), len(outer)))
    rig.queue.step()
    assert np.frombuffer(gpu.mem.read_bytes(out, 12), np.uint32).tolist() == [1, 2, 3]


@pytest.mark.parametrize("function,value,ref,passes", [
    (0, 5, 9, True), (1, 4, 5, True), (1, 5, 5, False), (2, 5, 5, True), (3, 5, 5, True), (3, 4, 5, False),
    (4, 4, 5, True), (5, 5, 5, True), (5, 4, 5, False), (6, 6, 5, True), (6, 5, 5, False)])
def test_wait_reg_mem_functions_on_a_register(gpu, rig, function, value, ref, passes):
    gpu.regs["SCRATCH_REG0"] = value | 0xF00  # the mask drops the high bits
    out = gpu.mem.map(4)
    rig.submit([P3(nv.PACKET3_WAIT_REG_MEM, 5), nv.WAIT_REG_MEM_FUNCTION(function), SCRATCH_REG0, 0, ref, 0xFF, 4,
                *write_data(out, 1)])
    rig.queue.step()
    assert u32(gpu, out) == passes and rig.queue.busy != passes


def test_wait_stalls_inside_an_ib_and_resumes_once(gpu, rig, interrupts):
    flag, out = gpu.mem.map(8), gpu.mem.map(8)
    body = np.array([*release_mem(out, 0, int_sel=1, ctx=7), *wait_mem(flag, 1), *write_data(out, 9)], np.uint32)
    rig.submit(ib(gpu.mem.map(body), len(body)))
    assert rig.queue.step() and rig.queue.busy and rig.read_ptr() == 0  # the RELEASE_MEM ran, then the stall
    assert not rig.queue.step()  # still waiting: no progress
    gpu.mem.write_bytes(flag, (1).to_bytes(4, "little"))
    assert rig.queue.step() and not rig.queue.busy
    assert u32(gpu, out) == 9 and interrupts == [("CP_EOP_INTERRUPT", 7)]


def test_wait_reg_mem64(rdna_rig):
    rig = rdna_rig
    gpu = rig.gpu
    flag, out = gpu.mem.map(8), gpu.mem.map(4)
    rig.submit([P3(nv.PACKET3_WAIT_REG_MEM64, 7), nv.WAIT_REG_MEM_FUNCTION(5) | nv.WAIT_REG_MEM_MEM_SPACE(1),
                *lohi(flag), *lohi(1 << 40), *lohi((1 << 64) - 1), 4, *write_data(out, 1)])
    rig.queue.step()
    assert rig.queue.busy
    gpu.mem.write_bytes(flag, (1 << 40).to_bytes(8, "little"))
    rig.queue.step()
    assert u32(gpu, out) == 1


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx942", "gfx950"])  # NBIO 7.9 (nbio_7_9_0_offset.h) too
@pytest.mark.parametrize("function,ref", [(5, 0xFFFFFFFF), (3, 0x4 << 1)])  # tinygrad's; amdgpu's (CP2 << pipe 1)
def test_write_wait_flushes_the_hdp_through_nbio(arch, function, ref):
    gpu = GPU(arch)
    rig = Rig(gpu, PM4Queue, 4096, pointers=0)
    out = gpu.mem.map(4)
    rig.submit([*write_wait(HDP_FLUSH_REQ, HDP_FLUSH_DONE, ref, ref, function), *write_data(out, 1)])
    assert rig.queue.step() and not rig.queue.busy and u32(gpu, out) == 1
    assert gpu.read_reg(HDP_FLUSH_DONE) == ref and gpu.hdp.flushes == 1
    assert (gpu.reg_name(HDP_FLUSH_REQ), gpu.reg_address("BIF_BX_PF0_GPU_HDP_FLUSH_DONE")) == (
        "BIF_BX_PF0_GPU_HDP_FLUSH_REQ", HDP_FLUSH_DONE)


def test_write_wait_writes_once_then_stalls_until_the_register_matches(gpu, rig):
    out = gpu.mem.map(4)
    body = np.array([*write_wait(SCRATCH_REG0, SCRATCH_REG0 + 1, 0x35, 0x0F), *write_data(out, 1)], np.uint32)
    rig.submit(ib(gpu.mem.map(body), len(body)))
    assert rig.queue.step() and rig.queue.busy and gpu.regs["SCRATCH_REG0"] == 0x35  # written: work another may see
    gpu.regs["SCRATCH_REG0"] = 0
    assert not rig.queue.step() and rig.queue.busy and gpu.regs["SCRATCH_REG0"] == 0  # polls, does not write again
    gpu.regs["SCRATCH_REG1"] = 0x15  # (0x15 & 0xF) == (0x35 & 0xF): the reference counts under the mask
    assert rig.queue.step() and not rig.queue.busy and u32(gpu, out) == 1 and gpu.regs["SCRATCH_REG0"] == 0


def test_a_dispatch_from_compute_start_is_refused(gpu, rig):
    rig.submit([P3(nv.PACKET3_SET_SH_REG, 1), gpu.reg_address("COMPUTE_START_X") - nv.PACKET3_SET_SH_REG_START, 2,
                P3(nv.PACKET3_DISPATCH_DIRECT, 3), 4, 1, 1, 1])  # COMPUTE_SHADER_EN without FORCE_START_AT_000
    with pytest.raises(QueueError, match=r"COMPUTE_START_X/Y/Z \(2, 0, 0\)"):
        rig.queue.step()


@pytest.mark.parametrize("words,says", [
    ([P3(0xEE, 0), 0], r"unknown \(0xee\) at ring offset 0x14"),
    ([P3(nv.PACKET3_WRITE_DATA, 6), 5 << 8, 0, 0], "truncated"),
    ([0x00001234], "type-0"),
    ([P3(nv.PACKET3_RELEASE_MEM, 2), 0, 0, 0], "malformed"),
    (write_data(0x10, 1), "GPU memory fault"),
    ([P3(nv.PACKET3_WAIT_REG_MEM, 5), nv.WAIT_REG_MEM_OPERATION(1) | nv.WAIT_REG_MEM_MEM_SPACE(1), 0, 0, 0, 0, 4],
     "WR_WAIT_WR_REG writes and polls registers"),
])
def test_bad_packets_stop_the_queue(gpu, rig, words, says):
    rig.submit([P3(nv.PACKET3_NOP, 3), 0, 0, 0, 0, *words])
    with pytest.raises(QueueError, match=says) as e:
        rig.queue.step()
    assert e.value.offset == 0x14 and rig.read_ptr() == 5  # the NOP before it completed
    assert not rig.queue.step() and not rig.queue.busy


@pytest.mark.parametrize(("arch", "says"), [
    ("gfx1100", "OPERATION 1 not supported"),
    ("gfx942", r"unknown or unsupported opcode: packet WAIT_REG_MEM64 \(0x93\)")])
def test_wait_reg_mem64_is_nvd_s(arch, says):
    """WAIT_REG_MEM64 is a gfx10+ packet (nvd.h): soc15d.h, gfx9's, has none."""
    rig = Rig(GPU(arch), PM4Queue, 4096, pointers=0)
    rig.submit([P3(nv.PACKET3_WAIT_REG_MEM64, 7), nv.WAIT_REG_MEM_OPERATION(1), *[0] * 7])
    with pytest.raises(QueueError, match=says):
        rig.queue.step()


def test_error_inside_an_ib_names_the_ib(gpu, rig):
    body = gpu.mem.map(np.array([P3(nv.PACKET3_NOP, 0), 0, P3(0xEE, 0), 0], np.uint32))
    rig.submit(ib(body, 4))
    with pytest.raises(QueueError, match=f"unknown \\(0xee\\) at IB {body:#x} offset 0x8 bytes"):
        rig.queue.step()


def test_dispatch_direct_runs_a_compiled_kernel(gpu, rig, vadd_co):
    k = vadd_co.kernels["vadd"]
    base = load(gpu, vadd_co)
    n = 256
    a, b = np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32) * 10
    c = np.zeros(n, np.int32)
    args = np.array([gpu.mem.map(a), gpu.mem.map(b), gpu.mem.map(c)], np.uint64)
    kd = gpu.mem.read_bytes(base + k.descriptor_addr, 64)
    user = user_sgpr_values(kd, gpu.arch, {"kernarg_segment_ptr": gpu.mem.map(args)})
    regs = kernel_registers(kd, base + k.descriptor_addr, gpu.arch, (64, 1, 1), user)
    packets = []
    for name, value in regs.items():
        if name != "COMPUTE_DISPATCH_INITIATOR":
            packets += [P3(nv.PACKET3_SET_SH_REG, 1), gpu.reg_address(name) - nv.PACKET3_SET_SH_REG_START, value]
    out = gpu.mem.map(8)
    before = gpu.timestamp()
    rig.submit([*packets, P3(nv.PACKET3_DISPATCH_DIRECT, 3), n // 64, 1, 1, regs["COMPUTE_DISPATCH_INITIATOR"],
                *release_mem(out, 3)])
    rig.queue.step()
    assert (c == a + b).all()
    assert u64(gpu, out) - before > 20  # the waves' instructions took time
