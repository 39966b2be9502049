"""Cases for cvt between every pair of the integer and float types ptxas accepts, with every rounding (the
integer roundings rni/rzi/rmi/rpi and the float ones rn/rz/rm/rp), .ftz, .sat, .relu and .satfinite; cvt to tf32
(rn, rz, rna); the packing conversions to f16x2, bf16x2, e4m3x2 and e5m2x2."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import ptx_refs as R
from ptx_harness import Case, float_edges, float_randoms, int_edges

INTS = ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")
FLOATS = ("f16", "bf16", "f32", "f64")
REG = {"s8": "b16", "u8": "b16", "s16": "b16", "u16": "b16", "f16": "b16", "bf16": "b16", "s32": "b32",
       "u32": "b32", "f32": "b32", "s64": "b64", "u64": "b64", "f64": "b64"}
INT_MODES = ("rni", "rzi", "rmi", "rpi")
FLOAT_MODES = ("rn", "rz", "rm", "rp")
WIDTH = {"b16": 16, "b32": 32, "b64": 64}


def _bits(t: str) -> int:
    return R.FMT[t].width if t in R.FMT else int(t[1:])


def _range(t: str) -> tuple[int, int]:
    w = _bits(t)
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if t[0] == "s" else (0, (1 << w) - 1)


def forms(d: str, s: str) -> list[tuple[str, ...]]:
    """The modifier sets cvt.d.s takes (as ptxas 13 accepts them for sm_90)."""
    dint, sint = d in INTS, s in INTS
    if dint and sint:
        lo, hi = _range(s)
        dlo, dhi = _range(d)
        return [()] + ([("sat",)] if lo < dlo or hi > dhi else [])
    if dint:  # from a float: an integer rounding is required; .sat is redundant (saturation is the default)
        if s == "bf16" and _bits(d) == 8:
            return []
        out = [(m,) for m in INT_MODES]
        out += [(m, "ftz") for m in INT_MODES] if s == "f32" else []
        return out + ([("rzi", "sat")] if s != "bf16" else [])
    if sint:  # to a float: a float rounding is required
        if d == "bf16" and _bits(s) == 8:
            return []
        return [(m,) for m in FLOAT_MODES] + ([("rn", "sat")] if d != "bf16" else [])
    if d == s:  # the same float type: rounded to an integral value
        out = [(m,) for m in INT_MODES] + ([("rni", "sat")] if d != "bf16" else [])
        out += [("ftz",), ("sat",), ("rzi", "ftz")] if d == "f32" else [("sat",)] if d in ("f16", "f64") else []
        return out
    if _bits(d) > _bits(s) or (d, s) == ("f32", "bf16"):  # wider: exact
        return [()] + ([("sat",)] if d != "bf16" and s != "bf16" else []) + ([("ftz",)] if s == "f32" else [])
    out = [(m,) for m in FLOAT_MODES]  # narrower: a float rounding is required
    if s == "f32" and d == "f16":
        out += [("rn", "ftz"), ("rz", "sat"), ("rn", "relu"), ("rn", "satfinite"), ("rz", "satfinite")]
    if s == "f32" and d == "bf16":
        out += [("rn", "relu"), ("rz", "relu"), ("rn", "satfinite"), ("rn", "ftz")]
    if s == "f64" and d == "f32":
        out += [("rn", "ftz"), ("rm", "sat")]
    return out


def _extend(v: int, t: str, reg: str) -> int:
    """A result of type t in a wider register: sign-extended for signed types, else zero-extended."""
    v = R.wrap(v, _bits(t))
    return R.wrap(R.to_signed(v, _bits(t)), WIDTH[reg]) if t[0] == "s" else v


def reference(d: str, s: str, mods: tuple[str, ...]):
    """cvt's result (PTX ISA cvt): integers extended, wrapped or (.sat) clamped; floats rounded once by the mode;
    float to integer rounded, clamped and NaN as PTX ISA 9.0 says; .ftz flushes an f32 source and result; .sat
    clamps a float result to [0, 1] (NaN to 0); .relu clamps negatives to 0 with a NaN the canonical NaN;
    .satfinite gives the largest finite for an infinite result."""
    mode = next((m for m in mods if m in INT_MODES + FLOAT_MODES), "rn")
    ftz, sat, relu, satfinite = ("ftz" in mods, "sat" in mods, "relu" in mods, "satfinite" in mods)

    def ref(raw: int):
        if s in INTS:
            v = R.as_value(raw, s)
            if d in INTS:
                return _extend(R.saturate(v, d) if sat else v, d, REG[d])
            return _float_result(float(R.round_to(Fraction(v), d, mode)), d, sat=sat)
        x = R.value(raw, s)
        if ftz and s == "f32":
            x = R.flush(x, s)
        if d in INTS:
            return _extend(R.float_to_int(x, mode, s, d), d, REG[d])
        if math.isnan(x):
            return R.expect_float(math.nan, d) if relu else 0 if sat else R.AnyNaN(d)
        r = R.round_integral(x, mode) if mode in INT_MODES else R.round_to(x, d, mode)
        if satfinite and math.isinf(r):
            r = math.copysign(float(R.FMT[d].largest), r)
        return _float_result(r, d, ftz=ftz and d == "f32", sat=sat, relu=relu)
    return ref


def _float_result(r: float, d: str, ftz: bool = False, sat: bool = False, relu: bool = False):
    cands = [R.flush(r, d) if ftz else r]
    if relu:
        cands = [0.0 if v < 0 else v for v in cands] + ([0.0] if cands[0] == 0 else [])
    if sat:
        cands = [min(max(v, 0.0), 1.0) for v in cands] + ([0.0] if cands[0] == 0 else [])
    return R.expect_any(cands, d)


def _lanes(s: str, d: str) -> list[tuple[int]]:
    if s in INTS:
        w = _bits(s)
        vals = int_edges(w, 10)
        if w >= 32:  # around the float precision limits: ties and just past them
            for p in (11, 24, 53):
                if p + 2 < w:
                    vals += [(1 << p) + 1, (1 << (p + 1)) + 3, (1 << (p + 1)) + 2, R.wrap(-((1 << (p + 1)) + 1), w)]
        if _bits(s) == 8 and REG[s] == "b16":  # 8-bit values as a 16-bit register holds them (extended)
            vals = [_extend(v, s, "b16") for v in vals]
        return [(v,) for v in dict.fromkeys(vals)]
    vals = float_edges(s) + float_randoms(s, 24, -4, 70 if s != "f16" else 15, seed=d)
    specials = [0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 127.5, 128.0, 255.5, 256.0, -129.0, 32767.5, 65535.5, 65536.0,
                2.0 ** 31, -2.0 ** 31 - 1, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 65504.0, 65520.0, 1e-7,
                2.0 ** -24, 3 * 2.0 ** -26, 2.0 ** -133, 1e30, -1e30]
    for x in specials:
        r = R.round_to(x, s)
        if math.isfinite(r) and (r == x or abs(x) > 1e20):
            vals.append(R.bits(r, s))
    return [(v,) for v in dict.fromkeys(vals)]


def conversions() -> list[Case]:
    cases = []
    for d, s in itertools.product(INTS + FLOATS, INTS + FLOATS):
        if d == s and d in INTS:
            continue
        lanes = _lanes(s, d)
        for mods in forms(d, s):
            name = "cvt" + "".join(f".{m}" for m in mods) + f".{d}.{s}"
            cases.append(Case(name, "cvt", f"{name} %o0, %i0;", (REG[s],), (REG[d],), lanes, reference(d, s, mods)))
    return cases


@dataclass(frozen=True)
class _HighBits(R.Expect):
    """tf32 in its 32-bit register: the upper 19 bits given, the low 13 left to the hardware (or a NaN)."""
    want: int

    def ok(self, raw: int) -> bool:
        if math.isnan(R.value(self.want, "f32")):
            return math.isnan(R.value(raw, "f32"))
        return raw & 0xFFFFE000 == self.want

    def __repr__(self) -> str:
        return f"{self.want:#x} in bits 31..13"


def packs() -> list[Case]:
    """cvt to tf32 (rn, rz, rna, rna.satfinite, relu); cvt.rn{.relu}.f16x2/bf16x2.f32 d, a, b (a in the upper
    half); cvt.rn.satfinite{.relu}.e4m3x2/e5m2x2.f32 d, a, b (a in the upper byte)."""
    cases = []
    lanes = [(x,) for x in float_edges("f32") + float_randoms("f32", 60, -130, 127, "tf32")]
    for mods in (("rn",), ("rz",), ("rna",), ("rna", "satfinite"), ("rn", "relu"), ("rz", "relu")):
        def tf32(raw: int, mods=mods):
            x = R.value(raw, "f32")
            if math.isnan(x):
                return _HighBits(0x7FFFFFFF)
            r = R.round_to(x, "tf32", mods[0])
            if "satfinite" in mods and math.isinf(r):
                r = math.copysign(float(R.FMT["tf32"].largest), r)
            if "relu" in mods and r < 0:
                r = 0.0
            return _HighBits(R.bits(r, "f32"))
        name = "cvt" + "".join(f".{m}" for m in mods) + ".tf32.f32"
        cases.append(Case(name, "cvt", f"{name} %o0, %i0;", ("b32",), ("b32",), lanes, tf32))
    edges = float_edges("f32") + float_randoms("f32", 40, -30, 20, "pack")
    pairs = list(zip(edges, edges[::-1] + edges[:0], strict=True)) + list(itertools.product(edges[:12], edges[:12]))
    for d, relu in itertools.product(("f16x2", "bf16x2"), (False, True)):
        elem = d[:-2]
        one = reference(elem, "f32", ("rn", "relu") if relu else ("rn",))
        name = f"cvt.rn{'.relu' if relu else ''}.{d}.f32"
        cases.append(Case(name, "cvt", f"{name} %o0, %i0, %i1;", ("b32", "b32"), ("b32",), pairs,
                          lambda a, b, f=one: R.packed([f(b), f(a)])))
    for kind, relu in itertools.product(("e4m3", "e5m2"), (False, True)):
        def eight(raw: int, kind=kind, relu=relu):
            x = R.value(raw, "f32")
            if relu and not math.isnan(x) and x < 0:
                x = 0.0
            return R.to_eight_bit(x, kind)
        name = f"cvt.rn.satfinite{'.relu' if relu else ''}.{kind}x2.f32"
        cases.append(Case(name, "cvt", f"{name} %o0, %i0, %i1;", ("b32", "b32"), ("b16",), pairs,
                          lambda a, b, f=eight: R.packed([f(b), f(a)], 8)))
    return cases


def cases() -> list[Case]:
    return conversions() + packs()
