"""The `usergpu` command: usergpu [--debug] {devices,disasm,run,demo,prof,smi,mock,serve} ...; usergpu --version.

It starts at once: only the subcommand given is defined in full, its module (which loads numpy, the runtime or
the ISA tables) imported then; the others are listed by name and help line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from usergpu import __version__
from usergpu.tools.common import Parser, guarded

if TYPE_CHECKING:
    from usergpu.drivers.hal import HAL


def _devices(sub) -> None:
    from usergpu.tools import devices

    p = sub.add_parser("devices", help=COMMANDS["devices"][0])
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--mock", nargs="?", const="amd", choices=("amd", "nv"),
                   help="list a mock machine's GPUs instead: amd (MOCKGPU_ARCH, MOCKGPU_COUNT; the default) or nv "
                        "(MOCKGPU_NV_ARCH, MOCKGPU_COUNT)")
    p.set_defaults(run=devices.run)


def _disasm(sub) -> None:
    from usergpu.tools import disasm

    disasm.add_parser(sub, COMMANDS["disasm"][0])


def _run(sub) -> None:
    from usergpu.tools import run

    run.add_parser(sub, COMMANDS["run"][0])


def _demo(sub) -> None:
    from usergpu.drivers.hal import HAL
    from usergpu.tools import demo, devices

    p = sub.add_parser("demo", help=COMMANDS["demo"][0])
    p.add_argument("--dev", default=demo.DEVICE, help=f"where to run the showcase (default {demo.DEVICE})")
    p.add_argument("--trace", default=demo.TRACE, help=f"write a Chrome/Perfetto trace here (default {demo.TRACE})")
    p.set_defaults(run=lambda args, hal: demo.run(args, hal or HAL(), devices.run))


def _prof(sub) -> None:
    from usergpu.tools import prof

    prof.add_parser(sub)


def _mock(sub) -> None:
    from usergpu.tools import mock

    mock.add_parser(sub, COMMANDS["mock"][0])


def _serve(sub) -> None:
    from usergpu.tools import serve

    serve.add_parser(sub, COMMANDS["serve"][0])


def _smi(sub) -> None:
    from usergpu.tools import am_smi

    am_smi.add_parser(sub)


# the subcommands as --help lists them: name -> (help line, what defines its arguments when it is the one given);
# prof and smi define themselves with the same help line (tests/tools/test_cli.py holds them to it)
COMMANDS: dict[str, tuple[str, Callable]] = {
    "devices": ("list the GPUs found and the mock interfaces available", _devices),
    "disasm": ("disassemble a code object's kernels, or raw bytes with --hex", _disasm),
    "run": ("run a kernel (OpenCL source or code object) and summarise its outputs", _run),
    "demo": ("kernels compiled, run on a (mock) GPU, checked and traced; then the GPUs found and a kernel "
             "disassembled for each known ISA", _demo),
    "prof": ("profile kernels (SQTT thread traces, PMC counters) and show captures", _prof),
    "smi": ("watch the GPUs AM drives (am_smi)", _smi),
    "mock": ("run a command (e.g. a tinygrad program) with usergpu's mock GPUs behind tinygrad's mock seam", _mock),
    "serve": ("export AMD GPUs (or a mock machine's boards) over TCP in tinygrad's remote PCI protocol", _serve),
}


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of a command line: the subcommand it names defined in full, the others by name and help line
    (the top-level options take no value, so the first word that is not an option names the subcommand)."""
    given = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)
    ap = Parser(prog="usergpu", description="Drive, emulate and inspect AMD and NVIDIA GPUs.")
    ap.add_argument("--version", action="version", version=f"usergpu {__version__}")
    ap.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = ap.add_subparsers(dest="command", required=True)
    for name, (line, define) in COMMANDS.items():
        if name == given:
            define(sub)
        else:
            sub.add_parser(name, help=line)
    return ap


def main(argv: list[str] | None = None, hal: HAL | None = None) -> int:
    """Run a command line; hal is the machine's by default."""
    args = parser(argv).parse_args(argv)
    return guarded(args, lambda: args.run(args, hal))


if __name__ == "__main__":
    sys.exit(main())
