"""CDNA3 / CDNA4 (gfx942, gfx950) instructions RDNA has not: the fp8 / bf8 conversions (FNUZ formats on gfx942,
OCP on gfx950), gfx950's scaled conversions to and from fp8, bf8, fp6, bf6 and fp4 (v_cvt_scalef32_*), its other
new VALU ops (v_cvt_pk_f16/bf16_f32, v_cvt_sr_f16/bf16_f32, v_cvt_f32_bf16, v_bitop3, v_prng_b32, v_ashr_pk,
v_permlane16/32_swap, v_dot2c_*), and, through cdna_lds, the LDS transpose loads and loads to LDS.

Semantics as the CDNA4 ISA guide's pseudocode gives them. OPSEL is the VOP3 field (inst.fields opsel0..3): for the
conversions, OPSEL[1:0] pick a source byte (OPSEL[0] a word), OPSEL[3:2] a destination byte (OPSEL[3] a word).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from usergpu.emu.amd.exec import cdna_lds, dpp, lowp, sdwa
from usergpu.emu.amd.exec.helpers import to_bf16
from usergpu.emu.amd.exec.operands import Operand, const_bits
from usergpu.emu.amd.exec.valu import SUFFIX, _clamp_omod

# the 8-bit float formats of v_cvt_*_fp8 / _bf8 by arch: FNUZ on gfx942, OCP on gfx950
FP8 = {"gfx942": {"fp8": "fp8_fnuz", "bf8": "bf8_fnuz"}, "gfx950": {"fp8": "fp8", "bf8": "bf8"}}
FLOAT_MAN = {"f32": 23, "f16": 10, "bf16": 7}  # the mantissa bits of the float side of a conversion
SCALED = re.compile(r"^cvt_scalef32_(sr_)?(pk32_|pk_|2xpk16_)?(f32|f16|bf16|fp8|bf8|fp4|fp6|bf6)_"
                    r"(f32|f16|bf16|fp8|bf8|fp4|fp6|bf6)$")
PRNG_TAP = 197  # v_prng_b32: D = (S0 << 1) ^ (S0[31] ? 197 : 0)


def step(ex, name: str, ops: list[Operand], mods: dict, inst):
    """The step of a CDNA-only instruction, or None when it is not one of them."""
    if not name.startswith("v_"):
        return cdna_lds.step(ex, name, ops, mods, inst)
    core = SUFFIX.sub("", name)[2:]
    opsel = [inst.fields.get(f"opsel{i}", 0) for i in range(4)]
    m = SCALED.match(core)
    if m:
        return _scaled(*m.groups(), ops, opsel)
    fp8 = FP8.get(ex.arch, {})
    for kind, fmt in fp8.items():
        if core in (f"cvt_f32_{kind}", f"cvt_pk_f32_{kind}"):
            return _lanewise(ops, mods, _widen8(lowp.FORMATS[fmt], core.startswith("cvt_pk")))
        if core in (f"cvt_pk_{kind}_f32", f"cvt_sr_{kind}_f32"):
            return _narrow8(lowp.FORMATS[fmt], core.startswith("cvt_sr"), ops, opsel)
    builder = BUILDERS.get(core)
    return None if builder is None else builder(ops, mods, opsel)


# ---- reading and writing ---------------------------------------------------------------------------------
def _shape(w, g) -> tuple[int, int]:
    return len(w.pc[g]), w.lanes


def _u32(w, op: Operand, g, i: int = 0) -> np.ndarray:
    """Dword i of an operand's registers (waves, lanes), as bits."""
    reg = replace(op, index=op.index + i, count=1, neg=False, abs=False) if op.kind in "vs" else op
    return np.broadcast_to(w.read(reg, "u32", g), _shape(w, g)).astype(np.uint32)


