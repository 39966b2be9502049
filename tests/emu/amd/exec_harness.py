"""Run a few instructions on the executor without a code object: one wave, every lane active, registers preset."""

from __future__ import annotations

import numpy as np

from usergpu.emu.amd import isa
from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.memory import Memory
from usergpu.emu.amd.exec.waves import Waves


def execute(program: str, arch: str, v: dict | None = None, s: dict | None = None, memory: Memory | None = None,
            lanes: int = 32) -> Waves:
    """Assemble program (s_endpgm appended) and run it with VGPRs v {register: per-lane values (uint32)} and
    SGPRs s {register: value}; the wave's state after."""
    code = isa.asm(f"{program}\ns_endpgm", arch)
    w = Waves(1, lanes, 16)
    w.s[126] = w.s[127] = 0xFFFFFFFF
    for reg, values in (v or {}).items():
        w.v[reg, 0] = np.asarray(values, np.uint64) & np.uint64(0xFFFFFFFF)
    for reg, value in (s or {}).items():
        w.s[reg, 0] = value
    Executor(arch, code, 0, memory or Memory(), w, np.zeros(1, np.int64), 4, 4, "harness", 100).run()
    return w


def doubles(values: list) -> tuple[np.ndarray, np.ndarray]:
    """The low and high dwords of each double, for a VGPR pair."""
    raw = np.asarray(values, np.float64).view(np.uint64)
    return raw & np.uint64(0xFFFFFFFF), raw >> np.uint64(32)


def double(w: Waves, reg: int) -> np.ndarray:
    """The doubles a VGPR pair holds, per lane."""
    return (w.v[reg, 0].astype(np.uint64) | (w.v[reg + 1, 0].astype(np.uint64) << np.uint64(32))).view(np.float64)
