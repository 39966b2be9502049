"""Operand printers particular to gfx12 (hand-written facts of LLVM's AMDGPU syntax, not generated); in the
package's table (text/__init__.py).

gfx12's memory instructions end in a cache policy (th:, scope:) whose th text depends on the scope (th 3 is
BYPASS only at system scope, an atomic's cascade bit is named only from device scope) and on whether the opcode
loads, stores or is an atomic. The table learner binds trailing modifiers one field at a time, so it cannot
learn that: those families declare their trailing fields with kinds of their own (g12*), which keeps the
learner from splitting them off, and their last operand's printer prints the whole tail (offset, format, th,
scope, ...). Each tail printer comes in one variant per opcode kind (load, store, atomic) and value of the
th bit that is part of the opcode; the learner picks the one that reproduces LLVM's text.
"""

from __future__ import annotations

from collections.abc import Callable

from usergpu.isa.amd.text import base
from usergpu.isa.amd.text.base import _half, _mods, _range, sreg

Printer = base.Printer

SCOPES = ("", " scope:SCOPE_SE", " scope:SCOPE_DEV", " scope:SCOPE_SYS")
TH_NAMES = {1: "NT", 2: "HT", 3: "LU", 4: "NT_RT", 5: "RT_NT", 6: "NT_HT"}
# tbuffer's unified formats, by value; 1 (8_UNORM) is the default and not printed, 64.. print as numbers
FORMATS = ("INVALID 8_UNORM 8_SNORM 8_USCALED 8_SSCALED 8_UINT 8_SINT 16_UNORM 16_SNORM 16_USCALED 16_SSCALED "
           "16_UINT 16_SINT 16_FLOAT 8_8_UNORM 8_8_SNORM 8_8_USCALED 8_8_SSCALED 8_8_UINT 8_8_SINT 32_UINT 32_SINT "
           "32_FLOAT 16_16_UNORM 16_16_SNORM 16_16_USCALED 16_16_SSCALED 16_16_UINT 16_16_SINT 16_16_FLOAT "
           "10_11_11_FLOAT 11_11_10_FLOAT 10_10_10_2_UNORM 10_10_10_2_SNORM 10_10_10_2_UINT 10_10_10_2_SINT "
           "2_10_10_10_UNORM 2_10_10_10_SNORM 2_10_10_10_USCALED 2_10_10_10_SSCALED 2_10_10_10_UINT "
           "2_10_10_10_SINT 8_8_8_8_UNORM 8_8_8_8_SNORM 8_8_8_8_USCALED 8_8_8_8_SSCALED 8_8_8_8_UINT 8_8_8_8_SINT "
           "32_32_UINT 32_32_SINT 32_32_FLOAT 16_16_16_16_UNORM 16_16_16_16_SNORM 16_16_16_16_USCALED "
           "16_16_16_16_SSCALED 16_16_16_16_UINT 16_16_16_16_SINT 16_16_16_16_FLOAT 32_32_32_UINT 32_32_32_SINT "
           "32_32_32_FLOAT 32_32_32_32_UINT 32_32_32_32_SINT 32_32_32_32_FLOAT").split()
KINDS = ("load", "store", "atomic")
# s_wait_alu's counters: name -> (lowest bit, width); all ones is the default; bits 5..6 unused
DEPCTR = {"depctr_hold_cnt": (7, 1), "depctr_sa_sdst": (0, 1), "depctr_va_vdst": (12, 4), "depctr_va_sdst": (9, 3),
          "depctr_va_ssrc": (8, 1), "depctr_va_vcc": (1, 1), "depctr_vm_vsrc": (2, 3)}
UC_VERSIONS = {0: "UC_VERSION_GFX7", 4: "UC_VERSION_GFX10", 6: "UC_VERSION_GFX11", 9: "UC_VERSION_GFX12"}
LIT_FLOATS = {0x3F000000: "0.5", 0xBF000000: "-0.5", 0x3F800000: "1.0", 0xBF800000: "-1.0", 0x40000000: "2.0",
              0xC0000000: "-2.0", 0x40800000: "4.0", 0xC0800000: "-4.0", 0x3E22F983: "0.15915494"}


