"""gfx9's scalar memory writes: s_store / s_buffer_store, the scalar atomics (s_atomic_*, s_buffer_atomic_*), the
scalar scratch accesses (s_scratch_load/store), and the counters s_memtime / s_memrealtime. Waves run one after
another (a scalar access is one per wave), so atomics on one address from several waves apply in wave order."""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec import memops
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.memory import MemoryFault

STORE = re.compile(r"^s_(buffer_|scratch_)?store_dword(?:x(\d+))?$")
SCRATCH_LOAD = re.compile(r"^s_scratch_load_dword(?:x(\d+))?$")
ATOMIC = re.compile(r"^s_(buffer_)?atomic_(\w+?)(_x2)?$")
# the scalar atomics: memory a, data b, compare c (cmpswap: the data's second half) -> the new value
OPS = {"swap": "b", "cmpswap": "np.where(a == c, b, a)", "add": "a + b", "sub": "a - b", "smin": "np.minimum(a, b)",
       "umin": "np.minimum(a, b)", "smax": "np.maximum(a, b)", "umax": "np.maximum(a, b)", "and": "a & b",
       "or": "a | b", "xor": "a ^ b", "inc": "np.where(a >= b, 0, a + 1)",
       "dec": "np.where((a == 0) | (a > b), b, a - 1)"}
NOOP = ("s_dcache_wb", "s_dcache_wb_vol", "s_dcache_inv_vol", "s_dcache_discard", "s_dcache_discard_x2",
        "s_atc_probe", "s_atc_probe_buffer")
LANES = 64  # the scalar scratch view of a wave's private memory: dwords swizzled across its 64 lanes


def step(ex, name: str, ops: list[Operand], mods: dict, inst):
    if not inst.family.startswith("SMEM"):
        return None
    if name in NOOP:  # cache maintenance and address-translation probes: nothing the emulator caches
        return lambda ex, g: None
    if name in ("s_memtime", "s_memrealtime"):  # the wave's instructions so far: a clock that only moves forward
        return lambda ex, g: ex.w.sset(ops[0].index, 2, g, ex.w.steps[g].astype(np.uint64))
    m = STORE.match(name)
    if m:
        return _access(ops, mods, m.group(1) or "", int(m.group(2) or 1), None)
    m = SCRATCH_LOAD.match(name)
    if m:
        return _access(ops, mods, "scratch_", int(m.group(1) or 1), "load")
    m = ATOMIC.match(name)
    if m and m.group(2) in OPS:
        return _atomic(ops, mods, m.group(1) or "", m.group(2), 64 if m.group(3) else 32)
    return None


def _addresses(ex, ops: list[Operand], mods: dict, seg: str, g, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Each wave's byte address (or, scratch, private offset) and whether it is in range: a buffer access past
    num_records is out of range (dropped)."""
    addr, offset, records = memops.scalar_address(ex, ops, mods, g, seg)
    return addr, (offset + np.uint64(size) <= records) if records is not None else np.ones(offset.shape, bool)


def _scratch(ex, wave: int, offset: int, size: int) -> list[tuple[int, int]]:
    """Where the wave's private dwords at a scalar offset lie, as (lane, byte in the lane): dword d of the wave's
    memory is lane d % 64's dword d // 64 (the swizzle per-lane scratch accesses see)."""
    limit = ex.scratch.shape[2] * LANES
    if offset + size > limit:
        raise MemoryFault(offset, "scalar scratch", f"past the wave's {limit}-byte private segment")
    return [(d % LANES, 4 * (d // LANES)) for d in range(offset // 4, (offset + size) // 4)]


def _access(ops: list[Operand], mods: dict, seg: str, dwords: int, kind: str | None):
    """s_store / s_buffer_store / s_scratch_store (kind None) and s_scratch_load: dwords SGPRs from ops[0]."""
    data = ops[0]

    def access(ex, g) -> None:
        w = ex.w
        addr, ok = _addresses(ex, ops, mods, seg, g, 4 * dwords)
        for i, wave in enumerate(np.arange(w.n)[g]):
            if not ok[i]:
                continue
            if seg == "scratch_":
                for k, (lane, at) in enumerate(_scratch(ex, int(wave), int(addr[i]) & ~3, 4 * dwords)):
                    word = ex.scratch[wave, lane, at : at + 4]
                    if kind == "load":
                        w.s[data.index + k, wave] = word.view(np.uint32)[0]
                    else:
                        word[:] = np.uint32(w.s[data.index + k, wave]).reshape(1).view(np.uint8)
                continue
            ex.mem.write(np.asarray([addr[i] & ~np.uint64(3)]), w.s[data.index : data.index + dwords, wave].astype(
                np.uint32).view(np.uint8).reshape(1, -1))
    return access


def _atomic(ops: list[Operand], mods: dict, seg: str, op: str, bits: int):
    """s_(buffer_)atomic_*: read-modify-write of a dword (or, _x2, a qword); glc returns the old value into the
    data SGPRs."""
    from usergpu.emu.amd.exec.valu import evaluate

    data = ops[0]
    dtype = {"s": np.int32 if bits == 32 else np.int64}.get(op[0], np.uint32 if bits == 32 else np.uint64)
    size = bits // 8
    returns = "glc" in mods

    def atomic(ex, g) -> None:
        w = ex.w
        addr, ok = _addresses(ex, ops, mods, seg, g, size)
        for i, wave in enumerate(np.arange(w.n)[g]):
            if not ok[i]:
                continue
            where = np.asarray([addr[i] & ~np.uint64(size - 1)])
            words = w.s[data.index : data.index + 2 * size // 4, wave].astype(np.uint32).view(dtype)
            old = ex.mem.read(where, size).view(dtype).reshape(1)
            new = np.asarray(evaluate(OPS[op], {"a": old, "b": words[:1], "c": words[1:2] if op == "cmpswap"
                                                else None})).astype(dtype)
            ex.mem.write(where, new.view(np.uint8).reshape(1, -1))
            if returns:
                w.s[data.index : data.index + size // 4, wave] = old.view(np.uint32)
    return atomic
