"""amdflash: read, verify and rescue the SPI flash of a Navi31 board, over native PCIe or an ASM24xx USB bridge.

`romless` drives the flash through the SMUIO software SPI engine (for a board whose firmware does not boot);
`fw` goes through the PSP boot firmware's mailbox (for a board whose firmware is up and owns the engine). Every
write needs --yes and reads back what it wrote; nothing resets or power-cycles the board. A write that stops part
way (a failure, a power loss, SIGINT or SIGTERM) says what is done and the command that resumes it.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tqdm import tqdm

from usergpu.drivers.amd.pspboot import PSPBoot, check_image, sha256
from usergpu.drivers.amd.romsw import ROMSW, SECTOR, SIZE, FlashError
from usergpu.drivers.amd.usb import ASM24, USBPCIDevice
from usergpu.drivers.hal import HAL
from usergpu.drivers.pci import PCIDevice, Registers, pci_devices
from usergpu.emu.mock import FLASH_BOARDS, open_hal  # the mock boards (machines load only when one is asked for)
from usergpu.errors import DeviceNotFound, Error
from usergpu.tools.common import Parser, guarded, input_file, output_file, ranged

NAVI31_IDS = (0x744C, 0x7448, 0x745E)  # RX 7900 XT/XTX/GRE, Radeon Pro W7900, W7800
SECTORS = SIZE // SECTOR
OVER = {"auto": "over PCI or USB", "pci": "over PCI", "usb": "over USB"}


class Interrupted(Error):
    """SIGINT or SIGTERM stopped the command. The exit status is 128 + the signal's number (130, 143), what a shell
    reports for a process the signal ended, so a script or supervisor sees an interruption, not a failure."""

    def __init__(self, signo: int):
        self.exit_status = 128 + signo
        super().__init__(f"interrupted by {signal.Signals(signo).name}")


class Stopped(FlashError):
    """A write that stopped part way: why (keeping an interruption's exit status), what is done, how to resume."""

    def __init__(self, cause: Error, done: str, resume: str):
        self.exit_status = getattr(cause, "exit_status", 1)
        super().__init__(f"{cause}; {done}: {resume}")


class Signals:
    """SIGINT and SIGTERM raise Interrupted while a command runs, so it ends as an expected failure (the mock's
    folder removed, a write saying where it stopped). Inside `deferred()` (a write) the first one waits for
    `check()`, called between sectors or items, so the one in progress ends whole; a second one stops at once.
    Once one has stopped the command, more are ignored: they would cut short the report of where it stopped."""

    def __init__(self):
        self.pending: int | None = None
        self.deferring = self.stopping = False
        self.saved: dict[int, object] = {}

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():  # only the main thread may set handlers
            self.saved = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:
        if self.stopping:  # the command is ending: a signal still on its way must not cut off its report (nor
            for s in self.saved:  # kill the interpreter as it exits, when CPython puts its own handlers back)
                signal.signal(s, signal.SIG_IGN)
            return
        for s, handler in self.saved.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)

    def _handle(self, signo: int, frame) -> None:
        if self.stopping:
            return
        if self.deferring and self.pending is None:
            self.pending = signo
        else:
            self._stop(signo)

    def check(self) -> None:
        if self.pending is not None:
            self._stop(self.pending)

    def _stop(self, signo: int) -> None:
        self.stopping = True
        raise Interrupted(signo)

    @contextmanager
    def deferred(self) -> Iterator[None]:
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = False


# ---- the board -----------------------------------------------------------------------------------------------------
def open_board(args: argparse.Namespace, hal: HAL) -> PCIDevice:
    """The board --device numbers, counting Navi31 PCI functions, then USB bridges. --dev names the mock board
    instead, reached the same way through a mock HAL."""
    transport, where = args.transport, OVER[args.transport]
    if args.dev:
        hal, transport, where = open_hal(args.dev, flash=True), FLASH_BOARDS[args.dev], f"on the mock {args.dev}"
    # by the ids sysfs keeps from enumeration, not config space: a board that stops answering keeps its number
    pci = sorted((d for i in NAVI31_IDS for d in pci_devices(hal, 0x1002, i)), key=lambda d: d.name) \
        if transport in ("auto", "pci") else []
    usb = usb_bridges(hal) if transport in ("auto", "usb") and len(pci) <= args.device else []
    if args.device >= len(pci) + len(usb):
        total = len(pci) + len(usb)
        hint = "" if total else ": check `lspci -d 1002:` or, for a USB enclosure, `lsusb` and the cable"
        raise DeviceNotFound(f"--device {args.device}: {total} Navi31 board{'' if total == 1 else 's'} {where} "
                             f"({len(pci)} PCI, {len(usb)} behind USB bridges), numbered from 0{hint}")
    return pci[args.device] if args.device < len(pci) else USBPCIDevice(usb[args.device - len(pci)])


