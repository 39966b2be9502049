"""One NVIDIA GPU through the kernel driver, opened for this process as CUDA and tinygrad do (NV.md's sequence):
the release first (it picks the bindings), a root client, the device and subdevice, the chip's classes, the
usermode doorbell page, a VA space that UVM manages, a channel group with a compute and a copy channel. Memory is
mapped at one address for the CPU and the GPU (a UVM external range, MAP_MEMORY_DMA at that offset, then
UVM_MAP_EXTERNAL_ALLOCATION), so a Buffer's address serves both.

The same code drives a real GPU (NVK+NV) and the mock (MOCK+NV); only the HAL differs.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from usergpu.drivers.hal import HAL, MAP_FIXED, MAP_SHARED, MMIO, PROT_READ, PROT_WRITE
from usergpu.drivers.memobj import Memory
from usergpu.drivers.nv.abi import ABI, for_release, request, version_query
from usergpu.drivers.nv.channel import Channel, Channels
from usergpu.drivers.nv.rm import RM, address
from usergpu.drivers.nv.uvm import UVM
from usergpu.drivers.nv.va import reserve, unreserve
from usergpu.errors import DeviceNotFound, DriverError, RMError
from usergpu.hostmem import page_align

IMPORTED = 0x5E000000  # handles this client gives the OS-descriptor objects it makes (the legacy escape wants one)
MAX_CARDS = 64  # NV_MAX_DEVICES: CARD_INFO answers one entry per possible GPU
USERMODE_SIZE = 0x10000  # the usermode page: NOTIFY_CHANNEL_PENDING (the doorbell) at +0x90
VA_LIMIT = 0x1FFFFFFFFFFFF  # NV01_MEMORY_VIRTUAL's limit: the whole 49-bit GPU address space
VASPACE = (0x1000, 0x1FFFFFB000000)  # FERMI_VASPACE_A base and size, UVM's own bounds
# bit positions of the NVOS flag fields the driver sets (nvos.h: NVOS32_ATTR_*, NVOS32_ATTR2_*, NVOS46_FLAGS_*,
# NVOS02_FLAGS_*: the `hi:lo` defines, which carry no value for the bindings)
ATTR_LOCATION, ATTR_PHYSICALITY, ATTR2_GPU_CACHEABLE = 25, 27, 2
DMA_PAGE_SIZE, DMA_CACHE_SNOOP, DMA_OFFSET_FIXED = 8, 4, 15
OS02_PHYSICALITY, OS02_COHERENCY, OS02_MAPPING = 4, 12, 30
# per role, the classes usergpu drives, newest first (Blackwell, Hopper, Ada, Ampere: NV.md)
ROLES = {
    "usermode": ("BLACKWELL_USERMODE_A", "HOPPER_USERMODE_A", "AMPERE_USERMODE_A"),
    "gpfifo": ("BLACKWELL_CHANNEL_GPFIFO_B", "BLACKWELL_CHANNEL_GPFIFO_A", "HOPPER_CHANNEL_GPFIFO_A",
               "AMPERE_CHANNEL_GPFIFO_A"),
    "compute": ("BLACKWELL_COMPUTE_B", "HOPPER_COMPUTE_A", "ADA_COMPUTE_A", "AMPERE_COMPUTE_B", "AMPERE_COMPUTE_A"),
    "copy": ("BLACKWELL_DMA_COPY_B", "HOPPER_DMA_COPY_A", "AMPERE_DMA_COPY_B", "AMPERE_DMA_COPY_A"),
}
GR_INFO = ("SM_VERSION", "LITTER_NUM_GPCS", "LITTER_NUM_TPC_PER_GPC", "LITTER_NUM_SM_PER_TPC", "MAX_WARPS_PER_SM")


def sm_arch(version: int) -> str:
    """NV2080_CTRL_GR_INFO_SM_VERSION_<major>_<minor> (0x806, 0x900, 0xc00) -> sm_86, sm_90, sm_120."""
    minor = version & 0xFF
    return f"sm_{version >> 8}{minor if minor < 0x10 else minor >> 4}"


def release_of(hal: HAL, ctl: int) -> str:
    """The driver's release string (NV_ESC_CHECK_VERSION_STR in QUERY mode, on /dev/nvidiactl)."""
    query = version_query()
    try:
        hal.ioctl(ctl, request(0xD2, ctypes.sizeof(query)), query)  # NV_ESC_CHECK_VERSION_STR, every release
    except OSError as e:
        raise DriverError("NV_ESC_CHECK_VERSION_STR", e.errno or 0, e.strerror or "") from None
    return query.versionString.decode(errors="replace")


