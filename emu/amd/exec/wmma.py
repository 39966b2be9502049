"""WMMA: a 16x16x16 matrix multiply-accumulate by the whole wave, D = A * B + C, with each matrix spread over
the lanes' VGPRs as the RDNA3 and RDNA4 ISA guides lay them out.

RDNA3 (gfx11): lane l holds row l % 16 of A and column l % 16 of B, all 16 K values (lanes 16..31, and in
wave64 32..63, repeat them); the result's VGPR j in lane l is D[2j + l // 16][l % 16] (wave64: D[4j + l // 16]).
RDNA4 (gfx12, wave32): lanes 0..15 hold K 0..7 of their row (A) or column (B), lanes 16..31 K 8..15; the
result's VGPR j in lane l is D[j + 8 * (l // 16)][l % 16].
"""

from __future__ import annotations

import re

import numpy as np

from usergpu.emu.amd.exec.helpers import unpack
from usergpu.emu.amd.exec.operands import Operand

# source element kind ("iu": signed or unsigned by neg_lo), accumulator type
KINDS = {"f32_16x16x16_f16": ("f16", np.float32), "f32_16x16x16_bf16": ("bf16", np.float32),
         "i32_16x16x16_iu8": ("iu8", np.int32), "i32_16x16x16_iu4": ("iu4", np.int32)}


def _elements(w, op: Operand, g, kind: str, signed: bool) -> np.ndarray:
    """(waves, lanes, k) values of a source matrix operand from its VGPRs (as many as the layout fills)."""
    n, lanes = len(w.pc[g]), w.lanes
    regs = np.stack([np.broadcast_to(w.v[op.index + i, g], (n, lanes)) for i in range(op.count)], -1)
    return unpack(regs, ("i" if signed else "u") + kind[2:] if kind.startswith("iu") else kind)


def step(ex, core: str, ops: list[Operand], mods: dict):
    m = re.match(r"wmma_(\w+)$", core)
    kind = KINDS.get(m.group(1)) if m else None
    if kind is None:
        return None
    src_kind, out_type = kind
    dst, a_op, b_op, c_op = ops[:4]
    neg = [int(x) for x in mods.get("neg_lo", "[0,0,0]").strip("[]").split(",")]
    gfx12 = ex.gen == 12

    def wmma(ex, g) -> None:
        w = ex.w
        n, lanes = len(w.pc[g]), w.lanes
        lane = np.arange(lanes)
        a = _elements(w, a_op, g, src_kind, bool(neg[0]))
        b = _elements(w, b_op, g, src_kind, bool(neg[1]))
        A = np.zeros((n, 16, 16))
        B = np.zeros((n, 16, 16))
        if gfx12:  # each lane holds half of K
            k = a.shape[-1]
            for ln in range(min(lanes, 32)):
                A[:, ln % 16, (ln // 16) * k : (ln // 16) * k + k] = a[:, ln]
                B[:, (ln // 16) * k : (ln // 16) * k + k, ln % 16] = b[:, ln]
        else:
            A[:, :, :] = a[:, :16, :16]
            B[:, :, :] = np.swapaxes(b[:, :16, :16], 1, 2)
        rows_per_reg = lanes // 16 if not gfx12 else 1
        nregs = 256 // lanes
        c = np.stack([np.broadcast_to(w.v[c_op.index + j, g], (n, lanes)) for j in range(nregs)], -1)
        cvals = c.view(np.int32 if out_type == np.int32 else np.float32).astype(np.float64)
        D = A @ B
        for j in range(nregs):
            row = (j + 8 * (lane // 16)) if gfx12 else (rows_per_reg * j + lane // 16)
            res = D[:, row % 16, lane % 16] + cvals[..., j]
            bits = res.astype(np.int64).astype(np.int32).view(np.uint32) if out_type == np.int32 else \
                res.astype(np.float32).view(np.uint32)
            w.v[dst.index + j, g] = np.where(w.exec_mask(g), bits, w.v[dst.index + j, g])
    return wmma
