"""llvm-mc-22 as an oracle: disassemble many encodings, or assemble many lines, in one process each.

Used by the ISA table generator and by the tests that hold the decoder to LLVM's text and bytes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from usergpu.autogen.generator import toolchain
from usergpu.errors import ToolchainError

LLVM_MC = Path(f"/usr/bin/llvm-mc-{toolchain.LLVM}")
_LINE = re.compile(r"^<stdin>:(\d+):\d+: (warning|error): (.*)$")
_ENC = re.compile(r"^\s*(.*?)\s*; encoding: \[(.*)\]\s*$")


def _run(args: list[str], text: str) -> subprocess.CompletedProcess:
    toolchain.require(LLVM_MC, "llvm-22")
    return subprocess.run([str(LLVM_MC), *args], input=text, capture_output=True, text=True)


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
    """disassemble() in one run of llvm-mc; None when llvm-mc crashes."""
    lines = []
    for enc in encodings:
        padded = enc + bytes(-len(enc) % 4) + FILLER * ((PROBE_BYTES - len(enc)) // 4 + 1)  # keep words aligned
        lines += [" ".join(f"0x{b:02x}" for b in padded), " ".join(f"0x{b:02x}" for b in SENTINEL)]
    run = _run(["--disassemble", "-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "--show-encoding"], "\n".join(lines))
    if run.returncode < 0:  # killed by a signal: its buffered output is lost
        return None
    bad_start = set()
    for line in run.stderr.splitlines():
        m = re.match(r"^<stdin>:(\d+):(\d+): warning:", line)
        if m and m.group(2) == "1":
            bad_start.add((int(m.group(1)) - 1) // 2)
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
    out: list[tuple[str, int] | None] = []
    for i, group in enumerate(groups[: len(encodings)]):
        first = group[0] if group else None
        ok = first is not None and i not in bad_start
        out.append((first[0], len(first[1])) if ok else None)
    return out


def assemble(lines: list[str], arch: str) -> list[bytes | None]:
    """For each line of assembly, its encoding from llvm-mc, or None where llvm-mc rejects it."""
    run = _run(["-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "--show-encoding"], "\n".join(lines))
    bad = {int(m.group(1)) for m in map(_LINE.match, run.stderr.splitlines()) if m and m.group(2) == "error"}
    encoded = [m for m in map(_ENC.match, run.stdout.splitlines()) if m]
    good = iter(encoded)
    out: list[bytes | None] = []
    for i, _ in enumerate(lines, start=1):
        if i in bad:
            out.append(None)
            continue
        m = next(good, None)
        if m is None:
            raise ToolchainError(f"llvm-mc printed fewer encodings than lines ({i} of {len(lines)})")
        out.append(bytes(int(x, 16) for x in m.group(2).split(",")) if m.group(2) else b"")
    return out
