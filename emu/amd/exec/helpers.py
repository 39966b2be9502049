"""The functions semantics.py's expressions call (bit counting, bit-field extract, med3, class tests, ...),
lane-wise over numpy arrays of the operation's type."""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from usergpu.emu.amd.exec.fp import fract, frexp_exp, frexp_mant, to_int
from usergpu.emu.numerics import FP8, f32_to_fp8, fma32, fma64, fp8_to_f32, popcount, sat, sext24

DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16, "i32": np.int32,
          "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "bf16": np.uint16}


def clz(a: np.ndarray) -> np.ndarray:
    """Leading zeros, -1 (all ones) for 0."""
    bits = a.dtype.itemsize * 8
    u = a.astype(np.uint64)
    n = np.full(u.shape, -1, np.int64)
    for b in range(bits - 1, -1, -1):
        hit = (n < 0) & ((u >> np.uint64(b)) & np.uint64(1)).astype(bool)
        n[hit] = bits - 1 - b
    return n.astype(np.int32)


def ctz(a: np.ndarray) -> np.ndarray:
    """Trailing zeros, -1 for 0."""
    u = a.astype(np.uint64)
    low = u & (~u + np.uint64(1))
    with np.errstate(all="ignore"):
        n = np.where(u == 0, -1, np.log2(low.astype(np.float64)).astype(np.int64))
    return n.astype(np.int32)


def cls(a: np.ndarray) -> np.ndarray:
    """Leading bits equal to the sign bit, after it; -1 for 0 and -1 (any width)."""
    unsigned = a.view(np.uint64 if a.dtype.itemsize == 8 else np.uint32)
    return clz(np.where(unsigned >> unsigned.dtype.type(a.dtype.itemsize * 8 - 1), ~unsigned, unsigned))


