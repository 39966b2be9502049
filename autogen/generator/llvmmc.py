"""llvm-mc-22 as an oracle: disassemble many encodings, or assemble many lines, in one process each.

Used by the ISA table generator and by the tests that hold the decoder to LLVM's text and bytes.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from usergpu.autogen.generator import toolchain
from usergpu.errors import ToolchainError

LLVM_MC = Path(f"/usr/bin/llvm-mc-{toolchain.LLVM}")
_LINE = re.compile(r"^<stdin>:(\d+):\d+: (warning|error): (.*)$")
_ENC = re.compile(r"^\s*(.*?)\s*; encoding: \[(.*)\]\s*$")


# LLVM 22 reads gfx12's 16-bit VGPR operands in its fake16 mode unless told (gfx11's default is real-true16); the
# hardware reads them as halves (op_sel, bit 7 of a VOP1/2/C register), as tinygrad's gfx12 code uses them
FEATURES = {"gfx1200": ["--mattr=+real-true16"], "gfx1201": ["--mattr=+real-true16"]}


def target(arch: str) -> list[str]:
    """llvm-mc's options for arch: the triple, the CPU and the features that make its text the hardware's."""
    return ["-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}", *FEATURES.get(arch, [])]


def _run(args: list[str], text: str) -> subprocess.CompletedProcess:
    toolchain.require(LLVM_MC, "llvm-22")
    env = {**os.environ, "LLVM_DISABLE_SYMBOLIZATION": "1"}  # it crashes on some encodings: fail fast
    return subprocess.run([str(LLVM_MC), *args], input=text, capture_output=True, text=True, env=env)


# llvm-mc reads all lines as one byte stream: each probe is padded with s_nop 0 (the same word on every arch
# here) past the longest instruction, then an s_nop 0x3fe line marks where the next probe's outputs begin
FILLER = bytes.fromhex("000080bf")
SENTINEL = bytes.fromhex("fe0380bf")
PROBE_BYTES = 32


def disassemble(encodings: list[bytes], arch: str) -> list[tuple[str, int] | None]:
    """For each encoding, (text, bytes used) of the instruction llvm-mc decodes at its start, or None.

    The bytes used may be fewer than given (the rest is ignored), or more: then the instruction wanted a
    literal or a further dword the probe did not give, and the text is not to be trusted.
    """
    out = _disassemble(encodings, arch)
    if out is not None:
        return out
    if len(encodings) == 1:  # llvm-mc crashes on this encoding (it does on some, e.g. gfx942 VOP1 0x7e14a4c1)
        return [None]
    step = -(-len(encodings) // 8)  # the batch crashed: find the encodings that crash it, in eighths
    return [r for i in range(0, len(encodings), step) for r in disassemble(encodings[i : i + step], arch)]


def _disassemble(encodings: list[bytes], arch: str) -> list[tuple[str, int] | None] | None:
    """disassemble() in one run of llvm-mc (two where sizes are in doubt); None when llvm-mc crashes."""
    runs = _decode(encodings, arch)
    if runs is None:
        return None
    out: list[tuple[str, int] | None] = []
    doubt: dict[int, list[int]] = {}  # probe -> the sizes it may have taken
    for i, (items, bad_start, skipped) in enumerate(runs):
        if not items or bad_start:
            out.append(None)
            continue
        # the encoding llvm-mc shows is its re-encoding of what it decoded, which can differ in size (an inline
        # constant of a 16-bit integer operand becomes a literal, gfx950's VOP3 literal is left out): where
        # what followed is shown as the probe's own bytes, the instruction took the bytes before them
        padded, end = _pad(encodings[i]), None
        if not skipped:
            end = len(padded)
            for _, used in reversed(items[1:]):
                end = end - len(used) if end is not None and padded[:end].endswith(used) else None
        out.append((items[0][0], end or len(items[0][1])))
        if end is None and not encodings[i].startswith(items[0][1][: len(encodings[i])]):
            doubt[i] = list(range(4, len(encodings[i]) + 1, 4))
    # else the size is the offset from which the rest of the probe decodes as llvm-mc decoded it after the first
    trials = [(i, k) for i, ks in doubt.items() for k in ks]
    rests = _decode([encodings[i][k:] for i, k in trials], arch) if trials else []
    for (i, k), rest in zip(trials, rests or [None] * len(trials), strict=True):
        items, _, skipped = runs[i]
        if rest is not None and doubt[i] and _tail(rest[0]) == _tail(items[1:]) and rest[2] + rest[1] == skipped:
            out[i] = (items[0][0], k)
            doubt[i] = []
    return out


def _pad(enc: bytes) -> bytes:
    return enc + bytes(-len(enc) % 4) + FILLER * ((PROBE_BYTES - len(enc)) // 4 + 1)  # keep words aligned


def _tail(items: list[tuple[str, bytes]]) -> list[str]:
    """The texts of a probe's items without the trailing fillers."""
    texts = [t for t, used in items]
    while texts and texts[-1] == "s_nop 0":
        texts.pop()
    return texts


