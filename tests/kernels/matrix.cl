// Matrix cores and dot products, per arch: WMMA on gfx1100/gfx1200, MFMA on gfx942/gfx950.
// Every kernel exists on every arch; the arch-specific body is guarded so the file builds for all four.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "helpers.h"

typedef half half4_t __attribute__((ext_vector_type(4)));
typedef half half8_t __attribute__((ext_vector_type(8)));
typedef half half16_t __attribute__((ext_vector_type(16)));
typedef float float4_t __attribute__((ext_vector_type(4)));
typedef float float8_t __attribute__((ext_vector_type(8)));
typedef float float16_t __attribute__((ext_vector_type(16)));

__kernel void mma_f16(__global const half *a, __global const half *b, __global float *c) {
  uint l = lid(0);
#if defined(__gfx1100__)
  half16_t va = *(__global const half16_t *)(a + 16 * l), vb = *(__global const half16_t *)(b + 16 * l);
  float8_t acc = *(__global float8_t *)(c + 8 * l);
  acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(va, vb, acc);
  *(__global float8_t *)(c + 8 * l) = acc;
#elif defined(__gfx1200__)
  half8_t va = *(__global const half8_t *)(a + 8 * l), vb = *(__global const half8_t *)(b + 8 * l);
  float8_t acc = *(__global float8_t *)(c + 8 * l);
  acc = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(va, vb, acc);
  *(__global float8_t *)(c + 8 * l) = acc;
#elif defined(__gfx942__) || defined(__gfx950__)
  half4_t va = *(__global const half4_t *)(a + 4 * l), vb = *(__global const half4_t *)(b + 4 * l);
  float16_t acc = *(__global float16_t *)(c + 16 * l);
  acc = __builtin_amdgcn_mfma_f32_32x32x8f16(va, vb, acc, 0, 0, 0);
  *(__global float16_t *)(c + 16 * l) = acc;
#endif
}

__kernel void mma_small(__global const half *a, __global const half *b, __global float *c) {
  uint l = lid(0);
#if defined(__gfx1100__) || defined(__gfx1200__)
  // wave32 WMMA with an int8 product instead (iu8: signed A and B, no clamp)
#if defined(__gfx1100__)
  int4 va = ((__global const int4 *)a)[l], vb = ((__global const int4 *)b)[l];
  int8 acc = ((__global int8 *)c)[l];
  acc = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, va, true, vb, acc, false);
#else
  int2 va = ((__global const int2 *)a)[l], vb = ((__global const int2 *)b)[l];
  int8 acc = ((__global int8 *)c)[l];
  acc = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, va, true, vb, acc, false);
#endif
  ((__global int8 *)c)[l] = acc;
#elif defined(__gfx950__)
  half8_t va = *(__global const half8_t *)(a + 8 * l), vb = *(__global const half8_t *)(b + 8 * l);
  float4_t acc = *(__global float4_t *)(c + 4 * l);
  acc = __builtin_amdgcn_mfma_f32_16x16x32_f16(va, vb, acc, 0, 0, 0);
  *(__global float4_t *)(c + 4 * l) = acc;
#elif defined(__gfx942__)
  half4_t va = *(__global const half4_t *)(a + 4 * l), vb = *(__global const half4_t *)(b + 4 * l);
  float4_t acc = *(__global float4_t *)(c + 4 * l);
  acc = __builtin_amdgcn_mfma_f32_16x16x16f16(va, vb, acc, 0, 0, 0);
  *(__global float4_t *)(c + 4 * l) = acc;
#endif
}

__kernel void dot(__global const half2 *a, __global const half2 *b, __global float *c, __global const int *p) {
  uint i = gid(0);
  c[i] = __builtin_amdgcn_fdot2(a[i], b[i], c[i], false);
#if defined(__gfx942__) || defined(__gfx950__)
  c[i + 1] = (float)__builtin_amdgcn_sdot4(p[i], p[i + 1], p[i + 2], false);
#else
  c[i + 1] = (float)__builtin_amdgcn_sudot4(true, p[i], true, p[i + 1], p[i + 2], false);
#endif
}

__kernel void agprs(__global float *a) {
  uint i = gid(0);
  float x = a[i];
#if defined(__gfx942__) || defined(__gfx950__)
  // round-trip through an accumulation register: gives the kernel AGPRs (accum_offset, unified VGPR file)
  __asm__ volatile("v_accvgpr_write_b32 a3, %0\n\tv_accvgpr_read_b32 %0, a3" : "+v"(x) : : "a3");
#endif
  a[i] = x * 2.0f;
}
