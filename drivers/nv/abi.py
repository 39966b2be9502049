"""Which generated bindings speak to a driver release: the RM and UVM modules of its ABI. The release is asked
first (NV_ESC_CHECK_VERSION_STR in QUERY mode, whose 72-byte struct every release shares), because the other
structs change size between releases and a wrong layout would be copied silently."""

from __future__ import annotations

from functools import cache
from types import ModuleType

from usergpu.autogen import nv_uvm_535
from usergpu.isa.nv.releases import Bindings as ABI
from usergpu.isa.nv.releases import bindings as for_release

__all__ = ["ABI", "for_release", "request", "version_query", "names"]
IOC_TYPE = ord("F")


def request(nr: int, size: int) -> int:
    """An escape's ioctl number: _IOWR('F', nr, size), as nvidia.ko decodes it."""
    return (3 << 30) | (size << 16) | (IOC_TYPE << 8) | nr


def version_query():
    """The CHECK_VERSION_STR struct in QUERY mode (the same in every release)."""
    return nv_uvm_535.nv_ioctl_rm_api_version_t(cmd=nv_uvm_535.NV_RM_API_VERSION_CMD_QUERY)


@cache
def names(module: ModuleType, infix: str) -> dict[int, str]:
    """value -> the first name a module gives it among names containing infix ('_CTRL_CMD_', class ids...)."""
    out: dict[int, str] = {}
    for name, value in vars(module).items():
        if infix in name and isinstance(value, int) and not name.endswith("_PARAMS"):
            out.setdefault(value, name)
    return out