def usb_bridges(hal: HAL) -> list[ASM24]:
    """Every ASM24xx bridge the HAL's USB shows (none where pyusb has no libusb)."""
    found: list[ASM24] = []
    while True:
        try:
            found.append(ASM24.find(hal, index=len(found)))
        except DeviceNotFound:
            return found


def progress(total: int, what: str) -> tqdm:
    return tqdm(total=total, desc=what, unit="B", unit_scale=True, file=sys.stderr, disable=None, leave=False)


def read_image(path: str) -> bytes:
    data = Path(path).read_bytes()
    if len(data) != SIZE:
        raise FlashError(f"{path}: {len(data)} bytes, a flash image is exactly {SIZE} bytes (2 MiB); nothing was "
                         f"written")
    return data


def need_yes(args: argparse.Namespace, what: str) -> None:
    if not args.yes:
        raise Error(f"{what} writes the board's SPI flash: add --yes to do it")


def command(args: argparse.Namespace, *words: str) -> str:
    """The amdflash command line that reaches the same board, then words, as a shell takes it."""
    where = ["--dev", args.dev] if args.dev else [] if args.transport == "auto" else ["--transport", args.transport]
    return shlex.join(["amdflash", *where, *(["--device", str(args.device)] if args.device else []), *words])


def romless_resume(args: argparse.Namespace, start: int, end: int = SECTORS) -> str:
    """`romless flash` of the image from sector start up to end (exclusive), with the options it ran with."""
    prescale = [] if getattr(args, "prescale", None) is None else ["--prescale", str(args.prescale)]
    count = [] if end == SECTORS else ["--sector-count", str(end - start)]
    cmp = ["--clear-cmp"] if getattr(args, "clear_cmp", False) else []
    return command(args, "romless", *prescale, "flash", args.image, "--start-sector", str(start), *count, *cmp,
                   "--yes")


# ---- romless: the software SPI engine ------------------------------------------------------------------------------
def romless(args: argparse.Namespace, hal: HAL, stop: Signals) -> int:
    if args.op == "flash":  # refuse bad requests before touching the board
        need_yes(args, "romless flash")
        image = read_image(args.image)
        end = SECTORS if args.sector_count is None else args.start_sector + args.sector_count
        if end > SECTORS:
            raise FlashError(f"sectors {args.start_sector}..{end - 1}: the flash has sectors 0..{SECTORS - 1}; "
                             f"nothing was written")
    board = open_board(args, hal)
    with ROMSW(board.map_bar(5), args.prescale) as spi:
        name, _ = spi.check_chip()
        if args.op == "info":
            print(f"board     {board.name}  {board.vendor_id:04x}:{board.device_id:04x}")
            print(f"flash     {name}, JEDEC id {spi.jedec_id().hex(' ').upper()}, {SIZE >> 20} MiB")
            print(f"status    {spi.status().describe()}")
            print(f"ROM_CNTL  {spi.rom_cntl:#010x}")
        elif args.op == "read":
            if args.address + args.size > SIZE:
                raise FlashError(f"read {args.address:#x}+{args.size:#x}: the flash is {SIZE:#x} bytes")
            data = spi.read(args.address, args.size)
            if args.output:
                Path(args.output).write_bytes(data)
            else:
                for at in range(0, len(data), 16):
                    print(f"{args.address + at:06x}  {data[at : at + 16].hex(' ')}")
            print(f"sha256 {sha256(data)}")
        elif args.op in ("dump", "verify"):
            with progress(SIZE, args.op) as bar:
                data = spi.read(0, SIZE, bar.update)
            if args.op == "dump":
                Path(args.file).write_bytes(data)
                print(f"{args.file}: {SIZE} bytes, sha256 {sha256(data)}")
            else:
                return verify(read_image(args.file), data)
        else:
            flash(spi, image, end, args, stop)
    return 0


