"""Which generated bindings speak to a driver release: the RM and UVM modules of its ABI. The release is asked
first (NV_ESC_CHECK_VERSION_STR in QUERY mode, whose 72-byte struct every release shares), because the other
structs change size between releases and a wrong layout would be copied silently."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from types import ModuleType

from usergpu.autogen import nv_uvm_535
from usergpu.errors import DriverError

# ABI -> the releases whose headers the bindings were made from (autogen/generator/toolchain.NV_RELEASES)
SUPPORTED = {"535": "535.261.03", "555": "555.58.02"}
IOC_TYPE = ord("F")


@dataclass(frozen=True)
class ABI:
    """One driver ABI: its release string, the RM module and the UVM/device-file module."""

    release: str
    rm: ModuleType
    uvm: ModuleType

    @property
    def name(self) -> str:
        return self.release.split(".")[0]


def request(nr: int, size: int) -> int:
    """An escape's ioctl number: _IOWR('F', nr, size), as nvidia.ko decodes it."""
    return (3 << 30) | (size << 16) | (IOC_TYPE << 8) | nr


def version_query():
    """The CHECK_VERSION_STR struct in QUERY mode (the same in every release)."""
    return nv_uvm_535.nv_ioctl_rm_api_version_t(cmd=nv_uvm_535.NV_RM_API_VERSION_CMD_QUERY)


@cache
def for_release(release: str) -> ABI:
    """The bindings of a release (e.g. '535.261.03'); DriverError naming it and the supported ones if none."""
    major = release.split(".")[0]
    if major not in SUPPORTED:
        have = ", ".join(f"{v} (ABI {k})" for k, v in SUPPORTED.items())
        raise DriverError("NV_ESC_CHECK_VERSION_STR", 0, f"the NVIDIA driver is release {release}, which usergpu "
                                                         f"has no bindings for; it supports {have}")
    return ABI(release, *(importlib.import_module(f"usergpu.autogen.nv_{kind}_{major}") for kind in ("rm", "uvm")))


@cache
def names(module: ModuleType, infix: str) -> dict[int, str]:
    """value -> the first name a module gives it among names containing infix ('_CTRL_CMD_', class ids...)."""
    out: dict[int, str] = {}
    for name, value in vars(module).items():
        if infix in name and isinstance(value, int) and not name.endswith("_PARAMS"):
            out.setdefault(value, name)
    return out
