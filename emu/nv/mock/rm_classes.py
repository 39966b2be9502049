"""What each class of the mock RM keeps and checks when it is made, and releases when it is freed: the
constructors of device.c, subdevice.c, video_mem.c / system_mem.c (stdmemValidateParams), os_desc_mem.c,
virtual_mem.c, vaspace_api.c, kernel_channel_group_api.c, kernel_ctxshare.c, kernel_channel.c,
channel_descendant.c, usermode_api.c and kernel_sm_debugger_session.c, each refusing with the NV_STATUS the source
gives (named at each check). The GPU side (VA spaces, channels) is the mock GPU's (gpu.py)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.nv.mock import profiler
from usergpu.emu.nv.mock.objects import Obj, RMError, channel_tokens
from usergpu.emu.nv.mock.rm_pages import Pages, UserPages
from usergpu.errors import Error
from usergpu.hostmem import PAGE, page_align

MEMORY = ("vidmem", "sysmem", "osdesc")
USERD_SIZE = 512  # one channel's USERD (the Nvc56fControl struct)
ERROR_STATUS = 0xFFFF  # what krcErrorSetNotifier writes as the notifier's status
ATTR_LOCATION_SHIFT, ATTR_LOCATION_MASK = 25, 3  # NVOS32_ATTR_LOCATION 26:25
HEAP_OWNER_RM_SCRATCH = (0xDEAF0000, 0xDEAF00FF)  # HEAP_OWNER_RM_SCRATCH_BEGIN/END: owners a client may not use
MAX_SUBDEVICES = 8  # NV_MAX_SUBDEVICES
USER_READ_ONLY = 22  # NVOS32_ATTR2_PROTECTION_USER 22:22, READ_ONLY = 1


@dataclass
class Memory:
    pages: Pages | UserPages
    index: int  # the GPU whose device made it
    kind: str
    offset: int = 0  # where it is in the GPU's memory (vidmem)
    read_only: bool = False  # NVOS32_ATTR2_PROTECTION_USER_READ_ONLY: the user's mappings may only read it
    dma: list[tuple[Virtual, int]] = field(default_factory=list)  # the MAP_MEMORY_DMA mappings of it

    @property
    def size(self) -> int:
        return self.pages.size


@dataclass
class Device:
    index: int  # the GPU's
    vaspace: object = None  # its own VA space (the mock GPU's), made when an object first needs it


@dataclass
class Virtual:
    """An NV01_MEMORY_VIRTUAL range [lo, hi] of a VA space, and what is mapped in it (va -> memory, length)."""

    vaspace: object
    lo: int
    hi: int
    maps: dict[int, tuple[Obj, int]] = field(default_factory=dict)


@dataclass
class Group:
    vaspace: object  # the mock GPU's VA space its channels see unless a context share says another
    engine: int
    ctxshare: bool | None = None  # whether its channels name context shares (all or none may)


@dataclass
class Debugger:
    """A debugger session: its GPU and the context (channel group) of the object it attached to, whose faults it
    reports (None: an object outside any group, which the RM attaches to nothing)."""

    gpu: int
    group: object

    def tokens(self) -> set[int]:
        return channel_tokens(self.group)


@dataclass
class Channel:
    channel: object  # the mock GPU's
    index: int
    engine: int
    vaspace: object


def _offered(machine, obj: Obj, status: int = S.NV_ERR_INVALID_CLASS) -> None:
    """A class some chip lists (g_gpu_class_list.c) must be in this chip's list (gpuGetClassByClassId)."""
    if obj.cls in machine.chip_specific and obj.cls not in machine.classes:
        raise RMError(status, f"class {obj.cls:#x} is not one the {machine.chip.chip} offers")


def gpu_index(obj: Obj) -> int:
    """The GPU of the device an object is under."""
    return obj.up("device").state.index


def default_vaspace(machine, device: Obj):
    """The device's own VA space (made on first use), which objects that name none get."""
    if device.state.vaspace is None:
        device.state.vaspace = machine.gpu(device.state.index).new_vaspace()
    return device.state.vaspace


def vaspace_of(machine, obj: Obj, handle: int):
    """The VA space a hVASpace names (a FERMI_VASPACE_A of the client), or the device's own for 0."""
    if handle == 0:
        return default_vaspace(machine, obj.up("device"))
    return obj.client.get_kind(handle, ("vaspace",), "hVASpace").state


