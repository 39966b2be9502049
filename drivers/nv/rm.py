"""The RM client: NVIDIA's resource manager through the escapes of /dev/nvidiactl (NV_ESC_RM_ALLOC, FREE, CONTROL,
MAP_MEMORY, MAP_MEMORY_DMA) and /dev/nvidiaN (REGISTER_FD, ALLOC_MEMORY). An escape that the kernel refuses is a
DriverError with its errno; one the RM refuses answers in its status field, an RMError naming the escape, the
class or control command and the NV_STATUS."""

from __future__ import annotations

import ctypes

from usergpu.drivers.hal import HAL
from usergpu.drivers.nv.abi import ABI, names, request
from usergpu.errors import DriverError, RMError


def address(obj: ctypes._CData | None) -> int:
    """A ctypes object's address for a pointer field (0 for none)."""
    return 0 if obj is None else ctypes.addressof(obj)


class RM:
    """A root client of the RM, its escapes made on the control descriptor."""

    def __init__(self, hal: HAL, abi: ABI, ctl: int):
        self.hal, self.abi, self.ctl = hal, abi, ctl
        self.rm = abi.rm
        self.root = 0
        self.root = self.alloc(0, self.rm.NV01_ROOT_CLIENT)

    # ---- the ioctl and the status ----------------------------------------------------------------------------
    def escape(self, fd: int, nr: int, arg: ctypes.Structure | ctypes.Array, what: str = "") -> None:
        """One escape: _IOWR('F', nr) with the struct's size; DriverError with the errno if the kernel refuses."""
        name = names(self.abi.uvm, "NV_ESC_").get(nr) if nr >= self.abi.uvm.NV_IOCTL_BASE else \
            names(self.rm, "NV_ESC_RM_").get(nr)
        try:
            self.hal.ioctl(fd, request(nr, ctypes.sizeof(arg)), arg)
        except OSError as e:
            raise DriverError(f"{name or f'escape {nr:#x}'}{' ' + what if what else ''}", e.errno or 0,
                              e.strerror or "") from None

    def check(self, what: str, status: int) -> None:
        """RMError unless the RM answered NV_OK."""
        if status:
            name, message = self.rm.NV_STATUS_NAMES.get(status, (f"NV_STATUS {status:#x}", ""))
            raise RMError(what, status, name, message)

    def class_name(self, cls: int) -> str:
        return names(self.rm, "").get(cls, f"class {cls:#x}") if cls else "class 0"

    # ---- objects ---------------------------------------------------------------------------------------------
    def alloc(self, parent: int, cls: int, params: ctypes.Structure | None = None, handle: int = 0) -> int:
        """An object of a class under parent (NV_ESC_RM_ALLOC, NVOS21) with its allocation parameters; its handle
        (the RM picks one unless handle is given)."""
        made = self.rm.NVOS21_PARAMETERS(hRoot=self.root or handle, hObjectParent=parent, hObjectNew=handle,
                                         hClass=cls, pAllocParms=address(params),
                                         paramsSize=ctypes.sizeof(params) if params is not None else 0)
        what = f"{self.class_name(cls)} under {parent:#x}"
        self.escape(self.ctl, self.rm.NV_ESC_RM_ALLOC, made, what)
        self.check(f"NV_ESC_RM_ALLOC {what}", made.status)
        return made.hObjectNew

    def free(self, handle: int, parent: int = 0) -> None:
        """Free an object and everything under it (NV_ESC_RM_FREE)."""
        made = self.rm.NVOS00_PARAMETERS(hRoot=self.root, hObjectParent=parent, hObjectOld=handle)
        self.escape(self.ctl, self.rm.NV_ESC_RM_FREE, made, f"of {handle:#x}")
        self.check(f"NV_ESC_RM_FREE of {handle:#x}", made.status)

    def control(self, obj: int, cmd: int, params: ctypes.Structure | None = None):
        """A control command on an object (NV_ESC_RM_CONTROL, NVOS54) with its params, which come back filled."""
        made = self.rm.NVOS54_PARAMETERS(hClient=self.root, hObject=obj, cmd=cmd, params=address(params),
                                         paramsSize=ctypes.sizeof(params) if params is not None else 0)
        what = names(self.rm, "_CTRL_CMD_").get(cmd, f"control {cmd:#x}")
        self.escape(self.ctl, self.rm.NV_ESC_RM_CONTROL, made, what)
        self.check(f"NV_ESC_RM_CONTROL {what} on {obj:#x}", made.status)
        return params

    # ---- memory ----------------------------------------------------------------------------------------------
    def alloc_os_memory(self, fd: int, device: int, handle: int, cls: int, pointer: int, size: int,
                        flags: int) -> int:
        """Memory of this process's pages (NV_ESC_RM_ALLOC_MEMORY on a GPU's descriptor, NVOS02)."""
        made = self.rm.nv_ioctl_nvos02_parameters_with_fd(
            params=self.rm.NVOS02_PARAMETERS(hRoot=self.root, hObjectParent=device, hObjectNew=handle, hClass=cls,
                                             flags=flags, pMemory=pointer, limit=size - 1), fd=-1)
        what = f"{self.class_name(cls)} of {size:#x} bytes at {pointer:#x}"
        self.escape(fd, self.rm.NV_ESC_RM_ALLOC_MEMORY, made, what)
        self.check(f"NV_ESC_RM_ALLOC_MEMORY {what}", made.params.status)
        return made.params.hObjectNew

    def map_memory(self, device: int, memory: int, size: int, fd: int, flags: int = 0) -> None:
        """Make memory mappable by the CPU through fd (NV_ESC_RM_MAP_MEMORY): its mmap then maps the pages."""
        made = self.rm.nv_ioctl_nvos33_parameters_with_fd(
            params=self.rm.NVOS33_PARAMETERS(hClient=self.root, hDevice=device, hMemory=memory, length=size,
                                             flags=flags), fd=fd)
        self.escape(self.ctl, self.rm.NV_ESC_RM_MAP_MEMORY, made, f"of {memory:#x}")
        self.check(f"NV_ESC_RM_MAP_MEMORY of {memory:#x}", made.params.status)

    def map_dma(self, device: int, virtual: int, memory: int, va: int, size: int, flags: int) -> None:
        """Map memory into a GPU address space at va (NV_ESC_RM_MAP_MEMORY_DMA, DMA_OFFSET_FIXED)."""
        made = self.rm.NVOS46_PARAMETERS(hClient=self.root, hDevice=device, hDma=virtual, hMemory=memory,
                                         length=size, flags=flags, dmaOffset=va)
        what = f"of {memory:#x} at {va:#x}"
        self.escape(self.ctl, self.rm.NV_ESC_RM_MAP_MEMORY_DMA, made, what)
        self.check(f"NV_ESC_RM_MAP_MEMORY_DMA {what}", made.status)
        if made.dmaOffset != va:
            raise DriverError(f"NV_ESC_RM_MAP_MEMORY_DMA {what}", 0, f"the RM placed it at {made.dmaOffset:#x}")

    def unmap_dma(self, device: int, virtual: int, memory: int, va: int) -> None:
        made = self.rm.NVOS47_PARAMETERS(hClient=self.root, hDevice=device, hDma=virtual, hMemory=memory,
                                         dmaOffset=va)
        self.escape(self.ctl, self.rm.NV_ESC_RM_UNMAP_MEMORY_DMA, made, f"of {memory:#x} at {va:#x}")
        self.check(f"NV_ESC_RM_UNMAP_MEMORY_DMA of {memory:#x} at {va:#x}", made.status)