def open_control(hal: HAL, path: str = "/dev/nvidiactl") -> int:
    try:
        return hal.open(path)
    except OSError as e:
        raise DriverError(f"open {path}", e.errno or 0, "is the nvidia kernel module loaded, and may you open its "
                                                        "device files?") from None


def cards(hal: HAL, ctl: int, abi: ABI) -> list:
    """The GPUs the driver knows (NV_ESC_CARD_INFO): their nv_ioctl_card_info_t, in minor order."""
    infos = (abi.uvm.nv_ioctl_card_info_t * MAX_CARDS)()
    try:
        hal.ioctl(ctl, request(abi.uvm.NV_ESC_CARD_INFO, ctypes.sizeof(infos)), infos)
    except OSError as e:
        raise DriverError("NV_ESC_CARD_INFO", e.errno or 0, e.strerror or "") from None
    return [c for c in infos if c.valid]


@dataclass
class NVMemory(Memory):
    """A memory object of the RM, mapped for the CPU and this GPU at va; owner is the driver it was made by."""

    owner: object = None


class NV:
    """One GPU of the NVIDIA driver, opened for this process."""

    def __init__(self, hal: HAL, index: int = 0):
        self.hal = hal
        self.client = self.uvm = None
        self._fds: list[int] = []
        self.ctl = self._keep(open_control(hal))
        try:
            self._open(index)
        except BaseException:
            self.close()
            raise

    def _keep(self, fd: int) -> int:
        """A descriptor closed with the driver."""
        self._fds.append(fd)
        return fd

    def _open(self, index: int) -> None:
        hal = self.hal
        self.release = release_of(hal, self.ctl)
        self.abi = for_release(self.release)
        self.rm_module = rm = self.abi.rm
        found = cards(hal, self.ctl, self.abi)
        if index >= len(found):
            raise DeviceNotFound(f"NVIDIA GPU {index}: the driver ({self.release}) has {len(found)} GPUs")
        self.card = found[index]
        self.client = RM(hal, self.abi, self.ctl)
        self.uvm = UVM(hal, self.abi)
        self._keep(self.uvm.fd)
        self.uvm.call(self.abi.uvm.UVM_INITIALIZE, flags=0)
        self._uvm_mm()
        self.gpu_fd = self._keep(self._gpu_fd())
        info = self.client.control(self.client.root, rm.NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2,
                                   rm.NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS(gpuId=self.card.gpu_id))
        self.device = self.alloc_object(self.client.root, rm.NV01_DEVICE_0, rm.NV0080_ALLOC_PARAMETERS(
            deviceId=info.deviceInstance, hClientShare=self.client.root,
            vaMode=rm.NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES))
        self.subdevice = self.alloc_object(self.device, rm.NV20_SUBDEVICE_0, rm.NV2080_ALLOC_PARAMETERS())
        self.virtual = self.alloc_object(self.device, rm.NV01_MEMORY_VIRTUAL,
                                         rm.NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS(limit=VA_LIMIT))
        self.classes = self._class_list()
        self.class_ids = {role: self._pick(role) for role in ROLES}
        self.gr = dict(zip(GR_INFO, self._gr_info(), strict=True))
        self.arch = sm_arch(self.gr["SM_VERSION"])
        self.name = self._name()
        self.uuid = self._uuid()
        self.doorbell = self._usermode()
        self.vaspace = self.alloc_object(self.device, rm.FERMI_VASPACE_A, rm.NV_VASPACE_ALLOCATION_PARAMETERS(
            vaBase=VASPACE[0], vaSize=VASPACE[1], flags=rm.NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING |
            rm.NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED))
        uuid = self.abi.uvm.struct_nv_uuid(uuid=(ctypes.c_ubyte * 16)(*self.uuid))
        self.uvm_uuid = uuid
        self.uvm.call(self.abi.uvm.UVM_REGISTER_GPU, gpu_uuid=uuid, rmCtrlFd=-1)
        self.uvm.call(self.abi.uvm.UVM_REGISTER_GPU_VASPACE, gpuUuid=uuid, rmCtrlFd=self.ctl,
                      hClient=self.client.root, hVaSpace=self.vaspace)
        self.memory_size = self._memory_size()
        self._imports = 0

    # ---- opening ---------------------------------------------------------------------------------------------
    def _uvm_mm(self) -> None:
        """UVM_MM_INITIALIZE on a second UVM descriptor, as CUDA does; the driver may refuse it (CUDA goes on)."""
        fd = self.hal.open("/dev/nvidia-uvm")
        try:
            self.uvm.call(self.abi.uvm.UVM_MM_INITIALIZE, fd=fd, uvmFd=self.uvm.fd)
        except (RMError, DriverError):
            self.hal.close(fd)
        else:
            self._keep(fd)

    def _gpu_fd(self) -> int:
        """A descriptor of this GPU's device file, registered with the control descriptor (NV_ESC_REGISTER_FD)."""
        path = f"/dev/nvidia{self.card.minor_number}"
        try:
            fd = self.hal.open(path)
        except OSError as e:
            raise DriverError(f"open {path}", e.errno or 0, e.strerror or "") from None
        reg = self.abi.uvm.nv_ioctl_register_fd_t(ctl_fd=self.ctl)
        self.client.escape(fd, self.abi.uvm.NV_ESC_REGISTER_FD, reg)
        return fd

    def alloc_object(self, parent: int, cls: int, params: ctypes.Structure | None = None) -> int:
        return self.client.alloc(parent, cls, params)

    def _class_list(self) -> set[int]:
        rm = self.rm_module
        count = self.client.control(self.device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST,
                                    rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=0)).numClasses
        ids = (ctypes.c_uint32 * count)()
        self.client.control(self.device, rm.NV0080_CTRL_CMD_GPU_GET_CLASSLIST,
                            rm.NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS(numClasses=count, classList=address(ids)))
        return set(ids)

    def _pick(self, role: str) -> int:
        from usergpu.autogen import nv_classes

        ids = {name: getattr(self.rm_module, name, nv_classes.BLACKWELL_CLASSES.get(name)) for name in ROLES[role]}
        found = next((v for v in ids.values() if v in self.classes), None)
        if found is None:
            raise DeviceNotFound(f"the GPU offers none of the {role} classes usergpu drives ({', '.join(ids)}); "
                                 f"it offers {', '.join(f'{c:#x}' for c in sorted(self.classes))}")
        return found

    def _gr_info(self) -> list[int]:
        rm = self.rm_module
        infos = (rm.NV2080_CTRL_GR_INFO * len(GR_INFO))(
            *(rm.NV2080_CTRL_GR_INFO(index=getattr(rm, f"NV2080_CTRL_GR_INFO_INDEX_{n}")) for n in GR_INFO))
        self.client.control(self.subdevice, rm.NV2080_CTRL_CMD_GR_GET_INFO, rm.NV2080_CTRL_GR_GET_INFO_PARAMS(
            grInfoListSize=len(GR_INFO), grInfoList=address(infos)))
        return [i.data for i in infos]

    def _name(self) -> str:
        rm = self.rm_module
        got = self.client.control(self.subdevice, rm.NV2080_CTRL_CMD_GPU_GET_NAME_STRING,
                                  rm.NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS(
                                      gpuNameStringFlags=rm.NV2080_CTRL_GPU_GET_NAME_STRING_FLAGS_TYPE_ASCII))
        return bytes(got.gpuNameString.ascii).split(b"\0")[0].decode(errors="replace")

    def _uuid(self) -> bytes:
        rm = self.rm_module
        got = self.client.control(self.subdevice, rm.NV2080_CTRL_CMD_GPU_GET_GID_INFO,
                                  rm.NV2080_CTRL_GPU_GET_GID_INFO_PARAMS(
                                      flags=rm.NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY, length=16))
        return bytes(got.data[:16])

    def _memory_size(self) -> int:
        """Bytes of video memory (NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE, which the RM gives in KiB)."""
        rm = self.rm_module
        params = rm.NV2080_CTRL_FB_GET_INFO_V2_PARAMS(fbInfoListSize=1)
        params.fbInfoList[0].index = rm.NV2080_CTRL_FB_INFO_INDEX_RAM_SIZE
        self.client.control(self.subdevice, rm.NV2080_CTRL_CMD_FB_GET_INFO_V2, params)
        return params.fbInfoList[0].data << 10

    def _usermode(self) -> MMIO:
        """The usermode page (its class under the subdevice), mapped: the doorbell a channel is rung through."""
        self.usermode = self.alloc_object(self.subdevice, self.class_ids["usermode"])
        fd = self._gpu_fd()
        try:
            self.client.map_memory(self.device, self.usermode, USERMODE_SIZE, fd)
            return self.hal.mmio(fd, USERMODE_SIZE, 0)
        finally:
            self.hal.close(fd)

    # ---- memory ----------------------------------------------------------------------------------------------
    def alloc(self, size: int, kind: str = "vram") -> NVMemory:
        """Memory of a kind (vram: video memory; gtt: system memory the GPU reaches over PCIe), mapped for the CPU
        and the GPU at one address."""
        rm = self.rm_module
        if kind not in ("vram", "gtt"):
            raise DriverError(f"alloc {kind}", 0, "NVIDIA memory is vram or gtt")
        size = page_align(max(size, 1))
        vram = kind == "vram"
        params = rm.NV_MEMORY_ALLOCATION_PARAMS(
            owner=self.client.root, type=rm.NVOS32_TYPE_IMAGE if vram else rm.NVOS32_TYPE_NOTIFIER, format=6,
            size=size, alignment=4096, limit=size - 1,
            attr=rm.NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS << ATTR_PHYSICALITY |
            (0 if vram else rm.NVOS32_ATTR_LOCATION_PCI << ATTR_LOCATION),
            attr2=(rm.NVOS32_ATTR2_GPU_CACHEABLE_YES if vram else rm.NVOS32_ATTR2_GPU_CACHEABLE_NO)
            << ATTR2_GPU_CACHEABLE | rm.NVOS32_ATTR2_ZBC_PREFER_NO_ZBC,
            flags=rm.NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED | rm.NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED |
            rm.NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE | rm.NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT |
            (rm.NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM if vram else 0))
        handle = self.alloc_object(self.device, rm.NV01_MEMORY_LOCAL_USER if vram else rm.NV01_MEMORY_SYSTEM, params)
        va = reserve(self.hal, size)
        mem = NVMemory(va, size, handle, kind, owner=self)
        try:
            fd = self._gpu_fd() if vram else open_control(self.hal)
            try:
                self.client.map_memory(self.device, handle, size, fd)
                self.hal.mmap(fd, size, 0, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, va)
            finally:
                self.hal.close(fd)
            self._map_gpu(mem)
        except (DriverError, OSError):
            self.free(mem, mapped=False)
            raise
        return mem

    def map(self, mem: Memory) -> None:
        """Map memory into this GPU's address space at its address (the CPU's): its own, or another GPU's, whose
        CPU pages become an OS-descriptor object of this client (as a foreign runtime's host memory would)."""
        if getattr(mem, "owner", self) is not self:
            rm = self.rm_module
            self._imports += 1
            handle = self.client.alloc_os_memory(
                self.gpu_fd, self.device, IMPORTED | self._imports, rm.NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, mem.va,
                mem.size, rm.NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS << OS02_PHYSICALITY |
                rm.NVOS02_FLAGS_COHERENCY_CACHED << OS02_COHERENCY | rm.NVOS02_FLAGS_MAPPING_NO_MAP << OS02_MAPPING)
            mem = NVMemory(mem.va, mem.size, handle, "imported", owner=self)
        self._map_gpu(mem)

    def _map_gpu(self, mem: Memory) -> None:
        rm, uvm = self.rm_module, self.abi.uvm
        self.uvm.call(uvm.UVM_CREATE_EXTERNAL_RANGE, base=mem.va, length=mem.size)
        self.client.map_dma(self.device, self.virtual, mem.handle, mem.va, mem.size,
                            rm.NVOS46_FLAGS_PAGE_SIZE_4KB << DMA_PAGE_SIZE |
                            rm.NVOS46_FLAGS_CACHE_SNOOP_ENABLE << DMA_CACHE_SNOOP |
                            rm.NVOS46_FLAGS_DMA_OFFSET_FIXED_TRUE << DMA_OFFSET_FIXED)
        params = uvm.UVM_MAP_EXTERNAL_ALLOCATION_PARAMS(base=mem.va, length=mem.size, rmCtrlFd=self.ctl,
                                                        hClient=self.client.root, hMemory=mem.handle,
                                                        gpuAttributesCount=1)
        params.perGpuAttributes[0].gpuUuid = self.uvm_uuid
        params.perGpuAttributes[0].gpuMappingType = 1  # UvmGpuMappingTypeReadWriteAtomic
        self.uvm.call_with(uvm.UVM_MAP_EXTERNAL_ALLOCATION, params)

    def free(self, mem: Memory, mapped: bool = True) -> None:
        """Unmap a memory object from the GPU and the CPU and free it."""
        try:
            if mapped:  # from 590 UVM_FREE names the range by its base alone
                sized = any(name == "length" for name, *_ in self.abi.uvm.UVM_FREE_PARAMS._fields_)
                self.uvm.call(self.abi.uvm.UVM_FREE, base=mem.va, **({"length": mem.size} if sized else {}))
            self.client.free(mem.handle, self.device)
        finally:
            unreserve(self.hal, mem.va, mem.size)

    # ---- channels --------------------------------------------------------------------------------------------
    def create_channels(self, entries: int) -> Channels:
        """A channel group with a compute channel and a copy channel of `entries` GPFIFO entries each, scheduled."""
        return Channels.create(self, entries)

    def destroy_channels(self, channels: Channels) -> None:
        channels.destroy(self)

    def ring(self, channel: Channel) -> None:
        """Tell the GPU the channel has work: its work-submit token at NOTIFY_CHANNEL_PENDING."""
        self.doorbell[0x90 // 4] = channel.token

    def mmu_faults(self, debugger: int) -> list[tuple[int, int, int]]:
        """(address, fault type, access type) of the MMU faults the RM recorded for the debugger's context, the
        newest last."""
        rm = self.rm_module
        got = self.client.control(debugger, rm.NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO,
                                  rm.NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS())
        return [(f.faultAddress, f.faultType, f.accessType) for f in got.mmuFaultInfoList[:got.count]]

    def close(self) -> None:
        """Free the client (and every object under it), then the descriptors."""
        try:
            if self.client is not None and self.client.root:
                self.client.free(self.client.root)
        finally:
            for fd in reversed(self._fds):
                self.hal.close(fd)
            self._fds = []
