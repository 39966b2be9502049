// usergpu's CUDA prelude: what CUDA C device code needs when clang-22 compiles it with no CUDA toolkit
// (-nocudainc). The qualifiers, clang's own built-in variables (threadIdx, blockIdx, ...), and CUDA's device API:
// vector types, integer intrinsics, rounding conversions, cached loads and stores, warp functions, atomics, the
// pipeline primitives, SIMD intrinsics and DPX functions, written over clang's __nvvm_* builtins or inline PTX where
// clang has no builtin (the SIMD and DPX ones in plain C).
// Math functions (expf, sinf, ...) are NVIDIA's libdevice (__nv_*), linked when a kernel calls them.
#pragma once
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#include <__clang_cuda_builtin_vars.h>
#define __UG static __device__ __forceinline__

typedef unsigned long long __ug_u64;

// synchronization and fences
__UG void __syncwarp(unsigned mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }
__UG int __syncthreads_count(int p) { return __nvvm_bar0_popc(p); }
__UG int __syncthreads_and(int p) { return __nvvm_bar0_and(p); }
__UG int __syncthreads_or(int p) { return __nvvm_bar0_or(p); }
__UG void __threadfence_block(void) { __nvvm_membar_cta(); }
__UG void __threadfence(void) { __nvvm_membar_gl(); }
__UG void __threadfence_system(void) { __nvvm_membar_sys(); }

// CUDA's built-in vector types (vector_types.h): the 2- and 4-element ones aligned to their size (at most 16 bytes),
// the 1- and 3-element ones to their element; make_<type>(...) builds each
#define __UG_VEC(N, T, A2, A4)                                                                                   \
  struct N##1 { T x; };                                                                                          \
  struct __attribute__((aligned(A2))) N##2 { T x, y; };                                                          \
  struct N##3 { T x, y, z; };                                                                                    \
  struct __attribute__((aligned(A4))) N##4 { T x, y, z, w; };                                                    \
  static __host__ __device__ inline N##1 make_##N##1(T x) { return {x}; }                                        \
  static __host__ __device__ inline N##2 make_##N##2(T x, T y) { return {x, y}; }                                \
  static __host__ __device__ inline N##3 make_##N##3(T x, T y, T z) { return {x, y, z}; }                        \
  static __host__ __device__ inline N##4 make_##N##4(T x, T y, T z, T w) { return {x, y, z, w}; }
__UG_VEC(char, signed char, 2, 4) __UG_VEC(uchar, unsigned char, 2, 4)
__UG_VEC(short, short, 4, 8) __UG_VEC(ushort, unsigned short, 4, 8)
__UG_VEC(int, int, 8, 16) __UG_VEC(uint, unsigned, 8, 16)
__UG_VEC(long, long, 16, 16) __UG_VEC(ulong, unsigned long, 16, 16)
__UG_VEC(longlong, long long, 16, 16) __UG_VEC(ulonglong, unsigned long long, 16, 16)
__UG_VEC(float, float, 8, 16) __UG_VEC(double, double, 16, 16)
#undef __UG_VEC

// dim3 (a uint3 whose unnamed components are 1) and the uint3 and dim3 that threadIdx ... gridDim convert to
struct dim3 {
  unsigned x, y, z;
  __host__ __device__ constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3() const { return {x, y, z}; }
};
#define __UG_BUILTIN_VAR(V)                                                                                      \
  __device__ inline __cuda_builtin_##V##_t::operator uint3() const { return {x, y, z}; }                       \
  __device__ inline __cuda_builtin_##V##_t::operator dim3() const { return {x, y, z}; }
__UG_BUILTIN_VAR(threadIdx) __UG_BUILTIN_VAR(blockIdx) __UG_BUILTIN_VAR(blockDim) __UG_BUILTIN_VAR(gridDim)
#undef __UG_BUILTIN_VAR

// warp vote, match, reduce and shuffle, for every type CUDA has them (64-bit values as two 32-bit halves)
struct __ug_halves { unsigned lo, hi; };
__UG unsigned __activemask(void) { return __nvvm_activemask(); }
__UG unsigned __ballot_sync(unsigned m, int p) { return __nvvm_vote_ballot_sync(m, p); }
__UG int __any_sync(unsigned m, int p) { return __nvvm_vote_any_sync(m, p); }
__UG int __all_sync(unsigned m, int p) { return __nvvm_vote_all_sync(m, p); }
__UG int __uni_sync(unsigned m, int p) { return __nvvm_vote_uni_sync(m, p); }
// width: the sub-warp size; the builtins' c operand packs 32 - width (segment mask) and the lane clamp
#define __UG_SHFL(NAME, BUILTIN, LANE, CLAMP)                                                                    \
  template <class T> __UG T __ug##NAME(unsigned m, T v, LANE l, int w) {                                        \
    int c = ((32 - w) << 8) | CLAMP;                                                                             \
    if constexpr (sizeof(T) == 4) {                                                                              \
      return __builtin_bit_cast(T, BUILTIN(m, __builtin_bit_cast(int, v), l, c));                                \
    } else {                                                                                                     \
      __ug_halves h = __builtin_bit_cast(__ug_halves, v);                                                        \
      h = {(unsigned)BUILTIN(m, (int)h.lo, l, c), (unsigned)BUILTIN(m, (int)h.hi, l, c)};                        \
      return __builtin_bit_cast(T, h);                                                                           \
    }                                                                                                            \
  }
