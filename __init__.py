"""usergpu: drive, emulate and inspect AMD and NVIDIA GPUs from userspace.

The public API (DESIGN.md) grows here name by name as each part becomes real. Importing usergpu loads only the
errors: Device, launch and compile_opencl (and with them the runtime, the emulator and numpy) load on first use,
so that a command such as `usergpu --version` starts at once.
"""

from __future__ import annotations

import importlib

from usergpu.errors import (
    CodeObjectError,
    CompileError,
    DecodeError,
    DeviceNotFound,
    DriverError,
    Error,
    GPUFault,
    GPUHang,
    ToolchainError,
)

__version__ = "0.1.0"
__all__ = ["CodeObjectError", "CompileError", "DecodeError", "Device", "DeviceNotFound", "DriverError", "Error",
           "GPUFault", "GPUHang", "ToolchainError", "__version__", "assemble_ptx", "compile_cuda", "compile_opencl",
           "launch"]

# name -> the module that defines it, imported when the name is first used
_LAZY = {"Device": "usergpu.runtime.device", "launch": "usergpu.runtime.launch",
         "compile_opencl": "usergpu.isa.compile", "compile_cuda": "usergpu.isa.nv",
         "assemble_ptx": "usergpu.isa.nv"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'usergpu' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
