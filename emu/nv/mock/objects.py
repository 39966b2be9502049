"""The RM's object tree, as its resource server keeps it (resserv: rs_server.c, rs_client.c; rmapi: alloc_free.c,
resource_list.h): clients and their objects, the handles the RM gives, which class may be made under which parent,
and an allocation's checks in the order the RM makes them, each answered with its NV_STATUS:

1. the class must be one the RM knows (RsResInfoByExternalClassId): else NV_ERR_INVALID_CLASS;
2. its allocation parameters are copied in at the RM's own size of the class's struct (rmapiParamsCopyInit: the
   caller's paramsSize is not looked at); a class whose parameters are required given none is
   NV_ERR_INVALID_ARGUMENT, a pointer that cannot be read NV_ERR_INVALID_ADDRESS (os_memcpy_from_user);
3. the client (an unknown hRoot: NV_ERR_INVALID_OBJECT_HANDLE, or NV_ERR_INVALID_OBJECT where its handle bucket holds
   a larger one, _serverFindClientEntry);
4. hObjectNew equal to the client's handle is NV_ERR_INVALID_OBJECT_HANDLE (clientValidateNewResourceHandle);
5. the parent must exist (NV_ERR_OBJECT_NOT_FOUND) and be of a class the new one may live under
   (NV_ERR_INVALID_OBJECT_PARENT);
6. the handle: 0 makes the RM pick one (RS_UNIQUE_HANDLE_BASE + n); one in the firmware's range is
   NV_ERR_INVALID_OBJECT_HANDLE, one in use NV_ERR_INSERT_DUPLICATE_NAME;
7. the class's constructor (rm_classes.py), whose refusal leaves nothing behind; then the parameters are copied
   back.

A client's own handle is the caller's hRoot when not 0 (the kernel RM is built with RS_COMPATABILITY_MODE), else
RS_CLIENT_HANDLE_BASE + n; one in use is NV_ERR_INSERT_DUPLICATE_NAME. Freeing an object frees everything under
it, the channel groups and channels among them first (RS_FREE_PRIORITY_HIGH), children before parents; freeing
the client frees all it holds; freeing a handle the client lacks is NV_OK (serverFreeResourceTree in
RS_COMPATABILITY_MODE)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

from usergpu.autogen import nv_classes
from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.mock.uaccess import copy_from_user

CLIENT_HANDLE_BASE, CLIENT_BUCKET_MASK = 0xC1D00000, 0x3FF  # RS_CLIENT_HANDLE_BASE, RS_CLIENT_HANDLE_BUCKET_MASK
UNIQUE_HANDLE_BASE, UNIQUE_HANDLE_RANGE = 0xCAF00000, 0x80000  # RS_UNIQUE_HANDLE_BASE/RANGE (rs_client.h)
FW_HANDLE_BASE = 0xC9F00000  # RS_FW_UNIQUE_HANDLE_BASE (client.c): a range clients may not ask for
ROOT_CLASSES = ("NV01_ROOT", "NV01_ROOT_NON_PRIV", "NV01_ROOT_CLIENT")


def status_name(status: int) -> str:
    return S.NV_STATUS_NAMES.get(status, (f"NV_STATUS {status:#x}",))[0]


class RMError(Exception):
    """A request the RM refuses: the NV_STATUS its status field gets, and why (for a person reading a log)."""

    def __init__(self, status: int, why: str):
        super().__init__(f"{status_name(status)}: {why}")
        self.status, self.why = status, why


@dataclass(frozen=True)
class ClassDesc:
    """An RS_ENTRY of resource_list.h: the kind of object (its internal class), the kinds it may be made under
    (none: it is a client), its allocation parameters (a struct of the RM bindings, or a size for one they lack)
    and whether they are required; high: freed first (RS_FREE_PRIORITY_HIGH)."""

    kind: str
    parents: tuple[str, ...]
    params: str | int | None
    required: bool = True
    high: bool = False


_GPFIFO = ClassDesc("channel", ("device", "group"), "NV_CHANNEL_ALLOC_PARAMS", high=True)
_COMPUTE = ClassDesc("engine", ("channel",), "NV_GR_ALLOCATION_PARAMETERS", required=False)
_COPY = ClassDesc("engine", ("channel",), 8, required=False)  # NVB0B5_ALLOCATION_PARAMETERS: version, engineType
_USERMODE = ClassDesc("usermode", ("subdevice",), None, required=False)
_USERMODE_PARAMS = ClassDesc("usermode", ("subdevice",), "NV_HOPPER_USERMODE_A_PARAMS", required=False)
_MEMORY = "NV_MEMORY_ALLOCATION_PARAMS"
CLASSES = {
    **{name: ClassDesc("client", (), 4, required=False) for name in ROOT_CLASSES},  # RS_OPTIONAL(NvHandle)
    "NV01_DEVICE_0": ClassDesc("device", ("client",), "NV0080_ALLOC_PARAMETERS", required=False),
    "NV20_SUBDEVICE_0": ClassDesc("subdevice", ("device",), "NV2080_ALLOC_PARAMETERS", required=False),
    "NV01_MEMORY_LOCAL_USER": ClassDesc("vidmem", ("device", "subdevice"), _MEMORY),
    "NV01_MEMORY_SYSTEM": ClassDesc("sysmem", ("device",), _MEMORY),
    "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR": ClassDesc("osdesc", ("device",), "NV_OS_DESC_MEMORY_ALLOCATION_PARAMS"),
    "NV01_MEMORY_VIRTUAL": ClassDesc("virtual", ("device",), "NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS"),
    "FERMI_VASPACE_A": ClassDesc("vaspace", ("device", "subdevice"), "NV_VASPACE_ALLOCATION_PARAMETERS"),
    "KEPLER_CHANNEL_GROUP_A": ClassDesc("group", ("device",), "NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS", high=True),
    "FERMI_CONTEXT_SHARE_A": ClassDesc("ctxshare", ("group",), "NV_CTXSHARE_ALLOCATION_PARAMETERS"),
    "GT200_DEBUGGER": ClassDesc("debugger", ("device",), "NV83DE_ALLOC_PARAMETERS"),
    "MAXWELL_PROFILER_DEVICE": ClassDesc("profiler", ("subdevice",), "NVB2CC_ALLOC_PARAMETERS"),
    **{name: _GPFIFO for name in ("VOLTA_CHANNEL_GPFIFO_A", "TURING_CHANNEL_GPFIFO_A", "AMPERE_CHANNEL_GPFIFO_A",
                                  "HOPPER_CHANNEL_GPFIFO_A", "BLACKWELL_CHANNEL_GPFIFO_A",
                                  "BLACKWELL_CHANNEL_GPFIFO_B")},
    **{name: _COMPUTE for name in ("AMPERE_COMPUTE_A", "AMPERE_COMPUTE_B", "ADA_COMPUTE_A", "HOPPER_COMPUTE_A",
                                   "BLACKWELL_COMPUTE_A", "BLACKWELL_COMPUTE_B")},
    **{name: _COPY for name in ("AMPERE_DMA_COPY_A", "AMPERE_DMA_COPY_B", "HOPPER_DMA_COPY_A",
                                "BLACKWELL_DMA_COPY_A", "BLACKWELL_DMA_COPY_B")},
    **{name: _USERMODE for name in ("VOLTA_USERMODE_A", "TURING_USERMODE_A", "AMPERE_USERMODE_A")},
    **{name: _USERMODE_PARAMS for name in ("HOPPER_USERMODE_A", "BLACKWELL_USERMODE_A")},
}


def class_id(rm: ModuleType, name: str) -> int:
    """A class's id: the RM bindings' (g_allclasses.h), or nv_classes' for the Blackwell ones 535/555 lack."""
    return getattr(rm, name) if hasattr(rm, name) else nv_classes.BLACKWELL_CLASSES[name]


