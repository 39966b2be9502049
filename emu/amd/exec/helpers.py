"""The functions semantics.py's expressions call (bit counting, bit-field extract, med3, class tests, ...),
lane-wise over numpy arrays of the operation's type."""

from __future__ import annotations

import numpy as np

from usergpu.emu.amd.exec.fp import fma32, fma64, fract, frexp_exp, frexp_mant, to_int

DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8, "i16": np.int16, "i32": np.int32,
          "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "bf16": np.uint16}


def popcount(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.uint64)
    return np.bitwise_count(a).astype(np.uint32) if hasattr(np, "bitwise_count") else np.vectorize(
        lambda x: bin(int(x)).count("1"), otypes=[np.uint32])(a)


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
    """Leading bits equal to the sign bit, after it; -1 for 0 and -1."""
    s = a.astype(np.int32)
    u = np.where(s < 0, ~s, s).astype(np.uint32)
    n = clz(u)
    return np.where((s == 0) | (s == -1), -1, n).astype(np.int32)


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
    bits = a.dtype.itemsize * 8
    off, width = (np.asarray(x).astype(np.uint64) & np.uint64(bits - 1 if bits == 64 else 31) for x in (off, width))
    u = a.astype(np.uint64) >> off
    mask = np.where(width >= 64, np.uint64(0xFFFFFFFFFFFFFFFF), (np.uint64(1) << np.minimum(width, 63)) - 1)
    return np.where(width == 0, 0, u & mask).astype(a.dtype)


def bfe_i(a: np.ndarray, off: np.ndarray, width: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    u = bfe_u(a.view(np.uint32 if bits == 32 else np.uint64), off, width).astype(np.int64)
    w = np.asarray(width).astype(np.int64) & (63 if bits == 64 else 31)
    sign = np.where(w > 0, (u >> np.maximum(w - 1, 0)) & 1, 0)
    return np.where(sign == 1, u - (1 << w), u).astype(a.dtype)


def sext24(a: np.ndarray) -> np.ndarray:
    x = (a.astype(np.int64) & 0xFFFFFF)
    return np.where(x & 0x800000, x - 0x1000000, x).astype(np.int32)


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


def med3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c)) if a.dtype.kind != "f" else \
        np.fmax(np.fmin(a, b), np.fmin(np.fmax(a, b), c))


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
    """v_div_fixup: the quotient estimate q of num / den, with the special cases (0/0, x/0, inf, NaN) fixed up."""
    with np.errstate(all="ignore"):
        exact = num / den
    special = ~np.isfinite(exact) | (den == 0) | (num == 0) | ~np.isfinite(num) | ~np.isfinite(den)
    return np.where(special, exact, q).astype(q.dtype)


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


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    if a.dtype == np.float64:
        return fma64(a, b, c)
    if a.dtype == np.float32:
        return fma32(a, b, c)
    return (a.astype(np.float64) * b + c).astype(a.dtype)  # f16: the double result rounds once to half


def unpack(dwords: np.ndarray, kind: str) -> np.ndarray:
    """The packed elements of dwords (last axis), low first: f16, bf16 (as float64), i8, u8, i4, u4 (as int64).
    Shape (..., n) -> (..., n * elements per dword)."""
    bits = 16 if kind in ("f16", "bf16") else int(kind[1:])
    shifts = np.arange(32 // bits, dtype=np.uint32) * np.uint32(bits)
    raw = (dwords.astype(np.uint32)[..., None] >> shifts) & np.uint32((1 << bits) - 1)
    raw = raw.reshape(*dwords.shape[:-1], -1)
    if kind == "f16":
        return raw.astype(np.uint16).view(np.float16).astype(np.float64)
    if kind == "bf16":
        return (raw << np.uint32(16)).view(np.float32).astype(np.float64)
    vals = raw.astype(np.int64)
    return np.where(vals >> (bits - 1), vals - (1 << bits), vals) if kind[0] == "i" else vals


def mbcnt(mask: np.ndarray, first: int, lanes: int) -> np.ndarray:
    """v_mbcnt_lo/hi: the set bits of mask below this lane's position, counting lanes first..first + 31."""
    below = np.clip(np.arange(lanes) - first, 0, 32).astype(np.uint64)
    keep = np.where(below >= 32, np.uint64(0xFFFFFFFF), (np.uint64(1) << below) - np.uint64(1))
    return popcount(mask.astype(np.uint64) & keep).astype(np.uint32)


NAMESPACE = {"np": np, "fma": fma, "to_int": to_int, "frexp_mant": frexp_mant, "frexp_exp": frexp_exp,
             "fract": fract, "popcount": popcount, "clz": clz, "ctz": ctz, "cls": cls, "brev": brev,
             "mul_hi": mul_hi, "bfe_u": bfe_u, "bfe_i": bfe_i, "sext24": sext24, "alignbit": alignbit, "perm": perm,
             "med3": med3, "fclass": fclass, "div_fixup": div_fixup, "pkrtz": pkrtz, "pack16": pack16,
             "mbcnt": mbcnt, **DTYPES}
