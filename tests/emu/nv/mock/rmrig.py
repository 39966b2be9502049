"""Test helpers for the mock NVIDIA driver: a fresh mock machine behind its own MockHAL, and the RM escapes and UVM
ioctls made as a driver makes them, with the generated structs of the machine's release."""

from __future__ import annotations

import ctypes

from usergpu.emu.mock.hal import MockHAL
from usergpu.emu.nv.mock import chips
from usergpu.emu.nv.mock.machine import DEFAULT_RELEASE, NVMachine
from usergpu.hostmem import MAP_ANONYMOUS, MAP_PRIVATE, PROT_READ, PROT_WRITE, os_mmap

PAGE = 4096
ATTR_LOCATION_PCI = 1 << 25  # NVOS32_ATTR_LOCATION 26:25 = PCI
OS02_OSDESC = 1 << 30 | 1 << 12  # NVOS02_FLAGS_MAPPING_NO_MAP, NVOS02_FLAGS_COHERENCY_CACHED (LOCATION_PCI is 0)
DMA_FIXED = 1 << 15  # NVOS46_FLAGS_DMA_OFFSET_FIXED_TRUE


def request(nr: int, size: int) -> int:
    """_IOWR('F', nr, size), as libnvidia and tinygrad make an escape's request."""
    return (3 << 30) | (size << 16) | (ord("F") << 8) | nr


def address(obj) -> int:
    return 0 if obj is None else ctypes.addressof(obj)


def anonymous(size: int) -> int:
    """Fresh process pages (the caller's memory an OS descriptor names)."""
    return os_mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)


class RMRig:
    """A mock machine with /dev/nvidiactl and /dev/nvidia0 open."""

    def __init__(self, tmp_path, arch: str = "sm_90", count: int = 1, release: str = DEFAULT_RELEASE):
        self.hal = MockHAL(tmp_path)
        self.m = NVMachine(self.hal, arch, count, release)
        self.hal.nv = self.m
        self.rm, self.u = self.m.rm, self.m.uvm
        self.ctl = self.hal.open("/dev/nvidiactl")
        self.dev = self.hal.open("/dev/nvidia0")
        self.client = 0

    # ---- escapes -----------------------------------------------------------------------------------------------
    def escape(self, fd: int, nr: int, struct, size: int | None = None):
        self.hal.ioctl(fd, request(nr, ctypes.sizeof(struct) if size is None else size), struct)
        return struct

    def alloc(self, parent: int, cls: int, params=None, handle: int = 0, client: int | None = None):
        """NV_ESC_RM_ALLOC (NVOS21); the struct back."""
        a = self.rm.NVOS21_PARAMETERS(hRoot=self.client if client is None else client, hObjectParent=parent,
                                      hObjectNew=handle, hClass=cls, pAllocParms=address(params),
                                      paramsSize=0 if params is None else ctypes.sizeof(params))
        return self.escape(self.ctl, self.rm.NV_ESC_RM_ALLOC, a)

    def make(self, parent: int, cls: int, params=None, handle: int = 0) -> int:
        a = self.alloc(parent, cls, params, handle)
        assert a.status == 0, self.rm.NV_STATUS_NAMES[a.status]
        return a.hObjectNew

    def free(self, handle: int, client: int | None = None) -> int:
        a = self.rm.NVOS00_PARAMETERS(hRoot=self.client if client is None else client, hObjectOld=handle)
        return self.escape(self.ctl, self.rm.NV_ESC_RM_FREE, a).status

    def control(self, obj: int, cmd: int, params=None, size: int | None = None, client: int | None = None):
        """NV_ESC_RM_CONTROL (NVOS54); the struct back."""
        a = self.rm.NVOS54_PARAMETERS(hClient=self.client if client is None else client, hObject=obj, cmd=cmd,
                                      params=address(params),
                                      paramsSize=(0 if params is None else ctypes.sizeof(params)) if size is None
                                      else size)
        return self.escape(self.ctl, self.rm.NV_ESC_RM_CONTROL, a)

    # ---- the usual objects -------------------------------------------------------------------------------------
    def open_client(self) -> int:
        self.client = self.make(0, self.rm.NV01_ROOT_CLIENT)
        return self.client

    def open_device(self, index: int = 0) -> tuple[int, int]:
        """A client (if none yet), a device and its subdevice of GPU index."""
        rm = self.rm
        if not self.client:
            self.open_client()
        device = self.make(self.client, rm.NV01_DEVICE_0, rm.NV0080_ALLOC_PARAMETERS(deviceId=index))
        return device, self.make(device, rm.NV20_SUBDEVICE_0, rm.NV2080_ALLOC_PARAMETERS())

    def memory_params(self, size: int, vidmem: bool = True):
        return self.rm.NV_MEMORY_ALLOCATION_PARAMS(owner=self.client or 1, size=size,
                                                   attr=0 if vidmem else ATTR_LOCATION_PCI)

    def memory(self, device: int, size: int, vidmem: bool = True) -> int:
        cls = self.rm.NV01_MEMORY_LOCAL_USER if vidmem else self.rm.NV01_MEMORY_SYSTEM
        return self.make(device, cls, self.memory_params(size, vidmem))

    def map_memory(self, device: int, memory: int, length: int, fd: int, offset: int = 0):
        """NV_ESC_RM_MAP_MEMORY onto fd; the struct back."""
        rm = self.rm
        made = rm.nv_ioctl_nvos33_parameters_with_fd(
            params=rm.NVOS33_PARAMETERS(hClient=self.client, hDevice=device, hMemory=memory, offset=offset,
                                        length=length), fd=fd)
        return self.escape(self.ctl, rm.NV_ESC_RM_MAP_MEMORY, made)

    def cpu_map(self, device: int, memory: int, size: int, vidmem: bool = True) -> int:
        """The memory mapped for the CPU as a driver maps it (a fresh descriptor, MAP_MEMORY, mmap); its address."""
        fd = self.hal.open("/dev/nvidia0" if vidmem else "/dev/nvidiactl")
        try:
            assert self.map_memory(device, memory, size, fd).params.status == 0
            return self.hal.mmap(fd, size)
        finally:
            self.hal.close(fd)

    def uuid(self, index: int = 0):
        return self.u.struct_nv_uuid(uuid=(ctypes.c_ubyte * 16)(*chips.uuid(index)))
