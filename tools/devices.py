"""usergpu devices: the AMD and NVIDIA GPUs on the PCI bus (or the mock machine's), and the mock interfaces."""

from __future__ import annotations

import argparse
import json

from tabulate import tabulate

from usergpu.drivers import devices
from usergpu.drivers.hal import HAL


def run(args: argparse.Namespace, hal: HAL | None = None) -> int:
    mock = getattr(args, "mock", None)
    if mock:  # the mock machine of MOCKGPU_ARCH (nv: MOCKGPU_NV_ARCH) / MOCKGPU_COUNT, found as real GPUs are
        from usergpu.emu.mock import open_hal

        hal = open_hal("MOCK+NV" if mock == "nv" else "MOCKKFD+AMD")
    gpus = devices.find(hal or HAL())
    if getattr(args, "json", False):
        print(json.dumps({"devices": [g.as_dict() for g in gpus], "mock_interfaces": list(devices.MOCK_INTERFACES)},
                         indent=2))
        return 0
    if gpus:
        rows = [[g.pci, g.vendor, f"{g.vendor_id:04x}:{g.device_id:04x}", g.driver or "-", g.arch or "-",
                 "-" if g.kfd_node is None else g.kfd_node, g.model or "-",
                 "-" if g.memory is None else f"{g.memory / 2**30:.0f} GiB",
                 f"{g.release} ({g.bindings})" if g.release else "-"] for g in gpus]
        print(tabulate(rows, headers=["pci", "vendor", "id", "kernel driver", "arch", "kfd node", "model", "memory",
                                      "driver release"]))
    else:
        print("no AMD or NVIDIA GPU found on the PCI bus")
    print(f"mock interfaces: {', '.join(devices.MOCK_INTERFACES) or 'none in this version'}")
    return 0
