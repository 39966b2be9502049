"""AMD's floating-point helpers where numpy has none: conversions that saturate and map NaN to 0, frexp and fract as
the VALU gives them, v_div_scale / v_div_fmas; the fused multiply-add both emulators share is emu/numerics.py's."""

from __future__ import annotations

import numpy as np

from usergpu.emu.numerics import fma32, fma64


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
