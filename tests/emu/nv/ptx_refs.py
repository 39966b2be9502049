"""Host references for PTX instructions, written independently of the emulator: Python integers and exact
fractions, rounded once to the destination's format under the instruction's IEEE mode (rn, rz, rm, rp, and rna
for tf32), with PTX's rules for flush-to-zero, saturation and NaN.

A reference takes register bits (Python ints) and returns what the register must hold: an int (those bits
exactly) or an Expect (one of several bit patterns, any NaN, or a value within a documented error bound) where
the PTX ISA leaves a choice open or an instruction is an approximation.

Sources of the rules (each one is cited where it is used):
- PTX ISA (NVIDIA, "Parallel Thread Execution ISA"): instruction semantics, rounding modifiers, .ftz, .sat, the
  min/max NaN rules, shfl/bfe/bfi/prmt pseudocode, the approximation error bounds as ZLUDA's hardware-checked
  tests quote them (vosen/ZLUDA ptx_tests: rcp 1 ulp, sqrt 2^-23, rsqrt 2^-22.9, sin/cos 2^-20.5 abs, lg2 2^-22.6
  abs, ex2 2 ulp, tanh 2^-11 relative).
- NaN bits: f32 arithmetic gives the canonical NaN 0x7fffffff; f16 and bf16 0x7fff (cuda_bf16.h: "canonical NaN
  value for the nv_bfloat16 data type" is 0x7FFF; cuda_fp16.h likewise for __half); f64 is left as any NaN.
- Float to integer: NaN gives 0 unless the source is f64 or the destination 64-bit, then 1 << (width - 1)
  (PTX ISA 9.0, quoted in llvm/llvm-project#159530); out-of-range values saturate.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

INF, NAN = math.inf, math.nan
HALF = Fraction(1, 2)


# ---- formats ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fmt:
    name: str
    mant: int  # stored mantissa bits
    emin: int  # exponent of the smallest normal
    emax: int  # exponent of the largest finite
    width: int  # bits in a register

    @property
    def tiny(self) -> float:
        return 2.0 ** self.emin

    @property
    def largest(self) -> Fraction:
        return (2 - Fraction(1, 2 ** self.mant)) * Fraction(2) ** self.emax


FMT = {f.name: f for f in (Fmt("f16", 10, -14, 15, 16), Fmt("bf16", 7, -126, 127, 16), Fmt("tf32", 10, -126, 127, 32),
                           Fmt("f32", 23, -126, 127, 32), Fmt("f64", 52, -1022, 1023, 64))}
CANONICAL_NAN = {"f32": 0x7FFFFFFF, "f16": 0x7FFF, "bf16": 0x7FFF}


def value(bits: int, fmt: str) -> float:
    """Register bits as the float they hold."""
    if fmt == "bf16":
        return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    if fmt == "tf32":
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    code = {"f16": "<e", "f32": "<f", "f64": "<d"}[fmt]
    width = FMT[fmt].width // 8
    return struct.unpack(code, (bits & ((1 << 8 * width) - 1)).to_bytes(width, "little"))[0]


def bits(x: float, fmt: str) -> int:
    """A float representable in fmt as its register bits."""
    if fmt in ("bf16", "tf32"):
        raw = struct.unpack("<I", struct.pack("<f", x))[0]
        return raw >> 16 if fmt == "bf16" else raw
    code = {"f16": "<e", "f32": "<f", "f64": "<d"}[fmt]
    return int.from_bytes(struct.pack(code, x), "little")


def round_to(x: Fraction | float, fmt: str, mode: str = "rn") -> float:
    """x rounded once to fmt: rn (to nearest, ties to even), rna (ties away from zero), rz, rm (toward -inf),
    rp (toward +inf); gradual underflow; overflow to infinity or to the largest finite as the mode directs."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x) or x == 0):
        return x
    q = Fraction(x)
    if q == 0:
        return 0.0
    f = FMT[fmt]
    neg, a = q < 0, abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e += 1 if a >= Fraction(2) ** (e + 1) else -1 if a < Fraction(2) ** e else 0
    ulp = Fraction(2) ** (max(e, f.emin) - f.mant)
    n, rest = divmod(a / ulp, 1)
    up = {"rn": rest > HALF or (rest == HALF and n % 2 == 1), "rna": rest >= HALF, "rz": False,
          "rm": rest > 0 and neg, "rp": rest > 0 and not neg}[mode]
    r = (n + up) * ulp
    if r > f.largest:  # the modes that round toward zero keep the largest finite
        toward_zero = mode == "rz" or (mode == "rm" and not neg) or (mode == "rp" and neg)
        r = f.largest if toward_zero else None
    out = INF if r is None else float(r)
    return -out if neg else out


