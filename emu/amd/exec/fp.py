"""Floating-point helpers with the hardware's rounding where numpy has none: fused multiply-add (one rounding),
conversions that saturate and map NaN to 0, and the bit views the executor moves values through."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = a * 134217729.0  # 2^27 + 1: Veltkamp's split of a double into two 26-bit halves
    hi = t - (t - a)
    return hi, a - hi


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c for doubles with one rounding: the exact product and sum as error-free pairs, the tail rounded to
    odd so the final rounding cannot round twice (Boldo and Melquiond); lanes where the product's error term
    underflows, the split overflows, or the result is tiny, zero or past the largest double are done exactly with
    integers instead."""
    a, b, c = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c)))
    with np.errstate(all="ignore"):
        p, e = _two_prod(a, b)
        s, t = _two_sum(p, c)
        u, v = _two_sum(t, e)
        even = (u.view(np.uint64) & np.uint64(1)) == 0
        u = np.where((v != 0) & even, np.nextafter(u, np.where(v > 0, np.inf, -np.inf)), u)
        r = s + u
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        # an infinite or NaN input: IEEE's rules, as the plain arithmetic has them, but the exact product of finite
        # a and b never overflows, so an infinite c is the result
        r = np.where(finite, r, np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, a * b + c))
        huge = (np.abs(a) > 2.0**995) | (np.abs(b) > 2.0**995) | ~np.isfinite(e) | ~np.isfinite(r)  # overflows
        exact = finite & ((np.abs(p) < 2.0**-960) & (p != 0) | (np.abs(r) < 2.0**-960) | huge)
    for i in zip(*np.nonzero(exact), strict=True):
        r[i] = _fma_exact(float(a[i]), float(b[i]), float(c[i]))
    return r


def _fma_exact(a: float, b: float, c: float) -> float:
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        return a * b + c  # an exact zero takes IEEE's sign rules, which the double arithmetic follows
    try:
        return exact.numerator / exact.denominator  # integer division rounds correctly, subnormals included
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c for floats with one rounding: the product is exact in double; the sum's error term breaks the
    ties that rounding the double sum to float would get wrong."""
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        s, err = _two_sum(p, c.astype(np.float64))
        bits = s.view(np.uint64)
        tie = (bits & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)  # exactly halfway between two floats
        nudge = np.where(err > 0, 1, -1) * np.where(s >= 0, 1, -1)
        fixed = (bits.astype(np.int64) + np.where(tie & (err != 0), nudge, 0)).astype(np.uint64).view(np.float64)
        return fixed.astype(np.float32)


def to_int(x: np.ndarray, dtype: type) -> np.ndarray:
    """Float to integer toward zero, saturating, NaN to 0 (v_cvt_i32_f32 and kin)."""
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        t = np.trunc(np.nan_to_num(x.astype(np.float64), nan=0.0))
        return np.clip(t, info.min, info.max).astype(dtype)


def frexp_mant(x: np.ndarray) -> np.ndarray:
    m, _ = np.frexp(x)
    return np.where(np.isfinite(x), m, x).astype(x.dtype)


def frexp_exp(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x)
    return np.where(np.isfinite(x), e, 0).astype(np.int32)


def fract(x: np.ndarray) -> np.ndarray:
    """x - floor(x), below 1.0 (the largest float below 1 where rounding would reach it), NaN/inf pass."""
    with np.errstate(all="ignore"):
        f = x - np.floor(x)
        below = np.nextafter(np.ones_like(x), np.zeros_like(x))
        return np.where(np.isinf(x), np.nan, np.minimum(f, below)).astype(x.dtype)


# v_div_scale / v_div_fmas: (exponent gap meaning N/D is near the largest float, numerator exponent too small,
# scale power) per float width; exponents are the biased fields
DIV_SCALE = {32: (96, 23, 64), 64: (768, 53, 128)}


def _exponent(x: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    mant = 23 if bits == 32 else 52
    return (x.view(np.uint32 if bits == 32 else np.uint64).astype(np.int64) >> mant) & (0xFF if bits == 32 else 0x7FF)


def _denormal(x: np.ndarray) -> np.ndarray:
    return (x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)


def div_scale(s0: np.ndarray, den: np.ndarray, num: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """v_div_scale: s0 (the numerator or the denominator of num / den) scaled so that the division sequence
    neither overflows nor loses precision in a denormal, and the flag (VCC) saying the quotient comes out scaled
    and v_div_fmas must scale it back. The first rule that applies wins."""
    gap, tiny_exp, power = DIV_SCALE[s0.dtype.itemsize * 8]
    with np.errstate(all="ignore"):
        e_den, e_num = _exponent(den), _exponent(num)
        rcp_denormal = _denormal((1 / den).astype(den.dtype))
        quotient_denormal = _denormal((num / den).astype(den.dtype))
        up, down = np.ldexp(s0, power).astype(s0.dtype), np.ldexp(s0, -power).astype(s0.dtype)
        rules = [  # (applies, result, flag)
            ((num == 0) | (den == 0), np.full_like(s0, np.nan), False),
            (e_num - e_den >= gap, np.where(s0 == den, up, s0), True),  # N/D near the largest float
            (_denormal(den), up, False),
            (rcp_denormal & quotient_denormal, np.where(s0 == den, down, s0), True),
            (rcp_denormal, down, False),
            (quotient_denormal, np.where(s0 == num, up, s0), True),
            (e_num <= tiny_exp, up, False),  # a tiny numerator
        ]
    out, flag, done = s0.copy(), np.zeros(s0.shape, bool), np.zeros(s0.shape, bool)
    for applies, result, sets in rules:
        now = applies & ~done
        out = np.where(now, result, out)
        flag |= now & sets
        done |= now
    return out, flag


def div_fmas(a: np.ndarray, b: np.ndarray, c: np.ndarray, vcc: np.ndarray) -> np.ndarray:
    """v_div_fmas: a * b + c, scaled back where v_div_scale set VCC: up when the quotient estimate c is large (the
    denominator was scaled up), down when it is small (the numerator was)."""
    power = DIV_SCALE[a.dtype.itemsize * 8][2]
    bias = 127 if a.dtype == np.float32 else 1023
    r = fma32(a, b, c) if a.dtype == np.float32 else fma64(a, b, c)
    with np.errstate(all="ignore"):
        scaled = np.ldexp(r, np.where(_exponent(c) > bias, power, -power)).astype(r.dtype)
    return np.where(vcc, scaled, r)
