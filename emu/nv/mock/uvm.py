"""/dev/nvidia-uvm of the mock machine: nvidia-uvm.ko's ioctls (uvm.c, uvm_api.h, uvm_va_space.c, uvm_gpu.c,
uvm_map_external.c, uvm_user_channel.c), for what a compute runtime asks of it: a VA space per descriptor, the GPUs
and their RM VA spaces registered in it, channels, and external ranges into which RM memory objects are mapped.

The request is the UVM_* number itself. UVM_ROUTE_CMD copies the params at UVM's own size of the command's struct
(no size check: EFAULT if they cannot be read or written back), sets rmStatus to NV_OK, refuses every command but
UVM_INITIALIZE and UVM_MM_INITIALIZE on a descriptor that is no initialised VA space (NV_ERR_ILLEGAL_ACTION), runs
the command and copies the params back; the command's answer is rmStatus, and the ioctl returns 0. An unknown
number is EINVAL (the test ioctls, disabled)."""

from __future__ import annotations

import ctypes
import errno
from dataclasses import dataclass, field

from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.mock.uaccess import copy_from_user, copy_to_user
from usergpu.emu.nv.mock import chips
from usergpu.emu.nv.mock.objects import RMError
from usergpu.emu.nv.mock.rm_classes import MEMORY
from usergpu.errors import DriverError

GPU_PAGE = 4096  # UVM_PAGE_SIZE_4K: the alignment external ranges and mappings need
CPU_VA_BITS = 48  # x86-64 with 4-level paging: UVM maps external allocations where the CPU can address them too
MAX_CHANNEL_VA = 1 << 40  # parent_gpu->max_channel_va: where a channel's context buffers may be mapped
NO_NUMA_NODE = -1


@dataclass
class Range:
    """A VA range of the UVM VA space: an external range (maps: GPU -> va -> (length, memory object)) or the
    range of a registered channel."""

    base: int
    length: int
    kind: str
    maps: dict[int, dict[int, tuple[int, object]]] = field(default_factory=dict)

    @property
    def end(self) -> int:
        return self.base + self.length - 1


def range_invalid(base: int, length: int) -> bool:
    """uvm_api_range_invalid_4k."""
    return bool(base % GPU_PAGE or length % GPU_PAGE or base == 0 or length == 0 or base + length >= 1 << 64)