def cpol(th: int, scope: int, kind: str) -> str:
    """' th:.. scope:..' for a load, store or atomic opcode ('' for the defaults)."""
    if not th:
        name = ""
    elif kind == "atomic":
        if th & 4:
            name = ("CASCADE_NT" if th & 2 else "CASCADE_RT") if scope >= 2 else f"0x{th:x}"
        else:
            name = ("NT_RETURN" if th & 1 else "NT") if th & 2 else "RETURN"
        name = f"TH_ATOMIC_{name}"
    elif th == 3:
        name = f"TH_{kind.upper()}_{'BYPASS' if scope == 3 else 'WB' if kind == 'store' else 'LU'}"
    elif th == 7:
        name = "TH_STORE_NT_WB" if kind == "store" else "0x7"
    else:
        name = f"TH_{kind.upper()}_{TH_NAMES[th]}"
    return (f" th:{name}" if name else "") + SCOPES[scope]


def depctr(v: int) -> str:
    """s_wait_alu: the counters not at their default (all of them if none is); hex when an unused bit is set."""
    if v & 0x60:
        return f"0x{v:x}"
    parts = [(n, v >> s & ((1 << w) - 1), (1 << w) - 1) for n, (s, w) in DEPCTR.items()]
    shown = [p for p in parts if p[1] != p[2]] or parts
    return " ".join(f"{n}({c})" for n, c, _ in shown)


def version(v: int) -> str:
    """s_version: the microcode version (named where LLVM names it) OR'ed with the W64, W32 and MDP bits."""
    if v & 0x1F00:
        return f"0x{v:x}"
    text = UC_VERSIONS.get(v & 0xFF, str(v & 0xFF))
    for bit, name in ((0x2000, "W64"), (0x4000, "W32"), (0x8000, "MDP")):
        if v & bit:
            text = f"({text})|UC_VERSION_{name}_BIT" if "|" in text else f"{text}|UC_VERSION_{name}_BIT"
    return text


def lit32(v: int) -> str:
    """A 32-bit literal of a float-typed operand: LLVM prints the values an inline constant could hold as such."""
    if v <= 64 or v >= 0xFFFFFFF0:
        return str(v if v <= 64 else v - (1 << 32))
    return LIT_FLOATS.get(v, f"0x{v:x}")


def _raw(v: int, gen: int) -> str:
    """v_fmac_*_e64_dpp's src1: a register by name, anything else as its encoding in hex."""
    return f"v{v - 256}" if v >= 256 else sreg(v, 1, gen) or base.SRC_NAMES.get(v) or f"0x{v:x}"


def _interp_src(v: int, gen: int) -> str | None:
    """A VINTERP source: a VGPR, null or a named source register other than src_lds_direct."""
    if v >= 256:
        return f"v{v - 256}"
    return "null" if v == base.NULL[gen] else base.SRC_NAMES.get(v) if v != 254 else None


def _offset(v: int, signed: bool) -> str:
    v = v - (1 << 24) if signed and v >> 23 else v
    return f" offset:{v}" if v else ""


def _shex24(v: int) -> str:
    v = v - (1 << 24) if v >> 23 else v
    return f"-0x{-v:x}" if v < 0 else f"0x{v:x}"


def _smem_offset(soffset: int, offset: int, gen: int) -> str | None:
    """s_load's offset operand: the 24-bit signed offset alone (soffset null), or soffset and the offset."""
    if soffset == base.NULL[gen]:
        return _shex24(offset)
    reg = sreg(soffset, 1, gen)
    return None if reg is None else f"{reg} offset:{_shex24(offset)}"


def _format(v: int) -> str:
    return "" if v == 1 else f" format:[BUF_FMT_{FORMATS[v]}]" if v < len(FORMATS) else f" format:{v}"


def _flag(name: str, v: int | str) -> str:
    return f" {name}" if v else ""


