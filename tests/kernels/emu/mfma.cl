// MFMA and SMFMAC (gfx942, gfx950; wave64): D = A * B + C with row-major matrices in memory. One wave per
// workgroup; each kernel moves data between memory and the lane layouts itself (the AMD Matrix Instruction
// Calculator's gfx9 equations, the CDNA4 guide for f8f6f4), so the reference is A @ B + C per block.
// Single-block M x N x K shapes, lane l, P = M * K / 64 values per lane:
//   A: row l % M, k = (l / M) * P + e (e < P, low bits of the first register first). B: column l % M alike.
//   D (f32/i32) value r of lane l: column l % M, row ROW32(r, l) for 32 x 32, ROW16(r, l) for 16 x 16.
//   D (f64, 16 x 16) value r: row 4 * r + l / 16.
// Multi-block (B blocks of M x N x 1): A[b][i] in lane M * b + i, B[b][j] in lane M * b + j;
//   32x32x1 (2 blocks): D[b] value 16 b + r, rows as ROW32.  4x4x1 (16 blocks): D[b][i][j] value i, lane 4 b + j.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#include "emu.h"

#define ROW32(r, l) (8 * ((r) / 4) + 4 * ((l) / 32) + (r) % 4)
#define ROW16(r, l) (4 * ((l) / 16) + (r))

typedef __bf16 v8bf __attribute__((ext_vector_type(8)));
typedef float v32f __attribute__((ext_vector_type(32)));

#if defined(__gfx942__) || defined(__gfx950__)
#define CDNA 1
#endif

// f16 -> f32, 32x32x8: an M x N x K GEMM, one 32 x 32 tile of D per workgroup, K in steps of 8.
// grid = (N / 32, M / 32), block = 64.
__kernel void mfma_f16_gemm(__global const half *A, __global const half *B, __global const float *C,
                            __global float *D, uint M, uint N, uint K) {
#ifdef CDNA
  uint l = lane_id(), row0 = grp(1) * 32, col = grp(0) * 32 + l % 32, h = l / 32;
  float16 c;
  for (int r = 0; r < 16; ++r) c[r] = C[(row0 + ROW32(r, l)) * N + col];
  for (uint k0 = 0; k0 < K; k0 += 8) {
    half4 a, b;
    for (int e = 0; e < 4; ++e) {
      a[e] = A[(row0 + l % 32) * K + k0 + 4 * h + e];
      b[e] = B[(k0 + 4 * h + e) * N + col];
    }
    c = __builtin_amdgcn_mfma_f32_32x32x8f16(a, b, c, 0, 0, 0);
  }
  for (int r = 0; r < 16; ++r) D[(row0 + ROW32(r, l)) * N + col] = c[r];
#endif
}

// One 16 x 16 tile of each single-block 16x16 shape: TA values per lane in VA, the D values f32 / i32.
#define TILE16(name, TA, VA, P, K, TD, VD, call)                                                                 \
  __kernel void name(__global const TA *A, __global const TA *B, __global const TD *C, __global TD *D) {          \
    uint l = lane_id(), i = l % 16;                                                                              \
    VA a, b;                                                                                                     \
    for (int e = 0; e < P; ++e) {                                                                                \
      a[e] = A[i * K + (l / 16) * P + e];                                                                        \
      b[e] = B[((l / 16) * P + e) * 16 + i];                                                                     \
    }                                                                                                            \
    VD c;                                                                                                        \
    for (int r = 0; r < 4; ++r) c[r] = C[ROW16(r, l) * 16 + i];                                                  \
    c = call;                                                                                                    \
    for (int r = 0; r < 4; ++r) D[ROW16(r, l) * 16 + i] = c[r];                                                  \
  }

typedef float v1f __attribute__((ext_vector_type(1)));
typedef char v8c __attribute__((ext_vector_type(8)));
typedef char v16c __attribute__((ext_vector_type(16)));
typedef uchar v8uc __attribute__((ext_vector_type(8)));

#ifdef CDNA
TILE16(mfma_f16_16x16x16, half, half4, 4, 16, float, float4, __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, 0, 0, 0))
TILE16(mfma_f32_16x16x4, float, v1f, 1, 4, float, float4, __builtin_amdgcn_mfma_f32_16x16x4f32(a[0], b[0], c, 0, 0, 0))
TILE16(mfma_i8_16x16x32, char, v8c, 8, 32, int, int4,
       __builtin_amdgcn_mfma_i32_16x16x32_i8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), c, 0, 0, 0))
TILE16(mfma_fp8_16x16x32, uchar, v8uc, 8, 32, float, float4,
       __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), c, 0, 0,
                                                  0))
TILE16(mfma_bf8_fp8_16x16x32, uchar, v8uc, 8, 32, float, float4,
       __builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8(__builtin_bit_cast(long, a), __builtin_bit_cast(long, b), c, 0, 0,
                                                  0))