def _decode(encodings: list[bytes], arch: str) -> list[tuple[list[tuple[str, bytes]], bool, int]] | None:
    """For each encoding padded with fillers: every (text, encoding shown) llvm-mc printed, whether the first
    word was invalid, and how many further words were; None when llvm-mc crashes."""
    lines = []
    for enc in encodings:
        lines += [" ".join(f"0x{b:02x}" for b in _pad(enc)), " ".join(f"0x{b:02x}" for b in SENTINEL)]
    run = _run(["--disassemble", *target(arch), "--show-encoding"], "\n".join(lines))
    if run.returncode < 0:  # killed by a signal: its buffered output is lost
        return None
    bad_start, skipped = set(), [0] * len(encodings)
    for line in run.stderr.splitlines():
        m = re.match(r"^<stdin>:(\d+):(\d+): warning:", line)
        if m and m.group(2) == "1":
            bad_start.add((int(m.group(1)) - 1) // 2)
        elif m:
            skipped[(int(m.group(1)) - 1) // 2] += 1
    groups: list[list[tuple[str, bytes]]] = [[]]
    for line in run.stdout.splitlines():
        m = _ENC.match(line)
        if not m:
            continue
        used = bytes(int(x, 16) for x in m.group(2).split(","))
        if used == SENTINEL and len(groups) <= len(encodings):
            groups.append([])
        else:
            groups[-1].append((m.group(1).strip(), used))
    if len(groups) != len(encodings) + 1:
        raise ToolchainError(f"llvm-mc output does not split into {len(encodings)} probes ({len(groups) - 1})")
    return [(g, i in bad_start, skipped[i]) for i, g in enumerate(groups[: len(encodings)])]


def assemble(lines: list[str], arch: str) -> list[bytes | None]:
    """For each line of assembly, its encoding from llvm-mc, or None where llvm-mc rejects it."""
    run = _run([*target(arch), "--show-encoding"], "\n".join(lines))
    bad = {int(m.group(1)) for m in map(_LINE.match, run.stderr.splitlines()) if m and m.group(2) == "error"}
    encoded = [m for m in map(_ENC.match, run.stdout.splitlines()) if m]
    k, out = 0, []
    for i, line in enumerate(lines, start=1):
        m = encoded[k] if k < len(encoded) else None
        if i in bad:  # rejected; a few errors still come with an encoding (nv on gfx1200): this line's, skip it
            k += m is not None and m.group(1).split() == line.split()
            out.append(None)
            continue
        k += 1
        if m is None:
            raise ToolchainError(f"llvm-mc printed fewer encodings than lines ({i} of {len(lines)})")
        out.append(bytes(int(x, 16) for x in m.group(2).split(",")) if m.group(2) else b"")
    return out