__UG_SHFL(__shfl_sync, __nvvm_shfl_sync_idx_i32, int, 0x1f)
__UG_SHFL(__shfl_up_sync, __nvvm_shfl_sync_up_i32, unsigned, 0)
__UG_SHFL(__shfl_down_sync, __nvvm_shfl_sync_down_i32, unsigned, 0x1f)
__UG_SHFL(__shfl_xor_sync, __nvvm_shfl_sync_bfly_i32, int, 0x1f)
#undef __UG_SHFL
template <class T> __UG unsigned __ug_match_any(unsigned m, T v) {
  if constexpr (sizeof(T) == 4) return __nvvm_match_any_sync_i32(m, __builtin_bit_cast(unsigned, v));
  else return __nvvm_match_any_sync_i64(m, __builtin_bit_cast(long long, v));
}
template <class T> __UG unsigned __ug_match_all(unsigned m, T v, int *pred) {
  if constexpr (sizeof(T) == 4) return __nvvm_match_all_sync_i32p(m, __builtin_bit_cast(unsigned, v), pred);
  else return __nvvm_match_all_sync_i64p(m, __builtin_bit_cast(long long, v), pred);
}
#define __UG_WARP(T)                                                                                             \
  __UG T __shfl_sync(unsigned m, T v, int l, int w = 32) { return __ug__shfl_sync(m, v, l, w); }                 \
  __UG T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) { return __ug__shfl_up_sync(m, v, d, w); }      \
  __UG T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) { return __ug__shfl_down_sync(m, v, d, w); }  \
  __UG T __shfl_xor_sync(unsigned m, T v, int l, int w = 32) { return __ug__shfl_xor_sync(m, v, l, w); }         \
  __UG unsigned __match_any_sync(unsigned m, T v) { return __ug_match_any(m, v); }                               \
  __UG unsigned __match_all_sync(unsigned m, T v, int *pred) { return __ug_match_all(m, v, pred); }
__UG_WARP(int) __UG_WARP(unsigned) __UG_WARP(long) __UG_WARP(unsigned long) __UG_WARP(long long)
__UG_WARP(unsigned long long) __UG_WARP(float) __UG_WARP(double)
#undef __UG_WARP
// redux.sync (sm_80): add, min and max for int and unsigned, the bitwise ones for unsigned
#define __UG_REDUCE(OP, T, BUILTIN) __UG T __reduce_##OP##_sync(unsigned m, T v) { return BUILTIN(v, m); }
__UG_REDUCE(add, int, __nvvm_redux_sync_add) __UG_REDUCE(add, unsigned, __nvvm_redux_sync_add)
__UG_REDUCE(min, int, __nvvm_redux_sync_min) __UG_REDUCE(min, unsigned, __nvvm_redux_sync_umin)
__UG_REDUCE(max, int, __nvvm_redux_sync_max) __UG_REDUCE(max, unsigned, __nvvm_redux_sync_umax)
__UG_REDUCE(and, unsigned, __nvvm_redux_sync_and) __UG_REDUCE(or, unsigned, __nvvm_redux_sync_or)
__UG_REDUCE(xor, unsigned, __nvvm_redux_sync_xor)
#undef __UG_REDUCE

