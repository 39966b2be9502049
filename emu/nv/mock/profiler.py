"""The RM's profiler of a GPU, MAXWELL_PROFILER_DEVICE (b2cc, made under a subdevice; its controls are
MAXWELL_PROFILER's, b0cc), as profiler_v2 (kern_profiler_v2.c, kern_profiler_v2_ctrl.c) and the SDK's ctrlb0cc*.h
describe it: power features held, PM areas reserved, PMA streams (a record buffer and the word the PMA writes its
byte count to) and the reservations bound to the PMA. The samples the bound PC sampler streams are pc_sampler.py's.

What the RM source shows is followed with its status codes: one profiler per subdevice (NV_ERR_STATE_IN_USE), a
non-administrator refused while NVreg_RestrictProfilingToAdminUsers is 1, the default
(NV_ERR_INSUFFICIENT_PERMISSIONS), ALLOC_PMA_STREAM's checks of its memory (NV_ERR_INVALID_ARGUMENT; the memory
objects become the profiler's owners: freeing one frees it), UPDATE_GET_PUT's channel index, EXEC_REG_OPS' count.
GSP's side is not in the open source; where it decides, the mock refuses as its nearest visible sibling does and
says so: a context target that is not a channel or channel group of the client named (NV_ERR_INVALID_OBJECT_HANDLE,
as the debugger's), a reservation or stream change while bound and an operation on a stream not allocated
(NV_ERR_INVALID_STATE). Register operations keep the values written (the PM registers read back what was written)
and start no counter."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.nv.mock.objects import Obj, RMError, channel_tokens

MAX_PMA_CHANNELS = {"GH100": 9}  # khwpmGetCblockInfo_GH100: 9 streaming channels; GM107's (every other chip): 1
PERF_VA_BASE, PERF_VA_BLOCK = 1 << 32, 1 << 32  # PERF_VASPACE_BASE; each PMA stream's 4 GiB-aligned block of it
REG_WRITES = {1: 4, 3: 8, 5: 1}  # NV2080_CTRL_GPU_REG_OP_WRITE_32/_64/_08: bytes written
REG_READS = {0: 4, 2: 8, 4: 1}
FEATURES = 6  # the 2-bit fields of a power feature mask: ELCG, BLCG, SLCG, ELPG, IDLE_SLOWDOWN, VAT


def restricted() -> bool:
    """NVreg_RestrictProfilingToAdminUsers (default 1): only an administrator (CAP_SYS_ADMIN: root here) profiles."""
    return os.environ.get("NVreg_RestrictProfilingToAdminUsers", "1") != "0" and os.geteuid() != 0


@dataclass
class Stream:
    """A PMA stream: records go to buffer[offset:offset + size] as a ring, the count of unread ones to the word at
    available[word]."""

    buffer: Obj
    offset: int
    size: int
    available: Obj
    word: int
    put: int = 0  # bytes the PMA has written, all told
    get: int = 0  # bytes software has consumed, all told
    overflow: bool = False

    def write(self, data: bytes) -> None:
        """The PMA's records: past the free space the buffer overflows and the rest are dropped."""
        room = self.size - (self.put - self.get)
        if len(data) > room:
            self.overflow, data = True, data[:room]
        ring, start = self.buffer.state.pages.array, self.put % self.size
        first = min(len(data), self.size - start)  # up to the ring's end, the rest from its start
        ring[self.offset + start:self.offset + start + first] = memoryview(data[:first])
        ring[self.offset:self.offset + len(data) - first] = memoryview(data[first:])
        self.put += len(data)

    def report(self, value: int) -> None:
        """The word the PMA streams its byte count to (a membytes streamout)."""
        self.available.state.pages.array[self.word:self.word + 4] = memoryview(value.to_bytes(4, "little"))

    def reported(self) -> int:
        return int.from_bytes(bytes(self.available.state.pages.array[self.word:self.word + 4]), "little")


@dataclass
class Profiler:
    gpu: int
    context: Obj | None  # the channel or channel group the context-level work is of (None: device level only)
    channels: int  # the PMA channels (maxPmaChannels)
    features: int = 0  # the power features requested (the request's mask, release fields cleared)
    hwpm: bool = False
    pc_sampler: bool = False
    bound: bool = False
    streams: dict[int, Stream] = field(default_factory=dict)
    credits: dict[tuple[int, int], int] = field(default_factory=dict)  # (chiplet type, index) -> HS credits
    registers: dict[int, int] = field(default_factory=dict)  # PM register offset -> the value written

    def sampling(self, token: int) -> Stream | None:
        """The stream the PC sampler writes a launch of the channel with this token to, if it samples it."""
        if not (self.bound and self.pc_sampler and self.streams) or token not in channel_tokens(self.context):
            return None
        return self.streams[min(self.streams)]