def is_subnormal(x: float, fmt: str) -> bool:
    return x != 0 and math.isfinite(x) and abs(x) < FMT[fmt].tiny


def flush(x: float, fmt: str) -> float:
    """.ftz: a subnormal becomes the zero of its sign."""
    return math.copysign(0.0, x) if is_subnormal(x, fmt) else x


# ---- expectations ----------------------------------------------------------------------------------------------
class Expect:
    """A register value a reference accepts other than one exact bit pattern."""

    def ok(self, raw: int) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class OneOf(Expect):
    options: frozenset

    def ok(self, raw: int) -> bool:
        return raw in self.options

    def __repr__(self) -> str:
        return "one of " + ", ".join(f"{o:#x}" for o in sorted(self.options))


@dataclass(frozen=True)
class AnyNaN(Expect):
    fmt: str

    def ok(self, raw: int) -> bool:
        return math.isnan(value(raw, self.fmt))

    def __repr__(self) -> str:
        return f"a {self.fmt} NaN"


@dataclass(frozen=True)
class Near(Expect):
    """A finite result within tol of the exact value (absolute or relative), or within ulps of its rounding."""
    exact: float
    fmt: str
    abs_tol: float = 0.0
    rel_tol: float = 0.0
    ulps: int = 0

    def ok(self, raw: int) -> bool:
        got = value(raw, self.fmt)
        if math.isnan(got) or math.isinf(got) != math.isinf(self.exact):
            return False
        if math.isinf(got):
            return got == self.exact
        err = abs(got - self.exact)
        if err <= self.abs_tol or err <= self.rel_tol * abs(self.exact):
            return True
        near = bits(round_to(self.exact, self.fmt), self.fmt)
        return self.ulps > 0 and _ordinal(raw, self.fmt) - _ordinal(near, self.fmt) in range(-self.ulps,
                                                                                             self.ulps + 1)

    def __repr__(self) -> str:
        tol = [f"{t} {v:.3g}" for t, v in (("abs", self.abs_tol), ("rel", self.rel_tol)) if v]
        return f"~{self.exact!r} ({', '.join(tol + ([f'{self.ulps} ulp'] if self.ulps else []))})"


@dataclass(frozen=True)
class Either(Expect):
    """Any of several expectations (where hardware documentation and observation disagree)."""
    options: tuple

    def ok(self, raw: int) -> bool:
        return any(o.ok(raw) if isinstance(o, Expect) else o == raw for o in self.options)

    def __repr__(self) -> str:
        return " or ".join(repr(o) if isinstance(o, Expect) else f"{o:#x}" for o in self.options)


@dataclass(frozen=True)
class Packed(Expect):
    """A register of several fields (f16x2, bf16x2): each field's expectation, the lowest first."""
    parts: tuple
    width: int

    def ok(self, raw: int) -> bool:
        mask = (1 << self.width) - 1
        fields = [raw >> (i * self.width) & mask for i in range(len(self.parts))]
        return all(p.ok(f) if isinstance(p, Expect) else p == f for p, f in zip(self.parts, fields, strict=True))

    def __repr__(self) -> str:
        return "(" + ", ".join(repr(p) if isinstance(p, Expect) else f"{p:#x}" for p in self.parts) + ")"


