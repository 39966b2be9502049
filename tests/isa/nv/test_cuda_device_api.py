"""The CUDA device API of usergpu's CUDA prelude (isa/nv/cuda_prelude.h): vector types, integer intrinsics,
rounding conversions and bit casts, classification, cached loads and stores, warp shuffles/match/reduce, atomics,
the pipeline primitives, SIMD intrinsics and DPX functions, each compiled by compile_cuda and run on the PTX
emulator against a reference taken from its definition in CUDA's Programming Guide and Math API (edge values: NaN,
infinities, -0, INT_MIN, shift counts past 31, 0x7fff/0x8000 halfwords, ...). The kernels share one module,
compiled once per arch."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import cache

import numpy as np
import nv_corpus  # tests/kernels, on the path by tests/conftest.py
import pytest

import usergpu
from usergpu.emu.nv import launch

cases = nv_corpus.cases
pytestmark = pytest.mark.skipif(not nv_corpus.has_toolchain(), reason=nv_corpus.TOOLCHAIN)
ARCH = "sm_80"  # redux.sync and cp.async need sm_80; every later arch has them
M32, M64 = (1 << 32) - 1, (1 << 64) - 1

SOURCE = r"""
#define FULL 0xffffffffu
static __device__ int gid() { return blockIdx.x * blockDim.x + threadIdx.x; }

