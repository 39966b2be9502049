"""am_smi: watch the AMD GPUs AM drives (found by their lock files), where amd-smi cannot: no kernel driver is
loaded. Per board: name and bus, PCI power state, SMU firmware, GFX and memory activity, clocks, temperatures,
power and its limit, fan, voltage, throttle reasons, VRAM used/total and the owning process.

  am_smi [--dev BUS] [--list | --watch [SECONDS] [--iterations N] [--watch_time SECONDS] | --pids [--kill]]
         [--json] [--mock]

--json prints any of them machine-readable: one JSON object, and with --watch one per line and refresh, flushed
as it is printed (as `amd-smi metric --watch N --json` does). A watch runs until ^C unless --iterations or
--watch_time (amd-smi's names) end it. --mock (or DEV=MOCKPCI+AMD) watches the mock boards of MOCKPCI_DIR, as
another process drives them."""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import signal
import sys
import time
from collections.abc import Iterator

from tabulate import tabulate

from usergpu.drivers.amd.am import lock
from usergpu.drivers.devices import PCI_DEVICES
from usergpu.drivers.hal import HAL
from usergpu.errors import DeviceNotFound, Error
from usergpu.tools.common import Parser, guarded, pci_address, positive, seconds

COLUMNS = ("bus", "name", "power", "smu", "gfx % (per XCC)", "mem %", "clocks MHz gfx/mem/fclk", "temp C edge/hot/mem",
           "power W", "fan rpm", "gfx mV", "throttle", "VRAM MiB", "pid (command)")
# options that only mean something with another: (option, the one it needs)
NEEDS = (("kill", "pids"), ("iterations", "watch"), ("watch_time", "watch"))


def board_address(text: str) -> str:
    """A PCI address, or a remote board's (remote:HOST:PORT:N) as usergpu devices lists it (argparse type)."""
    return text.strip() if text.strip().startswith("remote:") else pci_address(text)


def hals(args: argparse.Namespace) -> list[HAL]:
    """This machine, or with --mock the mock machines of MOCKPCI_DIR (there must be one)."""
    if args.mock or os.environ.get("DEV", "").upper().startswith("MOCKPCI"):
        from usergpu.emu.amd.mock.pci.machine import machine, machines, root

        found = machines()
        if not found:
            raise DeviceNotFound(f"no mock board under MOCKPCI_DIR ({root()}): a process makes one when it opens "
                                 "Device('MOCKPCI+AMD') with the same MOCKPCI_DIR")
        return [machine(directory=d) for d in found]
    return [HAL()]


def row(s: dict) -> list:
    owner = f"{s['pid']} ({s['command'][:40]})" if s["pid"] else "-"
    if "smu_version" not in s:
        return [s["bus"], s["name"], s["power_state"]] + ["-"] * (len(COLUMNS) - 4) + [owner]
    v = {k: "-" if x is None else x for k, x in s.items()}  # a sensor the board lacks (MI300X: edge, fan)
    gfx = v["gfx_activity"]
    if "xcc_activity" in s:  # CDNA: each XCC's too
        gfx = f"{gfx} ({' '.join(map(str, s['xcc_activity']))})"
    return [v["bus"], v["name"], v["power_state"], v["smu_version"], gfx, v["memory_activity"],
            f"{v['gfx_clock']}/{v['memory_clock']}/{v['fabric_clock']}",
            f"{v['edge_temperature']}/{v['hotspot_temperature']}/{v['memory_temperature']}",
            f"{v['power']}/{v['power_limit']}", v["fan_rpm"], v["gfx_voltage"],
            ",".join(s["throttle_reasons"]) or "-", f"{s['vram_used'] >> 20}/{s['vram_total'] >> 20}", owner]


def where(machines: list[HAL], path: str) -> str:
    """path on each machine, as the user finds it."""
    return ", ".join(str(hal.root / path.lstrip("/")) for hal in machines)


def states(args: argparse.Namespace, machines: list[HAL]) -> list[dict]:
    """The state of each board to show: the one --dev names, or those AM drives."""
    from usergpu.drivers.amd.am import smi  # its register maps take a while to load: only when a board is read

    if args.dev and args.dev.startswith("remote:"):
        shown = [(machines[0], args.dev)]
    elif args.dev:
        shown = [(hal, args.dev) for hal in machines if hal.exists(f"{PCI_DEVICES}/{args.dev}")][:1]
        if not shown:
            raise DeviceNotFound(f"no PCI function {args.dev} in {where(machines, PCI_DEVICES)}")
    else:
        shown = [(hal, o.bus) for hal in machines for o in lock.held(hal)]
        shown += [(hal, bus) for hal in machines for bus in remote_boards(hal) if (hal, bus) not in shown]
        if not shown:
            raise DeviceNotFound(f"no GPU is driven by AM (no lock held in {where(machines, lock.LOCK_DIR)}); "
                                 "--dev BUS shows one anyway")
    return [smi.status(hal, bus) for hal, bus in shown]