def brev(a: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    u = a.astype(np.uint64)
    r = np.zeros_like(u)
    for b in range(bits):
        r |= ((u >> np.uint64(b)) & np.uint64(1)) << np.uint64(bits - 1 - b)
    return r.astype(a.dtype)


def mul_hi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    wide = np.int64 if a.dtype == np.int32 else np.uint64
    return ((a.astype(wide) * b.astype(wide)) >> 32).astype(a.dtype)


def bfe_u(a: np.ndarray, off: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The width-bit field of a at off (offset modulo the type's bits); a width past the top takes every bit left."""
    bits = a.dtype.itemsize * 8
    u = a.astype(np.uint64) >> (np.asarray(off).astype(np.uint64) & np.uint64(bits - 1))
    w = np.asarray(width).astype(np.uint64)
    mask = np.where(w >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << np.minimum(w, np.uint64(63))) - 1)
    return (u & mask).astype(a.dtype)


def bfe_i(a: np.ndarray, off: np.ndarray, width: np.ndarray) -> np.ndarray:
    """The same field of a signed value: the sign shifts in (arithmetic shift), then the field's top bit extends."""
    bits = a.dtype.itemsize * 8
    field = a.astype(np.int64) >> (np.asarray(off).astype(np.int64) & (bits - 1))
    w = np.asarray(width).astype(np.int64)
    up = 64 - np.clip(w, 1, 64)
    extended = (field << up) >> up
    return np.where(w == 0, 0, np.where(w >= bits, field, extended)).astype(a.dtype)


def alignbit(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    wide = (a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)
    return (wide >> (np.asarray(c).astype(np.uint64) & np.uint64(31))).astype(np.uint32)


def perm(a: np.ndarray, b: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """v_perm_b32: each result byte picked from the 8 bytes {a, b} (b is bytes 0-3) or a constant by selector."""
    a, b, sel = np.broadcast_arrays(a.astype(np.uint32), b.astype(np.uint32), sel.astype(np.uint32))
    src = (a.astype(np.uint64) << np.uint64(32)) | b.astype(np.uint64)
    out = np.zeros(a.shape, np.uint32)
    for i in range(4):
        s = (sel >> (8 * i)) & 0xFF
        byte = ((src >> (8 * np.minimum(s, 7)).astype(np.uint64)) & np.uint64(0xFF)).astype(np.uint32)
        for code, k in ((8, 1), (9, 3), (10, 5), (11, 7)):  # the sign of byte k, repeated
            sign = np.where((src >> np.uint64(8 * k + 7)) & np.uint64(1), 0xFF, 0).astype(np.uint32)
            byte = np.where(s == code, sign, byte)
        byte = np.where(s == 12, 0, byte)
        byte = np.where(s > 12, 0xFF, byte)
        out |= byte << np.uint32(8 * i)
    return out


def fmin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE-754-2019 minimumNumber: a NaN operand gives the other (both NaN: the first, quieted), -0 below +0.
    (Not np.fmin: which zero and which NaN it returns depends on the array's length, vector loop or not.)"""
    return _number(a, b, (a < b) | ((a == b) & np.signbit(a)))


def fmax(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE-754-2019 maximumNumber: as fmin, +0 above -0."""
    return _number(a, b, (a > b) | ((a == b) & ~np.signbit(a)))


def _number(a: np.ndarray, b: np.ndarray, pick_a: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f":
        return np.where(pick_a, a, b)
    r = np.where(np.isnan(b), a, np.where(np.isnan(a) | ~pick_a, b, a))
    return np.where(np.isnan(a) & np.isnan(b), a + a.dtype.type(0), r).astype(np.result_type(a, b))


def med3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The middle value; floats: with a NaN among them, the least of the others (the ISA's v_min3)."""
    if a.dtype.kind != "f":
        return np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))
    mid = fmax(fmin(a, b), fmin(fmax(a, b), c))
    return np.where(np.isnan(a) | np.isnan(b) | np.isnan(c), fmin(fmin(a, b), c), mid)


def fclass(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """v_cmp_class: whether a is in one of the classes mask selects (bit 0 sNaN, 1 qNaN, 2 -inf, 3 -normal,
    4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf)."""
    m = np.asarray(mask).astype(np.uint32)
    neg = np.signbit(a)
    fin = np.isfinite(a)
    tiny = np.finfo(a.dtype).tiny
    den = fin & (a != 0) & (np.abs(a) < tiny)
    norm = fin & (np.abs(a) >= tiny)
    bits = a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])
    quiet_bit = {2: 0x200, 4: 0x400000, 8: 0x8000000000000}[a.dtype.itemsize]
    qnan = np.isnan(a) & ((bits & quiet_bit) != 0)
    snan = np.isnan(a) & ~qnan
    classes = [snan, qnan, np.isneginf(a), norm & neg, den & neg, (a == 0) & neg, (a == 0) & ~neg, den & ~neg,
               norm & ~neg, np.isposinf(a)]
    out = np.zeros(np.broadcast(a, m).shape, bool)
    for i, c in enumerate(classes):
        out |= c & ((m >> i) & 1).astype(bool)
    return out


def div_fixup(q: np.ndarray, den: np.ndarray, num: np.ndarray) -> np.ndarray:
    """v_div_fixup: the quotient estimate q of num / den, given the quotient's sign; the special cases of num / den
    (a NaN, 0/0, inf/inf, x/0, inf/x, x/inf, 0/x, overflow) as IEEE division gives them."""
    with np.errstate(all="ignore"):
        exact = (num.astype(np.float64) / den).astype(q.dtype)
    special = np.isnan(num) | np.isnan(den) | (den == 0) | (num == 0) | np.isinf(num) | np.isinf(den)
    special |= np.isinf(exact)  # the quotient overflows: ±inf
    signed = np.where(np.signbit(den) ^ np.signbit(num), -np.abs(q), np.abs(q))
    return np.where(special, exact, signed).astype(q.dtype)


def trig(fn, a: np.ndarray, outside: float) -> np.ndarray:
    """v_sin / v_cos: the angle in revolutions, reduced exactly (in double) before the function; the valid domain
    is [-256, 256] revolutions, outside it the result is a constant (0 for sin, 1 for cos)."""
    with np.errstate(all="ignore"):
        x = a.astype(np.float64)
        r = fn(2 * np.pi * np.fmod(x, 1.0))
        return np.where(np.isfinite(x) & (np.abs(x) > 256), outside, r).astype(a.dtype)


def pkrtz(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    lo = _f16_rtz(a)
    hi = _f16_rtz(b)
    return (lo.astype(np.uint32) | (hi.astype(np.uint32) << 16)).astype(np.uint32)


def _f16_rtz(x: np.ndarray) -> np.ndarray:
    h = x.astype(np.float16)
    over = np.abs(h.astype(np.float32)) > np.abs(x)  # rounded away from zero: step back toward it
    toward = np.nextafter(h, np.float16(0)).astype(np.float16)
    h = np.where(over & np.isfinite(x), toward, h)
    return h.view(np.uint16)


def pack16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.view(np.uint16).astype(np.uint32) | (b.view(np.uint16).astype(np.uint32) << 16)).astype(np.uint32)


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Floats to bf16 bits (uint16), rounding to nearest even; NaN stays a (quiet) NaN."""
    bits = np.asarray(x).astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    nan = np.isnan(np.asarray(x))
    return np.where(nan, (bits >> np.uint64(16)) | np.uint64(0x40), rounded).astype(np.uint16)


ARITHMETIC = (np.add, np.subtract, np.multiply, np.true_divide)


class Half(np.ndarray):
    """Half floats whose + - * / compute in f32 and round to half after each operation. The results are numpy's
    half loops' (f32's 24 bits are more than 2 x 11 + 2, so rounding twice is exact), but of two NaN operands the
    first one's is the result, as in f32's and f64's loops and the C backend; numpy's half loops pick by their own
    rule, which depends on the loop."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [x.view(np.ndarray) if isinstance(x, Half) else x for x in inputs]
        typed = [x.dtype for x in plain if isinstance(x, np.ndarray | np.generic)]
        if method == "__call__" and ufunc in ARITHMETIC and not kwargs and all(t == np.float16 for t in typed):
            wide = [x.astype(np.float32) if isinstance(x, np.ndarray | np.generic) else x for x in plain]
            return ufunc(*wide).astype(np.float16).view(Half)
        out = getattr(ufunc, method)(*plain, **kwargs)
        return out.view(Half) if isinstance(out, np.ndarray) and out.dtype == np.float16 else out


def halves(env: dict) -> dict:
    """An expression's values with the half floats among them as Half."""
    return {n: v.view(Half) if isinstance(v, np.ndarray) and v.dtype == np.float16 else v for n, v in env.items()}


def pk_add16(a: np.ndarray, b: np.ndarray, kind: str) -> np.ndarray:
    """The packed-16-bit atomic add: each half of the dwords a and b added as f16 (or bf16: in f32, rounded to
    nearest even), into the dword's half."""
    halves = []
    for shift in (0, 16):
        x, y = ((v.astype(np.uint32) >> np.uint32(shift)) & np.uint32(0xFFFF) for v in (a, b))
        if kind == "f16":
            s = (x.astype(np.uint16).view(np.float16) + y.astype(np.uint16).view(np.float16)).view(np.uint16)
        else:
            s = to_bf16((x << np.uint32(16)).view(np.float32) + (y << np.uint32(16)).view(np.float32))
        halves.append(s.astype(np.uint32) << np.uint32(shift))
    return (halves[0] | halves[1]).astype(a.dtype)


# float dtype -> (its bits' dtype, the quiet bit, the host's default NaN: what an invalid operation such as inf x 0
# gives on x86)
NAN_BITS = {np.dtype(np.float16): (np.uint16, 0x200, 0xFE00), np.dtype(np.float32): (np.uint32, 0x400000, 0xFFC00000),
            np.dtype(np.float64): (np.uint64, 1 << 51, 0xFFF8000000000000)}


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    a, b, c = (np.asarray(x) for x in (a, b, c))
    if a.dtype == np.float64:
        r = fma64(a, b, c)
    elif a.dtype == np.float32:
        r = fma32(a, b, c)
    else:
        r = (a.astype(np.float64) * b + c).astype(a.dtype)  # f16: the double result rounds once to half
    return _fma_nan(a, b, c, np.asarray(r))


def _fma_nan(a: np.ndarray, b: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """fma's NaN, one rule whatever order numpy's vector loops take their operands in (they differ): a's or b's
    quieted, else the product's own (inf x 0), else c's quieted."""
    if r.dtype not in NAN_BITS or not np.isnan(r).any():
        return r
    bits, quiet, default = NAN_BITS[r.dtype]

    def quieted(x: np.ndarray) -> np.ndarray:
        return (x.astype(r.dtype).view(bits) | bits(quiet)).view(r.dtype)
    invalid = (np.isinf(a) & (b == 0)) | ((a == 0) & np.isinf(b))
    out = np.where(np.isnan(c), quieted(c), r)
    out = np.where(invalid, np.asarray(default, bits).view(r.dtype), out)
    out = np.where(np.isnan(b), quieted(b), out)
    return np.where(np.isnan(a), quieted(a), out).astype(r.dtype)


def unpack(dwords: np.ndarray, kind: str) -> np.ndarray:
    """The packed elements of dwords (last axis), low first: f16, bf16, fp8, bf8 (as float64), i8, u8, i4, u4 (as
    int64).
    Shape (..., n) -> (..., n * elements per dword)."""
    bits = 16 if kind in ("f16", "bf16") else 8 if kind in FP8 else int(kind[1:])
    shifts = np.arange(32 // bits, dtype=np.uint32) * np.uint32(bits)
    raw = (dwords.astype(np.uint32)[..., None] >> shifts) & np.uint32((1 << bits) - 1)
    raw = raw.reshape(*dwords.shape[:-1], -1)
    if kind == "f16":
        return raw.astype(np.uint16).view(np.float16).astype(np.float64)
    if kind == "bf16":
        return (raw << np.uint32(16)).view(np.float32).astype(np.float64)
    if kind in FP8:
        return fp8_to_f32(raw, kind).astype(np.float64)
    vals = raw.astype(np.int64)
    return np.where(vals >> (bits - 1), vals - (1 << bits), vals) if kind[0] == "i" else vals


def minimum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE-754-2019 minimum: a NaN (quieted) if either is, and -0 below +0."""
    r = np.where((a == 0) & (b == 0), np.where(np.signbit(a), a, b), np.minimum(a, b))
    return np.where(np.isnan(r), r + r.dtype.type(0), r).astype(a.dtype)


def maximum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE-754-2019 maximum: a NaN (quieted) if either is, and +0 above -0."""
    r = np.where((a == 0) & (b == 0), np.where(np.signbit(a), b, a), np.maximum(a, b))
    return np.where(np.isnan(r), r + r.dtype.type(0), r).astype(a.dtype)


def _fields(a: np.ndarray, bits: int, count: int) -> list[np.ndarray]:
    """The count bits-wide fields of a, low first, as int64."""
    u = a.astype(np.uint64)
    return [((u >> np.uint64(bits * i)) & np.uint64((1 << bits) - 1)).astype(np.int64) for i in range(count)]


def quadmask(a: np.ndarray) -> np.ndarray:
    """s_quadmask: bit i set where any of bits 4i..4i+3 is."""
    n = a.dtype.itemsize * 2
    return sum(((q != 0).astype(np.uint64) << np.uint64(i)) for i, q in enumerate(_fields(a, 4, n))).astype(a.dtype)


def wqm(a: np.ndarray) -> np.ndarray:
    """s_wqm: every 4-bit group with a bit set becomes all ones."""
    n = a.dtype.itemsize * 2
    return sum(((q != 0).astype(np.uint64) * np.uint64(0xF << 4 * i)) for i, q in enumerate(_fields(a, 4, n))).astype(
        a.dtype)


def bitreplicate(a: np.ndarray) -> np.ndarray:
    """s_bitreplicate_b64_b32: bit i of a into bits 2i and 2i + 1."""
    return sum((b.astype(np.uint64) * np.uint64(3 << 2 * i)) for i, b in enumerate(_fields(a, 1, 32))).astype(np.uint64)


def sad(a: np.ndarray, b: np.ndarray, bits: int, masked: bool = False) -> np.ndarray:
    """Sum of the absolute differences of the bits-wide fields of a and b (v_msad: where b's field is not 0)."""
    n = 32 // bits
    return sum(np.where(masked & (y == 0), 0, np.abs(x - y))
               for x, y in zip(_fields(a, bits, n), _fields(b, bits, n), strict=True)).astype(np.uint32)


def lerp_u8(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """v_lerp_u8: each byte the average of a's and b's, rounded up where c's byte is odd."""
    parts = zip(_fields(a, 8, 4), _fields(b, 8, 4), _fields(c, 8, 4), strict=True)
    return sum(((x + y + (z & 1)) >> 1) << (8 * i) for i, (x, y, z) in enumerate(parts)).astype(np.uint32)


def norm(x: np.ndarray, dtype: type) -> np.ndarray:
    """Float to a signed (-1..1 to +-32767) or unsigned (0..1 to 0..65535) normalized 16-bit integer; NaN is 0."""
    info = np.iinfo(dtype)
    x = np.nan_to_num(x.astype(np.float32), nan=0.0)
    return np.rint(np.clip(x, -1 if info.min else 0, 1) * np.float32(info.max)).astype(dtype)


@cache
def _two_over_pi() -> int:
    """floor(2 / pi * 2**1201), from Machin's formula in integer arithmetic (64 guard bits)."""
    bits = 1201 + 64
    one = 1 << bits

    def atan_inv(n: int) -> int:
        total, term, k = 0, one // n, 1
        while term:
            total += term // k if k % 4 == 1 else -(term // k)
            term //= n * n
            k += 2
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    return (2 << (1201 + bits)) // pi


def trig_preop(a: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """v_trig_preop_f64: 53 bits of 2/pi from bit 53 * seg (further for large a, whose exponent past 1077 adds
    to the shift), scaled to their place (and by 2**128 for an exponent of 1968 and up)."""
    exp = ((a.view(np.uint64) >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    shift = (np.asarray(seg).astype(np.int64) & 31) * 53 + np.maximum(exp - 1077, 0)
    table = _two_over_pi()
    out = np.empty(np.broadcast(a, shift).shape, np.float64)
    for idx, s in np.ndenumerate(np.broadcast_to(shift, out.shape)):
        s = int(s)
        part = (table >> (1201 - 53 - s) if s <= 1148 else table << (s - 1148)) & ((1 << 53) - 1)
        scale = -53 - s + (128 if np.broadcast_to(exp, out.shape)[idx] >= 1968 else 0)
        out[idx] = math.ldexp(float(part), scale)
    return out


def mbcnt(mask: np.ndarray, first: int, lanes: int) -> np.ndarray:
    """v_mbcnt_lo/hi: the set bits of mask below this lane's position, counting lanes first..first + 31."""
    below = np.clip(np.arange(lanes) - first, 0, 32).astype(np.uint64)
    keep = np.where(below >= 32, np.uint64(0xFFFFFFFF), (np.uint64(1) << below) - np.uint64(1))
    return popcount(mask.astype(np.uint64) & keep).astype(np.uint32)


NAMESPACE = {"np": np, "fma": fma, "to_int": to_int, "frexp_mant": frexp_mant, "frexp_exp": frexp_exp,
             "fract": fract, "popcount": popcount, "clz": clz, "ctz": ctz, "cls": cls, "brev": brev,
             "mul_hi": mul_hi, "bfe_u": bfe_u, "bfe_i": bfe_i, "sext24": sext24, "alignbit": alignbit, "perm": perm,
             "med3": med3, "fmin": fmin, "fmax": fmax,
             "fclass": fclass, "div_fixup": div_fixup, "pkrtz": pkrtz, "pack16": pack16,
             "mbcnt": mbcnt, "minimum": minimum, "maximum": maximum, "quadmask": quadmask, "wqm": wqm,
             "bitreplicate": bitreplicate, "sad": sad, "lerp_u8": lerp_u8, "norm": norm, "sat": sat,
             "fp8_to_f32": fp8_to_f32, "trig": trig, "pk_add16": pk_add16, "f32_to_fp8": f32_to_fp8,
             "trig_preop": trig_preop, **DTYPES}