#endif
#if defined(__gfx942__)
TILE16(mfma_xf32_16x16x8, float, float2, 2, 8, float, float4, __builtin_amdgcn_mfma_f32_16x16x8_xf32(a, b, c, 0, 0, 0))
#endif
#if defined(__gfx950__)
typedef ushort v8us __attribute__((ext_vector_type(8)));
TILE16(mfma_bf16_16x16x32, ushort, v8us, 8, 32, float, float4,
       __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(v8bf, a), __builtin_bit_cast(v8bf, b), c, 0, 0, 0))
TILE16(mfma_i8_16x16x64, char, v16c, 16, 64, int, int4,
       __builtin_amdgcn_mfma_i32_16x16x64_i8(__builtin_bit_cast(int4, a), __builtin_bit_cast(int4, b), c, 0, 0, 0))
#endif

// One 32 x 32 tile of a single-block 32x32 shape.
#define TILE32(name, TA, VA, P, K, TD, VD, call)                                                                 \
  __kernel void name(__global const TA *A, __global const TA *B, __global const TD *C, __global TD *D) {          \
    uint l = lane_id(), i = l % 32;                                                                              \
    VA a, b;                                                                                                     \
    for (int e = 0; e < P; ++e) {                                                                                \
      a[e] = A[i * K + (l / 32) * P + e];                                                                        \
      b[e] = B[((l / 32) * P + e) * 32 + i];                                                                     \
    }                                                                                                            \
    VD c;                                                                                                        \
    for (int r = 0; r < 16; ++r) c[r] = C[ROW32(r, l) * 32 + i];                                                 \
    c = call;                                                                                                    \
    for (int r = 0; r < 16; ++r) D[ROW32(r, l) * 32 + i] = c[r];                                                 \
  }

#ifdef CDNA
TILE32(mfma_f32_32x32x2, float, v1f, 1, 2, float, float16,
       __builtin_amdgcn_mfma_f32_32x32x2f32(a[0], b[0], c, 0, 0, 0))
#endif
#if defined(__gfx950__)
typedef half v8h __attribute__((ext_vector_type(8)));
TILE32(mfma_f16_32x32x16, half, v8h, 8, 16, float, float16, __builtin_amdgcn_mfma_f32_32x32x16_f16(a, b, c, 0, 0, 0))
TILE32(mfma_i8_32x32x32, char, v16c, 16, 32, int, int16,
       __builtin_amdgcn_mfma_i32_32x32x32_i8(__builtin_bit_cast(int4, a), __builtin_bit_cast(int4, b), c, 0, 0, 0))
#endif

// f64 16x16x4: A row l % 16, k = l / 16 (B alike); D value r: row 4 r + l / 16, column l % 16.
__kernel void mfma_f64_16x16x4(__global const double *A, __global const double *B, __global const double *C,
                               __global double *D) {
#ifdef CDNA
  uint l = lane_id(), i = l % 16, k = l / 16;
  double4 c;
  for (int r = 0; r < 4; ++r) c[r] = C[(4 * r + k) * 16 + i];
  c = __builtin_amdgcn_mfma_f64_16x16x4f64(A[i * 4 + k], B[k * 16 + i], c, 0, 0, 0);
  for (int r = 0; r < 4; ++r) D[(4 * r + k) * 16 + i] = c[r];
#endif
}

// Two 32 x 32 x 1 blocks, cbsz 1 / abid 1: both blocks take block 1's A. A: (2, 32), B: (2, 32), C, D: (2, 32, 32).
__kernel void mfma_blocks_32x32x1(__global const float *A, __global const float *B, __global const float *C,
                                  __global float *D) {
#ifdef CDNA
  uint l = lane_id();
  v32f c;
  for (int r = 0; r < 32; ++r) c[r] = C[(r / 16) * 1024 + ROW32(r % 16, l) * 32 + l % 32];
  c = __builtin_amdgcn_mfma_f32_32x32x1f32(A[l], B[l], c, 1, 1, 0);
  for (int r = 0; r < 32; ++r) D[(r / 16) * 1024 + ROW32(r % 16, l) * 32 + l % 32] = c[r];
#endif
}

// Sixteen 4 x 4 x 1 blocks, cbsz 2 / abid 3 (each group of 4 blocks takes its last block's A), blgp 4 (every lane
// reads B from lanes 0-15). A: (16, 4), B: (16, 4), C, D: (16, 4, 4).
__kernel void mfma_blocks_4x4x1(__global const float *A, __global const float *B, __global const float *C,
                                __global float *D) {
#ifdef CDNA
  uint l = lane_id();
  float4 c;
  for (int r = 0; r < 4; ++r) c[r] = C[(l / 4) * 16 + r * 4 + l % 4];
  c = __builtin_amdgcn_mfma_f32_4x4x1f32(A[l], B[l], c, 2, 3, 4);
  for (int r = 0; r < 4; ++r) D[(l / 4) * 16 + r * 4 + l % 4] = c[r];
#endif
}

