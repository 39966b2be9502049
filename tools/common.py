"""What every CLI shares, kept light so a command starts fast: the argument parser whose usage errors are one
line, argument types that refuse bad values with what they expected, and the guard that turns an expected
failure into one `error:` line and exit status 1."""

from __future__ import annotations

import argparse
import functools
import os
import re
import signal
import sys
import traceback
from collections.abc import Callable

from usergpu.errors import Error


class BadArgument(Error, argparse.ArgumentTypeError):
    """A command-line value that cannot be used: says which value and what was expected. As an argparse `type=`
    it is a usage error (exit 2); raised later, an expected failure (exit 1)."""


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error on one line and a pointer to --help (exit 2, as argparse)."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def integer(text: str, low: int | None = None, high: int | None = None, what: str = "an integer") -> int:
    """An int (decimal, 0x hex, 0o, 0b) within [low, high]."""
    try:
        value = int(text, 0)
    except ValueError:
        raise BadArgument(f"{text!r} is not {what}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f"{low}..{high}" if low is not None and high is not None else f">= {low}" if low is not None \
            else f"<= {high}"
        raise BadArgument(f"{text!r}: {what} must be {bounds}")
    return value


def ranged(low: int | None, high: int | None, what: str) -> Callable[[str], int]:
    """An argparse type: an int within [low, high] (None: unbounded), named `what` when refused (`a sector of the
    flash`)."""
    return functools.partial(integer, low=low, high=high, what=what)


def unsigned(text: str) -> int:
    """An int >= 0 (argparse type)."""
    return integer(text, 0, what="a count or address (an integer >= 0)")


def positive(text: str) -> int:
    """An int >= 1 (argparse type)."""
    return integer(text, 1, what="a positive integer")


def seconds(text: str) -> float:
    """A time > 0 in seconds (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise BadArgument(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise BadArgument(f"{text!r}: a time must be more than 0 seconds")
    return value


def arch(text: str) -> str:
    """An ISA the disassembler and emulator know: gfx1100, gfx1200, gfx942, gfx950 (argparse type)."""
    from usergpu.isa.amd.decoder import ArgumentError, check_arch

    try:
        return check_arch(text)
    except ArgumentError as e:
        raise BadArgument(str(e)) from None


def input_file(text: str) -> str:
    """A path to a readable regular file (argparse type)."""
    if not os.path.exists(text):
        raise BadArgument(f"{text}: no such file")
    if os.path.isdir(text):
        raise BadArgument(f"{text}: is a directory, a file is expected")
    if not os.access(text, os.R_OK):
        raise BadArgument(f"{text}: cannot be read (permission denied)")
    return text


def output_file(text: str) -> str:
    """A path a file can be written at (argparse type): not a directory, its folder exists and is writable."""
    folder = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(text):
        raise BadArgument(f"{text}: is a directory, a file is expected")
    if not os.path.isdir(folder):
        raise BadArgument(f"{text}: the folder {folder} does not exist")
    if not os.access(text if os.path.exists(text) else folder, os.W_OK):
        raise BadArgument(f"{text}: cannot be written (permission denied)")
    return text


def output_dir(text: str) -> str:
    """A folder files can be written into, made if missing (argparse type)."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise BadArgument(f"{text}: is a file, a folder is expected")
    parent = os.path.dirname(os.path.abspath(text))
    probe = text if os.path.isdir(text) else parent
    if not os.path.isdir(probe):
        raise BadArgument(f"{text}: the folder {parent} does not exist")
    if not os.access(probe, os.W_OK):
        raise BadArgument(f"{text}: cannot be written (permission denied)")
    return text


def input_dir(text: str) -> str:
    """A path to a readable folder (argparse type)."""
    if not os.path.exists(text):
        raise BadArgument(f"{text}: no such folder")
    if not os.path.isdir(text):
        raise BadArgument(f"{text}: is a file, a folder is expected")
    if not os.access(text, os.R_OK | os.X_OK):
        raise BadArgument(f"{text}: cannot be read (permission denied)")
    return text


_BDF = re.compile(r"(?:([0-9a-f]{1,4}):)?([0-9a-f]{1,2}):([01]?[0-9a-f])\.([0-7])")  # devices 0..1f, functions 0..7


def pci_address(text: str) -> str:
    """A PCI function's address, [DOMAIN:]BUS:DEVICE.FUNCTION in hex, as sysfs spells it: 0000:03:00.0
    (argparse type)."""
    found = _BDF.fullmatch(text.strip().lower())
    if not found:
        raise BadArgument(f"{text!r} is not a PCI address ([DOMAIN:]BUS:DEVICE.FUNCTION in hex, e.g. 0000:03:00.0)")
    domain, bus, device, function = (int(g or "0", 16) for g in found.groups())
    return f"{domain:04x}:{bus:02x}:{device:02x}.{function}"


def describe(e: BaseException) -> str | None:
    """The one line an expected failure is reported with; None for a defect (shown with its traceback)."""
    if isinstance(e, Error):
        return str(e)
    if isinstance(e, OSError):
        where = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
        return f"{where + ': ' if where else ''}{e.strerror or e}"
    if isinstance(e, MemoryError):  # numpy's _ArrayMemoryError included: its text names the size
        return f"out of memory: {e}" if str(e) else "out of memory"
    return None


def guarded(args: argparse.Namespace, run: Callable[[], int]) -> int:
    """A command's exit status: an expected failure is one `error: ...` line and 1, or the error's `exit_status`
    (a command a signal stopped: 128 + the signal's number, as a shell reports it); with --debug, the traceback
    too. ^C is 130."""
    try:
        return run()
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a shell's tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit has nowhere to fail
        return 128 + signal.SIGPIPE
    except (Error, OSError, MemoryError) as e:
        line = describe(e)
        if getattr(args, "debug", False):
            traceback.print_exc()
        first, *detail = line.splitlines() or [""]
        print("\n".join([f"error: {first}", *(f"  {d}" for d in detail)]), file=sys.stderr)  # a compiler's output
        return getattr(e, "exit_status", 1)
