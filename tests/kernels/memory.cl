// Global loads and stores of every width: vector add, saxpy, copies, gathers, vector types.
#include "helpers.h"

__kernel void vadd(__global const float *a, __global const float *b, __global float *c, int n) {
  uint i = gid(0);
  if (i < n) c[i] = a[i] + b[i];
}

__kernel void saxpy(float alpha, __global const float *x, __global float *y, uint n) {
  uint i = gid(0);
  if (i < n) y[i] = alpha * x[i] + y[i];
}

__kernel void copy_widths(__global const uchar *b8, __global const short *s16, __global const long *l64,
                          __global uchar *o8, __global short *o16, __global long *o64, __global float4 *v4) {
  uint i = gid(0);
  o8[i] = b8[i] + 1;
  o16[i] = s16[i] - 3;
  o64[i] = l64[i] << 3;
  v4[i] = v4[i] * (float4)(1.0f, 2.0f, 3.0f, 4.0f);
}

__kernel void gather(__global const int *idx, __global const float *src, __global float *dst,
                     __constant float *scale) {
  uint i = gid(0);
  dst[i] = src[idx[i]] * scale[i & 3];
}

__kernel void grid2d(__global int *out, uint width) {
  out[gid(1) * width + gid(0)] = (int)(lid(0) + 16 * lid(1) + 256 * lid(2));
}