// SMFMAC 16x16x32 f16 (4:2 sparse A, 16 x 32 with 2 non-zeros in each group of 4 along K): each lane keeps the
// non-zeros of its 8 K values and their positions (2 bits each), in index set 2 (abid 2).
__kernel void smfmac_f16_16x16x32(__global const half *A, __global const half *B, __global const float *C,
                                  __global float *D) {
#ifdef CDNA
  uint l = lane_id(), i = l % 16, k0 = (l / 16) * 8;
  half4 a = 0;
  half8 b;
  int idx = 0, kept = 0;
  for (int e = 0; e < 8; ++e) {
    b[e] = B[(k0 + e) * 16 + i];
    half x = A[i * 32 + k0 + e];
    if (x != 0 && kept < 2 * (e / 4 + 1)) {
      a[kept] = x;
      idx |= (e % 4) << (2 * kept);
      ++kept;
    }
  }
  float4 c;
  for (int r = 0; r < 4; ++r) c[r] = C[ROW16(r, l) * 16 + i];
  c = __builtin_amdgcn_smfmac_f32_16x16x32_f16(a, b, c, idx << 16, 0, 2);
  for (int r = 0; r < 4; ++r) D[ROW16(r, l) * 16 + i] = c[r];
#endif
}

#if defined(__gfx950__)
// Scaled 16x16x128, fp8 (E4M3) A and B: lane l = 16 g + i holds A row i, k = 64 (e / 16) + 16 g + e % 16 for its
// 32 bytes e (B column i alike); E8M0 scales: A row i, K block g (32 values) in byte 1 of lane i + 16 g's scale
// (op_sel 1), B column j, block g in byte 2 (op_sel 2). SA: (16, 4), SB: (4, 16).
__kernel void mfma_scale_fp8_16x16x128(__global const uchar *A, __global const uchar *B, __global const uchar *SA,
                                       __global const uchar *SB, __global const float *C, __global float *D) {
  uint l = lane_id(), i = l % 16, g = l / 16;
  uchar a[32], b[32];
  for (int e = 0; e < 32; ++e) {
    uint k = 64 * (e / 16) + 16 * g + e % 16;
    a[e] = A[i * 128 + k];
    b[e] = B[k * 16 + i];
  }
  float4 c;
  for (int r = 0; r < 4; ++r) c[r] = C[ROW16(r, l) * 16 + i];
  int sa = SA[i * 4 + g] << 8, sb = SB[g * 16 + i] << 16;
  c = __builtin_amdgcn_mfma_scale_f32_16x16x128_f8f6f4(__builtin_bit_cast(int8, a), __builtin_bit_cast(int8, b), c,
                                                      0, 0, 1, sa, 2, sb);
  for (int r = 0; r < 4; ++r) D[ROW16(r, l) * 16 + i] = c[r];
}

// Scaled 32x32x64, fp4 (E2M1) A and B (cbsz 4, blgp 4): lane l = 32 g + i holds A row i, k = 32 g + e for its 32
// nibbles e (low nibble first; B column i alike), in the low 4 of the 8 registers. A: (32, 64) nibbles packed in
// bytes along K, B: (64, 32) packed along N (B[k][2 j'] in the low nibble of byte j'). Scales in byte 0:
// SA: (32, 2), SB: (2, 32).
__kernel void mfma_scale_fp4_32x32x64(__global const uchar *A, __global const uchar *B, __global const uchar *SA,
                                      __global const uchar *SB, __global const float *C, __global float *D) {
  uint l = lane_id(), i = l % 32, g = l / 32;
  uint a[8] = {0}, b[8] = {0};
  for (int e = 0; e < 32; ++e) {
    uint k = 32 * g + e;
    uint an = (A[i * 32 + k / 2] >> (4 * (k % 2))) & 15, bn = (B[k * 16 + i / 2] >> (4 * (i % 2))) & 15;
    a[e / 8] |= an << (4 * (e % 8));
    b[e / 8] |= bn << (4 * (e % 8));
  }
  float16 c;
  for (int r = 0; r < 16; ++r) c[r] = C[ROW32(r, l) * 32 + i];
  c = __builtin_amdgcn_mfma_scale_f32_32x32x64_f8f6f4(__builtin_bit_cast(int8, a), __builtin_bit_cast(int8, b), c,
                                                     4, 4, 0, SA[i * 2 + g], 0, SB[g * 32 + i]);
  for (int r = 0; r < 16; ++r) D[ROW32(r, l) * 32 + i] = c[r];
}
#endif
