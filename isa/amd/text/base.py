"""The operand printers every generation shares, and the helpers gfx9.py and gfx12.py build theirs from: each
printer turns the values of one or more encoding fields into an operand's text. The printers are a fixed
vocabulary; the package (text/__init__.py) holds them all in one table."""

from __future__ import annotations

import re
from collections.abc import Callable

WIDTHS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16)
TYPES = ("i", "f16", "b16", "f32", "f64")
# b16: a 16-bit operand whose inline float constants print as their f16 bit patterns
F16_BITS = {240: 0x3800, 241: 0xB800, 242: 0x3C00, 243: 0xBC00, 244: 0x4000, 245: 0xC000, 246: 0x4400, 247: 0xC400,
            248: 0x3118}
INLINE_FLOATS = {240: "0.5", 241: "-0.5", 242: "1.0", 243: "-1.0", 244: "2.0", 245: "-2.0", 246: "4.0", 247: "-4.0"}
INV_2PI = {"f64": "0.15915494309189532"}

# scalar operand names by encoding value, per ISA generation
SPECIAL = {
    11: {106: "vcc_lo", 107: "vcc_hi", 124: "null", 125: "m0", 126: "exec_lo", 127: "exec_hi"},
    9: {102: "flat_scratch_lo", 103: "flat_scratch_hi", 104: "xnack_mask_lo", 105: "xnack_mask_hi",
        106: "vcc_lo", 107: "vcc_hi", 124: "m0", 125: "null", 126: "exec_lo", 127: "exec_hi"},
}
SPECIAL[12] = SPECIAL[11]
NULL = {9: 0x7F, 11: 124, 12: 124}  # the value an optional scalar operand reads as "off"
SADDR_OFF = {9: (0x7F,), 11: (124, 125), 12: (124, 125)}  # the values a FLAT saddr reads as "off"
EXP_TARGETS = {**{i: f"mrt{i}" for i in range(8)}, 8: "mrtz", **{12 + i: f"pos{i}" for i in range(5)}, 20: "prim",
               21: "dual_src_blend0", 22: "dual_src_blend1"}
PAIRS = {"vcc_lo": "vcc", "exec_lo": "exec", "flat_scratch_lo": "flat_scratch", "xnack_mask_lo": "xnack_mask",
         "null": "null"}
SRC_NAMES = {230: "src_flat_scratch_base_lo", 231: "src_flat_scratch_base_hi", 235: "src_shared_base",
             236: "src_shared_limit", 237: "src_private_base", 238: "src_private_limit",
             239: "src_pops_exiting_wave_id", 251: "src_vccz", 252: "src_execz", 253: "src_scc", 254: "src_lds_direct"}
# the source names LLVM prints for an SGPR destination's value
SDST_NAMES = {9: {v: n for v, n in SRC_NAMES.items() if v != 254}, 11: SRC_NAMES, 12: SRC_NAMES}
# s_delay_alu: instid0 [3:0], instskip [6:4], instid1 [10:7]
INSTID = ["NO_DEP", "VALU_DEP_1", "VALU_DEP_2", "VALU_DEP_3", "VALU_DEP_4", "TRANS32_DEP_1", "TRANS32_DEP_2",
          "TRANS32_DEP_3", "FMA_ACCUM_CYCLE_1", "SALU_CYCLE_1", "SALU_CYCLE_2", "SALU_CYCLE_3"]
INSTSKIP = ["SAME", "NEXT", "SKIP_1", "SKIP_2", "SKIP_3", "SKIP_4"]


class Ctx:
    """What a printer may need besides its fields: the ISA generation, the instruction's literal, and the
    arch's symbolic names (hwreg ids, sendmsg values) as learned from LLVM."""

    def __init__(self, gen: int, lit: int | None = None, names: dict | None = None):
        self.gen, self.lit, self.names = gen, lit, names or {}


def _range(prefix: str, first: int, width: int) -> str:
    return f"{prefix}{first}" if width == 1 else f"{prefix}[{first}:{first + width - 1}]"


def sreg(v: int, width: int, gen: int) -> str | None:
    """A scalar register operand, or None when v names none."""
    if SPECIAL[gen].get(v) == "null":  # at any width (gfx9's is odd: 125)
        return "null"
    if width > 1:
        v &= ~1 if width == 2 else ~3
    if v < (102 if gen == 9 else 106):
        return _range("s", v, width)
    if 108 <= v <= 123:
        return _range("ttmp", v - 108, width)
    name = SPECIAL[gen].get(v)
    if name is None or width == 1 or name == "null":
        return name
    return PAIRS.get(name) if width == 2 else None


