"""Run a few instructions on the executor without a code object: every lane active, registers preset."""

from __future__ import annotations

import numpy as np

from usergpu.emu.amd import isa
from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.memory import Memory
from usergpu.emu.amd.exec.waves import Waves


def execute(program: str, arch: str, v: dict | None = None, s: dict | None = None, memory: Memory | None = None,
            lanes: int = 32, waves: int = 1, scc=0) -> Waves:
    """Assemble program (s_endpgm appended) and run it on `waves` waves of one workgroup (64 KiB of LDS) with
    VGPRs v {register: values per lane, (waves, lanes) or flat} and SGPRs s {register: value, or one per wave},
    SCC scc (or one per wave); the waves' state after."""
    code = isa.asm(f"{program}\ns_endpgm", arch)
    w = Waves(waves, lanes, 64)
    w.s[126] = w.s[127] = 0xFFFFFFFF
    for reg, values in (v or {}).items():
        w.v[reg] = (np.asarray(values, np.uint64) & np.uint64(0xFFFFFFFF)).reshape(waves, lanes)
    for reg, value in (s or {}).items():
        w.s[reg] = np.asarray(value, np.uint64) & np.uint64(0xFFFFFFFF)
    w.scc[:] = scc
    Executor(arch, code, 0, memory or Memory(), w, np.zeros(waves, np.int64), 1 << 16, 4, "harness", 100).run()
    return w


def doubles(values: list) -> tuple[np.ndarray, np.ndarray]:
    """The low and high dwords of each double, for a VGPR pair."""
    raw = np.asarray(values, np.float64).view(np.uint64)
    return raw & np.uint64(0xFFFFFFFF), raw >> np.uint64(32)


def double(w: Waves, reg: int) -> np.ndarray:
    """The doubles a VGPR pair holds, per lane."""
    return (w.v[reg, 0].astype(np.uint64) | (w.v[reg + 1, 0].astype(np.uint64) << np.uint64(32))).view(np.float64)
