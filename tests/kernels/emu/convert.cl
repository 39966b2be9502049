// Conversions: int <-> float both ways, f32 <-> f16, f32 <-> f64, i64 <-> f64/f32, narrowing and widening,
// and saturating conversions written out explicitly (OpenCL's convert_*_sat are library functions).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "emu.h"

__kernel void int_float(__global const int *si, __global const uint *ui, __global const float *fs,
                        __global const float *fu, __global float *fo, __global int *io) {
  uint i = gid(0);
  fo[2 * i] = (float)si[i];  // round to nearest even
  fo[2 * i + 1] = (float)ui[i];
  io[2 * i] = (int)fs[i];  // truncate; inputs are in range
  io[2 * i + 1] = (int)(uint)fu[i];
}

// NaN -> 0, out of range -> the nearest representable value; u8 rounds to nearest even first.
__kernel void sat_convert(__global const float *f, __global int *i32, __global uchar *u8, __global short *i16) {
  uint i = gid(0);
  float x = f[i];
  i32[i] = x != x ? 0 : x >= 2147483648.0f ? 2147483647 : x < -2147483648.0f ? (-2147483647 - 1) : (int)x;
  float r = __builtin_rintf(x);
  u8[i] = x != x ? 0 : r <= 0.0f ? 0 : r >= 255.0f ? 255 : (uchar)r;
  i16[i] = x != x ? 0 : x >= 32767.0f ? 32767 : x <= -32768.0f ? -32768 : (short)x;
}

__kernel void half_convert(__global const float *f, __global half *h, __global const half *hin, __global float *fo) {
  uint i = gid(0);
  h[i] = (half)f[i];  // round to nearest even, overflow to inf, f16 subnormals kept
  fo[i] = (float)hin[i];
}

__kernel void double_convert(__global const float *f, __global const double *d, __global const long *l,
                             __global double *fd, __global float *df, __global double *ld, __global long *dl,
                             __global float *lf) {
  uint i = gid(0);
  fd[i] = (double)f[i];
  df[i] = (float)d[i];
  ld[i] = (double)l[i];
  dl[i] = (long)d[i];  // truncate; inputs are in range
  lf[i] = (float)l[i];
}

#define NARROW 6
__kernel void int_narrow(__global const int *a, __global char *c, __global short *s, __global int *ext) {
  uint i = gid(0);
  int x = a[i];
  c[i] = (char)x;
  s[i] = (short)x;
  __global int *o = ext + NARROW * i;
  o[0] = (char)x;
  o[1] = (uchar)x;
  o[2] = (short)x;
  o[3] = (ushort)x;
  o[4] = (int)(long)(char)x * 3;
  o[5] = (int)((ulong)(uint)x >> 4);
}