// every vector type's size and alignment; make_* and dim3
#define SIZES(N) o[k++] = sizeof(N##1); o[k++] = alignof(N##1); o[k++] = sizeof(N##2); o[k++] = alignof(N##2); \
  o[k++] = sizeof(N##3); o[k++] = alignof(N##3); o[k++] = sizeof(N##4); o[k++] = alignof(N##4);
extern "C" __global__ void vectors(int *o, int4 *i4, double2 *d2, uchar3 *c3, unsigned *dims) {
  int k = 0;
  SIZES(char) SIZES(uchar) SIZES(short) SIZES(ushort) SIZES(int) SIZES(uint) SIZES(long) SIZES(ulong)
  SIZES(longlong) SIZES(ulonglong) SIZES(float) SIZES(double)
  *i4 = make_int4(1, -2, 2147483647, -2147483647 - 1);
  *d2 = make_double2(-0.0, 1.5);
  *c3 = make_uchar3(255, 0, 7);
  dim3 b = blockDim, d(5), g = gridDim;
  uint3 t = threadIdx;
  unsigned v[] = {b.x, b.y, b.z, d.x, d.y, d.z, g.x, g.y, g.z, t.x, t.y, t.z};
  for (int j = 0; j < 12; j++) dims[j] = v[j];
}

extern "C" __global__ void ints(const int *a, const int *b, const unsigned *s, const long long *w,
                                const long long *z, unsigned *o, unsigned long long *o64, int n) {
  int i = gid();
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y, sh = s[i];
  long long p = w[i], q = z[i];
  unsigned *r = o + 32 * i;
  r[0] = __mul24(x, y); r[1] = __umul24(ux, uy); r[2] = __mulhi(x, y); r[3] = __umulhi(ux, uy);
  r[4] = __sad(x, y, sh); r[5] = __usad(ux, uy, sh); r[6] = __hadd(x, y); r[7] = __rhadd(x, y);
  r[8] = __uhadd(ux, uy); r[9] = __urhadd(ux, uy);
  r[10] = __funnelshift_l(ux, uy, sh); r[11] = __funnelshift_lc(ux, uy, sh);
  r[12] = __funnelshift_r(ux, uy, sh); r[13] = __funnelshift_rc(ux, uy, sh);
  r[14] = __ffs(x); r[15] = __ffsll(p); r[16] = __clz(x); r[17] = __clzll(p); r[18] = __popc(ux); r[19] = __popcll(p);
  r[20] = __brev(ux); r[21] = __byte_perm(ux, uy, sh);
  r[22] = __dp4a(x, y, (int)sh); r[23] = __dp4a(ux, uy, sh);
  r[24] = __dp2a_lo(x, y, (int)sh); r[25] = __dp2a_lo(ux, uy, sh);
  r[26] = __dp2a_hi(x, y, (int)sh); r[27] = __dp2a_hi(ux, uy, sh);
  r[28] = __dp4a(__builtin_bit_cast(char4, x), __builtin_bit_cast(char4, y), (int)sh);
  r[29] = __dp4a(__builtin_bit_cast(uchar4, x), __builtin_bit_cast(uchar4, y), sh);
  r[30] = __dp2a_lo(__builtin_bit_cast(short2, x), __builtin_bit_cast(char4, y), (int)sh);
  r[31] = __dp2a_hi(__builtin_bit_cast(ushort2, x), __builtin_bit_cast(uchar4, y), sh);
  unsigned long long *r64 = o64 + 3 * i;
  r64[0] = __mul64hi(p, q); r64[1] = __umul64hi(p, q); r64[2] = __brevll(p);
}

extern "C" __global__ void fns(const unsigned *mask, const unsigned *base, const int *offset, unsigned *o) {
  int i = gid();
  o[i] = __fns(mask[i], base[i], offset[i]);
}

// each result array holds one function's results for every thread (row j, column i)
#define ROUNDINGS(NAME, X) NAME##_rn(X), NAME##_rz(X), NAME##_ru(X), NAME##_rd(X)
#define PUT(A, O) for (int j = 0; j < (int)(sizeof(A) / sizeof(A[0])); j++) O[j * n + i] = A[j];
extern "C" __global__ void conversions(const float *f, const double *d, const long long *l, int *oi,
                                       unsigned *ou, long long *oll, unsigned long long *oull, float *of,
                                       double *od, int n) {
  int i = gid();
  if (i >= n) return;
  float x = f[i];
  double y = d[i];
  long long v = l[i];
  int ri[] = {ROUNDINGS(__float2int, x), ROUNDINGS(__double2int, y), __float_as_int(x), __double2hiint(y),
              __double2loint(y), isfinite(x), isnan(x), isinf(x), signbit(x), isfinite(y), isnan(y), isinf(y),
              signbit(y)};
  unsigned ru[] = {ROUNDINGS(__float2uint, x), ROUNDINGS(__double2uint, y), __float_as_uint(x)};
  long long rl[] = {ROUNDINGS(__float2ll, x), ROUNDINGS(__double2ll, y), __double_as_longlong(y)};
  unsigned long long rul[] = {ROUNDINGS(__float2ull, x), ROUNDINGS(__double2ull, y)};
  float rf[] = {ROUNDINGS(__double2float, y), ROUNDINGS(__int2float, (int)v), ROUNDINGS(__uint2float, (unsigned)v),
                ROUNDINGS(__ll2float, v), ROUNDINGS(__ull2float, (unsigned long long)v), __int_as_float((int)v),
                __uint_as_float((unsigned)v)};
  double rd[] = {ROUNDINGS(__ll2double, v), ROUNDINGS(__ull2double, (unsigned long long)v), __int2double_rn((int)v),
                 __uint2double_rn((unsigned)v), __longlong_as_double(v), __hiloint2double((int)(v >> 32), (int)v)};
  PUT(ri, oi) PUT(ru, ou) PUT(rl, oll) PUT(rul, oull) PUT(rf, of) PUT(rd, od)
}

// every load and store with a cache hint, for every type CUDA lists: ten elements per type, each region 16-aligned
template <class T> static __device__ void cached(const T *in, T *out) {
  out[0] = __ldg(in); out[1] = __ldcg(in + 1); out[2] = __ldca(in + 2); out[3] = __ldcs(in + 3);
  out[4] = __ldlu(in + 4); out[5] = __ldcv(in + 5);
  __stwb(out + 6, in[6]); __stcg(out + 7, in[7]); __stcs(out + 8, in[8]); __stwt(out + 9, in[9]);
}
#define CACHED(T) cached((const T *)(in + k), (T *)(out + k)); k = (k + 10 * sizeof(T) + 15) & ~15;
extern "C" __global__ void loads_stores(const char *in, char *out) {
  int k = 0;
  CACHED(char) CACHED(signed char) CACHED(unsigned char) CACHED(short) CACHED(unsigned short) CACHED(int)
  CACHED(unsigned) CACHED(long) CACHED(unsigned long) CACHED(long long) CACHED(unsigned long long) CACHED(float)
  CACHED(double) CACHED(char2) CACHED(char4) CACHED(uchar2) CACHED(uchar4) CACHED(short2) CACHED(short4)
  CACHED(ushort2) CACHED(ushort4) CACHED(int2) CACHED(int4) CACHED(uint2) CACHED(uint4) CACHED(longlong2)
  CACHED(ulonglong2) CACHED(float2) CACHED(float4) CACHED(double2)
}

// shuffles (widths 32, 16, 8, 4), match_any and match_all for each type; values travel as their bits
#define WARP(NAME, T)                                                                                          \
  extern "C" __global__ void NAME(const T *in, T *out, unsigned *masks) {                                       \
    int t = threadIdx.x, l = t & 31, pred = 7;                                                                 \
    T v = in[t], *o = out + 8 * t;                                                                             \
    o[0] = __shfl_sync(FULL, v, (l * 7 + 3) & 31); o[1] = __shfl_sync(FULL, v, l + 3, 8);                      \
    o[2] = __shfl_up_sync(FULL, v, 3); o[3] = __shfl_up_sync(FULL, v, 2, 16);                                  \
    o[4] = __shfl_down_sync(FULL, v, 5); o[5] = __shfl_down_sync(FULL, v, 1, 4);                               \
    o[6] = __shfl_xor_sync(FULL, v, 9); o[7] = __shfl_xor_sync(FULL, v, 3, 8);                                 \
    masks[3 * t] = __match_any_sync(FULL, in[64 + l % 5]);                                                     \
    masks[3 * t + 1] = __match_all_sync(FULL, in[69 + (t >= 48)], &pred);                                      \
    masks[3 * t + 2] = pred;                                                                                   \
  }
WARP(warp_int, int) WARP(warp_unsigned, unsigned) WARP(warp_long, long) WARP(warp_ulong, unsigned long)
WARP(warp_longlong, long long) WARP(warp_ulonglong, unsigned long long) WARP(warp_float, float)
WARP(warp_double, double)

// redux.sync over the lanes below `lanes` of each warp (the mask names exactly them)
extern "C" __global__ void reduce(const int *in, int *oi, unsigned *ou, int lanes) {
  int t = threadIdx.x;
  if ((t & 31) >= lanes) return;
  unsigned m = lanes == 32 ? FULL : (1u << lanes) - 1;
  int v = in[t];
  unsigned u = v;
  int ri[] = {__reduce_add_sync(m, v), __reduce_min_sync(m, v), __reduce_max_sync(m, v)};
  unsigned ru[] = {__reduce_add_sync(m, u), __reduce_min_sync(m, u), __reduce_max_sync(m, u),
                   __reduce_and_sync(m, u), __reduce_or_sync(m, u), __reduce_xor_sync(m, u)};
  for (int j = 0; j < 3; j++) oi[3 * t + j] = ri[j];
  for (int j = 0; j < 6; j++) ou[6 * t + j] = ru[j];
}

// every atomic at one scope: the read-modify-writes by every thread, exchanges that return the old values, then
// thread 0's compare-and-swaps and inc/dec past their limit
#define ATOMICS(NAME, S)                                                                                       \
  extern "C" __global__ void NAME(const int *vi, const long long *vl, const float *vf, const double *vd,        \
                                  int *gi, unsigned *gu, long long *gll, unsigned long long *gull, float *gf,   \
                                  double *gd, int *xi, unsigned *xu, unsigned long long *xull, float *xf,       \
                                  unsigned short *gs) {                                                         \
    int t = gid();                                                                                              \
    int a = vi[t];                                                                                              \
    unsigned u = a;                                                                                             \
    long long w = vl[t];                                                                                        \
    unsigned long long uw = w;                                                                                  \
    atomicAdd##S(gi, a); atomicAdd##S(gu, u); atomicAdd##S(gull, uw); atomicAdd##S(gf, vf[t]);                  \
    atomicAdd##S(gd, vd[t]); atomicSub##S(gi + 1, a); atomicSub##S(gu + 1, u);                                  \
    atomicMin##S(gi + 2, a); atomicMin##S(gu + 2, u); atomicMin##S(gll, w); atomicMin##S(gull + 1, uw);        \
    atomicMax##S(gi + 3, a); atomicMax##S(gu + 3, u); atomicMax##S(gll + 1, w); atomicMax##S(gull + 2, uw);    \
    atomicInc##S(gu + 4, 17u); atomicDec##S(gu + 5, 17u);                                                       \
    atomicAnd##S(gi + 4, a); atomicAnd##S(gu + 6, u); atomicAnd##S(gull + 3, uw);                               \
    atomicOr##S(gi + 5, a); atomicOr##S(gu + 7, u); atomicOr##S(gull + 4, uw);                                  \
    atomicXor##S(gi + 6, a); atomicXor##S(gu + 8, u); atomicXor##S(gull + 5, uw);                               \
    xi[t] = atomicExch##S(gi + 7, a); xu[t] = atomicExch##S(gu + 9, u);                                         \
    xull[t] = atomicExch##S(gull + 6, uw); xf[t] = atomicExch##S(gf + 1, vf[t]);                                \
    if (t) return;                                                                                              \
    gi[8] = atomicCAS##S(gi + 9, 5, -9); gi[10] = atomicCAS##S(gi + 11, 5, -9);                                 \
    gu[10] = atomicCAS##S(gu + 11, 5u, 9u); gu[12] = atomicCAS##S(gu + 13, 5u, 9u);                             \
    gull[7] = atomicCAS##S(gull + 8, 5ull, ~0ull); gull[9] = atomicCAS##S(gull + 10, 5ull, ~0ull);              \
    gs[0] = atomicCAS##S(gs + 1, (unsigned short)5, (unsigned short)0xffff);                                    \
    gs[3] = atomicCAS##S(gs + 4, (unsigned short)5, (unsigned short)0xffff);                                    \
    gu[14] = atomicInc##S(gu + 15, 17u); gu[16] = atomicDec##S(gu + 17, 17u); gu[18] = atomicDec##S(gu + 19, 17u); \
  }
ATOMICS(atomics_device, ) ATOMICS(atomics_block, _block) ATOMICS(atomics_system, _system)

// the pipeline primitives: a 16-byte copy with zfill 0, 4, 8 or 12 in one group, 8- and 4-byte copies in a second
extern "C" __global__ void pipeline(const int4 *src, int *out) {
  __shared__ int4 s16[64];
  __shared__ unsigned long long s8[64];
  __shared__ unsigned s4[64];
  int t = threadIdx.x;
  s16[t] = make_int4(-1, -1, -1, -1);
  s8[t] = ~0ull;
  s4[t] = ~0u;
  __syncthreads();
  __pipeline_memcpy_async(&s16[t], &src[t], 16, (t & 3) * 4);
  __pipeline_commit();
  __pipeline_memcpy_async(&s8[t], (const char *)src + 1024 + 8 * t, 8);
  __pipeline_memcpy_async(&s4[t], (const char *)src + 1536 + 4 * t, 4, t == 5 ? 4 : 0);
  __pipeline_commit();
  __pipeline_wait_prior(1);
  __pipeline_wait_prior(0);
  __syncthreads();
  int j = (t + 1) & 63, *o = out + 8 * t;  // a neighbour's copies, seen after the wait and the barrier
  o[0] = s16[j].x; o[1] = s16[j].y; o[2] = s16[j].z; o[3] = s16[j].w;
  o[4] = (int)s8[j]; o[5] = (int)(s8[j] >> 32); o[6] = s4[j];
}
"""


def source() -> str:
    """The module's kernels: SOURCE and the SIMD/DPX kernel its table writes."""
    return SOURCE + SIMD_SOURCE


@cache
def ptx() -> bytes:
    return usergpu.compile_cuda(source(), ARCH)


def run(kernel: str, args: list, block: int = 32, grid: int = 1) -> list[np.ndarray]:
    return launch(ptx(), kernel, (grid, 1, 1), (block, 1, 1), args, arch=ARCH)


def ints(a, bits: int) -> list[int]:
    """Python ints of an integer array, read as unsigned of that many bits."""
    return [int(v) & ((1 << bits) - 1) for v in np.asarray(a).ravel()]


def signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) * (v >> (bits - 1))


