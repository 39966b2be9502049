"""CDNA's LDS instructions RDNA has not: gfx950's transpose loads ds_read_b64_tr_b4 / _b8 / _b16 and
ds_read_b96_tr_b6, and the loads from memory straight into LDS (global_load_lds_*, scratch_load_lds_*, the
MUBUF buffer_load_* ... lds forms).

Transpose loads (CDNA4 ISA, "MFMA transpose load from LDS"; the lane layout Triton's chooseDsReadB64TrLayout
addresses it with): each lane reads 64 bits (b6: 96) holding E consecutive elements (E = 64 / element bits; b6:
16). Within each 16 lanes, lane c + (16 / E) * k holds the elements c * E .. c * E + E - 1 of row k; afterwards
lane j holds element j of rows 0 .. E - 1, in order: the 16 x E block is transposed.

Loads to LDS (LLVM AMDGPUUsage, GFX9 LDS DMA; the CDNA3 guide's MUBUF "LDS" bit): each active lane's data goes to
LDS at M0 + the instruction offset + lane * 4 (lane * 16 for the 12- and 16-byte loads of gfx950); a byte or
short is written as the dword it extends to.
"""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec import memops
from usergpu.emu.amd.exec.operands import SPECIAL, Operand

TRANSPOSE = {"ds_read_b64_tr_b4": (4, 8), "ds_read_b64_tr_b8": (8, 8), "ds_read_b64_tr_b16": (16, 8),
             "ds_read_b96_tr_b6": (6, 12)}  # element bits, bytes per lane
TO_LDS = re.compile(r"^(global|scratch)_load_lds_(\w+)$|^buffer_load_(\w+)$")
SIZES = {"ubyte": 1, "sbyte": 1, "ushort": 2, "sshort": 2, "dword": 4, "dwordx3": 12, "dwordx4": 16}


def step(ex, name: str, ops: list[Operand], mods: dict, inst):
    if name in TRANSPOSE:
        return _transpose(*TRANSPOSE[name], ops, int(mods.get("offset", "0"), 0))
    m = TO_LDS.match(name)
    if not m or (m.group(3) and inst.family != "MUBUF_LDS"):
        return None
    what = m.group(2) or m.group(3)
    return None if what not in SIZES else _to_lds(m.group(1) or "buffer", what, ops, mods)


def _sources(bits: int) -> tuple[np.ndarray, np.ndarray]:
    """For each (lane, element) of a transpose load's result: the lane and element of the data read it is."""
    per_lane = 16 if bits == 6 else 64 // bits
    lane, k = np.meshgrid(np.arange(64), np.arange(per_lane), indexing="ij")
    unit, j = lane // 16 * 16, lane % 16
    return unit + j // per_lane + (16 // per_lane) * k, np.broadcast_to(j % per_lane, lane.shape)


def _transpose(bits: int, size: int, ops: list[Operand], offset: int):
    dst, addr_op = ops[0], ops[1]
    src_lane, src_elem = _sources(bits)
    per_lane = src_lane.shape[1]

    def run(ex, g) -> None:
        w = ex.w
        lanes = w.exec_mask(g)
        addr = memops._lds_addr(ex, addr_op, offset, g)
        inside = memops.lds_inside(ex, lanes, addr, size)
        grp = np.broadcast_to(ex.group[g][:, None, None], lanes.shape + (size,))
        raw = ex.lds[grp, np.where(inside, addr, 0)[..., None] + np.arange(size)]
        raw = np.where(inside[..., None], raw, 0).astype(np.uint64)  # an inactive lane reads nothing: zeros
        whole = sum(raw[..., i] << np.uint64(8 * i) for i in range(size)) if size == 8 else None
        elems = np.stack([_element(raw, whole, bits, e) for e in range(per_lane)], -1)
        out = elems[:, src_lane, src_elem]  # (waves, lanes, per_lane)
        words = np.zeros(lanes.shape + (size // 4,), np.uint64)
        for e in range(per_lane):
            pos = e * bits
            words[..., pos // 32] |= (out[..., e] << np.uint64(pos % 32)) & np.uint64(0xFFFFFFFF)
            if pos % 32 + bits > 32:
                words[..., pos // 32 + 1] |= out[..., e] >> np.uint64(32 - pos % 32)
        for i in range(size // 4):
            w.write(Operand("v", dst.index + i), "u32", g, words[..., i].astype(np.uint32), lanes)
    return run


def _element(raw: np.ndarray, whole: np.ndarray | None, bits: int, e: int) -> np.ndarray:
    """Element e (bits wide, from bit e * bits) of each lane's bytes."""
    if whole is not None:
        return (whole >> np.uint64(e * bits)) & np.uint64((1 << bits) - 1)
    lo, shift = divmod(e * bits, 8)  # b6: a 6-bit field spans at most two bytes
    pair = raw[..., lo] | (raw[..., lo + 1] << np.uint64(8) if lo + 1 < raw.shape[-1] else np.uint64(0))
    return (pair >> np.uint64(shift)) & np.uint64((1 << bits) - 1)


def _to_lds(seg: str, what: str, ops: list[Operand], mods: dict):
    size = SIZES[what]
    imm = int(mods.get("offset", "0"), 0)
    stride = 4 if size <= 4 else 16
    signed = what.startswith("s")

    def run(ex, g) -> None:
        w = ex.w
        lanes = w.exec_mask(g)
        if seg == "buffer":  # vaddr (or off), srsrc, soffset: memops reads them as a load's operands 1..3
            addr, ok = memops._buffer_addresses(ex, [None, *ops], mods, g, size)
            data = memops._gather(ex, addr, lanes & ok, size)
        else:
            addr = memops._lane_addresses(ex, seg, ops[0], ops[1], imm, g)
            if seg == "scratch":
                data = memops._scratch(ex, g, addr, lanes, size, "load")("read", None)
            else:
                data = memops._gather(ex, addr, lanes, size)
        if size < 4:  # extended to a dword
            value = data.view(np.uint8 if size == 1 else np.uint16)[..., 0].astype(np.int64)
            if signed:
                value = np.where(value >> (8 * size - 1), value - (1 << 8 * size), value)
            data = (value & 0xFFFFFFFF).astype(np.uint32)[..., None].view(np.uint8)
        m0 = w.sget(SPECIAL["m0"], 1, g).astype(np.int64)
        lds = m0[:, None] + imm + stride * np.arange(w.lanes)
        grp = np.broadcast_to(ex.group[g][:, None], lanes.shape)
        wi, li = np.nonzero(memops.lds_inside(ex, lanes, lds, data.shape[-1]))
        ex.lds[grp[wi, li][:, None], lds[wi, li][:, None] + np.arange(data.shape[-1])] = data[wi, li]
    return run
