"""CUDA's device printf: clang (as nvcc) lowers printf(fmt, ...) to vprintf(fmt, args), where args points at a
buffer in the thread's local memory holding each argument after C's promotions (char and short as int, float as
double), each at an offset aligned to its size. The buffer carries no types: like CUDA's driver, the emulator walks
it by the format's conversions (an int-sized %d, an 8-byte %ld/%f/%s/%p) and formats it with C's printf
(isa/printf.py). A launch prints each thread's lines, in the order the threads called, after the kernel completes.
"""

from __future__ import annotations

import sys

import numpy as np

from usergpu.emu.nv.ptx.state import LaneFault
from usergpu.isa import printf

WIDE = (b"l", b"ll", b"L", b"q", b"j", b"z", b"Z", b"t")  # an integer of 8 bytes; hh, h and none are promoted ints
STRING_LIMIT = 1 << 16  # bytes of a format or %s string read at most (a string without its NUL stops there)
CHUNK = 256


def _sizes(fmt: bytes) -> list[tuple[int, bool]]:
    """(bytes, whether it is a string's address) of each argument the format's conversions take, in order."""
    out = []
    for spec in printf.parse(fmt):
        if isinstance(spec, bytes) or not spec.arguments:
            continue
        stars = (spec.width == "*") + (spec.precision == "*")
        out += [(4, False)] * stars
        if spec.arguments > stars:
            conv = spec.conversion
            wide = conv in printf.FLOATING or conv in b"spn" or spec.length in WIDE
            out.append((8 if wide else 4, conv == b"s"))
    return out


def read_string(st, lane: int, address: int) -> bytes:
    """The NUL-terminated string at a generic address, read a chunk at a time (byte by byte where a chunk would
    run past the memory the string lies in); b'(null)' for address 0, as CUDA prints it."""
    if not address:
        return b"(null)"
    out = bytearray()
    lanes = np.array([lane])
    while len(out) < STRING_LIMIT:
        at = np.uint64(address + len(out))
        try:
            chunk = st.load("generic", at, CHUNK, lanes)[0].tobytes()
        except LaneFault:
            chunk = st.load("generic", at, 1, lanes)[0].tobytes()
        end = chunk.find(b"\0")
        if end >= 0:
            return bytes(out + chunk[:end])
        out += chunk
    return bytes(out)


def vprintf(st, lanes: np.ndarray, formats: np.ndarray, buffers: np.ndarray) -> np.ndarray:
    """Each lane's line into st.printed; the count of arguments each format took (vprintf's result)."""
    counts = np.zeros(len(lanes), np.int32)
    for i, (lane, fmt_at, buf_at) in enumerate(zip(lanes.tolist(), formats.tolist(), buffers.tolist(), strict=True)):
        fmt = read_string(st, lane, fmt_at)
        args, offset = [], 0
        for size, string in _sizes(fmt):
            offset = -(-offset // size) * size
            raw = st.load("generic", np.uint64(buf_at + offset), size, np.array([lane]))[0].tobytes()
            args.append(read_string(st, lane, int.from_bytes(raw, "little")) + b"\0" if string else raw)
            offset += size
        st.printed.append(printf.sprintf(fmt, args))
        counts[i] = len(args)
    return counts


def flush(lines: list[bytes]) -> None:
    """A launch's printf lines to the process's stdout (as text: a kernel's bytes that are not UTF-8 are shown as
    U+FFFD)."""
    if lines:
        sys.stdout.write(b"".join(lines).decode(errors="replace"))
        sys.stdout.flush()
