"""The RM escapes of nvidia.ko (RmIoctl, arch/nvalloc/unix/src/escape.c), on the mock's object tree.

Each escape is an entry of ESCAPES: its struct (from the release's bindings), the device files it is allowed on
(NV_CTL_DEVICE_ONLY / NV_ACTUAL_DEVICE_ONLY), where it reports its NV_STATUS and its handler. As in RmIoctl, an escape
whose size is not its struct's, made on the wrong kind of file, or unknown, fails the whole ioctl (nvidia_ioctl
answers EINVAL, the struct comes back as it was); otherwise the ioctl succeeds and the RM's answer, NV_OK or not, is
in the struct's status field. The CPU mapping of memory (MAP_MEMORY) leaves a mapping context on the descriptor
the caller names (rm_create_mmap_context, nv_add_mapping_context_to_file); that descriptor's mmap then maps the
pages (devfiles.py)."""

from __future__ import annotations

import ctypes
import errno
from dataclasses import dataclass

from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.memory import MappingError
from usergpu.emu.mock.uaccess import copy_to_user, pin_user_pages
from usergpu.emu.nv.mock.controls import Controls
from usergpu.emu.nv.mock.objects import ROOT_CLASSES, Obj, RMError, Server, class_id
from usergpu.emu.nv.mock.rm_classes import MEMORY, Classes
from usergpu.hostmem import PAGE

BIG_PAGE = 1 << 16  # where MAP_MEMORY_DMA places a mapping the caller lets it place: the 64 KiB big-page alignment
USERMODE_SIZE = 0x10000  # the usermode region a usermode object maps (NV_USERMODE, dev_usermode.h)
USERMODE_BASE = 0x810000  # its offset in BAR0 (NV_USERMODE_TIME_0 is 0x810080)
CACHING_TYPE = 0x7 << 23  # NVOS33_FLAGS_CACHING_TYPE 25:23, which MAP_MEMORY resets to DEFAULT (0)
OS33_PERSISTENT, OS33_ACCESS = 4, 0x3  # NVOS33_FLAGS_PERSISTENT 4:4, NVOS33_FLAGS_ACCESS 1:0
OS46_OFFSET_FIXED = 1 << 15  # NVOS46_FLAGS_DMA_OFFSET_FIXED 15:15
EVENT_CLASSES = ("NV01_EVENT", "NV01_EVENT_OS_EVENT", "NV01_EVENT_KERNEL_CALLBACK", "NV01_EVENT_KERNEL_CALLBACK_EX")


@dataclass(frozen=True)
class Escape:
    """structs: the sizes it accepts (the first is the one a handler gets unless the size picks another);
    where: ctl (/dev/nvidiactl only), dev (/dev/nvidiaN only), any, or alloc (RM_ALLOC's own rule); status: the
    field that gets the NV_STATUS (dotted), None where a refusal fails the ioctl."""

    structs: tuple[str, ...]
    where: str
    status: str | None
    handler: str


ESCAPES = {
    "NV_ESC_RM_ALLOC": Escape(("NVOS21_PARAMETERS", "NVOS64_PARAMETERS"), "alloc", "status", "alloc"),
    "NV_ESC_RM_FREE": Escape(("NVOS00_PARAMETERS",), "ctl", "status", "free"),
    "NV_ESC_RM_CONTROL": Escape(("NVOS54_PARAMETERS",), "ctl", "status", "control"),
    "NV_ESC_RM_ALLOC_MEMORY": Escape(("nv_ioctl_nvos02_parameters_with_fd",), "dev", "params.status",
                                     "alloc_memory"),
    "NV_ESC_RM_MAP_MEMORY": Escape(("nv_ioctl_nvos33_parameters_with_fd",), "ctl", "params.status", "map_memory"),
    "NV_ESC_RM_UNMAP_MEMORY": Escape(("NVOS34_PARAMETERS",), "ctl", "status", "unmap_memory"),
    "NV_ESC_RM_MAP_MEMORY_DMA": Escape(("NVOS46_PARAMETERS",), "ctl", "status", "map_dma"),
    "NV_ESC_RM_UNMAP_MEMORY_DMA": Escape(("NVOS47_PARAMETERS",), "ctl", "status", "unmap_dma"),
    "NV_ESC_ALLOC_OS_EVENT": Escape(("nv_ioctl_alloc_os_event_t",), "any", "Status", "alloc_os_event"),
    "NV_ESC_FREE_OS_EVENT": Escape(("nv_ioctl_free_os_event_t",), "any", "Status", "free_os_event"),
    "NV_ESC_REGISTER_FD": Escape(("nv_ioctl_register_fd_t",), "any", None, "register_fd"),
}