def construct(machine, obj: Obj, p) -> Profiler:
    """profilerDevConstruct: one per subdevice, an administrator's unless profiling is open to all; the context
    target (GSP checks it) a channel or channel group of the client named."""
    sub = obj.parent
    if any(c.kind == "profiler" for c in sub.children):
        raise RMError(S.NV_ERR_STATE_IN_USE, f"subdevice {sub.handle:#x} has a profiler")
    if restricted():
        raise RMError(S.NV_ERR_INSUFFICIENT_PERMISSIONS, "profiling is restricted to administrators "
                                                          "(NVreg_RestrictProfilingToAdminUsers=1)")
    context = None
    if p.hClientTarget:
        target = machine.resman.server.client(p.hClientTarget)
        context = target.objects.get(p.hContextTarget)
        if context is None or context.kind not in ("channel", "group"):
            raise RMError(S.NV_ERR_INVALID_OBJECT_HANDLE, f"client {p.hClientTarget:#x} has no channel or channel "
                                                          f"group {p.hContextTarget:#x}")
    index = sub.up("device").state.index
    profiler = Profiler(index, context, MAX_PMA_CHANNELS.get(machine.chip.chip, 1))
    machine.gpu(index).profilers.append(profiler)
    return profiler


def destruct(machine, obj: Obj) -> None:
    """Freeing the profiler releases all it holds (GSP's teardown) and its memory objects no longer own it."""
    machine.gpu(obj.state.gpu).profilers.remove(obj.state)
    for stream in obj.state.streams.values():
        for memory in (stream.buffer, stream.available):
            memory.dependants.remove(obj)