def packed(parts: list, width: int = 16) -> int | Expect:
    """The fields as one register: its bits when every field is exact."""
    if all(isinstance(p, int) for p in parts):
        return sum(p << (i * width) for i, p in enumerate(parts))
    return Packed(tuple(parts), width)


def _ordinal(raw: int, fmt: str) -> int:
    """Bits as a position on the number line (adjacent floats differ by one; -0 and +0 are both 0)."""
    width = FMT[fmt].width if fmt != "tf32" else 32
    sign, mag = raw >> (width - 1) & 1, raw & ((1 << (width - 1)) - 1)
    return -mag if sign else mag


def expect_float(x: float, fmt: str, nan: bool = True) -> int | Expect:
    """A float result as its bits; a NaN as the canonical NaN of fmt (any NaN for f64) unless nan is False."""
    if math.isnan(x):
        return CANONICAL_NAN[fmt] if nan and fmt in CANONICAL_NAN else AnyNaN(fmt)
    return bits(x, fmt)


# ---- exact float arithmetic ------------------------------------------------------------------------------------
def _zero_sum(sa: bool, sb: bool, mode: str) -> float:
    """The sign of an exactly zero sum (IEEE 754 6.3): both addends negative zero-ish: -0; otherwise +0, -0 toward
    -inf."""
    return -0.0 if (sa and sb) or (sa != sb and mode == "rm") else 0.0


def exact(op: str, xs: list[float], mode: str) -> Fraction | float:
    """The exact result of op on float values: a nonzero Fraction, or a float (zero with its sign, infinity, NaN)."""
    if any(math.isnan(x) for x in xs):
        return NAN
    neg = [math.copysign(1, x) < 0 for x in xs]
    if op in ("add", "sub"):
        a, b = xs
        if op == "sub":
            b, neg = -b, [neg[0], not neg[1]]
        if math.isinf(a) or math.isinf(b):
            return NAN if math.isinf(a) and math.isinf(b) and (a > 0) != (b > 0) else (a if math.isinf(a) else b)
        s = Fraction(a) + Fraction(b)
        return s if s else _zero_sum(neg[0], neg[1], mode)
    if op == "mul":
        a, b = xs
        if (math.isinf(a) and b == 0) or (math.isinf(b) and a == 0):
            return NAN
        sign = -1.0 if neg[0] != neg[1] else 1.0
        if math.isinf(a) or math.isinf(b):
            return sign * INF
        p = Fraction(a) * Fraction(b)
        return p if p else sign * 0.0
    if op == "fma":
        a, b, c = xs
        prod = exact("mul", [a, b], mode)
        if isinstance(prod, float) and math.isnan(prod):
            return NAN
        if isinstance(prod, float) and math.isinf(prod):
            return NAN if math.isinf(c) and (c > 0) != (prod > 0) else prod
        if math.isinf(c):
            return c
        s = Fraction(prod) + Fraction(c)
        return s if s else _zero_sum(math.copysign(1, prod) < 0 if prod == 0 else prod < 0, neg[2], mode)
    if op == "div":
        a, b = xs
        sign = -1.0 if neg[0] != neg[1] else 1.0
        if (a == 0 and b == 0) or (math.isinf(a) and math.isinf(b)):
            return NAN
        if math.isinf(a) or b == 0:
            return sign * INF
        if math.isinf(b) or a == 0:
            return sign * 0.0
        return Fraction(a) / Fraction(b)
    raise ValueError(op)


