"""Host references for the VALU and SALU opcodes, written independently of the executor: Python integers and
exact fractions, rounded once to the destination's format (round to nearest even, gradual underflow, overflow to
infinity), with the special-value rules of the RDNA3/RDNA4 ISA guides.

A reference takes the sources as Python values of their types (floats as float, integers as int, signed or not
as the type says; a 16-bit pair of a packed type as a tuple) and returns the result — a float, an exact Fraction,
an int (wrapped to the destination's width) or a bool for compares — or (result, flag) where the instruction
also writes SCC (SALU) or a lane bit of an SGPR mask (VALU carries). None means the guides leave the result
unspecified for those inputs (min/max of +0 and -0). Ops named in TIED also receive the destination's old value.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cache

INF, NAN = math.inf, math.nan


@dataclass(frozen=True)
class Type:
    name: str

    @property
    def kind(self) -> str:
        return self.name[0] if self.name[0] != "b" or self.name.startswith("bf") else "u"

    @property
    def bits(self) -> int:
        return 8 if self.name in EIGHT_BIT else int(self.name.lstrip("bfiu"))

    @property
    def is_float(self) -> bool:
        return self.name[0] == "f" or self.name.startswith("bf")


# gfx12's 8-bit floats (OCP): fp8 = E4M3, no infinity, S.1111.111 is NaN (largest 448); bf8 = E5M2, IEEE-like
EIGHT_BIT = {"fp8": (3, 7, 448.0), "bf8": (2, 15, 57344.0)}  # mantissa bits, exponent bias, largest finite


class OneOf(frozenset):
    """Results that are all correct (as register bits): where the guides leave a choice open."""


# float formats: (mantissa bits, lowest normal exponent, highest exponent)
FORMATS = {"fp8": (3, -6, 8), "bf8": (2, -14, 15), "f16": (10, -14, 15), "bf16": (7, -126, 127),
           "f32": (23, -126, 127), "f64": (52, -1022, 1023)}


def round_float(x: float | Fraction, fmt: str) -> float:
    """x rounded to nearest even in fmt, as a Python float (exact: every format fits a double)."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x) or x == 0):
        return x
    q = Fraction(x)
    if q == 0:
        return 0.0
    mant, emin, emax = FORMATS[fmt]
    sign, q = (-1 if q < 0 else 1), abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    e += 1 if q >= Fraction(2) ** (e + 1) else -1 if q < Fraction(2) ** e else 0
    ulp = Fraction(2) ** (max(e, emin) - mant)
    n, rest = divmod(q / ulp, 1)
    n += 1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2) else 0
    r = n * ulp
    if r >= Fraction(2) ** (emax + 1):
        return sign * INF
    return math.copysign(float(r), sign)


def _eight_bit(value: float, name: str) -> int:
    mant, bias, largest = EIGHT_BIT[name]
    sign = 0x80 if math.copysign(1, value) < 0 else 0
    if math.isnan(value):
        return 0x7F if name == "fp8" else 0x7E
    if math.isinf(value):
        return sign | 0x7C  # bf8's infinity (fp8 has none: its results past 448 are left out by the references)
    a = abs(value)
    if a == 0:
        return sign
    e = max(math.frexp(a)[1] - 1, 1 - bias)
    if a < 2.0 ** (1 - bias):  # denormal
        return sign | int(a / 2.0 ** (1 - bias - mant))
    return sign | (e + bias) << mant | int((a / 2.0**e - 1) * 2**mant)


def to_bits(value, t: Type) -> int:
    """A result as the register bits of its type."""
    if t.name in EIGHT_BIT:
        return _eight_bit(round_float(value, t.name), t.name)
    if t.is_float:
        f = round_float(value, t.name)
        if t.name == "bf16":
            return struct.unpack("<I", struct.pack("<f", f))[0] >> 16 if not math.isnan(f) else 0x7FC0
        return int.from_bytes(struct.pack({"f16": "<e", "f32": "<f", "f64": "<d"}[t.name], f), "little")
    return int(value) & ((1 << t.bits) - 1)


