"""The emulator's kernel corpus: every Case names a kernel of a .cl file in this folder, its launch, how to make its
arguments and a numpy reference for what it writes. Plain numpy, importable by path (no usergpu imports).

References are computed from the operations' definitions (IEEE rounding, C integer semantics, the documented
lane mappings), never by replaying the instruction sequence the compiler emits.
"""

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

RDNA, CDNA = ("gfx1100", "gfx1200"), ("gfx942", "gfx950")
ARCHS = RDNA + CDNA
WAVES = {"gfx942": (64,), "gfx950": (64,)}  # the wave sizes an arch runs (CDNA: wave64 only), else 32 and 64
M32, M64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF


@dataclass(frozen=True)
class Case:
    name: str  # unique, "<file stem>.<what>"
    file: str  # .cl file in this folder
    kernel: str
    grid: tuple[int, int, int]  # workgroups per dimension
    block: tuple[int, int, int]  # work-items per workgroup
    # kernel arguments in order: ndarray for a __global/__constant pointer (the dtype the kernel reads), numpy
    # scalar for a by-value scalar, bytes for a by-value vector or struct, int for a __local pointer's byte size
    args: Callable[[np.random.Generator], list]
    # given copies of the arguments, the expected content of every ndarray argument after the kernel, in argument
    # order (one entry per ndarray; None where it is not checked)
    reference: Callable[[list], list]
    rtol: float = 0.0
    atol: float = 0.0  # floats: np.testing.assert_allclose (NaNs equal); integers: exact
    archs: tuple[str, ...] = ARCHS
    waves: tuple[int, ...] = (32, 64)


CASES: list[Case] = []


def runs(c: Case) -> list[tuple[str, int]]:
    """The (arch, wave size) pairs a case runs as."""
    return [(a, w) for a in c.archs for w in c.waves if w in WAVES.get(a, (32, 64))]


def case(name: str, kernel: str, grid: tuple, block: tuple, args: Callable, reference: Callable, **kw) -> None:
    stem = name.split(".")[0]
    CASES.append(Case(name, f"{stem}.cl", kernel, grid, block, args, reference, **kw))


# ---- helpers -------------------------------------------------------------------------------------------------------

def i32(x) -> np.ndarray:
    """Wrap integers (any width, Python ints too) to int32 as C's unsigned arithmetic would."""
    return (np.asarray(x, dtype=object) & M32).astype(np.uint64).astype(np.uint32).view(np.int32)


def u32(x) -> np.ndarray:
    return (np.asarray(x, dtype=object) & M32).astype(np.uint64).astype(np.uint32)


def i64(x) -> np.ndarray:
    return (np.asarray(x, dtype=object) & M64).astype(np.uint64).view(np.int64)


def ints(a) -> list[int]:
    return [int(v) for v in np.asarray(a).ravel()]


def cdiv(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C division: quotient truncated toward zero, remainder with the dividend's sign (Python ints, no overflow)."""
    q = [abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(ints(a), ints(b), strict=True)]
    r = [x - qq * y for x, y, qq in zip(ints(a), ints(b), q, strict=True)]
    return np.array(q, dtype=object), np.array(r, dtype=object)


def round_f32(q: Fraction) -> np.float32:
    """The float32 nearest to an exact rational, ties to even (float(q) alone could round twice)."""
    f = np.float32(float(q))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(np.array(c).view(np.uint32)) & 1))


def fma32(a, b, c) -> np.ndarray:
    a, b, c = np.broadcast_arrays(np.float32(a), np.asarray(b, np.float32), np.asarray(c, np.float32))
    out = [round_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
           for x, y, z in zip(a.ravel(), b.ravel(), c.ravel(), strict=True)]
    return np.array(out, dtype=np.float32).reshape(a.shape)


def fma64(a, b, c) -> np.ndarray:
    # int / int true division in Python is correctly rounded, so float(Fraction) rounds once
    out = [float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))) for x, y, z in zip(a, b, c, strict=True)]
    return np.array(out, dtype=np.float64)


def rand_u32(rng, n: int) -> np.ndarray:
    return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)


def rand_i32(rng, n: int) -> np.ndarray:
    return rand_u32(rng, n).view(np.int32)


def rand_u64(rng, n: int) -> np.ndarray:
    return rng.integers(0, 1 << 64, n, dtype=np.uint64)


def varied_u64(rng, n: int, bits: int) -> np.ndarray:
    """Unsigned values of random bit lengths 1..bits (so small and large divisors/dividends both occur)."""
    width = [int(w) for w in rng.integers(1, bits + 1, n)]
    return np.array([int(rng.integers(0, 1 << 62)) << 2 >> (64 - w) | (1 << (w - 1)) for w in width], dtype=np.uint64)


def log_uniform(rng, n: int, lo: float, hi: float, signed: bool = False) -> np.ndarray:
    v = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    return v * rng.choice([-1.0, 1.0], n) if signed else v


def f16_bounded(rng, n: int, lo: float, hi: float, signed: bool = True) -> np.ndarray:
    """float16 values with lo <= |v| <= hi: keeps f32 intermediates of f16 ops exact and results normal."""
    return np.float16(log_uniform(rng, n, lo, hi, signed))


def dyadic(rng, shape, k: int, denom: int, dtype=np.float32) -> np.ndarray:
    """Multiples of 1/denom in [-k/denom, k/denom]: products and short sums stay exact in every order."""
    return (rng.integers(-k, k + 1, shape) / denom).astype(dtype)


