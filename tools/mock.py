"""usergpu mock [--dev ..] [--arch ..] [--count N] -- CMD ARGS...: run a command (a tinygrad program, tinygrad's own
tests) with usergpu's mock machines behind the seam tinygrad offers for mocks. The command's Python finds
`test.mockgpu.mockgpu.MockFileIOInterface` (and `test.mockgpu.usb.MockUSB3`) as usergpu's through an import hook on
its PYTHONPATH (tools/mock_site/sitecustomize.py); DEV is set when absent, MOCKGPU_ARCH and MOCKGPU_COUNT from the
options (and MOCKGPU_PARTITION, a CDNA GPU's compute partitions). Nothing of the command is changed beyond that
seam. Where the options do not say, the machine is what tinygrad's own mock would give the same command: the arch DEV
names (DEV=MOCKKFD+AMD::gfx1201), six GPUs on MOCKKFD+AMD and MOCK+NV, an Ada (sm_89) on MOCK+NV.

MOCKPCI+AMD boards are register-level models; a driver in the command maps their BARs into its own memory as on a
real machine (tinygrad's AM, in its process): its register reads and writes are trapped and answered by the board at
once, its doorbells watched, and /proc/self/pagemap gives the physical addresses the boards' DMA reaches
(emu/amd/mock/pci/host.py). The boards are the command's own (a fresh MOCKPCI_DIR unless set), and so is TMPDIR,
where tinygrad locks a board by its bus address (every machine numbers its boards alike). With --remote instead,
`usergpu serve` exports the mock machine on a free loopback port and the command runs with DEV=PCI+AMD and REMOTE
pointing there (tinygrad's REMOTE door): every register, VRAM and system-memory access is a request the server
answers; it stops when the command ends. Either way the exit status is the command's, and first tinygrad's download
cache gets the Debian firmware blobs identical to those tinygrad pins (tools/tinygrad_cache.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from usergpu.autogen.generator.toolchain import LLVM
from usergpu.emu.amd.mock.cdna import PARTITIONS, PARTS
from usergpu.emu.mock import MAX_MOCK_GPUS
from usergpu.emu.mock.tinygrad.fileio import MACHINES, target_arch
from usergpu.emu.nv.mock.chips import CHIPS
from usergpu.errors import Error
from usergpu.tools.common import BadArgument, ranged

SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mock_site")
DEVICES = tuple(k for k in MACHINES if k != "MOCK+AMD")
USB_ARCHS = ("gfx1100", "gfx1200")  # the mock USB boards' GPUs (MOCKUSB: RDNA cards behind a USB4 bridge)
ARCHS = USB_ARCHS + ("gfx1201",) + tuple(PARTS)  # the mock KFD's (Navi48 too) and the PCI boards': the CDNA parts
NV_ARCHS = tuple(CHIPS)  # MOCK+NV's chips
# the LLVM tinygrad's LLVM renderer loads (its LLVM_PATH): the project's llvm-22, which tinygrad's own search
# (libLLVM.so[.N], then LLVM-21 down to -14) passes over for Debian's older libLLVM-15
LIBLLVM = f"/usr/lib/llvm-{LLVM}/lib/libLLVM.so"


def _device(text: str) -> str:
    if text.upper() not in DEVICES:
        raise BadArgument(f"{text!r}: the mocks are {', '.join(DEVICES)}")
    return text.upper()


def _arch(text: str) -> str:
    if text not in ARCHS + NV_ARCHS:
        raise BadArgument(f"{text!r}: the mock GPUs are {', '.join(ARCHS + NV_ARCHS)}")
    return text


def _partition(text: str) -> str:
    if text.lower() not in PARTITIONS:
        raise BadArgument(f"{text!r}: a CDNA GPU partitions as {' or '.join(PARTITIONS)}")
    return text.lower()


def add_parser(sub, help_line: str) -> None:
    p = sub.add_parser("mock", help=help_line, description=__doc__.split("\n\n")[0],
                       usage="usergpu mock [--dev DEV] [--arch ARCH] [--count N] [--partition spx|cpx] "
                             "[--release R] [--remote] -- CMD [ARGS ...]")
    p.add_argument("--dev", type=_device, help=f"the mock interface, one of {', '.join(DEVICES)} (default: $DEV, "
                                                 "else MOCKKFD+AMD)")
    p.add_argument("--arch", type=_arch, help=f"the mock GPUs' arch, {' or '.join(ARCHS)} (MOCKGPU_ARCH); on "
                   f"MOCK+NV {' or '.join(NV_ARCHS)} (MOCKGPU_NV_ARCH)")
    p.add_argument("--release", help="MOCK+NV's driver release, any of a branch usergpu binds (MOCKGPU_NV_RELEASE; "
                   "default the newest bound)")
    p.add_argument("--count", type=ranged(1, MAX_MOCK_GPUS, "a GPU count"), help="how many GPUs (MOCKGPU_COUNT)")
    p.add_argument("--partition", type=_partition, help="a CDNA GPU's compute partitions: spx (one node of all "
                   "its XCCs, the default) or cpx (a node per XCC) (MOCKGPU_PARTITION)")
    p.add_argument("--remote", action="store_true", help="MOCKPCI+AMD through `usergpu serve` and tinygrad's REMOTE "
                   "(DEV=PCI+AMD) instead of in the command's process")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    p.set_defaults(run=run)


def environment(args: argparse.Namespace, env: dict[str, str]) -> dict[str, str]:
    """The command's environment: the hook first on its PYTHONPATH, DEV, MOCKGPU_ARCH / MOCKGPU_COUNT, MOCKGPU,
    LLVM_PATH (the ones not given kept from env)."""
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join([SITE, *filter(None, [env.get("PYTHONPATH")])])
    env["DEV"] = args.dev or env.get("DEV") or "MOCKKFD+AMD"
    env.setdefault("MOCKGPU", "1")  # what tinygrad's tests read to skip what no mock does
    env.setdefault("USERGPU_EMU_BACKGROUND", "1")  # a suite's many brief kernels run on the reference, uncompiled
    if os.path.exists(LIBLLVM):
        env.setdefault("LLVM_PATH", LIBLLVM)
    interface = env["DEV"].split(":")[0]  # DEV may name a renderer after the interface (MOCKKFD+AMD:LLVM)
    nv = interface.endswith("+NV")
    named = target_arch(env["DEV"])  # tinygrad's way to pick a mock's GPU: DEV=MOCKKFD+AMD::gfx1201
    if named is not None and args.arch is not None and named != args.arch:
        raise Error(f"mock: DEV {env['DEV']} names {named}, --arch {args.arch}")
    arch = args.arch or named
    if arch is not None and (arch in NV_ARCHS) != nv or args.release and not nv:
        raise Error(f"mock: {interface} runs {', '.join(NV_ARCHS if nv else ARCHS)}; --release is MOCK+NV's")
    if interface == "MOCKUSB+AMD" and (arch or env.get("MOCKGPU_ARCH", "gfx1100")) not in USB_ARCHS:
        raise Error(f"mock: {interface} models {', '.join(USB_ARCHS)} boards; the CDNA parts run on MOCKKFD+AMD "
                    "and MOCKPCI+AMD")
    for name, value in (("MOCKGPU_NV_ARCH" if nv else "MOCKGPU_ARCH", arch), ("MOCKGPU_COUNT", args.count),
                        ("MOCKGPU_PARTITION", args.partition), ("MOCKGPU_NV_RELEASE", args.release)):
        if value is not None:
            env[name] = str(value)
    return env


def run(args: argparse.Namespace, hal=None) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise Error("mock: no command given (usergpu mock [options] -- CMD ARGS...)")
    if shutil.which(command[0]) is None:
        raise Error(f"mock: {command[0]}: command not found")
    env = environment(args, dict(os.environ))
    sys.stdout.flush()
    sys.stderr.flush()
    interface = env["DEV"].split(":")[0]
    if args.remote and interface != "MOCKPCI+AMD":
        raise Error(f"mock: --remote is MOCKPCI+AMD's; {interface} runs in the command's process")
    if interface == "MOCKPCI+AMD":
        _seed_firmware()
        with tempfile.TemporaryDirectory(prefix="usergpu-mock-pci-") as boards:
            env = env | {"MOCKPCI_DIR": env.get("MOCKPCI_DIR", boards)}
            if args.remote:
                return remote(command, env)
            scratch = os.path.join(env["MOCKPCI_DIR"], "tmp")  # the machine's /tmp: a driver's lock files name
            os.makedirs(scratch, exist_ok=True)                # its boards, which every machine numbers alike
            return subprocess.run(command, env=env | {"TMPDIR": scratch}).returncode
    os.execvpe(command[0], command, env)


def _seed_firmware() -> None:
    """tinygrad's AM fetches firmware: Debian's identical blobs go into its download cache first."""
    from usergpu.tools import tinygrad_cache

    seeded = tinygrad_cache.seed()
    if seeded.placed or seeded.differ or seeded.missing:
        print(f"usergpu mock: {len(seeded.placed)} of tinygrad's pinned firmware blobs in its cache from Debian's "
              f"firmware-amd-graphics; {len(seeded.differ)} differ from the pins, {len(seeded.missing)} are not there",
              file=sys.stderr)


def remote(command: list[str], env: dict[str, str]) -> int:
    """Run command against `usergpu serve --dev MOCKPCI+AMD` (its boards in env's MOCKPCI_DIR) on a free loopback
    port (DEV=PCI+AMD, REMOTE set); the command's exit status."""
    server = subprocess.Popen([sys.executable, "-m", "usergpu.tools.cli", "serve", "--dev", "MOCKPCI+AMD",
                               "--listen", "127.0.0.1:0", "--json"], env=env, stderr=subprocess.PIPE,
                              text=True)
    try:
        first = json.loads(server.stderr.readline() or "{}")
        if first.get("event") != "listening":
            raise Error(f"mock: usergpu serve did not start ({first.get('error') or server.wait()})")
        threading.Thread(target=_forward_errors, args=(server.stderr,), daemon=True).start()
        dev = "PCI+AMD" + env["DEV"][len("MOCKPCI+AMD"):]
        child = subprocess.run(command, env=env | {"DEV": dev, "REMOTE": first["address"]})
        return child.returncode
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait()


def _forward_errors(stream) -> None:
    """The server's lines after the first that are not its JSON status lines (an error) go to stderr."""
    for line in stream:
        if not line.startswith("{"):
            sys.stderr.write(line)
