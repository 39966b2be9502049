"""usergpu: drive, emulate and inspect AMD and NVIDIA GPUs from userspace.

The public API (DESIGN.md) grows here name by name as each part becomes real.
"""

from usergpu.emu.amd.codeobj import compile_opencl
from usergpu.errors import CodeObjectError, DecodeError, DeviceNotFound, DriverError, Error, GPUFault, GPUHang
from usergpu.runtime.device import Device
from usergpu.runtime.launch import launch

__version__ = "0.1.0"
__all__ = ["CodeObjectError", "DecodeError", "Device", "DeviceNotFound", "DriverError", "Error", "GPUFault", "GPUHang",
           "__version__", "compile_opencl", "launch"]
