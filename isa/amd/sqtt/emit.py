"""wave_tokens(): the tokens an SQ writes for the waves it sees, the inverse of wave_instructions (a simulator's
trace: emu/amd/mock/thread_trace.py writes these to a trace buffer through encode).

gfx11/gfx12: a wave of the instruction-traced SIMD leaves WAVESTART, then for each instruction the token the
hardware uses for it (VALUINST for VALU, IMMEDIATE for waits, INST with the op of its kind, none for the scheduling
hints), and WAVEEND for its s_endpgm; other waves leave nothing.

gfx9 (as real gfx950 captures show it): every wave of the shader engine leaves CDNA_WAVESTART and CDNA_WAVEEND. A
wave of the traced CU issues each instruction with a CDNA_ISSUE (one token per SIMD and cycle, a 2-bit status per
wave slot: 1 stalled, 2 issued, 3 an immediate that the SQ itself runs: s_waitcnt, s_nop and kin; an immediate's
wait is implied, from the end of the wave's previous instruction), and an issued one is then confirmed 4 cycles
later (by the wave's end at the latest) by a CDNA_INST naming its type (by encoding: VALU_32/VALU_64,
SALU_32/SALU_64, FLAT_RD, JUMP / NEXT for a branch taken or not, OTHER_MSG for s_endpgm and s_sendmsg, ...).

Tokens at one time go in the order the decoder needs: a dispatch's REG tokens, an instruction's confirmation, a
wave's end, the next wave's start (it may take the slot just freed), then issues.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from usergpu.isa.amd.sqtt.codec import layout_of
from usergpu.isa.amd.sqtt.tables import GFX9
from usergpu.isa.amd.sqtt.waves import TOKENLESS

PGM_LO, PGM_HI = 0xC, 0xD  # COMPUTE_PGM_LO/HI's compute register offsets (dword address less 0x2E00)
CONFIRM = 4  # cycles from a gfx9 issue to its CDNA_INST
# first token of the same time first (see the module doc)
_RANK = {"REG": 0, "CDNA_REG_CS_PRIV": 0, "CDNA_INST": 1, "CDNA_WAVEEND": 2,
         "WAVESTART": 3, "CDNA_WAVESTART": 3, "CDNA_ISSUE": 4, "WAVEEND": 5}
_IMMEDIATE_GFX9 = ("s_waitcnt", "s_nop", "s_barrier", "s_sleep", "s_setprio")
# gfx9 INST types (tables.py's gfx9 ops) by mnemonic prefix; the first that matches
_GFX9_OPS = (("s_load", 0), ("s_buffer_load", 0), ("s_dcache", 0), ("s_memtime", 0), ("s_memrealtime", 0),
             ("s_store", 16), ("s_buffer_store", 16), ("s_endpgm", 15), ("s_sendmsg", 15), ("v_mfma", 28),
             ("v_smfmac", 28), ("ds_", 6), ("global_", "FLAT"), ("flat_", "FLAT"), ("scratch_", "FLAT"),
             ("buffer_", "VMEM"), ("tbuffer_", "VMEM"))
_MEMORY_OPS = {("FLAT", True): 14, ("FLAT", False): 4, ("VMEM", True): 2, ("VMEM", False): 3}
JUMP, NEXT = 12, 13
# gfx11/gfx12 INST ops by mnemonic prefix (rocprof's EINST: SMEM_RD, MESSAGE, BARRIER, LDS_RD, BUF_RD_1, BUF_WR_1)
_RDNA_OPS = (("s_load", 1), ("s_buffer_load", 1), ("s_prefetch", 1), ("s_dcache", 1), ("s_sendmsg", 9),
             ("s_barrier", 19), ("ds_", 41), ("global_", "VMEM"), ("flat_", "VMEM"), ("scratch_", "VMEM"),
             ("buffer_", "VMEM"), ("tbuffer_", "VMEM"), ("image_", "VMEM"))
TAKEN, NOT_TAKEN = 3, 4


@dataclass(frozen=True, slots=True)
class Ran:
    """An instruction a traced wave ran: its address, text and encoding size, the cycle it issued (after its
    stall), the cycles it waited before, and for a branch whether it jumped."""

    pc: int
    text: str
    size: int
    time: int
    stall: int = 0
    taken: bool = False


@dataclass(frozen=True, slots=True)
class Wave:
    """A wave the trace sees: where it ran (shader array, WGP or gfx9 CU, SIMD, wave slot), its lifetime in
    cycles, the lanes it started with, and, on the instruction-traced unit, what it ran (None elsewhere)."""

    sa: int
    unit: int
    simd: int
    slot: int
    start: int
    end: int
    lanes: int = 64
    ran: tuple[Ran, ...] | None = None


def dispatch_tokens(arch: str, program: int, time: int) -> list[tuple[str, dict, int]]:
    """What a dispatch leaves before its waves: its entry address, as the COMPUTE_PGM_LO/HI register tokens."""
    kind, extra = ("CDNA_REG_CS_PRIV", {"me": 1}) if layout_of(arch) is GFX9 else ("REG", {"cs": 1})
    return [(kind, {**extra, "addr": offset, "data": value}, time)
            for offset, value in ((PGM_LO, program >> 8 & 0xFFFFFFFF), (PGM_HI, program >> 40 & 0xFFFF))]


def wave_tokens(arch: str, waves: Iterable[Wave]) -> list[tuple[str, dict, int]]:
    """The tokens (kind, fields, time) the waves leave, in stream order (see the module doc)."""
    gfx9 = layout_of(arch) is GFX9
    out: list[tuple[str, dict, int]] = []
    for w in waves:
        out += _gfx9(w) if gfx9 else _rdna(w)
    if gfx9:
        out = _merge_issues(out)
    return sorted(out, key=lambda t: (t[2], _RANK.get(t[0], 4)))


def _op(table, mnemonic: str):
    return next((op for prefix, op in table if mnemonic.startswith(prefix)), None)


def _rdna(w: Wave) -> list[tuple[str, dict, int]]:
    if w.ran is None:
        return []
    ids = {"sa": w.sa, "wgp": w.unit, "simd": w.simd, "wave": w.slot}
    out = [("WAVESTART", ids, w.start)]
    for r in w.ran:
        mnemonic = r.text.split(None, 1)[0]
        if mnemonic in TOKENLESS:
            continue
        if mnemonic.startswith("s_endpgm"):
            out.append(("WAVEEND", ids, r.time))
        elif mnemonic.startswith("v_"):
            out.append(("VALUINST", {"wave": w.slot}, r.time))
        elif mnemonic.startswith(("s_waitcnt", "s_wait_")):
            out.append(("IMMEDIATE", {"wave": w.slot}, r.time))
        else:
            op = _op(_RDNA_OPS, mnemonic)
            if op == "VMEM":
                op = 47 if "load" in mnemonic else 49
            elif mnemonic.startswith(("s_cbranch", "s_branch")):
                op = TAKEN if r.taken else NOT_TAKEN
            out.append(("INST", {"wave": w.slot, "op": 0 if op is None else op}, r.time))
    return out


def gfx9_op(text: str, size: int, taken: bool = False) -> int | None:
    """The CDNA_INST type of an instruction; None for an immediate one, which has no CDNA_INST."""
    mnemonic = text.split(None, 1)[0]
    if mnemonic.startswith(_IMMEDIATE_GFX9):
        return None
    if mnemonic.startswith(("s_cbranch", "s_branch")):
        return JUMP if taken else NEXT
    op = _op(_GFX9_OPS, mnemonic)
    if op in ("FLAT", "VMEM"):
        return _MEMORY_OPS[op, "load" in mnemonic]
    if op is not None:
        return op
    wide = size > 4
    return (18 if wide else 5) if mnemonic.startswith("v_") else (17 if wide else 1)  # VALU_64/32, SALU_64/32


def _gfx9(w: Wave) -> list[tuple[str, dict, int]]:
    ids = {"sh": w.sa, "cu": w.unit, "simd": w.simd, "wave": w.slot}
    out = [("CDNA_WAVESTART", {**ids, "count": w.lanes}, w.start)]
    for r in w.ran or ():
        op = gfx9_op(r.text, r.size, r.taken)
        if r.stall and op is not None:  # an issued one stalled from its first try (an immediate's wait is implied)
            out.append(("CDNA_ISSUE", {"simd": w.simd, f"inst{w.slot}": 1}, r.time - r.stall))
        out.append(("CDNA_ISSUE", {"simd": w.simd, f"inst{w.slot}": 2 if op is not None else 3}, r.time))
        if op is not None:
            out.append(("CDNA_INST", {"wave": w.slot, "simd": w.simd, "op": op}, min(r.time + CONFIRM, w.end)))
    out.append(("CDNA_WAVEEND", ids, w.end))
    return out


def _merge_issues(tokens: list[tuple[str, dict, int]]) -> list[tuple[str, dict, int]]:
    """One CDNA_ISSUE per SIMD and cycle, with every slot that issued then."""
    out, issues = [], {}
    for kind, fields, time in tokens:
        if kind != "CDNA_ISSUE":
            out.append((kind, fields, time))
        elif (time, fields["simd"]) in issues:
            issues[time, fields["simd"]][1].update(fields)
        else:
            issues[time, fields["simd"]] = entry = (kind, dict(fields), time)
            out.append(entry)
    return out