class Controls:
    """The b0cc controls: command -> handler(obj, params, lists), as controls.Controls calls them."""

    def __init__(self, machine):
        self.m, rm = machine, machine.rm
        self.handlers = {
            rm.NVB0CC_CTRL_CMD_POWER_REQUEST_FEATURES: self.request_features,
            rm.NVB0CC_CTRL_CMD_POWER_RELEASE_FEATURES: self.release_features,
            rm.NVB0CC_CTRL_CMD_RESERVE_HWPM_LEGACY: self.reserve("hwpm", True),
            rm.NVB0CC_CTRL_CMD_RELEASE_HWPM_LEGACY: self.reserve("hwpm", False),
            rm.NVB0CC_CTRL_CMD_RESERVE_PM_AREA_PC_SAMPLER: self.reserve("pc_sampler", True),
            rm.NVB0CC_CTRL_CMD_RELEASE_PM_AREA_PC_SAMPLER: self.reserve("pc_sampler", False),
            rm.NVB0CC_CTRL_CMD_ALLOC_PMA_STREAM: self.alloc_stream,
            rm.NVB0CC_CTRL_CMD_FREE_PMA_STREAM: self.free_stream,
            rm.NVB0CC_CTRL_CMD_BIND_PM_RESOURCES: self.bind,
            rm.NVB0CC_CTRL_CMD_UNBIND_PM_RESOURCES: self.unbind,
            rm.NVB0CC_CTRL_CMD_SET_HS_CREDITS: self.set_credits,
            rm.NVB0CC_CTRL_CMD_GET_HS_CREDITS: self.get_credits,
            rm.NVB0CC_CTRL_CMD_EXEC_REG_OPS: self.reg_ops,
            rm.NVB0CC_CTRL_CMD_PMA_STREAM_UPDATE_GET_PUT: self.update_get_put,
        }

    # ---- power features and reservations ---------------------------------------------------------------------
    def request_features(self, obj: Obj, p, lists) -> None:
        """Each feature's field IGNORE, DISABLE or ENABLE (RELEASE is POWER_RELEASE_FEATURES', else
        NV_ERR_INVALID_ARGUMENT); the mock's board fulfils every request."""
        fields = [p.controlMask >> 2 * i & 3 for i in range(FEATURES)]
        if 3 in fields or p.controlMask >> 2 * FEATURES:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"power feature request mask {p.controlMask:#x}")
        obj.state.features |= p.controlMask
        p.globalStatus, p.statusMask = S.NV_OK, 0  # every field NVB0CC_CTRL_POWER_FEATURE_MASK_*_REQUEST_FULFILLED

    def release_features(self, obj: Obj, p, lists) -> None:
        """A RELEASE field gives the feature up; features not requested are ignored."""
        for i in range(FEATURES):
            if p.controlMask >> 2 * i & 3 == 3:
                obj.state.features &= ~(3 << 2 * i)

    def reserve(self, area: str, taken: bool):
        def handler(obj: Obj, p, lists) -> None:
            prof = obj.state
            if prof.bound:
                raise RMError(S.NV_ERR_INVALID_STATE, "the profiler's resources are bound: unbind them first")
            if area == "pc_sampler" and taken and prof.context is None:
                raise RMError(S.NV_ERR_INVALID_STATE, "the PC sampler is reserved for a context: the profiler was "
                                                      "made with none (hClientTarget 0)")
            setattr(prof, area, taken)
        return handler

    # ---- PMA streams ---------------------------------------------------------------------------------------------
    def alloc_stream(self, obj: Obj, p, lists) -> None:
        """The record buffer and the bytes-available word (user read-only, NVB0CC_PMA_BYTES_AVAILABLE_SIZE of
        room), both memory objects of the client; the first free channel."""
        rm, prof = self.m.rm, obj.state
        if prof.bound:
            raise RMError(S.NV_ERR_INVALID_STATE, "the profiler's resources are bound: unbind them first")
        buffer, available = (_memory(obj, h) for h in (p.hMemPmaBuffer, p.hMemPmaBytesAvailable))
        if p.pmaBufferSize > rm.NVB0CC_PMA_BUFFER_SIZE_MAX or p.pmaBufferSize == 0:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"a PMA buffer of {p.pmaBufferSize:#x} bytes (at most "
                                                     f"{rm.NVB0CC_PMA_BUFFER_SIZE_MAX:#x})")
        if buffer.state.size < p.pmaBufferOffset + p.pmaBufferSize:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"the PMA buffer's memory has {buffer.state.size:#x} bytes, "
                                                     f"{p.pmaBufferOffset:#x} + {p.pmaBufferSize:#x} asked")
        if available.state.size < p.pmaBytesAvailableOffset + rm.NVB0CC_PMA_BYTES_AVAILABLE_SIZE:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"the bytes-available memory has {available.state.size:#x} "
                                                     f"bytes, {p.pmaBytesAvailableOffset:#x} + "
                                                     f"{rm.NVB0CC_PMA_BYTES_AVAILABLE_SIZE:#x} needed")
        if not available.state.read_only:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, "the bytes-available memory must be user read-only "
                                                     "(NVOS32_ATTR2_PROTECTION_USER_READ_ONLY)")
        free = [i for i in range(prof.channels) if i not in prof.streams]
        if not free:
            raise RMError(S.NV_ERR_INSUFFICIENT_RESOURCES, f"all {prof.channels} PMA channels have streams")
        prof.streams[free[0]] = Stream(buffer, p.pmaBufferOffset, p.pmaBufferSize, available,
                                       p.pmaBytesAvailableOffset)
        for memory in (buffer, available):
            memory.dependants.append(obj)
        p.pmaChannelIdx, p.pmaBufferVA = free[0], PERF_VA_BASE + free[0] * PERF_VA_BLOCK

    def free_stream(self, obj: Obj, p, lists) -> None:
        stream = self._stream(obj, p.pmaChannelIdx)
        if obj.state.bound:
            raise RMError(S.NV_ERR_INVALID_STATE, "the profiler's resources are bound: unbind them first")
        del obj.state.streams[p.pmaChannelIdx]
        for memory in (stream.buffer, stream.available):
            memory.dependants.remove(obj)

    def bind(self, obj: Obj, p, lists) -> None:
        obj.state.bound = True

    def unbind(self, obj: Obj, p, lists) -> None:
        obj.state.bound = False

    def update_get_put(self, obj: Obj, p, lists) -> None:
        """bytesConsumed moves GET on; bUpdateAvailableBytes has the PMA stream its count of unread bytes to the
        word (the RM sets it to NVB0CC_AVAILABLE_BYTES_DEFAULT_VALUE first; the mock's PMA is idle, so it is
        written at once) and with bWait returns it in bytesAvailable; bReturnPut returns PUT's buffer offset."""
        stream = self._stream(obj, p.pmaChannelIdx)
        if p.bytesConsumed > stream.put - stream.get:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"{p.bytesConsumed} bytes consumed, "
                                                     f"{stream.put - stream.get} were available")
        stream.get += p.bytesConsumed
        if p.bUpdateAvailableBytes:
            stream.report(self.m.rm.NVB0CC_AVAILABLE_BYTES_DEFAULT_VALUE)
            stream.report(stream.put - stream.get)
            if p.bWait:
                p.bytesAvailable = stream.reported()
        if p.bReturnPut:
            p.putPtr = stream.put % stream.size
        p.bOverflowStatus = stream.overflow

    def _stream(self, obj: Obj, index: int) -> Stream:
        prof = obj.state
        if index >= prof.channels:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"PMA channel {index}: the GPU has {prof.channels}")
        if index not in prof.streams:
            raise RMError(S.NV_ERR_INVALID_STATE, f"PMA channel {index} has no stream")
        return prof.streams[index]

    # ---- HS credits and registers ----------------------------------------------------------------------------
    def set_credits(self, obj: Obj, p, lists) -> None:
        """Credits reset, then each entry's; a chiplet the GPU lacks fails the entry (statusInfo), all reset."""
        rm, chip = self.m.rm, self.m.chip
        if p.numEntries > rm.NVB0CC_MAX_CREDIT_INFO_ENTRIES:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"{p.numEntries} HS credit entries, at most "
                                                     f"{rm.NVB0CC_MAX_CREDIT_INFO_ENTRIES}")
        chiplets = {rm.NVB0CC_CHIPLET_TYPE_GPC: chip.gpcs, rm.NVB0CC_CHIPLET_TYPE_SYS: 1}
        credits = obj.state.credits
        credits.clear()
        p.statusInfo.status, p.statusInfo.entryIndex = rm.NVB0CC_HS_CREDITS_CMD_STATUS_OK, 0
        for i in range(p.numEntries):
            e = p.creditInfo[i]
            if e.chipletIndex >= chiplets.get(e.chipletType, 0):
                credits.clear()
                p.statusInfo.status = rm.NVB0CC_HS_CREDITS_CMD_STATUS_INVALID_CHIPLET
                p.statusInfo.entryIndex = i
                return
            credits[e.chipletType, e.chipletIndex] = e.numCredits

    def get_credits(self, obj: Obj, p, lists) -> None:
        for i in range(min(p.numEntries, self.m.rm.NVB0CC_MAX_CREDIT_INFO_ENTRIES)):
            e = p.creditInfo[i]
            e.numCredits = obj.state.credits.get((e.chipletType, e.chipletIndex), 0)

    def reg_ops(self, obj: Obj, p, lists) -> None:
        """1..NVB0CC_REGOPS_MAX_COUNT operations; a write keeps (reg & ~AndNMask) | value, a read returns it; an
        unknown operation fails with INVALID_OP (ALL_OR_NONE: none is done)."""
        rm = self.m.rm
        if not 0 < p.regOpCount <= rm.NVB0CC_REGOPS_MAX_COUNT:
            raise RMError(S.NV_ERR_INVALID_PARAM_STRUCT, f"{p.regOpCount} register operations, 1 to "
                                                         f"{rm.NVB0CC_REGOPS_MAX_COUNT}")
        ops = p.regOps[:p.regOpCount]
        bad = [op for op in ops if op.regOp not in REG_WRITES and op.regOp not in REG_READS]
        for op in ops:
            op.regStatus = rm.NV2080_CTRL_GPU_REG_OP_STATUS_INVALID_OP if op in bad else 0
        p.bPassed, p.bDirect = not bad, False
        if bad and p.mode == rm.NVB0CC_REGOPS_MODE_ALL_OR_NONE:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"register operation {bad[0].regOp} is none the RM knows")
        regs = obj.state.registers
        for op in ops:
            if op.regOp in REG_WRITES:
                mask = op.regAndNMaskHi << 32 | op.regAndNMaskLo
                value = op.regValueHi << 32 | op.regValueLo
                width = (1 << 8 * REG_WRITES[op.regOp]) - 1
                regs[op.regOffset] = (regs.get(op.regOffset, 0) & ~mask | value) & width
            elif op.regOp in REG_READS:
                value = regs.get(op.regOffset, 0) & (1 << 8 * REG_READS[op.regOp]) - 1
                op.regValueLo, op.regValueHi = value & 0xFFFFFFFF, value >> 32



def _memory(obj: Obj, handle: int) -> Obj:
    """A memory object of the profiler's client (serverutilGetResourceRef, then the Memory check)."""
    target = obj.client.objects.get(handle)
    if target is None:
        raise RMError(S.NV_ERR_OBJECT_NOT_FOUND, f"the client has no object {handle:#x}")
    if target.kind not in ("vidmem", "sysmem", "osdesc"):
        raise RMError(S.NV_ERR_INVALID_OBJECT, f"object {handle:#x} is a {target.kind}, not memory")
    return target

