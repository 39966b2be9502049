"""Run a few instructions on the executor without a code object: every lane active, registers preset. Each run is
differential: the reference (numpy) backend and the native one run the same program from the same state, and must
leave the same registers, LDS and memory bit for bit, or raise the same error."""

from __future__ import annotations

import copy

import numpy as np

from usergpu.emu.amd.exec.executor import Executor
from usergpu.emu.amd.exec.native import executor_class
from usergpu.emu.amd.exec.waves import Waves
from usergpu.emu.memory import Memory
from usergpu.isa import amd as isa


def execute(program: str, arch: str, v: dict | None = None, s: dict | None = None, memory: Memory | None = None,
            lanes: int = 32, waves: int = 1, scc=0) -> Waves:
    """Assemble program (s_endpgm appended) and run it on `waves` waves of one workgroup (64 KiB of LDS) with
    VGPRs v {register: values per lane, (waves, lanes) or flat} and SGPRs s {register: value, or one per wave},
    SCC scc (or one per wave); the waves' state after (memory holds the native backend's writes)."""
    code = isa.asm(f"{program}\ns_endpgm", arch)
    w = Waves(waves, lanes, 64, 256 if arch in ("gfx942", "gfx950") else 0)  # gfx90a+: a0..a255 after v0..v63
    w.s[126] = w.s[127] = 0xFFFFFFFF
    for reg, values in (v or {}).items():
        w.v[reg] = (np.asarray(values, np.uint64) & np.uint64(0xFFFFFFFF)).reshape(waves, lanes)
    for reg, value in (s or {}).items():
        w.s[reg] = np.asarray(value, np.uint64) & np.uint64(0xFFFFFFFF)
    w.scc[:] = scc
    memory = memory or Memory()
    runs = []
    for backend, mem, state in ((Executor, copy.deepcopy(memory), copy.deepcopy(w)), (executor_class(), memory, w)):
        ex = backend(arch, code, 0, mem, state, np.zeros(waves, np.int64), 1 << 16, 4, "harness", 100)
        try:
            ex.run()
            runs.append((ex, None))
        except Exception as e:  # noqa: BLE001 (compared below, then raised)
            runs.append((ex, e))
    (ref, ref_error), (got, error) = runs
    agree(program, ref, got, ref_error, error)
    if error is not None:
        raise error
    return w


def agree(program: str, ref: Executor, got: Executor, ref_error, error) -> None:
    """The two backends' end states (and errors) are the same."""
    assert type(ref_error) is type(error) and str(ref_error) == str(error), (
        f"{program!r}: reference {ref_error!r}, native {error!r}")
    if error is not None:
        return
    for what in ("s", "v", "scc", "pc", "done", "steps"):
        a, b = getattr(ref.w, what), getattr(got.w, what)
        bad = np.argwhere(a != b)
        assert not len(bad), (f"{program!r}: {what}{list(bad[0])} reference {a[tuple(bad[0])]:#x} native "
                              f"{b[tuple(bad[0])]:#x}")
    assert (ref.lds == got.lds).all(), f"{program!r}: LDS differs"
    for base, x, y in zip(ref.mem._bases, ref.mem._bufs, got.mem._bufs, strict=True):
        assert (x == y).all(), f"{program!r}: memory at {base:#x} differs"


def doubles(values: list) -> tuple[np.ndarray, np.ndarray]:
    """The low and high dwords of each double, for a VGPR pair."""
    raw = np.asarray(values, np.float64).view(np.uint64)
    return raw & np.uint64(0xFFFFFFFF), raw >> np.uint64(32)


def double(w: Waves, reg: int) -> np.ndarray:
    """The doubles a VGPR pair holds, per lane."""
    return (w.v[reg, 0].astype(np.uint64) | (w.v[reg + 1, 0].astype(np.uint64) << np.uint64(32))).view(np.float64)