# ---- vector types ---------------------------------------------------------------------------------------------
# vector_types.h: (element size, alignment of the 2- and 4-element types); 1 and 3 align as their element
VECTORS = {"char": (1, 2, 4), "uchar": (1, 2, 4), "short": (2, 4, 8), "ushort": (2, 4, 8), "int": (4, 8, 16),
           "uint": (4, 8, 16), "long": (8, 16, 16), "ulong": (8, 16, 16), "longlong": (8, 16, 16),
           "ulonglong": (8, 16, 16), "float": (4, 8, 16), "double": (8, 16, 16)}


def test_vector_types_have_cudas_sizes_and_alignments_and_make_builds_them():
    o, i4, d2, c3, dims = run("vectors", [np.zeros(96, np.int32), np.zeros(4, np.int32), np.zeros(2),
                                          np.zeros(3, np.uint8), np.zeros(12, np.uint32)], block=3, grid=2)
    want = []
    for size, a2, a4 in VECTORS.values():
        want += [size, size, 2 * size, a2, 3 * size, size, 4 * size, a4]
    assert dict(zip(VECTORS, o.reshape(12, 8).tolist(), strict=True)) == dict(
        zip(VECTORS, np.reshape(want, (12, 8)).tolist(), strict=True))
    assert i4.tolist() == [1, -2, 2**31 - 1, -(2**31)]
    assert d2.tolist() == [0.0, 1.5] and math.copysign(1, d2[0]) == -1
    assert c3.tolist() == [255, 0, 7]
    # blockDim (3, 1, 1), dim3(5) = (5, 1, 1), gridDim (2, 1, 1), threadIdx of the last thread to write: any of 0..2
    assert dims[:9].tolist() == [3, 1, 1, 5, 1, 1, 2, 1, 1] and dims[9] < 3 and dims[10:].tolist() == [0, 0]


# ---- integer intrinsics ---------------------------------------------------------------------------------------
EDGE_I32 = [0, 1, -1, -(2**31), 2**31 - 1, 0x00800000, 0x00FFFFFF, 0x007FFFFF, -0x00800000, 0x55AA00FF, 0x12345678,
            -0x789ABCDF, 0x7F80807F]
EDGE_I64 = [0, 1, -1, -(2**63), 2**63 - 1, 2**32, -(2**32), 0x0123456789ABCDEF, 1 << 62, 3]


def _prmt(a: int, b: int, s: int) -> int:
    """CUDA's __byte_perm: result byte k is byte (s >> 4k) & 7 of the eight bytes b:a."""
    both = (b << 32) | a
    return sum(((both >> 8 * ((s >> 4 * k) & 7)) & 0xFF) << 8 * k for k in range(4))


def _dot(a: int, b: int, c: int, signed_: bool, pairs: int, hi: bool) -> int:
    """dp4a (pairs 4: a's and b's bytes) and dp2a (pairs 2: a's half-words with b's bytes 0-1 or 2-3), plus c."""
    wa = 32 // pairs
    ea = [(a >> wa * k) & ((1 << wa) - 1) for k in range(pairs)]
    eb = [(b >> 8 * (k + 2 * hi * (pairs == 2))) & 0xFF for k in range(pairs)]
    if signed_:
        ea, eb, c = [signed(v, wa) for v in ea], [signed(v, 8) for v in eb], signed(c, 32)
    return (sum(x * y for x, y in zip(ea, eb, strict=True)) + c) & M32


def _ints_ref(x: int, y: int, s: int, p: int, q: int) -> tuple[list[int], list[int]]:
    sx, sy, pp, qq = signed(x, 32), signed(y, 32), signed(p, 64), signed(q, 64)
    both = (y << 32) | x

    def low(v: int) -> int:
        return v & -v

    r = [signed(sx, 24) * signed(sy, 24), (x & 0xFFFFFF) * (y & 0xFFFFFF), (sx * sy) >> 32, (x * y) >> 32,
         abs(sx - sy) + s, abs(x - y) + s, (sx + sy) >> 1, (sx + sy + 1) >> 1, (x + y) >> 1, (x + y + 1) >> 1,
         (both << (s & 31)) >> 32, (both << min(s, 32)) >> 32, both >> (s & 31), both >> min(s, 32),
         low(x).bit_length(), low(p).bit_length(), 32 - x.bit_length(), 64 - p.bit_length(), x.bit_count(),
         p.bit_count(), int(f"{x:032b}"[::-1], 2), _prmt(x, y, s),
         _dot(x, y, s, True, 4, False), _dot(x, y, s, False, 4, False), _dot(x, y, s, True, 2, False),
         _dot(x, y, s, False, 2, False), _dot(x, y, s, True, 2, True), _dot(x, y, s, False, 2, True),
         _dot(x, y, s, True, 4, False), _dot(x, y, s, False, 4, False), _dot(x, y, s, True, 2, False),
         _dot(x, y, s, False, 2, True)]
    r64 = [(pp * qq) >> 64, (p * q) >> 64, int(f"{p:064b}"[::-1], 2)]
    return [v & M32 for v in r], [v & M64 for v in r64]