def round_sqrt(x: float, fmt: str, mode: str) -> float:
    """sqrt(x) rounded once: the integer square root of x scaled far past the format's precision, with a sticky
    bit when it is inexact (no tie of fmt can lie between the truncation and the exact root)."""
    if math.isnan(x) or x < 0:
        return NAN
    if x == 0 or math.isinf(x):
        return x
    q, k = Fraction(x), 1200
    scaled = q * Fraction(4) ** k
    whole = scaled.numerator // scaled.denominator
    root = math.isqrt(whole)
    inexact = root * root != scaled
    return round_to(Fraction(root, 2 ** k) + (Fraction(1, 2 ** (k + 2)) if inexact else 0), fmt, mode)


def float_op(op: str, fmt: str, mode: str, raws: list[int], ftz: bool = False, sat: bool = False) -> int | Expect:
    """add/sub/mul/fma/div/sqrt/rcp on fmt's register bits with IEEE rounding by mode (PTX ISA: .ftz flushes
    subnormal inputs and results to sign-preserving zero; .sat clamps the result to [0.0, 1.0] and a NaN to 0)."""
    xs = [value(r, fmt) for r in raws]
    if ftz:
        xs = [flush(x, fmt) for x in xs]
    if op == "sqrt":
        r = round_sqrt(xs[0], fmt, mode)
        exact_small = False
    else:
        if op == "rcp":
            op, xs = "div", [1.0, xs[0]]
        e = exact(op, xs, mode)
        r = round_to(e, fmt, mode)
        exact_small = isinstance(e, Fraction) and abs(e) < FMT[fmt].tiny
    cands = [r]
    if ftz:
        # whether a result that rounds up to the smallest normal from below counts as subnormal is not specified
        cands = [flush(v, fmt) for v in cands] + ([math.copysign(0.0, r)] if exact_small else [])
    if sat:
        cands = [0.0 if math.isnan(v) else min(max(v, 0.0), 1.0) for v in cands]
        cands += [0.0 for v in cands if v == 0]  # -0 clamped: the ISA does not say which zero
    return expect_any(cands, fmt)


def expect_any(cands: list[float], fmt: str) -> int | Expect:
    """Any of the candidate results (the canonical NaN when they are all NaN)."""
    if all(math.isnan(v) for v in cands):
        return expect_float(NAN, fmt)
    options = frozenset(bits(v, fmt) for v in cands if not math.isnan(v))
    return next(iter(options)) if len(options) == 1 else OneOf(options)


# ---- min, max, and the sign operations ---------------------------------------------------------------------------
def minmax(which: str, fmt: str, raws: list[int], ftz: bool = False, nan: bool = False,
           xorsign: bool = False) -> int | Expect:
    """PTX ISA min/max: a NaN operand is ignored (both NaN: canonical NaN); with .NaN any NaN operand gives the
    canonical NaN; -0.0 is below +0.0; .xorsign.abs: the min/max of the magnitudes with the XOR of the operands'
    signs (a NaN result stays the canonical NaN)."""
    xs = [value(r, fmt) for r in raws]
    if ftz:
        xs = [flush(x, fmt) for x in xs]
    sign = (math.copysign(1, xs[0]) < 0) != (math.copysign(1, xs[1]) < 0)
    if xorsign:
        xs = [abs(x) for x in xs]
    nans = [math.isnan(x) for x in xs]
    if all(nans) or (nan and any(nans)):
        return expect_float(NAN, fmt)
    if any(nans):
        r = xs[1] if nans[0] else xs[0]
    else:
        key = [(x, math.copysign(1, x)) for x in xs]  # -0 before +0
        r = (min if which == "min" else max)(zip(key, xs, strict=True))[1]
    if xorsign:
        r = -abs(r) if sign else abs(r)
    return bits(r, fmt)


# ---- integers --------------------------------------------------------------------------------------------------
def to_signed(raw: int, width: int) -> int:
    raw &= (1 << width) - 1
    return raw - (1 << width) if raw >> (width - 1) else raw