class Classes:
    """The constructors and destructors of the machine's RM objects, by kind (objects.Server's tables)."""

    def __init__(self, machine):
        self.m = machine
        self.constructors = {"device": self.device, "subdevice": self.subdevice, "vidmem": self.vidmem,
                             "sysmem": self.sysmem, "osdesc": self.osdesc, "virtual": self.virtual,
                             "vaspace": self.vaspace, "group": self.group, "ctxshare": self.ctxshare,
                             "channel": self.channel, "engine": self.engine, "usermode": self.usermode,
                             "debugger": self.debugger, "profiler": self.profiler_device}
        self.destructors = {"vidmem": self.free_memory, "sysmem": self.free_memory, "osdesc": self.free_memory,
                            "virtual": self.free_virtual, "channel": self.free_channel,
                            "profiler": lambda obj: profiler.destruct(self.m, obj)}

    # ---- device and subdevice --------------------------------------------------------------------------------
    def device(self, obj: Obj, p) -> None:
        """deviceConstruct: an instance past the GPUs is NV_ERR_INVALID_CLASS; a second device of one instance in a
        client NV_ERR_INSUFFICIENT_RESOURCES (deviceInit); a GPU none of the process's descriptors has open
        NV_ERR_INSUFFICIENT_PERMISSIONS (osIsGpuAccessible)."""
        index = p.deviceId if p is not None else obj.cls - self.m.rm.NV01_DEVICE_0
        if not 0 <= index < self.m.count:
            raise RMError(S.NV_ERR_INVALID_CLASS, f"device instance {index}: the machine has {self.m.count} GPUs")
        if any(o.kind == "device" and o.state.index == index for o in obj.client.root.children):
            raise RMError(S.NV_ERR_INSUFFICIENT_RESOURCES, f"the client has a device of instance {index}")
        if not self.m.gpu_open(index):
            raise RMError(S.NV_ERR_INSUFFICIENT_PERMISSIONS, f"/dev/nvidia{index} is not open in this process")
        obj.state = Device(index)

    def subdevice(self, obj: Obj, p) -> None:
        """subdeviceConstruct: only subdevice 0 exists (no SLI): others NV_ERR_INVALID_CLASS; a second one
        NV_ERR_INSUFFICIENT_RESOURCES."""
        sub = p.subDeviceId if p is not None else 0
        if sub != 0:
            raise RMError(S.NV_ERR_INVALID_CLASS, f"subdevice {sub}: a GPU of no SLI group has subdevice 0 only")
        if any(o.kind == "subdevice" for o in obj.parent.children):
            raise RMError(S.NV_ERR_INSUFFICIENT_RESOURCES, "the device has its subdevice")
        obj.state = obj.parent.state.index

    # ---- memory ----------------------------------------------------------------------------------------------
    def _validate(self, p, vidmem: bool) -> int:
        """stdmemValidateParams and the location check of vidmem/sysmemConstruct; the size to allocate."""
        if p.internalflags:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, "internalflags are the RM's own")
        if p.owner in (0, 0xFFFFFFFF) or HEAP_OWNER_RM_SCRATCH[0] <= p.owner <= HEAP_OWNER_RM_SCRATCH[1]:
            raise RMError(S.NV_ERR_INVALID_OWNER, f"owner {p.owner:#x}")
        location = p.attr >> ATTR_LOCATION_SHIFT & ATTR_LOCATION_MASK
        if (location == self.m.rm.NVOS32_ATTR_LOCATION_VIDMEM) != vidmem or \
                p.flags & self.m.rm.NVOS32_ALLOC_FLAGS_VIRTUAL:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"ATTR_LOCATION {location} or ALLOC_FLAGS_VIRTUAL for "
                                                     f"{'video' if vidmem else 'system'} memory")
        if p.size == 0:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, "a memory object of 0 bytes")
        return page_align(p.size)

    def _memory(self, obj: Obj, p, kind: str) -> None:
        size, index = self._validate(p, kind == "vidmem"), gpu_index(obj)
        offset = 0
        if kind == "vidmem":
            used, vram = self.m.vram_used[index], self.m.chip.vram
            if used + size > vram:
                raise RMError(S.NV_ERR_NO_MEMORY, f"{size:#x} bytes of video memory: {used:#x} of {vram:#x} are in "
                                                  "use")
            self.m.vram_used[index] += size
            offset = self.m.vram_next[index] if self.m.vram_next[index] + size <= vram else 0
            self.m.vram_next[index] = offset + size
        read_only = bool(p.attr2 >> USER_READ_ONLY & 1)
        obj.state = Memory(Pages(size, f"nv-{kind}-{obj.handle:#x}"), index, kind, offset, read_only)
        p.size, p.limit, p.offset = size, size - 1, offset

    def vidmem(self, obj: Obj, p) -> None:
        self._memory(obj, p, "vidmem")

    def sysmem(self, obj: Obj, p) -> None:
        self._memory(obj, p, "sysmem")

    def osdesc(self, obj: Obj, p) -> None:
        """osdescConstruct of a virtual-address descriptor: the caller's pages, pinned (NV_ERR_INVALID_ADDRESS if
        any is missing, as os_lock_user_pages answers); a descriptor off a page NV_ERR_NOT_SUPPORTED and a limit of
        ~0 NV_ERR_INVALID_LIMIT (RmCreateOsDescriptor)."""
        if p.descriptorType != self.m.rm.NVOS32_DESCRIPTOR_TYPE_VIRTUAL_ADDRESS:
            raise RMError(S.NV_ERR_NOT_SUPPORTED, f"descriptor type {p.descriptorType}: the mock takes user VAs")
        descriptor = p.descriptor or 0  # a NULL c_void_p field reads as None
        if descriptor % PAGE:
            raise RMError(S.NV_ERR_NOT_SUPPORTED, f"descriptor {descriptor:#x} is off a page")
        if p.limit + 1 >= 1 << 64:
            raise RMError(S.NV_ERR_INVALID_LIMIT, f"limit {p.limit:#x}")
        write = not p.attr2 >> USER_READ_ONLY & 1
        try:
            pages = UserPages(descriptor, page_align(p.limit + 1), write)
        except OSError:
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"the {p.limit + 1:#x} bytes at {descriptor:#x} are not "
                                                    "all mapped for the process") from None
        obj.state = Memory(pages, gpu_index(obj), "osdesc", read_only=not write)

    def free_memory(self, obj: Obj) -> None:
        """A freed memory object leaves the VA spaces it was mapped into with MAP_MEMORY_DMA (memDestruct)."""
        for virtual, va in obj.state.dma:
            virtual.maps.pop(va, None)
            virtual.vaspace.unmap(va)
        obj.state.dma.clear()
        if obj.state.kind == "vidmem":
            self.m.vram_used[obj.state.index] -= obj.state.size
        obj.state.pages.close()

    def virtual(self, obj: Obj, p) -> None:
        """virtmemConstruct: a range of a VA space (hVASpace, or the device's own for 0); limit 0 is all of it."""
        vas = vaspace_of(self.m, obj, p.hVASpace)
        hi = p.limit or (1 << self.m.va_bits) - 1
        if p.offset > hi:
            raise RMError(S.NV_ERR_INVALID_LIMIT, f"offset {p.offset:#x} past limit {hi:#x}")
        obj.state = Virtual(vas, p.offset, hi)

    def free_virtual(self, obj: Obj) -> None:
        for va, (mem, _) in obj.state.maps.items():
            mem.state.dma.remove((obj.state, va))
            obj.state.vaspace.unmap(va)
        obj.state.maps.clear()

    def vaspace(self, obj: Obj, p) -> None:
        obj.state = self.m.gpu(gpu_index(obj)).new_vaspace()

    # ---- channels --------------------------------------------------------------------------------------------
    def group(self, obj: Obj, p) -> None:
        """kchangrpapiConstruct: a chip without the class is NV_ERR_NOT_SUPPORTED."""
        _offered(self.m, obj, S.NV_ERR_NOT_SUPPORTED)
        obj.state = Group(vaspace_of(self.m, obj, p.hVASpace), p.engineType)

    def ctxshare(self, obj: Obj, p) -> None:
        obj.state = vaspace_of(self.m, obj, p.hVASpace) if p.hVASpace else obj.parent.state.vaspace

    def channel(self, obj: Obj, p) -> None:
        """kchannelConstruct's checks: a context share and a VA space at once, a context share for a channel
        outside a group, or a VA space for one inside are NV_ERR_INVALID_ARGUMENT; a context share must be one
        (NV_ERR_OBJECT_NOT_FOUND, NV_ERR_INVALID_OBJECT_HANDLE) of the channel's group
        (NV_ERR_INVALID_OBJECT_PARENT); a group's channels all name context shares or none do
        (NV_ERR_INVALID_ARGUMENT). The mock also refuses a class the chip does not offer (NV_ERR_INVALID_CLASS)."""
        _offered(self.m, obj)
        if p.hContextShare and p.hVASpace:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, "both a context share and a VA space")
        group = obj.parent if obj.parent.kind == "group" else None
        if group is None:
            if p.hContextShare:
                raise RMError(S.NV_ERR_INVALID_ARGUMENT, "a channel outside a group has no context share")
            vas, engine = vaspace_of(self.m, obj, p.hVASpace), p.engineType
        else:
            if p.hVASpace:
                raise RMError(S.NV_ERR_INVALID_ARGUMENT, "a channel of a group names a context share, not a VA space")
            named = bool(p.hContextShare)
            if group.state.ctxshare not in (None, named):
                raise RMError(S.NV_ERR_INVALID_ARGUMENT, "a group's channels all name context shares or none does")
            vas, engine = group.state.vaspace, p.engineType or group.state.engine
            if named:
                share = obj.client.get_kind(p.hContextShare, ("ctxshare",), "hContextShare")
                if share.parent is not group:
                    raise RMError(S.NV_ERR_INVALID_OBJECT_PARENT, f"context share {share.handle:#x} is not the "
                                                                  "channel's group's")
                vas = share.state
        if p.gpFifoEntries == 0:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, "a GPFIFO ring of 0 entries")
        userd = self._userd(obj, p)
        notifier = self._memory_of(obj, p.hObjectError, "hObjectError") if p.hObjectError else None
        index = gpu_index(obj)
        gpu = self.m.gpu(index)
        on_error = (lambda code, why: self._notify(gpu, notifier, code, engine)) if notifier is not None else _ignore
        try:
            channel = gpu.new_channel(vas, p.gpFifoOffset, p.gpFifoEntries, userd, on_error, obj.cls)
        except Error as e:  # a GPFIFO class the mock GPU does not model
            raise RMError(S.NV_ERR_NOT_SUPPORTED, str(e)) from None
        if group is not None:
            group.state.ctxshare = bool(p.hContextShare)
        obj.state = Channel(channel, index, engine, vas)

    def _memory_of(self, obj: Obj, handle: int, what: str) -> Memory:
        return obj.client.get_kind(handle, MEMORY, what).state

    def _userd(self, obj: Obj, p) -> np.ndarray:
        """The channel's USERD: USERD_SIZE bytes of hUserdMemory[0] at userdOffset[0] (the RM's own page, which
        the mock does not let a client map, where no memory is given)."""
        if not p.hUserdMemory[0]:
            return np.zeros(USERD_SIZE, np.uint8)
        mem, offset = self._memory_of(obj, p.hUserdMemory[0], "hUserdMemory[0]"), p.userdOffset[0]
        if offset + USERD_SIZE > mem.size:
            raise RMError(S.NV_ERR_INVALID_OFFSET, f"USERD at {offset:#x} of a {mem.size:#x}-byte memory object")
        return mem.pages.array[offset:offset + USERD_SIZE]

    def _notify(self, gpu, notifier: Memory, code: int, engine: int) -> None:
        """krcErrorWriteNotifier: entry NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR of the error notifier gets the
        time (notifyFillNvNotification writes its high word first), the ROBUST_CHANNEL_* code, the engine and
        status 0xFFFF."""
        rm = self.m.rm
        size = ctypes.sizeof(rm.NvNotification)
        at = rm.NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR * size
        if at + size > notifier.size:
            return
        note = rm.NvNotification.from_buffer(notifier.pages.array[at:at + size])
        now = gpu.timestamp()
        note.timeStamp.nanoseconds[0], note.timeStamp.nanoseconds[1] = now >> 32, now & 0xFFFFFFFF
        note.info32, note.info16, note.status = code, engine & 0xFFFF, ERROR_STATUS

    def free_channel(self, obj: Obj) -> None:
        self.m.gpu(obj.state.index).destroy_channel(obj.state.channel)

    def engine(self, obj: Obj, p) -> None:
        """A compute or copy object on a channel (chandesConstruct: a class the chip lacks is
        NV_ERR_INVALID_CLASS)."""
        _offered(self.m, obj)
        try:
            obj.parent.state.channel.bind(obj.cls)
        except Error as e:  # a class the mock GPU does not model
            raise RMError(S.NV_ERR_NOT_SUPPORTED, str(e)) from None

    def usermode(self, obj: Obj, p) -> None:
        """usrmodeConstruct checks no class against the chip (the RM allows HOPPER_USERMODE_A on Ada); a privileged
        BAR1 mapping needs the kernel (NV_ERR_INSUFFICIENT_PERMISSIONS) and a BAR1 one (NV_ERR_INVALID_PARAMETER)."""
        if p is not None and p.bPriv:
            raise RMError(S.NV_ERR_INSUFFICIENT_PERMISSIONS if p.bBar1Mapping else S.NV_ERR_INVALID_PARAMETER,
                          "a privileged usermode mapping")
        obj.state = gpu_index(obj)

    def debugger(self, obj: Obj, p) -> None:
        """ksmdbgssnConstruct: hAppClient (0: the caller's) must be a client; hClass3dObject one of its objects,
        else NV_ERR_INVALID_OBJECT_PARENT."""
        app = obj.client if p.hAppClient in (0, obj.client.handle) else self.m.resman.server.client(p.hAppClient)
        if p.hClass3dObject not in app.objects:
            raise RMError(S.NV_ERR_INVALID_OBJECT_PARENT, f"client {app.handle:#x} has no object "
                                                          f"{p.hClass3dObject:#x}")
        obj.state = Debugger(gpu_index(obj), app.objects[p.hClass3dObject].up("group"))

    def profiler_device(self, obj: Obj, p) -> None:
        obj.state = profiler.construct(self.m, obj, p)


def _ignore(code: int, why: str) -> None:
    """A channel without an error notifier: the RM has nowhere to write."""
