"""Operand printers particular to gfx9 (hand-written facts of LLVM's AMDGPU syntax, not generated); in the package's
table (text/__init__.py)."""

from __future__ import annotations

from usergpu.isa.amd.text import base
from usergpu.isa.amd.text.base import WIDTHS, _mods, _range, _shex, src, sreg

Printer = base.Printer
SDWA_TYPES = ("i", "b16", "f16", "f32")
AWIDTHS = (*WIDTHS, 32)  # MFMA results reach 32 registers
GPR_IDX = ("SRC0", "SRC1", "SRC2", "DST")
# the f8f6f4 MFMAs: registers of the A (by cbsz) and B (by blgp) operands by format: fp8, bf8, fp6, bf6, fp4
FMT_REGS = (8, 8, 6, 6, 4, 8, 8, 8)
DFMT = ("INVALID 8 16 8_8 32 16_16 10_11_11 11_11_10 10_10_10_2 2_10_10_10 8_8_8_8 32_32 16_16_16_16 32_32_32 "
        "32_32_32_32 RESERVED_15").split()
NFMT = "UNORM SNORM USCALED SSCALED UINT SINT RESERVED_6 FLOAT".split()


def waitcnt(v: int) -> str:
    """gfx9 s_waitcnt: vmcnt [3:0] and [15:14], expcnt [6:4], lgkmcnt [11:8]; counters at their maximum are left
    out (all of them shown when all are)."""
    parts = [("vmcnt", v & 15 | (v >> 14 & 3) << 4, 63), ("expcnt", v >> 4 & 7, 7), ("lgkmcnt", v >> 8 & 15, 15)]
    shown = [f"{n}({c})" for n, c, top in parts if c != top] or [f"{n}({c})" for n, c, _ in parts]
    return " ".join(shown)


def gpr_idx(v: int) -> str:
    """s_set_gpr_idx_mode/_on's mode: gpr_idx(SRC0,...) for the bits set, hex beyond 4 bits."""
    return f"gpr_idx({','.join(n for i, n in enumerate(GPR_IDX) if v >> i & 1)})" if v < 16 else f"0x{v:x}"


def buf_format(v: int) -> str:
    """MTBUF's format (dfmt in bits 0..3, nfmt 4..6): the parts not at their defaults (8, UNORM)."""
    parts = [f"BUF_DATA_FORMAT_{DFMT[v & 15]}"] if v & 15 != 1 else []
    parts += [f"BUF_NUM_FORMAT_{NFMT[v >> 4]}"] if v >> 4 else []
    return f" format:[{','.join(parts)}]" if parts else ""


def _acc(v: int, width: int, acc: int) -> str:
    return _range("a" if acc else "v", v, width)


def _avsrc(v: int, width: int, ftype: str, acc: int, gen: int, lit: int | None) -> str | None:
    """A source that names AGPRs instead of VGPRs when its acc bit is set."""
    return _acc(v - 256, width, acc) if v >= 256 else src(v, width, ftype, gen, lit)


def _sdwa(v: int, s: int, width: int, ftype: str, gen: int) -> str | None:
    """An SDWA source: a VGPR, or with its s bit a scalar register or inline constant (no literal)."""
    return src(v if s else v + 256, width, ftype, gen, None)


def _sext(text: str | None, sext: int) -> str | None:
    return None if text is None else f"sext({text})" if sext else text


def _mubuf_vaddr(offen: int, idxen: int, v: int) -> str:
    return _range("v", v, 2) if offen and idxen else f"v{v}" if offen or idxen else "off"


def _build() -> dict[str, tuple[tuple[str, ...], Printer]]:
    p: dict[str, tuple[tuple[str, ...], Printer]] = {}
    for w in AWIDTHS:
        p[f"a{w}"] = (("reg",), lambda c, v, w=w: _range("a", v, w))
        p[f"av{w}"] = (("reg", "acc"), lambda c, v, a, w=w: _acc(v, w, a))
        p[f"asrc{w}"] = (("src",), lambda c, v, w=w: _range("a", v - 256, w) if v >= 256 else None)
        for t in base.TYPES:
            p[f"avsrc{w}_{t}"] = (("src", "acc"), lambda c, v, a, w=w, t=t: _avsrc(v, w, t, a, c.gen, c.lit))
    for t in SDWA_TYPES:
        p[f"sdwa_{t}"] = (("src", "sdwas"), lambda c, v, s, t=t: _sdwa(v, s, 1, t, c.gen))
        p[f"sdwam_{t}"] = (("src", "sdwas", "abs", "neg"),
                           lambda c, v, s, a, n, t=t: _mods(_sdwa(v, s, 1, t, c.gen), a, n))
        p[f"sdwax_{t}"] = (("src", "sdwas", "sext"), lambda c, v, s, x, t=t: _sext(_sdwa(v, s, 1, t, c.gen), x))
    p["mfma_a"] = (("offset", "src", "acc"), lambda c, f, v, a: _avsrc(v, FMT_REGS[f], "i", a, c.gen, c.lit))
    # B by blgp's bits 1 and 2: bit 0 (fp8/bf8, fp6/bf6) changes no width, so the learner does not bind it (the
    # reserved blgp 5 prints 8 registers in LLVM, 4 here)
    p["mfma_b2"] = (("src", "acc", "flag", "flag"),
                    lambda c, v, a, b1, b2: _avsrc(v, FMT_REGS[b1 << 1 | b2 << 2], "i", a, c.gen, c.lit))
    p["sdwa_sdst"] = (("reg", "sdwasd"), lambda c, v, sd: sreg(v, 2, c.gen) if sd else "vcc")
    p["gpr_idx"] = (("imm",), lambda c, v: gpr_idx(v))
    p["gpr_idx_src"] = (("src",), lambda c, v: gpr_idx(v))
    p["waitcnt9"] = (("imm",), lambda c, v: waitcnt(v))
    p["soffset21"] = (("soffset21",), lambda c, v: _shex(v, 21))
    p["mubuf_vaddr"] = (("flag", "flag", "reg"), lambda c, o, i, v: _mubuf_vaddr(o, i, v))
    return p


PRINTERS = _build()
STYLES = {"fmt9": (buf_format, (0, 0x74))}
