"""DPP: src0 read from another lane of the row (16 lanes) by a control (quad_perm, row shifts and rotates,
mirrors, row_share/xmask; gfx9's whole-wave shifts and rotates by one lane and row broadcasts) or from any of 8
lanes (dpp8); row_mask/bank_mask disable writes, bound_ctrl reads 0 from a lane outside the row."""

from __future__ import annotations

import numpy as np

CONTROLS = ("quad_perm", "row_shl", "row_shr", "row_ror", "row_mirror", "row_half_mirror", "row_share",
            "row_xmask", "wave_shl", "wave_shr", "wave_rol", "wave_ror", "row_bcast")


def permute(mods: dict, lanes: int) -> dict:
    """The source lane of every lane (-1: none) and the write masks, from the instruction's DPP modifiers."""
    lane = np.arange(lanes)
    pos, row = lane % 16, lane - lane % 16
    if "dpp8" in mods:
        sel = [int(x) for x in mods["dpp8"].strip("[]").split(",")]
        src = lane - lane % 8 + np.asarray(sel)[lane % 8]
    elif "quad_perm" in mods:
        sel = [int(x) for x in mods["quad_perm"].strip("[]").split(",")]
        src = lane - lane % 4 + np.asarray(sel)[lane % 4]
    elif "row_shl" in mods:
        n = int(mods["row_shl"])
        src = np.where(pos + n < 16, lane + n, -1)
    elif "row_shr" in mods:
        n = int(mods["row_shr"])
        src = np.where(pos - n >= 0, lane - n, -1)
    elif "row_ror" in mods:
        src = row + (pos - int(mods["row_ror"])) % 16
    elif "row_mirror" in mods:
        src = row + 15 - pos
    elif "row_half_mirror" in mods:
        src = lane - lane % 8 + 7 - lane % 8
    elif "row_share" in mods:
        src = row + int(mods["row_share"])
    elif "row_xmask" in mods:
        src = row + (pos ^ int(mods["row_xmask"]))
    elif "wave_shl" in mods:  # gfx9: lane i reads lane i + 1 of the wave (wave_shr: i - 1), none past its ends
        src = np.where(lane + 1 < lanes, lane + 1, -1)
    elif "wave_shr" in mods:
        src = lane - 1
    elif "wave_rol" in mods:
        src = (lane + 1) % lanes
    elif "wave_ror" in mods:
        src = (lane - 1) % lanes
    elif "row_bcast" in mods:  # row_bcast:15: lane 15 of each row to the next row; :31: lane 31 to rows 2 and 3
        src = np.where(row >= 16, row - 1, -1) if mods["row_bcast"] == "15" else np.where(lane >= 32, 31, -1)
    else:
        src = lane
    row_mask = int(mods.get("row_mask", "0xf"), 0)
    bank_mask = int(mods.get("bank_mask", "0xf"), 0)
    enabled = ((row_mask >> (lane // 16)) & 1).astype(bool) & ((bank_mask >> (pos // 4)) & 1).astype(bool)
    return {"src": src, "bound_ctrl": "bound_ctrl" in mods, "fi": "fi" in mods, "enabled": enabled}


def apply(perm: dict, values: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """values read through the permutation, and the lanes whose read is valid: the source lane in the row and,
    unless fi (fetch inactive), active; with bound_ctrl an invalid read is 0 and the lane still writes."""
    values = np.broadcast_to(values, active.shape) if values.shape[-1] == 1 else values
    src = perm["src"]
    inside = src >= 0
    safe = np.where(inside, src, 0)
    out = values[..., safe]
    ok = np.broadcast_to(inside, out.shape) & (True if perm["fi"] else active[..., safe])
    if perm["bound_ctrl"]:
        out = np.where(ok, out, 0).astype(out.dtype)
        ok = np.ones_like(ok)
    return out, ok

