"""The state of a batch of waves and typed access to it: SGPRs and VGPRs by (register, wave[, lane]), SCC, EXEC.

Every wave of the batch is a row; an instruction runs on the group of waves at its PC (g: wave indices, or a
slice when it is all of them), so a VGPR read is one numpy array of shape (waves, lanes).
"""

from __future__ import annotations

import functools
import math
import sys
import threading

import numpy as np

from usergpu.emu.amd.exec.helpers import DTYPES
from usergpu.emu.amd.exec.operands import Operand, const_bits

UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64, 8: np.uint8}
SPARE_BYTES, SPARES = 1 << 20, 4  # VGPR files this big are kept for the next batch (fresh pages cost more than a
_spare = threading.local()        # memset), at most SPARES shapes per thread


def _zeroed(shape: tuple[int, int, int]) -> np.ndarray:
    """A zeroed uint32 array: a big one reuses the thread's spare of that shape once nothing else refers to it."""
    if math.prod(shape) * 4 < SPARE_BYTES:
        return np.zeros(shape, np.uint32)
    spares = _spare.__dict__.setdefault("arrays", {})
    base = spares.pop(shape, None)
    if base is not None and sys.getrefcount(base) == 2:  # this name and getrefcount's argument: no view is alive
        base.fill(0)
    else:
        base = np.zeros(shape, np.uint32)
    spares[shape] = base
    while len(spares) > SPARES:
        spares.pop(next(iter(spares)))
    return base
NULL, VCC, EXEC = 124, 106, 126


@functools.cache
def width(typ: str) -> int:
    return int("".join(c for c in typ if c.isdigit()) or 32)