// integer intrinsics (CUDA Math API)
__UG int __popc(unsigned x) { return __builtin_popcount(x); }
__UG int __popcll(__ug_u64 x) { return __builtin_popcountll(x); }
__UG int __clz(int x) { return x ? __builtin_clz(x) : 32; }
__UG int __clzll(long long x) { return x ? __builtin_clzll(x) : 64; }
__UG unsigned __brev(unsigned x) { return __builtin_bitreverse32(x); }
__UG __ug_u64 __brevll(__ug_u64 x) { return __builtin_bitreverse64(x); }
__UG int __ffs(int x) { return x ? __builtin_ctz(x) + 1 : 0; }
__UG int __ffsll(long long x) { return x ? __builtin_ctzll(x) + 1 : 0; }
__UG int __mul24(int a, int b) { return __nvvm_mul24_i(a, b); }
__UG unsigned __umul24(unsigned a, unsigned b) { return __nvvm_mul24_ui(a, b); }
__UG int __mulhi(int a, int b) { return __nvvm_mulhi_i(a, b); }
__UG unsigned __umulhi(unsigned a, unsigned b) { return __nvvm_mulhi_ui(a, b); }
__UG long long __mul64hi(long long a, long long b) { return __nvvm_mulhi_ll(a, b); }
__UG __ug_u64 __umul64hi(__ug_u64 a, __ug_u64 b) { return __nvvm_mulhi_ull(a, b); }
__UG unsigned __sad(int a, int b, unsigned c) { return (unsigned)__nvvm_sad_i(a, b, (int)c); }
__UG unsigned __usad(unsigned a, unsigned b, unsigned c) { return __nvvm_sad_ui(a, b, c); }
// halving adds: the sum taken in 64 bits cannot overflow
__UG int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
__UG int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
__UG unsigned __uhadd(unsigned a, unsigned b) { return (unsigned)(((__ug_u64)a + b) >> 1); }
__UG unsigned __urhadd(unsigned a, unsigned b) { return (unsigned)(((__ug_u64)a + b + 1) >> 1); }
// __byte_perm reads 3 bits of each of the low 4 selector nibbles; PTX prmt would read bit 3 as "replicate the sign"
__UG unsigned __byte_perm(unsigned a, unsigned b, unsigned s) { return __nvvm_prmt(a, b, s & 0x7777u); }
// the position of the offset-th set bit of mask counted from bit base, upwards (offset > 0) or downwards (< 0)
__UG unsigned __fns(unsigned mask, unsigned base, int offset) { return __nvvm_fns(mask, base, offset); }
// funnel shifts of hi:lo: _l/_r take the shift modulo 32 (shf.*.wrap), _lc/_rc clamp it to 32 (shf.*.clamp)
__UG unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) { return __builtin_elementwise_fshl(hi, lo, s); }
__UG unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) { return __builtin_elementwise_fshr(hi, lo, s); }
__UG unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
  unsigned d;
  asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(lo), "r"(hi), "r"(s));
  return d;
}
__UG unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
  unsigned d;
  asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(lo), "r"(hi), "r"(s));
  return d;
}
// dot products of bytes (dp4a) and of half-words with the low or high bytes (dp2a), accumulated into c
#define __UG_DOT(NAME, PTX, T)                                                                                \
  __UG T NAME(T a, T b, T c) {                                                                                   \
    T d;                                                                                                         \
    asm(PTX " %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));                                              \
    return d;                                                                                                    \
  }
__UG_DOT(__dp4a, "dp4a.s32.s32", int) __UG_DOT(__dp4a, "dp4a.u32.u32", unsigned)
__UG_DOT(__dp2a_lo, "dp2a.lo.s32.s32", int) __UG_DOT(__dp2a_lo, "dp2a.lo.u32.u32", unsigned)
__UG_DOT(__dp2a_hi, "dp2a.hi.s32.s32", int) __UG_DOT(__dp2a_hi, "dp2a.hi.u32.u32", unsigned)
#undef __UG_DOT
__UG int __dp4a(char4 a, char4 b, int c) { return __dp4a(__builtin_bit_cast(int, a), __builtin_bit_cast(int, b), c); }
__UG unsigned __dp4a(uchar4 a, uchar4 b, unsigned c) {
  return __dp4a(__builtin_bit_cast(unsigned, a), __builtin_bit_cast(unsigned, b), c);
}
#define __UG_DOT2(NAME)                                                                                          \
  __UG int NAME(short2 a, char4 b, int c) { return NAME(__builtin_bit_cast(int, a), __builtin_bit_cast(int, b), c); } \
  __UG unsigned NAME(ushort2 a, uchar4 b, unsigned c) {                                                          \
    return NAME(__builtin_bit_cast(unsigned, a), __builtin_bit_cast(unsigned, b), c);                            \
  }
__UG_DOT2(__dp2a_lo) __UG_DOT2(__dp2a_hi)
#undef __UG_DOT2

// single-instruction float intrinsics (approximate, as CUDA documents them)
__UG float __fdividef(float a, float b) { return __nvvm_div_approx_f(a, b); }
__UG float __expf(float x) { return __nvvm_ex2_approx_f(x * 1.4426950408889634f); }
__UG float __exp2f(float x) { return __nvvm_ex2_approx_f(x); }
__UG float __logf(float x) { return __nvvm_lg2_approx_f(x) * 0.6931471805599453f; }
__UG float __log2f(float x) { return __nvvm_lg2_approx_f(x); }
__UG float __sinf(float x) { return __nvvm_sin_approx_f(x); }
__UG float __cosf(float x) { return __nvvm_cos_approx_f(x); }
__UG float __frcp_rn(float x) { return __nvvm_rcp_rn_f(x); }
__UG float __fsqrt_rn(float x) { return __nvvm_sqrt_rn_f(x); }
__UG float __frsqrt_rn(float x) { return 1.0f / __nvvm_sqrt_rn_f(x); }
__UG float __saturatef(float x) { return __nvvm_saturate_f(x); }
__UG float __fmaf_rn(float a, float b, float c) { return __nvvm_fma_rn_f(a, b, c); }

// CUDA's math library: libdevice's __nv_<name>f (float) and __nv_<name> (double)
#define __UG_MATH1(NAME)                                                                                         \
  extern "C" __device__ float __nv_##NAME##f(float);                                                             \
  extern "C" __device__ double __nv_##NAME(double);                                                              \
  __UG float NAME##f(float x) { return __nv_##NAME##f(x); }                                                      \
  __UG double NAME(double x) { return __nv_##NAME(x); }
#define __UG_MATH2(NAME)                                                                                         \
  extern "C" __device__ float __nv_##NAME##f(float, float);                                                      \
  extern "C" __device__ double __nv_##NAME(double, double);                                                      \
  __UG float NAME##f(float x, float y) { return __nv_##NAME##f(x, y); }                                          \
  __UG double NAME(double x, double y) { return __nv_##NAME(x, y); }
__UG_MATH1(sqrt) __UG_MATH1(rsqrt) __UG_MATH1(cbrt) __UG_MATH1(exp) __UG_MATH1(exp2) __UG_MATH1(exp10)
__UG_MATH1(expm1) __UG_MATH1(log) __UG_MATH1(log2) __UG_MATH1(log10) __UG_MATH1(log1p) __UG_MATH1(sin)
__UG_MATH1(cos) __UG_MATH1(tan) __UG_MATH1(asin) __UG_MATH1(acos) __UG_MATH1(atan) __UG_MATH1(sinh)
__UG_MATH1(cosh) __UG_MATH1(tanh) __UG_MATH1(asinh) __UG_MATH1(acosh) __UG_MATH1(atanh) __UG_MATH1(erf)
__UG_MATH1(erfc) __UG_MATH1(lgamma) __UG_MATH1(tgamma) __UG_MATH1(floor) __UG_MATH1(ceil) __UG_MATH1(trunc)
__UG_MATH1(round) __UG_MATH1(rint) __UG_MATH1(nearbyint) __UG_MATH1(fabs)
__UG_MATH2(pow) __UG_MATH2(atan2) __UG_MATH2(fmod) __UG_MATH2(hypot) __UG_MATH2(remainder) __UG_MATH2(copysign)
__UG_MATH2(fdim) __UG_MATH2(fmin) __UG_MATH2(fmax)
extern "C" __device__ float __nv_fmaf(float, float, float);
extern "C" __device__ double __nv_fma(double, double, double);
__UG float fmaf(float a, float b, float c) { return __nv_fmaf(a, b, c); }
__UG double fma(double a, double b, double c) { return __nv_fma(a, b, c); }

// conversions in each IEEE rounding (CUDA's _rn/_rz/_ru/_rd are PTX's rn/rz/rp/rm); float to integer clamps to
// the destination's range
#define __UG_ROUNDED(NAME, FROM, TO, NV)                                                                         \
  __UG TO NAME##_rn(FROM x) { return __nvvm_##NV##_rn(x); }                                                      \
  __UG TO NAME##_rz(FROM x) { return __nvvm_##NV##_rz(x); }                                                      \
  __UG TO NAME##_ru(FROM x) { return __nvvm_##NV##_rp(x); }                                                      \
  __UG TO NAME##_rd(FROM x) { return __nvvm_##NV##_rm(x); }
__UG_ROUNDED(__float2int, float, int, f2i) __UG_ROUNDED(__float2uint, float, unsigned, f2ui)
__UG_ROUNDED(__float2ll, float, long long, f2ll) __UG_ROUNDED(__float2ull, float, __ug_u64, f2ull)
__UG_ROUNDED(__double2int, double, int, d2i) __UG_ROUNDED(__double2uint, double, unsigned, d2ui)
__UG_ROUNDED(__double2ll, double, long long, d2ll) __UG_ROUNDED(__double2ull, double, __ug_u64, d2ull)
__UG_ROUNDED(__double2float, double, float, d2f)
__UG_ROUNDED(__int2float, int, float, i2f) __UG_ROUNDED(__uint2float, unsigned, float, ui2f)
__UG_ROUNDED(__ll2float, long long, float, ll2f) __UG_ROUNDED(__ull2float, __ug_u64, float, ull2f)
__UG_ROUNDED(__ll2double, long long, double, ll2d) __UG_ROUNDED(__ull2double, __ug_u64, double, ull2d)
#undef __UG_ROUNDED
__UG double __int2double_rn(int x) { return __nvvm_i2d_rn(x); }
__UG double __uint2double_rn(unsigned x) { return __nvvm_ui2d_rn(x); }

// bit casts and the halves of a double
__UG int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__UG float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__UG unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
__UG float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
__UG long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
__UG double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
__UG int __double2hiint(double x) { return __nvvm_d2i_hi(x); }
__UG int __double2loint(double x) { return __nvvm_d2i_lo(x); }
__UG double __hiloint2double(int hi, int lo) { return __nvvm_lohi_i2d(lo, hi); }

// classification
#define __UG_CLASSIFY(T)                                                                                         \
  __UG bool isfinite(T x) { return __builtin_isfinite(x); }                                                      \
  __UG bool isnan(T x) { return __builtin_isnan(x); }                                                            \
  __UG bool isinf(T x) { return __builtin_isinf(x); }                                                            \
  __UG bool signbit(T x) { return __builtin_signbit(x); }
__UG_CLASSIFY(float) __UG_CLASSIFY(double)
#undef __UG_CLASSIFY

// loads through the non-coherent cache (__ldg) and with a cache hint, stores with a cache hint, for the types
// CUDA lists: PTX moves the value's bytes (1 to 16) and the bits come back as the type
struct __ug_b128 { __ug_u64 lo, hi; };
#define __UG_LOAD_W(Q, BITS, R, C, U)                                                                            \
  if constexpr (sizeof(T) * 8 == BITS) {                                                                         \
    R v;                                                                                                         \
    asm volatile("ld.global." Q ".u" #BITS " %0, [%1];" : "=" C(v) : "l"(p) : "memory");                         \
    return __builtin_bit_cast(T, (U)v);                                                                          \
  } else
#define __UG_LOAD(NAME, Q)                                                                                       \
  template <class T> __UG T __ug##NAME(const T *p) {                                                             \
    __UG_LOAD_W(Q, 8, unsigned, "r", unsigned char)                                                              \
    __UG_LOAD_W(Q, 16, unsigned short, "h", unsigned short)                                                      \
    __UG_LOAD_W(Q, 32, unsigned, "r", unsigned)                                                                  \
    __UG_LOAD_W(Q, 64, __ug_u64, "l", __ug_u64)                                                                  \
    {                                                                                                            \
      __ug_b128 v;                                                                                               \
      asm volatile("ld.global." Q ".v2.u64 {%0, %1}, [%2];" : "=l"(v.lo), "=l"(v.hi) : "l"(p) : "memory");      \
      return __builtin_bit_cast(T, v);                                                                           \
    }                                                                                                            \
  }
#define __UG_STORE_W(Q, BITS, R, C)                                                                              \
  if constexpr (sizeof(T) * 8 == BITS) {                                                                         \
    asm volatile("st.global." Q ".u" #BITS " [%0], %1;" ::"l"(p), C((R)__builtin_bit_cast(__ug_u##BITS, v))    \
                 : "memory");                                                                                    \
  } else
#define __UG_STORE(NAME, Q)                                                                                      \
  template <class T> __UG void __ug##NAME(T *p, T v) {                                                           \
    __UG_STORE_W(Q, 8, unsigned, "r") __UG_STORE_W(Q, 16, unsigned short, "h")                                   \
    __UG_STORE_W(Q, 32, unsigned, "r") __UG_STORE_W(Q, 64, __ug_u64, "l")                                        \
    {                                                                                                            \
      __ug_b128 b = __builtin_bit_cast(__ug_b128, v);                                                            \
      asm volatile("st.global." Q ".v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(b.lo), "l"(b.hi) : "memory");        \
    }                                                                                                            \
  }
typedef unsigned char __ug_u8;
typedef unsigned short __ug_u16;
typedef unsigned __ug_u32;
__UG_LOAD(__ldg, "nc") __UG_LOAD(__ldcg, "cg") __UG_LOAD(__ldca, "ca") __UG_LOAD(__ldcs, "cs")
__UG_LOAD(__ldlu, "lu") __UG_LOAD(__ldcv, "cv")
__UG_STORE(__stwb, "wb") __UG_STORE(__stcg, "cg") __UG_STORE(__stcs, "cs") __UG_STORE(__stwt, "wt")
#define __UG_LDST(T)                                                                                             \
  __UG T __ldg(const T *p) { return __ug__ldg(p); }                                                              \
  __UG T __ldcg(const T *p) { return __ug__ldcg(p); }                                                            \
  __UG T __ldca(const T *p) { return __ug__ldca(p); }                                                            \
  __UG T __ldcs(const T *p) { return __ug__ldcs(p); }                                                            \
  __UG T __ldlu(const T *p) { return __ug__ldlu(p); }                                                            \
  __UG T __ldcv(const T *p) { return __ug__ldcv(p); }                                                            \
  __UG void __stwb(T *p, T v) { __ug__stwb(p, v); }                                                              \
  __UG void __stcg(T *p, T v) { __ug__stcg(p, v); }                                                              \
  __UG void __stcs(T *p, T v) { __ug__stcs(p, v); }                                                              \
  __UG void __stwt(T *p, T v) { __ug__stwt(p, v); }
__UG_LDST(char) __UG_LDST(signed char) __UG_LDST(unsigned char) __UG_LDST(short) __UG_LDST(unsigned short)
__UG_LDST(int) __UG_LDST(unsigned) __UG_LDST(long) __UG_LDST(unsigned long) __UG_LDST(long long)
__UG_LDST(unsigned long long) __UG_LDST(float) __UG_LDST(double)
__UG_LDST(char2) __UG_LDST(char4) __UG_LDST(uchar2) __UG_LDST(uchar4) __UG_LDST(short2) __UG_LDST(short4)
__UG_LDST(ushort2) __UG_LDST(ushort4) __UG_LDST(int2) __UG_LDST(int4) __UG_LDST(uint2) __UG_LDST(uint4)
__UG_LDST(longlong2) __UG_LDST(ulonglong2) __UG_LDST(float2) __UG_LDST(float4) __UG_LDST(double2)
#undef __UG_LDST
#undef __UG_LOAD
#undef __UG_LOAD_W
#undef __UG_STORE
#undef __UG_STORE_W

// atomics, relaxed, at device scope and (suffixes _block, _system) at block and system scope (atom, atom.cta,
// atom.sys): each row is CUDA's function and type, then the __nvvm_atom builtin's operation and type it lowers to
#define __UG_ATOMIC_RMW(X)                                                                                       \
  X(atomicAdd, int, add, i, int) X(atomicAdd, unsigned, add, i, int) X(atomicAdd, __ug_u64, add, ll, long long) \
  X(atomicAdd, float, add, f, float) X(atomicAdd, double, add, d, double)                                        \
  X(atomicExch, int, xchg, i, int) X(atomicExch, unsigned, xchg, i, int)                                         \
  X(atomicExch, __ug_u64, xchg, ll, long long) X(atomicExch, float, xchg, i, int)                                \
  X(atomicMin, int, min, i, int) X(atomicMin, long long, min, ll, long long)                                     \
  X(atomicMax, int, max, i, int) X(atomicMax, long long, max, ll, long long)                                     \
  X(atomicInc, unsigned, inc, ui, unsigned) X(atomicDec, unsigned, dec, ui, unsigned)                            \
  X(atomicAnd, int, and, i, int) X(atomicAnd, unsigned, and, i, int) X(atomicAnd, __ug_u64, and, ll, long long) \
  X(atomicOr, int, or, i, int) X(atomicOr, unsigned, or, i, int) X(atomicOr, __ug_u64, or, ll, long long)       \
  X(atomicXor, int, xor, i, int) X(atomicXor, unsigned, xor, i, int) X(atomicXor, __ug_u64, xor, ll, long long)
// unsigned min and max: clang-22 lowers __nvvm_atom_{cta,sys}_{min,max}_gen_{ui,ull} to signed atom.*.s32/.s64,
// so the scoped ones are written in PTX
#define __UG_ATOMIC_UNSIGNED(X)                                                                                  \
  X(atomicMin, unsigned, min, ui, unsigned, "u32", "r") X(atomicMin, __ug_u64, min, ull, __ug_u64, "u64", "l")  \
  X(atomicMax, unsigned, max, ui, unsigned, "u32", "r") X(atomicMax, __ug_u64, max, ull, __ug_u64, "u64", "l")
#define __UG_ATOMIC_CAS(X)                                                                                       \
  X(int, i, int) X(unsigned, i, int) X(__ug_u64, ll, long long) X(unsigned short, us, unsigned short)
#define __UG_RMW(SUFFIX, SCOPE, NAME, T, OP, S, B)                                                               \
  __UG T NAME##SUFFIX(T *p, T v) {                                                                               \
    return __builtin_bit_cast(T, __nvvm_atom##SCOPE##_##OP##_gen_##S((B *)p, __builtin_bit_cast(B, v)));          \
  }
#define __UG_CAS(SUFFIX, SCOPE, T, S, B)                                                                         \
  __UG T atomicCAS##SUFFIX(T *p, T cmp, T v) {                                                                   \
    return __builtin_bit_cast(T, __nvvm_atom##SCOPE##_cas_gen_##S((B *)p, __builtin_bit_cast(B, cmp),            \
                                                                  __builtin_bit_cast(B, v)));                    \
  }
#define __UG_RMW_PTX(SUFFIX, SCOPE, NAME, T, OP, W, C)                                                          \
  __UG T NAME##SUFFIX(T *p, T v) {                                                                               \
    T old;                                                                                                       \
    asm volatile("atom." SCOPE "." #OP "." W " %0, [%1], %2;" : "=" C(old) : "l"(p), C(v) : "memory");           \
    return old;                                                                                                  \
  }
#define __UG_UNSIGNED3(NAME, T, OP, S, B, W, C)                                                                  \
  __UG_RMW(, , NAME, T, OP, S, B) __UG_RMW_PTX(_block, "cta", NAME, T, OP, W, C)                                 \
  __UG_RMW_PTX(_system, "sys", NAME, T, OP, W, C)
// atomicSub is an add of the negated value (two's complement, so INT_MIN too)
#define __UG_SUB(SUFFIX, SCOPE, T) __UG T atomicSub##SUFFIX(T *p, T v) { return atomicAdd##SUFFIX(p, (T)(0u - v)); }
#define __UG_SCOPES(M, ...) M(, , __VA_ARGS__) M(_block, _cta, __VA_ARGS__) M(_system, _sys, __VA_ARGS__)
#define __UG_RMW3(...) __UG_SCOPES(__UG_RMW, __VA_ARGS__)
#define __UG_CAS3(...) __UG_SCOPES(__UG_CAS, __VA_ARGS__)
__UG_ATOMIC_RMW(__UG_RMW3)
__UG_ATOMIC_CAS(__UG_CAS3)
__UG_ATOMIC_UNSIGNED(__UG_UNSIGNED3)
__UG_SCOPES(__UG_SUB, int) __UG_SCOPES(__UG_SUB, unsigned)
#undef __UG_ATOMIC_RMW
#undef __UG_ATOMIC_CAS
#undef __UG_ATOMIC_UNSIGNED
#undef __UG_RMW_PTX
#undef __UG_UNSIGNED3
#undef __UG_RMW
#undef __UG_CAS
#undef __UG_SUB
#undef __UG_SCOPES
#undef __UG_RMW3
#undef __UG_CAS3

// generic addresses as shared- and global-window addresses (cvta.to.shared / cvta.to.global)
__UG __SIZE_TYPE__ __cvta_generic_to_shared(const void *p) {
  return (__SIZE_TYPE__)(const __attribute__((address_space(3))) void *)p;
}
__UG __SIZE_TYPE__ __cvta_generic_to_global(const void *p) {
  return (__SIZE_TYPE__)(const __attribute__((address_space(1))) void *)p;
}

// cuda_pipeline_primitives.h (sm_80): an asynchronous copy of 4, 8 or 16 bytes from global to shared memory whose
// last zfill bytes are zeros (cp.async with a src-size), committed as a group, waited for until at most `prior`
// groups are pending
#define __UG_CP_ASYNC(N, CACHE)                                                                                 \
  asm volatile("cp.async." CACHE ".shared.global [%0], [%1], " #N ", %2;" ::"l"(d), "l"(s), "r"(n) : "memory")
__UG void __pipeline_memcpy_async(void *dst_shared, const void *src_global, __SIZE_TYPE__ size_and_align,
                                  __SIZE_TYPE__ zfill = 0)
    __attribute__((diagnose_if(size_and_align != 4 && size_and_align != 8 && size_and_align != 16,
                               "__pipeline_memcpy_async copies 4, 8 or 16 bytes", "error")))
    __attribute__((diagnose_if(zfill > size_and_align, "zfill is more than the bytes copied", "error"))) {
  __SIZE_TYPE__ d = __cvta_generic_to_shared(dst_shared), s = __cvta_generic_to_global(src_global);
  unsigned n = (unsigned)(size_and_align - zfill);
  if (size_and_align == 16) __UG_CP_ASYNC(16, "cg");
  else if (size_and_align == 8) __UG_CP_ASYNC(8, "ca");
  else __UG_CP_ASYNC(4, "ca");
}
#undef __UG_CP_ASYNC
__UG void __pipeline_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
__UG void __pipeline_wait_prior(__SIZE_TYPE__ prior) {  // wait_group takes a constant: 0..7, or 8 for more
  switch (prior) {
#define __UG_WAIT(N) case N: asm volatile("cp.async.wait_group " #N ";" ::: "memory"); return;
    __UG_WAIT(0) __UG_WAIT(1) __UG_WAIT(2) __UG_WAIT(3) __UG_WAIT(4) __UG_WAIT(5) __UG_WAIT(6) __UG_WAIT(7)
#undef __UG_WAIT
  default: asm volatile("cp.async.wait_group 8;" ::: "memory");
  }
}

// SIMD intrinsics and DPX functions (CUDA Math API) over the 8-, 16- or 32-bit lanes of 32-bit words, in plain C:
// PTX's video instructions (vadd2, vset4, ...) are not needed. __ug_lanes reads lane k of a, b and c as T (its
// signedness is the function's), gives f the three values and T's range [lo, hi], and packs f's results, each cut
// to the lane's bits; f computes in 64 bits, so sums and differences do not overflow before they saturate or wrap.
template <class T, class F> __UG unsigned __ug_lanes(F f, unsigned a, unsigned b, unsigned c) {
  constexpr int w = 8 * sizeof(T);
  constexpr long long hi = __is_signed(T) ? (1ll << (w - 1)) - 1 : (1ll << w) - 1, lo = hi + 1 - (1ll << w);
  unsigned r = 0;
  for (int s = 0; s < 32; s += w)
    r |= (unsigned)(f((T)(a >> s), (T)(b >> s), (T)(c >> s), lo, hi) & (long long)((1ull << w) - 1)) << s;
  return r;
}
#define __UG_LANES(T, E)                                                                                         \
  __ug_lanes<T>([](long long x, long long y, long long z, long long lo, long long hi) -> long long { return E; }, \
                a, b, c)
__UG long long __ug_max(long long x, long long y) { return x > y ? x : y; }
__UG long long __ug_min(long long x, long long y) { return x < y ? x : y; }
__UG long long __ug_sat(long long v, long long lo, long long hi) { return __ug_min(__ug_max(v, lo), hi); }
__UG long long __ug_wrap(long long v, long long lo, long long hi) { return ((v - lo) & (hi - lo)) + lo; }
// the lane types: s or u, per halfword (2) or byte (4)
typedef short __ug_s2;
typedef signed char __ug_s4;
typedef unsigned short __ug_u2;
typedef unsigned char __ug_u4;
#define __UG_SIMD1(NAME, S, E)                                                                                   \
  __UG unsigned NAME##2(unsigned a) { unsigned b = 0, c = 0; return __UG_LANES(__ug_##S##2, E); }                \
  __UG unsigned NAME##4(unsigned a) { unsigned b = 0, c = 0; return __UG_LANES(__ug_##S##4, E); }
#define __UG_SIMD(NAME, S, E)                                                                                    \
  __UG unsigned NAME##2(unsigned a, unsigned b) { unsigned c = 0; return __UG_LANES(__ug_##S##2, E); }           \
  __UG unsigned NAME##4(unsigned a, unsigned b) { unsigned c = 0; return __UG_LANES(__ug_##S##4, E); }
__UG_SIMD1(__vabs, s, x < 0 ? -x : x) __UG_SIMD1(__vabsss, s, __ug_min(x < 0 ? -x : x, hi))
__UG_SIMD1(__vneg, s, -x) __UG_SIMD1(__vnegss, s, __ug_min(-x, hi))
__UG_SIMD(__vabsdiffs, s, x > y ? x - y : y - x) __UG_SIMD(__vabsdiffu, u, x > y ? x - y : y - x)
__UG_SIMD(__vadd, u, x + y) __UG_SIMD(__vaddss, s, __ug_sat(x + y, lo, hi))
__UG_SIMD(__vaddus, u, __ug_sat(x + y, lo, hi)) __UG_SIMD(__vsub, u, x - y)
__UG_SIMD(__vsubss, s, __ug_sat(x - y, lo, hi)) __UG_SIMD(__vsubus, u, __ug_sat(x - y, lo, hi))
// averages: unsigned ones round up, signed ones round half away from zero; __vhaddu truncates
__UG_SIMD(__vavgs, s, (x + y + (x + y >= 0)) >> 1) __UG_SIMD(__vavgu, u, (x + y + 1) >> 1)
__UG_SIMD(__vhaddu, u, (x + y) >> 1)
__UG_SIMD(__vmaxs, s, __ug_max(x, y)) __UG_SIMD(__vmaxu, u, __ug_max(x, y))
__UG_SIMD(__vmins, s, __ug_min(x, y)) __UG_SIMD(__vminu, u, __ug_min(x, y))
// comparisons: __vcmp* give each lane all ones where it holds, __vset* give it 1 (NVIDIA's implementation; the
// prose "returns 1 if both parts compare" describes the all-true case)
#define __UG_CMP(REL, S, OP) __UG_SIMD(__vcmp##REL, S, -(x OP y)) __UG_SIMD(__vset##REL, S, x OP y)
__UG_CMP(eq, u, ==) __UG_CMP(ne, u, !=) __UG_CMP(ges, s, >=) __UG_CMP(geu, u, >=) __UG_CMP(gts, s, >)
__UG_CMP(gtu, u, >) __UG_CMP(les, s, <=) __UG_CMP(leu, u, <=) __UG_CMP(lts, s, <) __UG_CMP(ltu, u, <)
// the sums of the lanes' absolute differences
template <int W> __UG unsigned __ug_lane_sum(unsigned x) {
  unsigned r = 0;
  for (int s = 0; s < 32; s += W) r += x >> s & ((1u << W) - 1);
  return r;
}
__UG unsigned __vsads2(unsigned a, unsigned b) { return __ug_lane_sum<16>(__vabsdiffs2(a, b)); }
__UG unsigned __vsads4(unsigned a, unsigned b) { return __ug_lane_sum<8>(__vabsdiffs4(a, b)); }
__UG unsigned __vsadu2(unsigned a, unsigned b) { return __ug_lane_sum<16>(__vabsdiffu2(a, b)); }
__UG unsigned __vsadu4(unsigned a, unsigned b) { return __ug_lane_sum<8>(__vabsdiffu4(a, b)); }
#undef __UG_SIMD1
#undef __UG_SIMD
#undef __UG_CMP
// DPX functions (sm_90's max/min with .relu and add-then-max/min; CUDA emulates them before sm_90): each on one
// int or unsigned or on two shorts or unsigned shorts; a + b wraps in its lane, _relu takes the max with 0
#define __UG_DPX3(NAME, E)                                                                                       \
  __UG int NAME##_s32(int a, int b, int c) { return (int)__UG_LANES(int, E); }                                   \
  __UG unsigned NAME##_u32(unsigned a, unsigned b, unsigned c) { return __UG_LANES(unsigned, E); }               \
  __UG unsigned NAME##_s16x2(unsigned a, unsigned b, unsigned c) { return __UG_LANES(short, E); }                \
  __UG unsigned NAME##_u16x2(unsigned a, unsigned b, unsigned c) { return __UG_LANES(unsigned short, E); }       \
  __UG int NAME##_s32_relu(int a, int b, int c) { return (int)__UG_LANES(int, __ug_max(E, 0)); }                 \
  __UG unsigned NAME##_s16x2_relu(unsigned a, unsigned b, unsigned c) { return __UG_LANES(short, __ug_max(E, 0)); }
#define __UG_DPX2_RELU(NAME, E)                                                                                  \
  __UG int NAME##_s32_relu(int a, int b) { unsigned c = 0; return (int)__UG_LANES(int, __ug_max(E, 0)); }       \
  __UG unsigned NAME##_s16x2_relu(unsigned a, unsigned b) {                                                     \
    unsigned c = 0;                                                                                              \
    return __UG_LANES(short, __ug_max(E, 0));                                                                    \
  }
__UG_DPX3(__vimax3, __ug_max(__ug_max(x, y), z)) __UG_DPX3(__vimin3, __ug_min(__ug_min(x, y), z))
__UG_DPX3(__viaddmax, __ug_max(__ug_wrap(x + y, lo, hi), z))
__UG_DPX3(__viaddmin, __ug_min(__ug_wrap(x + y, lo, hi), z))
__UG_DPX2_RELU(__vimax, __ug_max(x, y)) __UG_DPX2_RELU(__vimin, __ug_min(x, y))
// __vibmax/__vibmin also say, per lane, whether the result is a's lane: a >= b for max, a <= b for min
__UG unsigned __ug_pred2(unsigned r, unsigned a, bool *const pred_hi, bool *const pred_lo) {
  *pred_hi = (r ^ a) >> 16 == 0;
  *pred_lo = (unsigned short)(r ^ a) == 0;
  return r;
}
#define __UG_VIB(NAME, E)                                                                                        \
  __UG int NAME##_s32(int a, int b, bool *const pred) {                                                          \
    unsigned c = 0, r = __UG_LANES(int, E);                                                                      \
    *pred = r == (unsigned)a;                                                                                    \
    return (int)r;                                                                                               \
  }                                                                                                              \
  __UG unsigned NAME##_u32(unsigned a, unsigned b, bool *const pred) {                                           \
    unsigned c = 0, r = __UG_LANES(unsigned, E);                                                                 \
    *pred = r == a;                                                                                              \
    return r;                                                                                                    \
  }                                                                                                              \
  __UG unsigned NAME##_s16x2(unsigned a, unsigned b, bool *const pred_hi, bool *const pred_lo) {                 \
    unsigned c = 0;                                                                                              \
    return __ug_pred2(__UG_LANES(short, E), a, pred_hi, pred_lo);                                                \
  }                                                                                                              \
  __UG unsigned NAME##_u16x2(unsigned a, unsigned b, bool *const pred_hi, bool *const pred_lo) {                 \
    unsigned c = 0;                                                                                              \
    return __ug_pred2(__UG_LANES(unsigned short, E), a, pred_hi, pred_lo);                                       \
  }
__UG_VIB(__vibmax, __ug_max(x, y)) __UG_VIB(__vibmin, __ug_min(x, y))
#undef __UG_DPX3
#undef __UG_DPX2_RELU
#undef __UG_VIB
#undef __UG_LANES

// timers
__UG long long clock64(void) { return __nvvm_read_ptx_sreg_clock64(); }
__UG int clock(void) { return __nvvm_read_ptx_sreg_clock(); }
__UG __ug_u64 __globaltimer(void) { return __nvvm_read_ptx_sreg_globaltimer(); }
#undef __UG

// printf: clang lowers a device call to vprintf(format, arguments), which the driver gives (usergpu's emulator runs it)
extern "C" __device__ int printf(const char *, ...);
extern "C" __device__ int vprintf(const char *, const char *);
