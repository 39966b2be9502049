"""am_smi: watch the AMD GPUs AM drives (found by their lock files), where amd-smi cannot: no kernel driver is
loaded. Per board: name and bus, PCI power state, SMU firmware, GFX and memory activity, clocks, temperatures,
power and its limit, fan, voltage, throttle reasons, VRAM used/total and the owning process.

  am_smi [--dev BUS] [--list | --watch [SECONDS] | --json] [--pids [--kill]] [--mock]

--mock (or DEV=MOCKPCI+AMD) watches the mock boards of MOCKPCI_DIR, as another process drives them."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

from tabulate import tabulate

from usergpu.drivers.amd.am import lock, smi
from usergpu.drivers.devices import PCI_DEVICES
from usergpu.drivers.hal import HAL
from usergpu.errors import DeviceNotFound
from usergpu.tools.common import Parser, guarded

COLUMNS = ("bus", "name", "power", "smu", "gfx %", "mem %", "clocks MHz gfx/mem/fclk", "temp C edge/hot/mem",
           "power W", "fan rpm", "gfx mV", "throttle", "VRAM MiB", "pid (command)")


def hals(args: argparse.Namespace) -> list[HAL]:
    """This machine, or with --mock the mock machines of MOCKPCI_DIR."""
    if args.mock or os.environ.get("DEV", "").upper().startswith("MOCKPCI"):
        from usergpu.emu.amd.mock.pci_machine import machine, machines

        return [machine(directory=d) for d in machines()]
    return [HAL()]


def row(s: dict) -> list:
    owner = f"{s['pid']} ({s['command'][:40]})" if s["pid"] else "-"
    if "smu_version" not in s:
        return [s["bus"], s["name"], s["power_state"]] + ["-"] * (len(COLUMNS) - 4) + [owner]
    return [s["bus"], s["name"], s["power_state"], s["smu_version"], s["gfx_activity"], s["memory_activity"],
            f"{s['gfx_clock']}/{s['memory_clock']}/{s['fabric_clock']}",
            f"{s['edge_temperature']}/{s['hotspot_temperature']}/{s['memory_temperature']}",
            f"{s['power']}/{s['power_limit']}", s["fan_rpm"], s["gfx_voltage"],
            ",".join(s["throttle_reasons"]) or "-", f"{s['vram_used'] >> 20}/{s['vram_total'] >> 20}", owner]


def boards(args: argparse.Namespace, machines: list[HAL]) -> list[tuple[HAL, str]]:
    """(machine, bus) of each board to show: the one --dev names, or those AM drives."""
    if args.dev:
        return [(hal, args.dev) for hal in machines if hal.exists(f"{PCI_DEVICES}/{args.dev}")][:1] or \
            [(machines[0] if machines else HAL(), args.dev)]
    return [(hal, o.bus) for hal in machines for o in lock.held(hal)]


def run(args: argparse.Namespace) -> int:
    machines = hals(args)
    if args.pids:
        owners = [o for hal in machines for o in lock.held(hal) if not args.dev or o.bus == args.dev]
        for o in owners:
            print(f"{o.bus}  pid {o.pid}  {o.command}")
            if args.kill:
                os.kill(o.pid, signal.SIGTERM)
                print(f"{o.bus}  sent SIGTERM to {o.pid}")
        if not owners:
            print("no process drives an AMD GPU with AM")
        return 0
    while True:
        shown = boards(args, machines)
        if not shown:
            raise DeviceNotFound("no GPU is driven by AM (no lock held in /tmp); --dev BUS shows one anyway")
        states = [smi.status(hal, bus) for hal, bus in shown]
        if args.json:
            print(json.dumps({"boards": states}, indent=2))
            return 0
        table = tabulate([row(s) for s in states], headers=COLUMNS)
        if args.watch is None:
            print(table)
            return 0
        sys.stdout.write("\x1b[H\x1b[2J" + time.strftime("%H:%M:%S  am_smi\n") + table + "\n")
        sys.stdout.flush()
        time.sleep(args.watch)


def parser() -> argparse.ArgumentParser:
    ap = Parser(prog="am_smi", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", metavar="BUS", help="only this board (PCI address, e.g. 0000:03:00.0)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="print the boards once (the default)")
    mode.add_argument("--watch", nargs="?", type=float, const=1.0, metavar="SECONDS",
                      help="refresh in place every SECONDS (default 1)")
    mode.add_argument("--json", action="store_true", help="print once, machine-readable")
    mode.add_argument("--pids", action="store_true", help="list the processes that drive the boards")
    ap.add_argument("--kill", action="store_true", help="with --pids: stop those processes (SIGTERM)")
    ap.add_argument("--mock", action="store_true", help="the mock boards of MOCKPCI_DIR (also DEV=MOCKPCI+AMD)")
    ap.add_argument("--debug", action="store_true", help="show the traceback of an error")
    return ap


def add_parser(sub) -> None:
    """`usergpu smi`: the same options."""
    p = sub.add_parser("smi", help="watch the GPUs AM drives (am_smi)", parents=[parser()], add_help=False,
                       conflict_handler="resolve")
    p.set_defaults(run=lambda args, hal: run(args))


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if args.kill and not args.pids:
        ap.error("--kill needs --pids")
    return guarded(args, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
