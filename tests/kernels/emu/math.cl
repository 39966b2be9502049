// Exact arithmetic: f32, i32, i64, f16 and f64 operations whose results are correctly rounded or exact.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "emu.h"

// y = a * x + y with one rounding; the grid overshoots n, so the tail work-items must leave y alone.
__kernel void saxpy(__global float *y, __global const float *x, float a, uint n) {
  uint i = gid(0);
  if (i < n) y[i] = __builtin_fmaf(a, x[i], y[i]);
}

#define FOPS 12
__kernel void float_ops(__global const float *a, __global const float *b, __global float *out) {
  uint i = gid(0);
  float x = a[i], y = b[i];
  __global float *o = out + FOPS * i;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = __builtin_fminf(x, y);
  o[4] = __builtin_fmaxf(x, y);
  o[5] = __builtin_fabsf(x);
  o[6] = __builtin_copysignf(x, y);
  o[7] = __builtin_floorf(x);
  o[8] = __builtin_ceilf(x);
  o[9] = __builtin_truncf(x);
  o[10] = __builtin_rintf(x);
  o[11] = x > y ? x : -y;
}

#define IOPS 16
__kernel void int_ops(__global const int *a, __global const int *b, __global int *out) {
  uint i = gid(0);
  int x = a[i], y = b[i];
  uint ux = (uint)x, uy = (uint)y, s = uy & 31;
  __global int *o = out + IOPS * i;
  o[0] = (int)(ux + uy);
  o[1] = (int)(ux - uy);
  o[2] = (int)(ux * uy);
  o[3] = (int)(((long)x * (long)y) >> 32);     // mul_hi signed
  o[4] = (int)(((ulong)ux * (ulong)uy) >> 32);  // mul_hi unsigned
  o[5] = (int)(ux << s);
  o[6] = x >> s;
  o[7] = (int)(ux >> s);
  o[8] = x < y ? x : y;
  o[9] = x > y ? x : y;
  o[10] = (int)(ux < uy ? ux : uy);
  o[11] = x < 0 ? (int)(0u - ux) : x;
  o[12] = (x & y) | (~x & (y >> 3));
  o[13] = (x < y) + 2 * (ux < uy) + 4 * (x == y);
  o[14] = (int)((ux & 0xffffffu) * (uy & 0xffffffu));  // 24-bit multiply
  o[15] = x ^ y;
}

#define LOPS 12
__kernel void int64_ops(__global const long *a, __global const long *b, __global long *out) {
  uint i = gid(0);
  long x = a[i], y = b[i];
  ulong ux = (ulong)x, uy = (ulong)y;
  uint s = (uint)uy & 63;
  __global long *o = out + LOPS * i;
  o[0] = (long)(ux + uy);
  o[1] = (long)(ux - uy);
  o[2] = (long)(ux * uy);
  o[3] = (long)(ux << s);
  o[4] = x >> s;
  o[5] = (long)(ux >> s);
  o[6] = x < y ? x : y;
  o[7] = (long)(ux > uy ? ux : uy);
  o[8] = (x < y) + 2 * (ux < uy) + 4 * (x == y);
  o[9] = (long)(ux ^ (uy << 7));
  o[10] = (long)((ulong)(uint)x * (ulong)(uint)y);  // 32x32->64
  o[11] = x < 0 ? (long)(0ul - ux) : x;
}

// Every operation rounds once from an exact f32 intermediate, so numpy's float16 arithmetic is exact here.
#define HOPS 6
__kernel void half_ops(__global const half *a, __global const half *b, __global half *out, __global float *wide) {
  uint i = gid(0);
  half x = a[i], y = b[i];
  __global half *o = out + HOPS * i;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = x > y ? x : y;
  o[4] = -x;
  half p = x * y;  // separate statements: no contraction into an f16 fma
  o[5] = p + y;
  wide[i] = (float)x * (float)y;  // exact in f32
}

#define DOPS 6
__kernel void double_ops(__global const double *a, __global const double *b, __global double *out) {
  uint i = gid(0);
  double x = a[i], y = b[i];
  __global double *o = out + DOPS * i;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = __builtin_fma(x, y, x);
  o[4] = __builtin_fmin(x, y);
  o[5] = __builtin_floor(x) + __builtin_trunc(y);
}
