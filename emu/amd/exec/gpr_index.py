"""gfx9's VGPR indexing mode: s_set_gpr_idx_on turns it on with an index (M0[7:0]) and the operands it moves
(M0[15:12]: SRC0, SRC1, SRC2, DST); until s_set_gpr_idx_off every VALU instruction reads and writes the VGPRs those
operands name plus the index (how LLVM indexes a register array by a value on gfx9)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from usergpu.emu.amd.exec.operands import parse

M0 = 125
SETTERS = ("s_set_gpr_idx_on", "s_set_gpr_idx_off", "s_set_gpr_idx_idx", "s_set_gpr_idx_mode")
ROLES = {"src0": 1, "src1": 2, "vsrc1": 2, "src2": 4, "vdst": 8}  # an operand's field -> its M0[15:12] bit


def setter(name: str, inst):
    """The mode's instructions: the index from S0[7:0] into M0[7:0] (on, idx), the operand bits from the
    immediate into M0[15:12] (on, mode), the mode itself per wave (on, off)."""
    src = parse(inst.operands[0].text) if name in ("s_set_gpr_idx_on", "s_set_gpr_idx_idx") else None
    bits = inst.fields.get("ssrc1", inst.fields.get("simm16", 0)) & 0xF

    def run(ex, g) -> None:
        w = ex.w
        m0 = w.s[M0, g].astype(np.uint32)
        if src is not None:
            m0 = m0 & np.uint32(~0xFF & 0xFFFFFFFF) | (w.read(src, "u32", g, False) & np.uint32(0xFF))
        if name in ("s_set_gpr_idx_on", "s_set_gpr_idx_mode"):
            m0 = m0 & np.uint32(~0xF000 & 0xFFFFFFFF) | np.uint32(bits << 12)
        w.s[M0, g] = m0
        if name in ("s_set_gpr_idx_on", "s_set_gpr_idx_off"):
            w.gpr_idx[g] = name == "s_set_gpr_idx_on"
    return run


def indexed(step, build, ops, inst):
    """A VALU step that, for the waves in indexing mode, runs as the instruction with its moved operands (one
    variant per index and operand bits, built by build(executor, ops) once)."""
    roles = [next((bit for f, bit in ROLES.items() if f in o.fields), 0) for o in inst.operands]
    if ops is None or len(roles) != len(ops) or not any(o.kind == "v" and r for o, r in zip(ops, roles, strict=True)):
        return step
    variants: dict[int, object] = {}

    def variant(ex, key: int):
        if key not in variants:
            moved = [replace(o, index=o.index + (key & 0xFF)) if o.kind == "v" and key >> 8 & r else o
                     for o, r in zip(ops, roles, strict=True)]
            variants[key] = build(ex, moved)
        return variants[key]

    def run(ex, g) -> None:
        w = ex.w
        on = w.gpr_idx[g]
        if not on.any():
            return step(ex, g)
        waves = np.arange(w.n)[g]
        if not on.all():
            step(ex, waves[~on])
        waves = waves[on]
        m0 = w.s[M0, waves].astype(np.int64)
        keys = (m0 & 0xFF) | (m0 >> 12 & 0xF) << 8
        for key in np.unique(keys):
            variant(ex, int(key))(ex, waves[keys == key])
        return None
    return run