class UVMFile:
    """One open /dev/nvidia-uvm: uninitialised, a VA space (UVM_INITIALIZE) or the MM descriptor of another's
    (UVM_MM_INITIALIZE)."""

    def __init__(self, machine):
        self.m, u = machine, machine.uvm
        self.kind, self.flags = "uninitialized", 0
        self.mm = "uninitialized"  # this VA space's va_space_mm: alive once an MM descriptor holds it, then released
        self.mm_of: UVMFile | None = None
        self.gpus: set[int] = set()
        self.vaspaces: dict[int, object] = {}  # GPU -> the VA space (the mock GPU's) registered for it
        self.ranges: list[Range] = []
        self.channels: dict[tuple[int, int], Range | None] = {}
        self.handlers = {u.UVM_INITIALIZE: self.initialize, u.UVM_MM_INITIALIZE: self.mm_initialize,
                         u.UVM_PAGEABLE_MEM_ACCESS: self.pageable_mem_access, u.UVM_REGISTER_GPU: self.register_gpu,
                         u.UVM_UNREGISTER_GPU: self.unregister_gpu, u.UVM_REGISTER_GPU_VASPACE: self.register_vaspace,
                         u.UVM_UNREGISTER_GPU_VASPACE: self.unregister_vaspace,
                         u.UVM_REGISTER_CHANNEL: self.register_channel,
                         u.UVM_UNREGISTER_CHANNEL: self.unregister_channel,
                         u.UVM_CREATE_EXTERNAL_RANGE: self.create_external_range,
                         u.UVM_MAP_EXTERNAL_ALLOCATION: self.map_external_allocation, u.UVM_FREE: self.free}
        self.uninitialized_ok = {u.UVM_INITIALIZE, u.UVM_MM_INITIALIZE}

    # ---- the entry ---------------------------------------------------------------------------------------------
    def ioctl(self, request: int, arg: int) -> None:
        u = self.m.uvm
        if request == u.UVM_DEINITIALIZE:
            return
        if request not in self.handlers:
            raise OSError(errno.EINVAL, f"nvidia-uvm ioctl {request:#x}: not one the mock models")
        struct = u.UVM_PARAMS[request]
        params = struct.from_buffer(copy_from_user(arg, ctypes.sizeof(struct), f"UVM ioctl {request:#x}"))
        params.rmStatus = S.NV_OK
        with self.m.lock:
            try:
                if self.kind != "va_space" and request not in self.uninitialized_ok:
                    raise RMError(S.NV_ERR_ILLEGAL_ACTION, "the descriptor is no initialised UVM VA space")
                self.handlers[request](params)
            except RMError as e:
                params.rmStatus = e.status
                self.m.log(f"UVM {struct.__name__}: {e}")
        copy_to_user(arg, bytes(params), f"UVM ioctl {request:#x}")

    def close(self) -> None:
        with self.m.lock:
            if self.kind == "va_space":
                for r in list(self.ranges):
                    self._drop(r)
            if self.mm_of is not None:
                self.mm_of.mm = "released"

    # ---- initialisation ----------------------------------------------------------------------------------------
    def initialize(self, p) -> None:
        """uvm_api_initialize: flags outside UVM_INIT_FLAGS_MASK are NV_ERR_INVALID_ARGUMENT, as are other flags
        than the first call's and an MM descriptor."""
        u = self.m.uvm
        if self.kind == "va_space":
            if p.flags != self.flags:
                raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"flags {p.flags:#x}: the VA space has {self.flags:#x}")
        elif self.kind == "mm" or p.flags & ~u.UVM_INIT_FLAGS_MASK:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"flags {p.flags:#x} or an MM descriptor")
        else:
            self.kind, self.flags = "va_space", p.flags

    def mm_initialize(self, p) -> None:
        """uvm_api_mm_initialize: uvmFd must be an initialised VA space's descriptor (NV_ERR_INVALID_ARGUMENT); one
        in multi-process sharing mode needs none (NV_WARN_NOTHING_TO_DO); this descriptor must be new (NV_ERR_IN_USE)
        and the VA space's mm not held already (NV_ERR_INVALID_STATE) nor released (NV_ERR_PAGE_TABLE_NOT_AVAIL)."""
        try:
            target = self.m.hal.device(p.uvmFd)
        except (OSError, DriverError):
            target = None
        if not isinstance(target, UVMFile) or target.kind != "va_space":
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"uvmFd {p.uvmFd} is no initialised /dev/nvidia-uvm")
        if target.flags & self.m.uvm.UVM_INIT_FLAGS_MULTI_PROCESS_SHARING_MODE:
            raise RMError(S.NV_WARN_NOTHING_TO_DO, "a VA space in multi-process sharing mode has no mm")
        if self.kind != "uninitialized":
            raise RMError(S.NV_ERR_IN_USE, "the descriptor is initialised already")
        if target.mm != "uninitialized":
            raise RMError(S.NV_ERR_INVALID_STATE if target.mm == "alive" else S.NV_ERR_PAGE_TABLE_NOT_AVAIL,
                          f"the VA space's mm is {target.mm}")
        target.mm, self.kind, self.mm_of = "alive", "mm", target

    def pageable_mem_access(self, p) -> None:
        """The mock has neither ATS nor HMM: GPUs reach only memory mapped for them."""
        p.pageableMemAccess = 0

    # ---- GPUs --------------------------------------------------------------------------------------------------
    def _gpu(self, uuid) -> int | None:
        wanted = bytes(uuid.uuid)
        return next((i for i in range(self.m.count) if chips.uuid(i) == wanted), None)

    def _registered(self, uuid, vaspace: bool = False) -> int:
        """A GPU of the VA space (with its GPU VA space registered): else NV_ERR_INVALID_DEVICE."""
        index = self._gpu(uuid)
        if index not in (self.vaspaces if vaspace else self.gpus):
            raise RMError(S.NV_ERR_INVALID_DEVICE, f"GPU {bytes(uuid.uuid).hex()} is not registered"
                                                   f"{' with a VA space' if vaspace else ''}")
        return index

    def register_gpu(self, p) -> None:
        """uvm_va_space_register_gpu: a UUID of no GPU is NV_ERR_GPU_UUID_NOT_FOUND, a GPU registered already
        NV_ERR_INVALID_DEVICE."""
        index = self._gpu(p.gpu_uuid)
        if index is None:
            raise RMError(S.NV_ERR_GPU_UUID_NOT_FOUND, f"no GPU has UUID {bytes(p.gpu_uuid.uuid).hex()}")
        if index in self.gpus:
            raise RMError(S.NV_ERR_INVALID_DEVICE, f"GPU {index} is registered already")
        self.gpus.add(index)
        p.numaEnabled, p.numaNodeId = 0, NO_NUMA_NODE

    def unregister_gpu(self, p) -> None:
        index = self._registered(p.gpu_uuid)
        self._unregister_vaspace(index)
        self.gpus.discard(index)

    def register_vaspace(self, p) -> None:
        """uvm_va_space_register_gpu_va_space: the GPU must be registered (NV_ERR_INVALID_DEVICE); the RM VA space
        is hVaSpace of hClient (nvGpuOpsDupAddressSpace: NV_ERR_INVALID_CLIENT, NV_ERR_OBJECT_NOT_FOUND,
        NV_ERR_INVALID_OBJECT for another class, NV_ERR_OTHER_DEVICE_FOUND for another GPU's); a second one for the
        GPU is NV_ERR_INVALID_DEVICE. rmCtrlFd is not looked at (the source says so)."""
        index = self._registered(p.gpuUuid)
        obj = self._rm_object(p.hClient, p.hVaSpace)
        if obj.kind != "vaspace":
            raise RMError(S.NV_ERR_INVALID_OBJECT, f"{p.hVaSpace:#x} is a {obj.kind}, not a VA space")
        if obj.up("device").state.index != index:
            raise RMError(S.NV_ERR_OTHER_DEVICE_FOUND, f"VA space {p.hVaSpace:#x} is another GPU's")
        if index in self.vaspaces:
            raise RMError(S.NV_ERR_INVALID_DEVICE, f"GPU {index} has its VA space registered")
        self.vaspaces[index] = obj.state

    def unregister_vaspace(self, p) -> None:
        self._unregister_vaspace(self._registered(p.gpuUuid, vaspace=True))

    def _unregister_vaspace(self, index: int) -> None:
        """The GPU's mappings leave its VA space, its channels the VA space (remove_gpu_va_space)."""
        if index not in self.vaspaces:
            return
        for r in self.ranges:
            for va in list(r.maps.get(index, {})):
                self._unmap(r, index, va)
        self.vaspaces.pop(index)

    def _rm_object(self, h_client: int, handle: int):
        server = self.m.resman.server
        if h_client not in server.clients:
            raise RMError(S.NV_ERR_INVALID_CLIENT, f"no RM client {h_client:#x}")
        return server.clients[h_client].get(handle)

    # ---- channels ----------------------------------------------------------------------------------------------
    def register_channel(self, p) -> None:
        """uvm_register_channel: the GPU's VA space must be registered (NV_ERR_INVALID_DEVICE); hChannel a channel of
        hClient (NV_ERR_INVALID_OBJECT_HANDLE) on that VA space (NV_ERR_INVALID_CHANNEL; another GPU's:
        NV_ERR_OTHER_DEVICE_FOUND), once (NV_ERR_INVALID_CHANNEL). A graphics channel's context buffers take
        [base, base + length): a range UVM refuses is NV_ERR_INVALID_ADDRESS, one past max_channel_va
        NV_ERR_OUT_OF_RANGE, one over another NV_ERR_UVM_ADDRESS_IN_USE; a copy channel has none."""
        index = self._registered(p.gpuUuid, vaspace=True)
        server = self.m.resman.server
        if p.hClient not in server.clients:
            raise RMError(S.NV_ERR_INVALID_CLIENT, f"no RM client {p.hClient:#x}")
        obj = server.clients[p.hClient].objects.get(p.hChannel)
        if obj is None or obj.kind != "channel":
            raise RMError(S.NV_ERR_INVALID_OBJECT_HANDLE, f"{p.hChannel:#x} is no channel of {p.hClient:#x}")
        if obj.state.vaspace is not self.vaspaces[index]:
            raise RMError(S.NV_ERR_OTHER_DEVICE_FOUND if obj.state.index != index else S.NV_ERR_INVALID_CHANNEL,
                          f"channel {p.hChannel:#x} is on another VA space")
        key = (p.hClient, p.hChannel)
        if key in self.channels:
            raise RMError(S.NV_ERR_INVALID_CHANNEL, f"channel {p.hChannel:#x} is registered already")
        r = None
        if obj.state.engine == self.m.rm.NV2080_ENGINE_TYPE_GRAPHICS:
            if range_invalid(p.base, p.length):
                raise RMError(S.NV_ERR_INVALID_ADDRESS, f"[{p.base:#x}, +{p.length:#x}) for the channel's buffers")
            if p.base + p.length - 1 >= MAX_CHANNEL_VA:
                raise RMError(S.NV_ERR_OUT_OF_RANGE, f"the channel's buffers end past {MAX_CHANNEL_VA:#x}")
            r = self._add(Range(p.base, p.length, "channel"))
        self.channels[key] = r

    def unregister_channel(self, p) -> None:
        key = (p.hClient, p.hChannel)
        if key not in self.channels:
            raise RMError(S.NV_ERR_INVALID_CHANNEL, f"channel {p.hChannel:#x} is not registered")
        r = self.channels.pop(key)
        if r is not None:
            self.ranges.remove(r)

    # ---- external ranges ---------------------------------------------------------------------------------------
    def _add(self, r: Range) -> Range:
        """uvm_range_tree_add: a range over another is NV_ERR_UVM_ADDRESS_IN_USE."""
        if any(o.base <= r.end and r.base <= o.end for o in self.ranges):
            raise RMError(S.NV_ERR_UVM_ADDRESS_IN_USE, f"[{r.base:#x}, {r.end:#x}] overlaps a range")
        self.ranges.append(r)
        return r

    def create_external_range(self, p) -> None:
        if range_invalid(p.base, p.length):
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"[{p.base:#x}, +{p.length:#x}) is no 4 KiB-aligned range")
        self._add(Range(p.base, p.length, "external"))

    def _attributes_invalid(self, a) -> bool:
        u = self.m.uvm
        bits = {u.UvmGpuFormatElementBitsDefault, u.UvmGpuFormatElementBits8, u.UvmGpuFormatElementBits16,
                u.UvmGpuFormatElementBits32, u.UvmGpuFormatElementBits64, u.UvmGpuFormatElementBits128}
        default_format = a.gpuFormatType == u.UvmGpuFormatTypeDefault
        return (a.gpuMappingType >= u.UvmGpuMappingTypeCount or a.gpuCachingType >= u.UvmGpuCachingTypeCount
                or a.gpuCompressionType >= u.UvmGpuCompressionTypeCount
                or a.gpuFormatType >= u.UvmGpuFormatTypeCount or a.gpuElementBits not in bits
                or default_format != (a.gpuElementBits == u.UvmGpuFormatElementBitsDefault))

    def map_external_allocation(self, p) -> None:
        """uvm_map_external_allocation: a range UVM refuses, or one outside an external range, is
        NV_ERR_INVALID_ADDRESS; 0 or more than UVM_MAX_GPUS attributes NV_ERR_INVALID_ARGUMENT, as is an invalid
        mapping, caching or kind; each GPU named must have its VA space registered (NV_ERR_INVALID_DEVICE) and
        address the range (NV_ERR_OUT_OF_RANGE). The memory is hMemory of hClient (NV_ERR_INVALID_CLIENT,
        NV_ERR_OBJECT_NOT_FOUND; not memory: NV_ERR_INVALID_OBJECT_HANDLE) of a GPU registered here (another GPU's
        video memory needs peer access, which the mock has not: NV_ERR_INVALID_DEVICE), and offset + length within
        it (NV_ERR_INVALID_OFFSET). What the GPU had mapped in the range before is unmapped first."""
        u = self.m.uvm
        if range_invalid(p.base, p.length):
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"[{p.base:#x}, +{p.length:#x}) is no 4 KiB-aligned range")
        if not 0 < p.gpuAttributesCount <= u.UVM_MAX_GPUS:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"{p.gpuAttributesCount} GPU attributes")
        r = next((r for r in self.ranges if r.base <= p.base <= r.end), None)
        if r is None or r.kind != "external" or r.end < p.base + p.length - 1:
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"[{p.base:#x}, +{p.length:#x}) is not in an external range")
        for a in p.perGpuAttributes[:p.gpuAttributesCount]:
            if self._attributes_invalid(a):
                raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"mapping {a.gpuMappingType}, caching {a.gpuCachingType}, "
                                                         f"format {a.gpuFormatType}/{a.gpuElementBits}")
            index = self._registered(a.gpuUuid, vaspace=True)
            if p.base + p.length > 1 << (CPU_VA_BITS - 1):
                raise RMError(S.NV_ERR_OUT_OF_RANGE, f"[{p.base:#x}, +{p.length:#x}) is past the CPU's half")
            mem = self._memory(p, index)
            for va in [va for va, (n, _) in r.maps.get(index, {}).items() if va < p.base + p.length and
                       p.base < va + n]:
                self._unmap(r, index, va)
            self.vaspaces[index].map(p.base, mem.state.pages.array[p.offset:p.offset + p.length],
                                     system=mem.kind == "sysmem")
            r.maps.setdefault(index, {})[p.base] = (p.length, mem)

    def _memory(self, p, index: int):
        obj = self._rm_object(p.hClient, p.hMemory)
        if obj.kind not in MEMORY:
            raise RMError(S.NV_ERR_INVALID_OBJECT_HANDLE, f"{p.hMemory:#x} is a {obj.kind}, not memory")
        owner = obj.state.index
        if owner not in self.gpus or obj.kind == "vidmem" and owner != index:
            raise RMError(S.NV_ERR_INVALID_DEVICE, f"memory {p.hMemory:#x} is GPU {owner}'s")
        if p.offset + p.length > obj.state.size:
            raise RMError(S.NV_ERR_INVALID_OFFSET, f"{p.length:#x} bytes at {p.offset:#x} of a "
                                                   f"{obj.state.size:#x}-byte object")
        return obj

    def _unmap(self, r: Range, index: int, va: int) -> None:
        del r.maps[index][va]
        self.vaspaces[index].unmap(va)

    def _drop(self, r: Range) -> None:
        for index, maps in r.maps.items():
            for va in list(maps):
                self._unmap(r, index, va)
        self.ranges.remove(r)

    def free(self, p) -> None:
        """uvm_free: the exact bounds of an external range (else NV_ERR_INVALID_ADDRESS); it leaves every GPU. From
        590 UVM_FREE_PARAMS has no length: the range is the one that starts at base."""
        length = getattr(p, "length", None)
        if range_invalid(p.base, length if length is not None else GPU_PAGE):
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"[{p.base:#x}, +{length or 0:#x}) is no 4 KiB-aligned range")
        r = next((r for r in self.ranges if r.base <= p.base <= r.end), None)
        if r is None or r.kind != "external" or r.base != p.base or length is not None and r.end != p.base + length - 1:
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"[{p.base:#x}, +{length or 0:#x}) is no external range")
        self._drop(r)
