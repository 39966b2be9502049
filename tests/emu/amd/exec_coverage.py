"""How much of each arch's opcode table the executor implements, and whether every instruction clang emits for the
emulator corpus is among it.

Run as a script for the figures: python tests/emu/amd/exec_coverage.py [arch ...]
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
from llvm_agreement import encodings

from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.waves import Waves
from usergpu.emu.memory import Memory
from usergpu.errors import DecodeError
from usergpu.isa.amd.decoder import decode


def implemented(arch: str, inst) -> bool:
    """Whether the executor compiles the instruction to a step (rather than UnsupportedInstruction)."""
    ex = Executor(arch, b"", 0, Memory(), Waves(1, 32, 1), np.zeros(1, np.int64), 4, 4, "coverage", 1)
    return ex._compile(inst).__name__ != "unsupported"


def mnemonics(arch: str) -> dict[str, bool]:
    """Each distinct mnemonic of the arch's table -> whether the executor implements it, judged on the decodable
    random encodings that show it (implemented if any of them compiles)."""
    seen: dict[str, bool] = {}
    for _, enc in encodings(arch, per_family=60, seed=3):
        try:
            inst = decode(enc, arch)
        except DecodeError:
            continue
        if not seen.get(inst.mnemonic):
            seen[inst.mnemonic] = implemented(arch, inst)
    return seen


def table_coverage(arch: str) -> tuple[int, int, list[str]]:
    """(implemented, total, the missing) over the arch's distinct mnemonics."""
    seen = mnemonics(arch)
    return sum(seen.values()), len(seen), sorted(m for m, ok in seen.items() if not ok)


if __name__ == "__main__":
    for arch in sys.argv[1:] or ["gfx1100", "gfx1200", "gfx942", "gfx950"]:
        done, total, missing = table_coverage(arch)
        kinds = Counter(m.split("_")[0] for m in missing)
        print(f"{arch}: {done}/{total} mnemonics implemented ({100 * done / total:.1f}%); missing by prefix: "
              f"{dict(kinds.most_common())}")
