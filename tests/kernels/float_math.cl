// Single precision: fma, min/max, fabs, division, sqrt, and the hardware transcendentals.
#include "helpers.h"

__kernel void arith(__global float *a, __global const float *b, float s) {
  uint i = gid(0);
  float x = a[i], y = b[i];
  a[i] = __builtin_fmaf(x, y, s) + __builtin_fminf(x, y) * __builtin_fmaxf(x, s) - __builtin_fabsf(y) + x / y;
  a[i + 1] = __builtin_copysignf(x, y) + __builtin_amdgcn_fmed3f(x, y, s);
}

__kernel void transcendental(__global float *a) {
  uint i = gid(0);
  float x = a[i];
  a[i] = __builtin_sqrtf(x) + __builtin_amdgcn_rsqf(x) + __builtin_amdgcn_rcpf(x) + __builtin_amdgcn_exp2f(x) +
         __builtin_amdgcn_logf(x);
  a[i + 1] = __builtin_amdgcn_sinf(x) + __builtin_amdgcn_cosf(x) + __builtin_amdgcn_fractf(x) +
             __builtin_amdgcn_ldexpf(x, 3) + __builtin_amdgcn_frexp_mantf(x) + (float)__builtin_amdgcn_frexp_expf(x);
}

__kernel void rounding(__global float *a) {
  uint i = gid(0);
  float x = a[i];
  a[i] = __builtin_floorf(x) + __builtin_ceilf(x) * 2.0f + __builtin_truncf(x) * 3.0f + __builtin_rintf(x) * 4.0f;
}

__kernel void classify(__global float *a, __global int *flags) {
  uint i = gid(0);
  float x = a[i];
  flags[i] = __builtin_isnan(x) | __builtin_isinf(x) << 1 | __builtin_amdgcn_class(x, 0x60) << 2 | (x != x) << 3;
}
