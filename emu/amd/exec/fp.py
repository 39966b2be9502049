"""Floating-point helpers with the hardware's rounding where numpy has none: fused multiply-add (one rounding),
conversions that saturate and map NaN to 0, and the bit views the executor moves values through."""

from __future__ import annotations

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
    """a * b + c for doubles, from error-free transformations (exact product and sum, one final rounding of
    their tail: correct except in rare double-rounding ties)."""
    a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
    with np.errstate(all="ignore"):
        p, e = _two_prod(a, b)
        s, t = _two_sum(p, c)
        r = s + (t + e)
        plain = a * b + c
        return np.where(np.isfinite(r) & np.isfinite(p), r, plain)


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
