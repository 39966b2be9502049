"""amdflash: read, verify and rescue the SPI flash of a Navi31 board, over native PCIe or an ASM24xx USB bridge.

`romless` drives the flash through the SMUIO software SPI engine (for a board whose firmware does not boot);
`fw` goes through the PSP boot firmware's mailbox (for a board whose firmware is up and owns the engine). Every
write needs --yes; nothing resets or power-cycles the board.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from usergpu.drivers.amd.pspboot import PSPBoot, check_image, sha256
from usergpu.drivers.amd.romsw import ROMSW, SECTOR, SIZE, FlashError
from usergpu.drivers.amd.usb import ASM24, USBPCIDevice
from usergpu.drivers.hal import HAL, MockHAL
from usergpu.drivers.pci import PCIDevice, pci_devices
from usergpu.errors import DeviceNotFound, Error
from usergpu.tools.common import Parser, guarded

NAVI31_IDS = (0x744C, 0x7448, 0x745E)  # RX 7900 XT/XTX/GRE, Radeon Pro W7900, W7800
SECTORS = SIZE // SECTOR
MOCKS = {"MOCKUSB+AMD": "usb", "MOCKPCI+AMD": "pci"}  # the mock board, and how it is reached


def open_board(args: argparse.Namespace, hal: HAL) -> PCIDevice:
    """The N-th Navi31 board over the chosen transport: PCI functions first, then USB bridges. --dev names the
    mock board instead, reached the same way through a mock HAL."""
    transport = args.transport
    if args.dev:
        hal, transport = mock_hal(args.dev), MOCKS[args.dev]
    found: list[PCIDevice] = []
    if transport in ("auto", "pci"):
        found += [d for d in pci_devices(hal, 0x1002) if d.device_id in NAVI31_IDS]
    if transport in ("auto", "usb") and len(found) <= args.device:
        try:
            found.append(USBPCIDevice(ASM24.find(hal, index=args.device - len(found))))
        except DeviceNotFound:
            pass
    if len(found) <= args.device:
        raise DeviceNotFound(f"no Navi31 board #{args.device} over {transport} (found {len(found)}): check "
                             f"`lspci -d 1002:` or, for a USB enclosure, `lsusb` and the cable")
    return found[args.device]


def mock_hal(dev: str) -> MockHAL:
    """A mock HAL holding the mock Navi31 board (its flash in $MOCKFLASH_IMAGE) on the transport dev names: behind
    the mock USB bridge, or as a native PCI function."""
    from usergpu.emu.amd.mock.asm24 import ASM24Backend
    from usergpu.emu.amd.mock.board import Navi31Board, install

    if dev not in MOCKS:
        raise DeviceNotFound(f"--dev {dev}: amdflash's mock boards are {', '.join(MOCKS)}")
    hal, board = MockHAL(tempfile.mkdtemp(prefix="amdflash-mock-")), Navi31Board()
    if MOCKS[dev] == "usb":
        hal.install_usb(ASM24Backend(board))
    else:
        install(hal, board)
    return hal


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


# ---- romless: the software SPI engine ------------------------------------------------------------------------------
def romless(args: argparse.Namespace, hal: HAL) -> int:
    if args.op == "flash":  # refuse bad requests before touching the board
        need_yes(args, "romless flash")
        image = read_image(args.image)
        if not (0 <= args.start_sector < SECTORS and 1 <= args.sector_count <= SECTORS - args.start_sector):
            raise FlashError(f"sectors {args.start_sector}+{args.sector_count}: the flash has sectors 0..{SECTORS - 1}")
    board = open_board(args, hal)
    with ROMSW(board.map_bar(5), args.prescale) as spi:
        name, _ = spi.check_chip()
        if args.op == "info":
            print(f"board     {board.name}  {board.vendor_id:04x}:{board.device_id:04x}")
            print(f"flash     {name}, JEDEC id {spi.jedec_id().hex(' ').upper()}, {SIZE >> 20} MiB")
            print(f"status    {spi.status().describe()}")
            print(f"ROM_CNTL  {spi.rom_cntl:#010x}")
        elif args.op == "read":
            if args.address < 0 or args.size <= 0 or args.address + args.size > SIZE:
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
            flash(spi, image, args)
    return 0


def verify(image: bytes, data: bytes) -> int:
    print(f"flash sha256 {sha256(data)}\nimage sha256 {sha256(image)}")
    bad = [s for s in range(SECTORS) if data[s * SECTOR : (s + 1) * SECTOR] != image[s * SECTOR : (s + 1) * SECTOR]]
    if bad:
        raise FlashError(f"the flash differs from the image in {len(bad)} sectors, the first sector {bad[0]} at "
                         f"{bad[0] * SECTOR:#08x}")
    print("verified: the flash holds the image")
    return 0


def flash(spi: ROMSW, image: bytes, args: argparse.Namespace) -> None:
    spi.unprotect(args.clear_cmp)
    first, end = args.start_sector, args.start_sector + args.sector_count
    written, t0 = 0, time.monotonic()
    with progress((end - first) * SECTOR, "flash") as bar:
        for s in range(first, end):
            try:
                written += spi.flash_sector(s, image[s * SECTOR : (s + 1) * SECTOR])
            except Error as e:
                raise FlashError(f"{e}; sectors {first}..{s - 1} are done: resume with --start-sector {s} "
                                 f"--sector-count {end - s}") from None
            bar.update(SECTOR)
    print(f"sectors {first}..{end - 1}: {written} written, {end - first - written} already held the image, each "
          f"read back and verified ({time.monotonic() - t0:.1f} s)")


# ---- fw: the PSP boot mailbox --------------------------------------------------------------------------------------
def fw(args: argparse.Namespace, hal: HAL) -> int:
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
        for name, command, error, response in psp.probe():
            print(f"{name:20} command {command:#04x}  error {error:#06x}  response {response:#010x}")
    elif args.op == "dump":
        with progress(SIZE, "dump") as bar:
            data = psp.dump(bar.update)
        Path(args.file).write_bytes(data)
        print(f"{args.file}: {SIZE} bytes, sha256 {sha256(data)}")
    else:
        with progress(SIZE, "ifwi-all") as bar:
            items = psp.ifwi_all(image, board.map_bar(0), bar.update)
        print(f"ifwi-all: the firmware took {items} items of {args.image} (sha256 {sha256(image)}); a hard power "
              f"cycle is required before it runs (power the board fully off, then on: this tool does not)")
    return 0


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="amdflash", description=__doc__.splitlines()[0])
    p.add_argument("--transport", choices=("auto", "usb", "pci"), default="auto")
    p.add_argument("--device", type=int, default=0, help="which board, counting PCI functions then USB bridges")
    p.add_argument("--dev", help="a mock board: MOCKUSB+AMD or MOCKPCI+AMD")
    p.add_argument("--debug", action="store_true", help="a traceback with errors")
    paths = p.add_subparsers(dest="path", required=True)
    raw = paths.add_parser("romless", help="the raw SPI path (ROM_SW engine)")
    raw.add_argument("--prescale", type=int, help="SPI clock prescaler 0..15 (ROM_CNTL.SCK_PRESCALE_REFCLK)")
    raw.set_defaults(run=romless)
    ops = raw.add_subparsers(dest="op", required=True)
    ops.add_parser("info", help="the flash's id and status registers")
    read = ops.add_parser("read", help="bytes of the flash")
    read.add_argument("address", type=lambda s: int(s, 0))
    read.add_argument("size", type=lambda s: int(s, 0))
    read.add_argument("-o", "--output")
    ops.add_parser("dump", help="the whole flash to a file").add_argument("file")
    ops.add_parser("verify", help="compare the flash with an image").add_argument("file")
    fl = ops.add_parser("flash", help="write an image, sector by sector, each verified")
    fl.add_argument("image")
    fl.add_argument("--start-sector", type=int, default=0)
    fl.add_argument("--sector-count", type=int, default=SECTORS)
    fl.add_argument("--clear-cmp", action="store_true", help="clear SR2.CMP (the complemented write protection)")
    fl.add_argument("--yes", action="store_true")
    psp = paths.add_parser("fw", help="the PSP boot-firmware mailbox path")
    psp.set_defaults(run=fw)
    ops = psp.add_subparsers(dest="op", required=True)
    ops.add_parser("probe", help="the firmware's answers to its queries")
    ops.add_parser("dump", help="the whole flash through ROM_INDEX/ROM_DATA").add_argument("file")
    ifwi = ops.add_parser("ifwi-all", help="a whole-image update done by the firmware")
    ifwi.add_argument("image")
    ifwi.add_argument("--yes", action="store_true")
    ops.add_parser("flash", help="(disabled) other firmware-mediated writes").add_argument("image")
    return p


def main(argv: list[str] | None = None, hal: HAL | None = None) -> int:
    args = parser().parse_args(argv)
    return guarded(args, lambda: args.run(args, hal or HAL()))


if __name__ == "__main__":
    sys.exit(main())