def fail(why: str) -> OSError:
    """An escape RmIoctl refuses as a whole (its rmStatus is not NV_OK): nvidia_ioctl's EINVAL."""
    return OSError(errno.EINVAL, f"nvidia ioctl: {why}")


@dataclass
class MapContext:
    """A descriptor's mmap context (nv_alloc_mapping_context_t): the memory, the part of it, and how."""

    memory: Obj
    offset: int
    length: int
    kind: str  # sysmem (a /dev/nvidiactl mapping of system memory), bar (video memory), usermode (its registers)


def _field(struct, path: str):
    """(owner, name) of a dotted field."""
    *outer, name = path.split(".")
    for part in outer:
        struct = getattr(struct, part)
    return struct, name


class RM:
    """The machine's resource manager: its object tree (objects.Server) and the escapes and controls on it."""

    def __init__(self, machine):
        self.m, rm = machine, machine.rm
        self.classes = Classes(machine)
        self.server = Server(rm, self.classes.constructors, self.classes.destructors)
        self.controls = Controls(machine)
        self.escapes = {getattr(rm if hasattr(rm, n) else machine.uvm, n): e for n, e in ESCAPES.items()}
        self.events: set[tuple[int, int]] = set()  # (hClient, fd) of the OS events allocated
        self.cpu_maps: dict[tuple[int, int, int], int] = {}  # (client, memory, linear address) -> length
        self.root_classes = {class_id(rm, n) for n in ROOT_CLASSES}
        self.event_classes = {getattr(rm, n) for n in EVENT_CLASSES if hasattr(rm, n)}

    def struct(self, name: str) -> type:
        return getattr(self.m.rm if hasattr(self.m.rm, name) else self.m.uvm, name)

    # ---- the escape entry --------------------------------------------------------------------------------------
    def ioctl(self, file, nr: int, data: bytearray) -> None:
        """RmIoctl on the caller's struct (copied in: data); OSError(EINVAL) where its rmStatus is not NV_OK."""
        esc = self.escapes.get(nr)
        if esc is None:
            raise fail(f"escape {nr:#x} is not one the mock RM models")
        sizes = {ctypes.sizeof(self.struct(s)): self.struct(s) for s in esc.structs}
        if esc.where == "alloc" and len(data) in sizes:
            self._alloc_device_rule(file, sizes[len(data)].from_buffer(data).hClass)
        elif esc.where in ("ctl", "dev") and file.ctl != (esc.where == "ctl"):
            raise fail(f"escape {nr:#x} is for {'/dev/nvidiactl' if esc.where == 'ctl' else '/dev/nvidiaN'}")
        if len(data) not in sizes:
            raise fail(f"escape {nr:#x} of {len(data)} bytes: its struct has {', '.join(map(str, sizes))}")
        args = sizes[len(data)].from_buffer(data)
        try:
            getattr(self, esc.handler)(file, args)
        except RMError as e:
            if esc.status is None:
                raise fail(str(e)) from None
            owner, name = _field(args, esc.status)
            setattr(owner, name, e.status)
            self.m.log(f"{esc.handler}: {e}")
        else:
            if esc.status is not None:
                owner, name = _field(args, esc.status)
                setattr(owner, name, S.NV_OK)

    def _alloc_device_rule(self, file, cls: int) -> None:
        """RM_ALLOC is on /dev/nvidiactl, but for the event classes, which any descriptor may make."""
        if cls not in self.event_classes and not file.ctl:
            raise fail(f"NV_ESC_RM_ALLOC of class {cls:#x} is for /dev/nvidiactl")

    # ---- objects -----------------------------------------------------------------------------------------------
    def alloc(self, file, a) -> None:
        """Nv04Alloc: a client's class is made NV01_ROOT_CLIENT (as the escape forces); the parameters are copied
        back when the object is made."""
        if a.hClass in self.root_classes:
            a.hClass = class_id(self.m.rm, "NV01_ROOT_CLIENT")
        _, desc = self.server.describe(a.hClass)
        params = self.server.params(desc, a.pAllocParms)
        a.hObjectNew = self.server.alloc(a.hRoot, a.hObjectParent, a.hObjectNew, a.hClass, params, file.owner)
        if params is not None:
            try:
                copy_to_user(a.pAllocParms, bytes(params), "RM_ALLOC params")
            except OSError:
                raise RMError(S.NV_ERR_INVALID_ADDRESS, f"the parameters at {a.pAllocParms:#x} cannot be "
                                                        "written") from None

    def free(self, file, a) -> None:
        self.server.free(a.hRoot, a.hObjectOld)
        if a.hObjectOld == a.hRoot:  # rm_client_free_os_events
            self.events = {e for e in self.events if e[0] != a.hRoot}

    def control(self, file, a) -> None:
        self.controls.call(self.server, a)

    def alloc_os_event(self, file, a) -> None:
        """allocate_os_event: one event per (client, fd); a second is NV_ERR_INSUFFICIENT_RESOURCES."""
        key = (a.hClient, a.fd)
        if key in self.events:
            raise RMError(S.NV_ERR_INSUFFICIENT_RESOURCES, f"client {a.hClient:#x} has an OS event on fd {a.fd}")
        self.events.add(key)

    def free_os_event(self, file, a) -> None:
        key = (a.hClient, a.fd)
        if key not in self.events:
            raise RMError(S.NV_ERR_INVALID_EVENT, f"client {a.hClient:#x} has no OS event on fd {a.fd}")
        self.events.discard(key)

    def register_fd(self, file, a) -> None:
        """NV_ESC_REGISTER_FD: a descriptor registered already is NV_ERR_INVALID_STATE; ctl_fd must be another
        /dev/nvidiactl descriptor of the machine that is itself unregistered, else NV_ERR_INVALID_ARGUMENT."""
        if file.ctl_file is not None:
            raise RMError(S.NV_ERR_INVALID_STATE, "the descriptor has a control descriptor registered")
        ctl = self.m.file(a.ctl_fd)
        if ctl is None or not ctl.ctl or ctl is file or ctl.ctl_file is not None:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"ctl_fd {a.ctl_fd} is no other open /dev/nvidiactl")
        file.ctl_file = ctl

    # ---- memory ------------------------------------------------------------------------------------------------
    def alloc_memory(self, file, a) -> None:
        """NV_ESC_RM_ALLOC_MEMORY of NV01_MEMORY_SYSTEM_OS_DESCRIPTOR (RmAllocOsDescriptor): the flags must say PCI,
        NO_MAP and a cached, write-back or uncached coherency (NV_ERR_INVALID_FLAGS); the pages are looked at
        before the object is made. The deprecated path of the other classes is not modelled."""
        rm, p = self.m.rm, a.params
        if p.hClass != rm.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR:
            raise RMError(S.NV_ERR_INVALID_CLASS, f"the mock's ALLOC_MEMORY makes OS descriptors, not class "
                                                  f"{p.hClass:#x}")
        location, coherency, mapping = p.flags >> 8 & 0xF, p.flags >> 12 & 0xF, p.flags >> 30 & 0x3
        if location != rm.NVOS02_FLAGS_LOCATION_PCI or mapping != rm.NVOS02_FLAGS_MAPPING_NO_MAP or coherency not in (
                rm.NVOS02_FLAGS_COHERENCY_CACHED, rm.NVOS02_FLAGS_COHERENCY_WRITE_BACK,
                rm.NVOS02_FLAGS_COHERENCY_UNCACHED):
            raise RMError(S.NV_ERR_INVALID_FLAGS, f"flags {p.flags:#x}")
        pointer = p.pMemory or 0
        if pointer % PAGE:
            raise RMError(S.NV_ERR_NOT_SUPPORTED, f"pMemory {p.pMemory:#x} is off a page")
        if p.limit + 1 >= 1 << 64:
            raise RMError(S.NV_ERR_INVALID_LIMIT, f"limit {p.limit:#x}")
        read_only = p.flags >> 21 & 1  # NVOS02_FLAGS_ALLOC_USER_READ_ONLY
        try:
            pin_user_pages(pointer, p.limit + 1, not read_only, "ALLOC_MEMORY")
        except OSError:
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"the {p.limit + 1:#x} bytes at {p.pMemory:#x} are not all "
                                                    "mapped for the process") from None
        desc = rm.NV_OS_DESC_MEMORY_ALLOCATION_PARAMS(
            descriptor=pointer, limit=p.limit, descriptorType=rm.NVOS32_DESCRIPTOR_TYPE_VIRTUAL_ADDRESS,
            attr2=read_only << 22, flags=rm.NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED)
        p.hObjectNew = self.server.alloc(p.hRoot, p.hObjectParent, p.hObjectNew, p.hClass, desc, file.owner)

    def _mappable(self, client, handle: int, h_device: int, flags: int) -> Obj:
        """serverMap and serverMap_Prologue: the memory object, and the device or subdevice it is mapped through
        (another kind of object: NV_ERR_INVALID_OBJECT_PARENT)."""
        mem = client.get(handle)
        if flags >> OS33_PERSISTENT & 1:
            raise RMError(S.NV_ERR_INVALID_FLAGS, "persistent mappings are no longer supported")
        if h_device == client.handle:  # a client's own mapping: of an object made under the client
            if mem.parent is not client.root:
                raise RMError(S.NV_ERR_INVALID_OBJECT_PARENT, f"{handle:#x} is not the client's own object")
        else:
            ctx = client.get(h_device)
            if ctx.kind not in ("device", "subdevice") or mem.parent is client.root:
                raise RMError(S.NV_ERR_INVALID_OBJECT_PARENT, f"{h_device:#x} is a {ctx.kind}, not a device")
        if flags & OS33_ACCESS == OS33_ACCESS:
            raise RMError(S.NV_ERR_INVALID_FLAGS, f"access {flags & OS33_ACCESS}")
        if mem.kind not in (*MEMORY, "usermode"):
            raise RMError(S.NV_ERR_NOT_SUPPORTED, f"a {mem.kind} is not memory the CPU maps")
        return mem

    def map_memory(self, file, a) -> None:
        """Nv04MapMemory then rm_create_mmap_context: offset past the memory NV_ERR_INVALID_BASE, length 0 or past
        its end NV_ERR_INVALID_LIMIT (memMap); the context goes on the descriptor `fd`: a /dev/nvidiaN of the
        memory's GPU for video memory and usermode registers (BAR mappings), a /dev/nvidiactl for system memory,
        else NV_ERR_INVALID_ARGUMENT; one that has a context already is NV_ERR_STATE_IN_USE."""
        p = a.params
        p.flags &= ~CACHING_TYPE
        client = self.server.client(p.hClient)
        mem = self._mappable(client, p.hMemory, p.hDevice, p.flags)
        size = USERMODE_SIZE if mem.kind == "usermode" else mem.state.size
        if p.offset >= size:
            raise RMError(S.NV_ERR_INVALID_BASE, f"offset {p.offset:#x} of a {size:#x}-byte object")
        if p.length == 0 or p.offset + p.length > size:
            raise RMError(S.NV_ERR_INVALID_LIMIT, f"{p.length:#x} bytes at {p.offset:#x} of {size:#x}")
        if mem.kind == "osdesc":
            raise RMError(S.NV_ERR_NOT_SUPPORTED, "the mock maps no OS descriptor (it is the caller's memory)")
        kind = {"vidmem": "bar", "usermode": "usermode"}.get(mem.kind, "sysmem")
        target = self.m.file(a.fd)
        index = mem.state if mem.kind == "usermode" else mem.state.index
        if target is None or target.ctl != (kind == "sysmem") or not target.ctl and target.index != index:
            want = "/dev/nvidiactl" if kind == "sysmem" else f"/dev/nvidia{index}"
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"fd {a.fd} is not a {want} descriptor")
        if target.context is not None:
            raise RMError(S.NV_ERR_STATE_IN_USE, f"fd {a.fd} has a mapping context already")
        start, end = p.offset // PAGE * PAGE, -(-(p.offset + p.length) // PAGE) * PAGE
        target.context = MapContext(mem, start, end - start, kind)
        card = self.m.card(index)
        p.pLinearAddress = (card["reg_address"] + USERMODE_BASE if kind == "usermode" else
                            card["fb_address"] + mem.state.offset + p.offset if kind == "bar" else
                            mem.state.pages.array.ctypes.data + p.offset)
        self.cpu_maps[(client.handle, mem.handle, p.pLinearAddress)] = p.length

    def unmap_memory(self, file, a) -> None:
        """Nv04UnmapMemory: the mapping pLinearAddress names must be one of the memory (NV_ERR_INVALID_ARGUMENT)."""
        client = self.server.client(a.hClient)
        client.get(a.hMemory)
        if self.cpu_maps.pop((client.handle, a.hMemory, a.pLinearAddress or 0), None) is None:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"memory {a.hMemory:#x} has no CPU mapping at "
                                                     f"{a.pLinearAddress or 0:#x}")

    def _dma_objects(self, a) -> tuple[Obj, Obj]:
        """The virtual memory (hDma: NV_ERR_INVALID_OBJECT if of another class) and the memory (hMemory:
        NV_ERR_INVALID_OBJECT_HANDLE if not memory) of a DMA mapping."""
        client = self.server.client(a.hClient)
        device = client.get(a.hDevice)
        if device.kind not in ("device", "subdevice"):
            raise RMError(S.NV_ERR_INVALID_OBJECT_PARENT, f"hDevice {a.hDevice:#x} is a {device.kind}")
        virtual = client.get(a.hDma)
        if virtual.kind != "virtual":
            raise RMError(S.NV_ERR_INVALID_OBJECT, f"hDma {a.hDma:#x} is a {virtual.kind}, not virtual memory")
        mem = client.get(a.hMemory)
        if mem.kind not in MEMORY:
            raise RMError(S.NV_ERR_INVALID_OBJECT_HANDLE, f"hMemory {a.hMemory:#x} is a {mem.kind}, not memory")
        return virtual, mem

    def map_dma(self, file, a) -> None:
        """Nv04MapMemoryDma: length bytes of the memory at offset (past its end: NV_ERR_INVALID_LIMIT) into the
        virtual object's VA space at dmaOffset (DMA_OFFSET_FIXED: off a page or outside the virtual range is
        NV_ERR_INVALID_OFFSET, over another mapping NV_ERR_NO_MEMORY, as the VA heap answers), else where the RM
        finds room; dmaOffset comes back."""
        virtual, mem = self._dma_objects(a)
        v, size = virtual.state, mem.state.size
        if a.length == 0 or a.offset + a.length > size:
            raise RMError(S.NV_ERR_INVALID_LIMIT, f"{a.length:#x} bytes at {a.offset:#x} of a {size:#x}-byte object")
        length = -(-a.length // PAGE) * PAGE
        taken = sorted((va, va + n) for va, (_, n) in v.maps.items())
        if a.flags & OS46_OFFSET_FIXED:
            va = a.dmaOffset
            if va % PAGE or va < v.lo or va + length - 1 > v.hi:
                raise RMError(S.NV_ERR_INVALID_OFFSET, f"dmaOffset {va:#x} in [{v.lo:#x}, {v.hi:#x}]")
            if any(lo < va + length and va < hi for lo, hi in taken):
                raise RMError(S.NV_ERR_NO_MEMORY, f"[{va:#x}, {va + length:#x}) is mapped already")
        else:
            va = -(-max(v.lo, BIG_PAGE) // BIG_PAGE) * BIG_PAGE
            for lo, hi in taken:
                if va + length <= lo:
                    break
                va = max(va, -(-hi // BIG_PAGE) * BIG_PAGE)
            if va + length - 1 > v.hi:
                raise RMError(S.NV_ERR_NO_MEMORY, f"no room for {length:#x} bytes in the virtual range")
        try:
            v.vaspace.map(va, mem.state.pages.array[a.offset:a.offset + length], system=mem.kind == "sysmem")
        except MappingError as e:  # another object's mapping there (UVM's, or another virtual range's)
            raise RMError(S.NV_ERR_NO_MEMORY, str(e)) from None
        v.maps[va] = (mem, length)
        mem.state.dma.append((v, va))
        a.dmaOffset = va

    def unmap_dma(self, file, a) -> None:
        """Nv04UnmapMemoryDma: the mapping at dmaOffset must be of that memory (NV_ERR_INVALID_ARGUMENT)."""
        virtual, mem = self._dma_objects(a)
        v = virtual.state
        if v.maps.get(a.dmaOffset, (None,))[0] is not mem:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"memory {a.hMemory:#x} is not mapped at {a.dmaOffset:#x}")
        del v.maps[a.dmaOffset]
        mem.state.dma.remove((v, a.dmaOffset))
        v.vaspace.unmap(a.dmaOffset)
