"""The `usergpu` command: usergpu [--debug] {devices} ...; usergpu --version."""

from __future__ import annotations

import argparse
import json
import sys

from tabulate import tabulate

import usergpu
from usergpu.drivers import devices
from usergpu.drivers.hal import HAL
from usergpu.tools import demo, disasm, prof, run
from usergpu.tools.common import Parser, guarded


def cmd_devices(args: argparse.Namespace, hal: HAL) -> int:
    if getattr(args, "mock", False):  # the mock machine of MOCKGPU_ARCH / MOCKGPU_COUNT, found as real ones are
        from usergpu.runtime.device import mock_hal

        hal = mock_hal()
    gpus = devices.find(hal)
    if args.json:
        print(json.dumps({"devices": [g.as_dict() for g in gpus], "mock_interfaces": list(devices.MOCK_INTERFACES)},
                         indent=2))
        return 0
    if gpus:
        rows = [[g.pci, g.vendor, f"{g.vendor_id:04x}:{g.device_id:04x}", g.driver or "-", g.arch or "-",
                 "-" if g.kfd_node is None else g.kfd_node] for g in gpus]
        print(tabulate(rows, headers=["pci", "vendor", "id", "kernel driver", "arch", "kfd node"]))
    else:
        print("no AMD or NVIDIA GPU found on the PCI bus")
    print(f"mock interfaces: {', '.join(devices.MOCK_INTERFACES) or 'none in this version'}")
    return 0


def parser() -> argparse.ArgumentParser:
    ap = Parser(prog="usergpu", description="Drive, emulate and inspect AMD and NVIDIA GPUs.")
    ap.add_argument("--version", action="version", version=f"usergpu {usergpu.__version__}")
    ap.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("devices", help="list the GPUs found and the mock interfaces available")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--mock", action="store_true", help="list the mock GPUs (MOCKGPU_ARCH, MOCKGPU_COUNT) instead")
    p.set_defaults(run=cmd_devices)
    p = sub.add_parser("disasm", help="disassemble a code object's kernels, or raw bytes with --hex")
    p.add_argument("file", nargs="?", help="an AMDGPU ELF code object")
    p.add_argument("--kernel", help="only this kernel")
    p.add_argument("--arch", help="the ISA of --hex bytes (gfx1100, gfx1200, gfx942, gfx950)")
    p.add_argument("--hex", help='raw instruction bytes, e.g. "7e 00 82 be"')
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=lambda args, hal: disasm.run(args))
    p = sub.add_parser("run", help="run a kernel (OpenCL source or code object) and summarise its outputs",
                       description=run.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_kernel_arguments(p)
    p.add_argument("--dev", default="emu", help="where to run: emu (the bare emulator), MOCKKFD+AMD[:N], KFD+AMD[:N]")
    p.add_argument("--save", help="write each output buffer as DIR/outN.npy")
    p.set_defaults(run=lambda args, hal: run.run(args))
    p = sub.add_parser("demo", help="kernels compiled, run on a (mock) GPU, checked and traced; then the GPUs found "
                                    "and a kernel disassembled for each known ISA")
    p.add_argument("--dev", default=demo.DEVICE, help=f"where to run the showcase (default {demo.DEVICE})")
    p.add_argument("--trace", default=demo.TRACE, help=f"write a Chrome/Perfetto trace here (default {demo.TRACE})")
    p.set_defaults(run=lambda args, hal: demo.run(args, hal, cmd_devices))
    prof.add_parser(sub)
    from usergpu.tools import am_smi

    am_smi.add_parser(sub)
    return ap


def main(argv: list[str] | None = None, hal: HAL | None = None) -> int:
    args = parser().parse_args(argv)
    return guarded(args, lambda: args.run(args, hal or HAL()))


if __name__ == "__main__":
    sys.exit(main())