def inline(v: int, ftype: str) -> str | None:
    """An inline constant (128..208, 240..248) as LLVM prints it for an operand of type ftype."""
    if 128 <= v <= 192:
        return str(v - 128)
    if 193 <= v <= 208:
        return str(192 - v)
    if ftype == "b16" and v in F16_BITS:
        return f"0x{F16_BITS[v]:x}"
    if v in INLINE_FLOATS:
        return INLINE_FLOATS[v]
    if v == 248:
        return INV_2PI.get(ftype, "0.15915494")
    return None


F32_INLINE = {0x3F000000, 0xBF000000, 0x3F800000, 0xBF800000, 0x40000000, 0xC0000000, 0x40800000, 0xC0800000,
              0x3E22F983}


def literal(lit: int, ftype: str) -> str:
    """A literal constant in hex; lit(...) when an inline constant could have said the same (LLVM's marking)."""
    if ftype in ("f16", "b16"):
        lit &= 0xFFFF
        inline_like = lit <= 64 or ftype == "f16" and (lit in F16_BITS.values() or lit >= 0xFFF0)
    else:
        inline_like = lit <= 64 or lit >= 0xFFFFFFF0 or (ftype == "f32" and lit in F32_INLINE)
    return f"lit(0x{lit:x})" if inline_like and ftype != "f64" else f"0x{lit:x}"


def src(v: int, width: int, ftype: str, gen: int, lit: int | None) -> str | None:
    """A source operand: VGPR, scalar register, inline constant, named source, or the literal."""
    if v >= 256:
        return _range("v", v - 256, width)
    if v == 255:
        return None if lit is None else literal(lit, ftype)
    return sreg(v, width, gen) or inline(v, ftype) or SRC_NAMES.get(v)


def imm_auto(v: int) -> str:
    """LLVM's 16-bit immediate: decimal while an inline integer (0..64), hex beyond."""
    return str(v) if v <= 64 else f"0x{v:x}"


def waitcnt(v: int) -> str:
    """gfx11 s_waitcnt: vmcnt [15:10], expcnt [2:0], lgkmcnt [9:4]; counters at their maximum are left out."""
    parts = [("vmcnt", v >> 10 & 63, 63), ("expcnt", v & 7, 7), ("lgkmcnt", v >> 4 & 63, 63)]
    shown = [f"{n}({c})" for n, c, top in parts if c != top] or [f"{n}({c})" for n, c, _ in parts]
    return " ".join(shown)


def hwreg(v: int, names: dict[int, str]) -> str:
    """hwreg(ID[, offset, size]): id [5:0], offset [10:6], size - 1 [15:11]."""
    reg, off, size = v & 63, v >> 6 & 31, (v >> 11) + 1
    name = names.get(reg, str(reg))
    return f"hwreg({name})" if off == 0 and size == 32 else f"hwreg({name}, {off}, {size})"


def depctr(v: int, counters: dict[str, tuple[int, int]]) -> str:
    """s_waitcnt_depctr: the counters not at their maximum, by name; a reserved bit set (or none) prints hex."""
    used = sum(((1 << w) - 1) << s for s, w in counters.values())
    parts = [f"{n}({v >> s & ((1 << w) - 1)})" for n, (s, w) in counters.items()
             if v >> s & ((1 << w) - 1) != (1 << w) - 1]
    return " ".join(parts) if parts and not v & ~used else f"0x{v:x}"


def swizzle(v: int) -> str:
    """ds_swizzle_b32's offset as LLVM names its modes (quad perm, rotate, FFT, bitmask forms)."""
    if v & 0xFF00 == 0x8000:
        return f"swizzle(QUAD_PERM,{','.join(str(v >> 2 * i & 3) for i in range(4))})"
    if v & 0xE000 == 0xE000:
        return f"swizzle(FFT,{v & 0x1F})"
    if v & 0xE000 == 0xC000:
        return f"swizzle(ROTATE,{v >> 10 & 1},{v >> 5 & 0x1F})"
    if v & 0x8000:
        return str(v)
    and_, or_, xor = v & 0x1F, v >> 5 & 0x1F, v >> 10 & 0x1F
    if and_ == 0x1F and or_ == 0 and xor and xor & (xor - 1) == 0:
        return f"swizzle(SWAP,{xor})"
    if and_ == 0x1F and or_ == 0 and xor and (xor + 1) & xor == 0:
        return f"swizzle(REVERSE,{xor + 1})"
    for size in (2, 4, 8, 16, 32):
        if xor == 0 and and_ == 0x1F & ~(size - 1) and or_ < size:
            return f"swizzle(BROADCAST,{size},{or_})"
    bits = []
    for i in range(4, -1, -1):
        a, o, x = and_ >> i & 1, or_ >> i & 1, xor >> i & 1
        bits.append(str(o ^ x) if not a or o else "i" if x else "p")
    return f'swizzle(BITMASK_PERM,"{"".join(bits)}")'


