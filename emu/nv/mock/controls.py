"""The RM controls the mock answers (NV_ESC_RM_CONTROL), a table of command -> handler, with the checks the RM
makes before a handler runs, in its order (rmapi/control.c _rmapiRmControl, rs_server.c serverControl,
rs_resource.c resControlLookup, embedded_param_copy.c):

1. a NULL command (category and index 0) is NV_OK at once;
2. an unknown client is NV_ERR_INVALID_CLIENT;
3. params NULL with a size, or a pointer with size 0, or a size other than the command's params struct (the
   command's class exports it: CONTROL_PARAMS) is NV_ERR_INVALID_ARGUMENT;
4. the params are copied in at paramsSize (NV_ERR_INVALID_ADDRESS if they cannot be read), and the lists some
   params point to (a class list, a GR info list) with them, under the same rules;
5. hObject must be an object of the client (NV_ERR_OBJECT_NOT_FOUND) whose class exports the command (else, and
   for a command the mock does not answer, NV_ERR_NOT_SUPPORTED);
6. the handler; the params (and lists) are copied back whatever it answered."""

from __future__ import annotations

import ctypes

from usergpu.autogen import nv_rm_535 as S
from usergpu.emu.mock import reported_fault
from usergpu.emu.mock.uaccess import copy_from_user, copy_to_user
from usergpu.emu.nv.mock import chips, profiler
from usergpu.emu.nv.mock.gpu import ACCESS_TYPE, FAULT_TYPE_PTE, MMUFault
from usergpu.emu.nv.mock.objects import Obj, RMError

MAX_PARAMS = 1 << 20  # RMAPI_PARAM_COPY_MAX_PARAMS_SIZE: the largest list a control may point to
# the class of a command (cmd >> 16) -> the kind of object that exports it
KINDS = {0x0000: "client", 0x0080: "device", 0x2080: "subdevice", 0x83DE: "debugger", 0xA06C: "group",
         0xA06F: "channel", 0xC36F: "channel", 0xB0CC: "profiler"}
MMU_FAULT_ENTRIES = 4  # NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_MAX_ENTRIES


