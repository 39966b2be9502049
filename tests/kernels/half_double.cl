// Half precision (scalar and packed half2) and double precision arithmetic.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "helpers.h"

__kernel void half_math(__global half *a, __global const half *b) {
  uint i = gid(0);
  half x = a[i], y = b[i];
  a[i] = x * y + (half)1.5f - x / y;
  a[i + 1] = __builtin_fmaf16(x, y, x) + __builtin_fabsf16(y) + __builtin_sqrtf16(x);
  a[i + 2] = x < y ? __builtin_fminf16(x, y) : __builtin_fmaxf16(x, y);
}

__kernel void half2_math(__global half2 *a, __global const half2 *b) {
  uint i = gid(0);
  a[i] = a[i] * b[i] + (half2)(0.5h, 2.0h);
  a[i + 1] = a[i + 1] - b[i];
}

__kernel void double_math(__global double *a, __global const double *b, double s) {
  uint i = gid(0);
  double x = a[i], y = b[i];
  a[i] = x / y + __builtin_fma(x, y, s) + __builtin_sqrt(__builtin_fabs(x));
  a[i + 1] = __builtin_fmin(x, y) * __builtin_fmax(x, s) + __builtin_floor(x) + __builtin_trunc(y);
  a[i + 2] = __builtin_amdgcn_rcp(x) + __builtin_amdgcn_rsq(y) + __builtin_amdgcn_ldexp(x, 5);
}
