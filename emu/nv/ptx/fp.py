"""PTX's floating-point modifiers over numpy: the four IEEE rounding modes of .rn/.rz/.rm/.rp (numpy rounds to
nearest only), flush-to-zero (.ftz), saturation (.sat), and NaN handling as NVIDIA documents it.

A directed rounding is the nearest result moved one step where the exact result lies on the other side of it:
each operation supplies the sign of (exact - nearest), from error-free transformations (two_sum, two_prod, an
fma residual) done in a wider or the same precision.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from usergpu.emu.amd.exec.fp import _two_prod, _two_sum, fma32, fma64

CANONICAL_NAN = {np.dtype(np.float32): 0x7FFFFFFF, np.dtype(np.float64): 0x7FFFFFFFFFFFFFFF,
                 np.dtype(np.float16): 0x7FFF}  # what PTX's arithmetic gives for a NaN result


def directed(r: np.ndarray, residual: np.ndarray, mode: str) -> np.ndarray:
    """r (the nearest result) rounded toward zero (rz), -inf (rm) or +inf (rp) given sign(exact - r)."""
    if mode in ("rn", "rni", "rna"):
        return r
    with np.errstate(invalid="ignore"):
        if mode in ("rz", "rzi"):
            step = ((r > 0) & (residual < 0)) | ((r < 0) & (residual > 0))
            target = np.zeros_like(r)
        elif mode in ("rm", "rmi"):
            step, target = residual < 0, np.full_like(r, -np.inf)
        else:
            step, target = residual > 0, np.full_like(r, np.inf)
        # an exact zero result of a directed rounding keeps IEEE's sign rule (x - x is -0 only toward -inf)
        return np.where(step, np.nextafter(r, target), r).astype(r.dtype)


def _wide(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def add(a: np.ndarray, b: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            s, e = _two_sum(_wide(a), _wide(b))
            return directed(s, e, mode)
        s, e = _two_sum(_wide(a), _wide(b))  # f32/f16 operands: the double sum and its error are exact
        r = s.astype(dtype)
        return directed(r, (s - r.astype(np.float64)) + e, mode)


def mul(a: np.ndarray, b: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            p, e = _two_prod(_wide(a), _wide(b))
            return directed(p, np.where(np.isfinite(p), e, 0.0), mode)
        p = _wide(a) * _wide(b)  # exact for f32 and f16 operands
        r = p.astype(dtype)
        return directed(r, p - r.astype(np.float64), mode)


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            r = fma64(a, b, c)
            if mode == "rn":
                return r
            return directed(r, _fma_residual(a, b, c, r), mode)
        if dtype == np.float32:
            r = fma32(a, b, c)
        else:
            r = (_wide(a) * _wide(b) + _wide(c)).astype(dtype)  # f16: exact in double, one rounding
        if mode == "rn":
            return r
        p = _wide(a) * _wide(b)
        s, e = _two_sum(p, _wide(c))
        return directed(r, (s - r.astype(np.float64)) + e, mode)


def _fma_residual(a, b, c, r) -> np.ndarray:
    """sign(a * b + c - r) for doubles, exactly (lane by lane: directed-rounding f64 fma is rare)."""
    out = np.zeros(np.shape(r))
    a, b, c, r = np.broadcast_arrays(*(np.asarray(x, np.float64) for x in (a, b, c, r)))
    for i in np.ndindex(r.shape):
        vals = (a[i], b[i], c[i], r[i])
        if all(np.isfinite(v) for v in vals):
            out[i] = float(np.sign(Fraction(vals[0]) * Fraction(vals[1]) + Fraction(vals[2]) - Fraction(vals[3])))
    return out


def div(a: np.ndarray, b: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            q = _wide(a) / _wide(b)
            return directed(q, np.where(np.isfinite(q) & (q != 0), fma64(-q, b, a) * np.sign(b), 0.0), mode)
        q = (_wide(a) / _wide(b)).astype(dtype)  # the double quotient rounds correctly to float (53 > 2*24+2)
        res = (_wide(a) - q.astype(np.float64) * _wide(b)) * np.sign(_wide(b))
        return directed(q, np.where(np.isfinite(q), res, 0.0), mode)


def sqrt(a: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        r = np.sqrt(np.asarray(a, dtype))
        if mode == "rn":
            return r
        if dtype == np.float64:
            res = fma64(-r, r, a)
        else:
            res = _wide(a) - r.astype(np.float64) ** 2
        return directed(r, np.where(np.isfinite(r), res, 0.0), mode)


def rcp(a: np.ndarray, mode: str, dtype) -> np.ndarray:
    return div(np.ones_like(np.asarray(a, dtype)), a, mode, dtype)


def convert(x: np.ndarray, mode: str, dtype) -> np.ndarray:
    """A float (any width) to the float dtype, rounded by mode."""
    with np.errstate(all="ignore"):
        r = np.asarray(x).astype(dtype)
        return directed(r, np.where(np.isfinite(r), _wide(x) - r.astype(np.float64), 0.0), mode)


def flush(x: np.ndarray) -> np.ndarray:
    """.ftz: a subnormal f32 becomes zero of the same sign."""
    x = np.asarray(x)
    if x.dtype != np.float32:
        return x
    tiny = np.abs(x) < np.finfo(np.float32).tiny
    return np.where(tiny, np.copysign(np.float32(0), x), x).astype(np.float32)


def saturate(x: np.ndarray) -> np.ndarray:
    """.sat: clamped to [0.0, 1.0], NaN to 0."""
    x = np.asarray(x)
    return np.where(np.isnan(x), x.dtype.type(0), np.clip(x, 0, 1)).astype(x.dtype)


def canonical_nan(x: np.ndarray) -> np.ndarray:
    """A NaN result as PTX's arithmetic gives it: the canonical NaN (0x7fffffff for f32)."""
    x = np.asarray(x)
    bits = CANONICAL_NAN.get(x.dtype)
    if bits is None or not np.isnan(x).any():
        return x
    uint = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
    return np.where(np.isnan(x), np.array(bits, uint).view(x.dtype), x).astype(x.dtype)


