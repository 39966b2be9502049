"""The CUDA kernel corpus: every Case names a kernel of a .cu file in this folder, its launch, how to make its
arguments and a numpy reference for what it writes. Plain numpy, importable by path (no usergpu imports).

References are computed from the operations' definitions (IEEE rounding, C integer semantics, the semantics CUDA
documents for shuffles, votes and atomics, PTX's for cvt and prmt), never by replaying the instructions clang
emits. The exact-arithmetic helpers are the AMD corpus's (tests/kernels/emu/cases.py).
"""

import importlib.util
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import reduce
from operator import and_, or_, xor
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location("emu_cases", Path(__file__).parents[1] / "emu" / "cases.py")
_amd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_amd)
M32, M64 = _amd.M32, _amd.M64
ints, cdiv, fma32, fma64 = _amd.ints, _amd.cdiv, _amd.fma32, _amd.fma64
rand_u32, rand_i32, rand_u64, varied_u64 = _amd.rand_u32, _amd.rand_i32, _amd.rand_u64, _amd.varied_u64
log_uniform, f16_bounded, dyadic, blocks = _amd.log_uniform, _amd.f16_bounded, _amd.dyadic, _amd.blocks

ARCHS = ("sm_80", "sm_89", "sm_90")  # every case compiles and runs for these
PTXAS_ARCHS = ("sm_80", "sm_90")  # and its PTX assembles with ptxas for these


@dataclass(frozen=True)
class Case:
    name: str  # unique, "<file stem>.<what>"
    file: str  # .cu file in this folder
    kernel: str  # declared extern "C", so the PTX name is the C name
    grid: tuple[int, int, int]  # blocks per dimension
    block: tuple[int, int, int]  # threads per block
    # kernel arguments in order: ndarray for a pointer (a global buffer of the dtype the kernel reads), numpy
    # scalar for a by-value scalar, bytes for a by-value struct or a 2-byte f16/bf16 (PTX: .align 2 .b8 [2])
    args: Callable[[np.random.Generator], list]
    # given copies of the arguments, the expected content of every ndarray argument after the kernel, in argument
    # order (one entry per ndarray; None where it is not checked; AnyOrder where only the multiset is fixed)
    reference: Callable[[list], list]
    rtol: float = 0.0
    atol: float = 0.0  # floats: np.testing.assert_allclose (NaNs equal); exact floats also match signed zeros
    # > 0: floats within this many units in the last place of the correctly rounded reference, which is then
    # given in higher precision (float64 for float32 outputs, longdouble for float64)
    ulp: int = 0
    shared: int = 0  # dynamic shared memory, bytes
    options: tuple[str, ...] = ()  # clang options after compile_cuda's (-O2) defaults
    archs: tuple[str, ...] = ARCHS


@dataclass(frozen=True)
class AnyOrder:
    """The array holds these values in some order (compared sorted)."""

    values: np.ndarray


CASES: list[Case] = []


def case(name: str, kernel: str, grid: tuple, block: tuple, args: Callable, reference: Callable, **kw) -> None:
    CASES.append(Case(name, f"{name.split('.')[0]}.cu", kernel, grid, block, args, reference, **kw))


# ---- helpers -------------------------------------------------------------------------------------------------------

def wrap(values, dtype) -> np.ndarray:
    """Python ints reduced modulo 2^bits to dtype (C's conversion to an unsigned type, two's complement after)."""
    dtype = np.dtype(dtype)
    mask = (1 << (8 * dtype.itemsize)) - 1
    flat = [int(v) & mask for v in np.asarray(values, dtype=object).ravel()]
    return np.array(flat, dtype=f"u{dtype.itemsize}").view(dtype).reshape(np.shape(values))


def bf16_bits(x) -> np.ndarray:
    """float32 values rounded to bf16 (nearest even; NaN stays NaN), as the bf16 bit patterns."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r)


def bf16_float(bits) -> np.ndarray:
    """bf16 bit patterns as float32 (exact)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def half_bytes(x: float) -> bytes:
    return np.float16(x).tobytes()


def bf16_bytes(x: float) -> bytes:
    return bf16_bits(np.float32(x)).tobytes()


def round_f32_full(q: Fraction) -> np.float32:
    """The float32 nearest to an exact rational (ties to even) over the whole range: subnormals, and infinity where
    rounding reaches 2^128 (the AMD corpus's round_f32 stops short of FLT_MAX)."""
    if q == 0:
        return np.float32(0.0)
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    e -= a < Fraction(2) ** e  # now 2^e <= a < 2^(e + 1)
    quantum = Fraction(2) ** max(e - 23, -149)
    m, rest = divmod(a, quantum)
    m += rest * 2 > quantum or (rest * 2 == quantum and m & 1)
    v = m * quantum
    return np.float32(math.copysign(np.inf if v >= 2**128 else float(v), q))


def fma_f32(x, y, z) -> np.ndarray:
    """fmaf for any float32 operands: exact, rounded once; infinities, NaNs and exact zeros (whose sign IEEE fixes)
    through float64, where the product is exact."""
    out = []
    for a, b, c in zip(*(np.asarray(v, np.float32).ravel() for v in (x, y, z)), strict=True):
        q = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)) if np.isfinite([a, b, c]).all() else 0
        out.append(round_f32_full(q) if q else np.float32(np.float64(a) * np.float64(b) + np.float64(c)))
    return np.array(out, np.float32).reshape(np.shape(x))


def warp_lanes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """For n threads of a 1D launch whose block size is a multiple of 32: each thread's lane and its warp's first
    thread."""
    t = np.arange(n)
    return t & 31, t & ~31


F32_SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.4028235e38, -3.4028235e38, 1.1754944e-38,
                         2.0**-149, 2.0**-126 - 2.0**-149, -(2.0**-149), 1.5, 3e38, 1e-20, -1e-20, 2.0**-75, 0.1,
                         65504.0], np.float32)


# ---- elementwise: every scalar type --------------------------------------------------------------------------------

INT_TYPES = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32,
             "i64": np.int64, "u64": np.uint64}


def _int_args(dtype, n: int = 500):
    info = np.iinfo(dtype)

    def make(rng):
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        a[:6] = [info.min, info.max, 0, info.min, info.max, 1]
        b[:6] = [info.max, info.min, info.min, info.min, 1, info.max]
        b[6:10] = a[6:10]
        return [a, b, np.zeros(14 * n, dtype), np.int32(n)]
    return make


def _int_ref(dtype):
    bits = 8 * np.dtype(dtype).itemsize

    def ref(a):
        rows = []
        for x, y in zip(ints(a[0]), ints(a[1]), strict=True):
            s = y & (bits - 1)
            rows.append([x + y, x - y, x * y, x & y, x | y, x ^ y, ~x, x << s, x >> s, min(x, y), max(x, y),
                         (x < y) | (x == y) << 1 | (x > 0) << 2, -x, 3 * x + y])
        return [None, None, wrap(rows, dtype).ravel()]
    return ref


for _t, _dtype in INT_TYPES.items():
    case(f"elementwise.int_ops_{_t}", f"int_ops_{_t}", (4, 1, 1), (128, 1, 1), _int_args(_dtype), _int_ref(_dtype))


def _float_args(dtype, lo: float, hi: float, n: int = 1000):
    def make(rng):
        a, b, c = (log_uniform(rng, n, lo, hi, signed=True).astype(dtype) for _ in range(3))
        a[:8] = [2.5, -2.5, 3.5, 0.5, -0.5, 7.0, -0.0, 1e-3]  # rint ties, an integer, a signed zero
        c[8:12] = a[8:12]
        return [a, b, c, np.zeros(n * (16 if dtype == np.float32 else 12), dtype), np.int32(n)]
    return make