def _float(w, op: Operand, kind: str, g, half: int = 0) -> np.ndarray:
    """A float source (f32, or the f16 / bf16 in half 0 or 1) as float64, with its neg / abs."""
    if kind == "f32":
        return np.broadcast_to(w.read(op, "f32", g), _shape(w, g)).astype(np.float64)
    part = replace(op, half=half)
    if kind == "f16":
        return np.broadcast_to(w.read(part, "f16", g), _shape(w, g)).astype(np.float64)
    bits = np.broadcast_to(w.read(part, "bf16", g), _shape(w, g)).astype(np.uint32)
    bits = bits & np.uint32(0x7FFF) if op.abs else bits
    bits = bits ^ np.uint32(0x8000) if op.neg else bits
    return (bits << np.uint32(16)).view(np.float32).astype(np.float64)


def _store(w, dst: Operand, g, words: np.ndarray, lanes: np.ndarray) -> None:
    """(waves, lanes, n) dwords into the n VGPRs from dst, for the given lanes."""
    for i in range(words.shape[-1]):
        w.write(Operand("v", dst.index + i), "u32", g, words[..., i].astype(np.uint32), lanes)


def _field(words: np.ndarray, pos: int, bits: int) -> np.ndarray:
    """The bits-wide field at bit pos of a (..., n) dword array (a field may cross dwords)."""
    wide = words.astype(np.uint64)
    lo, shift = divmod(pos, 32)
    out = wide[..., lo] >> np.uint64(shift)
    if shift + bits > 32:
        out = out | (wide[..., lo + 1] << np.uint64(32 - shift))
    return (out & np.uint64((1 << bits) - 1)).astype(np.uint32)


def _place(words: np.ndarray, pos: int, bits: int, value: np.ndarray) -> None:
    """Set the bits-wide field at bit pos of a (..., n) uint64 dword array, in place."""
    value = value.astype(np.uint64) & np.uint64((1 << bits) - 1)
    lo, shift = divmod(pos, 32)
    keep = np.uint64(0xFFFFFFFF ^ (((1 << bits) - 1) << shift & 0xFFFFFFFF))
    words[..., lo] = (words[..., lo] & keep) | ((value << np.uint64(shift)) & np.uint64(0xFFFFFFFF))
    if shift + bits > 32:
        words[..., lo + 1] = (words[..., lo + 1] & np.uint64(0xFFFFFFFF ^ ((1 << (shift + bits - 32)) - 1))) | (
            value >> np.uint64(32 - shift))


def _lanewise(ops: list[Operand], mods: dict, fn):
    """A one-source op: fn(ex, src0 bits, src0, mods) -> dwords (waves, lanes, n) into the destination; SDWA's
    src0_sel selects the source's byte or word (these ops take no dst_sel), DPP reads it from another lane."""
    dst, src = ops[0], ops[1]
    perm = dpp.permute(mods, 64) if any(k in mods for k in dpp.CONTROLS) else None
    select = sdwa.source_selects(mods, 1)[0]

    def value(ex, g) -> tuple[np.ndarray, np.ndarray]:
        w = ex.w
        raw = np.broadcast_to(sdwa.read(w, replace(src, neg=False, abs=False), "u32", g, select), _shape(w, g))
        lanes = w.exec_mask(g)
        if perm is not None:
            raw, ok = dpp.apply(perm, raw, lanes)
            lanes = lanes & ok & perm["enabled"]
        return fn(ex, raw.astype(np.uint32), src, mods), lanes

    def run(ex, g) -> None:
        words, lanes = value(ex, g)
        _store(ex.w, dst, g, words, lanes)
    return run


def _f32_words(values: np.ndarray, src: Operand, mods: dict) -> np.ndarray:
    """f32 results with the source's neg / abs and the VOP3 clamp / omod, as dwords (..., n)."""
    v = values.astype(np.float32)
    v = np.abs(v) if src.abs else v
    v = -v if src.neg else v
    return _clamp_omod(v, "f32", mods).view(np.uint32)


# ---- fp8 / bf8 without a scale (gfx942: FNUZ, gfx950: OCP) ------------------------------------------------
def _widen8(fmt: lowp.Format, pk: bool):
    """v_cvt_f32_fp8 (the low byte, SDWA src0_sel: another), v_cvt_pk_f32_fp8 (two bytes of the low word, or
    with src0_sel:WORD_1 the high one, into a VGPR pair)."""
    def widen(ex, raw, src, mods):
        codes = np.stack([(raw >> np.uint32(8 * i)) & np.uint32(0xFF) for i in range(1 + pk)], -1)
        return _f32_words(lowp.decode(codes, fmt), src, mods)
    return widen


