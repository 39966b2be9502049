"""The seam between drivers and the OS: every file, sysfs, ioctl, mmap and MMIO access of a driver goes through a
HAL. `HAL` is the real one (usergpu/seam.py, the interface below both sides); `MockHAL` (emu/amd/mock/hal.py) routes
the same calls for the device files a mock installs to that device model. Drivers take both, and the memory and
mapping names they use, from here; the runtime picks one by the device string."""

from usergpu.emu.amd.mock.hal import MockHAL
from usergpu.hostmem import (
    MAP_ANONYMOUS,
    MAP_FIXED,
    MAP_NORESERVE,
    MAP_PRIVATE,
    MAP_SHARED,
    MMIO,
    PROT_NONE,
    PROT_READ,
    PROT_WRITE,
    view,
)
from usergpu.seam import HAL

__all__ = ["HAL", "MAP_ANONYMOUS", "MAP_FIXED", "MAP_NORESERVE", "MAP_PRIVATE", "MAP_SHARED", "MMIO", "MockHAL",
           "PROT_NONE", "PROT_READ", "PROT_WRITE", "view"]