def delay_alu(v: int) -> str:
    parts = []
    for name, value, names in (("instid0", v & 15, INSTID), ("instskip", v >> 4 & 7, INSTSKIP),
                               ("instid1", v >> 7 & 15, INSTID)):
        if value:
            text = names[value] if value < len(names) else f"/* invalid {name.rstrip('01')} value */"
            parts.append(f"{name}({text})")
    return " | ".join(parts) or "0"


def _mods(text: str | None, abs_: int, neg: int) -> str | None:
    if text is None:
        return None
    if abs_:
        text = f"|{text}|"
    if neg and re.match(r"-?\d", text):  # a negated integer constant: -32 would read as the constant -32
        return f"neg({text})"
    return f"-{text}" if neg else text


def _half(text: str | None, hi: int) -> str | None:
    """A true16 operand: the low or high half of a VGPR."""
    if text is None or not re.fullmatch(r"v\d+", text):
        return text
    return f"{text}.{'h' if hi else 'l'}"


def _flat_addr(v: int, saddr: int, gen: int) -> str:
    return _range("v", v, 2 if saddr in SADDR_OFF[gen] else 1)


def _smem_soffset(soffset: int, offset: int, gen: int) -> str | None:
    if soffset == NULL.get(gen):
        return _shex(offset, 21) if offset else "null"
    reg = sreg(soffset, 1, gen)
    return None if reg is None else reg + (f" offset:{_shex(offset, 21)}" if offset else "")


def _shex(v: int, bits: int) -> str:
    v = v - (1 << bits) if v >> (bits - 1) & 1 else v
    return f"-0x{-v:x}" if v < 0 else f"0x{v:x}"