def _narrow8(fmt: lowp.Format, sr: bool, ops: list[Operand], opsel: list[int]):
    """v_cvt_pk_fp8_f32 (S0, S1 to the word OPSEL[3] selects), v_cvt_sr_fp8_f32 (S0 rounded by the random bits
    of S1 to the byte OPSEL[3:2] selects); the destination's other bits are kept."""
    dst, a_op, b_op = ops[:3]
    bits, index = (8, opsel[2] | opsel[3] << 1) if sr else (16, opsel[3])

    def narrow(ex, g) -> None:
        w = ex.w
        a = _float(w, a_op, "f32", g)
        if sr:
            codes = lowp.encode(a, fmt, _u32(w, b_op, g))
        else:
            codes = lowp.encode(a, fmt) | (lowp.encode(_float(w, b_op, "f32", g), fmt) << np.uint32(8))
        words = _u32(w, dst, g)[..., None].astype(np.uint64)
        _place(words, bits * index, bits, codes)
        _store(w, dst, g, words, w.exec_mask(g))
    return narrow


# ---- gfx950's scaled conversions -------------------------------------------------------------------------
def _scaled(sr: str | None, pk: str | None, to: str, frm: str, ops: list[Operand], opsel: list[int]):
    """v_cvt_scalef32_[sr_][pk_|pk32_|2xpk16_]<to>_<from>: the last source is the scale (its f32 exponent, an
    E8M0); widening multiplies by it, narrowing divides; sr_ forms take their random bits from S1, the next
    value's from v_prng_b32 of them."""
    count = {None: 1, "pk_": 2, "pk32_": 32, "2xpk16_": 32}[pk]
    widen = to in FLOAT_MAN
    code_fmt = lowp.FORMATS[frm if widen else to]
    dst, srcs = ops[0], ops[1:]
    # a field narrower than a dword goes to the byte OPSEL[3:2] (a word: OPSEL[3]) and keeps the other bits;
    # a source field narrower than a dword comes from the byte OPSEL[1:0] (a word: OPSEL[0])
    out_bits = count * (lowp.FORMATS[to].bits if widen else code_fmt.bits)
    out_pos = 0 if out_bits >= 32 else out_bits * (opsel[3] if out_bits == 16 else opsel[2] | opsel[3] << 1)
    in_bits = count * code_fmt.bits
    in_pos = 0 if in_bits >= 32 else in_bits * (opsel[0] if in_bits == 16 else opsel[0] | opsel[1] << 1)

    def values(w, g) -> np.ndarray:
        """The count source values (waves, lanes, count): codes of a packed source, floats otherwise."""
        s0 = srcs[0]
        if widen:
            words = np.stack([_u32(w, s0, g, i) for i in range(-(-in_bits // 32))], -1)
            return np.stack([_field(words, in_pos + i * code_fmt.bits, code_fmt.bits) for i in range(count)], -1)
        if frm == "f32":
            if pk == "2xpk16_":  # S0 and S1 interleaved: S0[i], S1[i] are elements 2i, 2i + 1
                return np.stack([_bits_f32(_u32(w, srcs[i % 2], g, i // 2)) for i in range(count)], -1)
            if count == 2 and not sr:
                return np.stack([_float(w, op, "f32", g) for op in srcs[:2]], -1)
            return np.stack([_bits_f32(_u32(w, s0, g, i)) if count > 1 else _float(w, s0, "f32", g)
                             for i in range(count)], -1)
        if count == 1:
            return _float(w, s0, frm, g, opsel[0])[..., None]
        words = np.stack([_u32(w, s0, g, i) for i in range(count // 2)], -1)
        halves = np.stack([_field(words, 16 * i, 16) for i in range(count)], -1)
        return _half_float(halves, frm)

    def run(ex, g) -> None:
        w = ex.w
        scale = lowp.e8m0(_u32(w, srcs[-1], g) >> np.uint32(23))[..., None]
        x = values(w, g)
        if widen:
            result = lowp.encode(lowp.decode(x, code_fmt) * scale, lowp.FORMATS[to])
        else:
            scaled = np.where(np.isnan(scale), np.copysign(np.nan, x), x / scale)
            result = lowp.encode(scaled, code_fmt, _seeds(w, srcs[1], g, count) if sr else None, FLOAT_MAN[frm])
        field = lowp.FORMATS[to].bits if widen else code_fmt.bits
        words = np.zeros(_shape(w, g) + (-(-out_bits // 32),), np.uint64)
        if out_bits < 32:
            words[..., 0] = _u32(w, dst, g)
        for i in range(count):
            _place(words, out_pos + i * field, field, result[..., i])
        _store(w, dst, g, words, w.exec_mask(g))
    return run


def _bits_f32(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def _half_float(halves: np.ndarray, kind: str) -> np.ndarray:
    """16-bit float bits (f16 or bf16) as float64."""
    if kind == "f16":
        return halves.astype(np.uint16).view(np.float16).astype(np.float64)
    return _bits_f32(halves.astype(np.uint32) << np.uint32(16))


def prng(x: np.ndarray) -> np.ndarray:
    """v_prng_b32: one step of the 32-bit LFSR."""
    x = x.astype(np.uint32)
    return (x << np.uint32(1)) ^ np.where(x >> np.uint32(31), np.uint32(PRNG_TAP), np.uint32(0))


def _seeds(w, op: Operand, g, count: int) -> np.ndarray:
    """The random bits of each of count values: S1, then v_prng_b32 of the previous."""
    seed = _u32(w, op, g)
    out = [seed]
    for _ in range(count - 1):
        out.append(prng(out[-1]))
    return np.stack(out, -1)


# ---- the other new VALU ops ------------------------------------------------------------------------------
def _prng(ops: list[Operand], mods: dict, opsel: list[int]):
    return _lanewise(ops, mods, lambda ex, raw, src, mods: prng(raw)[..., None])


def _cvt_f32_bf16(ops: list[Operand], mods: dict, opsel: list[int]):
    """v_cvt_f32_bf16: the bf16 in S0's low half, widened (exactly) to f32."""
    src = ops[1]

    def widen(ex, raw, src_op, mods):
        bits = (raw & np.uint32(0xFFFF)) << np.uint32(16)
        return _f32_words(bits.view(np.float32)[..., None], src_op, mods)
    if src.kind not in "vs":  # a constant is a 16-bit operand here: its bf16 bits
        src = replace(src, kind="lit", value=const_bits(replace(src, neg=False, abs=False), "bf16"))
    return _lanewise([ops[0], src], mods, widen)


def _cvt_pk16(kind: str):
    """v_cvt_pk_f16_f32 / v_cvt_pk_bf16_f32: S0 to the low half, S1 to the high, rounded to nearest even."""
    def build(ops: list[Operand], mods: dict, opsel: list[int]):
        dst, a_op, b_op = ops[:3]

        def run(ex, g) -> None:
            w = ex.w
            halves = []
            for op in (a_op, b_op):
                v = _clamp_omod(_float(w, op, "f32", g).astype(np.float32), "f32", mods)
                halves.append(v.astype(np.float16).view(np.uint16) if kind == "f16" else to_bf16(v))
            lo, hi = (h.astype(np.uint32) for h in halves)
            w.write(dst, "u32", g, lo | (hi << np.uint32(16)), w.exec_mask(g))
        return run
    return build


def _cvt_sr16(kind: str):
    """v_cvt_sr_f16_f32 / v_cvt_sr_bf16_f32: S0 rounded stochastically by S1's bits, into the half OPSEL[3]
    selects; the other half kept."""
    fmt = lowp.FORMATS[kind]

    def build(ops: list[Operand], mods: dict, opsel: list[int]):
        dst, a_op, b_op = ops[:3]

        def run(ex, g) -> None:
            w = ex.w
            code = lowp.encode(_float(w, a_op, "f32", g), fmt, _u32(w, b_op, g))
            w.write(replace(dst, half=opsel[3]), "u16", g, code.astype(np.uint16), w.exec_mask(g))
        return run
    return build


def _bitop3(bits: int):
    """v_bitop3_b32 / _b16: each result bit the truth table bitop3:N at (S0, S1, S2)'s bits (index
    S0 << 2 | S1 << 1 | S2); b16: OPSEL picks the sources' halves and the destination's (the other kept)."""
    def build(ops: list[Operand], mods: dict, opsel: list[int]):
        table = int(mods.get("bitop3", "0"), 0)
        dst, srcs = ops[0], ops[1:4]
        typ = f"u{bits}"

        def run(ex, g) -> None:
            w = ex.w
            a, b, c = (np.broadcast_to(w.read(replace(op, half=opsel[i]) if bits == 16 else op, typ, g),
                                       _shape(w, g)) for i, op in enumerate(srcs))
            out = np.zeros(a.shape, a.dtype)
            for index in range(8):
                if table >> index & 1:
                    out |= (a if index & 4 else ~a) & (b if index & 2 else ~b) & (c if index & 1 else ~c)
            target = replace(dst, half=opsel[3]) if bits == 16 else dst
            w.write(target, typ, g, out, w.exec_mask(g))
        return run
    return build


def _ashr_pk(signed: bool):
    """v_ashr_pk_i8_i32 / _u8_i32: S0 and S1 shifted right arithmetically by S2[4:0], each saturated to 8 bits
    (signed or unsigned), packed into the 16-bit half OPSEL[3] selects (the other half kept)."""
    low, high = (-128, 127) if signed else (0, 255)

    def build(ops: list[Operand], mods: dict, opsel: list[int]):
        dst, a_op, b_op, s_op = ops[:4]

        def run(ex, g) -> None:
            w = ex.w
            shift = (_u32(w, s_op, g) & np.uint32(31)).astype(np.int64)
            a, b = (np.clip(_u32(w, op, g).view(np.int32).astype(np.int64) >> shift, low, high) & 0xFF
                    for op in (a_op, b_op))
            w.write(replace(dst, half=opsel[3]), "u16", g, (a | b << 8).astype(np.uint16), w.exec_mask(g))
        return run
    return build


def _permlane_swap(width: int):
    """v_permlane16_swap_b32 (width 16: rows 1 and 3 of VDST with rows 0 and 2 of SRC0) and v_permlane32_swap_b32
    (width 32: VDST's upper 32 lanes with SRC0's lower 32): both registers are written. A lane writes where it is
    active and its partner lane is (or fi:1 fetches inactive lanes); bound_ctrl:1 writes 0 where the partner is
    inactive."""
    def build(ops: list[Operand], mods: dict, opsel: list[int]):
        vdst, src0 = ops[0], ops[1]
        fi, bound = mods.get("fi", "0") != "0", mods.get("bound_ctrl", "0") != "0"
        lane = np.arange(64)
        upper = (lane // width) % 2 == 1  # VDST's swapped lanes; SRC0's are the others
        partner = lane ^ width

        def run(ex, g) -> None:
            w = ex.w
            d, s = _u32(w, vdst, g), _u32(w, src0, g)
            active = w.exec_mask(g)
            fetch = active[:, partner] | fi
            for reg, mine, other in ((vdst, upper, s), (src0, ~upper, d)):
                new = np.where(fetch, other[:, partner], 0).astype(np.uint32)
                w.write(reg, "u32", g, new, active & mine & (fetch | bound))
        return run
    return build


BUILDERS = {
    "prng_b32": _prng, "cvt_f32_bf16": _cvt_f32_bf16,
    "cvt_pk_f16_f32": _cvt_pk16("f16"), "cvt_pk_bf16_f32": _cvt_pk16("bf16"),
    "cvt_sr_f16_f32": _cvt_sr16("f16"), "cvt_sr_bf16_f32": _cvt_sr16("bf16"),
    "bitop3_b32": _bitop3(32), "bitop3_b16": _bitop3(16),
    "ashr_pk_i8_i32": _ashr_pk(True), "ashr_pk_u8_i32": _ashr_pk(False),
    "permlane16_swap_b32": _permlane_swap(16), "permlane32_swap_b32": _permlane_swap(32),
}