def test_integer_intrinsics_match_their_definitions():
    rng = np.random.default_rng(1)
    n = 96
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    a[:len(EDGE_I32)], b[:len(EDGE_I32)] = EDGE_I32, EDGE_I32[::-1]
    b[len(EDGE_I32):2 * len(EDGE_I32)] = EDGE_I32  # every edge value against itself (sad 0, hadd of equals)
    a[len(EDGE_I32):2 * len(EDGE_I32)] = EDGE_I32
    s = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    s[:40] = np.arange(40)  # shift counts 0..39 (past 31: wrap or clamp), selectors and c values with them
    s[40] = M32
    w = rng.integers(-(2**63), 2**63, n, dtype=np.int64)
    z = rng.integers(-(2**63), 2**63, n, dtype=np.int64)
    w[:len(EDGE_I64)], z[:len(EDGE_I64)] = EDGE_I64, EDGE_I64[::-1]
    o, o64 = run("ints", [a, b, s, w, z, np.zeros(32 * n, np.uint32), np.zeros(3 * n, np.uint64), np.int32(n)],
                 block=n)[5:7]
    names = ["__mul24", "__umul24", "__mulhi", "__umulhi", "__sad", "__usad", "__hadd", "__rhadd", "__uhadd",
             "__urhadd", "__funnelshift_l", "__funnelshift_lc", "__funnelshift_r", "__funnelshift_rc", "__ffs",
             "__ffsll", "__clz", "__clzll", "__popc", "__popcll", "__brev", "__byte_perm", "__dp4a",
             "__dp4a(unsigned)", "__dp2a_lo", "__dp2a_lo(unsigned)", "__dp2a_hi", "__dp2a_hi(unsigned)",
             "__dp4a(char4)", "__dp4a(uchar4)", "__dp2a_lo(short2, char4)", "__dp2a_hi(ushort2, uchar4)",
             "__mul64hi", "__umul64hi", "__brevll"]
    bad = []
    for i, args in enumerate(zip(ints(a, 32), ints(b, 32), ints(s, 32), ints(w, 64), ints(z, 64), strict=True)):
        r, r64 = _ints_ref(*args)
        got = ints(o[32 * i:32 * i + 32], 32) + ints(o64[3 * i:3 * i + 3], 64)
        bad += [(names[k], [hex(v) for v in args], hex(g), hex(e)) for k, (g, e) in enumerate(zip(got, r + r64,
                                                                                                   strict=True))
                if g != e]
    assert not bad, bad[:10]


def _fns(mask: int, base: int, offset: int) -> int:
    """PTX fns: the offset-th set bit at or past base, upwards for offset > 0, downwards for < 0; base itself for
    offset 0 when it is set; 0xffffffff when there is none."""
    if offset == 0:
        return base if mask >> base & 1 else M32
    step = 1 if offset > 0 else -1
    found = [p for p in range(base, 32 if step > 0 else -1, step) if mask >> p & 1]
    return found[abs(offset) - 1] if len(found) >= abs(offset) else M32


def test_fns_finds_the_nth_set_bit_both_ways():
    # the PTX ISA's own examples of fns
    assert [_fns(0xAAAAAAAA, b, o) for b, o in ((3, 1), (3, -1), (2, 1), (2, -1))] == [3, 3, 3, 1]
    rng = np.random.default_rng(6)
    mask = np.uint32([0xAAAAAAAA, 0xAAAAAAAA, 0xAAAAAAAA, 0xAAAAAAAA, 0, M32, 1, 1 << 31, *rng.integers(0, 2**32, 56)])
    base = np.uint32([3, 3, 2, 2, 0, 31, 0, 31, *rng.integers(0, 32, 56)])
    offset = np.int32([1, -1, 1, -1, 0, 32, 0, -1, *rng.integers(-33, 34, 56)])
    out = run("fns", [mask, base, offset, np.zeros(64, np.uint32)], block=64)[3]
    assert out.tolist() == [_fns(*map(int, v)) for v in zip(mask, base, offset, strict=True)]


# ---- SIMD intrinsics and DPX functions --------------------------------------------------------------------------
# the CUDA Math API's definitions, per lane of w bits (x, y, z: the lanes of a, b, c read as the function's signedness)
def _smax(w: int) -> int:
    return (1 << (w - 1)) - 1


def _sat(v: int, w: int, signed_: bool) -> int:
    return max(-_smax(w) - 1, min(v, _smax(w))) if signed_ else max(0, min(v, (1 << w) - 1))


def _wrap(v: int, w: int, signed_: bool) -> int:
    return signed(v, w) if signed_ else v & ((1 << w) - 1)


def _rounded_avg(s: int) -> int:
    """The signed rounded average of a sum s: s / 2 with halves rounded away from zero."""
    return (abs(s) + 1) // 2 * (1 if s >= 0 else -1)


# name without the 2/4 suffix: (lanes signed, operands, lane result); a comparison's true is -1: all of its lane's bits
SIMD_OPS = {
    "__vabs": (True, 1, lambda x, y, w: abs(x)), "__vabsss": (True, 1, lambda x, y, w: min(abs(x), _smax(w))),
    "__vneg": (True, 1, lambda x, y, w: -x), "__vnegss": (True, 1, lambda x, y, w: min(-x, _smax(w))),
    "__vabsdiffs": (True, 2, lambda x, y, w: abs(x - y)), "__vabsdiffu": (False, 2, lambda x, y, w: abs(x - y)),
    "__vadd": (False, 2, lambda x, y, w: x + y), "__vaddss": (True, 2, lambda x, y, w: _sat(x + y, w, True)),
    "__vaddus": (False, 2, lambda x, y, w: _sat(x + y, w, False)), "__vsub": (False, 2, lambda x, y, w: x - y),
    "__vsubss": (True, 2, lambda x, y, w: _sat(x - y, w, True)),
    "__vsubus": (False, 2, lambda x, y, w: _sat(x - y, w, False)),
    "__vavgs": (True, 2, lambda x, y, w: _rounded_avg(x + y)), "__vavgu": (False, 2, lambda x, y, w: (x + y + 1) >> 1),
    "__vhaddu": (False, 2, lambda x, y, w: (x + y) >> 1),
    "__vmaxs": (True, 2, lambda x, y, w: max(x, y)), "__vmaxu": (False, 2, lambda x, y, w: max(x, y)),
    "__vmins": (True, 2, lambda x, y, w: min(x, y)), "__vminu": (False, 2, lambda x, y, w: min(x, y)),
}
RELATIONS = {"eq": (False, "__eq__"), "ne": (False, "__ne__"), "ges": (True, "__ge__"), "geu": (False, "__ge__"),
             "gts": (True, "__gt__"), "gtu": (False, "__gt__"), "les": (True, "__le__"), "leu": (False, "__le__"),
             "lts": (True, "__lt__"), "ltu": (False, "__lt__")}