class Waves:
    def __init__(self, n: int, lanes: int, vgprs: int, agprs: int = 0):
        self.n, self.lanes = n, lanes
        # indexed [register, wave(, lane)]; laid out wave by wave, so one wave's registers are together (what the
        # native backend, which runs a wave at a time, reads). gfx90a+'s AccVGPRs follow the ArchVGPRs in the one
        # file, from acc (the descriptor's ACCUM_OFFSET)
        self.acc = vgprs
        self.v = _zeroed((n, max(vgprs + agprs, 1), lanes)).transpose(1, 0, 2)
        self.s = np.zeros((n, 128), np.uint32).T
        self._s64 = self.s.T.view(np.uint64)  # [wave, pair]: an even SGPR and the next as one value (EXEC, VCC)
        self.scc = np.zeros(n, np.uint32)
        self.pc = np.zeros(n, np.int64)
        self.done = np.zeros(n, bool)
        self.waiting = np.zeros(n, bool)  # at a barrier
        self.gpr_idx = np.zeros(n, bool)  # gfx9's VGPR indexing mode on (gpr_index.py)
        self.steps = np.zeros(n, np.int64)

    def __getstate__(self) -> dict:  # a copy's _s64 must view its own SGPRs, not be a copy of them
        return {k: v for k, v in self.__dict__.items() if k != "_s64"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._s64 = self.s.T.view(np.uint64)

    def reset(self) -> None:
        """Every register and flag zeroed, as a new batch's."""
        for a in (self.v, self.s, self.scc, self.pc, self.done, self.waiting, self.gpr_idx, self.steps):
            a.fill(0)

    # ---- EXEC and lane masks -------------------------------------------------------------------------------
    def exec_bits(self, g) -> np.ndarray:
        return self.sget(EXEC, self.lanes // 32, g).astype(np.uint64, copy=False)

    def mask(self, bits: np.ndarray) -> np.ndarray:
        """(waves,) lane bits -> (waves, lanes) bool."""
        octets = np.ascontiguousarray(bits, np.uint64).view(np.uint8).reshape(-1, 8)
        return np.unpackbits(octets, axis=1, count=self.lanes, bitorder="little").view(bool)

    def exec_mask(self, g) -> np.ndarray:
        return self.mask(self.exec_bits(g))

    def pack(self, lanes: np.ndarray) -> np.ndarray:
        """(waves, lanes) bool -> (waves,) lane bits."""
        octets = np.packbits(lanes, axis=1, bitorder="little")
        return octets.view(UINT[self.lanes]).reshape(-1).astype(np.uint64, copy=False)

    # a lane mask in SGPRs: one register per 32 lanes, whatever the text names (LLVM prints wave32's vcc_lo)
    def lanes_of(self, index: int, g) -> np.ndarray:
        return self.mask(self.sget(index, self.lanes // 32, g).astype(np.uint64))

    def set_lanes(self, index: int, g, lanes: np.ndarray) -> None:
        self.sset(index, self.lanes // 32, g, self.pack(lanes))

    # ---- scalar registers ----------------------------------------------------------------------------------
    def sget(self, index: int, count: int, g) -> np.ndarray:
        """count SGPRs from index as one unsigned value per wave (32 or 64 bits)."""
        if index == NULL:
            return np.zeros(self.s[0, g].shape, UINT[32 * min(count, 2)])
        if count == 1:
            return self.s[index, g].copy()
        if index % 2 == 0:  # an aligned pair (as the ISA requires of 64-bit operands)
            pair = self._s64[g, index // 2]
            return pair.copy() if isinstance(g, slice) else pair  # not a view: the pair may be written while in use
        return self.s[index, g].astype(np.uint64) | (self.s[index + 1, g].astype(np.uint64) << np.uint64(32))

    def sset(self, index: int, count: int, g, value: np.ndarray) -> None:
        if index == NULL:
            return
        value = np.asarray(value)
        if count == 1:
            self.s[index, g] = value.astype(np.uint64).astype(np.uint32) if value.dtype != np.uint32 else value
        else:
            u = value.astype(np.uint64)
            self.s[index, g] = (u & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            self.s[index + 1, g] = (u >> np.uint64(32)).astype(np.uint32)

    # ---- typed operands ------------------------------------------------------------------------------------
    def read(self, op: Operand, typ: str, g, vector: bool = True) -> np.ndarray:
        """An operand's value as typ: (waves, lanes) for VGPRs, (waves, 1) for scalars, (1, 1) for constants
        (or (waves,) for scalars when vector is False). VOP modifiers (neg, abs) apply to float types."""
        bits = width(typ)
        u = UINT[max(bits, 16) if bits != 64 else 64]
        if op.kind == "v":
            raw = self.v[op.index, g]
            if isinstance(g, slice):  # a view: copy, so a write before the value is used cannot change it
                raw = raw.copy()
            if bits == 64:
                raw = raw.astype(np.uint64) | (self.v[op.index + 1, g].astype(np.uint64) << np.uint64(32))
            elif bits <= 16:
                raw = ((raw >> np.uint32(16 * (op.half or 0))) & np.uint32(0xFFFF)).astype(np.uint16)
        elif op.kind == "s":
            raw = self.sget(op.index, 2 if bits == 64 else 1, g)
            if bits <= 16:  # a 16-bit source's half (op_sel)
                raw = raw >> np.uint32(16 * (op.half or 0))
            raw = raw.astype(u) if bits != 64 else raw
            raw = raw[:, None] if vector else raw
        elif op.kind == "special":
            raw = {"scc": self.scc[g], "execz": (self.exec_bits(g) == 0).astype(np.uint32),
                   "vccz": (self.sget(VCC, self.lanes // 32, g) == 0).astype(np.uint32)}[op.value]
            raw = raw.astype(u)
            raw = raw[:, None] if vector else raw
        else:
            raw = np.asarray(const_bits(op, typ), dtype=u)
            raw = raw.reshape(1, 1) if vector else raw.reshape(1)
        raw = raw.astype(u, copy=False)
        val = raw.view(DTYPES[typ]) if typ != "bf16" else raw
        if typ.startswith("f") and (op.abs or op.neg):
            val = np.abs(val) if op.abs else val
            val = -val if op.neg else val
        return val

    def write(self, op: Operand, typ: str, g, value: np.ndarray, lanes: np.ndarray | None) -> None:
        """Store a value of typ into a VGPR operand for the given lanes (all where None) or an SGPR operand."""
        bits = width(typ)
        value = np.asarray(value)
        if value.dtype != DTYPES.get(typ, value.dtype):
            value = value.astype(DTYPES[typ])
        raw = value.view(UINT[bits]) if bits in UINT else value
        if op.kind == "s":
            self.sset(op.index, 2 if bits == 64 else 1, g, raw.reshape(-1) if raw.ndim else raw)
            return
        if op.kind != "v":
            return
        parts = [(op.index, raw.astype(np.uint32) if bits <= 32 else (raw & np.uint64(0xFFFFFFFF)).astype(np.uint32))]
        if bits == 64:
            parts.append((op.index + 1, (raw >> np.uint64(32)).astype(np.uint32)))
        if bits <= 16 and not op.zero_high:
            shift = np.uint32(16 * (op.half or 0))
            old = self.v[op.index, g]
            parts = [(op.index, (old & ~(np.uint32(0xFFFF) << shift)) | (raw.astype(np.uint32) << shift))]
        for index, new in parts:
            if lanes is None:
                self.v[index, g] = new
            elif isinstance(g, slice):  # a view of the registers: written in place
                np.copyto(self.v[index, g], new, where=lanes)
            else:
                self.v[index, g] = np.where(lanes, new, self.v[index, g])

    def dump(self, wave: int) -> dict:
        """One wave's registers, for a person reading a fault."""
        exec_bits = int(self.exec_bits(slice(wave, wave + 1))[0])
        return {"pc": int(self.pc[wave]), "scc": int(self.scc[wave]), "exec": exec_bits,
                "s": [int(x) for x in self.s[:, wave]], "v": self.v[:, wave, :].copy()}