def split_operands(text: str) -> list[str]:
    """Split on the commas between operands, not those inside sendmsg(...) or [..] lists."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += 1 if ch in "([" else -1 if ch in ")]" else 0
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [*out, text[start:].strip()] if text.strip() else []


def split_text(text: str) -> tuple[str, list[str]]:
    """An instruction's mnemonic and operands (the last may carry trailing modifiers after a space). A dual-issue
    (VOPD) "X ops :: Y ops" reads as mnemonic "X::Y" with a '::' operand between the two lists."""
    if " :: " in text:
        (mx, xs), (my, ys) = (part.split(" ", 1) for part in text.split(" :: ", 1))
        return f"{mx}::{my}", [*split_operands(xs), "::", *split_operands(ys)]
    mnemonic, _, rest = text.partition(" ")
    return mnemonic, split_operands(rest)


Printer = Callable[..., str | None]


def _build() -> dict[str, tuple[tuple[str, ...], Printer]]:
    """name -> (the field kinds it reads, printer(ctx, *values))."""
    p: dict[str, tuple[tuple[str, ...], Printer]] = {}
    for w in WIDTHS:
        p[f"v{w}"] = (("reg",), lambda c, v, w=w: _range("v", v, w))
        p[f"s{w}"] = (("reg",), lambda c, v, w=w: sreg(v, w, c.gen))
        # an SGPR destination (VOPC, VOP3b) that LLVM prints as a source when it holds a source's name
        p[f"sdst{w}"] = (("reg",), lambda c, v, w=w: sreg(v, w, c.gen) or SDST_NAMES[c.gen].get(v))
        p[f"sbase{w}"] = (("sbase",), lambda c, v, w=w: sreg(v * 2, w, c.gen))
        p[f"vt{w}"] = (("reg", "flag"), lambda c, v, t, w=w: _range("v", v, w + t))  # tfe adds a status dword
        for t in TYPES:
            p[f"src{w}_{t}"] = (("src",), lambda c, v, w=w, t=t: src(v, w, t, c.gen, c.lit))
            p[f"srcm{w}_{t}"] = (("src", "abs", "neg"),
                                 lambda c, v, a, n, w=w, t=t: _mods(src(v, w, t, c.gen, c.lit), a, n))
            p[f"srcn{w}_{t}"] = (("src", "neg"), lambda c, v, n, w=w, t=t: _mods(src(v, w, t, c.gen, c.lit), 0, n))
    for t in ("f16", "b16"):  # true16: the low or high half of a VGPR, by op_sel (VOP3) or bit 7 (VOP1/2/C)
        p[f"srch_{t}"] = (("src", "abs", "neg", "opsel"),
                          lambda c, v, a, n, h, t=t: _mods(_half(src(v, 1, t, c.gen, c.lit), h), a, n))
        p[f"srchn_{t}"] = (("src", "opsel"), lambda c, v, h, t=t: _half(src(v, 1, t, c.gen, c.lit), h))
        p[f"srcnh_{t}"] = (("src", "neg", "opsel"),
                           lambda c, v, n, h, t=t: _mods(_half(src(v, 1, t, c.gen, c.lit), h), 0, n))
        p[f"src16_{t}"] = (("src",), lambda c, v, t=t: _half(src(v & ~0x80 if v >= 256 else v, 1, t, c.gen, c.lit),
                                                             v >= 256 and v & 0x80))
    p["vm1"] = (("reg", "abs", "neg"), lambda c, v, a, n: _mods(f"v{v}", a, n))
    p["vmh"] = (("reg", "abs", "neg", "opsel"), lambda c, v, a, n, h: _mods(f"v{v}.{'h' if h else 'l'}", a, n))
    p["vm16"] = (("reg", "abs", "neg"), lambda c, v, a, n: _mods(f"v{v & 0x7F}.{'h' if v & 0x80 else 'l'}", a, n))
    p["v1_h"] = (("reg", "opsel"), lambda c, v, h: f"v{v}.{'h' if h else 'l'}")
    p["v16"] = (("reg",), lambda c, v: f"v{v & 0x7F}.{'h' if v & 0x80 else 'l'}")
    p["imm_auto"] = (("imm",), lambda c, v: imm_auto(v))
    p["imm_hex"] = (("imm",), lambda c, v: f"0x{v:x}")
    p["imm_dec"] = (("imm",), lambda c, v: str(v))
    p["waitcnt"] = (("imm",), lambda c, v: waitcnt(v))
    p["delay_alu"] = (("imm",), lambda c, v: delay_alu(v))
    p["sendmsg"] = (("imm",), lambda c, v: c.names.get("sendmsg", {}).get(v, str(v)))
    p["sendmsg_rtn"] = (("src",), lambda c, v: c.names.get("sendmsg_rtn", {}).get(v, f"sendmsg({v}, 0, 0)"))
    p["hwreg"] = (("imm",), lambda c, v: hwreg(v, c.names.get("hwreg", {})))
    p["imm7"] = (("reg",), lambda c, v: imm_auto(v))
    p["depctr"] = (("imm",), lambda c, v: depctr(v, c.names.get("depctr", {})))
    p["vsrc_nh"] = (("src", "neg", "opsel"),  # VINTERP's 16-bit sources: always VGPRs, whatever bit 8 says
                    lambda c, v, n, h: _mods(f"v{v & 0xFF}.{'h' if h else 'l'}", 0, n))
    p["v_or_off"] = (("reg", "flag"), lambda c, v, on: f"v{v}" if on else "off")
    p["vdsty"] = (("reg", "reg"), lambda c, y, x: f"v{y << 1 | (~x & 1)}")
    p["rsrc4"] = (("srsrc",), lambda c, v: sreg(v * 4, 4, c.gen))  # a buffer resource: 4 SGPRs, index / 4
    p["buf_vaddr"] = (("reg", "flag", "flag"), lambda c, v, offen, idxen: "off" if not offen | idxen
                      else _range("v", v, 1 + (offen & idxen)))
    p["lit"] = ((), lambda c: None if c.lit is None else f"0x{c.lit:x}")
    p["lit16"] = ((), lambda c: None if c.lit is None else f"0x{c.lit & 0xFFFF:x}")
    p["flat_addr"] = (("reg", "reg"), lambda c, v, s: _flat_addr(v, s, c.gen))
    p["saddr"] = (("reg",), lambda c, v: "off" if v in SADDR_OFF[c.gen] else sreg(v, 2, c.gen))
    p["saddr1"] = (("reg",), lambda c, v: "off" if v == NULL.get(c.gen) else sreg(v, 1, c.gen))
    p["scratch_addr"] = (("reg", "flag"), lambda c, v, sve: f"v{v}" if sve else "off")
    # EXP: a source shows when its enable bit is set; the target and the first source share a token
    p["exp_src"] = (("reg", "expen"), lambda c, v, e: f"v{v}" if e else "off")
    p["exp_tgt"] = (("exptgt", "reg", "expen"), lambda c, t, v, e:
                    f"{EXP_TARGETS.get(t, f'invalid_target_{t}')} {f'v{v}' if e else 'off'}")
    p["smem_soffset"] = (("reg", "soffset21"), lambda c, s, o: _smem_soffset(s, o, c.gen))
    return p


PRINTERS = _build()
# a field of this kind is read by printers of this kind
COMPATIBLE = {"vgpr": "reg", "vdst": "reg", "sgpr": "reg", "saddr": "reg", "src": "src", "ssrc": "src", "vsrc": "src",
              "src_nolit": "src", "ssrc_nolit": "src", "sbase": "sbase", "imm": "imm",
              "abs": "abs", "neg": "neg", "srsrc": "srsrc", "opsel": "opsel", "flag": "flag", "soffset21": "soffset21"}


def dpp_ctrl(v: int, gen: int) -> str | None:
    """The DPP16 control field as LLVM names it, or None for a reserved value."""
    if v < 0x100:
        return f"quad_perm:[{v & 3},{v >> 2 & 3},{v >> 4 & 3},{v >> 6 & 3}]"
    for base, name in ((0x100, "row_shl"), (0x110, "row_shr"), (0x120, "row_ror")):
        if base < v < base + 16:
            return f"{name}:{v - base}"
    named = {0x140: "row_mirror", 0x141: "row_half_mirror"}
    if gen == 9:
        named |= {0x130: "wave_shl:1", 0x134: "wave_rol:1", 0x138: "wave_shr:1", 0x13C: "wave_ror:1",
                  0x142: "row_bcast:15", 0x143: "row_bcast:31"}
        if 0x150 <= v < 0x160:  # gfx90a+
            return f"row_newbcast:{v & 15}"
    elif 0x150 <= v < 0x170:
        return f"{'row_share' if v < 0x160 else 'row_xmask'}:{v & 15}"
    return named.get(v)


# Image instructions: the data and address widths LLVM prints, per combination of (channels in dmask, d16, tfe,
# dim, a16), learned per opcode (generator/isa_image): NAMES['image'][KEY] is (table number, default shape) and
# NAMES['image_tables'] the tables, shared by opcodes alike. A table packs one entry per combination: the data width,
# then each address register's width, as base-36 digits ('' where LLVM rejects the combination).
def pack_shapes(table: list[tuple[int, tuple[int, ...]] | None]) -> str:
    return ",".join("" if s is None else "".join(_B36[w] for w in (s[0], *s[1])) for s in table)


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def image_shape(names: dict, key: str, vdata: int, vaddrs: tuple[int, ...], dmask: int, d16: int, tfe: int, dim: int,
                a16: int) -> tuple[int, tuple[int, ...]] | None:
    """(data width, address widths) as LLVM prints them: the opcode's variant for these fields, or its default
    when the variant would take a register past v255."""
    table, default = names["image"][key]
    table = names["image_tables"][table]
    index = ((((max(dmask.bit_count(), 1) - 1) * 2 + d16) * 2 + tfe) * 8 + dim) * 2 + a16
    entry = table.split(",")[index]
    if not entry:
        return None
    shape = (_B36.index(entry[0]), tuple(_B36.index(ch) for ch in entry[1:]))
    if default and shape != default:
        last = len(shape[1]) - 1  # the address register that widens: the only one, or NSA's last
        wider_data = shape[0] != default[0] and vdata + shape[0] > 256
        default_addr = default[1][min(last, len(default[1]) - 1)]
        wider_addr = shape[1][last] != default_addr and vaddrs[last] + shape[1][last] > 256
        if wider_data or wider_addr:
            shape = default  # which LLVM prints even where it passes v255
    return shape


def image_text(names: dict, key: str, part: str, values: tuple[int, ...]) -> str | None:
    """An image instruction's data register ('data') or address ('addr': a register, or NSA's list of them)
    from (vdata, vaddr0, ..., dmask, d16, tfe, dim, a16)."""
    vdata, vaddrs = values[0], values[1:-5]
    shape = image_shape(names, key, vdata, vaddrs, *values[-5:])
    if shape is None:
        return None
    if part == "data":
        return _range("v", vdata, shape[0])
    regs = [_range("v", v, w) for v, w in zip(vaddrs, shape[1], strict=False)]
    return regs[0] if len(regs) == 1 else f"[{', '.join(regs)}]"