class Controls:
    def __init__(self, machine):
        self.m, rm = machine, machine.rm
        self.handlers = {
            rm.NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2: self.build_version,
            rm.NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2: self.id_info,
            rm.NV0000_CTRL_CMD_GPU_GET_PROBED_IDS: self.probed_ids,
            rm.NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS: self.attached_ids,
            rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST: self.class_list,
            rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2: self.class_list_v2,
            rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO: self.gid_info,
            rm.NV2080_CTRL_CMD_GPU_GET_NAME_STRING: self.name_string,
            rm.NV2080_CTRL_CMD_GR_GET_INFO: self.gr_info,
            rm.NV2080_CTRL_CMD_GR_GET_TPC_MASK: self.tpc_mask,
            rm.NV2080_CTRL_CMD_FB_GET_INFO_V2: self.fb_info,
            rm.NV2080_CTRL_CMD_PERF_BOOST: _accept,
            rm.NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE: _accept,
            rm.NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN: self.work_submit_token,
            rm.NVA06C_CTRL_CMD_GPFIFO_SCHEDULE: _accept,
            rm.NVA06F_CTRL_CMD_GPFIFO_SCHEDULE: _accept,
            rm.NVA06C_CTRL_CMD_SET_TIMESLICE: _accept,
            rm.NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO: self.mmu_fault_info,
            rm.NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES: self.sm_error_states,
            **profiler.Controls(machine).handlers,
        }
        # command -> the lists its params point to: (pointer field, count field, element size)
        self.embedded = {rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST: ("classList", "numClasses", 4),
                         rm.NV2080_CTRL_CMD_GR_GET_INFO: ("grInfoList", "grInfoListSize",
                                                          ctypes.sizeof(rm.NV2080_CTRL_GR_INFO))}
        self.gr_indices = {getattr(rm, f"NV2080_CTRL_GR_INFO_INDEX_{k}"): v for k, v in machine.chip.gr_info().items()}
        vram = machine.chip.vram >> 10  # the FB indices are in KiB
        self.fb_indices = {rm.NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE: lambda i: vram,
                           rm.NV2080_CTRL_FB_INFO_INDEX_TOTAL_RAM_SIZE: lambda i: vram,
                           rm.NV2080_CTRL_FB_INFO_INDEX_HEAP_SIZE: lambda i: vram,
                           rm.NV2080_CTRL_FB_INFO_INDEX_USABLE_RAM_SIZE: lambda i: vram,
                           rm.NV2080_CTRL_FB_INFO_INDEX_HEAP_FREE: lambda i: vram - (machine.vram_used[i] >> 10)}

    # ---- the entry ---------------------------------------------------------------------------------------------
    def call(self, server, a) -> None:
        """One NV_ESC_RM_CONTROL (NVOS54); an RMError is its status."""
        if a.cmd >> 8 & 0xFF == 0 and a.cmd & 0xFF == 0:
            return
        if a.hClient not in server.clients:
            raise RMError(S.NV_ERR_INVALID_CLIENT, f"no client {a.hClient:#x}")
        struct = self.m.rm.CONTROL_PARAMS.get(a.cmd, False)
        expected = None if struct is False else ctypes.sizeof(struct) if struct is not None else 0
        pointer = a.params or 0  # a NULL c_void_p field reads as None
        if bool(pointer) != bool(a.paramsSize) or expected is not None and a.paramsSize != expected:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"cmd {a.cmd:#x}: params {pointer:#x} of {a.paramsSize} bytes"
                                                     f"{f', the command takes {expected}' if expected else ''}")
        data = _copy_in(pointer, a.paramsSize)
        params = struct.from_buffer(data) if struct else None
        lists: dict[str, bytearray] = {}
        try:
            for name, count, size in [self.embedded[a.cmd]] if a.cmd in self.embedded and params else []:
                buf = _embedded(getattr(params, name) or 0, getattr(params, count) * size)
                if getattr(params, name):
                    lists[name] = buf
            obj = server.client(a.hClient).get(a.hObject)
            handler = self.handlers.get(a.cmd)
            if handler is None or KINDS.get(a.cmd >> 16) != obj.kind:
                raise RMError(S.NV_ERR_NOT_SUPPORTED, f"a {obj.kind} ({a.hObject:#x}) answers no command {a.cmd:#x}")
            handler(obj, params, lists)
        finally:
            for name, buf in lists.items():
                _copy_out(getattr(params, name), buf)
            _copy_out(pointer, data)

    # ---- 0000: the client --------------------------------------------------------------------------------------
    def build_version(self, obj: Obj, p, lists) -> None:
        """cliresCtrlCmdSystemGetBuildVersionV2: NV_VERSION_STRING, the branch, the title."""
        release = self.m.release
        p.driverVersionBuffer = release.encode()
        p.versionBuffer = f"rel/gpu_drv/r{release.split('.')[0]}".encode()
        p.titleBuffer = f"NVIDIA UNIX Open Kernel Module {release} (usergpu mock)".encode()
        p.changelistNumber = p.officialChangelistNumber = 0

    def _index(self, gpu_id: int) -> int:
        for i in range(self.m.count):
            if chips.gpu_id(i) == gpu_id:
                return i
        raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"no GPU has gpuId {gpu_id:#x}")

    def id_info(self, obj: Obj, p, lists) -> None:
        """gpumgrGetGpuIdInfoV2: an unknown gpuId is NV_ERR_INVALID_ARGUMENT."""
        index = self._index(p.gpuId)
        in_use = any(o.kind == "device" and o.state.index == index for c in self.m.resman.server.clients.values()
                     for o in c.root.children)
        p.gpuFlags = int(in_use)  # NV0000_CTRL_GPU_ID_INFO_IN_USE 0:0
        p.deviceInstance, p.subDeviceInstance, p.gpuInstance = index, 0, index
        p.sliStatus, p.boardId, p.numaId = 0, index, -1  # NV0000_CTRL_NO_NUMA_NODE

    def _ids(self, slots, ids: list[int]) -> None:
        for i in range(len(slots)):
            slots[i] = ids[i] if i < len(ids) else self.m.rm.NV0000_CTRL_GPU_INVALID_ID

    def probed_ids(self, obj: Obj, p, lists) -> None:
        self._ids(p.gpuIds, [chips.gpu_id(i) for i in range(self.m.count)])
        self._ids(p.excludedGpuIds, [])

    def attached_ids(self, obj: Obj, p, lists) -> None:
        """Every GPU of the machine is attached (the driver initialised it at load)."""
        self._ids(p.gpuIds, [chips.gpu_id(i) for i in range(self.m.count)])

    # ---- 0080: the device --------------------------------------------------------------------------------------
    def class_list(self, obj: Obj, p, lists) -> None:
        """deviceCtrlCmdGpuGetClasslist (gpuGetClassList): no list asks the count; a list shorter than the
        count gets its first numClasses and NV_ERR_INVALID_PARAM_STRUCT."""
        classes = self.m.classes
        if "classList" in lists:
            out = (ctypes.c_uint32 * p.numClasses).from_buffer(lists["classList"])
            n = min(p.numClasses, len(classes))
            out[:n] = classes[:n]
            if p.numClasses < len(classes):
                raise RMError(S.NV_ERR_INVALID_PARAM_STRUCT, f"a list of {p.numClasses} for {len(classes)} classes")
        p.numClasses = len(classes)

    def class_list_v2(self, obj: Obj, p, lists) -> None:
        classes = self.m.classes
        if len(classes) > len(p.classList):
            raise RMError(S.NV_ERR_INVALID_PARAM_STRUCT, f"{len(classes)} classes")
        p.classList[:len(classes)] = classes
        p.numClasses = len(classes)

    # ---- 2080: the subdevice -----------------------------------------------------------------------------------
    def gid_info(self, obj: Obj, p, lists) -> None:
        """gpuGetGidInfo: the SHA1 type only (else NV_ERR_INVALID_FLAGS); 16 bytes in binary format, the GPU-...
        text (with its NUL) in ASCII."""
        rm = self.m.rm
        if p.flags & 0x4 != rm.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_TYPE_SHA1:  # _TYPE 2:2
            raise RMError(S.NV_ERR_INVALID_FLAGS, f"GID flags {p.flags:#x}")
        binary = p.flags & 0x3 == rm.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY  # _FORMAT 1:0
        data = chips.uuid(obj.state) if binary else chips.uuid_text(obj.state).encode() + b"\0"
        p.data[:len(data)] = data
        p.length = len(data)

    def name_string(self, obj: Obj, p, lists) -> None:
        """The chip's name in ASCII, or (up to 590: 595 drops the form) in UCS-2."""
        rm, name = self.m.rm, self.m.chip.name
        if p.gpuNameStringFlags == rm.NV2080_CTRL_GPU_GET_NAME_STRING_FLAGS_TYPE_ASCII:
            p.gpuNameString.ascii[:len(name) + 1] = name.encode() + b"\0"
        elif p.gpuNameStringFlags == getattr(rm, "NV2080_CTRL_GPU_GET_NAME_STRING_FLAGS_TYPE_UNICODE", None):
            p.gpuNameString.unicode[:len(name) + 1] = [ord(c) for c in name] + [0]
        else:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"name string flags {p.gpuNameStringFlags:#x}")

    def gr_info(self, obj: Obj, p, lists) -> None:
        """subdeviceCtrlCmdKGrGetInfo: the first min(grInfoListSize, NV2080_CTRL_GR_INFO_MAX_SIZE) entries; no list,
        an empty one or an index past the table is NV_ERR_INVALID_ARGUMENT (an index the mock has no value for
        reads 0)."""
        rm = self.m.rm
        count = min(p.grInfoListSize, rm.NV2080_CTRL_GR_INFO_MAX_SIZE)
        if "grInfoList" not in lists or count == 0:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"a GR info list of {p.grInfoListSize}")
        for info in (rm.NV2080_CTRL_GR_INFO * count).from_buffer(lists["grInfoList"]):
            if info.index >= rm.NV2080_CTRL_GR_INFO_MAX_SIZE:
                raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"GR info index {info.index:#x}")
            info.data = self.gr_indices.get(info.index, 0)

    def tpc_mask(self, obj: Obj, p, lists) -> None:
        """subdeviceCtrlCmdKGrGetTpcMask without MIG: a bit per enabled TPC of the physical GPC (the mock's chips
        are whole dies); a GPC past the chip's has none (0, NV_OK)."""
        chip = self.m.chip
        p.tpcMask = (1 << chip.tpc_per_gpc) - 1 if p.gpcId < chip.gpcs else 0

    def fb_info(self, obj: Obj, p, lists) -> None:
        """_fbGetFbInfos: 1..NV2080_CTRL_FB_INFO_MAX_LIST_SIZE entries, each index one the mock knows, else
        NV_ERR_INVALID_ARGUMENT."""
        if not 0 < p.fbInfoListSize <= self.m.rm.NV2080_CTRL_FB_INFO_MAX_LIST_SIZE:
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"an FB info list of {p.fbInfoListSize}")
        for i in range(p.fbInfoListSize):
            info = p.fbInfoList[i]
            if info.index not in self.fb_indices:
                raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"FB info index {info.index:#x}")
            info.data = self.fb_indices[info.index](obj.state)

    # ---- channels and the debugger -----------------------------------------------------------------------------
    def work_submit_token(self, obj: Obj, p, lists) -> None:
        p.workSubmitToken = obj.state.channel.token

    def mmu_fault_info(self, obj: Obj, p, lists) -> None:
        """The last MMU faults of the debugger's context, oldest first (the RM keeps them as a ring of 4)."""
        faults = self._faults(obj)[-MMU_FAULT_ENTRIES:]
        for entry, fault in zip(p.mmuFaultInfoList, faults, strict=False):
            entry.faultAddress, entry.faultType, entry.accessType = fault[0], fault[1], fault[2]
        p.count = len(faults)


    def sm_error_states(self, obj: Obj, p, lists) -> None:
        """The SMs' error state of the debugger's context: whether an MMU fault stopped one of its channels (then
        READ_MMU_FAULT_INFO has it); the mock models no SM's error registers, so those read 0."""
        if p.numSMsToRead > len(p.smErrorStateArray):
            raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"{p.numSMsToRead} SMs to read, at most "
                                                      f"{len(p.smErrorStateArray)}")
        p.mmuFault.valid = bool(self._faults(obj))

    def _faults(self, obj: Obj) -> list[MMUFault]:
        """The MMU faults of the debugger's context's channels, and the one MOCKGPU_EMU_FAULTADDR reports."""
        tokens = obj.state.tokens()
        faults = [f for f in self.m.gpu(obj.state.gpu).mmu_faults if f.channel in tokens]
        address = reported_fault()
        return faults if address is None else [*faults, MMUFault(address, FAULT_TYPE_PTE, ACCESS_TYPE["read"])]


def _accept(obj: Obj, p, lists) -> None:
    """A command the mock GPU has nothing to do for (its channels always run; it has no clocks or caches)."""


def _copy_in(pointer: int, size: int) -> bytearray:
    try:
        return copy_from_user(pointer, size, "RM_CONTROL params") if size else bytearray()
    except OSError:
        raise RMError(S.NV_ERR_INVALID_ADDRESS, f"the {size} bytes at {pointer:#x} cannot be read") from None


def _embedded(pointer: int, size: int) -> bytearray:
    """rmapiParamsAcquire of a list a control's params point to."""
    if bool(pointer) != bool(size) or size > MAX_PARAMS:
        raise RMError(S.NV_ERR_INVALID_ARGUMENT, f"a list of {size} bytes at {pointer:#x}")
    return _copy_in(pointer, size)


def _copy_out(pointer: int, data: bytearray) -> None:
    if data:
        try:
            copy_to_user(pointer, data, "RM_CONTROL params")
        except OSError:
            raise RMError(S.NV_ERR_INVALID_ADDRESS, f"the {len(data)} bytes at {pointer:#x} cannot be "
                                                    "written") from None