def _f32_ref(a):
    x, y, z = a[:3]
    ops = [x + y, x - y, x * y, x / y, fma32(x, y, z), np.sqrt(np.abs(x)), np.floor(x), np.ceil(x), np.trunc(x),
           np.rint(x), np.fmin(x, y), np.fmax(x, y), np.copysign(x, y), -x, np.abs(y),
           (x < y) + 2.0 * (x == z) + 4.0 * (x >= y)]
    return [None, None, None, np.stack(ops, axis=1).astype(np.float32).ravel()]


def _f64_ref(a):
    x, y, z = a[:3]
    ops = [x + y, x - y, x * y, x / y, fma64(x, y, z), np.sqrt(np.abs(x)), np.floor(x), np.ceil(x), np.rint(x),
           np.fmin(x, y), np.fmax(x, y), -np.abs(x)]
    return [None, None, None, np.stack(ops, axis=1).ravel()]


case("elementwise.float_ops_f32", "float_ops_f32", (4, 1, 1), (256, 1, 1), _float_args(np.float32, 1e-3, 1e3),
     _f32_ref)
case("elementwise.float_ops_f64", "float_ops_f64", (4, 1, 1), (256, 1, 1), _float_args(np.float64, 1e-50, 1e50),
     _f64_ref)


def _half_args(rng, n: int = 300):
    x, y = f16_bounded(rng, n, 2**-7, 2**7), f16_bounded(rng, n, 2**-7, 2**7)
    sign = rng.choice([0, 0x8000], n).astype(np.uint16)
    z = (rng.integers(0, 0x7C00, n).astype(np.uint16) | sign).view(np.float16)  # any finite f16, subnormals too
    z[:5] = [np.inf, -np.inf, np.nan, 0.0, -0.0]
    return [x, y, z, np.zeros(8 * n, np.float16), np.int32(n)]


def _half_ref(a):
    # f16 sums and products are exact in float64, and so is x * y + z for these ranges (float64 -> float16 then
    # rounds once); a quotient rounded to float64 first rounds the same (53 >= 2 * 11 + 2 bits)
    x, y, z = (v.astype(np.float64) for v in a[:3])
    with np.errstate(invalid="ignore", over="ignore"):
        ops = [x + z, x - z, x * y, x * z, x / y, x * y + z, -z, np.where(x < z, x, z)]
        return [None, None, None, np.stack(ops, axis=1).astype(np.float16).ravel()]


case("elementwise.half_ops", "half_ops", (3, 1, 1), (128, 1, 1), _half_args, _half_ref)


def _bf16_args(rng, n: int = 300):
    x, y = (bf16_bits(log_uniform(rng, n, 1e-30, 1e30, signed=True).astype(np.float32)) for _ in range(2))
    x[:6] = bf16_bits(np.array([2.0**-130, -(2.0**-133), 3e38, np.inf, np.nan, 1.0], np.float32))
    y[:6] = bf16_bits(np.array([0.5, 3.0, 2.0, -np.inf, 1.0, 2.0**-133], np.float32))
    return [x, y, np.zeros(5 * n, np.float32), np.int32(n)]


def _bf16_ref(a):
    # the float32 result of one operation on bf16 values, rounded to bf16, is the correctly rounded bf16 result
    # (24 >= 2 * 8 + 2 bits)
    x, y = bf16_float(a[0]), bf16_float(a[1])
    with np.errstate(all="ignore"):
        ops = [bf16_float(bf16_bits(v)) for v in (x + y, x - y, x * y, x / y)] + [-x]
    return [None, None, np.stack(ops, axis=1).ravel()]


case("elementwise.bf16_ops", "bf16_ops", (3, 1, 1), (128, 1, 1), _bf16_args, _bf16_ref)

# ---- intdiv --------------------------------------------------------------------------------------------------------


def _divisors(rng, n: int, bits: int) -> list[int]:
    """Nonzero signed divisors of every bit length, small ones first."""
    v = [int(d) * int(s) for d, s in zip(varied_u64(rng, n, bits - 1), rng.choice([-1, 1], n), strict=True)]
    v[:6] = [1, -1, 2, -7, 3, 1 << (bits - 2)]
    return v


def _div_args(dtype, bits: int, n: int = 1000):
    def make(rng):
        a = np.array([int(v) * int(s) for v, s in zip(varied_u64(rng, n, bits - 1), rng.choice([-1, 1], n),
                                                         strict=True)], dtype)
        a[:4] = [np.iinfo(dtype).min, np.iinfo(dtype).max, 0, -1]
        b = np.array(_divisors(rng, n, bits), dtype)
        b[(a == np.iinfo(dtype).min) & (b == -1)] = -2  # INT_MIN / -1 is undefined
        return [a, b, np.zeros(4 * n, dtype), np.int32(n)]
    return make


