// usergpu's CUDA prelude: what CUDA C device code needs when clang-22 compiles it with no CUDA toolkit
// (-nocudainc). The qualifiers, clang's own built-in variables (threadIdx, blockIdx, ...), and the device
// functions of CUDA's programming guide that lower to one PTX instruction, written over clang's __nvvm_* builtins.
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

// warp vote, match and shuffle (width: the sub-warp size, as CUDA's __shfl_*_sync take it)
__UG unsigned __activemask(void) { return __nvvm_activemask(); }
__UG unsigned __ballot_sync(unsigned m, int p) { return __nvvm_vote_ballot_sync(m, p); }
__UG int __any_sync(unsigned m, int p) { return __nvvm_vote_any_sync(m, p); }
__UG int __all_sync(unsigned m, int p) { return __nvvm_vote_all_sync(m, p); }
__UG int __uni_sync(unsigned m, int p) { return __nvvm_vote_uni_sync(m, p); }
__UG unsigned __match_any_sync(unsigned m, unsigned v) { return __nvvm_match_any_sync_i32(m, v); }
__UG unsigned __match_any_sync(unsigned m, __ug_u64 v) { return __nvvm_match_any_sync_i64(m, v); }
#define __UG_SHFL(T, SUFFIX, CAST, UNCAST)                                                                       \
  __UG T __shfl_sync(unsigned m, T v, int l, int w = 32) {                                                       \
    return UNCAST(__nvvm_shfl_sync_idx_##SUFFIX(m, CAST(v), l, ((32 - w) << 8) | 0x1f));                         \
  }                                                                                                              \
  __UG T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) {                                               \
    return UNCAST(__nvvm_shfl_sync_up_##SUFFIX(m, CAST(v), d, (32 - w) << 8));                                   \
  }                                                                                                              \
  __UG T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) {                                             \
    return UNCAST(__nvvm_shfl_sync_down_##SUFFIX(m, CAST(v), d, ((32 - w) << 8) | 0x1f));                        \
  }                                                                                                              \
  __UG T __shfl_xor_sync(unsigned m, T v, int l, int w = 32) {                                                   \
    return UNCAST(__nvvm_shfl_sync_bfly_##SUFFIX(m, CAST(v), l, ((32 - w) << 8) | 0x1f));                        \
  }
#define __UG_SAME(x) (x)
#define __UG_TO_INT(x) ((int)(x))
#define __UG_TO_UNSIGNED(x) ((unsigned)(x))
__UG_SHFL(int, i32, __UG_SAME, __UG_SAME)
__UG_SHFL(unsigned, i32, __UG_TO_INT, __UG_TO_UNSIGNED)
__UG_SHFL(float, f32, __UG_SAME, __UG_SAME)

// integer intrinsics
__UG int __popc(unsigned x) { return __builtin_popcount(x); }
__UG int __popcll(__ug_u64 x) { return __builtin_popcountll(x); }
__UG int __clz(int x) { return x ? __builtin_clz(x) : 32; }
__UG int __clzll(long long x) { return x ? __builtin_clzll(x) : 64; }
__UG unsigned __brev(unsigned x) { return __builtin_bitreverse32(x); }
__UG __ug_u64 __brevll(__ug_u64 x) { return __builtin_bitreverse64(x); }
__UG int __ffs(int x) { return x ? __builtin_ctz(x) + 1 : 0; }
__UG int __mulhi(int a, int b) { return __nvvm_mulhi_i(a, b); }
__UG unsigned __umulhi(unsigned a, unsigned b) { return __nvvm_mulhi_ui(a, b); }
__UG unsigned __byte_perm(unsigned a, unsigned b, unsigned s) { return __nvvm_prmt(a, b, s); }
__UG unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) { return ((unsigned)((((__ug_u64)hi << 32) | lo) << (s & 31) >> 32)); }
__UG unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) { return (unsigned)((((__ug_u64)hi << 32) | lo) >> (s & 31)); }

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

// bit casts
__UG int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__UG float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__UG unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
__UG float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
__UG long long __double_as_longlong(double x) { return __builtin_bit_cast(long long, x); }
__UG double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }

// atomics (relaxed, device scope: atom.* as CUDA's atomicAdd ... lower to)
#define __UG_ATOMIC(NAME, T, OP)                                                                                 \
  __UG T NAME(T *p, T v) { return __atomic_##OP(p, v, __ATOMIC_RELAXED); }
#define __UG_ATOMICS(T)                                                                                          \
  __UG_ATOMIC(atomicAdd, T, fetch_add) __UG_ATOMIC(atomicSub, T, fetch_sub) __UG_ATOMIC(atomicExch, T, exchange_n) \
  __UG_ATOMIC(atomicMin, T, fetch_min) __UG_ATOMIC(atomicMax, T, fetch_max) __UG_ATOMIC(atomicAnd, T, fetch_and) \
  __UG_ATOMIC(atomicOr, T, fetch_or) __UG_ATOMIC(atomicXor, T, fetch_xor)                                        \
  __UG T atomicCAS(T *p, T cmp, T v) {                                                                           \
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);                          \
    return cmp;                                                                                                  \
  }
__UG_ATOMICS(int)
__UG_ATOMICS(unsigned)
__UG_ATOMICS(__ug_u64)
__UG float atomicAdd(float *p, float v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
__UG double atomicAdd(double *p, double v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
__UG float atomicExch(float *p, float v) { return __int_as_float(atomicExch((int *)p, __float_as_int(v))); }
__UG unsigned atomicInc(unsigned *p, unsigned v) { return __nvvm_atom_inc_gen_ui(p, v); }
__UG unsigned atomicDec(unsigned *p, unsigned v) { return __nvvm_atom_dec_gen_ui(p, v); }

// timers
__UG long long clock64(void) { return __nvvm_read_ptx_sreg_clock64(); }
__UG int clock(void) { return __nvvm_read_ptx_sreg_clock(); }
__UG __ug_u64 __globaltimer(void) { return __nvvm_read_ptx_sreg_globaltimer(); }
#undef __UG
