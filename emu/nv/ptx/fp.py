"""PTX's floating-point modifiers over numpy: the four IEEE rounding modes of .rn/.rz/.rm/.rp (numpy rounds to
nearest only), flush-to-zero (.ftz), saturation (.sat), and NaN handling as NVIDIA documents it.

A directed rounding is the nearest result moved one step where the exact result lies on the other side of it:
each operation supplies the sign of (exact - nearest), from error-free transformations (two_sum, two_prod, an
fma residual) done in a wider or the same precision.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from usergpu.emu.numerics import _two_prod, _two_sum, fma32, fma64

CANONICAL_NAN = {np.dtype(np.float32): 0x7FFFFFFF, np.dtype(np.float64): 0x7FFFFFFFFFFFFFFF,
                 np.dtype(np.float16): 0x7FFF}  # what PTX's arithmetic gives for a NaN result


def directed(r: np.ndarray, residual: np.ndarray, mode: str, overflow: np.ndarray | None = None) -> np.ndarray:
    """r (the nearest result) rounded toward zero (rz), -inf (rm) or +inf (rp) given sign(exact - r). overflow
    marks lanes whose exact result is finite but rounded to nearest is infinite: toward zero they are the largest
    finite."""
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
        if overflow is not None:
            toward_zero = {"rz": True, "rzi": True, "rm": r > 0, "rmi": r > 0}.get(mode, r < 0)
            step = np.where(overflow, toward_zero, step)
            target = np.where(overflow, 0, target).astype(r.dtype)
        return np.where(step, np.nextafter(r, target), r).astype(r.dtype)


def _wide(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _overflow(r: np.ndarray, *inputs) -> np.ndarray:
    """Where r is infinite from finite inputs."""
    out = np.isinf(r)
    for x in inputs:
        out = out & np.isfinite(np.asarray(x))
    return out


def _zero_sign(r: np.ndarray, residual: np.ndarray, a, b, mode: str) -> np.ndarray:
    """An exact zero sum of a and b (r and the residual zero) is +0 unless both are -0, except toward -inf: -0
    unless both are +0 (IEEE 754 6.3); numpy's sums give the round-to-nearest sign."""
    if mode not in ("rm", "rmi"):
        return r
    a, b = np.asarray(a), np.asarray(b)
    both_plus = (a == 0) & ~np.signbit(a) & (b == 0) & ~np.signbit(b)
    return np.where((r == 0) & (residual == 0) & ~both_plus, -np.zeros_like(r), r).astype(r.dtype)


def _exact(kind: str, args: list) -> Fraction | None:
    """The exact result of add/mul/fma/div of finite doubles, or None when it is not finite."""
    if not all(np.isfinite(v) for v in args):
        return None
    f = [Fraction(float(v)) for v in args]
    if kind == "div":
        return f[0] / f[1] if f[1] else None
    return {"add": lambda: f[0] + f[1], "mul": lambda: f[0] * f[1], "fma": lambda: f[0] * f[1] + f[2]}[kind]()


def _tiny_residuals(kind: str, r: np.ndarray, residual: np.ndarray, args: list) -> np.ndarray:
    """residual, exact (by fractions, lane by lane) where the double error terms may underflow or overflow: a tiny
    result, or a tiny or huge operand."""
    unsure = np.isfinite(r) & (np.abs(r) < 2.0**-960)
    for a in args:
        mag = np.abs(np.asarray(a, np.float64))
        unsure = unsure | (np.isfinite(r) & (((mag < 2.0**-960) & (mag > 0)) | (mag > 2.0**960)))
    if not unsure.any():
        return residual
    residual = np.array(residual, np.float64, copy=True)
    r_b, *args_b = np.broadcast_arrays(r, *(np.asarray(a, np.float64) for a in args))
    residual = np.broadcast_to(residual, r_b.shape).copy()
    for i in zip(*np.nonzero(np.broadcast_to(unsure, r_b.shape)), strict=True):
        e = _exact(kind, [a[i] for a in args_b]) if kind != "sqrt" else None
        if kind == "sqrt":
            e2 = Fraction(float(args_b[0][i])) - Fraction(float(r_b[i])) ** 2
            residual[i] = float(np.sign(e2))
        elif e is not None:
            residual[i] = float(np.sign(e - Fraction(float(r_b[i]))))
    return residual