def as_value(raw: int, t: str) -> int:
    """Bits of an integer type as its value."""
    width = int(t[1:])
    return to_signed(raw, width) if t[0] == "s" else raw & ((1 << width) - 1)


def wrap(v: int, width: int) -> int:
    return v & ((1 << width) - 1)


def saturate(v: int, t: str) -> int:
    """v clamped to t's range, as t's bits."""
    width = int(t[1:])
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if t[0] == "s" else (0, (1 << width) - 1)
    return wrap(min(max(v, lo), hi), width)


def trunc_div(a: int, b: int) -> tuple[int, int]:
    """C's division: the quotient truncated toward zero, the remainder with the dividend's sign."""
    q = abs(a) // abs(b)
    q = -q if (a < 0) != (b < 0) else q
    return q, a - q * b


def fns(mask: int, base: int, offset: int) -> int:
    """PTX ISA fns pseudocode: from bit base, step up (offset > 0) or down (offset < 0) to the |offset|-th set bit;
    offset 0: base itself if set; 0xffffffff if none."""
    base, offset = base - (base >> 31 << 32), offset - (offset >> 31 << 32)  # both as s32
    if offset == 0:
        return base if 0 <= base < 32 and mask >> base & 1 else 0xFFFFFFFF
    pos, count, step = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if mask >> pos & 1:
            if not count:
                return pos
            count -= 1
        pos += step
    return 0xFFFFFFFF


def bfe(a: int, pos: int, length: int, t: str) -> int:
    """PTX ISA bfe pseudocode: bits pos.. of a, len of them; past the msb (and for .s types past len) the sign
    bit a[min(pos + len - 1, msb)] (0 for .u types and len 0)."""
    width = int(t[1:])
    msb = width - 1
    pos, length = pos & 0xFF, length & 0xFF
    sbit = 0 if t[0] == "u" or length == 0 else a >> min(pos + length - 1, msb) & 1
    out = 0
    for i in range(width):
        bit = a >> (pos + i) & 1 if i < length and pos + i <= msb else sbit
        out |= bit << i
    return out


def bfi(a: int, b: int, pos: int, length: int, width: int) -> int:
    """PTX ISA bfi pseudocode: b with len bits of a inserted at pos (bits past the msb dropped)."""
    pos, length = pos & 0xFF, length & 0xFF
    out = b
    for i in range(length):
        if pos + i > width - 1:
            break
        out = (out & ~(1 << (pos + i))) | ((a >> i & 1) << (pos + i))
    return wrap(out, width)


PRMT_MODES = {  # PTX ISA prmt: for selector c[1:0], the source byte of each result byte (result byte 0 first)
    "f4e": lambda s: [(s + i) % 8 for i in range(4)], "b4e": lambda s: [(s - i) % 8 for i in range(4)],
    "rc8": lambda s: [s] * 4, "ecl": lambda s: [max(s, i) for i in range(4)],
    "ecr": lambda s: [min(s, i) for i in range(4)], "rc16": lambda s: [(s & 1) * 2, (s & 1) * 2 + 1] * 2,
}


def prmt(a: int, b: int, c: int, mode: str | None) -> int:
    """PTX ISA prmt: the bytes of b:a (a the low word) picked by the selector; in the default mode each nibble of
    c[15:0] names a byte, its bit 3 replicating that byte's sign instead."""
    src = (b << 32 | a).to_bytes(8, "little")
    out = 0
    for i in range(4):
        if mode is None:
            nib = c >> (4 * i) & 0xF
            byte = src[nib & 7]
            byte = (0xFF if byte & 0x80 else 0) if nib & 8 else byte
        else:
            byte = src[PRMT_MODES[mode](c & 3)[i]]
        out |= byte << (8 * i)
    return out