def _buf(idxen: int, offen: int, offset: int) -> str:
    return (" idxen" if idxen else "") + (" offen" if offen else "") + _offset(offset, False)


def _join(main: str | None, *tail: str | None) -> str | None:
    return None if main is None or None in tail else main + "".join(tail)  # type: ignore[operator]


def _interp16(*v: int) -> str:
    """VINTERP's f16 tail: clamp, op_sel:[...] where a bit is set, wait_exp (always)."""
    return _flag("clamp", v[4]) + (f" op_sel:[{','.join(map(str, v[:4]))}]" if any(v[:4]) else "") + f" wait_exp:{v[5]}"


def _build() -> dict[str, tuple[tuple[str, ...], Printer]]:
    p: dict[str, tuple[tuple[str, ...], Printer]] = {}

    def tail(name: str, main: str, kinds: tuple[str, ...], fn: Callable[..., str | None]) -> None:
        """name: printer main's operand, then fn(values of the extra kinds)."""
        sig, first = {**base.PRINTERS, **p}[main]
        p[name] = ((*sig, *kinds), lambda c, *v: _join(first(c, *v[: len(sig)]), fn(*v[len(sig) :])))

    def cpol_tails(mains: list[str], kinds: tuple[str, ...], suffix: str, fn: Callable[..., str | None]) -> None:
        """main+suffix_kindN for each opcode kind and value N of th bit 0: fn(kind, th0, *extra values)."""
        for main in mains:
            for kind in KINDS:
                for th0 in (0, 1):
                    tail(f"{main}+{suffix}_{kind}{th0}", main, kinds,
                         lambda *v, kind=kind, th0=th0: fn(kind, th0, *v))

    p["g12_depctr"] = (("imm",), lambda c, v: depctr(v))
    p["g12_version"] = (("imm",), lambda c, v: version(v))
    p["g12_lit32"] = ((), lambda c: None if c.lit is None else lit32(c.lit))
    p["g12_raw"] = (("src", "abs", "neg"), lambda c, v, a, n: _mods(_raw(v, c.gen), a, n))
    # v_cndmask_b32_dpp's vsrc1 with abs: LLVM's bars enclose the ', vcc_lo' that follows
    p["g12_cnd_open"] = (("reg", "abs", "neg"), lambda c, v, a, n: f"{'-' if n else ''}{'|' if a else ''}v{v}")
    p["g12_vcc_close"] = (("abs",), lambda c, a: "vcc_lo|" if a else "vcc_lo")
    p["g12_v32"] = (("reg",), lambda c, v: _range("v", v, 32))  # scratch_load_block's 32 VGPRs
    # VDSDIR: both waits always print
    p["g12_attr"] = (("g12attr", "g12chan"), lambda c, a, ch: f"attr{a}.{'xyzw'[ch]}")
    for main in ("v1", "g12_attr"):
        tail(f"{main}+dsdir", main, ("g12wva", "g12wvm"), lambda va, vm: f" wait_va_vdst:{va} wait_vm_vsrc:{vm}")
    # VINTERP: VGPR (or null) sources; the last one carries op_sel (f16 opcodes), clamp and wait_exp (always printed)
    p["g12_vsrcn"] = (("src", "g12neg"), lambda c, v, n: _mods(_interp_src(v, c.gen), 0, n))
    tail("g12_vsrcn+interp", "g12_vsrcn", ("g12clamp", "g12wexp"),
         lambda cl, we: f"{_flag('clamp', cl)} wait_exp:{we}")
    interp16 = ("g12opsel",) * 4 + ("g12clamp", "g12wexp")
    tail("g12_vsrcn+interp16", "g12_vsrcn", interp16, _interp16)
    # true16 (f16 opcodes): a 16-bit source or destination is the VGPR half its op_sel bit picks (src0 opsel0,
    # src2 opsel2 — which the trailing op_sel:[...] shows too — and vdst opsel3); a 16-bit source is always a VGPR,
    # whatever bit 8 says (as gfx11's)
    p["g12_vsrcnh"] = (("src", "g12neg", "g12opsel"), lambda c, v, n, h: _mods(_half(f"v{v & 0xFF}", h), 0, n))
    p["g12_vsrcnh+interp16"] = (("src", "g12neg", *interp16), lambda c, v, n, *t: _join(
        _mods(_half(f"v{v & 0xFF}", t[2]), 0, n), _interp16(*t)))
    p["g12_vh"] = (("reg", "g12opsel"), lambda c, v, h: _half(f"v{v}", h))
    # SMEM: offset, scale_offset, th (two bits, none of them in the opcode), scope, nv
    p["g12_smem"] = (("reg", "g12smoff"), lambda c, s, o: _smem_offset(s, o, c.gen))
    p["g12_smoff"] = (("g12smoff",), lambda c, o: _shex24(o))
    cpol_tails(["g12_smem"], ("g12so", "g12sth", "g12scope", "g12nv"), "smem",
               lambda k, t0, so, th, sc, nv: _flag("scale_offset", so) + cpol(th, sc, k) + _flag("nv", nv))
    # VFLAT/VGLOBAL/VSCRATCH: offset (signed), scale_offset, th bits 2..1, scope, nv
    p["g12_scratch_addr"] = (("reg", "g12sve"), lambda c, v, sve: f"v{v}" if sve else "off")
    # a global's saddr: off (null) or an SGPR pair (not m0, which gfx11 took as off)
    p["g12_saddr"] = (("reg",), lambda c, v: "off" if v == base.NULL[c.gen] else None if v == 125
                      else sreg(v, 2, c.gen))
    flat = ["g12_saddr", "saddr1", "v1", "v2", "v3", "v4"]  # what precedes the tail: saddr, vaddr or data
    cpol_tails(flat, ("g12off", "g12so", "g12th", "g12scope", "g12nv"), "flat",
               lambda k, t0, off, so, th, sc, nv: _offset(off, True) + _flag("scale_offset", so)
               + cpol(t0 | th << 1, sc, k) + _flag("nv", nv))
    # global_inv/_wb/_wbinv: nothing but the cache policy (no leading space)
    for kind in KINDS:
        for th0 in (0, 1):
            p[f"g12_cpol_{kind}{th0}"] = (
                ("g12so", "g12th", "g12scope", "g12nv"), lambda c, so, th, sc, nv, kind=kind, th0=th0:
                (_flag("scale_offset", so) + cpol(th0 | th << 1, sc, kind) + _flag("nv", nv)).lstrip())
    # VBUFFER: [format] idxen offen offset (unsigned) th scope nv [tfe]
    p["g12_buf_vaddr"] = (("reg", "g12idxen", "g12offen"),
                          lambda c, v, i, o: _range("v", v, 1 + (i & o)) if i | o else "off")
    for tfe in ("", "t"):
        cpol_tails(["s1"], ("g12idxen", "g12offen", "g12off", "g12th", "g12scope", "g12nv"), f"buf{tfe}",
                   lambda k, t0, i, o, off, th, sc, nv, tfe=tfe: _buf(i, o, off) + cpol(t0 | th << 1, sc, k)
                   + _flag("nv", nv) + _flag("tfe", tfe))
        cpol_tails(["s1"], ("g12fmt", "g12idxen", "g12offen", "g12off", "g12th", "g12scope", "g12nv"),
                   f"tbuf{tfe}", lambda k, t0, f, i, o, off, th, sc, nv, tfe=tfe: _format(f) + _buf(i, o, off)
                   + cpol(t0 | th << 1, sc, k) + _flag("nv", nv) + _flag("tfe", tfe))
    return p


PRINTERS = _build()
# image instructions' cache policy, one style per opcode kind: th (3 bits) + 8 * scope
STYLES = {f"g12cpol_{kind}": (lambda v, kind=kind: cpol(v & 7, v >> 3, kind), tuple(range(32))) for kind in KINDS}
