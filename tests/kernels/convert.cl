// Conversions between int, float, half and double, with rounding and saturation.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "helpers.h"

__kernel void int_float(__global const int *i32, __global const uint *u32, __global float *f, __global int *o) {
  uint i = gid(0);
  f[i] = (float)i32[i] + (float)u32[i];
  o[i] = (int)f[i + 1] + (int)(uint)f[i + 2];
  f[i + 3] = (float)(uchar)u32[i] + (float)(char)i32[i];
}

__kernel void half_float(__global const half *h, __global float *f, __global half *oh, __global short *s) {
  uint i = gid(0);
  f[i] = (float)h[i];
  oh[i] = (half)f[i + 1];
  s[i] = (short)h[i + 2];
  oh[i + 1] = (half)(int)s[i + 1];
}

__kernel void double_conv(__global const double *d, __global float *f, __global long *l, __global double *o) {
  uint i = gid(0);
  f[i] = (float)d[i];
  l[i] = (long)d[i + 1];
  o[i] = (double)f[i + 1] + (double)l[i + 1] + (double)(uint)l[i + 2] + (double)(int)f[i + 2];
  f[i + 1] = (float)l[i + 3];
}

__kernel void packs(__global const float *f, __global uint *o) {
  uint i = gid(0);
  half2 p = __builtin_amdgcn_cvt_pkrtz(f[i], f[i + 1]);
  o[i] = as_uint(p);
  o[i + 1] = __builtin_amdgcn_cvt_pk_u8_f32(f[i], 1, o[i + 2]);
}