def from_bits(raw: int, t: Type):
    """Register bits as a Python value of the type."""
    raw &= (1 << t.bits) - 1
    if t.name in EIGHT_BIT:
        mant, bias, _ = EIGHT_BIT[t.name]
        e, m, sign = (raw >> mant) & (0xFF >> (mant + 1)), raw & ((1 << mant) - 1), -1.0 if raw & 0x80 else 1.0
        if t.name == "fp8" and raw & 0x7F == 0x7F or t.name == "bf8" and e == 0x1F:
            return math.copysign(NAN, sign) if t.name == "fp8" or m else sign * INF
        return sign * (m / 2**mant + (e > 0)) * 2.0 ** (max(e, 1) - bias)
    if t.is_float:
        if t.name == "bf16":
            return struct.unpack("<f", struct.pack("<I", raw << 16))[0]
        return struct.unpack({"f16": "<e", "f32": "<f", "f64": "<d"}[t.name], raw.to_bytes(t.bits // 8, "little"))[0]
    return raw - (1 << t.bits) if t.kind == "i" and raw >> (t.bits - 1) else raw


# ---- float arithmetic: exact, then rounded by the caller ------------------------------------------------------
def _exact(fn, float_fn, *xs):
    """fn on exact fractions for finite inputs; float_fn (IEEE double, enough for specials and the sign of zero)
    where an input is not finite or the exact result is zero."""
    if all(math.isfinite(x) for x in xs):
        r = fn(*(Fraction(x) for x in xs))
        if r != 0:
            return r
    return float_fn(*xs)


def add(a, b):
    return _exact(lambda x, y: x + y, lambda x, y: x + y, a, b)


def mul(a, b):
    return _exact(lambda x, y: x * y, lambda x, y: x * y, a, b)


def fma(a, b, c):
    def specials(x, y, z):
        if math.isfinite(x) and math.isfinite(y) and math.isinf(z):  # the exact product cannot overflow
            return z
        p = x * y if not ((x == 0 and math.isinf(y)) or (y == 0 and math.isinf(x))) else NAN
        return p + z
    return _exact(lambda x, y, z: x * y + z, specials, a, b, c)


def min_num(a, b):  # IEEE 754-2008 minNum: a quiet NaN operand gives the other; ±0 unspecified
    if math.isnan(a) or math.isnan(b):
        return b if math.isnan(a) else a
    return None if a == b == 0 and math.copysign(1, a) != math.copysign(1, b) else min(a, b)


def max_num(a, b):
    if math.isnan(a) or math.isnan(b):
        return b if math.isnan(a) else a
    return None if a == b == 0 and math.copysign(1, a) != math.copysign(1, b) else max(a, b)


def _chain(fn, *xs):
    r = xs[0]
    for x in xs[1:]:
        if r is None:
            return None
        r = fn(r, x)
    return r


def med3_float(a, b, c):
    # the guides: a NaN operand makes the result min3 of the inputs (NaN ignored), else the middle value
    if any(math.isnan(x) for x in (a, b, c)):
        return _chain(min_num, a, b, c)
    if len({a, b, c}) < 3 and 0 in (a, b, c):
        return None if any(math.copysign(1, x) < 0 for x in (a, b, c) if x == 0) else sorted((a, b, c))[1]
    return sorted((a, b, c))[1]


def rint(x):
    return x if not math.isfinite(x) else math.copysign(float(round(x)), x)  # Python rounds half to even


def fract(x, fmt: str):
    """x - floor(x), kept below 1.0 (the largest float under 1 where it would round to 1); NaN for ±inf."""
    if not math.isfinite(x):
        return NAN
    if x == 0:
        return None  # -0 + -floor(-0): the guides do not say which zero
    r = round_float(Fraction(x) - math.floor(x), fmt)
    return min(r, 1 - 2.0 ** -(FORMATS[fmt][0] + 1))


def _frexp(x):
    return math.frexp(x) if math.isfinite(x) else (x, 0)


def frexp_mant(x):
    return NAN if math.isnan(x) else x if math.isinf(x) else _frexp(x)[0]


def frexp_exp(x):
    return 0 if not math.isfinite(x) else _frexp(x)[1]


def ldexp(x, n):
    if not math.isfinite(x) or x == 0:
        return x
    return Fraction(x) * Fraction(2) ** max(-3000, min(3000, n))  # past ±3000 every format saturates


def sqrt(x):
    if math.isnan(x) or x < 0:
        return NAN if not (x == 0) else x
    return x if x == 0 or math.isinf(x) else math.sqrt(x)


def rcp(x):
    if x == 0:
        return math.copysign(INF, x)
    return math.copysign(0.0, x) if math.isinf(x) else NAN if math.isnan(x) else Fraction(1) / Fraction(x)


def rsq(x):
    if x == 0:
        return math.copysign(INF, x)
    if math.isnan(x) or x < 0:
        return NAN
    return 0.0 if math.isinf(x) else 1 / math.sqrt(x)


def exp2(x):
    if math.isnan(x):
        return NAN
    try:
        return math.pow(2.0, x)
    except OverflowError:
        return INF


def log2(x):
    if math.isnan(x) or x < 0:
        return NAN
    return -INF if x == 0 else INF if math.isinf(x) else math.log2(x)


def sin_rev(x):  # v_sin takes its angle in revolutions, valid in [-256, 256]: 0 outside
    if not math.isfinite(x):
        return NAN
    return math.sin(2 * math.pi * math.fmod(x, 1.0)) if abs(x) <= 256 else None if x < 0 else 0.0


def cos_rev(x):  # 1 outside [-256, 256]
    return NAN if not math.isfinite(x) else math.cos(2 * math.pi * math.fmod(x, 1.0)) if abs(x) <= 256 else 1.0


def to_int(x, bits: int, signed: bool) -> int:
    """Float to integer as v_cvt does: truncate toward zero, saturate at the type's range, NaN to 0."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return hi if x > 0 else lo
    return max(lo, min(hi, math.trunc(x)))


def class_bits(x, tiny: float) -> int:
    """The v_cmp_class mask bit of x (tiny: the type's smallest normal): 0 sNaN, 1 qNaN, 2 -inf, 3 -normal,
    4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf (every NaN here is quiet: the host's NaNs are)."""
    if math.isnan(x):
        return 1
    neg = math.copysign(1, x) < 0
    if math.isinf(x):
        return 2 if neg else 9
    if x == 0:
        return 5 if neg else 6
    return (3 if neg else 8) if abs(x) >= tiny else (4 if neg else 7)


# ---- integers --------------------------------------------------------------------------------------------------
def sext(x: int, bits: int) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def bfe(x: int, offset: int, width: int, bits: int, signed: bool) -> int:
    """The width-bit field of x at offset (x's sign shifted in when signed), sign-extended when signed; a width
    past the top takes every bit left."""
    if width == 0:
        return 0
    field = x >> offset  # x is negative for a signed type with its top bit set: an arithmetic shift
    return (sext(field, width) if signed else field & ((1 << width) - 1)) if width < bits else field


def clz(x: int, bits: int) -> int:
    return -1 if x == 0 else bits - x.bit_length()


def ctz(x: int, bits: int) -> int:
    return -1 if x == 0 else (x & -x).bit_length() - 1


def cls(x: int, bits: int) -> int:  # leading bits equal to the sign bit, after the sign; -1 when all are equal
    u = x & ((1 << bits) - 1)
    return clz(u if not u >> (bits - 1) else ~u & ((1 << bits) - 1), bits)


def brev(x: int, bits: int) -> int:
    return int(f"{x & ((1 << bits) - 1):0{bits}b}"[::-1], 2)


def perm(a: int, b: int, sel: int) -> int:
    data = ((a & 0xFFFFFFFF) << 32) | (b & 0xFFFFFFFF)  # byte 0 is b's lowest
    out = 0
    for i in range(4):
        s = (sel >> (8 * i)) & 0xFF
        if s < 8:
            byte = (data >> (8 * s)) & 0xFF
        elif s < 12:  # sign of a 16-bit half of data: bytes 1, 3, 5, 7
            byte = 0xFF if (data >> (8 * (2 * (s - 8) + 1) + 7)) & 1 else 0
        else:
            byte = 0 if s == 12 else 0xFF
        out |= byte << (8 * i)
    return out


def popcount(x: int) -> int:
    return bin(x).count("1")


def round_toward_zero(x: float, fmt: str) -> float:
    """x rounded toward zero in fmt (v_cvt_pkrtz): the nearest-even result, stepped back one ulp if it grew."""
    r = round_float(x, fmt)
    if not math.isfinite(x) or r == x:
        return r
    if abs(r) > abs(x):
        mant, emin, emax = FORMATS[fmt]
        if math.isinf(r):
            return math.copysign((2 - 2.0 ** -mant) * 2.0 ** emax, x)
        e = max(math.frexp(abs(r))[1] - 1, emin)
        step = 2.0 ** (e - mant) if abs(r) != 2.0 ** e or e == emin else 2.0 ** (e - mant - 1)
        r = math.copysign(abs(r) - step, x)
    return r


# ---- the tables: op (the mnemonic without its prefix and type suffixes) -> reference ---------------------------
# Each reference is fn(k, *sources): k.d is the destination Type, k.s the source Types, k.lane the lane, k.scc the
# wave's SCC before the instruction.
def _int_or_float(int_fn, float_fn):
    return lambda k, *xs: float_fn(*xs) if k.d.is_float else int_fn(*xs)


def _unsigned(k, x: int, i: int = 0) -> int:
    return x & ((1 << k.s[i].bits) - 1)


def _shift(k, n: int) -> int:
    return n & (k.d.bits - 1)


def _min3(fn):
    return lambda k, a, b, c: _chain(fn, a, b, c) if k.d.is_float else {min_num: min, max_num: max}[fn](a, b, c)


def _compare(test):
    """A compare: ordered tests are False on a NaN operand, the negated (n*) forms True."""
    def ref(k, a, b):
        return test(a, b)
    return ref


def _cvt(k, x):
    if k.d.is_float:
        return x
    return to_int(x, k.d.bits, k.d.kind == "i") if k.s[0].is_float else x


def _class(k, x, mask):
    return bool((mask >> class_bits(x, 2.0 ** FORMATS[k.s[0].name][1])) & 1)


def _div_fixup(k, a, b, c):
    """v_div_fixup: the quotient a of c/b, signed as c/b; the special cases of c/b (NaN, 0/0, inf/inf, x/0, inf/x,
    x/inf, 0/x) take over. Quotients that over- or underflow the format are left out (None)."""
    if math.isnan(c) or math.isnan(b):
        return NAN
    sign = -1.0 if (math.copysign(1, b) < 0) != (math.copysign(1, c) < 0) else 1.0
    if b == 0 and c == 0 or math.isinf(b) and math.isinf(c):
        return NAN
    if b == 0 or math.isinf(c):
        return sign * INF
    if math.isinf(b) or c == 0:
        return sign * 0.0
    mant, emin, emax = FORMATS[k.d.name]
    if not Fraction(2) ** emin <= abs(Fraction(c) / Fraction(b)) < Fraction(2) ** (emax + 1):
        return None
    return math.copysign(abs(a), sign)


VALU = {
    "add": _int_or_float(lambda a, b: a + b, add), "add_nc": lambda k, a, b: a + b,
    "sub": _int_or_float(lambda a, b: a - b, lambda a, b: add(a, -b)), "sub_nc": lambda k, a, b: a - b,
    "subrev": lambda k, a, b: add(b, -a), "subrev_nc": lambda k, a, b: b - a,
    "add_co": lambda k, a, b: (a + b, a + b >> 32), "sub_co": lambda k, a, b: (a - b, a < b),
    "subrev_co": lambda k, a, b: (b - a, b < a),
    "add_co_ci": lambda k, a, b, c: (a + b + c, a + b + c >> 32),
    "sub_co_ci": lambda k, a, b, c: (a - b - c, a < b + c), "subrev_co_ci": lambda k, a, b, c: (b - a - c, b < a + c),
    "mul": _int_or_float(lambda a, b: a * b, mul), "mul_lo": lambda k, a, b: a * b,
    "mul_hi": lambda k, a, b: (a * b) >> k.d.bits,
    "mad": lambda k, a, b, c: a * b + c, "fma": lambda k, a, b, c: fma(a, b, c),
    "fmac": lambda k, a, b, d: fma(a, b, d), "fmamk": lambda k, a, lit, b: fma(a, lit, b),
    "fmaak": lambda k, a, b, lit: fma(a, b, lit),
    "mad_co": lambda k, a, b, c: (a * b + c, None if k.d.kind == "i" else a * b + c >> 64),
    "min": _int_or_float(min, min_num), "max": _int_or_float(max, max_num),
    "min_num": lambda k, a, b: min_num(a, b), "max_num": lambda k, a, b: max_num(a, b),
    "min3": _min3(min_num), "max3": _min3(max_num),
    "med3": lambda k, a, b, c: med3_float(a, b, c) if k.d.is_float else sorted((a, b, c))[1],
    "and": lambda k, a, b: a & b, "or": lambda k, a, b: a | b, "xor": lambda k, a, b: a ^ b,
    "xnor": lambda k, a, b: ~(a ^ b), "not": lambda k, a: ~a, "or3": lambda k, a, b, c: a | b | c,
    "and_or": lambda k, a, b, c: (a & b) | c, "xad": lambda k, a, b, c: (a ^ b) + c,
    "add3": lambda k, a, b, c: a + b + c, "lshl_or": lambda k, a, b, c: (a << _shift(k, b)) | c,
    "lshl_add": lambda k, a, b, c: (a << _shift(k, b)) + c, "add_lshl": lambda k, a, b, c: (a + b) << _shift(k, c),
    "lshlrev": lambda k, a, b: b << (a & (k.s[-1].bits - 1)),
    "lshrrev": lambda k, a, b: _unsigned(k, b, -1) >> (a & (k.s[-1].bits - 1)),
    "ashrrev": lambda k, a, b: sext(b, k.s[-1].bits) >> (a & (k.s[-1].bits - 1)),
    "bfe": lambda k, a, b, c: bfe(a, b & 31, c & 31, 32, k.d.kind == "i"),
    "bfi": lambda k, a, b, c: (a & b) | (~a & c), "bfm": lambda k, a, b: ((1 << (a & 31)) - 1) << (b & 31),
    "alignbit": lambda k, a, b, c: (((a << 32) | b) >> (c & 31)),
    "alignbyte": lambda k, a, b, c: (((a << 32) | b) >> (8 * (c & 3))),
    "perm": lambda k, a, b, c: perm(a, b, c), "bfrev": lambda k, a: brev(a, 32),
    "bcnt": lambda k, a, b: popcount(a) + b, "cls": lambda k, a: cls(a, 32), "clz": lambda k, a: clz(a, 32),
    "ctz": lambda k, a: ctz(a, 32),
    "mbcnt_lo": lambda k, a, b: popcount(a & ((1 << min(k.lane, 32)) - 1)) + b,
    "mbcnt_hi": lambda k, a, b: popcount(a & ((1 << max(k.lane - 32, 0)) - 1)) + b,
    "mov": lambda k, a: a, "cndmask": lambda k, a, b, mask: b if mask else a,
    "cvt": _cvt, "cvt_floor": lambda k, x: to_int(math.floor(x) if math.isfinite(x) else x, 32, True),
    "cvt_nearest": lambda k, x: to_int(math.floor(x + 0.5) if math.isfinite(x) else x, 32, True),
    **{f"cvt_f32_ubyte{i}": (lambda shift: lambda k, x: float((x >> shift) & 0xFF))(8 * i) for i in range(4)},
    "cvt_pk_rtz": lambda k, a, b: to_bits(round_toward_zero(a, "f16"), Type("f16"))
    | to_bits(round_toward_zero(b, "f16"), Type("f16")) << 16,
    "pack": lambda k, a, b: a | b << 16,
    "floor": lambda k, x: x if not math.isfinite(x) else math.copysign(float(math.floor(x)), x),
    "ceil": lambda k, x: x if not math.isfinite(x) else math.copysign(float(math.ceil(x)), x),
    "trunc": lambda k, x: x if not math.isfinite(x) else math.copysign(float(math.trunc(x)), x),
    "rndne": lambda k, x: rint(x), "fract": lambda k, x: fract(x, k.d.name),
    "frexp_mant": lambda k, x: frexp_mant(x), "frexp_exp": lambda k, x: frexp_exp(x),
    "ldexp": lambda k, x, n: ldexp(x, n), "sqrt": lambda k, x: sqrt(x), "rsq": lambda k, x: rsq(x),
    "rcp": lambda k, x: rcp(x), "rcp_iflag": lambda k, x: rcp(x), "exp": lambda k, x: exp2(x),
    "log": lambda k, x: log2(x), "sin": lambda k, x: sin_rev(x), "cos": lambda k, x: cos_rev(x),
    "div_fixup": _div_fixup, "div_fmas": lambda k, a, b, c: fma(a, b, c),
    "cmp_class": _class,
    **{f"cmp_{name}": _compare(test) for name, test in {
        "f": lambda a, b: False, "t": lambda a, b: True, "lt": lambda a, b: a < b, "eq": lambda a, b: a == b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ne": lambda a, b: a != b, "ge": lambda a, b: a >= b,
        "lg": lambda a, b: a < b or a > b, "o": lambda a, b: a == a and b == b, "u": lambda a, b: a != a or b != b,
        "nge": lambda a, b: not a >= b, "nlg": lambda a, b: not (a < b or a > b), "ngt": lambda a, b: not a > b,
        "nle": lambda a, b: not a <= b, "neq": lambda a, b: not a == b, "nlt": lambda a, b: not a < b}.items()},
    "dot2": lambda k, a, b, c: _dot(k, a, b, c), "dot4": lambda k, a, b, c: _dot(k, a, b, c),
    "dot8": lambda k, a, b, c: _dot(k, a, b, c), "dot2acc": lambda k, a, b, d: _dot(k, a, b, d),
    "fma_mix": lambda k, a, b, c: fma(a, b, c), "fma_mixlo": lambda k, a, b, c: fma(a, b, c),
    "fma_mixhi": lambda k, a, b, c: fma(a, b, c),
}
VALU.update({  # gfx9's names, and its ops RDNA dropped
    "addc_co": VALU["add_co_ci"], "subb_co": VALU["sub_co_ci"], "subbrev_co": VALU["subrev_co_ci"],
    "accvgpr_read": VALU["mov"], "accvgpr_write": VALU["mov"], "accvgpr_mov": VALU["mov"],
    "cvt_flr": VALU["cvt_floor"], "cvt_rpi": VALU["cvt_nearest"], "cmp_tru": VALU["cmp_t"],
    "ffbh": lambda k, a: cls(a, 32) if k.d.kind == "i" and k.s[0].kind == "i" else clz(a, 32),
    "ffbl": VALU["ctz"], "dot2c": VALU["dot2acc"], "dot4c": VALU["dot2acc"], "dot8c": VALU["dot2acc"],
    # not fused: the product rounded to the type, then the sum (the ISA's "same result as ADD after MUL")
    "mad": lambda k, a, b, c: add(round_float(mul(a, b), k.d.name), c) if k.d.is_float else a * b + c,
    "mac": lambda k, a, b, d: add(round_float(mul(a, b), k.d.name), d),
    "madmk": lambda k, a, lit, b: add(round_float(mul(a, lit), k.d.name), b),
    "madak": lambda k, a, b, lit: add(round_float(mul(a, b), k.d.name), lit),
})
VALU.update({  # gfx9's 16-bit mads without op_sel (gfx8's forms), by whole name: v_mad_legacy_f32 is another op
    **{f"v_mad_legacy_{t}": VALU["mad"] for t in ("u16", "i16", "f16")},
    "v_fma_legacy_f16": VALU["fma"], "v_div_fixup_legacy_f16": VALU["div_fixup"],
})
# the v_cmpx forms compute what v_cmp does (into EXEC)
VALU.update({"cmpx" + op[3:]: fn for op, fn in VALU.items() if op.startswith("cmp_")})


def _dot(k, a: tuple, b: tuple, c):
    """Sum of the products of the packed elements plus c: exact for integers. For floats the guides leave the
    internal precision open, so two results are right: the exact sum rounded once, and the products added to c one
    at a time in f32."""
    pairs = list(zip(a, b, strict=True))
    if not k.d.is_float:
        return sum(x * y for x, y in pairs) + c
    if not all(math.isfinite(v) for v in (*a, *b, c)):
        return sum((x * y for x, y in pairs), start=c)
    exact = sum((Fraction(x) * Fraction(y) for x, y in pairs), start=Fraction(c))
    once = exact if exact != 0 else sum((x * y for x, y in pairs), start=c)
    acc = c
    for x, y in pairs:
        acc = round_float(add(acc, mul(x, y)), "f32")
    return OneOf({to_bits(once, k.d), to_bits(acc, k.d)})


def _scc_nonzero(fn):
    """The SALU form of an op that sets SCC when its result is not zero."""
    def ref(k, *xs):
        r = fn(k, *xs) & ((1 << k.d.bits) - 1)
        return r, r != 0
    return ref


def _signed_overflow(op):
    def ref(k, a, b, *_):
        r = op(a, b)
        return r, not -(1 << 31) <= r < (1 << 31)
    return ref


def _carry(op, with_scc: bool):
    def ref(k, a, b):
        r = op(a, b, k.scc if with_scc else 0)
        return r, not 0 <= r < (1 << 32)
    return ref


def _select(pick_first):
    def ref(k, a, b):
        first = pick_first(a, b)
        return (a if first else b), first
    return ref


SALU = {
    "add": _carry(lambda a, b, c: a + b, False), "sub": _carry(lambda a, b, c: a - b, False),
    "addc": _carry(lambda a, b, c: a + b + c, True), "subb": _carry(lambda a, b, c: a - b - c, True),
    "add_co": _carry(lambda a, b, c: a + b, False), "sub_co": _carry(lambda a, b, c: a - b, False),
    "add_co_ci": _carry(lambda a, b, c: a + b + c, True), "sub_co_ci": _carry(lambda a, b, c: a - b - c, True),
    "add_nc": lambda k, a, b: a + b, "sub_nc": lambda k, a, b: a - b,
    "mul": lambda k, a, b: mul(a, b) if k.d.is_float else a * b, "mul_hi": lambda k, a, b: (a * b) >> 32,
    "min": _select(lambda a, b: a < b), "max": _select(lambda a, b: a > b),
    "and": _scc_nonzero(VALU["and"]), "or": _scc_nonzero(VALU["or"]), "xor": _scc_nonzero(VALU["xor"]),
    "xnor": _scc_nonzero(VALU["xnor"]), "not": _scc_nonzero(VALU["not"]),
    "nand": _scc_nonzero(lambda k, a, b: ~(a & b)), "nor": _scc_nonzero(lambda k, a, b: ~(a | b)),
    "and_not1": _scc_nonzero(lambda k, a, b: a & ~b), "or_not1": _scc_nonzero(lambda k, a, b: a | ~b),
    "lshl": _scc_nonzero(lambda k, a, b: a << (b & (k.d.bits - 1))),
    "lshr": _scc_nonzero(lambda k, a, b: a >> (b & (k.d.bits - 1))),
    "ashr": _scc_nonzero(lambda k, a, b: a >> (b & (k.d.bits - 1))),
    "bfe": _scc_nonzero(lambda k, a, b: bfe(a, b & (k.d.bits - 1), (b >> 16) & 0x7F, k.d.bits, k.d.kind == "i")),
    "bfm": lambda k, a, b: ((1 << (a & (k.d.bits - 1))) - 1) << (b & (k.d.bits - 1)),
    "brev": lambda k, a: brev(a, k.d.bits), "bcnt1": _scc_nonzero(lambda k, a: popcount(a)),
    "bcnt0": _scc_nonzero(lambda k, a: k.s[0].bits - popcount(a)), "abs": _scc_nonzero(lambda k, a: abs(a)),
    **{f"lshl{n}_add": _carry((lambda s: lambda a, b, c: (a << s) + b)(n), False) for n in (1, 2, 3, 4)},
    "cselect": lambda k, a, b: a if k.scc else b, "cmov": lambda k, a, d: a if k.scc else d,
    "movk": lambda k, lit: lit, "cmovk": lambda k, lit, d: lit if k.scc else d,
    "addk": lambda k, lit, d: (d + lit, not -(1 << 31) <= d + lit < (1 << 31)),
    "addk_co": lambda k, lit, d: (d + lit, not -(1 << 31) <= d + lit < (1 << 31)),
    "mulk": lambda k, lit, d: d * lit,
    "bitset0": lambda k, a, d: d & ~(1 << (a & (k.d.bits - 1))),
    "bitset1": lambda k, a, d: d | 1 << (a & (k.d.bits - 1)),
    "bitcmp0": lambda k, a, b: not (a >> (b & (k.s[0].bits - 1))) & 1,
    "bitcmp1": lambda k, a, b: bool((a >> (b & (k.s[0].bits - 1))) & 1),
    "sext": lambda k, a: a, "cls": lambda k, a: cls(a, k.s[0].bits), "clz": lambda k, a: clz(a, k.s[0].bits),
    "ctz": lambda k, a: ctz(a, k.s[0].bits), "mov": lambda k, a: a,
    **{f"cmpk_{c}": (lambda fn: lambda k, a, lit: fn(k, a, lit))(VALU[f"cmp_{c}"])
       for c in ("eq", "lg", "gt", "ge", "lt", "le")},
    **{f"cmp_{c}": VALU[f"cmp_{c}"] for c in ("eq", "lg", "gt", "ge", "lt", "le")},
}
SALU["cmp_lg"] = SALU["cmpk_lg"] = VALU["cmp_ne"]
for _op in ("add", "sub", "add_co", "sub_co"):
    SALU[_op + ":i"] = _signed_overflow({"add": lambda a, b: a + b, "sub": lambda a, b: a - b}[_op[:3]])
for _op in ("fmac", "fmamk", "fmaak", "min_num", "max_num", "ceil", "floor", "trunc", "rndne", "cvt"):
    SALU[_op] = VALU[_op]
SALU["add:f"], SALU["sub:f"] = VALU["add"], VALU["sub"]
SALU.update({  # gfx9's names: find first one / zero from the LSB, first one (signed: bit unlike the sign) from the MSB
    "andn2": SALU["and_not1"], "orn2": SALU["or_not1"], "ff1": SALU["ctz"],
    "ff0": lambda k, a: ctz(~a & ((1 << k.s[0].bits) - 1), k.s[0].bits),
    "flbit:i": lambda k, a: cls(a, k.s[0].bits) if k.s[0].kind == "i" else clz(a, k.s[0].bits),
})


# ---- the less common integer and float ops --------------------------------------------------------------------
def minimum(a, b):  # IEEE 754-2019 minimum: NaN wins, -0 < +0
    if math.isnan(a) or math.isnan(b):
        return NAN
    return a if (a, math.copysign(1, a)) <= (b, math.copysign(1, b)) else b


def maximum(a, b):
    if math.isnan(a) or math.isnan(b):
        return NAN
    return a if (a, math.copysign(1, a)) >= (b, math.copysign(1, b)) else b


def _bytes(x: int, n: int = 4, size: int = 8) -> list[int]:
    return [(x >> (size * i)) & ((1 << size) - 1) for i in range(n)]


def _sad(a: int, b: int, size: int) -> int:
    """Sum of absolute differences of the size-bit elements of two dwords."""
    n = 32 // size
    return sum(abs(x - y) for x, y in zip(_bytes(a, n, size), _bytes(b, n, size), strict=True))


def _norm(x, bits: int, signed: bool) -> int:
    """A float in [-1, 1] (or [0, 1]) to a normalized integer: scaled, rounded to nearest even, clamped."""
    top = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    if math.isnan(x):
        return 0
    x = max(-1.0 if signed else 0.0, min(1.0, x))
    return round(Fraction(x) * top)


def _pack16(lo: int, hi: int) -> int:
    return (lo & 0xFFFF) | (hi & 0xFFFF) << 16


def _insert_byte(d: int, index: int, x: float):
    """d with byte index replaced by x converted to u8 (saturating, NaN to 0); a fraction may round either way."""
    options = {to_int(v, 8, False) for v in (x, rint(x))} if math.isfinite(x) else {to_int(x, 8, False)}
    keep = d & ~(0xFF << (8 * index)) & 0xFFFFFFFF
    return OneOf({keep | u << (8 * index) for u in options})


def _clamp(x: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, x))


def _quads(x: int, bits: int, spread: bool) -> int:
    """s_quadmask (one bit per 4-bit group) and s_wqm (the whole group) of x."""
    out = 0
    for q in range(bits // 4):
        if (x >> (4 * q)) & 0xF:
            out |= (0xF << (4 * q)) if spread else (1 << q)
    return out


VALU.update({
    "xor3": lambda k, a, b, c: a ^ b ^ c,
    "min3_num": VALU["min3"], "max3_num": VALU["max3"], "med3_num": VALU["med3"],
    "minmax_num": lambda k, a, b, c: VALU["minmax"](k, a, b, c),
    "maxmin_num": lambda k, a, b, c: VALU["maxmin"](k, a, b, c),
    "minmax": lambda k, a, b, c: VALU["max"](k, VALU["min"](k, a, b), c) if VALU["min"](k, a, b) is not None
    else None,
    "maxmin": lambda k, a, b, c: VALU["min"](k, VALU["max"](k, a, b), c) if VALU["max"](k, a, b) is not None
    else None,
    "minimum": lambda k, a, b: minimum(a, b), "maximum": lambda k, a, b: maximum(a, b),
    "minimum3": lambda k, a, b, c: minimum(minimum(a, b), c), "maximum3": lambda k, a, b, c: maximum(maximum(a, b), c),
    "minimummaximum": lambda k, a, b, c: maximum(minimum(a, b), c),
    "maximumminimum": lambda k, a, b, c: minimum(maximum(a, b), c),
    "v_sad_u8": lambda k, a, b, c: _sad(a, b, 8) + c, "v_sad_u16": lambda k, a, b, c: _sad(a, b, 16) + c,
    "v_sad_u32": lambda k, a, b, c: _sad(a, b, 32) + c, "sad_hi": lambda k, a, b, c: (_sad(a, b, 8) << 16) + c,
    "msad": lambda k, a, b, c: sum(abs(x - y) for x, y in zip(_bytes(a), _bytes(b), strict=True) if y) + c,
    "lerp": lambda k, a, b, c: sum(((x + y + (z & 1)) >> 1) << (8 * i)
                                      for i, (x, y, z) in enumerate(zip(_bytes(a), _bytes(b), _bytes(c), strict=True))),
    "cvt_pk": lambda k, a, b: _pack16(*(to_int(x, 16, k.d.kind == "i") if k.s[0].is_float else _clamp(
        x, *((-(1 << 15), (1 << 15) - 1) if k.d.kind == "i" else (0, 0xFFFF))) for x in (a, b))),
    "cvt_pk_norm": lambda k, a, b: _pack16(_norm(a, 16, k.d.kind == "i"), _norm(b, 16, k.d.kind == "i")),
    "cvt_norm": lambda k, a: _norm(a, 16, k.d.kind == "i"),
    "cvt_off": lambda k, a: Fraction(sext(a, 4), 16),
    "sat_pk": lambda k, a: _clamp(sext(a, 16), 0, 255) | _clamp(sext(a >> 16, 16), 0, 255) << 8,
    "mul_dx9_zero": lambda k, a, b: 0.0 if a == 0 or b == 0 else mul(a, b),
    "fma_dx9_zero": lambda k, a, b, c: (None if c == 0 else c) if a == 0 or b == 0 else fma(a, b, c),
    "fmac_dx9_zero": lambda k, a, b, d: (None if d == 0 else d) if a == 0 or b == 0 else fma(a, b, d),
    "dot4_i32_iu8": lambda k, a, b, c: _dot(k, a, b, c),
    "v_cvt_pk_u8_f32": lambda k, x, sel, d: _insert_byte(d, sel & 3, x),
    "dot8_i32_iu4": lambda k, a, b, c: _dot(k, a, b, c),
})
VALU.update({"s_" + op: VALU[op] for op in ("exp", "log", "rcp", "rsq", "sqrt")})
SALU.update({
    "absdiff": _scc_nonzero(lambda k, a, b: abs(sext(a - b, 32))),  # the difference wraps at 32 bits first
    "pack_ll": lambda k, a, b: _pack16(a, b), "pack_lh": lambda k, a, b: _pack16(a, b >> 16),
    "pack_hl": lambda k, a, b: _pack16(a >> 16, b), "pack_hh": lambda k, a, b: _pack16(a >> 16, b >> 16),
    "quadmask": _scc_nonzero(lambda k, a: _quads(a, k.d.bits, False)),
    "wqm": _scc_nonzero(lambda k, a: _quads(a, k.d.bits, True)),
    "bitreplicate": lambda k, a: sum(3 << (2 * i) for i in range(32) if (a >> i) & 1),
    "minimum": VALU["minimum"], "maximum": VALU["maximum"], "cvt_pk_rtz": VALU["cvt_pk_rtz"],
    "cvt_hi": lambda k, a: from_bits(a >> 16, Type("f16")),
    **{f"cmp_{c}:f": VALU[f"cmp_{c}"] for c in ("lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg", "ngt",
                                                 "nle", "neq", "nlt")},
})


def _to_8bit(x: float, name: str) -> int | None:
    """f32 to fp8/bf8 bits, nearest even; None past the largest finite value or for an fp8 infinity (the result
    then depends on the saturation mode)."""
    if math.isinf(x) and name == "fp8" or math.isfinite(x) and abs(round_float(x, name)) > EIGHT_BIT[name][2]:
        return None
    return to_bits(x, Type(name))


def _stochastic(x: float, name: str) -> OneOf | None:
    """Either neighbour of x among the fp8/bf8 values (v_cvt_sr rounds with its random bits)."""
    if not math.isfinite(x) or abs(x) > EIGHT_BIT[name][2]:
        return None if _to_8bit(x, name) is None else OneOf({_to_8bit(x, name)})
    values = [(from_bits(c, Type(name)), c) for c in range(256)]
    values = [(v, c) for v, c in values if v == v and (v != 0 or math.copysign(1, v) == math.copysign(1, x))]
    below, above = max((v, c) for v, c in values if v <= x), min((v, c) for v, c in values if v >= x)
    return OneOf({below[1], above[1]})


for _n in ("fp8", "bf8"):
    VALU[f"v_cvt_f32_{_n}"] = (lambda n: lambda k, a: from_bits(a, Type(n)))(_n)
    VALU[f"v_cvt_pk_f32_{_n}"] = (lambda n: lambda k, a: to_bits(from_bits(a, Type(n)), Type("f32"))
                                  | to_bits(from_bits(a >> 8, Type(n)), Type("f32")) << 32)(_n)
    VALU[f"v_cvt_pk_{_n}_f32"] = (lambda n: lambda k, a, b: None if None in (
        _to_8bit(a, n), _to_8bit(b, n)) else _to_8bit(a, n) | _to_8bit(b, n) << 8)(_n)
    VALU[f"v_cvt_sr_{_n}_f32"] = (lambda n: lambda k, a, noise: _stochastic(a, n))(_n)
for _a in ("fp8", "bf8"):
    for _b in ("fp8", "bf8"):
        VALU[f"v_dot4_f32_{_a}_{_b}"] = lambda k, a, b, c: _dot(k, a, b, c)


@cache
def two_over_pi(bits: int = 1201) -> int:
    """floor(2/pi * 2**bits), pi from the Gauss-Legendre iteration in decimal arithmetic (120 digits to spare)."""
    with localcontext() as ctx:
        ctx.prec = bits * 301 // 1000 + 120
        a, b, t, p = Decimal(1), 1 / Decimal(2).sqrt(), Decimal(1) / 4, Decimal(1)
        for _ in range(12):  # the digits double each round
            a, b, t, p = (a + b) / 2, (a * b).sqrt(), t - p * ((a - b) / 2) ** 2, 2 * p
        pi = (a + b) ** 2 / (4 * t)
        return int(2 / pi * (Decimal(2) ** bits))


def trig_preop(k, x: float, segment: int):
    """v_trig_preop_f64: 53 bits of 2/pi, segment * 53 bits after the point (further for an x whose exponent is
    past 1077), at their place value (times 2**128 for an exponent of 1968 and up); None past the table's end."""
    exponent = to_bits(x, Type("f64")) >> 52 & 0x7FF
    shift = (segment & 31) * 53 + max(exponent - 1077, 0)
    if shift + 53 > 1201:
        return None
    part = two_over_pi() >> (1201 - 53 - shift) & ((1 << 53) - 1)
    return Fraction(part) * Fraction(2) ** (-53 - shift + (128 if exponent >= 1968 else 0))


VALU["trig_preop"] = trig_preop


# atomics: op (the mnemonic without its prefix, _rtn and type) -> the memory's new value from its old one and the
# data operand(s)
ATOMIC = {
    "add": lambda k, old, x: VALU["add"](k, old, x), "sub": lambda k, old, x: old - x,
    "rsub": lambda k, old, x: x - old,
    "min": lambda k, old, x: x if x < old else old, "max": lambda k, old, x: x if x > old else old,  # compares
    "min_num": lambda k, old, x: min_num(old, x), "max_num": lambda k, old, x: max_num(old, x),
    "and": lambda k, old, x: old & x, "or": lambda k, old, x: old | x, "xor": lambda k, old, x: old ^ x,
    "inc": lambda k, old, x: 0 if old >= x else old + 1,
    "dec": lambda k, old, x: x if old == 0 or old > x else old - 1,
    "swap": lambda k, old, x: x, "storexchg": lambda k, old, x: x,
    "cmpswap": lambda k, old, x, cmp: x if old == cmp else old,
    "cmpstore": lambda k, old, x, cmp: x if old == cmp else old,
    "mskor": lambda k, old, mask, x: (old & ~mask) | x,
    "wrap": lambda k, old, x, y: old - x if old >= x else old + y,
    "cond_sub": lambda k, old, x: old - x if old >= x else old,
    "sub_clamp": lambda k, old, x: old - x if old >= x else 0,
}