def remote_boards(hal: HAL) -> list[str]:
    """The addresses of the AMD boards the remote servers of REMOTE export (each probed on a connection closed
    at once, so that no board is kept from its driver)."""
    from usergpu.drivers.remote.client import Link, probe

    out = []
    for address in hal.remote_servers():
        link = Link(address)
        try:
            out += [f.name for f in probe(link, 0x1002)]
        finally:
            link.close()
    return out


def owners(args: argparse.Namespace, machines: list[HAL]) -> list[dict]:
    """The processes that drive the boards (--dev: that one's); with --kill each is sent SIGTERM."""
    out = []
    for o in (o for hal in machines for o in lock.held(hal) if not args.dev or o.bus == args.dev):
        entry = {"bus": o.bus, "pid": o.pid or None, "command": o.command}
        if args.kill:
            if not o.pid:  # a lock held but its pid never written: nothing to signal (os.kill(0) is our group)
                raise Error(f"{o.bus}: the lock is held but names no process, so none can be stopped")
            try:
                os.kill(o.pid, signal.SIGTERM)
            except OSError as e:
                raise Error(f"{o.bus}: cannot stop pid {o.pid} ({o.command}): {e.strerror}") from None
            entry["signal"] = "SIGTERM"
        out.append(entry)
    return out


def refreshes(args: argparse.Namespace) -> Iterator[int]:
    """The refreshes of a watch, paced every --watch seconds: --iterations of them, as many as fit in
    --watch_time, or on until ^C."""
    deadline = time.monotonic() + (args.watch_time or math.inf)
    for n in itertools.count(1):
        yield n
        if n == args.iterations or time.monotonic() + args.watch > deadline:
            return
        time.sleep(args.watch)


def table(found: list[dict]) -> str:
    return tabulate([row(s) for s in found], headers=COLUMNS)


def pids_text(found: list[dict]) -> str:
    lines = [f"{o['bus']}  pid {o['pid']}  {o['command']}" + (f"\n{o['bus']}  sent {o['signal']} to {o['pid']}"
                                                             if "signal" in o else "") for o in found]
    return "\n".join(lines) or "no process drives an AMD GPU with AM"


def run(args: argparse.Namespace) -> int:
    machines = hals(args)
    if args.pids:
        found = owners(args, machines)
        print(json.dumps({"processes": found}, indent=2) if args.json else pids_text(found))
        return 0
    if args.watch is None:
        found = states(args, machines)
        print(json.dumps({"boards": found}, indent=2) if args.json else table(found))
        return 0
    try:
        for _ in refreshes(args):
            found = states(args, machines)
            if args.json:  # one line per refresh, so a reader can take each as it comes
                print(json.dumps({"timestamp": round(time.time(), 3), "boards": found}), flush=True)
            else:
                print("\x1b[H\x1b[2J" + time.strftime("%H:%M:%S  am_smi\n") + table(found), flush=True)
    except KeyboardInterrupt:  # ^C is how a watch without an end is stopped
        pass
    return 0


def parser() -> argparse.ArgumentParser:
    ap = Parser(prog="am_smi", description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", metavar="BUS", type=board_address, help="only this board (PCI address, e.g. "
                    "0000:03:00.0, or a remote one's remote:HOST:PORT:N)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--list", action="store_true", help="print the boards once (the default)")
    mode.add_argument("-w", "--watch", nargs="?", type=seconds, const=1.0, metavar="SECONDS",
                      help="reprint every SECONDS (default 1) until ^C, --iterations or --watch_time")
    mode.add_argument("--pids", action="store_true", help="list the processes that drive the boards")
    ap.add_argument("-i", "--iterations", type=positive, metavar="N", help="with --watch: stop after N refreshes")
    ap.add_argument("-W", "--watch_time", type=seconds, metavar="SECONDS",
                    help="with --watch: stop once SECONDS have passed")
    ap.add_argument("--json", action="store_true", help="machine-readable output (with --watch: a line per refresh)")
    ap.add_argument("--kill", action="store_true", help="with --pids: stop those processes (SIGTERM)")
    ap.add_argument("--mock", action="store_true", help="the mock boards of MOCKPCI_DIR (also DEV=MOCKPCI+AMD)")
    ap.add_argument("--debug", action="store_true", help="show the traceback of an error")
    return ap


def checked(ap: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """args, once each option that needs another has it (else a usage error, exit 2)."""
    for option, needed in NEEDS:
        if getattr(args, option) not in (None, False) and getattr(args, needed) in (None, False):
            ap.error(f"--{option} needs --{needed}")
    return args


def add_parser(sub) -> None:
    """`usergpu smi`: the same options."""
    p = sub.add_parser("smi", help="watch the GPUs AM drives (am_smi)", parents=[parser()], add_help=False,
                       conflict_handler="resolve")
    p.set_defaults(run=lambda args, hal: run(checked(p, args)))


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = checked(ap, ap.parse_args(argv))
    return guarded(args, lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