def _div_ref(dtype, bits: int):
    def ref(a):
        q, r = cdiv(a[0], a[1])
        ua, ub = ints(wrap(ints(a[0]), f"u{bits // 8}")), ints(wrap(ints(a[1]), f"u{bits // 8}"))
        uq, ur = [x // y for x, y in zip(ua, ub, strict=True)], [x % y for x, y in zip(ua, ub, strict=True)]
        return [None, None, wrap(np.array([q, r, uq, ur], dtype=object).T, dtype).ravel()]
    return ref


case("intdiv.div32", "div32", (4, 1, 1), (256, 1, 1), _div_args(np.int32, 32), _div_ref(np.int32, 32))
case("intdiv.div64", "div64", (8, 1, 1), (128, 1, 1), _div_args(np.int64, 64), _div_ref(np.int64, 64))
case("intdiv.div64_O0", "div64", (8, 1, 1), (128, 1, 1), _div_args(np.int64, 64), _div_ref(np.int64, 64),
     options=("-O0",))


def _div_const_args(rng, n: int = 600):
    a, b = rand_i32(rng, n), rand_u64(rng, n).view(np.int64)
    a[:4], b[:4] = [-(2**31), 2**31 - 1, -7, 7], [-(2**63), 2**63 - 1, -64, 63]
    return [a, b, np.zeros(16 * n, np.int64), np.int32(n)]


def _cdiv1(x: int, d: int) -> tuple[int, int]:
    q, r = cdiv(np.array([x], dtype=object), np.array([d], dtype=object))
    return int(q[0]), int(r[0])


def _div_const_ref(a):
    rows = []
    for x, w in zip(ints(a[0]), ints(a[1]), strict=True):
        ux, uw = x & M32, w & M64
        rows.append([_cdiv1(x, 7)[0], _cdiv1(x, 7)[1], _cdiv1(x, -3)[0], _cdiv1(x, -3)[1], _cdiv1(x, 16)[0],
                     _cdiv1(x, 16)[1], _cdiv1(x, 1000)[0], ux // 7, ux % 10, ux // 0x80000001, _cdiv1(w, 7)[0],
                     _cdiv1(w, 1000000007)[1], _cdiv1(w, -64)[0], uw // 10, uw % 3, uw // 0x100000001])
    return [None, None, wrap(rows, np.int64).ravel()]


case("intdiv.div_const", "div_const", (5, 1, 1), (128, 1, 1), _div_const_args, _div_const_ref)


def _div_param_args(rng, n: int = 256):
    return [rand_i32(rng, n), rand_u64(rng, n).view(np.int64), np.zeros(4 * n, np.int64), np.int32(n),
            np.int32(-37), np.uint64(7919 * 1000003)]


def _div_param_ref(a):
    q, r = cdiv(a[0], np.full(len(a[0]), int(a[4]), dtype=object))
    ub = [v & M64 for v in ints(a[1])]
    e = int(a[5])
    cols = np.array([q, r, [v // e for v in ub], [v % e for v in ub]], dtype=object)
    return [None, None, wrap(cols.T, np.int64).ravel()]


case("intdiv.div_param", "div_param", (2, 1, 1), (128, 1, 1), _div_param_args, _div_param_ref)

# ---- bits ----------------------------------------------------------------------------------------------------------


def _bits_args(rng, n: int = 256):
    a, b, c = rand_u32(rng, n), rand_u32(rng, n), rand_u64(rng, n)
    a[:4], c[:3] = [0, 1, 0x80000000, M32], [0, 1, 1 << 63]
    return [a, b, c, np.zeros(13 * n, np.uint32), np.zeros(2 * n, np.uint64), np.int32(n)]


def _s32(x: int) -> int:
    x &= M32
    return x - (1 << 32) if x >> 31 else x


def _prmt(a: int, b: int, s: int) -> int:
    """PTX prmt.b32 (default mode): byte n of the result is byte (s >> 4n) & 7 of {b, a}; selector bit 3 replicates
    that byte's sign bit instead."""
    src, out = (b << 32) | a, 0
    for n in range(4):
        sel = (s >> (4 * n)) & 15
        byte = (src >> (8 * (sel & 7))) & 0xFF
        out |= ((0xFF if byte & 0x80 else 0) if sel & 8 else byte) << (8 * n)
    return out


def _ffs(x: int) -> int:
    return (x & -x).bit_length()


def _bits_ref(a):
    rows, wide = [], []
    for i, (x, y, w) in enumerate(zip(ints(a[0]), ints(a[1]), ints(a[2]), strict=True)):
        hi_lo, s, r = (y << 32) | x, i & 31, x & 63
        rows.append([bin(x).count("1"), 32 - x.bit_length(), int(f"{x:032b}"[::-1], 2), _ffs(x),
                     _prmt(x, y, (y >> 16) & 0x7777), (hi_lo << s) >> 32, hi_lo >> s, (_s32(x) * _s32(y)) >> 32,
                     (x * y) >> 32, bin(w).count("1"), 64 - w.bit_length(), ((x << 32) | y) >> s,
                     _prmt(x, y, y >> 16)])
        wide.append([int(f"{w:064b}"[::-1], 2), (w << r) | (w >> (-x & 63))])
    return [None, None, None, wrap(rows, np.uint32).ravel(), wrap(wide, np.uint64).ravel()]


case("bits.intrinsics", "intrinsics", (2, 1, 1), (128, 1, 1), _bits_args, _bits_ref)


def _bitfield_args(rng, n: int = 256):
    a, b, c = rand_u32(rng, n), rand_u32(rng, n), rand_u64(rng, n)
    a[:3] = [0, M32, 0x00800800]
    return [a, b, c, np.zeros(6 * n, np.uint32), np.zeros(n, np.uint64),
            rng.integers(0, 256, 4 * n).astype(np.uint8), np.int32(n)]


def _bitfield_ref(a):
    rows = [[(x >> 5) & 0x3FF, x >> 27, _s32(x << 8) >> 20, _s32(x << 3) >> 29, (x << 7) | (x >> 25),
             (x & ~0xFF0) | ((y << 4) & 0xFF0)] for x, y in zip(ints(a[0]), ints(a[1]), strict=True)]
    v = a[5].reshape(-1, 4).copy()
    v[:, 1], v[:, 3] = a[1] & 0xFF, (a[0] >> 9) & 0xFF
    return [None, None, None, wrap(rows, np.uint32).ravel(), (a[2] >> np.uint64(17)) & np.uint64(0xFFFFF), v.ravel()]


case("bits.bitfield", "bitfield", (2, 1, 1), (128, 1, 1), _bitfield_args, _bitfield_ref)

# ---- floats: special values ----------------------------------------------------------------------------------------


def _pairs(zero_mix: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    s = F32_SPECIALS
    idx = [(i, j) for i in range(len(s)) for j in range(len(s))
           if zero_mix or not (s[i] == 0 and s[j] == 0 and np.signbit(s[i]) != np.signbit(s[j]))]
    x, y = s[[i for i, _ in idx]], s[[j for _, j in idx]]
    return x, y, s[[(7 * i + j) % len(s) for i, j in idx]]


def _special_arith_args(rng):
    x, y, z = _pairs(True)
    return [x, y, z, np.zeros(6 * len(x), np.float32), np.int32(len(x))]


def _special_arith_ref(a):
    x, y, z = a[:3]
    with np.errstate(all="ignore"):
        ops = [x + y, x - y, x * y, x / y, fma_f32(x, y, z), np.sqrt(x)]
    return [None, None, None, np.stack(ops, axis=1).ravel()]


case("floats.special_arith", "special_arith", (4, 1, 1), (128, 1, 1), _special_arith_args, _special_arith_ref)


def _special_minmax_args(rng):
    x, y, _ = _pairs(False)
    return [x, y, np.zeros(2 * len(x), np.float32), np.zeros(len(x), np.uint32), np.int32(len(x))]


def _special_minmax_ref(a):
    x, y = a[:2]
    with np.errstate(invalid="ignore"):
        cmp = [x < y, x <= y, x == y, x != y, x > y, x >= y, np.isnan(x), np.isinf(x), np.signbit(x)]
    bits = sum(c.astype(np.uint32) << np.uint32(k) for k, c in enumerate(cmp))
    return [None, None, np.stack([np.fmin(x, y), np.fmax(x, y)], axis=1).ravel(), bits]


case("floats.special_minmax", "special_minmax", (4, 1, 1), (128, 1, 1), _special_minmax_args, _special_minmax_ref)

_CVT_F32 = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -0.99, 0.99, 2.0**31, -(2.0**31), 2147483520.0, -2147483904.0,
            2.0**32, 4294967040.0, 2.0**63, -(2.0**63), 2.0**64, 1e10, -1e10, 123456.7, -98765.4]
_CVT_F64 = [2.0**31 - 0.5, 2147483647.9, -2147483648.9, -2147483649.0, 4294967295.5, 4294967296.0, 2.0**53 + 2,
            -(2.0**63) - 4096, 2.0**64 - 2048, 2.0**64, -1e300, 1e-300, -0.7]


def _float_to_int_args(rng, n: int = 64):
    a = np.float32(rng.uniform(-3e9, 3e9, n))
    a[:len(F32_SPECIALS)] = F32_SPECIALS
    a[len(F32_SPECIALS):len(F32_SPECIALS) + len(_CVT_F32)] = _CVT_F32
    b = rng.uniform(-1e19, 2e19, n)
    b[:len(F32_SPECIALS)] = F32_SPECIALS
    b[len(F32_SPECIALS):len(F32_SPECIALS) + len(_CVT_F64)] = _CVT_F64
    return [a, b, np.zeros(5 * n, np.int32), np.zeros(2 * n, np.uint32), np.zeros(2 * n, np.int64),
            np.zeros(2 * n, np.uint64), np.int32(n)]


def _cvt(values, rounding, dtype, double: bool = False) -> np.ndarray:
    """PTX cvt.{rzi,rni,rmi,rpi} from float to an integer type: rounded, clamped to the type's range; NaN is 0, but
    1 << (width - 1) from an f64 or into a 64-bit type (PTX ISA 9.0, cvt)."""
    info = np.iinfo(dtype)
    nan = (info.min if info.min else info.max // 2 + 1) if double or np.dtype(dtype).itemsize == 8 else 0
    out = [nan if np.isnan(v) else min(max(int(rounding(v)) if np.isfinite(v) else (info.max if v > 0 else info.min),
                                           info.min), info.max) for v in np.asarray(values, np.float64)]
    return np.array(out, dtype)


def _float_to_int_ref(a):
    x, d = a[0].astype(np.float64), a[1]
    i32 = np.stack([_cvt(x, np.trunc, np.int32), _cvt(x, np.rint, np.int32), _cvt(x, np.floor, np.int32),
                    _cvt(x, np.ceil, np.int32), _cvt(d, np.trunc, np.int32, double=True)], axis=1)
    pair = [np.stack([_cvt(x, np.trunc, t), _cvt(d, np.trunc, t, double=True)], axis=1).ravel()
            for t in (np.uint32, np.int64, np.uint64)]
    return [None, None, i32.ravel(), *pair]


case("floats.float_to_int", "float_to_int", (1, 1, 1), (64, 1, 1), _float_to_int_args, _float_to_int_ref)


def _int_float_args(rng, n: int = 256):
    a = np.float32(rng.uniform(-2.1e9, 2.1e9, n))
    a[:6] = [0.9, -0.9, 2147483520.0, -2147483648.0, 16777217.0, -3.5]
    b, c = rand_i32(rng, n), rand_u32(rng, n)
    d, e = rand_u64(rng, n).view(np.int64), rand_u64(rng, n)
    b[:3], c[:3] = [2**24 + 1, 2**31 - 1, -(2**31)], [2**24 + 3, M32, 2**32 - 129]
    d[:3], e[:3] = [2**53 + 1, 2**63 - 1, -(2**63)], [2**64 - 1, 2**53 + 3, 2**64 - 2**39]
    return [a, b, c, d, e, np.zeros(2 * n, np.int32), np.zeros(4 * n, np.float32), np.zeros(3 * n, np.float64),
            np.int32(n)]


def _int_float_ref(a):
    x = a[0].astype(np.float64)
    oi = np.stack([np.trunc(x), np.trunc(np.abs(x))], axis=1).astype(np.int64).astype(np.uint32).view(np.int32)
    of = [[round_f32_full(Fraction(v)) for v in ints(col)] for col in a[1:5]]
    od = [[float(v) for v in ints(a[3])], [float(v) for v in ints(a[4])], x]
    return [None] * 5 + [oi.ravel(), np.array(of, np.float32).T.ravel(), np.array(od, np.float64).T.ravel()]


case("floats.int_float", "int_float", (2, 1, 1), (128, 1, 1), _int_float_args, _int_float_ref)


def _half_convert_args(rng, n: int = 128):
    edge = [65504.0, 65519.99, 65520.0, 2.0**-24, 2.0**-25, 2.0**-25 * 1.0001, 6.1035156e-5, -(2.0**-24) * 3.5]
    a = np.float32(log_uniform(rng, n, 1e-8, 1e5, signed=True))
    a[:len(F32_SPECIALS)] = F32_SPECIALS
    a[len(F32_SPECIALS):len(F32_SPECIALS) + len(edge)] = edge
    b = log_uniform(rng, n, 1e-8, 1e5, signed=True)
    b[:4] = [1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, -(1 + 3 * 2.0**-11 - 2.0**-45), 65519.999]  # rounded once
    sign = rng.choice([0, 0x8000], n).astype(np.uint16)
    h = (rng.integers(0, 0x7C00, n).astype(np.uint16) | sign).view(np.float16)
    h[:4] = [np.inf, -np.inf, np.nan, -0.0]
    return [a, b, h, np.zeros(3 * n, np.float16), np.zeros(3 * n, np.float32), np.zeros(n, np.int32), np.int32(n)]


def _half_convert_ref(a):
    x, b, h = a[:3]
    n = len(x)
    with np.errstate(invalid="ignore", over="ignore"):
        oh = np.stack([x.astype(np.float16), b.astype(np.float16), np.arange(n, dtype=np.float16) - 40], axis=1)
        prod = (x.astype(np.float16).astype(np.float64) * h.astype(np.float64)).astype(np.float16)
        quot = (h.astype(np.float64) / 64).astype(np.float16)
    of = np.stack([bf16_float(bf16_bits(x)), h.astype(np.float32), prod.astype(np.float32)], axis=1)
    oi = np.where(np.isfinite(h), np.trunc(np.nan_to_num(quot.astype(np.float64))), -7).astype(np.int32)
    return [None, None, None, oh.ravel(), of.ravel(), oi]


case("floats.half_convert", "half_convert", (2, 1, 1), (64, 1, 1), _half_convert_args, _half_convert_ref)

# ---- grids ---------------------------------------------------------------------------------------------------------

PAD = 37  # elements past the end that threads outside the data must leave alone


def _grid2d_args(rng, w: int = 100, h: int = 37):
    return [np.float32(rng.uniform(-100, 100, w * h)), np.full(w * h + PAD, -1.0, np.float32),
            np.zeros(2 * (w * h + PAD), np.int32), np.int32(w), np.int32(h)]


def _grid2d_ref(a, bx: int = 16, by: int = 8):
    src, out, ids, w, h = a[0], a[1].copy(), a[2].copy(), int(a[3]), int(a[4])
    y, x = np.divmod(np.arange(w * h), w)
    out[:w * h] = (src * np.float32(2) + x.astype(np.float32)) - y.astype(np.float32)
    ids[:2 * w * h:2] = (x // bx) | (y // by) << 8 | (x % bx) << 16 | (y % by) << 24
    ids[1:2 * w * h:2] = -(-w // bx) | -(-h // by) << 8 | bx << 16 | by << 24
    return [None, out, ids]


case("grids.grid2d", "grid2d", (7, 5, 1), (16, 8, 1), _grid2d_args, _grid2d_ref)


def _grid3d_args(rng, w: int = 20, h: int = 9, d: int = 7):
    return [rng.integers(-1000, 1000, w * h * d).astype(np.int32), np.full(3 * (w * h * d + PAD), -5, np.int32),
            np.int32(w), np.int32(h), np.int32(d)]


def _grid3d_ref(a, block: tuple = (8, 4, 2), grid_z: int = 4):
    src, out, (w, h, d) = a[0], a[1].copy(), (int(v) for v in a[2:])
    z, rest = np.divmod(np.arange(w * h * d), w * h)
    y, x = np.divmod(rest, w)
    tx, ty, tz = x % block[0], y % block[1], z % block[2]
    out[:3 * w * h * d:3] = src + x * 10000 + y * 100 + z
    out[1:3 * w * h * d:3] = tz | (z // block[2]) << 8 | block[2] << 16 | grid_z << 24
    out[2:3 * w * h * d:3] = (tz * block[1] + ty) * block[0] + tx
    return [None, out]


case("grids.grid3d", "grid3d", (3, 3, 4), (8, 4, 2), _grid3d_args, _grid3d_ref)

# ---- matmul --------------------------------------------------------------------------------------------------------


def _matmul_args(make, m: int, n: int, k: int):
    def args(rng):
        return [make(rng, (m, k)).ravel(), make(rng, (k, n)).ravel(), np.zeros(m * n, np.float32), np.int32(m),
                np.int32(n), np.int32(k)]
    return args


def _matmul_ref(a):
    m, n, k = (int(v) for v in a[3:])
    c = a[0].reshape(m, k).astype(np.float64) @ a[1].reshape(k, n).astype(np.float64)
    return [None, None, c.astype(np.float32).ravel()]


# dyadic entries: every product and partial sum is exact, so the order of the additions does not matter
case("matmul.tiled", "matmul_tiled", (3, 4, 1), (16, 16, 1), _matmul_args(lambda r, s: dyadic(r, s, 16, 8), 50, 45, 37),
     _matmul_ref)
case("matmul.tiled_random_O3", "matmul_tiled", (4, 3, 1), (16, 16, 1),
     _matmul_args(lambda r, s: r.standard_normal(s).astype(np.float32), 33, 64, 70), _matmul_ref, rtol=1e-4,
     atol=1e-4, options=("-O3",))

# ---- shared --------------------------------------------------------------------------------------------------------

case("shared.reduce_tree", "reduce_tree", (8, 1, 1), (256, 1, 1),
     lambda rng: [rng.integers(-10**6, 10**6, 2048).astype(np.int32), np.zeros(8, np.int32)],
     lambda a: [None, a[0].reshape(8, 256).sum(axis=1).astype(np.int32)])
case("shared.dyn_reverse", "dyn_reverse", (4, 1, 1), (128, 1, 1),
     lambda rng: [np.float32(rng.standard_normal(512)), np.zeros(512, np.float32)],
     lambda a: [None, a[0].reshape(4, 128)[:, ::-1].ravel()], shared=128 * 4)


def _dyn_mixed_ref(a, nb: int = 64):
    k = a[0].reshape(-1, nb)
    out = 0.5 * np.roll(k, -1, axis=1) + k[:, ::-1]
    return [None, out.ravel(), (k > 0).sum(axis=1).astype(np.int32)]


case("shared.dyn_mixed", "dyn_mixed", (3, 1, 1), (64, 1, 1),
     lambda rng: [rng.integers(-100, 100, 192).astype(np.int32), np.zeros(192), np.zeros(3, np.int32)],
     _dyn_mixed_ref, shared=64 * 8 + 64 * 4)

# ---- warp ----------------------------------------------------------------------------------------------------------


def _shuffle_src(values: np.ndarray, width: int, mode: str, arg) -> np.ndarray:
    """What each lane of full warps reads, as CUDA documents __shfl*_sync for a sub-warp of `width` lanes."""
    lane, base = warp_lanes(len(values))
    seg = lane & ~(width - 1)
    pos = lane - seg
    if mode == "idx":
        j = seg + arg % width
    elif mode == "up":
        j = np.where(pos >= arg, lane - arg, lane)
    elif mode == "down":
        j = np.where(pos + arg < width, lane + arg, lane)
    else:  # xor: an earlier sub-warp may be read, a later one gives the lane its own value
        j = np.where((lane ^ arg) < seg + width, lane ^ arg, lane)
    return values[base + j]


def _shuffles_args(rng, n: int = 128):
    return [rand_i32(rng, n), np.float32(rng.standard_normal(n)), rng.integers(0, 64, n).astype(np.int32),
            np.zeros(12 * n, np.int32), np.zeros(4 * n, np.float32)]


def _shuffles_ref(a):
    v, f, s = a[:3]
    lane, _ = warp_lanes(len(v))
    m = s & 31
    ops = [("idx", 32, s), ("idx", 16, s), ("idx", 4, s), ("up", 32, 1), ("up", 8, 5), ("up", 32, m),
           ("down", 32, 3), ("down", 16, 2), ("xor", 32, 1), ("xor", 8, 12), ("xor", 16, m), ("idx", 32, 31 - lane)]
    fops = [("idx", 8, s), ("down", 32, 7), ("up", 4, 2), ("xor", 32, 16)]
    return [None, None, None, np.stack([_shuffle_src(v, w, k, x) for k, w, x in ops], axis=1).ravel(),
            np.stack([_shuffle_src(f, w, k, x) for k, w, x in fops], axis=1).ravel()]


case("warp.shuffles", "shuffles", (2, 1, 1), (64, 1, 1), _shuffles_args, _shuffles_ref)
case("warp.warp_sum", "warp_sum", (2, 1, 1), (128, 1, 1),
     lambda rng: [rng.integers(-10**6, 10**6, 256).astype(np.int32), np.zeros(256, np.int32)],
     lambda a: [None, np.repeat(a[0].reshape(-1, 32).sum(axis=1), 32).astype(np.int32)])


def _masks(pred: np.ndarray) -> np.ndarray:
    """Per thread, the ballot of pred over its warp (warps of 32 from thread 0; a short last warp has fewer)."""
    out = np.zeros(len(pred), np.uint32)
    for w in range(0, len(pred), 32):
        p = pred[w:w + 32]
        out[w:w + 32] = sum(int(b) << k for k, b in enumerate(p))
    return out


def _votes_args(rng, n: int = 256):
    p = rng.integers(0, 16, n).astype(np.int32)
    p[32:64], p[96:116] = 9, 2  # a warp where every predicate agrees, and one where the first 20 lanes do
    p[64:96] = rng.integers(3, 12, 32)
    return [p, np.zeros(8 * n, np.uint32)]


def _votes_ref(a):
    p = a[0]
    lane, _ = warp_lanes(len(p))
    sub = lane < 20  # the first 20 lanes vote among themselves, the others write 0xdead

    def every(mask: np.ndarray, want: int) -> np.ndarray:
        return (mask == want).astype(np.uint32)

    ops = [_masks(p & 1), _masks(p == 7) != 0, every(_masks(p >= 2), M32),
           every(_masks(p > 8), M32) | every(_masks(p > 8), 0),
           np.where(sub, _masks((p & 2).astype(bool) & sub), 0xDEAD),
           np.where(sub, _masks((p == 3) & sub) != 0, 0xDEAD),
           np.where(sub, every(_masks((p < 12) & sub), 0xFFFFF), 0xDEAD),
           _masks(lane & 1) ^ _masks(p > lane)]
    return [None, np.stack([np.asarray(o).astype(np.uint32) for o in ops], axis=1).ravel()]


case("warp.votes", "votes", (4, 1, 1), (64, 1, 1), _votes_args, _votes_ref)


def _activemask_ref(a, nb: int = 48):
    # threads on one path of a branch run together, so each path's mask is the set of lanes that took it
    p = a[0]
    out = np.zeros((len(p), 3), np.uint32)
    for w0 in (w for b0 in range(0, len(p), nb) for w in range(b0, b0 + nb, 32)):
        q = p[w0:w0 + min(32, nb - (w0 % nb))]
        alive, odd, even = (int(_masks(c)[0]) for c in (np.ones(len(q), bool), q % 2 == 1, q % 2 == 0))
        hi, mid = int(_masks(q > 9)[0]), int(_masks((q > 4) & (q <= 9))[0])
        out[w0:w0 + len(q)] = np.stack([np.full(len(q), alive), np.where(q % 2 == 1, odd, ~even & M32),
                                        np.where(q > 9, hi, np.where(q > 4, mid ^ 0x80000000, 0))], axis=1)
    return [None, out.ravel()]


case("warp.activemask", "activemask", (4, 1, 1), (48, 1, 1),
     lambda rng: [rng.integers(0, 16, 192).astype(np.int32), np.zeros(3 * 192, np.uint32)], _activemask_ref)


def _match_args(rng, n: int = 128):
    v = rng.integers(0, 4, n).astype(np.uint32)
    w = (rng.integers(0, 3, n).astype(np.uint64) << np.uint64(40)) | np.uint64(5)  # equal low halves
    return [v, w, np.zeros(2 * n, np.uint32)]


def _match_ref(a):
    v, w = a[:2]
    _, base = warp_lanes(len(v))
    out = [[int(_masks(x[b:b + 32] == x[t])[0]) for x in (v, w)] for t, b in enumerate(base)]
    return [None, None, np.array(out, np.uint32).ravel()]


case("warp.match_any", "match_any", (2, 1, 1), (64, 1, 1), _match_args, _match_ref)

# ---- atomics -------------------------------------------------------------------------------------------------------

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def _global_ops_args(rng, n: int = 1000):
    return [rand_i32(rng, n), np.array([0, 0, I32_MAX, I32_MIN, -1, 0, 0] + [0] * 8, np.int32),
            np.array([0, 0, M32, 0, M32, 0, 0], np.uint32), np.array([0, 0, M64, 0, M64, 0, 0], np.uint64),
            np.int32(n)]


def _global_ops_ref(a):
    v = ints(a[0])
    u = [x & M32 for x in v]
    w = [(x * 0x9E3779B97F4A7C15) & M64 for x in v]
    si = [sum(v), -sum(v), min(v + [I32_MAX]), max(v + [I32_MIN]), reduce(and_, [x | 0x7FF7FFF7 for x in v], -1),
          reduce(or_, [x & (1 << (i & 31)) for i, x in enumerate(v)], 0), reduce(xor, v, 0)]
    si += [sum(1 for i in range(len(v)) if i & 7 == k) for k in range(8)]
    su = [sum(u), -sum(x >> 4 for x in u), min(u), max(u), reduce(and_, [~(1 << (x & 31)) for x in u], M32),
          reduce(or_, [1 << (x >> 27) for x in u], 0), reduce(xor, [x * 2654435761 for x in u], 0)]
    s64 = [sum(w), -sum(x >> 3 for x in w), min(w), max(w), reduce(and_, [x | 0xFFFEFFFFFFFEFFFF for x in w], M64),
           reduce(or_, [1 << (x >> 58) for x in w], 0), reduce(xor, w, 0)]
    return [None, wrap(si, np.int32), wrap(su, np.uint32), wrap(s64, np.uint64)]


case("atomics.global_ops", "global_ops", (4, 1, 1), (256, 1, 1), _global_ops_args, _global_ops_ref)


def _float_add_args(rng, n: int = 1000):
    return [dyadic(rng, n, 64, 8), dyadic(rng, n, 1000, 16, np.float64), np.zeros(9, np.float32), np.zeros(4),
            np.int32(n)]


def _float_add_ref(a):
    f, d = a[0].astype(np.float64), a[1]
    fs = [f[k::8].sum() for k in range(8)] + [f.sum()]
    return [None, None, np.array(fs, np.float32), np.array([d[k::4].sum() for k in range(4)])]


case("atomics.float_add", "float_add", (4, 1, 1), (256, 1, 1), _float_add_args, _float_add_ref)


def _exchange_args(rng, nb: int = 4, nt: int = 128):
    return [np.zeros(nb, np.uint32), np.zeros(nb * (nt + 1), np.uint32), np.zeros(1, np.uint32),
            np.zeros(nb * nt, np.uint32)]


def _exchange_ref(a):
    threads = len(a[3])
    return [np.zeros_like(a[0]), np.ones_like(a[1]), np.array([threads], np.uint32), np.ones_like(a[3])]


case("atomics.exchange", "exchange", (4, 1, 1), (128, 1, 1), _exchange_args, _exchange_ref)


def _inc_dec_ref(a, threads: int = 256):
    limit = int(a[3])
    ctr, hist_inc, hist_dec = [0, 0], np.zeros_like(a[1]), np.zeros_like(a[2])
    for _ in range(threads):  # CUDA: inc gives old >= limit ? 0 : old + 1; dec gives old == 0 || old > limit ?
        hist_inc[ctr[0]] += 1  # limit : old - 1. From 0 both cycle through 0..limit, in any order.
        ctr[0] = 0 if ctr[0] >= limit else ctr[0] + 1
        hist_dec[ctr[1]] += 1
        ctr[1] = limit if ctr[1] == 0 or ctr[1] > limit else ctr[1] - 1
    return [np.array(ctr, np.uint32), hist_inc, hist_dec]


case("atomics.inc_dec", "inc_dec", (4, 1, 1), (64, 1, 1),
     lambda rng: [np.zeros(2, np.uint32), np.zeros(10, np.uint32), np.zeros(10, np.uint32), np.uint32(9)],
     _inc_dec_ref)


def _cas_args(rng, n: int = 500, size: int = 1024):
    return [np.float32(rng.standard_normal(n) * 100), rand_u64(rng, n) | np.uint64(1),
            np.array([0xFF800000], np.uint32), np.ones(1, np.uint64), np.zeros(size, np.uint32), np.uint32(size),
            np.int32(n)]


def _cas_ref(a):
    n, size = int(a[6]), int(a[5])
    prod = reduce(lambda x, y: x * y % (1 << 64), ints(a[1]), 1)
    table = np.concatenate([np.arange(1, n + 1), np.zeros(size - n)]).astype(np.uint32)
    return [None, None, np.array([a[0].max()], np.float32).view(np.uint32), np.array([prod], np.uint64),
            AnyOrder(table)]


case("atomics.cas_loops", "cas_loops", (4, 1, 1), (128, 1, 1), _cas_args, _cas_ref)


def _shared_ops_args(rng, nb: int = 3, nt: int = 256):
    return [rand_i32(rng, nb * nt), dyadic(rng, nb * nt, 64, 4), np.zeros(nb * 11, np.int32),
            np.zeros(nb * 3, np.uint64), np.zeros(nb, np.float32), np.zeros(nb * (nt + 1), np.uint32)]


def _shared_ops_ref(a, nt: int = 256):
    out, out64, outf = [], [], []
    for b in range(len(a[0]) // nt):
        v = ints(a[0][b * nt:(b + 1) * nt])
        u = [x & M32 for x in v]
        out += [sum(v), -sum(x >> 8 for x in v), min(v + [I32_MAX]), max(v + [I32_MIN]),
                reduce(and_, [x | 0x7FFBFFBF for x in v], -1), reduce(or_, [1 << (x & 31) for x in u], 0),
                reduce(xor, v, 0), sum(u), nt % 10, min(u), max(u)]
        out64 += [sum(x << 20 for x in u), reduce(lambda p, x: p * (2 * x + 1) % (1 << 64), u, 1),
                  max(x * x for x in u)]
        outf.append(a[1][b * nt:(b + 1) * nt].astype(np.float64).sum())
    return [None, None, wrap(out, np.int32), wrap(out64, np.uint64), np.array(outf, np.float32), np.ones_like(a[5])]


case("atomics.shared_ops", "shared_ops", (3, 1, 1), (256, 1, 1), _shared_ops_args, _shared_ops_ref)

# ---- control -------------------------------------------------------------------------------------------------------


def _collatz_args(rng, n: int = 1000):
    x = rng.integers(1, 100000, n).astype(np.uint32)
    x[:3] = [1, 27, 97]
    return [x, np.zeros(n, np.uint32), np.int32(n)]


def _collatz_ref(a):
    steps = []
    for x in ints(a[0]):
        k = 0
        while x != 1 and k < 500:
            x, k = (3 * x + 1 if x & 1 else x >> 1), k + 1
        steps.append(k)
    return [None, np.array(steps, np.uint32)]


case("control.collatz", "collatz", (8, 1, 1), (128, 1, 1), _collatz_args, _collatz_ref)
case("control.collatz_O0", "collatz", (8, 1, 1), (128, 1, 1), _collatz_args, _collatz_ref, options=("-O0",))


def _nested_ref(a):
    out = []
    for x, y in zip(ints(a[0]), ints(a[1]), strict=True):
        if x > 0:
            r = x + y if y > 0 else x - y if y < -50 else x * 3
        else:
            r = -1 if x == y else max(x, y) if (x ^ y) & 4 else x & y
        out.append(r - 100 if r > 100 else r)
    return [None, None, np.array(out, np.int32)]


def _nested_args(rng, n: int = 512):
    a, b = rng.integers(-200, 200, n).astype(np.int32), rng.integers(-200, 200, n).astype(np.int32)
    b[:16] = a[:16]
    return [a, b, np.zeros(n, np.int32)]


case("control.nested_ifs", "nested_ifs", (4, 1, 1), (128, 1, 1), _nested_args, _nested_ref)
case("control.nested_ifs_O0", "nested_ifs", (4, 1, 1), (128, 1, 1), _nested_args, _nested_ref, options=("-O0",))


def _break_args(rng, n: int = 256, width: int = 16):
    data = rng.integers(-5, 21, n * width).astype(np.int32)
    data[rng.random(n * width) < 0.05] = 99
    return [data, rng.integers(0, width + 1, n).astype(np.int32), np.zeros(2 * n, np.int32), np.int32(width)]


def _break_ref(a):
    data, lens, width = a[0], a[1], int(a[3])
    out = []
    for i, length in enumerate(ints(lens)):
        total = used = 0
        for j, v in enumerate(ints(data[i * width:i * width + length])):
            if v == 99:
                break
            if v >= 0:
                total, used = total + v * (j + 1), used + 1
        out += [total, used]
    return [None, None, np.array(out, np.int32)]


case("control.break_continue", "break_continue", (4, 1, 1), (64, 1, 1), _break_args, _break_ref)


def _early_ref(a):
    out = a[1].copy()
    for i, x in enumerate(ints(a[0])):
        if x < 0:
            continue
        if x % 3 == 0:
            out[i] = 1
            continue
        k = 0
        while k < x % 7:  # the bound is re-read with the updated x
            if x > 1000:
                break
            x, k = x * 2 + k, k + 1
        else:
            out[i] = x
    return [None, out]


case("control.early_return", "early_return", (4, 1, 1), (128, 1, 1),
     lambda rng: [rng.integers(-50, 1500, 500).astype(np.int32), np.full(500, -9, np.int32), np.int32(500)],
     _early_ref)

# ---- switch --------------------------------------------------------------------------------------------------------

_SWITCH = [lambda x: x, lambda x: x * 7, lambda x: x - 100, lambda x: x ^ 0x55, lambda x: x >> 2, lambda x: -x,
           lambda x: x | 0x100, lambda x: x * x, lambda x: 8, lambda x: x + 9000, lambda x: x & 0xF0,
           lambda x: x << 3]


def _switch_ref(a):
    return [None, wrap([_SWITCH[x & 15](x) if x & 15 < len(_SWITCH) else 12345 for x in ints(a[0])], np.int32)]


case("switch.dense", "switch_dense", (4, 1, 1), (64, 1, 1),
     lambda rng: [rng.integers(-5000, 5000, 256).astype(np.int32), np.zeros(256, np.int32)], _switch_ref)

# ---- calls ---------------------------------------------------------------------------------------------------------


def _calls_args(rng, n: int = 128):
    return [rng.integers(-100, 100, n).astype(np.int32), dyadic(rng, 8 * n, 64, 8), np.zeros(2 * n, np.int32),
            np.zeros(n, np.float32), np.zeros(n), np.zeros(n, np.int64)]


def _calls_ref(a):
    def leaf(x):
        return x * x - 3 * x + 1

    def mid(x, y):
        return leaf(x) + 2 * leaf(y)

    oi, of, od, ol = [], [], [], []
    for i, x in enumerate(ints(a[0])):
        oi += [mid(x, x + 1) - mid(x - 2, x), 2 * x + 17]
        p = a[1][8 * i:8 * i + 8].astype(np.float64)
        pos = p[p > 0]
        of.append(pos.sum())  # dyadic: exact in float32 in any order
        od.append((pos * pos).sum() * (i & 7) + pos.sum() - len(pos))
        ol.append(int(wrap([x], np.int8)[0]) + 10 * int(wrap([3 * x], np.int16)[0]) + 100 * x + x * 2**33 + x + x +
                  3 * (i & 0xFF) + 5 * (7 * i & 0xFFFF))
    return [None, None, np.array(oi, np.int32), np.array(of, np.float32), np.array(od), np.array(ol, np.int64)]


case("calls.calls", "calls", (2, 1, 1), (64, 1, 1), _calls_args, _calls_ref)
case("calls.calls_O0", "calls", (2, 1, 1), (64, 1, 1), _calls_args, _calls_ref, options=("-O0",))

# ---- local ---------------------------------------------------------------------------------------------------------


def _lookup_ref(a):
    out = []
    for i, x in enumerate(ints(a[0])):
        buf = [x * k + (k ^ i) for k in range(32)]
        idx = [j & 31 for j in ints(a[1][8 * i:8 * i + 8])]
        for j in range(4):
            buf[idx[j]] += j + 1
        out.append(sum(buf[idx[j]] for j in range(4, 8)))
    return [None, None, np.array(out, np.int32)]


def _lookup_args(rng, n: int = 128):
    return [rng.integers(-1000, 1000, n).astype(np.int32), rng.integers(0, 64, 8 * n).astype(np.int32),
            np.zeros(n, np.int32)]


case("local.local_lookup", "local_lookup", (2, 1, 1), (64, 1, 1), _lookup_args, _lookup_ref)
case("local.local_lookup_O3", "local_lookup", (2, 1, 1), (64, 1, 1), _lookup_args, _lookup_ref, options=("-O3",))
case("local.local_sort", "local_sort", (2, 1, 1), (32, 1, 1),
     lambda rng: [np.float32(rng.standard_normal(16 * 64)), np.zeros(16 * 64, np.float32)],
     lambda a: [None, np.sort(a[0].reshape(-1, 16), axis=1).ravel()])

# ---- args ----------------------------------------------------------------------------------------------------------

MIXED = np.dtype([("c", "i1"), ("s", "<i2"), ("i", "<i4"), ("f", "<f4"), ("d", "<f8"), ("ll", "<i8"),
                  ("tag", "u1", (3,))], align=True)  # C layout: natural alignment, size padded to 8
OUTER = np.dtype([("n", "<i4"), ("in", [("x", "<f4"), ("y", "<f4")], (2,)), ("w", "<f8"), ("tail", "<i2")],
                 align=True)


def _struct_args(rng, n: int = 64):
    m = np.array((-7, -1234, 99999, 0.375, -2.5e10, -(2**40) - 3, (7, 200, 31)), MIXED)
    o = np.array((12, [(1.5, -2.25), (1e3, 0.125)], 3.75, -321), OUTER)
    return [m.tobytes(), o.tobytes(), np.zeros(4 * n), np.zeros(4 * n, np.int64)]


def _struct_ref(a):
    m, o = np.frombuffer(a[0], MIXED)[0], np.frombuffer(a[1], OUTER)[0]
    n = len(a[2]) // 4
    i = np.arange(n)
    inner = o["in"][i & 1]
    out = [(m["f"] * i.astype(np.float32)).astype(np.float64) + m["d"],
           (inner["x"] - inner["y"]).astype(np.float64), np.full(n, o["w"] * o["n"]), np.full(n, float(o["tail"]))]
    oi = [int(m["c"]) + int(m["s"]) + int(m["i"]) * i, int(m["ll"]) + i, m["tag"][i % 3], np.full(n, int(o["n"]))]
    return [np.stack(out, axis=1).ravel(), np.stack(oi, axis=1).astype(np.int64).ravel()]


case("args.struct_args", "struct_args", (2, 1, 1), (32, 1, 1), _struct_args, _struct_ref)

_SCALARS = [
    (np.int8(-100), np.uint8(200), np.int16(-30000), np.uint16(60000), np.int32(-2_000_000_000),
     np.uint32(4_000_000_000), np.int64(-5 * 10**18), np.uint64(18 * 10**18), np.float32(1.5), np.float64(-2.25),
     3.5, 0.75),
    (np.int8(127), np.uint8(1), np.int16(-1), np.uint16(2), np.int32(7), np.uint32(0x80000000), np.int64(2**62),
     np.uint64(1), np.float32(-0.001), np.float64(1e300), -65504.0, -3.0e38),
]


def _many_args(rng, n: int = 32):
    args = [np.zeros(16 * n, np.int64), np.zeros(8 * n)]
    for s in _SCALARS:  # f16 and bf16 are 2-byte aggregates in PTX: passed as their bytes
        args += [*s[:10], half_bytes(s[10]), bf16_bytes(s[11])]
    return args


def _many_ref(a):
    n = len(a[0]) // 16
    i = np.arange(n)
    cols, floats = [], []
    for s in _SCALARS:
        cols += [[int(v)] * n for v in s[:6]] + [[int(s[6]) + k for k in range(n)], [int(s[7]) ^ k for k in range(n)]]
        floats += [(s[8] * i.astype(np.float32)).astype(np.float64), s[9] - i, np.full(n, float(np.float16(s[10]))),
                   np.full(n, float(bf16_float(bf16_bits(np.float32(s[11])))))]
    return [wrap(np.array(cols, dtype=object).T, np.int64).ravel(), np.stack(floats, axis=1).ravel()]


case("args.many_params", "many_params", (1, 1, 1), (32, 1, 1), _many_args, _many_ref)

# ---- scan and histogram --------------------------------------------------------------------------------------------


def _scan_ref(block: int):
    def ref(a):
        x = a[0].astype(np.int64)
        out = np.concatenate([np.cumsum(x[k:k + block]) for k in range(0, len(x), block)])
        return [None, out.astype(np.int32)]
    return ref


case("scan.block_scan", "block_scan", (4, 1, 1), (256, 1, 1),
     lambda rng: [rng.integers(-1000, 1000, 1000).astype(np.int32), np.zeros(1000, np.int32), np.int32(1000)],
     _scan_ref(256))
case("scan.block_scan_1024_O3", "block_scan", (3, 1, 1), (1024, 1, 1),
     lambda rng: [rng.integers(-1000, 1000, 3000).astype(np.int32), np.zeros(3000, np.int32), np.int32(3000)],
     _scan_ref(1024), options=("-O3",))


def _histogram_args(rng, n: int = 10007):
    data = np.concatenate([rng.integers(0, 256, n // 2), rng.integers(40, 48, n - n // 2)])  # skewed: collisions
    return [rng.permutation(data).astype(np.uint8), np.zeros(256, np.uint32), np.int32(n)]


case("histogram.histogram", "histogram", (8, 1, 1), (128, 1, 1), _histogram_args,
     lambda a: [None, np.bincount(a[0], minlength=256).astype(np.uint32)])

# ---- math: libdevice and the fast intrinsics, within CUDA's documented error bounds --------------------------------
# (CUDA C++ Programming Guide, "Mathematical Functions": float expf 2 ulp, logf 1, sinf/cosf 2, powf 8, sqrtf 0 with
# -prec-sqrt=true else 1; double exp/log/sin 1, pow 2, sqrt 0; __sinf 2^-21.41 and __cosf 2^-21.19 absolute on
# [-pi, pi], __expf 2 + floor(|1.173 x|) ulp, __logf 2^-21.41 absolute on [0.5, 2], __fdividef 2 ulp for
# 2^-126 <= |y| <= 2^126.) clang links libdevice with __CUDA_PREC_SQRT off unless told, so sqrtf is the 1-ulp one.


def _unary(make, extra=(), dtype=np.float32, n: int = 512):
    def args(rng):
        x = np.asarray(make(rng, n), dtype)
        x[:len(extra)] = extra
        return [x, np.zeros(n, dtype), np.int32(n)]
    return args


def _binary(make_x, make_y, extra=(), dtype=np.float32, n: int = 512):
    def args(rng):
        x, y = np.asarray(make_x(rng, n), dtype), np.asarray(make_y(rng, n), dtype)
        for k, (u, v) in enumerate(extra):
            x[k], y[k] = u, v
        return [x, y, np.zeros(n, dtype), np.int32(n)]
    return args


def _wide(f, dtype=np.float64):
    """f on the inputs in dtype: the reference in higher precision (float64 for float32 kernels, longdouble for
    float64 ones), or the exact result when f is correctly rounded in the kernel's own type."""
    def ref(a):
        with np.errstate(all="ignore"):
            arrays = [v for v in a if isinstance(v, np.ndarray)]
            return [None] * (len(arrays) - 1) + [f(*(v.astype(dtype) for v in arrays[:-1]))]
    return ref


SPECIAL_IN = [0.0, -0.0, np.inf, -np.inf, np.nan]
_FLOAT_MATH = [
    ("expf", lambda r, n: r.uniform(-87, 88, n), [*SPECIAL_IN, 88.8, -104.0, -87.5], np.exp, 2),
    ("logf", lambda r, n: log_uniform(r, n, 1e-38, 3e38), [*SPECIAL_IN, 1.0, -1.0, 2.0**-149, 2.0**-130], np.log, 1),
    ("sinf", lambda r, n: r.uniform(-100, 100, n), [*SPECIAL_IN, 1e4, -3e4, 1.5e6], np.sin, 2),
    ("cosf", lambda r, n: r.uniform(-100, 100, n), [*SPECIAL_IN, 1e4, -3e4, 1.5e6], np.cos, 2),
    ("sqrtf", lambda r, n: log_uniform(r, n, 1e-38, 3e38), [*SPECIAL_IN, -1.0, 2.0**-149, 2.0**-140], np.sqrt, 1),
]
for _name, _make, _extra, _f, _ulp in _FLOAT_MATH:
    case(f"math.{_name}", f"m_{_name}", (2, 1, 1), (256, 1, 1), _unary(_make, _extra), _wide(_f), ulp=_ulp)
case("math.sqrtf_prec", "m_sqrtf", (2, 1, 1), (256, 1, 1),
     _unary(lambda r, n: log_uniform(r, n, 1e-38, 3e38), [*SPECIAL_IN, -1.0, 2.0**-149, 2.0**-140]),
     _wide(np.sqrt, np.float32), options=("-mllvm", "-nvvm-reflect-add=__CUDA_PREC_SQRT=1"))
_POW_SPECIAL = [(1.0, np.nan), (np.nan, 0.0), (-2.0, 3.0), (-2.0, 0.5), (0.0, -1.0), (-0.0, -1.0), (-0.0, 3.0),
                (np.inf, -1.0), (-np.inf, 3.0), (0.5, np.inf), (2.0, -np.inf)]
case("math.powf", "m_powf", (2, 1, 1), (256, 1, 1),
     _binary(lambda r, n: log_uniform(r, n, 1e-3, 1e3), lambda r, n: r.uniform(-10, 10, n), _POW_SPECIAL),
     _wide(np.power), ulp=8)
_DOUBLE_MATH = [
    ("exp", lambda r, n: r.uniform(-700, 709, n), [*SPECIAL_IN, 710.0, -745.0], np.exp, 1),
    ("log", lambda r, n: log_uniform(r, n, 1e-300, 1e300), [*SPECIAL_IN, 1.0, -1.0, 5e-324], np.log, 1),
    ("sin", lambda r, n: r.uniform(-1000, 1000, n), [*SPECIAL_IN, 1e10, -3e5], np.sin, 1),
]
for _name, _make, _extra, _f, _ulp in _DOUBLE_MATH:
    case(f"math.{_name}", f"m_{_name}", (2, 1, 1), (256, 1, 1), _unary(_make, _extra, np.float64),
         _wide(_f, np.longdouble), ulp=_ulp)
case("math.sqrt", "m_sqrt", (2, 1, 1), (256, 1, 1),
     _unary(lambda r, n: log_uniform(r, n, 1e-300, 1e300), [*SPECIAL_IN, -1.0, 5e-324], np.float64),
     _wide(np.sqrt))
case("math.pow", "m_pow", (2, 1, 1), (256, 1, 1),
     _binary(lambda r, n: log_uniform(r, n, 1e-3, 1e3), lambda r, n: r.uniform(-50, 50, n), _POW_SPECIAL, np.float64),
     _wide(np.power, np.longdouble), ulp=2)
case("math.sinf_fast", "i_sinf", (2, 1, 1), (256, 1, 1), _unary(lambda r, n: r.uniform(-np.pi, np.pi, n)),
     _wide(np.sin), atol=2**-21.41)
case("math.cosf_fast", "i_cosf", (2, 1, 1), (256, 1, 1), _unary(lambda r, n: r.uniform(-np.pi, np.pi, n)),
     _wide(np.cos), atol=2**-21.19)
case("math.expf_fast", "i_expf", (2, 1, 1), (256, 1, 1), _unary(lambda r, n: r.uniform(-10, 10, n)), _wide(np.exp),
     ulp=2 + math.floor(1.173 * 10))
case("math.logf_fast", "i_logf", (2, 1, 1), (256, 1, 1), _unary(lambda r, n: r.uniform(0.5, 2, n)), _wide(np.log),
     atol=2**-21.41)
case("math.fdividef", "i_fdividef", (2, 1, 1), (256, 1, 1),
     _binary(lambda r, n: r.standard_normal(n) * 100, lambda r, n: log_uniform(r, n, 2.0**-20, 2.0**20, signed=True)),
     _wide(np.divide), ulp=2)