for _rel, (_signed, _op) in RELATIONS.items():
    SIMD_OPS[f"__vcmp{_rel}"] = (_signed, 2, lambda x, y, w, op=_op: -getattr(x, op)(y))
    SIMD_OPS[f"__vset{_rel}"] = (_signed, 2, lambda x, y, w, op=_op: int(getattr(x, op)(y)))
# DPX, name without its type: (operands, result from the lanes x, y, z of w bits, of the type's signedness)
DPX_OPS = {
    "__vimax3": (3, lambda x, y, z, w, s: max(x, y, z)), "__vimin3": (3, lambda x, y, z, w, s: min(x, y, z)),
    "__viaddmax": (3, lambda x, y, z, w, s: max(_wrap(x + y, w, s), z)),
    "__viaddmin": (3, lambda x, y, z, w, s: min(_wrap(x + y, w, s), z)),
}
DPX_TYPES = {"s32": (32, True), "u32": (32, False), "s16x2": (16, True), "u16x2": (16, False)}


def _lane_values(v: int, w: int, signed_: bool) -> list[int]:
    return [_wrap(v >> s, w, signed_) for s in range(0, 32, w)]


def _per_lane(f, w: int, signed_: bool, *words: int) -> int:
    lanes = zip(*(_lane_values(v, w, signed_) for v in words), strict=True)
    return sum((f(*xs) & ((1 << w) - 1)) << (w * k) for k, xs in enumerate(lanes))


def _sad(signed_: bool, w: int):
    return lambda a, b, c: sum(abs(x - y) for x, y in zip(_lane_values(a, w, signed_), _lane_values(b, w, signed_),
                                                            strict=True))


def _simd_table() -> dict[str, tuple[int, object]]:
    """Every SIMD and DPX function: (operands, reference(a, b, c) -> the 64-bit slot the kernel writes). __vib*'s
    slot holds the result and, from bit 32, its predicate (32-bit) or pred_lo and pred_hi (16x2)."""
    table = {}
    for name, (signed_, n, f) in SIMD_OPS.items():
        for suffix, w in (("2", 16), ("4", 8)):
            table[name + suffix] = (n, lambda a, b, c, f=f, w=w, s=signed_: _per_lane(
                lambda x, y, f=f, w=w: f(x, y, w), w, s, a, b))
    for name, signed_ in (("__vsads", True), ("__vsadu", False)):
        table[name + "2"], table[name + "4"] = (2, _sad(signed_, 16)), (2, _sad(signed_, 8))
    for ty, (w, s) in DPX_TYPES.items():
        for name, (n, f) in DPX_OPS.items():
            table[f"{name}_{ty}"] = (n, lambda a, b, c, f=f, w=w, s=s: _per_lane(
                lambda x, y, z, f=f, w=w, s=s: f(x, y, z, w, s), w, s, a, b, c))
        for name, pick, pred in (("__vibmax", max, "__ge__"), ("__vibmin", min, "__le__")):
            table[f"{name}_{ty}"] = (2, lambda a, b, c, w=w, s=s, pick=pick, pred=pred: _per_lane(
                pick, w, s, a, b) | sum(getattr(x, pred)(y) << (32 + k) for k, (x, y) in enumerate(
                    zip(_lane_values(a, w, s), _lane_values(b, w, s), strict=True))))
    for w, ty in ((32, "s32"), (16, "s16x2")):  # the _relu forms: signed only
        for name, (n, f) in DPX_OPS.items():
            table[f"{name}_{ty}_relu"] = (n, lambda a, b, c, f=f, w=w: _per_lane(
                lambda x, y, z, f=f, w=w: max(f(x, y, z, w, True), 0), w, True, a, b, c))
        for name, pick in (("__vimax", max), ("__vimin", min)):
            table[f"{name}_{ty}_relu"] = (2, lambda a, b, c, w=w, pick=pick: _per_lane(
                lambda x, y, pick=pick: max(pick(x, y), 0), w, True, a, b))
    return table


SIMD_TABLE = _simd_table()


def _simd_call(k: int, name: str, n: int) -> str:
    if name.startswith("__vib") and name.endswith("32"):
        return f"v = {name}(x, y, &p); r[{k}] = v | (unsigned long long)p << 32;"
    if name.startswith("__vib"):  # pred_lo to bit 32, pred_hi to bit 33
        return f"v = {name}(x, y, &q[1], &q[0]); r[{k}] = v | (unsigned long long)(q[0] | q[1] << 1) << 32;"
    return f"r[{k}] = (unsigned){name}({', '.join('xyz'[:n])});"


SIMD_SOURCE = f"""
// every SIMD intrinsic and DPX function of thread i's a, b and c, one 64-bit slot each
extern "C" __global__ void simd(const unsigned *a, const unsigned *b, const unsigned *c, unsigned long long *o,
                                int n) {{
  int i = gid();
  if (i >= n) return;
  unsigned x = a[i], y = b[i], z = c[i], v;
  unsigned long long *r = o + {len(SIMD_TABLE)} * i;
  bool p = false, q[2] = {{false, false}};
  {chr(10).join(_simd_call(k, name, n) for k, (name, (n, _)) in enumerate(SIMD_TABLE.items()))}
}}
"""
HALVES = [0, 1, 0x7FFF, 0x8000, 0xFFFF, 0x8001, 0x7FFE]
BYTES = [0, 1, 0x7F, 0x80, 0xFF, 0x81, 0x7E]


