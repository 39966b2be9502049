"""usergpu devices: the AMD and NVIDIA GPUs on the PCI bus (or the mock machine's), and the mock interfaces."""

from __future__ import annotations

import argparse
import dataclasses
import json

from tabulate import tabulate

from usergpu.drivers import devices
from usergpu.drivers.hal import HAL
from usergpu.errors import DriverError, Error

RELEASE_WIDTH = 72  # the driver release column wraps here: a refusal names every branch usergpu binds


def run(args: argparse.Namespace, hal: HAL | None = None) -> int:
    mock = getattr(args, "mock", None)
    if mock:  # the mock machine of MOCKGPU_ARCH (nv: MOCKGPU_NV_ARCH) / MOCKGPU_COUNT, found as real GPUs are
        from usergpu.emu.mock import open_hal

        hal = open_hal("MOCK+NV" if mock == "nv" else "MOCKKFD+AMD")
    hal = hal or HAL()
    gpus = explain_undriven(hal, devices.find(hal))
    if getattr(args, "json", False):
        print(json.dumps({"devices": [g.as_dict() for g in gpus], "mock_interfaces": list(devices.MOCK_INTERFACES)},
                         indent=2))
        return 0
    if gpus:
        rows = [[g.pci, g.vendor, f"{g.vendor_id:04x}:{g.device_id:04x}", g.driver or "-", g.arch or "-",
                 "-" if g.kfd_node is None else g.kfd_node, g.model or "-",
                 "-" if g.memory is None else f"{g.memory / 2**30:.0f} GiB",
                 " ".join(filter(None, (g.release, g.bindings and f"({g.bindings})"))) or "-"] for g in gpus]
        print(tabulate(rows, headers=["pci", "vendor", "id", "kernel driver", "arch", "kfd node", "model", "memory",
                                      "driver release"], maxcolwidths=[None] * 8 + [RELEASE_WIDTH]))
    else:
        print("no AMD or NVIDIA GPU found on the PCI bus")
    print(f"mock interfaces: {', '.join(devices.MOCK_INTERFACES) or 'none in this version'}")
    return 0


def explain_undriven(hal: HAL, gpus: list[devices.GPU]) -> list[devices.GPU]:
    """The GPUs, those of the nvidia driver it could not describe given the release it reports and, as their
    bindings, why usergpu cannot drive it (a release it has no bindings for, a refused device file)."""
    if not any(g.driver == "nvidia" and g.release is None for g in gpus):
        return gpus
    release, why = nvidia_refusal(hal)
    return [dataclasses.replace(g, release=release, bindings=why) if g.driver == "nvidia" and g.release is None
            else g for g in gpus]


def nvidia_refusal(hal: HAL) -> tuple[str | None, str | None]:
    """The release the NVIDIA driver reports (NV_ESC_CHECK_VERSION_STR's QUERY, whose struct every release shares;
    None where even that fails) and why opening its first GPU fails, as `none: <the error>` (None: it opens)."""
    from usergpu.drivers.nv.gpu import NV, open_control, release_of

    release = None
    try:
        ctl = open_control(hal)
        try:
            release = release_of(hal, ctl)
        finally:
            hal.close(ctl)
        NV(hal, 0).close()  # picks the bindings of that release: the refusal and its facts come from there
    except Error as e:
        # where the driver answered (no errno), its detail says why without the request's name; an RMError has none
        detail = getattr(e, "detail", "") if isinstance(e, DriverError) and not e.errno else ""
        return release, f"none: {detail or e}"
    return release, None
