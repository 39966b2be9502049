// C = A * B (row-major, M x K times K x N) with 16 x 16 LDS tiles; M, N and K are multiples of 16.
#include "emu.h"

#define TS 16
__kernel void matmul_tiled(__global const float *A, __global const float *B, __global float *C, uint M, uint N,
                           uint K) {
  __local float ta[TS][TS], tb[TS][TS];
  uint tx = lid(0), ty = lid(1), col = gid(0), row = gid(1);
  float acc = 0.0f;
  for (uint k0 = 0; k0 < K; k0 += TS) {
    ta[ty][tx] = A[row * K + k0 + tx];
    tb[ty][tx] = B[(k0 + ty) * N + col];
    lbarrier();
    for (uint k = 0; k < TS; ++k) acc = __builtin_fmaf(ta[ty][k], tb[k][tx], acc);
    lbarrier();
  }
  if (row < M) C[row * N + col] = acc;
}