def _simd_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of edge halfwords (in the low lane, and swapped in the high one), of edge bytes (in lane 0, others
    beside them), of the 32-bit edge values, then random words; c: edge values in another order."""
    a, b, c = [0x1234ABA5], [0x1234ABA6], [0x00017FFF]  # the Math API's own examples of the comparisons
    for i, j in np.ndindex(7, 7):
        a.append(HALVES[i] | HALVES[j] << 16)
        b.append(HALVES[j] | HALVES[i] << 16)
        c.append(HALVES[(i + j) % 7] | HALVES[(i * j) % 7] << 16)
        a.append(BYTES[i] | BYTES[j] << 8 | BYTES[(i + 1) % 7] << 16 | BYTES[j] << 24)
        b.append(BYTES[j] | BYTES[i] << 8 | BYTES[j] << 16 | BYTES[(i + 2) % 7] << 24)
        c.append(BYTES[(i + j) % 7] * 0x01010101)
    for i, j in np.ndindex(len(EDGE_I32), len(EDGE_I32)):
        a.append(EDGE_I32[i] & M32)
        b.append(EDGE_I32[j] & M32)
        c.append(EDGE_I32[(i + 2 * j) % len(EDGE_I32)] & M32)
    rng = np.random.default_rng(7)
    n = 320
    words = [np.uint32([*v, *rng.integers(0, 2**32, n - len(v), dtype=np.uint64)]) for v in (a, b, c)]
    return words[0], words[1], words[2]


def test_simd_intrinsics_and_dpx_functions_match_their_definitions_lane_by_lane():
    a, b, c = _simd_inputs()
    n, k = len(a), len(SIMD_TABLE)
    out = run("simd", [a, b, c, np.zeros(k * n, np.uint64), np.int32(n)], block=64, grid=n // 64)[3].reshape(n, k)
    names = list(SIMD_TABLE)
    bad = [(name, hex(x), hex(y), hex(z), hex(got), hex(want))
           for i, (x, y, z) in enumerate(zip(ints(a, 32), ints(b, 32), ints(c, 32), strict=True))
           for name, got in zip(names, ints(out[i], 64), strict=True)
           if got != (want := SIMD_TABLE[name][1](x, y, z))]
    assert not bad, (len(bad), bad[:10])
    # the Math API's examples: a = 0x1234aba5, b = 0x1234aba6 (the low halfword and byte of a are smaller)
    row = dict(zip(names, ints(out[0], 64), strict=True))
    assert [row[f] for f in ("__vcmpeq2", "__vcmpeq4", "__vcmpges2", "__vcmpges4", "__vcmpgts2", "__vcmples2",
                             "__vcmplts2", "__vcmplts4", "__vcmpne4")] == [
        0xFFFF0000, 0xFFFFFF00, 0xFFFF0000, 0xFFFFFF00, 0, 0xFFFFFFFF, 0x0000FFFF, 0x000000FF, 0x000000FF]
    assert len(names) == 82 + 36  # the Math API's SIMD intrinsics and DPX functions


# ---- conversions, bit casts, classification ------------------------------------------------------------------
F32 = [*cases.F32_SPECIALS.tolist(), 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2147483520.0, -2147483648.0, 2147483648.0,
       4294967040.0, 4294967296.0, 9.2233715e18, 9.223372e18, -9.223372e18, 1.8446743e19, 1.8446744e19, -0.75,
       16777216.0, 1e10]
F64 = [0.0, -0.0, math.inf, -math.inf, math.nan, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2147483647.5, 2147483647.49,
       -2147483648.5, -2147483648.4, 4294967295.5, 4294967295.4, 2.0**63, -(2.0**63), 2.0**64, 2.0**64 - 2048,
       -(2.0**63) - 2048, 1e300, -1e300, 5e-324, -5e-324, 3.4028235677973366e38, 3.4028235677973362e38,
       3.4028234663852886e38 + 2.0**103, 1.401298464324817e-45, 1.401298464324817e-45 * 1.5, 7e-46, -7e-46,
       0.1, -0.1, 1.0 + 2.0**-30, -(1.0 + 2.0**-24 + 2.0**-40), 2.0**-1074, 16777217.0]
LL = [0, 1, -1, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**31 - 1, -(2**31), 2**32 - 1, 2**53 + 1, -(2**53 + 1),
      2**63 - 1, -(2**63), 2**62 + 2**40 + 1, -(2**62 + 2**38 + 2**37), 0x7FF8000000000001, 0x7FF0000000000000,
      0x3FF0000000000000, 0x00000001FFFFFFFF, 0x8000000080000000 - 2**64, 0x4B000001]
ROUND = {"rn": round, "rz": math.trunc, "ru": math.ceil, "rd": math.floor}


def _directed(exact: Fraction, nearest, mode: str):
    """The result in a directed rounding from the round-to-nearest one: it or its neighbour on the exact value's
    far side (nextafter reaches infinity past the largest finite value, and -0 from a tiny negative)."""
    nearest = nearest.dtype.type(nearest)
    if mode == "rn" or (np.isfinite(nearest) and Fraction(float(nearest)) == exact):
        return nearest
    above = nearest > 0 if np.isinf(nearest) else Fraction(float(nearest)) > exact
    with np.errstate(over="ignore"):
        other = np.nextafter(nearest, nearest.dtype.type(-np.inf if above else np.inf))
    down, up = (other, nearest) if above else (nearest, other)
    return {"ru": up, "rd": down, "rz": down if exact > 0 else up}[mode]


def _to_float(v, mode: str, dtype):
    """A finite value or integer rounded to float32 or float64 in a rounding mode (specials pass through)."""
    if isinstance(v, float) and not math.isfinite(v):
        return dtype(v)
    exact = Fraction(v)
    nearest = cases.round_f32_full(exact) if dtype is np.float32 else np.float64(exact.numerator / exact.denominator)
    if exact == 0:
        return dtype(v)  # keeps -0
    return _directed(exact, nearest, mode)


def _to_int(values, mode: str, dtype, double: bool) -> np.ndarray:
    return cases._cvt(values, lambda v: ROUND[mode](Fraction(float(v))), dtype, double)


def test_conversions_round_as_named_and_bit_casts_and_classification_keep_every_bit():
    # NaN converts to a NaN (PTX's canonical one) between floats, to 0 or 1 << (width - 1) into integers
    n = max(len(F32), len(F64), len(LL))
    f = np.resize(np.float32(F32), n)
    d = np.resize(np.float64(F64), n)
    ll = np.resize(np.int64(LL), n)
    oi, ou, oll, oull, of, od = run("conversions", [f, d, ll, np.zeros(21 * n, np.int32), np.zeros(9 * n, np.uint32),
                                                    np.zeros(9 * n, np.int64), np.zeros(8 * n, np.uint64),
                                                    np.zeros(22 * n, np.float32), np.zeros(12 * n),
                                                    np.int32(n)], block=n)[3:9]
    modes = list(ROUND)
    xs, ys, ls = f.astype(np.float64), d, ints(ll, 64)
    want_i = [_to_int(v, m, t, dbl) for t in (np.int32, np.uint32, np.int64, np.uint64)
              for v, dbl in ((xs, False), (ys, True)) for m in modes]
    check = {"int": (oi, [*want_i[:8], f.view(np.int32), (d.view(np.int64) >> 32).astype(np.int32),
                          d.view(np.int64).astype(np.int32), np.isfinite(f), np.isnan(f), np.isinf(f),
                          np.signbit(f), np.isfinite(d), np.isnan(d), np.isinf(d), np.signbit(d)]),
             "uint": (ou, [*want_i[8:16], f.view(np.uint32)]),
             "ll": (oll, [*want_i[16:24], d.view(np.int64)]), "ull": (oull, want_i[24:32])}
    for name, (got, want) in check.items():
        got = got.reshape(-1, n)
        bad = [(row, i, f[i], d[i], got[row, i], w[i]) for row, w in enumerate(want)
               for i in range(n) if got[row, i] != np.asarray(w).astype(got.dtype)[i]]
        assert not bad, (name, bad[:8])
    srcs = [[float(v) for v in d], [signed(v, 32) for v in ls], [v & M32 for v in ls], [signed(v, 64) for v in ls],
            ls]
    want_f = [[_to_float(v, m, np.float32) for v in src] for src in srcs for m in modes]
    want_f += [list(ll.astype(np.uint32).view(np.float32))] * 2
    want_d = [[_to_float(v, m, np.float64) for v in src] for src in srcs[3:] for m in modes]
    want_d += [[float(signed(v, 32)) for v in ls], [float(v & M32) for v in ls],
               list(ll.view(np.float64)), list(ll.view(np.float64))]
    for got, want, dt in ((of, want_f, np.float32), (od, want_d, np.float64)):
        got = got.reshape(-1, n)
        want = np.array(want, dt)
        converted = np.arange(len(want))[:, None] < len(want) - 2  # the last two rows are bit casts
        same = (got.view(f"u{got.itemsize}") == want.view(f"u{got.itemsize}")) | (
            np.isnan(got) & np.isnan(want) & converted)
        bad = np.argwhere(~same)
        assert not len(bad), [(r, i, got[r, i], want[r, i]) for r, i in bad[:8]]


# ---- cached loads and stores ----------------------------------------------------------------------------------
# the sizes of the types loads_stores copies, in its order
LDST_SIZES = [1, 1, 1, 2, 2, 4, 4, 8, 8, 8, 8, 4, 8, 2, 4, 2, 4, 4, 8, 4, 8, 8, 16, 8, 16, 16, 16, 8, 16, 16]
CACHE_HINTS = ["ld.global.nc", "ld.global.cg", "ld.global.ca", "ld.global.cs", "ld.global.lu", "ld.global.cv",
               "st.global.wb", "st.global.cg", "st.global.cs", "st.global.wt"]


def test_cache_hint_loads_and_stores_move_every_byte_of_every_type_and_no_other():
    starts = [0]
    for size in LDST_SIZES:
        starts.append((starts[-1] + 10 * size + 15) & ~15)
    src = np.random.default_rng(2).integers(-128, 128, starts[-1] + 64, dtype=np.int8)
    out = run("loads_stores", [src, np.full(len(src), -91, np.int8)], block=1)[1]
    want = np.full(len(src), -91, np.int8)
    for k, size in zip(starts, LDST_SIZES, strict=False):
        want[k:k + 10 * size] = src[k:k + 10 * size]
    assert np.array_equal(out, want), np.flatnonzero(out != want)[:16]
    text = ptx().decode()
    for hint in CACHE_HINTS:  # each lowers to its PTX cache operator, for 1, 2, 4, 8 and 16 bytes
        assert {w for w in ("u8", "u16", "u32", "u64", "v2.u64") if f"{hint}.{w} " in text} == {
            "u8", "u16", "u32", "u64", "v2.u64"}, hint


# ---- warp functions -------------------------------------------------------------------------------------------
# each kernel's element type as numpy's; the values are made and compared as unsigned bits of that size
WARP_TYPES = {"int": np.int32, "unsigned": np.uint32, "long": np.int64, "ulong": np.uint64, "longlong": np.int64,
              "ulonglong": np.uint64, "float": np.float32, "double": np.float64}


def _shuffle_sources(lane: int) -> list[int]:
    """The lane each of the warp kernel's eight shuffles reads, by CUDA's definitions (sub-warps of `width`)."""
    def idx(src: int, w: int) -> int:
        return lane - lane % w + src % w

    def up(d: int, w: int) -> int:
        return lane - d if lane % w >= d else lane

    def down(d: int, w: int) -> int:
        return lane + d if lane % w + d < w else lane

    return [idx((lane * 7 + 3) & 31, 32), idx(lane + 3, 8), up(3, 32), up(2, 16), down(5, 32), down(1, 4),
            lane ^ 9, lane ^ 3]


@pytest.mark.parametrize("name", list(WARP_TYPES))
def test_warp_shuffles_and_matches_carry_every_bit_of_each_type(name):
    dtype = WARP_TYPES[name]
    bits = np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64
    rng = np.random.default_rng(3)
    v = rng.integers(0, np.iinfo(bits).max, 71, dtype=np.uint64).astype(bits)
    nan = {np.uint32: [0x7FC00000, 0, 0x7FC00000, 0x80000000, 0x7FC00001],
           np.uint64: [0x7FF8000000000000, 0, 0x7FF8000000000000, 1 << 63, 0x7FF8000000000001]}[bits]
    v[64:69] = nan  # match compares bits: equal NaNs match, +0 and -0 do not
    v[69], v[70] = v[64], v[65]
    v[:4] = [v[4] ^ (1 << 40 if bits is np.uint64 else 1 << 20)] * 4  # values differing in one half only
    out, masks = run(f"warp_{name}", [v.view(dtype), np.zeros(8 * 64, dtype), np.zeros(3 * 64, np.uint32)],
                     block=64)[1:]
    out = out.view(bits)
    want = [v[32 * (t // 32) + s] for t in range(64) for s in _shuffle_sources(t % 32)]
    assert out.tolist() == [int(x) for x in want]
    any_ = [sum(1 << k for k in range(32) if v[64 + k % 5] == v[64 + lane % 5]) for lane in range(32)]
    # match_all: warp 0 passes one value, warp 1 two (lanes 16..31 differ): the full mask and 1, or 0 and 0
    want_masks = [[any_[t % 32], M32 if t < 32 else 0, 1 if t < 32 else 0] for t in range(64)]
    assert masks.reshape(64, 3).tolist() == want_masks


def test_reduce_sync_over_full_and_partial_warps():
    rng = np.random.default_rng(4)
    v = rng.integers(-(2**31), 2**31, 64, dtype=np.int64).astype(np.int32)
    v[:6] = [-(2**31), 2**31 - 1, -1, 0, 2**31 - 1, 2**30]  # sums that wrap, signed and unsigned extremes
    for lanes in (32, 20):
        oi, ou = run("reduce", [v, np.zeros(3 * 64, np.int32), np.zeros(6 * 64, np.uint32), np.int32(lanes)],
                     block=64)[1:3]
        for t in range(64):
            group = [int(x) for x in v[t - t % 32:t - t % 32 + lanes]]
            u = [x & M32 for x in group]
            if t % 32 >= lanes:
                assert oi[3 * t:3 * t + 3].tolist() == [0] * 3
                continue
            assert oi[3 * t:3 * t + 3].tolist() == [signed(sum(group), 32), min(group), max(group)], (lanes, t)
            assert ou[6 * t:6 * t + 6].tolist() == [sum(u) & M32, min(u), max(u), _fold(u, "&"),
                                                    _fold(u, "|"), _fold(u, "^")], (lanes, t)


def _fold(values: list[int], op: str) -> int:
    acc = {"&": M32, "|": 0, "^": 0}[op]
    for x in values:
        acc = {"&": acc & x, "|": acc | x, "^": acc ^ x}[op]
    return acc


# ---- atomics --------------------------------------------------------------------------------------------------
def _atomic_args(rng, n: int) -> list[np.ndarray]:
    vi = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    vi[:3] = [-(2**31), 2**31 - 1, -1]
    vl = rng.integers(-(2**63), 2**63, n, dtype=np.int64)
    vl[:3] = [-(2**63), 2**63 - 1, -1]
    vf = np.float32(rng.integers(-1000, 1000, n))  # sums of small integers are exact in any order
    vd = rng.integers(-(2**40), 2**40, n) * 2.0**-20
    gi = np.int32([7, 7, 0, 0, -1, 0, 0, 11, 0, 5, 0, 6])
    gu = np.uint32([7, 7, M32, 0, 3, 3, M32, 0, 0, 11, 0, 5, 0, 7, 0, 100, 0, 100, 0, 0])
    gll, gull = np.int64([2**63 - 1, -(2**63)]), np.uint64([7, M64, 0, M64, 0, 0, 11, 0, 5, 0, 6])
    gs = np.uint16([0, 5, 0x1234, 0, 6, 0x1234])
    return [vi, vl, vf, vd, gi, gu, gll, gull, np.float32([0.5, 2.5]), np.float64([0.25]), np.zeros(n, np.int32),
            np.zeros(n, np.uint32), np.zeros(n, np.uint64), np.zeros(n, np.float32), gs]


def _fold_all(start: int, values: list[int], op) -> int:
    for v in values:
        start = op(start, v)
    return start


@pytest.mark.parametrize("scope", ["device", "block", "system"])
def test_every_atomic_overload_gives_the_order_free_result(scope):
    n = 128
    args = _atomic_args(np.random.default_rng(5), n)
    vi, vl, vf, vd, gi0, gu0, gll0, gull0, gf0, gd0 = args[:10]
    gi, gu, gll, gull, gf, gd, xi, xu, xull, xf, gs = run(f"atomics_{scope}", args, block=n)[4:]
    a = [int(x) for x in vi]
    u, w, uw = [x & M32 for x in a], [int(x) for x in vl], [int(x) & M64 for x in vl]
    i0, u0, ull0 = [int(x) for x in gi0], [int(x) for x in gu0], [int(x) for x in gull0]
    assert gi.tolist() == [signed(i0[0] + sum(a), 32), signed(i0[1] - sum(a), 32), min(a + [0]), max(a + [0]),
                           _fold_all(-1, a, int.__and__), _fold_all(0, a, int.__or__), _fold_all(0, a, int.__xor__),
                           gi[7], 5, -9, 6, 6]
    assert gu.tolist() == [(u0[0] + sum(u)) & M32, (u0[1] - sum(u)) & M32, min(u), max(u), (3 + n) % 18,
                           (3 - n) % 18, _fold_all(M32, u, int.__and__), _fold_all(0, u, int.__or__),
                           _fold_all(0, u, int.__xor__), gu[9], 5, 9, 7, 7, 100, 0, 100, 17, 0, 17]
    assert gll.tolist() == [min(w), max(w)]
    assert gull.tolist() == [(ull0[0] + sum(uw)) & M64, min(uw), max(uw), _fold_all(M64, uw, int.__and__),
                             _fold_all(0, uw, int.__or__), _fold_all(0, uw, int.__xor__), gull[6], 5, M64, 6, 6]
    assert gf[0] == gf0[0] + vf.astype(np.float64).sum() and gd[0] == gd0[0] + vd.sum()
    assert gs.tolist() == [5, 0xFFFF, 0x1234, 6, 6, 0x1234]  # 16-bit CAS leaves its neighbour alone
    # an exchange chain: the old values returned and the last value stored are the first value and those written
    for olds, last, first, written in ((xi, gi[7], gi0[7], vi), (xu, gu[9], gu0[9], vi.view(np.uint32)),
                                       (xull, gull[6], gull0[6], vl.view(np.uint64)), (xf, gf[1], gf0[1], vf)):
        assert sorted([*olds.tolist(), last]) == sorted([*written.tolist(), first])


@pytest.mark.parametrize(("scope", "ptx_scope"), [("block", "cta"), ("system", "sys")])
def test_scoped_atomics_lower_to_their_scope_and_unsigned_ones_compare_unsigned(scope, ptx_scope):
    body = re.search(rf"\.entry atomics_{scope}\((.*?)^}}", ptx().decode(), re.S | re.M).group(1)
    ops = re.findall(r"\batom\.([\w.]+)", body)
    assert len(ops) >= 32 and all(op.startswith(f"{ptx_scope}.") for op in ops), ops
    assert {op for op in ops if ".min." in op or ".max." in op} == {
        f"{ptx_scope}.{m}.{t}" for m in ("min", "max") for t in ("s32", "u32", "s64", "u64")}


# ---- pipeline primitives --------------------------------------------------------------------------------------
def test_pipeline_memcpy_async_copies_zero_fills_and_waits_for_its_groups():
    src = np.arange(512, dtype=np.int32) * 3 - 700
    out = run("pipeline", [src, np.zeros(512, np.int32)], block=64)[1].reshape(64, 8)
    for t in range(64):
        j = (t + 1) % 64
        copied = 4 - j % 4  # zfill (j % 4) * 4 bytes
        want = [*src[4 * j:4 * j + copied], *[0] * (4 - copied), src[256 + 2 * j], src[257 + 2 * j],
                0 if j == 5 else src[384 + j], 0]
        assert out[t].tolist() == want, t
    text = ptx().decode()
    for line in ("cp.async.cg.shared.global [%rd{}], [%rd{}], 16, %r{};", "cp.async.ca.shared.global [%rd{}], "
                 "[%rd{}], 8, %r{};", "cp.async.commit_group;", "cp.async.wait_group 1;", "cp.async.wait_group 0;"):
        assert re.search(re.escape(line).replace(r"\{\}", r"\d+"), text), line


@pytest.mark.parametrize(("call", "why"), [("__pipeline_memcpy_async(d, s, 12)", "copies 4, 8 or 16 bytes"),
                                           ("__pipeline_memcpy_async(d, s, 8, 9)", "zfill is more than")])
def test_a_pipeline_copy_of_a_size_cp_async_lacks_is_a_compile_error(call, why):
    src = f"extern \"C\" __global__ void k(const int *s) {{ __shared__ int d[4]; {call}; }}"
    with pytest.raises(usergpu.CompileError, match=why):
        usergpu.compile_cuda(src, ARCH)


@pytest.mark.skipif(not nv_corpus.tool("bin/ptxas"), reason=nv_corpus.TOOLCHAIN)
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_api_kernels_assemble_with_ptxas(arch):
    """ptxas accepts the PTX the prelude's inline asm writes (cache operators, shf.clamp, dp2a, cp.async, atom)."""
    text = usergpu.compile_cuda(source(), arch)
    elf = usergpu.assemble_ptx(text, arch)
    assert elf[:4] == b"\x7fELF" and all(f".text.{k}\0".encode() in elf for k in ("pipeline", "atomics_system", "simd"))
