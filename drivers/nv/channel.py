"""GPFIFO channels: a channel group (TSG) holding a compute channel and a copy channel in one VA space, each with
its ring of GP entries, its USERD (where GPPut is written and GPGet read) and its error notifier. A channel the
RM has stopped (a fault tears the whole group down, as robust-channel recovery does) is made anew with its
group."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

from usergpu.autogen import nv_classes
from usergpu.drivers.nv.va import reserve, unreserve

USERD = nv_classes.struct_Nvc56fControl_struct
GP_GET, GP_PUT = USERD.GPGet.offset // 4, USERD.GPPut.offset // 4
USERD_SIZE = 0x200
UVM_CHANNEL_VA = 64 << 20  # address space UVM_REGISTER_CHANNEL may place the channel's own buffers in


@dataclass
class Channel:
    """One GPFIFO channel: put counts the GP entries submitted (the ring index is put % entries)."""

    kind: str  # compute or copy
    handle: int
    token: int  # its work-submit token: written to the doorbell
    ring: memoryview  # entries 64-bit GP entries
    userd: memoryview  # USERD as dwords
    entries: int
    notifier: object  # the error notifier's memory (NvNotification[])
    object: int  # the compute or copy object on it
    put: int = 0

    @property
    def gp_get(self) -> int:
        return self.userd[GP_GET]

    def error(self, rm) -> int | None:
        """The ROBUST_CHANNEL_* code the RM wrote to the error notifier, None while the channel is well."""
        note = rm.NvNotification.from_buffer(self.notifier.view(), ctypes.sizeof(rm.NvNotification) *
                                             rm.NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR)
        return note.info32 if note.status or note.timeStamp.nanoseconds[0] or note.timeStamp.nanoseconds[1] \
            else None


@dataclass
class Channels:
    """A channel group with its compute and copy channels, the memory they live in and the debugger of the
    compute object (whose controls report MMU faults)."""

    group: int
    compute: Channel
    copy: Channel
    debugger: int
    memory: list = field(default_factory=list)
    uvm_ranges: list = field(default_factory=list)

    @classmethod
    def create(cls, nv, entries: int) -> Channels:
        rm, client = nv.rm_module, nv.client
        group = client.alloc(nv.device, rm.KEPLER_CHANNEL_GROUP_A,
                             rm.NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS(engineType=rm.NV2080_ENGINE_TYPE_GRAPHICS))
        made = cls(group, None, None, 0)  # type: ignore[arg-type]
        try:
            ctxshare = client.alloc(group, rm.FERMI_CONTEXT_SHARE_A, rm.NV_CTXSHARE_ALLOCATION_PARAMETERS(
                hVASpace=nv.vaspace, flags=rm.NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC))
            made.compute = made._channel(nv, ctxshare, "compute", entries)
            made.debugger = client.alloc(nv.device, rm.GT200_DEBUGGER, rm.NV83DE_ALLOC_PARAMETERS(
                hAppClient=client.root, hClass3dObject=made.compute.object))
            made.copy = made._channel(nv, ctxshare, "copy", entries)
            client.control(group, rm.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, rm.NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS(bEnable=1))
        except BaseException:
            made.destroy(nv)
            raise
        return made

    def _channel(self, nv, ctxshare: int, kind: str, entries: int) -> Channel:
        rm, client = nv.rm_module, nv.client
        ring_bytes = entries * 8
        area = nv.alloc(ring_bytes + USERD_SIZE, "vram")
        notifier = nv.alloc(4096, "gtt")
        self.memory += [area, notifier]
        params = rm.NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS(
            gpFifoOffset=area.va, gpFifoEntries=entries, hContextShare=ctxshare, hObjectError=notifier.handle,
            hObjectBuffer=area.handle)
        params.hUserdMemory[0], params.userdOffset[0] = area.handle, ring_bytes
        handle = client.alloc(self.group, nv.class_ids["gpfifo"], params)
        obj = client.alloc(handle, nv.class_ids[kind])
        token = client.control(handle, rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN,
                               rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS(
                                   workSubmitToken=0xFFFFFFFF)).workSubmitToken
        base = reserve(nv.hal, UVM_CHANNEL_VA)
        self.uvm_ranges.append((base, handle))
        nv.uvm.call(nv.abi.uvm.UVM_REGISTER_CHANNEL, gpuUuid=nv.uvm_uuid, rmCtrlFd=nv.ctl, hClient=client.root,
                    hChannel=handle, base=base, length=UVM_CHANNEL_VA)
        view = area.view()
        return Channel(kind, handle, token, view[:ring_bytes].cast("Q"),
                       view[ring_bytes:ring_bytes + USERD_SIZE].cast("I"), entries, notifier, obj)

    def destroy(self, nv) -> None:
        """Unregister the channels from UVM and free the group (the RM frees what is under it), then the memory."""
        try:
            for _, handle in self.uvm_ranges:
                nv.uvm.call(nv.abi.uvm.UVM_UNREGISTER_CHANNEL, gpuUuid=nv.uvm_uuid, hClient=nv.client.root,
                            hChannel=handle)
            if self.debugger:
                nv.client.free(self.debugger, nv.device)
            nv.client.free(self.group, nv.device)
        finally:
            for base, _ in self.uvm_ranges:
                unreserve(nv.hal, base, UVM_CHANNEL_VA)
            for mem in self.memory:
                nv.free(mem)
            self.uvm_ranges, self.memory = [], []
