"""gfx9's SDWA (sub-dword addressing): each source is a byte, a word or the dword of its register (src*_sel),
zero- or (sext) sign-extended; the result goes into a byte, word or the dword of the destination (dst_sel), the
rest of it zeroed (UNUSED_PAD), sign-extended from the result (UNUSED_SEXT) or kept (UNUSED_PRESERVE)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from usergpu.emu.amd.exec.helpers import DTYPES
from usergpu.emu.amd.exec.operands import Operand
from usergpu.emu.amd.exec.waves import width

# SdwaSel -> (first bit, bits)
SELECTS = {"BYTE_0": (0, 8), "BYTE_1": (8, 8), "BYTE_2": (16, 8), "BYTE_3": (24, 8), "WORD_0": (0, 16),
           "WORD_1": (16, 16), "DWORD": (0, 32)}
KEYS = ("dst_sel", "dst_unused", "src0_sel", "src1_sel")


def used(mods: dict) -> bool:
    return any(k in mods for k in KEYS)


def source_selects(mods: dict, count: int) -> list[tuple[int, int]]:
    return [SELECTS[mods.get(f"src{i}_sel", "DWORD")] for i in range(count)]


def read(w, op: Operand, typ: str, g, sel: tuple[int, int]) -> np.ndarray:
    """A source through its select: the field, extended to 32 bits, as typ (a 16-bit type takes the low half);
    then float neg/abs."""
    shift, bits = sel
    if (shift, bits) == (0, 32) and not op.sext:
        return w.read(op, typ, g)
    raw = w.read(replace(op, neg=False, abs=False), "u32", g).astype(np.int64)
    field = (raw >> shift) & ((1 << bits) - 1)
    if op.sext:
        field = np.where(field >> (bits - 1), field - (1 << bits), field)
    size = width(typ)
    val = (field & ((1 << size) - 1)).astype(np.uint32 if size == 32 else np.uint16).view(DTYPES[typ])
    if typ.startswith("f"):
        val = np.abs(val) if op.abs else val
        val = -val if op.neg else val
    return val


def place(w, g, dst: Operand, result: np.ndarray, typ: str, mods: dict) -> np.ndarray:
    """The destination dword a result of typ makes under dst_sel / dst_unused."""
    shift, bits = SELECTS[mods.get("dst_sel", "DWORD")]
    unused = mods.get("dst_unused", "UNUSED_PAD")
    res = np.asarray(result).astype(DTYPES[typ], copy=False)
    raw = res.view(np.uint32 if width(typ) == 32 else np.uint16).astype(np.int64) & ((1 << bits) - 1)
    out = raw << shift
    if unused == "UNUSED_SEXT" and shift + bits < 32:
        out = np.where(raw >> (bits - 1), out | (((1 << 32) - 1) ^ ((1 << (shift + bits)) - 1)), out)
    elif unused == "UNUSED_PRESERVE":
        keep = ((1 << 32) - 1) ^ (((1 << bits) - 1) << shift)
        out = out | (w.read(dst, "u32", g).astype(np.int64) & keep)
    return (out & 0xFFFFFFFF).astype(np.uint32)


def merge(value, dst: Operand, typ: str, mods: dict):
    """The writer's value (ex, g) -> (result, lanes) turned into the destination dword (place)."""

    def merged(ex, g) -> tuple[np.ndarray, np.ndarray]:
        result, lanes = value(ex, g)
        return place(ex.w, g, dst, result, typ, mods), lanes
    return merged
