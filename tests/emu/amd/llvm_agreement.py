"""Hold the decoder to llvm-mc-22: random encodings of every family, disassembled by both, compared.

Run as a script for a report: python tests/emu/amd/llvm_agreement.py gfx1100 [per-family] [examples].
"""

from __future__ import annotations

import random
import sys
from collections import defaultdict
from dataclasses import dataclass, field

from usergpu.autogen.generator import llvmmc
from usergpu.errors import DecodeError
from usergpu.isa.amd.decoder import decode, tables


@dataclass
class Stats:
    valid: int = 0  # encodings llvm-mc decodes
    agree: int = 0  # of those, ours gives the same text and size
    rejected: int = 0  # of those, ours raises DecodeError
    extra: int = 0  # encodings llvm-mc rejects that ours decodes
    misses: list = field(default_factory=list)  # (hex, llvm's text, ours)


def encodings(arch: str, per_family: int, seed: int = 0) -> list[tuple[str, bytes]]:
    """(family, bytes) pairs: each family's prefix and a known opcode, every other bit random, then a literal."""
    rng = random.Random(seed)
    families, ops, _ = tables(arch)
    out = []
    for i, fam in enumerate(families):
        opcodes = list(ops[fam.name])
        if not opcodes:
            continue
        opmask = fam.place((1 << (fam.op[1] + fam.opx[1])) - 1) & ~fam.value
        for _ in range(per_family):
            bits = rng.getrandbits(64) | (rng.getrandbits(32) << 64 if fam.size > 8 else 0)  # 96-bit families too
            op = rng.choice(opcodes)
            word = (bits & ~(fam.mask | opmask)) | fam.place(op)
            if rng.random() < 0.75:  # mostly with the fields the opcode needs at a value there (else few are valid)
                for name, value in ops[fam.name][op][4]:
                    lo, width = fam.fields[name][:2]
                    word = word & ~(((1 << width) - 1) << lo) | value << lo
            if any(f.matches(word) for f in families[:i]):
                continue
            out.append((fam.name, word.to_bytes(16, "little")[: fam.size] + rng.getrandbits(32).to_bytes(4, "little")))
    return out


def agreement(arch: str, per_family: int, seed: int = 0) -> dict[str, Stats]:
    cases = encodings(arch, per_family, seed)
    stats: dict[str, Stats] = defaultdict(Stats)
    for (fam, enc), ref in zip(cases, llvmmc.disassemble([e for _, e in cases], arch), strict=True):
        s = stats[fam]
        try:
            inst = decode(enc, arch)
            ours = (inst.text, inst.size)
        except DecodeError:
            ours = None
        if ref is None or "/*" in ref[0]:  # invalid, or text LLVM itself marks as invalid
            s.extra += ours is not None
            continue
        s.valid += 1
        if ours == ref:
            s.agree += 1
        else:
            s.rejected += ours is None
            s.misses.append((enc.hex(), ref[0], ours and ours[0]))
    return dict(stats)


def report(stats: dict[str, Stats], examples: int = 3) -> str:
    lines, valid, agree = [], 0, 0
    for fam, s in stats.items():
        valid, agree = valid + s.valid, agree + s.agree
        pct = 100 * s.agree / max(s.valid, 1)
        lines.append(f"{fam:14s} {s.agree:6d}/{s.valid:<6d} {pct:6.2f}%  rejected {s.rejected:5d}  extra {s.extra:5d}")
        lines += [f"    {m}" for m in s.misses[:examples]]
    lines.append(f"{'total':14s} {agree:6d}/{valid:<6d} {100 * agree / max(valid, 1):6.2f}%")
    return "\n".join(lines)


if __name__ == "__main__":
    args = [*sys.argv[1:], "2000", "3"][:3]
    print(report(agreement(args[0], int(args[1])), int(args[2])))
