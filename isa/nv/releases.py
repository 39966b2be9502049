"""Which generated bindings speak to an NVIDIA driver release, for the driver and its mock alike: the RM and UVM
modules nv_releases records for it (autogen/generator/nvrm.py binds one release per branch, and releases whose
bound layouts agree share a module). A release of a bound branch that is not the bound release uses its branch's
bindings: NVIDIA keeps a branch's ABI within it (the RM checks a client's version string up to the first '.', as
NV_RM_API_VERSION_CMD_RELAXED does), and the choice says so. Any other branch is refused, naming those bound."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from types import ModuleType

from usergpu.autogen import nv_releases
from usergpu.errors import DriverError

BRANCHES = {release.split(".")[0]: release for release in nv_releases.RELEASES}  # branch -> the release bound


def _version(release: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in release.split("."))
    except ValueError:
        raise DriverError("NV_ESC_CHECK_VERSION_STR", 0, f"the NVIDIA driver reports release {release!r}, which "
                                                         "is no release number") from None


@dataclass(frozen=True)
class Bindings:
    """What speaks to one release: the release bound for its branch and that release's RM and UVM modules."""

    release: str  # the driver's
    bound: str  # the release the modules were generated from
    rm: ModuleType
    uvm: ModuleType

    @property
    def name(self) -> str:
        """The ABI of the RM module (its first release's branch)."""
        return self.rm.__name__.rsplit("_", 1)[1]

    @property
    def modules(self) -> str:
        return f"{self.rm.__name__.rsplit('.', 1)[1]} + {self.uvm.__name__.rsplit('.', 1)[1]}"

    @property
    def note(self) -> str:
        """Empty for the bound release; else which release's bindings it uses and why."""
        if self.release == self.bound:
            return ""
        side = "newer" if _version(self.release) > _version(self.bound) else "older"
        branch = self.bound.split(".")[0]
        return f"{self.release} is {side} than {self.bound}, the release bound for branch {branch}: it speaks its ABI"

    @property
    def used(self) -> str:
        """The modules in use and, where they are not the release's own, why."""
        return f"bindings {self.modules}{'; ' + self.note if self.note else ''}"

    def describe(self) -> str:
        """The release and the modules in use, as `usergpu devices` and hwcheck print them."""
        return f"{self.release} ({self.used})"


@cache
def bindings(release: str) -> Bindings:
    """The bindings of a release (e.g. '570.86.15'); DriverError naming it and the bound branches if none."""
    _version(release)
    bound = BRANCHES.get(release.split(".")[0])
    if bound is None:
        raise DriverError("NV_ESC_CHECK_VERSION_STR", 0, f"the NVIDIA driver is release {release}, of a branch usergpu "
                                                         f"has no bindings for; it binds branches "
                                                         f"{', '.join(f'{b} ({r})' for b, r in BRANCHES.items())}")
    rm, uvm = nv_releases.RELEASES[bound]
    return Bindings(release, bound, *(importlib.import_module(f"usergpu.autogen.nv_{kind}_{abi}")
                                      for kind, abi in (("rm", rm), ("uvm", uvm))))
