"""usergpu serve [--listen ADDR:PORT] [--allow CIDR ...] [--dev PCI+AMD|MOCKPCI+AMD] [--json]: export AMD GPUs
(this machine's, through sysfs or VFIO; or a mock machine's boards) to remote clients in tinygrad's remote PCI
protocol (`REMOTE=host:port DEV=PCI+AMD` on the client). It listens on 127.0.0.1:6667 unless told; another address
needs an --allow list of the networks clients may come from. SIGINT or SIGTERM stop it."""

from __future__ import annotations

import argparse
import ipaddress
import os
import signal
import socket
import threading

from usergpu.drivers.remote.protocol import DEFAULT_PORT
from usergpu.errors import Error
from usergpu.tools.common import BadArgument

DEVICES = ("PCI+AMD", "MOCKPCI+AMD")
LOOPBACK = ["127.0.0.0/8", "::1/128"]


def _listen(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise BadArgument(f"{text!r}: --listen takes ADDRESS:PORT (127.0.0.1:{DEFAULT_PORT})")
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise BadArgument(f"{text!r}: {host!r} is no IP address") from None
    return host.strip("[]"), int(port)


def _network(text: str) -> str:
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        raise BadArgument(f"{text!r}: --allow takes a network (10.0.0.0/8) or an address") from None


def _device(text: str) -> str:
    if text.upper() not in DEVICES:
        raise BadArgument(f"{text!r}: serve exports {' or '.join(DEVICES)}")
    return text.upper()


def add_parser(sub, help_line: str) -> None:
    p = sub.add_parser("serve", help=help_line, description=__doc__.split("\n\n")[0],
                       usage="usergpu serve [--listen ADDR:PORT] [--allow CIDR ...] [--dev PCI+AMD|MOCKPCI+AMD] "
                             "[--json]")
    p.add_argument("--listen", type=_listen, default=("127.0.0.1", DEFAULT_PORT),
                   help=f"the address and port to listen on (default 127.0.0.1:{DEFAULT_PORT})")
    p.add_argument("--allow", type=_network, action="append", default=[],
                   help="a network clients may connect from (repeatable; default loopback only)")
    p.add_argument("--dev", type=_device, default="PCI+AMD", help="this machine's AMD GPUs (PCI+AMD, the default) or "
                   "a mock machine's boards (MOCKPCI+AMD: MOCKGPU_ARCH, MOCKGPU_COUNT)")
    p.add_argument("--json", action="store_true", help="status lines as JSON (on stderr)")
    p.set_defaults(run=run)


def boards(dev: str):
    """(HAL, the functions exported): a function bound to vfio-pci through VFIO (system memory for its DMA)."""
    from usergpu.drivers.amd.am.driver import amd_gpus
    from usergpu.drivers.hal import HAL
    from usergpu.drivers.vfio import VFIOPCIDevice, bound_to_vfio

    if dev == "MOCKPCI+AMD":
        from usergpu.emu.mock import open_hal

        os.environ.setdefault("MOCKPCI_VFIO", "1")  # the mock boards' IOMMU maps the clients' system memory
        hal = open_hal(dev)
    else:
        hal = HAL()
    found = [VFIOPCIDevice(hal, f.name) if bound_to_vfio(hal, f.name) else f for f in amd_gpus(hal)]
    if not found:
        raise Error(f"serve: {dev} has no AMD GPU to export")
    return hal, found


def run(args: argparse.Namespace, hal=None) -> int:
    import json
    import sys

    from usergpu.drivers.remote.server import Server

    host, port = args.listen
    loopback = ipaddress.ip_address(host).is_loopback
    if not loopback and not args.allow:
        raise Error(f"serve: listening on {host} needs --allow with the networks clients may come from")
    hal, found = boards(args.dev)

    def log(event: dict) -> None:
        print(json.dumps(event) if args.json else "usergpu serve: " + ", ".join(f"{k} {v}" for k, v in event.items()),
              file=sys.stderr, flush=True)

    server = Server(hal, found, args.allow or LOOPBACK, log)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as e:
        raise Error(f"serve: cannot listen on {host}:{port}: {e.strerror}") from None
    listener.listen(16)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    log({"event": "listening", "address": f"{host}:{listener.getsockname()[1]}", "dev": args.dev,
         "boards": [f.name for f in found], "allow": args.allow or LOOPBACK})
    try:
        server.serve(listener, stop)
    finally:
        listener.close()
    log({"event": "stopped"})
    return 0
