// WMMA: D = A * B + C in 16 x 16 x 16 blocks, with row-major matrices in memory. Each workgroup (64 work-items)
// computes one 16 x 16 tile of D; every wave in it runs the same WMMAs (two identical waves in wave32) and the
// first wave stores. The kernel moves data between memory and the lane layouts itself, so the reference is
// A @ B + C. Lane l, r = l % 16, h = l / 16:
//   gfx11 (both wave sizes): A: row r, k = 0..15.  B: column r, k = 0..15 (lanes 16.. repeat lanes 0..15).
//     D f32/i32: wave32 element j is D[2j + h][r]; wave64 element j is D[4j + h][r]   (j counts registers)
//   gfx12 wave32: A: row r, k = 8h..8h+7.  B: column r, k = 8h..8h+7.  D element j is D[8h + j][r].
// gfx12 wave64 is left out: its layout is not confirmed here, so that build has an empty body and no case.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "emu.h"

typedef half v16h __attribute__((ext_vector_type(16)));
typedef half v8h __attribute__((ext_vector_type(8)));
typedef float v8f __attribute__((ext_vector_type(8)));
typedef float v4f __attribute__((ext_vector_type(4)));
typedef int v8i __attribute__((ext_vector_type(8)));
typedef int v4i __attribute__((ext_vector_type(4)));
typedef int v2i __attribute__((ext_vector_type(2)));

#if defined(__GFX11__) && EMU_WAVE32
#define ACC_N 8
#define ROW(j, h) (2 * (j) + (h))
#elif defined(__GFX11__)
#define ACC_N 4
#define ROW(j, h) (4 * (j) + (h))
#elif defined(__GFX12__) && EMU_WAVE32
#define ACC_N 8
#define ROW(j, h) (8 * (h) + (j))
#endif

// f16 inputs, f32 accumulate. grid = (N / 16, M / 16), block = 64.
__kernel void wmma_f16_gemm(__global const half *A, __global const half *B, __global const float *C,
                            __global float *D, uint M, uint N, uint K) {
#ifdef ACC_N
  uint l = lane_id(), r = l % 16, h = l / 16;
  uint row0 = grp(1) * 16, col = grp(0) * 16 + r;
  float acc[ACC_N];
  for (int j = 0; j < ACC_N; ++j) acc[j] = C[(row0 + ROW(j, h)) * N + col];
#if ACC_N == 8
  v8f c = {acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]};
#else
  v4f c = {acc[0], acc[1], acc[2], acc[3]};
#endif
  for (uint k0 = 0; k0 < K; k0 += 16) {
    __global const half *arow = A + (row0 + r) * K + k0;
#if defined(__GFX11__)
    v16h a = *(__global const v16h *)arow, b;
    for (int k = 0; k < 16; ++k) b[k] = B[(k0 + k) * N + col];
#if EMU_WAVE32
    c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c);
#else
    c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w64(a, b, c);
#endif
#else
    v8h a = *(__global const v8h *)(arow + 8 * h), b;
    for (int k = 0; k < 8; ++k) b[k] = B[(k0 + 8 * h + k) * N + col];
    c = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32_gfx12(a, b, c);
#endif
  }
  if (flat_lid() < wave_size())
    for (int j = 0; j < ACC_N; ++j) D[(row0 + ROW(j, h)) * N + col] = c[j];
#endif
}

// Signed 8-bit A times unsigned 8-bit B, i32 accumulate, one 16 x 16 x 16 block (block = 64, one workgroup).
__kernel void wmma_iu8(__global const char *A, __global const uchar *B, __global const int *C, __global int *D) {
#ifdef ACC_N
  uint l = lane_id(), r = l % 16, h = l / 16;
  int acc[ACC_N];
  for (int j = 0; j < ACC_N; ++j) acc[j] = C[ROW(j, h) * 16 + r];
#if ACC_N == 8
  v8i c = {acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7]};
#else
  v4i c = {acc[0], acc[1], acc[2], acc[3]};
#endif
#if defined(__GFX11__)
  v4i a = *(__global const v4i *)(A + r * 16), b;
  for (int w = 0; w < 4; ++w)  // byte k % 4 of register k / 4 holds element k
    b[w] = B[(4 * w) * 16 + r] | B[(4 * w + 1) * 16 + r] << 8 | B[(4 * w + 2) * 16 + r] << 16 |
           (uint)B[(4 * w + 3) * 16 + r] << 24;
#if EMU_WAVE32
  c = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(true, a, false, b, c, false);
#else
  c = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w64(true, a, false, b, c, false);
#endif
#else
  v2i a = *(__global const v2i *)(A + r * 16 + 8 * h), b;
  for (int w = 0; w < 2; ++w) {
    uint k = 8 * h + 4 * w;
    b[w] = B[k * 16 + r] | B[(k + 1) * 16 + r] << 8 | B[(k + 2) * 16 + r] << 16 | (uint)B[(k + 3) * 16 + r] << 24;
  }
  c = __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32_gfx12(true, a, false, b, c, false);
#endif
  if (flat_lid() < wave_size())
    for (int j = 0; j < ACC_N; ++j) D[ROW(j, h) * 16 + r] = c[j];
#endif
}
