"""The mock RM's profiler (MAXWELL_PROFILER_DEVICE and its b0cc controls) as a profiling driver drives it: made under
a subdevice once, for a context; power features; a PMA stream whose records and byte count the client reads through
PMA_STREAM_UPDATE_GET_PUT; register operations; HS credits. Each refusal is the NV_STATUS the RM source gives (or,
where GSP decides out of sight, the one the mock's docstring names)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from rmrig import RMRig
from test_mock_rm import Channel

from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.nv.mock import pc_sampler

READ_ONLY = 1 << 22  # NVOS32_ATTR2_PROTECTION_USER_READ_ONLY
BUFFER = 1 << 16


@pytest.fixture
def rig(tmp_path) -> RMRig:
    return RMRig(tmp_path)


class Profiled:
    """A channel (HOPPER compute) and a profiler of its channel group with a PMA stream of BUFFER bytes."""

    def __init__(self, rig: RMRig):
        rm = self.rm = rig.rm
        self.rig, self.ch = rig, Channel(rig, rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A)
        self.handle = rig.make(self.ch.subdevice, rm.MAXWELL_PROFILER_DEVICE,
                               rm.NVB2CC_ALLOC_PARAMETERS(hClientTarget=rig.client, hContextTarget=self.ch.group))
        self.buffer = rig.memory(self.ch.device, BUFFER, vidmem=False)
        self.count = rig.make(self.ch.device, rm.NV01_MEMORY_SYSTEM, self._read_only(0x1000))
        self.stream = rm.NVB0CC_CTRL_ALLOC_PMA_STREAM_PARAMS(hMemPmaBuffer=self.buffer, pmaBufferSize=BUFFER,
                                                             hMemPmaBytesAvailable=self.count)

    def _read_only(self, size: int):
        params = self.rig.memory_params(size, vidmem=False)
        params.attr2 = READ_ONLY
        return params

    def control(self, cmd: int, params=None) -> int:
        return self.rig.control(self.handle, cmd, params).status

    def update(self, **fields):
        p = self.rm.NVB0CC_CTRL_PMA_STREAM_UPDATE_GET_PUT_PARAMS(**fields)
        return self.control(self.rm.NVB0CC_CTRL_CMD_PMA_STREAM_UPDATE_GET_PUT, p), p

    def sampling(self):
        rm = self.rm
        for cmd in (rm.NVB0CC_CTRL_CMD_RESERVE_PM_AREA_PC_SAMPLER, rm.NVB0CC_CTRL_CMD_BIND_PM_RESOURCES):
            assert self.control(cmd) == 0
        return self.rig.m.gpu(0).profilers[0]


def test_one_profiler_per_subdevice_made_under_a_subdevice_for_a_context(rig):
    rm = rig.rm
    ch = Channel(rig, rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A)
    params = rm.NVB2CC_ALLOC_PARAMETERS(hClientTarget=rig.client, hContextTarget=ch.group)
    assert rig.alloc(ch.subdevice, rm.MAXWELL_PROFILER, params).status == S.NV_ERR_INVALID_CLASS  # an interface
    assert rig.alloc(ch.device, rm.MAXWELL_PROFILER_DEVICE, params).status == S.NV_ERR_INVALID_OBJECT_PARENT
    assert rig.alloc(ch.subdevice, rm.MAXWELL_PROFILER_DEVICE).status == S.NV_ERR_INVALID_ARGUMENT  # params required
    bad = rm.NVB2CC_ALLOC_PARAMETERS(hClientTarget=rig.client, hContextTarget=ch.memory)
    assert rig.alloc(ch.subdevice, rm.MAXWELL_PROFILER_DEVICE, bad).status == S.NV_ERR_INVALID_OBJECT_HANDLE
    first = rig.make(ch.subdevice, rm.MAXWELL_PROFILER_DEVICE, params)
    assert rig.alloc(ch.subdevice, rm.MAXWELL_PROFILER_DEVICE, params).status == S.NV_ERR_STATE_IN_USE
    assert rig.free(first) == 0
    assert rig.alloc(ch.subdevice, rm.MAXWELL_PROFILER_DEVICE, params).status == 0


def test_profiling_is_an_administrators_while_restricted(rig, monkeypatch):
    """NVreg_RestrictProfilingToAdminUsers=1 (the default) refuses a user without CAP_SYS_ADMIN."""
    rm = rig.rm
    _, subdevice = rig.open_device()
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    params = rm.NVB2CC_ALLOC_PARAMETERS()
    assert rig.alloc(subdevice, rm.MAXWELL_PROFILER_DEVICE, params).status == S.NV_ERR_INSUFFICIENT_PERMISSIONS
    monkeypatch.setenv("NVreg_RestrictProfilingToAdminUsers", "0")
    assert rig.alloc(subdevice, rm.MAXWELL_PROFILER_DEVICE, params).status == 0


def test_power_features_are_requested_field_by_field(rig):
    p = Profiled(rig)
    rm = p.rm
    ask = rm.NVB0CC_CTRL_POWER_REQUEST_FEATURES_PARAMS(controlMask=rm.NVB0CC_CTRL_POWER_FEATURE_MASK_ALL_DISABLE,
                                                       statusMask=0xFFF)
    assert p.control(rm.NVB0CC_CTRL_CMD_POWER_REQUEST_FEATURES, ask) == 0
    assert (ask.globalStatus, ask.statusMask) == (0, 0)  # each feature FULFILLED
    release = rm.NVB0CC_CTRL_POWER_REQUEST_FEATURES_PARAMS(controlMask=rm.NVB0CC_CTRL_POWER_FEATURE_MASK_ALL_RELEASE)
    assert p.control(rm.NVB0CC_CTRL_CMD_POWER_REQUEST_FEATURES, release) == S.NV_ERR_INVALID_ARGUMENT
    done = rm.NVB0CC_CTRL_POWER_RELEASE_FEATURES_PARAMS(controlMask=rm.NVB0CC_CTRL_POWER_FEATURE_MASK_ALL_RELEASE)
    assert p.control(rm.NVB0CC_CTRL_CMD_POWER_RELEASE_FEATURES, done) == 0


def test_a_pma_stream_needs_a_read_only_count_page_and_room_for_its_buffer(rig):
    p = Profiled(rig)
    rm = p.rm
    writable = rig.memory(p.ch.device, 0x1000, vidmem=False)
    cases = [(dict(hMemPmaBytesAvailable=writable), S.NV_ERR_INVALID_ARGUMENT),
             (dict(pmaBufferSize=BUFFER + 0x1000), S.NV_ERR_INVALID_ARGUMENT),
             (dict(pmaBytesAvailableOffset=8), S.NV_ERR_INVALID_ARGUMENT),
             (dict(pmaBufferSize=rm.NVB0CC_PMA_BUFFER_SIZE_MAX + 1), S.NV_ERR_INVALID_ARGUMENT),
             (dict(hMemPmaBuffer=0xBAD), S.NV_ERR_OBJECT_NOT_FOUND),
             (dict(hMemPmaBuffer=p.ch.group), S.NV_ERR_INVALID_OBJECT)]
    for change, status in cases:
        params = rm.NVB0CC_CTRL_ALLOC_PMA_STREAM_PARAMS.from_buffer_copy(p.stream)
        for name, value in change.items():
            setattr(params, name, value)
        assert p.control(rm.NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM, params) == status, change
    assert p.control(rm.NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM, p.stream) == 0
    assert p.stream.pmaChannelIdx == 0 and p.stream.pmaBufferVA == 1 << 32  # the PERF VA space's first block
    assert p.update(pmaChannelIdx=9)[0] == S.NV_ERR_INVALID_ARGUMENT  # GH100 has 9 PMA channels
    assert p.update(pmaChannelIdx=1)[0] == S.NV_ERR_INVALID_STATE  # one it has, with no stream


def test_the_pc_sampler_streams_a_launch_of_its_context_and_the_client_reads_it_back(rig):
    p = Profiled(rig)
    rm = p.rm
    assert p.control(rm.NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM, p.stream) == 0
    prof = p.sampling()
    mine, rig.client = rig.client, 0
    other = Channel(rig, rm.HOPPER_CHANNEL_GPFIFO_A, rm.HOPPER_COMPUTE_A)  # another client's
    rig.client = mine
    assert prof.sampling(other.token) is None  # another context's launches are not sampled
    stream = prof.sampling(p.ch.token)
    issued = np.array([2048, 0, 6144])  # a launch's warp-instructions at its three instructions
    data = pc_sampler.packets(rig.m.chip, 0x1000, issued, 1, 4)
    stream.write(data)
    status, got = p.update(bUpdateAvailableBytes=1, bWait=1, bReturnPut=1)
    assert status == 0 and got.bytesAvailable == len(data) and got.putPtr == len(data) and not got.bOverflowStatus
    count = np.frombuffer(ctypes.string_at(rig.cpu_map(p.ch.device, p.count, 0x1000, vidmem=False), 4), np.uint32)
    assert count[0] == len(data)  # the word the PMA streamed its count to
    ring = ctypes.string_at(rig.cpu_map(p.ch.device, p.buffer, BUFFER, vidmem=False), len(data))
    assert ring == data
    assert p.update(bytesConsumed=len(data) + 1)[0] == S.NV_ERR_INVALID_ARGUMENT
    assert p.update(bytesConsumed=len(data))[0] == 0
    assert p.update(bUpdateAvailableBytes=1, bWait=1)[1].bytesAvailable == 0
    stream.write(bytes(BUFFER + 32))  # more than the ring holds
    status, got = p.update(bUpdateAvailableBytes=1, bWait=1)
    assert got.bytesAvailable == BUFFER and got.bOverflowStatus


def test_reservations_and_streams_change_only_while_unbound(rig):
    p = Profiled(rig)
    rm = p.rm
    assert p.control(rm.NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM, p.stream) == 0
    p.sampling()
    assert p.control(rm.NVB0CC_CTRL_CMD_RESERVE_HWPM_LEGACY, rm.NVB0CC_CTRL_RESERVE_HWPM_LEGACY_PARAMS()) == \
        S.NV_ERR_INVALID_STATE
    free = rm.NVB0CC_CTRL_FREE_PMA_STREAM_PARAMS(pmaChannelIdx=0)
    assert p.control(rm.NVB0CC_CTRL_CMD_FREE_PMA_STREAM, free) == S.NV_ERR_INVALID_STATE
    assert p.control(rm.NVB0CC_CTRL_CMD_UNBIND_PM_RESOURCES) == 0
    assert p.control(rm.NVB0CC_CTRL_CMD_FREE_PMA_STREAM, free) == 0
    assert p.update()[0] == S.NV_ERR_INVALID_STATE


def test_freeing_a_streams_memory_frees_the_profiler(rig):
    """refAddDependant: the PMA buffer and count memory own the profiler."""
    p = Profiled(rig)
    assert p.control(p.rm.NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM, p.stream) == 0
    assert rig.free(p.count) == 0
    assert rig.m.gpu(0).profilers == []
    assert p.update()[0] == S.NV_ERR_OBJECT_NOT_FOUND


def test_register_operations_write_through_their_mask_and_read_back(rig):
    p = Profiled(rig)
    rm = p.rm
    ops = rm.NVB0CC_CTRL_EXEC_REG_OPS_PARAMS(regOpCount=3)
    ops.regOps[0] = rm.NV2080_CTRL_GPU_REG_OP(regOp=rm.NV2080_CTRL_GPU_REG_OP_WRITE_32, regOffset=0x24A620,
                                              regValueLo=0x2000007, regAndNMaskLo=0xFFFFFFFF)
    ops.regOps[1] = rm.NV2080_CTRL_GPU_REG_OP(regOp=rm.NV2080_CTRL_GPU_REG_OP_WRITE_32, regOffset=0x24A620,
                                              regValueLo=0x100, regAndNMaskLo=0x100)
    ops.regOps[2] = rm.NV2080_CTRL_GPU_REG_OP(regOp=rm.NV2080_CTRL_GPU_REG_OP_READ_32, regOffset=0x24A620)
    assert p.control(rm.NVB0CC_CTRL_CMD_EXEC_REG_OPS, ops) == 0
    assert ops.bPassed and ops.regOps[2].regValueLo == 0x2000107
    assert p.control(rm.NVB0CC_CTRL_CMD_EXEC_REG_OPS, rm.NVB0CC_CTRL_EXEC_REG_OPS_PARAMS()) == \
        S.NV_ERR_INVALID_PARAM_STRUCT
    bad = rm.NVB0CC_CTRL_EXEC_REG_OPS_PARAMS(regOpCount=1)
    bad.regOps[0].regOp = 9
    assert p.control(rm.NVB0CC_CTRL_CMD_EXEC_REG_OPS, bad) == S.NV_ERR_INVALID_ARGUMENT
    assert bad.regOps[0].regStatus == rm.NV2080_CTRL_GPU_REG_OP_STATUS_INVALID_OP


def test_hs_credits_per_chiplet_and_a_chiplet_the_gpu_lacks(rig):
    p = Profiled(rig)
    rm = p.rm
    gpcs = rig.m.chip.gpcs
    credits = rm.NVB0CC_CTRL_SET_HS_CREDITS_PARAMS(numEntries=2)
    for entry, (index, count) in zip(credits.creditInfo, ((1, 9), (gpcs, 1)), strict=False):
        entry.chipletType, entry.chipletIndex, entry.numCredits = rm.NVB0CC_CHIPLET_TYPE_GPC, index, count
    assert p.control(rm.NVB0CC_CTRL_CMD_SET_HS_CREDITS, credits) == 0
    assert (credits.statusInfo.status, credits.statusInfo.entryIndex) == \
        (rm.NVB0CC_HS_CREDITS_CMD_STATUS_INVALID_CHIPLET, 1)
    credits.numEntries = 1
    assert p.control(rm.NVB0CC_CTRL_CMD_SET_HS_CREDITS, credits) == 0
    read = rm.NVB0CC_CTRL_GET_HS_CREDITS_PARAMS(numEntries=1)
    read.creditInfo[0].chipletType, read.creditInfo[0].chipletIndex = rm.NVB0CC_CHIPLET_TYPE_GPC, 1
    assert p.control(rm.NVB0CC_CTRL_CMD_GET_HS_CREDITS, read) == 0 and read.creditInfo[0].numCredits == 9


def test_tpc_mask_is_the_gpcs_tpcs_and_none_past_the_last_gpc(rig):
    rm = rig.rm
    _, subdevice = rig.open_device()
    chip = rig.m.chip
    for gpc, mask in ((0, (1 << chip.tpc_per_gpc) - 1), (chip.gpcs, 0)):
        p = rm.NV2080_CTRL_GR_GET_TPC_MASK_PARAMS(gpcId=gpc)
        assert rig.control(subdevice, rm.NV2080_CTRL_CMD_GR_GET_TPC_MASK, p).status == 0 and p.tpcMask == mask