def bfind(a: int, t: str, shiftamt: bool) -> int:
    """PTX ISA bfind: the bit position of the most significant non-sign bit (0xffffffff when there is none);
    .shiftamt: the left shift that would make it the msb."""
    width = int(t[1:])
    v = as_value(a, t)
    if t[0] == "s" and v < 0:
        v = ~v
    if v == 0:
        return 0xFFFFFFFF
    pos = v.bit_length() - 1
    return width - 1 - pos if shiftamt else pos


def shfl(mode: str, lane: int, b: int, c: int) -> tuple[int, bool]:
    """PTX ISA shfl.sync pseudocode: the lane to read and whether it is inside the segment (else the own lane)."""
    bval, cval, mask = b & 31, c & 31, (c >> 8) & 31
    max_lane = (lane & mask) | (cval & ~mask)
    min_lane = lane & mask
    j = {"up": lane - bval, "down": lane + bval, "bfly": lane ^ bval, "idx": min_lane | (bval & ~mask)}[mode]
    ok = j >= max_lane if mode == "up" else j <= max_lane
    return (j if ok else lane), ok


# ---- conversions -------------------------------------------------------------------------------------------------
INT_ROUND = {"rni": lambda q: _round_half_even(q), "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}


def _round_half_even(q: Fraction) -> int:
    n, rest = divmod(q, 1)
    return int(n + (rest > HALF or (rest == HALF and n % 2 == 1)))


def float_to_int(x: float, mode: str, src: str, dst: str) -> int:
    """cvt.{rni,rzi,rmi,rpi}.int.float: rounded to an integer and clamped to the destination (PTX ISA: saturated by
    default); NaN per PTX ISA 9.0."""
    width = int(dst[1:])
    if math.isnan(x):
        return 0 if src != "f64" and width != 64 else 1 << (width - 1)
    if math.isinf(x):
        return saturate(-(1 << 200) if x < 0 else 1 << 200, dst)
    return saturate(INT_ROUND[mode](Fraction(x)), dst)


EIGHT_BIT = {"e4m3": (3, 7, 448.0, 0x7F), "e5m2": (2, 15, 57344.0, 0x7F)}  # mantissa, bias, largest, a NaN


def to_eight_bit(x: float, kind: str) -> int | Expect:
    """cvt.rn.satfinite to e4m3/e5m2 (OCP FP8): rounded to nearest even with gradual underflow, past the largest
    finite (and infinity) the largest of that sign, a NaN some NaN (PTX ISA cvt .satfinite)."""
    mant, bias, largest, _ = EIGHT_BIT[kind]
    if math.isnan(x):
        return Either(tuple(sign | code for sign in (0, 0x80) for code in
                            ((0x7F,) if kind == "e4m3" else (0x7D, 0x7E, 0x7F))))
    sign = 0x80 if math.copysign(1, x) < 0 else 0
    emin = 1 - bias
    r = 0.0 if x == 0 else _round_small(Fraction(abs(x)) if math.isfinite(x) else Fraction(largest) * 2, mant, emin)
    if r > largest:
        r = largest
    if r < 2.0 ** emin:  # subnormal (or zero)
        return sign | int(r / 2.0 ** (emin - mant))
    e = math.frexp(r)[1] - 1
    return sign | (e + bias) << mant | int((r / 2.0 ** e - 1) * 2 ** mant)


def _round_small(a: Fraction, mant: int, emin: int) -> float:
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e += 1 if a >= Fraction(2) ** (e + 1) else -1 if a < Fraction(2) ** e else 0
    ulp = Fraction(2) ** (max(e, emin) - mant)
    n, rest = divmod(a / ulp, 1)
    return float((n + (rest > HALF or (rest == HALF and n % 2 == 1))) * ulp)


def round_integral(x: float, mode: str) -> float:
    """cvt.rni/rzi/rmi/rpi.f.f: x rounded to an integral value of the same format (the sign of a zero kept)."""
    if not math.isfinite(x) or x == 0:
        return x
    r = float(INT_ROUND[mode](Fraction(x)))
    return math.copysign(r, x) if r == 0 else r