def class_table(rm: ModuleType) -> dict[int, tuple[str, ClassDesc]]:
    """class id -> (name, descriptor), with the release's ids."""
    return {class_id(rm, name): (name, desc) for name, desc in CLASSES.items()}


@dataclass(eq=False)
class Obj:
    """An object of a client: `state` is what its class keeps (set by its constructor)."""

    handle: int
    cls: int
    kind: str
    client: Client
    parent: Obj | None
    high: bool = False
    children: list[Obj] = field(default_factory=list)
    state: object = None
    dependants: list[Obj] = field(default_factory=list)  # objects of the client freed with it (refAddDependant)

    def up(self, kind: str) -> Obj | None:
        """The object itself or its nearest ancestor of a kind."""
        obj = self
        while obj is not None and obj.kind != kind:
            obj = obj.parent
        return obj

    def subtree(self) -> list[Obj]:
        """Its descendants, children before parents, ending with itself."""
        return [o for c in self.children for o in c.subtree()] + [self]


class Client:
    """A root client: its objects by handle (its own handle names the client itself) and who made it (the
    /dev/nvidiactl descriptor: closing it frees the client)."""

    def __init__(self, handle: int, cls: int, owner: object):
        self.handle, self.owner = handle, owner
        self.root = Obj(handle, cls, "client", self, None)
        self.objects: dict[int, Obj] = {handle: self.root}
        self.generated = 0  # handleGenIdx

    def get(self, handle: int) -> Obj:
        if handle not in self.objects:
            raise RMError(S.NV_ERR_OBJECT_NOT_FOUND, f"client {self.handle:#x} has no object {handle:#x}")
        return self.objects[handle]

    def get_kind(self, handle: int, kinds: tuple[str, ...], what: str) -> Obj:
        """clientGetResourceRefByType: NV_ERR_OBJECT_NOT_FOUND if absent, NV_ERR_INVALID_OBJECT_HANDLE if of
        another class."""
        obj = self.get(handle)
        if obj.kind not in kinds:
            raise RMError(S.NV_ERR_INVALID_OBJECT_HANDLE, f"{what} {handle:#x} is a {obj.kind}, not a "
                                                          f"{' or '.join(kinds)}")
        return obj

    def new_handle(self, wanted: int) -> int:
        """clientAssignResourceHandle: the handle asked for, checked, or one the RM generates."""
        if wanted == 0:
            for _ in range(UNIQUE_HANDLE_RANGE):
                handle = UNIQUE_HANDLE_BASE + self.generated % UNIQUE_HANDLE_RANGE
                self.generated += 1
                if handle not in self.objects:
                    return handle
            raise RMError(S.NV_ERR_INSUFFICIENT_RESOURCES, f"client {self.handle:#x} has no free handle")
        if wanted == self.handle or FW_HANDLE_BASE <= wanted < FW_HANDLE_BASE + UNIQUE_HANDLE_RANGE:
            raise RMError(S.NV_ERR_INVALID_OBJECT_HANDLE, f"handle {wanted:#x} is the client's or the firmware's")
        if wanted in self.objects:
            raise RMError(S.NV_ERR_INSERT_DUPLICATE_NAME, f"client {self.handle:#x} has an object {wanted:#x}")
        return wanted