def verify(image: bytes, data: bytes) -> int:
    print(f"flash sha256 {sha256(data)}\nimage sha256 {sha256(image)}")
    bad = [s for s in range(SECTORS) if data[s * SECTOR : (s + 1) * SECTOR] != image[s * SECTOR : (s + 1) * SECTOR]]
    if bad:
        raise FlashError(f"the flash differs from the image in {len(bad)} sectors, the first sector {bad[0]} at "
                         f"{bad[0] * SECTOR:#08x}")
    print("verified: the flash holds the image")
    return 0


def flash(spi: ROMSW, image: bytes, end: int, args: argparse.Namespace, stop: Signals) -> None:
    """Sectors start_sector..end-1, each skipped if it holds the image, else erased, programmed and read back."""
    spi.unprotect(args.clear_cmp)
    first = args.start_sector
    written, t0 = 0, time.monotonic()
    s = first
    with progress((end - first) * SECTOR, "flash") as bar, stop.deferred():
        try:  # around the whole loop: a second signal stops at once, wherever between two sectors it lands
            for s in range(first, end):
                stop.check()
                written += spi.flash_sector(s, image[s * SECTOR : (s + 1) * SECTOR])
                bar.update(SECTOR)
        except Error as e:
            done = f"sectors {first}..{s - 1} hold the image (each read back)" if s > first else \
                "no sector was finished"
            raise Stopped(e, done, f"resume with `{romless_resume(args, s, end)}`") from None
    print(f"sectors {first}..{end - 1}: {written} written, {end - first - written} already held the image, each "
          f"read back and verified ({time.monotonic() - t0:.1f} s)")


# ---- fw: the PSP boot mailbox --------------------------------------------------------------------------------------
def fw(args: argparse.Namespace, hal: HAL, stop: Signals) -> int:
    if args.op == "flash":
        raise Error("firmware-mediated writes other than ifwi-all are disabled: the mailbox's partial-update "
                    "sequencing is not public, and an item written out of order leaves a board that does not boot; "
                    "use `amdflash fw ifwi-all IMAGE --yes` or `amdflash romless flash`")
    if args.op == "ifwi-all":
        need_yes(args, "fw ifwi-all")
        image = read_image(args.image)
        check_image(image, args.image)
    board = open_board(args, hal)
    psp = PSPBoot(board.map_bar(5))
    if args.op == "probe":
        for name, cmd, error, response in psp.probe():
            print(f"{name:20} command {cmd:#04x}  error {error:#06x}  response {response:#010x}")
    elif args.op == "dump":
        with progress(SIZE, "dump") as bar:
            data = psp.dump(bar.update)
        Path(args.file).write_bytes(data)
        print(f"{args.file}: {SIZE} bytes, sha256 {sha256(data)}")
    else:
        items = ifwi_all(psp, board.map_bar(0), image, args, stop)
        print(f"ifwi-all: the firmware took {items} items of {args.image} (sha256 {sha256(image)}), each read back "
              f"and verified; a hard power cycle is required before it runs (power the board fully off, then on: "
              f"this tool does not)")
    return 0


