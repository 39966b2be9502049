"""WMMA: a 16x16x16 (gfx12 iu4: 16x16x32) matrix multiply-accumulate by the whole wave, D = A * B + C, with each
matrix spread over the lanes' VGPRs as the RDNA3 and RDNA4 ISA guides lay them out.

RDNA3 (gfx11): lane l holds row l % 16 of A and column l % 16 of B, all 16 K values (lanes 16..31, and in
wave64 32..63, repeat them); the result's VGPR j in lane l is D[2j + l // 16][l % 16] (wave64: D[4j + l // 16]).
RDNA4 (gfx12, wave32): lanes 0..15 hold the first half of K of their row (A) or column (B), lanes 16..31 the
second; the result's VGPR j in lane l is D[j + 8 * (l // 16)][l % 16].
"""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec.helpers import to_bf16, unpack
from usergpu.emu.amd.exec.operands import Operand

# source element kinds (A's and B's, "iu": signed or unsigned by neg_lo), accumulator type
KINDS = {"f32_16x16x16_f16": ("f16", "f32"), "f32_16x16x16_bf16": ("bf16", "f32"), "f16_16x16x16_f16": ("f16", "f16"),
         "bf16_16x16x16_bf16": ("bf16", "bf16"), "i32_16x16x16_iu8": ("iu8", "i32"),
         "i32_16x16x16_iu4": ("iu4", "i32"), "i32_16x16x32_iu4": ("iu4", "i32"),
         **{f"f32_16x16x16_{a}_{b}": (f"{a} {b}", "f32") for a in ("fp8", "bf8") for b in ("fp8", "bf8")}}


def _elements(w, op: Operand, g, kind: str, signed: bool) -> np.ndarray:
    """(waves, lanes, k) values of a source matrix operand from its VGPRs (as many as the layout fills)."""
    n, lanes = len(w.pc[g]), w.lanes
    regs = np.stack([np.broadcast_to(w.v[op.index + i, g], (n, lanes)) for i in range(op.count)], -1)
    return unpack(regs, ("i" if signed else "u") + kind[2:] if kind.startswith("iu") else kind)


def step(ex, core: str, ops: list[Operand], mods: dict):
    """D = A * B + C. A 16-bit accumulator (f16, bf16) is one value per VGPR, in its low or (op_sel[2]) high half
    on gfx11; two per VGPR, the even row low, on gfx12."""
    m = re.match(r"wmma_(\w+)$", core)
    kind = KINDS.get(m.group(1)) if m else None
    if kind is None:
        return None
    (a_kind, *rest), acc = kind[0].split(), kind[1]
    b_kind = rest[0] if rest else a_kind
    dst, a_op, b_op, c_op = ops[:4]
    neg = [int(x) for x in mods.get("neg_lo", "[0,0,0]").strip("[]").split(",")]
    high = int(mods.get("op_sel", "[0,0,0]").strip("[]").split(",")[-1])
    gfx12 = ex.gen == 12

    def place(e: int) -> tuple[int, int | None]:
        """The VGPR (from the first) and half (None: all 32 bits) of the accumulator's e-th value in a lane."""
        if acc in ("f32", "i32"):
            return e, None
        return (e // 2, e % 2) if gfx12 else (e, high)

    def wmma(ex, g) -> None:
        w = ex.w
        n, lanes = len(w.pc[g]), w.lanes
        lane = np.arange(lanes)
        a = _elements(w, a_op, g, a_kind, bool(neg[0]))
        b = _elements(w, b_op, g, b_kind, bool(neg[1]))
        k = a.shape[-1]
        depth = 2 * k if gfx12 else 16
        A = np.zeros((n, 16, depth))
        B = np.zeros((n, depth, 16))
        if gfx12:  # each lane holds half of K
            for ln in range(min(lanes, 32)):
                A[:, ln % 16, (ln // 16) * k : (ln // 16) * k + k] = a[:, ln]
                B[:, (ln // 16) * k : (ln // 16) * k + k, ln % 16] = b[:, ln]
        else:
            A[:, :, :] = a[:, :16, :16]
            B[:, :, :] = np.swapaxes(b[:, :16, :16], 1, 2)
        D = A @ B
        exec_mask = w.exec_mask(g)
        for e in range(256 // lanes):
            row = (e + 8 * (lane // 16)) if gfx12 else ((lanes // 16) * e + lane // 16)
            reg, half = place(e)
            old = w.v[dst.index + reg, g]
            c = np.broadcast_to(w.v[c_op.index + reg, g], (n, lanes))
            if half is not None:
                c = (c >> np.uint32(16 * half)) & np.uint32(0xFFFF)
            res = D[:, row % 16, lane % 16] + CONVERT[acc][0](c)
            bits = CONVERT[acc][1](res)
            if half is not None:
                bits = (old & ~np.uint32(0xFFFF << 16 * half)) | (bits << np.uint32(16 * half))
            w.v[dst.index + reg, g] = np.where(exec_mask, bits, old)
    return wmma


# accumulator type: (its bits to float64 / int64 values, and values to its bits (uint32))
CONVERT = {
    "f32": (lambda c: c.view(np.float32).astype(np.float64), lambda r: r.astype(np.float32).view(np.uint32)),
    "i32": (lambda c: c.view(np.int32).astype(np.int64), lambda r: r.astype(np.int64).astype(np.int32).view(np.uint32)),
    "f16": (lambda c: c.astype(np.uint16).view(np.float16).astype(np.float64),
            lambda r: r.astype(np.float16).view(np.uint16).astype(np.uint32)),
    "bf16": (lambda c: (c << np.uint32(16)).view(np.float32).astype(np.float64),
             lambda r: to_bf16(r).astype(np.uint32)),
}
