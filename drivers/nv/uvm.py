"""UVM (/dev/nvidia-uvm): the GPU address space shared with the CPU. Its requests are the UVM_* numbers
themselves; the params carry the NV_STATUS in rmStatus."""

from __future__ import annotations

import ctypes
from functools import cache
from types import ModuleType

from usergpu.drivers.hal import HAL
from usergpu.drivers.nv.abi import ABI
from usergpu.errors import DriverError, RMError


@cache
def requests(module: ModuleType) -> dict[int, str]:
    """UVM request number -> its name (the one whose UVM_<name>_PARAMS the table pairs with it)."""
    return {value: name for name, value in vars(module).items()
            if isinstance(value, int) and value in module.UVM_PARAMS and
            module.UVM_PARAMS[value].__name__ in (f"{name}_PARAMS", f"struct_{name}_PARAMS")}


class UVM:
    def __init__(self, hal: HAL, abi: ABI, path: str = "/dev/nvidia-uvm"):
        self.hal, self.abi, self.uvm = hal, abi, abi.uvm
        try:
            self.fd = hal.open(path)
        except OSError as e:
            raise DriverError(f"open {path}", e.errno or 0, "is nvidia-uvm loaded?") from None

    def call(self, request: int, fd: int | None = None, **fields) -> ctypes.Structure:
        """A UVM request with its params set from keywords; the params after. RMError names the request."""
        return self.call_with(request, self.uvm.UVM_PARAMS[request](**fields), fd)

    def call_with(self, request: int, params: ctypes.Structure, fd: int | None = None) -> ctypes.Structure:
        """A UVM request with params made by the caller."""
        name = requests(self.uvm).get(request, f"UVM request {request}")
        try:
            self.hal.ioctl(self.fd if fd is None else fd, request, params)
        except OSError as e:
            raise DriverError(name, e.errno or 0, e.strerror or "") from None
        if params.rmStatus:
            status, message = self.uvm.NV_STATUS_NAMES.get(params.rmStatus, (f"NV_STATUS {params.rmStatus:#x}", ""))
            raise RMError(name, params.rmStatus, status, message)
        return params