def ifwi_all(psp: PSPBoot, vram: Registers, image: bytes, args: argparse.Namespace, stop: Signals) -> int:
    """The whole-image update, item by item, each read back; the count of items."""
    request = psp.ifwi_start()
    written: set[int] = set()  # sectors of the items that read back right
    count = 0
    try:
        with progress(SIZE, "ifwi-all") as bar, stop.deferred():
            for offset, size in psp.ifwi_items(image, vram, request, between=stop.check):
                written.update(range(offset // SECTOR, (offset + size) // SECTOR))
                count += 1
                bar.update(size)
    except Error as e:
        raise ifwi_stopped(e, args, written, count) from None
    return count


def ifwi_stopped(e: Error, args: argparse.Namespace, written: set[int], count: int) -> Stopped:
    """The firmware is left mid-transfer: only a power cycle ends it. Then the flash holds some items of the new
    image and the rest of the old one: with a firmware that no longer boots, the SPI engine is free to finish the
    job from the first sector not written; with one that boots, only a new update does."""
    todo = [s for s in range(SECTORS) if s not in written]
    redo = command(args, "fw", "ifwi-all", args.image, "--yes")
    if not todo:
        return Stopped(e, "every item is written and reads back right", "power the board fully off and on")
    done = f"{count} items are written and read back, sector {todo[0]} is the first not written" if count else \
        "no item was written"
    return Stopped(e, done, f"power the board fully off and on, then resume with `{romless_resume(args, todo[0])}` "
                            f"(if its firmware no longer boots) or redo `{redo}`")


def parser() -> argparse.ArgumentParser:
    sector = ranged(0, SECTORS - 1, "a sector of the flash")
    p = Parser(prog="amdflash", description=__doc__.splitlines()[0])
    p.add_argument("--transport", choices=("auto", "usb", "pci"), default="auto")
    p.add_argument("--device", type=ranged(0, None, "a board number"), default=0,
                   help="which board, counting PCI functions then USB bridges")
    p.add_argument("--dev", choices=FLASH_BOARDS, help="a mock board: MOCKUSB+AMD or MOCKPCI+AMD")
    p.add_argument("--debug", action="store_true", help="a traceback with errors")
    paths = p.add_subparsers(dest="path", required=True)
    raw = paths.add_parser("romless", help="the raw SPI path (ROM_SW engine)")
    raw.add_argument("--prescale", type=ranged(0, 15, "the SCK prescaler"),
                     help="SPI clock prescaler 0..15 (ROM_CNTL.SCK_PRESCALE_REFCLK)")
    raw.set_defaults(run=romless)
    ops = raw_ops = raw.add_subparsers(dest="op", required=True)
    ops.add_parser("info", help="the flash's id and status registers")
    read = ops.add_parser("read", help="bytes of the flash")
    read.add_argument("address", type=ranged(0, SIZE - 1, "an address in the flash"))
    read.add_argument("size", type=ranged(1, SIZE, "a size in bytes"))
    read.add_argument("-o", "--output", type=output_file)
    ops.add_parser("dump", help="the whole flash to a file").add_argument("file", type=output_file)
    ops.add_parser("verify", help="compare the flash with an image").add_argument("file", type=input_file)
    fl = ops.add_parser("flash", help="write an image, sector by sector, each verified")
    fl.add_argument("image", type=input_file)
    fl.add_argument("--start-sector", type=sector, default=0, help="the first sector to write (default 0)")
    fl.add_argument("--sector-count", type=ranged(1, SECTORS, "a count of sectors"),
                    help="how many sectors (default: up to the end of the flash)")
    fl.add_argument("--clear-cmp", action="store_true", help="clear SR2.CMP (the complemented write protection)")
    fl.add_argument("--yes", action="store_true")
    psp = paths.add_parser("fw", help="the PSP boot-firmware mailbox path")
    psp.set_defaults(run=fw)
    ops = psp.add_subparsers(dest="op", required=True)
    ops.add_parser("probe", help="the firmware's answers to its queries")
    ops.add_parser("dump", help="the whole flash through ROM_INDEX/ROM_DATA").add_argument("file", type=output_file)
    ifwi = ops.add_parser("ifwi-all", help="a whole-image update done by the firmware")
    ifwi.add_argument("image", type=input_file)
    ifwi.add_argument("--yes", action="store_true")
    ops.add_parser("flash", help="(disabled) other firmware-mediated writes").add_argument("image")
    for sub in (paths, raw_ops, ops):  # a missing one is named by its choices
        sub.metavar = "{" + ",".join(sub.choices) + "}"
    return p


def main(argv: list[str] | None = None, hal: HAL | None = None) -> int:
    args = parser().parse_args(argv)

    def run() -> int:
        with Signals() as stop:
            return args.run(args, hal or HAL(), stop)

    return guarded(args, run)


if __name__ == "__main__":
    sys.exit(main())