def blocks(n: int, size: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    return (n // size, 1, 1), (size, 1, 1)


# ---- math: exact arithmetic ----------------------------------------------------------------------------------------

def _saxpy_args(rng):
    return [rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32),
            np.float32(rng.uniform(-3, 3)), np.uint32(1000)]


def _saxpy_ref(a):
    y, x, s, n = a
    out = y.copy()
    out[:n] = fma32(s, x[:n], y[:n])
    return [out, None]


case("math.saxpy", "saxpy", (4, 1, 1), (256, 1, 1), _saxpy_args, _saxpy_ref)


def _float_ops_args(rng):
    a = np.float32(rng.uniform(-100, 100, 512))
    a[:8] = [2.5, -2.5, 3.5, 0.5, -0.5, 7.0, -0.0, 1e-3]  # rint ties, integers, signed zero
    return [a, np.float32(rng.uniform(-100, 100, 512)), np.zeros(512 * 12, np.float32)]


def _float_ops_ref(a):
    x, y, _ = a
    ops = [x + y, x - y, x * y, np.minimum(x, y), np.maximum(x, y), np.abs(x), np.copysign(x, y), np.floor(x),
           np.ceil(x), np.trunc(x), np.rint(x), np.where(x > y, x, -y)]
    return [None, None, np.stack(ops, axis=1).astype(np.float32).ravel()]


case("math.float_ops", "float_ops", *blocks(512, 128), _float_ops_args, _float_ops_ref)


def _int_ops_args(rng):
    a, b = rand_i32(rng, 512), rand_i32(rng, 512)
    b[:16] = a[:16]
    a[16:20] = [-(2**31), 2**31 - 1, 0, -1]
    return [a, b, np.zeros(512 * 16, np.int32)]


def _int_ops_ref(a):
    rows = []
    for x, y in zip(ints(a[0]), ints(a[1]), strict=True):
        ux, uy = x & M32, y & M32
        s = uy & 31
        rows.append([x + y, x - y, ux * uy, (x * y) >> 32, (ux * uy) >> 32, ux << s, x >> s, ux >> s, min(x, y),
                     max(x, y), min(ux, uy), -x if x < 0 else x, (x & y) | (~x & (y >> 3)),
                     (x < y) + 2 * (ux < uy) + 4 * (x == y), (ux & 0xFFFFFF) * (uy & 0xFFFFFF), x ^ y])
    return [None, None, i32(rows).ravel()]


case("math.int_ops", "int_ops", *blocks(512, 256), _int_ops_args, _int_ops_ref)


def _int64_ops_args(rng):
    a, b = rand_u64(rng, 256).view(np.int64), rand_u64(rng, 256).view(np.int64)
    b[:8] = a[:8]
    a[8:12] = [-(2**63), 2**63 - 1, 0, -1]
    return [a, b, np.zeros(256 * 12, np.int64)]


def _int64_ops_ref(a):
    rows = []
    for x, y in zip(ints(a[0]), ints(a[1]), strict=True):
        ux, uy = x & M64, y & M64
        s = uy & 63
        rows.append([x + y, x - y, ux * uy, ux << s, x >> s, ux >> s, min(x, y), max(ux, uy),
                     (x < y) + 2 * (ux < uy) + 4 * (x == y), x ^ (y << 7), (ux & M32) * (uy & M32),
                     -x if x < 0 else x])
    return [None, None, i64(rows).ravel()]


case("math.int64_ops", "int64_ops", *blocks(256, 64), _int64_ops_args, _int64_ops_ref)


def _half_ops_args(rng):
    return [f16_bounded(rng, 256, 2**-6, 8), f16_bounded(rng, 256, 2**-6, 8), np.zeros(256 * 6, np.float16),
            np.zeros(256, np.float32)]


def _half_ops_ref(a):
    x, y = a[0].astype(np.float64), a[1].astype(np.float64)  # exact; float64 -> float16 rounds once
    p = (x * y).astype(np.float16).astype(np.float64)
    ops = [x + y, x - y, x * y, np.maximum(x, y), -x, p + y]
    return [None, None, np.stack(ops, axis=1).astype(np.float16).ravel(), (x * y).astype(np.float32)]


case("math.half_ops", "half_ops", *blocks(256, 64), _half_ops_args, _half_ops_ref)


def _double_ops_args(rng):
    return [rng.standard_normal(256) * 100, rng.standard_normal(256) * 1e3, np.zeros(256 * 6)]


def _double_ops_ref(a):
    x, y, _ = a
    ops = [x + y, x - y, x * y, fma64(x, y, x), np.minimum(x, y), np.floor(x) + np.trunc(y)]
    return [None, None, np.stack(ops, axis=1).ravel()]


case("math.double_ops", "double_ops", *blocks(256, 64), _double_ops_args, _double_ops_ref)

# ---- intdiv: inline-expanded division ------------------------------------------------------------------------------


def _divisors(rng, n: int, bits: int, signed: bool) -> np.ndarray:
    v = varied_u64(rng, n, bits - 1 if signed else bits).astype(object)
    if signed:
        v = v * rng.choice([-1, 1], n)
    v[:4] = [1, 2, 3, 7] if not signed else [1, -1, 2, -7]
    return v


def _udiv32_args(rng):
    a = varied_u64(rng, 1024, 32).astype(np.uint32)
    a[:4] = [0, M32, 1 << 31, 12345]
    return [a, np.array(list(_divisors(rng, 1024, 32, False)), np.uint32), np.zeros(1024, np.uint32),
            np.zeros(1024, np.uint32)]


def _udiv_ref(a):
    return [None, None, a[0] // a[1], a[0] % a[1]]


case("intdiv.udiv32", "udiv32", *blocks(1024, 256), _udiv32_args, _udiv_ref)


def _sdiv32_args(rng):
    a = np.array(list(varied_u64(rng, 1024, 31).astype(object) * rng.choice([-1, 1], 1024)), np.int32)
    a[:4] = [-(2**31), 2**31 - 1, 0, -1]
    b = np.array(list(_divisors(rng, 1024, 32, True)), np.int32)
    b[(a == -(2**31)) & (b == -1)] = 3  # INT_MIN / -1 overflows
    return [a, b, np.zeros(1024, np.int32), np.zeros(1024, np.int32)]


def _sdiv32_ref(a):
    q, r = cdiv(a[0], a[1])
    return [None, None, i32(q), i32(r)]


case("intdiv.sdiv32", "sdiv32", *blocks(1024, 256), _sdiv32_args, _sdiv32_ref)


def _udiv64_args(rng):
    a = varied_u64(rng, 512, 64)
    a[:3] = [0, M64, 1 << 63]
    return [a, np.array(list(_divisors(rng, 512, 64, False)), np.uint64), np.zeros(512, np.uint64),
            np.zeros(512, np.uint64)]


case("intdiv.udiv64", "udiv64", *blocks(512, 128), _udiv64_args, _udiv_ref)


def _sdiv64_args(rng):
    a = np.array(list(varied_u64(rng, 512, 63).astype(object) * rng.choice([-1, 1], 512)), np.int64)
    a[:3] = [-(2**63), 2**63 - 1, -1]
    b = np.array(list(_divisors(rng, 512, 64, True)), np.int64)
    b[(a == -(2**63)) & (b == -1)] = 5
    return [a, b, np.zeros(512, np.int64), np.zeros(512, np.int64)]


def _sdiv64_ref(a):
    q, r = cdiv(a[0], a[1])
    return [None, None, i64(q), i64(r)]


case("intdiv.sdiv64", "sdiv64", *blocks(512, 128), _sdiv64_args, _sdiv64_ref)


def _div_const_args(rng):
    a = np.array(list(varied_u64(rng, 512, 31).astype(object) * rng.choice([-1, 1], 512)), np.int32)
    w = np.array(list(varied_u64(rng, 512, 63).astype(object) * rng.choice([-1, 1], 512)), np.int64)
    d = int(rng.integers(2, 1000)) * int(rng.choice([-1, 1]))
    return [a, w, np.zeros(512 * 8, np.int64), np.int32(d), np.uint64(int(rng.integers(1 << 40, 1 << 50)))]


def _div_const_ref(a):
    x, w, _, d, dl = a
    n = len(x)
    q7, r7 = cdiv(x, np.full(n, 7, object))
    q16, _ = cdiv(x, np.full(n, -16, object))
    qd, rd = cdiv(x, np.full(n, int(d), object))
    qb, _ = cdiv(w, np.full(n, 1000000007, object))
    cols = [q7, r7, [(v & M32) // 10 for v in ints(x)], q16, qd, rd, qb, [(v & M64) % int(dl) for v in ints(w)]]
    return [None, None, i64(np.array(cols, dtype=object).T).ravel()]


case("intdiv.div_const", "div_const", *blocks(512, 128), _div_const_args, _div_const_ref)

# ---- bits ----------------------------------------------------------------------------------------------------------


def _bit_count_args(rng):
    a = rand_u32(rng, 256) >> rng.integers(0, 32, 256).astype(np.uint32)
    a[:6] = [0, 1, M32, 1 << 31, 0x7FFFFFFF, 0x00F0F000]
    b = rand_u64(rng, 256) >> rng.integers(0, 64, 256).astype(np.uint64)
    b[:5] = [0, 1, M64, 1 << 63, 1 << 32]
    return [a, b, np.zeros(256 * 8, np.int32)]


def _bit_count_ref(a):
    rows = []
    for x, y in zip(ints(a[0]), ints(a[1]), strict=True):
        sx = x - (1 << 32) if x >> 31 else x
        rows.append([x.bit_count(), 32 - x.bit_length(), (x & -x).bit_length() - 1 if x else 32, y.bit_count(),
                     64 - y.bit_length(), (y & -y).bit_length() - 1 if y else 64,
                     31 - (sx if sx >= 0 else ~sx).bit_length(), x.bit_count() & 1])
    return [None, None, np.array(rows, np.int32).ravel()]


case("bits.bit_count", "bit_count", *blocks(256, 64), _bit_count_args, _bit_count_ref)


def _rotl(x: int, r: int, n: int) -> int:
    return ((x << r) | (x >> (n - r))) & ((1 << n) - 1) if r else x


def _bswap(x: int, nbytes: int) -> int:
    return int.from_bytes(x.to_bytes(nbytes, "little"), "big")


def _bitfield_ref(a):
    rows = []
    for x, c in zip(ints(a[0]), ints(a[1]), strict=True):
        y = (x * 2654435761) & M32
        off, w, r = c & 31, ((c >> 8) & 31) + 1, (c >> 16) & 31
        w = min(w, 32 - off)
        m = (1 << w) - 1
        field = (x >> off) & m
        sfield = field - (1 << w) if field >> (w - 1) else field
        z = (y << 32) | x
        rz, bz = _rotl(z, r, 64), _bswap(z, 8)
        rows.append([field, sfield, (x & ~(m << off)) | ((y & m) << off), _rotl(x, r, 32), _rotl(x, (32 - r) % 32, 32),
                     _bswap(x, 4), int(f"{x:032b}"[::-1], 2), (x & y) | (~x & c), (rz & M32) ^ (rz >> 32),
                     (bz & M32) + (bz >> 32) * 3])
    return [None, None, u32(rows).ravel()]


case("bits.bitfield", "bitfield", *blocks(512, 128), lambda rng: [rand_u32(rng, 512), rand_u32(rng, 512),
                                                                  np.zeros(512 * 10, np.uint32)], _bitfield_ref)

# ---- convert -------------------------------------------------------------------------------------------------------


def _int_float_args(rng):
    si, ui = rand_i32(rng, 512), rand_u32(rng, 512)
    si[:4], ui[:4] = [-(2**31), 2**31 - 1, 16777217, -16777219], [M32, 16777217, 0, 2**31 + 129]
    fs = np.float32(rng.uniform(-2.1e9, 2.1e9, 512))
    fs[:6] = [0.99, -0.99, -1.5, 123.999, -0.0, 2147483520.0]
    fu = np.float32(rng.uniform(0, 4.29e9, 512))
    fu[:3] = [0.5, 4294967040.0, 2147483648.0]
    return [si, ui, fs, fu, np.zeros(1024, np.float32), np.zeros(1024, np.int32)]


def _int_float_ref(a):
    si, ui, fs, fu = a[:4]
    fo = np.stack([si.astype(np.float32), ui.astype(np.float32)], axis=1).ravel()
    io = np.stack([np.trunc(fs).astype(np.int64), np.trunc(fu).astype(np.int64)], axis=1).ravel()
    return [None, None, None, None, fo, i32(io)]


case("convert.int_float", "int_float", *blocks(512, 128), _int_float_args, _int_float_ref)


def _sat_args(rng):
    special = [np.nan, np.inf, -np.inf, 3e9, -3e9, 2147483520.0, 2**31, -(2**31), 0.5, 1.5, 2.5, -0.5, 254.5, 255.5,
               256.0, -1.0, 32767.5, -32768.5, 40000.0, -40000.0, 1e-30, -0.0, -2147483904.0, 0.49999997]
    f = np.concatenate([special, rng.uniform(-1e5, 1e5, 120), rng.uniform(-300, 300, 112)]).astype(np.float32)
    return [f, np.zeros(256, np.int32), np.zeros(256, np.uint8), np.zeros(256, np.int16)]


def _sat_ref(a):
    x = a[0].astype(np.float64)
    nan = np.isnan(x)
    x0 = np.where(nan, 0.0, x)

    def clamp(v, lo, hi, dtype):
        return np.where(nan, 0, np.clip(v, lo, hi)).astype(dtype)

    return [None, clamp(np.trunc(x0), -(2**31), 2**31 - 1, np.int32),
            clamp(np.rint(a[0].astype(np.float32)).astype(np.float64), 0, 255, np.uint8),
            clamp(np.trunc(x0), -32768, 32767, np.int16)]


case("convert.sat_convert", "sat_convert", *blocks(256, 64), _sat_args, _sat_ref)


def _half_convert_args(rng):
    h = np.float16(rng.uniform(-1000, 1000, 64))
    ties = (h.astype(np.float32) + np.nextafter(h, np.float16(np.inf)).astype(np.float32)) / 2  # exact midpoints
    special = [65504.0, 65519.99, 65520.0, 1e5, -1e5, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-10, 2.0**-25,
               3 * 2.0**-26, 2.0**-24, 6.1e-5, -3e-6, 0.1, 1 / 3]
    f = np.concatenate([special, ties, rng.standard_normal(56) * 100, rng.uniform(-6e-5, 6e-5, 118)])
    hin = rng.integers(0, 1 << 16, 256, dtype=np.uint16).view(np.float16)
    return [f.astype(np.float32), np.zeros(256, np.float16), hin, np.zeros(256, np.float32)]


def _half_convert_ref(a):
    with np.errstate(over="ignore"):  # the inputs overflow f16 on purpose
        return [None, a[0].astype(np.float16), None, a[2].astype(np.float32)]


case("convert.half_convert", "half_convert", *blocks(256, 64), _half_convert_args, _half_convert_ref)


def _double_convert_args(rng):
    f = np.float32(rng.standard_normal(256) * 10.0 ** rng.integers(-30, 30, 256))
    f[:4] = [np.inf, -np.inf, np.nan, -0.0]
    d = rng.standard_normal(256) * 10.0 ** rng.integers(-30, 18, 256)  # |d| < 2**63 for the long conversion
    g = np.float32(rng.uniform(1, 1e6, 32))
    d[:32] = (g.astype(np.float64) + np.nextafter(g, np.float32(np.inf)).astype(np.float64)) / 2  # f32 ties
    d[32:34] = [9.2e18, -9.2e18]
    ln = np.array([int(v) >> int(s) for v, s in zip(rand_u64(rng, 256).view(np.int64), rng.integers(0, 63, 256),
                                                     strict=True)], np.int64)
    ln[:4] = [-(2**63), 2**63 - 1, (1 << 53) + 1, (1 << 60) + (1 << 36) + 1]
    return [f, d, ln, np.zeros(256), np.zeros(256, np.float32), np.zeros(256), np.zeros(256, np.int64),
            np.zeros(256, np.float32)]


def _double_convert_ref(a):
    f, d, ln = a[:3]
    return [None, None, None, f.astype(np.float64), d.astype(np.float32), ln.astype(np.float64),
            np.trunc(d).astype(np.int64), ln.astype(np.float32)]


case("convert.double_convert", "double_convert", *blocks(256, 64), _double_convert_args, _double_convert_ref)


def _int_narrow_ref(a):
    x = ints(a[0])
    ext = [[((v & 0xFF) ^ 0x80) - 0x80, v & 0xFF, ((v & 0xFFFF) ^ 0x8000) - 0x8000, v & 0xFFFF,
            (((v & 0xFF) ^ 0x80) - 0x80) * 3, (v & M32) >> 4] for v in x]
    return [None, np.array([((v & 0xFF) ^ 0x80) - 0x80 for v in x], np.int8),
            np.array([((v & 0xFFFF) ^ 0x8000) - 0x8000 for v in x], np.int16), i32(ext).ravel()]


case("convert.int_narrow", "int_narrow", *blocks(256, 64),
     lambda rng: [rand_i32(rng, 256), np.zeros(256, np.int8), np.zeros(256, np.int16), np.zeros(256 * 6, np.int32)],
     _int_narrow_ref)

# ---- transcend: approximate hardware math --------------------------------------------------------------------------
# 1 ulp of f32 is at most 2**-23 ~ 1.19e-7 relative: rtol 2.4e-7 allows ~1 ulp of hardware error plus the reference's
# own rounding; f32 division is specified to 2.5 ulp.


def _rrs_ref(a):
    x = a[0].astype(np.float64)
    return [None, np.float32(1 / x), np.float32(1 / np.sqrt(x)), np.float32(np.sqrt(x))]


case("transcend.rcp_rsq_sqrt", "rcp_rsq_sqrt", *blocks(256, 64),
     lambda rng: [np.float32(log_uniform(rng, 256, 1e-3, 1e3)), *(np.zeros(256, np.float32) for _ in range(3))],
     _rrs_ref, rtol=2.4e-7)
case("transcend.exp2", "exp2_hw", *blocks(256, 64),
     lambda rng: [np.float32(rng.uniform(-100, 100, 256)), np.zeros(256, np.float32)],
     lambda a: [None, np.float32(np.exp2(a[0].astype(np.float64)))], rtol=2.4e-7)


def _log2_args(rng):
    x = np.float32(log_uniform(rng, 256, 1e-30, 1e30))
    x[:64] = np.float32(rng.uniform(0.9, 1.1, 64))  # results near 0: the absolute bound applies
    x[64:67] = [1.0, 2.0, 0.5]
    return [x, np.zeros(256, np.float32)]


# atol 1e-6 covers v_log_f32's absolute error for inputs near 1, where the relative error of a tiny result grows
case("transcend.log2", "log2_hw", *blocks(256, 64), _log2_args,
     lambda a: [None, np.float32(np.log2(a[0].astype(np.float64)))], rtol=2.4e-7, atol=1e-6)


def _sin_cos_args(rng):
    x = np.float32(rng.uniform(-4, 4, 256))
    x[:6] = [0, 0.25, 0.5, -0.25, 1.0, 0.125]
    return [x, np.zeros(256, np.float32), np.zeros(256, np.float32)]


def _sin_cos_ref(a):
    t = 2 * np.pi * a[0].astype(np.float64)
    return [None, np.float32(np.sin(t)), np.float32(np.cos(t))]


# v_sin/v_cos: absolute error about 1e-6 for |x| < 256 revolutions
case("transcend.sin_cos", "sin_cos", *blocks(256, 64), _sin_cos_args, _sin_cos_ref, atol=2e-6)


def _fract_args(rng):
    x = np.float32(rng.uniform(-1000, 1000, 256))
    x[:6] = [0.0, -0.0, 3.0, -3.0, 0.5, -2.75]
    x[6:16] = np.float32(log_uniform(rng, 10, 1e-3, 1e-1))
    return [x, rng.integers(-20, 21, 256).astype(np.int32), *(np.zeros(256, np.float32) for _ in range(3)),
            np.zeros(256, np.int32)]


def _fract_ref(a):
    x, e = a[0], a[1]
    fr = np.minimum(x - np.floor(x), np.float32(np.nextafter(np.float32(1), np.float32(0))))  # v_fract stays < 1
    m, ex = np.frexp(x)
    return [None, None, fr.astype(np.float32), np.ldexp(x, e).astype(np.float32), m.astype(np.float32),
            ex.astype(np.int32)]


case("transcend.fract_ldexp_frexp", "fract_ldexp_frexp", *blocks(256, 64), _fract_args, _fract_ref)
case("transcend.fdiv", "fdiv", *blocks(256, 64),
     lambda rng: [*(np.float32(log_uniform(rng, 256, 1e-3, 1e3, True)) for _ in range(2)), np.zeros(256, np.float32)],
     lambda a: [None, None, np.float32(a[0].astype(np.float64) / a[1].astype(np.float64))], rtol=3.6e-7)
# f64 division is correctly rounded; the sqrt expansion is allowed 1 ulp (2**-52 ~ 2.2e-16)
case("transcend.ddiv_sqrt", "ddiv_sqrt", *blocks(256, 64),
     lambda rng: [log_uniform(rng, 256, 1e-100, 1e100), log_uniform(rng, 256, 1e-100, 1e100, True), np.zeros(256),
                  np.zeros(256)],
     lambda a: [None, None, a[0] / a[1], np.sqrt(a[0])], rtol=2.3e-16)
# f16: 1 ulp is at most 2**-10 relative; allow 2
case("transcend.half_div_sqrt", "half_div_sqrt", *blocks(256, 64),
     lambda rng: [f16_bounded(rng, 256, 2**-6, 1000, False), f16_bounded(rng, 256, 2**-6, 100),
                  *(np.zeros(256, np.float16) for _ in range(3))],
     lambda a: [None, None, np.float16(a[0].astype(np.float64) / a[1].astype(np.float64)),
                np.float16(np.sqrt(a[0].astype(np.float64))), np.float16(1 / a[1].astype(np.float64))], rtol=2e-3)

# ---- control: divergence -------------------------------------------------------------------------------------------


def _collatz_args(rng):
    n = rng.integers(1, 10000, 512).astype(np.uint32)
    n[:4] = [1, 2, 27, 6171]
    return [n, np.zeros(512, np.uint32), np.zeros(512, np.uint32)]


def _collatz_ref(a):
    steps, peaks = [], []
    for v in ints(a[0]):
        s, top = 0, v
        while v != 1 and s < 1000:
            v = 3 * v + 1 if v & 1 else v >> 1
            top, s = max(top, v), s + 1
        steps.append(s)
        peaks.append(top)
    return [None, np.array(steps, np.uint32), np.array(peaks, np.uint32)]


case("control.collatz", "collatz", *blocks(512, 64), _collatz_args, _collatz_ref)


def _nested_ref(a):
    out = []
    for x in ints(a[0]):
        if x > 0:
            r = x * 3 if x & 1 else x // 3 if x % 3 == 0 else -x
        elif x < -100:
            r = max(x + 1000, 0)
        else:
            r = x * x
        r = {0: r + 1, 1: r ^ 0x55, 3: r - 7, 5: r - 7}.get(x & 7, r << 1)
        out.append(r)
    return [None, i32(out)]


case("control.nested_branches", "nested_branches", *blocks(512, 128),
     lambda rng: [rng.integers(-5000, 5000, 512).astype(np.int32), np.zeros(512, np.int32)], _nested_ref)


def _early_exit_args(rng):
    return [rng.integers(-20, 200, 1024).astype(np.int32), np.full(1024, 12345, np.int32), np.int32(1000),
            np.int32(3000)]


def _early_exit_ref(a):
    x, out, n, limit = a
    out = out.copy()
    for i in range(int(n)):
        if x[i] < 0:
            out[i] = -1
            continue
        s = 0
        for k in range(int(x[i])):
            if k % 5 == 4:
                continue
            s += k
            if s > limit:
                break
        out[i] = s
    return [None, out]


case("control.early_exit", "early_exit", (4, 1, 1), (256, 1, 1), _early_exit_args, _early_exit_ref)


def _nested_loops_ref(a):
    out = []
    for x in ints(a[0]):
        acc = 0
        for j in range(x & 15):
            for k in range(j, (x >> 4) & 15):
                acc = (acc * 31 + (j ^ k)) & M32
        out.append(acc)
    return [None, np.array(out, np.uint32)]


case("control.nested_loops", "nested_loops", (5, 1, 1), (96, 1, 1),
     lambda rng: [rand_u32(rng, 480), np.zeros(480, np.uint32)], _nested_loops_ref)


def _uniform_ref(a):
    x, _, mode = a
    r = x.astype(np.int64) + 1 if mode == 0 else x.astype(np.int64) * 2 if mode == 1 else x.astype(np.int64) - 3
    r = r + sum(range(int(mode)))
    return [None, i32(np.where(x > 50, -r, r))]


for _mode in (0, 2):
    case(f"control.uniform_branch_{_mode}", "uniform_branch", *blocks(256, 64),
         lambda rng, m=_mode: [rng.integers(-100, 100, 256).astype(np.int32), np.zeros(256, np.int32), np.int32(m)],
         _uniform_ref)

# ---- lds -----------------------------------------------------------------------------------------------------------

case("lds.reduce_tree", "reduce_tree", (32, 1, 1), (256, 1, 1),
     lambda rng: [rng.integers(-1000, 1000, 32 * 256).astype(np.int32), np.zeros(32, np.int32)],
     lambda a: [None, a[0].reshape(32, 256).sum(axis=1).astype(np.int32)])
case("lds.scan", "scan_hillis_steele", (8, 1, 1), (256, 1, 1),
     lambda rng: [rand_u32(rng, 8 * 256), np.zeros(8 * 256, np.uint32)],
     lambda a: [None, u32(np.cumsum(a[0].reshape(8, 256).astype(object), axis=1)).ravel()])
case("lds.transpose", "transpose", (4, 2, 1), (16, 16, 1),
     lambda rng: [rng.standard_normal(32 * 64).astype(np.float32), np.zeros(32 * 64, np.float32), np.uint32(64),
                  np.uint32(32)],
     lambda a: [None, a[0].reshape(32, 64).T.ravel()])


def _lds_atomics_args(rng):
    return [rand_u32(rng, 16 * 256), np.zeros(64, np.uint32), np.array([M32, 0], np.uint32)]


def _lds_atomics_ref(a):
    v = a[0]
    return [None, np.bincount(v % 64, minlength=64).astype(np.uint32), np.array([v.min(), v.max()], np.uint32)]


case("lds.lds_atomics", "lds_atomics", (16, 1, 1), (256, 1, 1), _lds_atomics_args, _lds_atomics_ref)
case("lds.dyn_lds_reverse", "dyn_lds_reverse", (4, 1, 1), (128, 1, 1),
     lambda rng: [rand_i32(rng, 512), np.zeros(512, np.int32), 128 * 4],
     lambda a: [None, a[0].reshape(4, 128)[:, ::-1].ravel()])

# ---- atomics -------------------------------------------------------------------------------------------------------


def _atomic_add_ref(a):
    v, ctr = a[0].astype(object), ints(a[1])
    out = [(ctr[k] + sum(v[k::16])) & M32 for k in range(16)]
    out += [(ctr[16] + len(v)) & M32, (ctr[17] - sum(x & 0xFF for x in v)) & M32]
    return [None, np.array(out, np.uint32)]


case("atomics.add_sub", "atomic_add_sub", (64, 1, 1), (256, 1, 1),
     lambda rng: [rand_u32(rng, 64 * 256), rand_u32(rng, 18)], _atomic_add_ref)


def _minmax_ref(a):
    v, mm = a[0], a[1]
    uv, um = v.view(np.uint32), mm.view(np.uint32)
    out = [min(mm[0], v.min()), max(mm[1], v.max()), min(um[2], uv.min()), max(um[3], uv.max())]
    out += [min(mm[4 + k], v[k::4].min()) for k in range(4)]
    return [None, i32([int(x) for x in out])]


case("atomics.minmax", "atomic_minmax", (16, 1, 1), (256, 1, 1),
     lambda rng: [rand_i32(rng, 16 * 256), np.array([2**31 - 1, -(2**31), -1, 0, *([2**31 - 1] * 4)], np.int32)],
     _minmax_ref)


def _bitwise_args(rng):
    v = rand_u32(rng, 8 * 256)
    v[: 8 * 128] |= np.uint32(0xFFFF0FF0)  # mostly-ones half keeps the AND result non-trivial
    return [v, np.array([M32, 0, 0x12345678], np.uint32)]


def _bitwise_ref(a):
    v, b = a
    return [None, np.array([np.bitwise_and.reduce(v) & b[0], np.bitwise_or.reduce(v) | b[1],
                            np.bitwise_xor.reduce(v) ^ b[2]], np.uint32)]


case("atomics.bitwise", "atomic_bitwise", (8, 1, 1), (256, 1, 1), _bitwise_args, _bitwise_ref)


def _xchg_ref(a):
    seen = np.ones(16 * 256 + 1, np.uint32)
    seen[0] = 16  # every workgroup's slot starts at 0
    return [None, seen]


case("atomics.xchg", "atomic_xchg", (16, 1, 1), (256, 1, 1),
     lambda rng: [np.zeros(16, np.uint32), np.zeros(16 * 256 + 1, np.uint32)], _xchg_ref)
case("atomics.cas_fmax", "atomic_cas_fmax", (16, 1, 1), (256, 1, 1),
     lambda rng: [(rng.standard_normal(16 * 256) * 100).astype(np.float32), np.array([-np.inf], np.float32)],
     lambda a: [None, np.array([a[0].max()], np.float32)])


def _add_u64_ref(a):
    v, s = ints(a[0]), ints(a[1])
    return [None, np.array([(s[0] + sum(v)) & M64, (s[1] + sum(x << 20 for x in v[0::2])) & M64,
                            (s[2] + sum(x << 20 for x in v[1::2])) & M64], np.uint64)]


case("atomics.add_u64", "atomic_add_u64", (16, 1, 1), (256, 1, 1),
     lambda rng: [rng.integers(0, 1 << 40, 16 * 256, dtype=np.uint64), rand_u64(rng, 3)], _add_u64_ref)
case("atomics.add_f32", "atomic_add_f32", (4, 1, 1), (256, 1, 1),  # 1024 lanes: every CAS retry is sequential
     lambda rng: [dyadic(rng, 4 * 256, 400, 4), np.array([1.5, -2.25], np.float32)],
     lambda a: [None, np.float32(a[1].astype(np.float64) + a[0].astype(np.float64).sum())])
case("atomics.ticket", "atomic_ticket", (32, 1, 1), (128, 1, 1),
     lambda rng: [np.zeros(3, np.uint32), np.zeros(32 * 128, np.uint32), np.uint32(100)],
     lambda a: [np.array([4096, 4096 % 101, -4096 % 101], np.uint32), np.ones(4096, np.uint32)])

# ---- scratch -------------------------------------------------------------------------------------------------------


def _walk_ref(a):
    tab, _, steps = a
    out = []
    for i in range(len(tab) // 64):
        t, idx, acc = ints(tab[i * 64:(i + 1) * 64]), i % 64, 0
        for s in range(int(steps)):
            v = t[idx]
            acc = acc * 3 + v
            t[idx] = v + s
            idx = (v ^ s) & 63
        out.append(acc)
    return [None, i32(out)]


case("scratch.private_walk", "private_walk", (4, 1, 1), (64, 1, 1),
     lambda rng: [rng.integers(0, 1 << 20, 256 * 64).astype(np.int32), np.zeros(256, np.int32), np.int32(100)],
     _walk_ref)
case("scratch.private_sort", "private_sort", (2, 1, 1), (64, 1, 1),
     lambda rng: [rand_i32(rng, 128 * 32)], lambda a: [np.sort(a[0].reshape(128, 32), axis=1).ravel()])


def _calls_ref(a):
    out = []
    for x in ints(a[0]):
        buf = [(x ^ (k * 7)) - k for k in range(40)]
        n, w = 1 + (x & 31), x >> 8
        out += [sum(buf[k] * (w - k) for k in range(n)), buf[(x >> 3) % 40]]
    return [None, i32(out)]


case("scratch.private_calls", "private_calls", (2, 1, 1), (64, 1, 1),
     lambda rng: [rng.integers(0, 1 << 20, 128).astype(np.int32), np.zeros(256, np.int32)], _calls_ref)

# ---- grids ---------------------------------------------------------------------------------------------------------


def _grid2d_ref(a):
    y, x = np.mgrid[0:32, 0:80]
    out = a[0].reshape(32, 80).astype(np.int64) * 3 + x - 2 * y
    ids = x // 16 | (y // 8) << 8 | (x % 16) << 16 | (y % 8) << 24
    return [None, i32(out.ravel()), ids.ravel().astype(np.int32)]


case("grids.grid2d", "grid2d", (5, 4, 1), (16, 8, 1),
     lambda rng: [rng.integers(-1000, 1000, 32 * 80).astype(np.int32), np.zeros(32 * 80, np.int32),
                  np.zeros(32 * 80, np.int32), np.uint32(80)], _grid2d_ref)


def _grid3d_ref(a):
    z, y, x = np.mgrid[0:8, 0:8, 0:12]
    lx, ly, lz = x % 4, y % 4, z % 4
    pos = x | y << 8 | z << 16 | (z // 4) << 24
    loc = (lx + 4 * (ly + 4 * lz)) | lz << 8 | ly << 12 | lx << 16 | (x // 4) << 20 | (y // 4) << 26
    return [pos.ravel().astype(np.uint32), loc.ravel().astype(np.uint32)]


case("grids.grid3d", "grid3d", (3, 2, 2), (4, 4, 4),
     lambda rng: [np.zeros(768, np.uint32), np.zeros(768, np.uint32), np.uint32(12), np.uint32(8)], _grid3d_ref)


def _many_ref(a):
    v, i = a[0].astype(np.uint64), np.arange(len(a[0]), dtype=np.uint64)
    g, lane = i // 64, i % 64
    return [None, ((v * (g + 1) + lane) & M32).astype(np.uint32), a[0][::64] ^ np.arange(256, dtype=np.uint32)]


case("grids.many_groups", "many_groups", (256, 1, 1), (64, 1, 1),
     lambda rng: [rand_u32(rng, 256 * 64), np.zeros(256 * 64, np.uint32), np.zeros(256, np.uint32)], _many_ref)


def _many2d_ref(a):
    y, x = np.mgrid[0:128, 0:256]
    return [((y // 4 * 32 + x // 8) * 32 + (y % 4) * 8 + x % 8).ravel().astype(np.uint32)]


case("grids.many_groups_2d", "many_groups_2d", (32, 32, 1), (8, 4, 1),
     lambda rng: [np.zeros(128 * 256, np.uint32), np.uint32(256)], _many2d_ref)

# ---- args ----------------------------------------------------------------------------------------------------------


def _scalar_args(rng):
    return [np.zeros(8, np.int64), np.zeros(3), np.int8(rng.integers(-128, 0)), np.uint8(rng.integers(128, 256)),
            np.int16(rng.integers(-32768, 0)), np.uint16(rng.integers(32768, 65536)),
            np.int32(rng.integers(-(2**31), 0)), np.uint32(rng.integers(2**31, 2**32)),
            np.int64(rng.integers(-(2**63), -(2**40))), np.uint64(rng.integers(2**63, 2**64, dtype=np.uint64)),
            np.float32(rng.standard_normal()), np.float64(rng.standard_normal() * 1e-300),
            np.float16(rng.standard_normal()), np.zeros(128, np.int32)]


def _scalar_ref(a):
    li, dd, c, uc, s, us, i, ui, ln, ul, f, d, h, _ = a
    c, uc, s, us, i, ui, ln, ul = (int(v) for v in (c, uc, s, us, i, ui, ln, ul))
    per = [c * g + uc + s * 3 + us + i + ui * g + ln + (ul >> 32) for g in range(128)]
    return [i64([c, uc, s, us, i, ui, ln, ul]), np.array([f, d, h], np.float64), i32(per)]


case("args.scalar_args", "scalar_args", (2, 1, 1), (64, 1, 1), _scalar_args, _scalar_ref)

PARAMS = np.dtype([("tag", "i1"), ("n", "<i4"), ("scale", "<f8"), ("pair", "<i2", (2,)), ("w", "<f4")], align=True)
assert PARAMS.itemsize == 24  # the kernel's params_t


def _vector_struct_args(rng):
    u = rng.integers(0, 1000, 2).astype(np.uint32)
    v = dyadic(rng, 4, 64, 8)
    p = np.zeros(1, PARAMS)
    p[0] = (rng.integers(-100, 100), rng.integers(-(2**31), 2**31), 2.25, rng.integers(-999, 999, 2),
            rng.standard_normal())
    return [np.zeros(12), np.zeros(128, np.float32), u.tobytes(), v.tobytes(), p.tobytes(), np.int16(-77)]


def _vector_struct_ref(a):
    u = np.frombuffer(a[2], np.uint32)
    v = np.frombuffer(a[3], np.float32)
    p = np.frombuffer(a[4], PARAMS)[0]
    tail = int(a[5])
    fields = [*u, *v, p["tag"], p["n"], p["scale"], int(p["pair"][0]) * 1000 + int(p["pair"][1]), p["w"], tail]
    g = np.arange(128)
    out = v[g & 3].astype(np.float64) * p["scale"] + u[g & 1] + p["pair"][g & 1] + p["tag"] + tail  # exact values
    return [np.array(fields, np.float64), out.astype(np.float32)]


case("args.vector_struct_args", "vector_struct_args", (2, 1, 1), (64, 1, 1), _vector_struct_args, _vector_struct_ref)


def _poly_ref(a):
    coef, x, _, deg = a
    acc = np.full(len(x), float(coef[deg]))
    for k in range(int(deg) - 1, -1, -1):
        acc = acc * x + float(coef[k])  # exact: short dyadic values
    return [None, None, acc.astype(np.float32)]


case("args.constant_poly", "constant_poly", *blocks(256, 64),
     lambda rng: [rng.integers(-3, 4, 6).astype(np.float32), dyadic(rng, 256, 8, 4), np.zeros(256, np.float32),
                  np.int32(5)], _poly_ref)

# ---- wave: cross-lane ----------------------------------------------------------------------------------------------


def _lane_src(n: int, group: int, f) -> np.ndarray:
    """Source index per work-item for a permutation f(lane in group) -> lane in group, groups of `group` items."""
    i = np.arange(n)
    return i - i % group + f(i % group)


def _swizzle_ref(a):
    x, n = a[0], len(a[0])

    def bitmask(off):
        return _lane_src(n, 32, lambda lane: ((lane & (off & 31)) | ((off >> 5) & 31)) ^ ((off >> 10) & 31))

    def quad(sel):
        return _lane_src(n, 4, lambda lane: np.array(sel)[lane])

    srcs = [bitmask(0x041F), bitmask(0x401F), bitmask(0x7C1F), bitmask(0x00B8), bitmask(0x0E0F), quad([3, 2, 1, 0]),
            quad([1, 1, 2, 0])]
    return [None, np.stack([x[s] for s in srcs], axis=1).ravel()]


case("wave.swizzle_modes", "swizzle_modes", *blocks(256, 64),
     lambda rng: [rand_i32(rng, 256), np.zeros(256 * 7, np.int32)], _swizzle_ref)


def _permute_ref(a):
    x, _, k = a
    n = len(x)
    push = np.empty_like(x)
    push[_lane_src(n, 32, lambda lane: (lane + 5) & 31)] = x
    gather = x[_lane_src(n, 32, lambda lane: (lane ^ int(k)) & 31)]
    data = x[np.arange(n) - np.arange(n) % 32 + (x & 31)]
    return [None, np.stack([gather, i32(data.astype(np.int64) * 3), push], axis=1).ravel()]


case("wave.lane_permute", "lane_permute", *blocks(256, 64),
     lambda rng: [rand_i32(rng, 256), np.zeros(256 * 3, np.int32), np.uint32(rng.integers(1, 32))], _permute_ref)


def _dpp_ref(a):
    x, n = a[0], len(a[0])
    i, r = np.arange(n), np.arange(n) % 16

    def shifted(d):  # row_shr:d (d > 0) or row_shl:-d; sources outside the row keep old = -1
        ok = (r - d >= 0) & (r - d < 16)
        return np.where(ok, x[np.clip(i - d, 0, n - 1)], -1)

    cols = [shifted(1), shifted(3), shifted(-2), x[_lane_src(n, 16, lambda lane: 15 - lane)],
            x[_lane_src(n, 8, lambda lane: 7 - lane)], x[_lane_src(n, 4, lambda lane: np.array([2, 3, 0, 1])[lane])],
            x[_lane_src(n, 8, lambda lane: 7 - lane)], x[_lane_src(n, 8, lambda lane: (lane + 1) % 8)]]
    return [None, np.stack(cols, axis=1).astype(np.int32).ravel()]


def _dpp_cdna_ref(a):
    """gfx9's last two: wave_shr:1 (lane l reads lane l - 1 of its wave of 64; lane 0 keeps old) and row_bcast:15
    under row_mask 0xa (rows 1 and 3 read lane 15 of the row before; rows 0 and 2 keep old)."""
    out = _dpp_ref(a)[1].reshape(-1, 8)
    x, lane = a[0], np.arange(len(a[0])) % 64
    out[:, 6] = np.where(lane > 0, x[np.arange(len(x)) - 1], -1)
    row = lane // 16
    out[:, 7] = np.where(row % 2 == 1, x[np.arange(len(x)) - lane + 16 * row - 1], -1)
    return [None, out.ravel()]


_dpp_args = lambda rng: [rand_i32(rng, 256), np.zeros(256 * 8, np.int32)]  # noqa: E731
case("wave.dpp_rows", "dpp_rows", *blocks(256, 64), _dpp_args, _dpp_ref, archs=RDNA)
case("wave.dpp_rows_cdna", "dpp_rows", *blocks(256, 64), _dpp_args, _dpp_cdna_ref, archs=CDNA)


def _nibbles(lo: int, hi: int) -> np.ndarray:
    v = lo | hi << 32
    return np.array([(v >> (4 * k)) & 15 for k in range(16)])


def _permlane_args(rng):
    sel, xsel = rng.integers(0, 16, 16), rng.integers(0, 16, 16)

    def pack(s):
        return [np.uint32(sum(int(s[k + h]) << (4 * k) for k in range(8))) for h in (0, 8)]

    return [rand_i32(rng, 256), np.zeros(512, np.int32), *pack(sel), *pack(xsel)]


def _permlane_ref(a):
    x, _, lo, hi, xlo, xhi = a
    i = np.arange(len(x))
    same = x[i - i % 16 + _nibbles(int(lo), int(hi))[i % 16]]
    cross = x[(i // 16 ^ 1) * 16 + _nibbles(int(xlo), int(xhi))[i % 16]]
    return [None, np.stack([same, cross], axis=1).ravel()]


case("wave.permlane", "permlane", *blocks(256, 64), _permlane_args, _permlane_ref, archs=RDNA)


def _wave_read_args(rng):
    x = rng.integers(0, 1000, 256).astype(np.int32)
    x[64:128] &= ~1  # one 64-lane span without odd values: no active lane in the divergent readfirstlane
    return [x, *(np.zeros(256, np.int32) for _ in range(4)), np.uint32(19)]


def _wave_read_ref(a, wave: int):
    x = a[0].reshape(-1, wave)
    odd = np.array([[next((v for v in w if v & 1), -1)] * wave for w in x]).ravel()
    odd = np.where(a[0] & 1, odd, -1)
    rep = np.ones((1, wave), np.int32)
    return [None, (x[:, :1] * rep).ravel(), (x[:, 19:20] * rep).ravel(), odd.astype(np.int32),
            (x.sum(axis=1, keepdims=True) * rep).ravel().astype(np.int32)]


def _ballot_ref(a, wave: int):
    p = (a[0] > 0).reshape(-1, wave)
    count, below, lo, hi = [], [], [], []
    for w in p:
        m = sum(1 << k for k in range(wave) if w[k])
        for k in range(wave):
            count.append(int(w.sum()))
            below.append(int(w[:k].sum()))
            lo.append(m & M32)
            hi.append(m >> 32)
    return [None, *(np.array(v, np.uint32) for v in (count, below, lo, hi))]


for _w in (32, 64):
    case(f"wave.wave_read_w{_w}", "wave_read", *blocks(256, 128), _wave_read_args,
         lambda a, w=_w: _wave_read_ref(a, w), waves=(_w,))
    case(f"wave.wave_ballot_w{_w}", "wave_ballot", *blocks(256, 128),
         lambda rng: [rng.integers(-5, 6, 256).astype(np.int32), *(np.zeros(256, np.uint32) for _ in range(4))],
         lambda a, w=_w: _ballot_ref(a, w), waves=(_w,))

# ---- matmul --------------------------------------------------------------------------------------------------------


def _matmul_args(make, m: int = 48, n: int = 64, k: int = 80):
    return lambda rng: [make(rng, (m, k)).ravel(), make(rng, (k, n)).ravel(), np.zeros(m * n, np.float32),
                        np.uint32(m), np.uint32(n), np.uint32(k)]


def _matmul_ref(a):
    m, n, k = int(a[3]), int(a[4]), int(a[5])
    c = a[0].reshape(m, k).astype(np.float64) @ a[1].reshape(k, n).astype(np.float64)
    return [None, None, c.astype(np.float32).ravel()]


# multiples of 1/8 up to 2: every partial sum is exact, so any summation order gives the same bits
case("matmul.tiled", "matmul_tiled", (4, 3, 1), (16, 16, 1), _matmul_args(lambda r, s: dyadic(r, s, 16, 8)),
     _matmul_ref)
# |error| <= K * 2**-24 * sum|a*b| <= 80 * 6e-8 * 80 ~ 4e-4 worst case, ~1e-6 typical
case("matmul.tiled_random", "matmul_tiled", (4, 3, 1), (16, 16, 1),
     _matmul_args(lambda r, s: r.uniform(-1, 1, s).astype(np.float32)), _matmul_ref, atol=1e-4)

# ---- wmma ----------------------------------------------------------------------------------------------------------
# gfx1100: wave32 and wave64; gfx1200: wave32 only (see wmma.cl).
WMMA_TARGETS = (("gfx11", ("gfx1100",), (32, 64)), ("gfx12", ("gfx1200",), (32,)))


def _wmma_args(m: int, n: int, k: int, exact: bool):
    def make(rng):
        if exact:  # multiples of 1/8 (exact in f16), C multiples of 1/4: D is exact in f32 in any order
            a, b, c = dyadic(rng, (m, k), 8, 8, np.float16), dyadic(rng, (k, n), 8, 8, np.float16), dyadic(
                rng, (m, n), 40, 4)
        else:
            a, b = np.float16(rng.uniform(-1, 1, (m, k))), np.float16(rng.uniform(-1, 1, (k, n)))
            c = np.float32(rng.uniform(-1, 1, (m, n)))
        return [a.ravel(), b.ravel(), c.ravel(), np.zeros(m * n, np.float32), np.uint32(m), np.uint32(n), np.uint32(k)]

    return make


def _wmma_ref(a):
    m, n, k = int(a[4]), int(a[5]), int(a[6])
    d = a[0].reshape(m, k).astype(np.float64) @ a[1].reshape(k, n).astype(np.float64) + a[2].reshape(m, n)
    return [None, None, None, d.astype(np.float32).ravel()]


def _iu8_args(rng):
    return [rng.integers(-128, 128, 256).astype(np.int8), rng.integers(0, 256, 256).astype(np.uint8),
            rng.integers(-(10**6), 10**6, 256).astype(np.int32), np.zeros(256, np.int32)]


def _iu8_ref(a):
    d = a[0].reshape(16, 16).astype(np.int64) @ a[1].reshape(16, 16).astype(np.int64) + a[2].reshape(16, 16)
    return [None, None, None, d.astype(np.int32).ravel()]


for _tag, _archs, _waves in WMMA_TARGETS:
    case(f"wmma.f16_{_tag}", "wmma_f16_gemm", (1, 1, 1), (64, 1, 1), _wmma_args(16, 16, 16, True), _wmma_ref,
         archs=_archs, waves=_waves)
    # f16 products are exact in f32; K = 64 sums of |a*b| <= 1 bound the f32 accumulation error well below 1e-4
    case(f"wmma.gemm_{_tag}", "wmma_f16_gemm", (3, 2, 1), (64, 1, 1), _wmma_args(32, 48, 64, False), _wmma_ref,
         atol=1e-4, archs=_archs, waves=_waves)
    case(f"wmma.iu8_{_tag}", "wmma_iu8", (1, 1, 1), (64, 1, 1), _iu8_args, _iu8_ref, archs=_archs, waves=_waves)

assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


# ---- generic pointers ----------------------------------------------------------------------------------------------

def _generic_ref(a):
    t = np.arange(64)
    lds, priv, glob = 100 * t + t, (t & 7) * t + (t & 7), a[0][:64] + t
    return [np.concatenate([glob, lds + priv + glob]).astype(np.int32)]


case("generic.pointers", "generic_ptrs", (1, 1, 1), (64, 1, 1), lambda rng: [rng.integers(-1000, 1000, 128).astype(
    np.int32)], _generic_ref)


# ---- mfma.cl -------------------------------------------------------------------------------------------------------
# gfx942 and gfx950, wave64, one wave per workgroup. Inputs are multiples of small powers of two, so every product
# and sum is exact in f32 whatever order the hardware adds in: the references are exact and the tolerance 0.


def small_float(code: np.ndarray, e_bits: int, m_bits: int, bias: int) -> np.ndarray:
    """An 8-bit-or-less float's value from its fields (sign, biased exponent, mantissa; 0 exponent subnormal)."""
    code = np.asarray(code, np.int64)
    e, m = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    mag = np.where(e == 0, m * 2.0 ** (1 - bias - m_bits), (1 + m / 2.0**m_bits) * 2.0 ** (e - bias))
    return np.where(code >> (e_bits + m_bits), -mag, mag)


# fp8 / bf8 of each arch: gfx942 FNUZ (bias 8 / 16), gfx950 OCP E4M3 / E5M2 (bias 7 / 15)
FP8 = {"gfx942": {"fp8": (4, 3, 8), "bf8": (5, 2, 16)}, "gfx950": {"fp8": (4, 3, 7), "bf8": (5, 2, 15)}}


def nice_codes(rng, fields: tuple, shape) -> np.ndarray:
    """Random codes whose values are multiples of 1/8 of magnitude <= 4 (no NaN or infinity among them)."""
    codes = np.arange(1 << (1 + fields[0] + fields[1]))
    vals = small_float(codes, *fields)
    ok = codes[(vals * 8 == np.round(vals * 8)) & (np.abs(vals) <= 4) & (codes != 1 << (fields[0] + fields[1]))]
    return rng.choice(ok, shape).astype(np.uint8)


def _mfma_args(m: int, n: int, k: int, dtype, blocks: int = 1, acc=np.float32):
    def make(rng):
        if dtype is np.int8:
            a, b = rng.integers(-128, 128, (blocks, m, k)), rng.integers(-128, 128, (blocks, k, n))
            c = rng.integers(-(1 << 30), 1 << 30, (blocks, m, n))
        else:
            a, b, c = dyadic(rng, (blocks, m, k), 8, 8), dyadic(rng, (blocks, k, n), 8, 8), dyadic(rng, (blocks, m, n),
                                                                                                  40, 4)
        cast = np.uint16 if dtype == "bf16" else dtype
        if dtype == "bf16":  # bf16 bits: the top half of the f32
            a, b = (np.float32(x).view(np.uint32) >> 16 for x in (a, b))
        return [a.astype(cast).ravel(), b.astype(cast).ravel(), c.astype(acc).ravel(), np.zeros(blocks * m * n, acc)]
    return make


def _values(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64) if x.dtype == np.uint16 else x.astype(
        np.float64) if x.dtype.kind == "f" else x.astype(np.int64)


def _mfma_ref(m: int, n: int, k: int, blocks: int = 1, a_block=None, b_block=None):
    """D[b] = A[a_block(b)] @ B[b_block(b)] + C[b] (the blocks' broadcasts as the kernel's cbsz/abid/blgp make them)."""
    def ref(x):
        a, b = _values(x[0]).reshape(blocks, m, k), _values(x[1]).reshape(blocks, k, n)
        c = _values(x[2]).reshape(blocks, m, n)
        pick = np.arange(blocks)
        d = a[a_block(pick) if a_block else pick] @ b[b_block(pick) if b_block else pick] + c
        out = i32(d.astype(object)) if x[3].dtype == np.int32 else d.astype(x[3].dtype)
        return [None, None, None, np.asarray(out).ravel()]
    return ref


def _gemm_args(m: int, n: int, k: int):
    def make(rng):
        a, b, c = dyadic(rng, (m, k), 8, 8, np.float16), dyadic(rng, (k, n), 8, 8, np.float16), dyadic(rng, (m, n),
                                                                                                      40, 4)
        return [a.ravel(), b.ravel(), c.ravel(), np.zeros(m * n, np.float32), np.uint32(m), np.uint32(n),
                np.uint32(k)]
    return make


def _gemm_ref(x):
    m, n, k = int(x[4]), int(x[5]), int(x[6])
    d = x[0].reshape(m, k).astype(np.float64) @ x[1].reshape(k, n).astype(np.float64) + x[2].reshape(m, n)
    return [None, None, None, d.astype(np.float32).ravel()]


case("mfma.f16_gemm", "mfma_f16_gemm", (3, 2, 1), (64, 1, 1), _gemm_args(64, 96, 64), _gemm_ref, archs=CDNA,
     waves=(64,))
for _kernel, _shape, _dtype, _archs in (
        ("mfma_f16_16x16x16", (16, 16, 16), np.float16, CDNA), ("mfma_f32_16x16x4", (16, 16, 4), np.float32, CDNA),
        ("mfma_i8_16x16x32", (16, 16, 32), np.int8, CDNA), ("mfma_f32_32x32x2", (32, 32, 2), np.float32, CDNA),
        ("mfma_f64_16x16x4", (16, 16, 4), np.float64, CDNA), ("mfma_xf32_16x16x8", (16, 16, 8), np.float32,
                                                               ("gfx942",)),
        ("mfma_bf16_16x16x32", (16, 16, 32), "bf16", ("gfx950",)),
        ("mfma_i8_16x16x64", (16, 16, 64), np.int8, ("gfx950",)),
        ("mfma_f16_32x32x16", (32, 32, 16), np.float16, ("gfx950",)),
        ("mfma_i8_32x32x32", (32, 32, 32), np.int8, ("gfx950",))):
    _acc = np.int32 if _dtype == np.int8 else np.float64 if _dtype == np.float64 else np.float32
    case(f"mfma.{_kernel[5:]}", _kernel, (1, 1, 1), (64, 1, 1), _mfma_args(*_shape, _dtype, acc=_acc),
         _mfma_ref(*_shape), archs=_archs, waves=(64,))
# cbsz 1 / abid 1: both blocks take block 1's A
case("mfma.blocks_32x32x1", "mfma_blocks_32x32x1", (1, 1, 1), (64, 1, 1), _mfma_args(32, 32, 1, np.float32, 2),
     _mfma_ref(32, 32, 1, 2, lambda b: b * 0 + 1), archs=CDNA, waves=(64,))
# cbsz 2 / abid 3: block b takes A of block 4 (b // 4) + 3; blgp 4: lanes read B from lanes 0-15, blocks 0-3
case("mfma.blocks_4x4x1", "mfma_blocks_4x4x1", (1, 1, 1), (64, 1, 1), _mfma_args(4, 4, 1, np.float32, 16),
     _mfma_ref(4, 4, 1, 16, lambda b: b // 4 * 4 + 3, lambda b: b % 4), archs=CDNA, waves=(64,))


def _fp8_args(arch: str, a_kind: str, b_kind: str):
    def make(rng):
        a, b = nice_codes(rng, FP8[arch][a_kind], 16 * 32), nice_codes(rng, FP8[arch][b_kind], 32 * 16)
        return [a, b, dyadic(rng, 256, 40, 4), np.zeros(256, np.float32)]
    return make


def _fp8_ref(arch: str, a_kind: str, b_kind: str):
    def ref(x):
        a = small_float(x[0], *FP8[arch][a_kind]).reshape(16, 32)
        b = small_float(x[1], *FP8[arch][b_kind]).reshape(32, 16)
        return [None, None, None, (a @ b + x[2].reshape(16, 16)).astype(np.float32).ravel()]
    return ref


for _arch in CDNA:
    for _kernel, _kinds in (("mfma_fp8_16x16x32", ("fp8", "fp8")), ("mfma_bf8_fp8_16x16x32", ("bf8", "fp8"))):
        case(f"mfma.{_kernel[5:]}_{_arch}", _kernel, (1, 1, 1), (64, 1, 1), _fp8_args(_arch, *_kinds),
             _fp8_ref(_arch, *_kinds), archs=(_arch,), waves=(64,))


def _smfmac_args(rng):
    """A (16 x 32) with two non-zeros (multiples of 1/8) at random places in each group of 4 along K."""
    a = np.zeros((16, 8, 4))
    for row, group in np.ndindex(16, 8):
        a[row, group, rng.permutation(4)[:2]] = rng.choice([-1, 1], 2) * rng.integers(1, 9, 2) / 8
    return [a.reshape(16, 32).astype(np.float16).ravel(), dyadic(rng, 32 * 16, 8, 8, np.float16),
            dyadic(rng, 256, 40, 4), np.zeros(256, np.float32)]


case("mfma.smfmac_f16_16x16x32", "smfmac_f16_16x16x32", (1, 1, 1), (64, 1, 1), _smfmac_args,
     _mfma_ref(16, 16, 32), archs=CDNA, waves=(64,))


def _scaled_args(m: int, k: int, fields: tuple, packed: bool):
    """fp8 (one byte each) or fp4 (two per byte, low nibble first, along K for A and N for B) inputs, E8M0 scales
    2^-3 .. 2^3 per 32 K values."""
    def make(rng):
        a, b = nice_codes(rng, fields, (m, k)), nice_codes(rng, fields, (k, m))
        if packed:
            a, b = (x[:, 0::2] | (x[:, 1::2] << 4) for x in (a, b))
        sa, sb = rng.integers(124, 131, (m, k // 32)), rng.integers(124, 131, (k // 32, m))
        return [a.ravel(), b.ravel(), sa.astype(np.uint8).ravel(), sb.astype(np.uint8).ravel(),
                dyadic(rng, m * m, 40, 4), np.zeros(m * m, np.float32)]
    return make


def _scaled_ref(m: int, k: int, fields: tuple, packed: bool):
    def ref(x):
        a, b = x[0].reshape(m, -1), x[1].reshape(k, -1)
        if packed:
            a, b = (np.stack([y & 15, y >> 4], -1).reshape(y.shape[0], -1) for y in (a, b))
        sa = np.repeat(2.0 ** (x[2].reshape(m, -1).astype(np.int64) - 127), 32, 1)
        sb = np.repeat(2.0 ** (x[3].reshape(-1, m).astype(np.int64) - 127), 32, 0)
        d = (small_float(a, *fields) * sa) @ (small_float(b, *fields) * sb) + x[4].reshape(m, m)
        return [None, None, None, None, None, d.astype(np.float32).ravel()]
    return ref


for _kernel, _m, _k, _fields, _packed in (("mfma_scale_fp8_16x16x128", 16, 128, FP8["gfx950"]["fp8"], False),
                                          ("mfma_scale_fp4_32x32x64", 32, 64, (2, 1, 1), True)):
    case(f"mfma.{_kernel[5:]}", _kernel, (1, 1, 1), (64, 1, 1), _scaled_args(_m, _k, _fields, _packed),
         _scaled_ref(_m, _k, _fields, _packed), archs=("gfx950",), waves=(64,))