def to_integer(x: np.ndarray, mode: str, dtype) -> np.ndarray:
    """cvt.rni/rzi/rmi/rpi from float to an integer type: rounded to an integer, saturated, NaN to 0."""
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        w = _wide(x)
        r = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](w)
        r = np.nan_to_num(r, nan=0.0, posinf=float(info.max), neginf=float(info.min))
        big = r >= float(info.max)  # 2**63 and 2**64 are not below the largest int64/uint64 as doubles
        out = np.clip(r, info.min, info.max).astype(dtype)
        return np.where(big, info.max, np.where(r <= float(info.min), info.min, out)).astype(dtype)


def from_integer(x: np.ndarray, mode: str, dtype) -> np.ndarray:
    """An integer to a float dtype, rounded by mode (ints up to 64 bits: the residual is taken exactly)."""
    x = np.asarray(x)
    r = x.astype(dtype)
    if mode == "rn":
        return r
    if x.dtype.itemsize <= 4:
        return directed(r, x.astype(np.float64) - r.astype(np.float64), mode)
    res = np.array([float(np.sign(int(v) - int(Fraction(float(f))))) if np.isfinite(f) else -np.sign(float(f))
                    for v, f in zip(x.reshape(-1), r.reshape(-1), strict=True)]).reshape(x.shape)
    return directed(r, res, mode)


def to_bf16(x: np.ndarray, mode: str = "rn") -> np.ndarray:
    """f32 (or wider) to bf16 bits, rounded by mode; NaN is the canonical 0x7fff."""
    f = np.asarray(x).astype(np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    if mode == "rn":
        out = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)
    else:  # between the truncation (toward zero) and one bf16 step away from zero
        inexact = (bits & np.uint64(0xFFFF)) != 0
        neg = np.signbit(f)
        away = {"rz": np.zeros_like(neg), "rm": neg, "rp": ~neg}[mode] & inexact & np.isfinite(f)
        out = (bits >> np.uint64(16)) + away.astype(np.uint64)
    out = np.where(np.isnan(f), 0x7FFF, out)
    return out.astype(np.uint16)


def from_bf16(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: the f32 rounded to 10 mantissa bits, ties away from zero; its low 13 bits zero."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((bits + np.uint64(0x1000)) & np.uint64(0xFFFFE000)).astype(np.uint32)
    return np.where(np.isnan(np.asarray(x, np.float32)), np.uint32(0x7FFFFFFF),
                    np.where(np.isinf(np.asarray(x, np.float32)), bits.astype(np.uint32), r)).astype(np.uint32)