def add(a: np.ndarray, b: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        s, e = _two_sum(_wide(a), _wide(b))  # f32/f16 operands: the double sum and its error are exact
        if dtype == np.float64:
            r, res = s, np.where(np.isfinite(e), e, 0.0)
        else:
            r = s.astype(dtype)
            res = np.where(np.isfinite(r), (s - r.astype(np.float64)) + e, 0.0)
        return _zero_sign(directed(r, res, mode, _overflow(r, a, b)), res, a, b, mode)


def mul(a: np.ndarray, b: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            p, e = _two_prod(_wide(a), _wide(b))
            e = _tiny_residuals("mul", p, np.where(np.isfinite(e), e, 0.0), [a, b]) if mode != "rn" else e
            return directed(p, np.where(np.isfinite(p), e, 0.0), mode, _overflow(p, a, b))
        p = _wide(a) * _wide(b)  # exact for f32 and f16 operands
        r = p.astype(dtype)
        return directed(r, np.where(np.isfinite(r), p - r.astype(np.float64), 0.0), mode, _overflow(r, a, b))


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        if dtype == np.float64:
            r = fma64(a, b, c)
            if mode == "rn":
                return r
            res = _fma_residual(a, b, c, r)
            return _zero_sign(directed(r, res, mode, _overflow(r, a, b, c)), res, _wide(a) * _wide(b), c, mode)
        if dtype == np.float32:
            r = fma32(a, b, c)
        else:
            r = (_wide(a) * _wide(b) + _wide(c)).astype(dtype)  # f16: exact in double, one rounding
        if mode == "rn":
            return r
        p = _wide(a) * _wide(b)
        s, e = _two_sum(p, _wide(c))
        res = np.where(np.isfinite(r), (s - r.astype(np.float64)) + e, 0.0)
        return _zero_sign(directed(r, res, mode, _overflow(r, a, b, c)), res, p, c, mode)


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
            res = np.where(np.isfinite(q) & (q != 0), fma64(-q, b, a) * np.sign(b), 0.0)
            res = _tiny_residuals("div", q, res, [a, b]) if mode != "rn" else res
            return directed(q, res, mode, _overflow(q, a, b) & (np.asarray(b) != 0))
        q = (_wide(a) / _wide(b)).astype(dtype)  # the double quotient rounds correctly to float (53 > 2*24+2)
        res = (_wide(a) - q.astype(np.float64) * _wide(b)) * np.sign(_wide(b))
        return directed(q, np.where(np.isfinite(q), res, 0.0), mode, _overflow(q, a, b) & (np.asarray(b) != 0))


def sqrt(a: np.ndarray, mode: str, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        r = np.sqrt(np.asarray(a, dtype))
        if mode == "rn":
            return r
        if dtype == np.float64:
            res = _tiny_residuals("sqrt", r, fma64(-r, r, a), [a])
        else:
            res = _wide(a) - r.astype(np.float64) ** 2
        return directed(r, np.where(np.isfinite(r), res, 0.0), mode)


def rcp(a: np.ndarray, mode: str, dtype) -> np.ndarray:
    return div(np.ones_like(np.asarray(a, dtype)), a, mode, dtype)


def convert(x: np.ndarray, mode: str, dtype) -> np.ndarray:
    """A float (any width) to the float dtype, rounded by mode."""
    with np.errstate(all="ignore"):
        r = np.asarray(x).astype(dtype)
        res = np.where(np.isfinite(r), _wide(x) - r.astype(np.float64), 0.0)
        return directed(r, res, mode, _overflow(r, x))


def flush(x: np.ndarray, tiny: float | None = None) -> np.ndarray:
    """.ftz: a subnormal becomes zero of the same sign; subnormal of x's own type, or below tiny (a narrower format
    held wider: f16 computed in double)."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        return x
    tiny = np.finfo(x.dtype).tiny if tiny is None else tiny
    return np.where(np.abs(x) < tiny, np.copysign(x.dtype.type(0), x), x).astype(x.dtype)


def flush_bits(bits: np.ndarray, exponent_mask: int) -> np.ndarray:
    """.ftz of a 16-bit float's bits: a subnormal (exponent zero) keeps only its sign."""
    bits = np.asarray(bits)
    return np.where((bits & exponent_mask) == 0, bits & 0x8000, bits).astype(bits.dtype)


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


def to_integer(x: np.ndarray, mode: str, dtype, nan: int = 0) -> np.ndarray:
    """cvt.rni/rzi/rmi/rpi from float to an integer type: rounded to an integer, saturated; NaN is nan."""
    info = np.iinfo(dtype)
    with np.errstate(all="ignore"):
        w = _wide(x)
        r = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](w)
        r = np.nan_to_num(r, nan=0.0, posinf=float(info.max), neginf=float(info.min))
        big = r >= float(info.max)  # 2**63 and 2**64 are not below the largest int64/uint64 as doubles
        out = np.clip(r, info.min, info.max).astype(dtype)
        out = np.where(big, info.max, np.where(r <= float(info.min), info.min, out)).astype(dtype)
        return np.where(np.isnan(w), np.array(nan).astype(np.uint64).astype(dtype), out).astype(dtype)


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
    """A float to bf16 bits, rounded by mode; NaN is the canonical 0x7fff. A double goes through f32 rounded the same
    way, or to odd for rn, which rounds once in all (f32's 24 bits are more than bf16's 8 + 2)."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        with np.errstate(all="ignore"):
            f = convert(x, "rz" if mode == "rn" else mode, np.float32)
            inexact = np.isfinite(f) & (f.astype(np.float64) != x)
            if mode == "rn":
                f = (f.view(np.uint32) | inexact.astype(np.uint32)).view(np.float32)
    else:
        f = x.astype(np.float32)
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


def to_tf32(x: np.ndarray, mode: str = "rna") -> np.ndarray:
    """cvt.rna/rn/rz.tf32.f32: the f32 rounded to 10 mantissa bits (ties away from zero, to even, or toward zero);
    its low 13 bits zero. NaN is the canonical NaN; infinity stays."""
    f = np.asarray(x, np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    add = {"rna": np.uint64(0x1000), "rz": np.uint64(0)}.get(mode)
    if add is None:  # rn: ties to even
        add = np.uint64(0xFFF) + ((bits >> np.uint64(13)) & np.uint64(1))
    r = ((bits + add) & np.uint64(0xFFFFE000)).astype(np.uint32)
    return np.where(np.isnan(f), np.uint32(0x7FFFFFFF), np.where(np.isinf(f), bits.astype(np.uint32), r)
                    ).astype(np.uint32)