Constructor = Callable[[Obj, ctypes.Structure | None], None]
Destructor = Callable[[Obj], None]


class Server:
    """The clients of the machine, and the allocation and free of their objects. constructors / destructors:
    kind -> what makes / unmakes an object's state (rm_classes.py)."""

    def __init__(self, rm: ModuleType, constructors: dict[str, Constructor], destructors: dict[str, Destructor]):
        self.rm, self.classes = rm, class_table(rm)
        self.constructors, self.destructors = constructors, destructors
        self.clients: dict[int, Client] = {}
        self.next_client = 0  # clientCurrentHandleIndex

    # ---- clients ---------------------------------------------------------------------------------------------
    def client(self, handle: int) -> Client:
        """_serverFindClientEntry's answer for a handle: the client, or the status its sorted bucket gives."""
        if handle in self.clients:
            return self.clients[handle]
        bucket = handle & CLIENT_BUCKET_MASK
        larger = any(h > handle and h & CLIENT_BUCKET_MASK == bucket for h in self.clients)
        raise RMError(S.NV_ERR_INVALID_OBJECT if larger else S.NV_ERR_INVALID_OBJECT_HANDLE,
                      f"no client {handle:#x}")

    def _new_client(self, wanted: int, cls: int, owner: object) -> int:
        if wanted and wanted in self.clients:
            raise RMError(S.NV_ERR_INSERT_DUPLICATE_NAME, f"a client {wanted:#x} exists")
        while not wanted or wanted in self.clients:
            wanted = CLIENT_HANDLE_BASE | self.next_client
            self.next_client = (self.next_client + 1) % (1 << 20)
        self.clients[wanted] = Client(wanted, cls, owner)
        return wanted

    # ---- allocation ------------------------------------------------------------------------------------------
    def params(self, desc: ClassDesc, pointer: int) -> ctypes.Structure | ctypes.Array | None:
        """The class's allocation parameters from the caller's memory (serverAllocApiCopyIn)."""
        pointer = pointer or 0  # a NULL c_void_p field reads as None
        if desc.params is None or pointer == 0 and not desc.required:
            return None
        struct = getattr(self.rm, desc.params) if isinstance(desc.params, str) else ctypes.c_ubyte * desc.params
        if pointer == 0:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"the class needs its {getattr(struct, '__name__', '')} "
                                                     f"parameters; pAllocParms is NULL")
        try:
            return struct.from_buffer(copy_from_user(pointer, ctypes.sizeof(struct), "RM_ALLOC params"))
        except OSError:
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"the parameters at {pointer:#x} cannot be read") from None

    def describe(self, cls: int) -> tuple[str, ClassDesc]:
        if cls not in self.classes:
            raise RMError(S.NV_ERR_INVALID_CLASS, f"the RM has no class {cls:#x}")
        return self.classes[cls]

    def alloc(self, h_client: int, h_parent: int, h_new: int, cls: int, params, owner: object) -> int:
        """Make an object (or a client) with parameters already copied in; its handle."""
        name, desc = self.describe(cls)
        if desc.kind == "client":
            return self._new_client(h_client, class_id(self.rm, "NV01_ROOT_CLIENT"), owner)
        client = self.client(h_client)
        if h_new == client.handle:
            raise RMError(S.NV_ERR_INVALID_OBJECT_HANDLE, f"hObjectNew {h_new:#x} is the client's own handle")
        parent = client.get(h_parent)
        if parent.kind not in desc.parents:
            raise RMError(S.NV_ERR_INVALID_OBJECT_PARENT, f"a {name} is made under a {' or '.join(desc.parents)}, "
                                                          f"not a {parent.kind} ({h_parent:#x})")
        obj = Obj(client.new_handle(h_new), cls, desc.kind, client, parent, desc.high)
        self.constructors[desc.kind](obj, params)
        parent.children.append(obj)
        client.objects[obj.handle] = obj
        return obj.handle

    # ---- free ------------------------------------------------------------------------------------------------
    def free(self, h_client: int, handle: int) -> None:
        client = self.client(h_client)
        obj = client.objects.get(handle)
        if obj is None:
            return
        self.destroy(obj)
        if obj is client.root:
            del self.clients[client.handle]

    def destroy(self, obj: Obj) -> None:
        """Free an object and all under it: the high-priority subtrees first, then the rest, each children first;
        before them what depends on one of them (refAddDependant)."""
        doomed = obj.subtree()
        for dependant in {id(d): d for o in doomed for d in o.dependants}.values():
            if dependant.client.objects.get(dependant.handle) is dependant and dependant not in doomed:
                self.destroy(dependant)
        doomed = obj.subtree()
        order = [d for o in doomed if _outermost_high(o, obj) for d in o.subtree()]
        done = set(map(id, order))
        order += [o for o in doomed if id(o) not in done]
        for o in order:
            self.destructors.get(o.kind, _nothing)(o)
            del o.client.objects[o.handle]
            if o.parent is not None:
                o.parent.children.remove(o)

    def free_owned(self, owner: object) -> None:
        """The clients a descriptor made, freed as it closes (the RM frees a process's clients with its file)."""
        for client in [c for c in self.clients.values() if c.owner is owner]:
            self.free(client.handle, client.handle)


def channel_tokens(context: Obj | None) -> set[int]:
    """The work-submit tokens of a context's channels: a channel's own, a channel group's channels' (None: none)."""
    objs = [] if context is None else [context] if context.kind == "channel" else context.children
    return {o.state.channel.token for o in objs if o.kind == "channel"}


def _nothing(obj: Obj) -> None:
    """The destructor of a class that holds nothing outside the tree."""


def _outermost_high(obj: Obj, top: Obj) -> bool:
    """Whether obj is of high free priority with no such ancestor between it and top (top included)."""
    o = None if obj is top else obj.parent
    while o is not None:
        if o.high:
            return False
        o = None if o is top else o.parent
    return obj.high
