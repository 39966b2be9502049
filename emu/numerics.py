"""Lane arithmetic both ISA emulators share, over numpy arrays: fused multiply-add with one rounding (through
error-free transforms where numpy has none), integer saturation, population count, sign extension and the 8-bit
float formats (fp8 E4M3, bf8 E5M2)."""

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


def popcount(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.uint64)
    return np.bitwise_count(a).astype(np.uint32) if hasattr(np, "bitwise_count") else np.vectorize(
        lambda x: bin(int(x)).count("1"), otypes=[np.uint32])(a)


def sext24(a: np.ndarray) -> np.ndarray:
    x = (a.astype(np.int64) & 0xFFFFFF)
    return np.where(x & 0x800000, x - 0x1000000, x).astype(np.int32)


def sat(a: np.ndarray, dtype: type) -> np.ndarray:
    """Integers saturated to dtype's range."""
    info = np.iinfo(dtype)
    return np.clip(a.astype(np.int64), info.min, info.max).astype(dtype)


# gfx12's 8-bit floats: (exponent bits, mantissa bits); fp8 is E4M3 (no infinity, S.1111.111 NaN), bf8 E5M2
FP8 = {"fp8": (4, 3), "bf8": (5, 2)}


def fp8_to_f32(a: np.ndarray, kind: str) -> np.ndarray:
    """The low byte of each value as an fp8 / bf8 number, in f32."""
    e_bits, m_bits = FP8[kind]
    u = a.astype(np.int64) & 0xFF
    e, m, neg = (u >> m_bits) & ((1 << e_bits) - 1), u & ((1 << m_bits) - 1), (u >> 7) != 0
    bias = (1 << (e_bits - 1)) - 1
    mag = np.where(e == 0, m * 2.0 ** (1 - bias - m_bits), (1 + m / 2.0**m_bits) * np.exp2(e - bias))
    top = e == (1 << e_bits) - 1
    if kind == "fp8":
        mag = np.where(top & (m == (1 << m_bits) - 1), np.nan, mag)
    else:
        mag = np.where(top, np.where(m == 0, np.inf, np.nan), mag)
    return np.where(neg, -mag, mag).astype(np.float32)


def f32_to_fp8(x: np.ndarray, kind: str, noise: np.ndarray | None = None) -> np.ndarray:
    """f32 to fp8 / bf8 bits (uint32), rounding to nearest even, or stochastically with 32 random noise bits;
    past the largest finite value: bf8 infinity, fp8 NaN; NaN stays NaN."""
    e_bits, m_bits = FP8[kind]
    bias = (1 << (e_bits - 1)) - 1
    x = x.astype(np.float64)
    ax = np.nan_to_num(np.abs(x), nan=0.0, posinf=0.0)
    exp = np.maximum(np.floor(np.log2(np.where(ax > 0, ax, 1.0))), 1 - bias)
    step = np.exp2(exp - m_bits)
    q = ax / step
    q = np.rint(q) if noise is None else np.floor(q + (noise.astype(np.float64) / 2.0**32))
    mag = q * step
    largest = (2 - 2.0 ** (1 - m_bits)) * 2.0 ** (bias + 1) if kind == "fp8" else (2 - 2.0**-m_bits) * 2.0**bias
    e = np.maximum(np.floor(np.log2(np.where(mag > 0, mag, 1.0))), 1 - bias)
    normal = mag >= 2.0 ** (1 - bias)
    code = np.where(normal, (e + bias) * (1 << m_bits) + np.rint(mag / np.exp2(e - m_bits)) - (1 << m_bits),
                    np.rint(mag / 2.0 ** (1 - bias - m_bits))).astype(np.int64)
    special = 0x7F if kind == "fp8" else 0x7C  # fp8: NaN; bf8: infinity
    code = np.where((mag > largest) | np.isinf(x), special, code)
    code = np.where(np.isnan(x), 0x7F if kind == "fp8" else 0x7E, code)
    return (code | (np.signbit(x).astype(np.int64) << 7)).astype(np.uint32)
