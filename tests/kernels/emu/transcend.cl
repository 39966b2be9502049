// Approximate hardware math (v_rcp, v_rsq, v_sqrt, v_exp, v_log, v_sin, v_cos: ~1 ulp or absolute bounds),
// the exact helpers (fract, ldexp, frexp), and division in f32 (2.5 ulp), f64 and f16.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "emu.h"

__kernel void rcp_rsq_sqrt(__global const float *x, __global float *rcp, __global float *rsq, __global float *sq) {
  uint i = gid(0);
  float v = x[i];
  rcp[i] = __builtin_amdgcn_rcpf(v);
  rsq[i] = __builtin_amdgcn_rsqf(v);
  sq[i] = __builtin_sqrtf(v);
}

__kernel void exp2_hw(__global const float *x, __global float *out) {
  uint i = gid(0);
  out[i] = __builtin_amdgcn_exp2f(x[i]);
}

__kernel void log2_hw(__global const float *x, __global float *out) {
  uint i = gid(0);
  out[i] = __builtin_amdgcn_logf(x[i]);
}

// v_sin/v_cos take the angle in revolutions: sin(2*pi*x).
__kernel void sin_cos(__global const float *x, __global float *s, __global float *c) {
  uint i = gid(0);
  s[i] = __builtin_amdgcn_sinf(x[i]);
  c[i] = __builtin_amdgcn_cosf(x[i]);
}

__kernel void fract_ldexp_frexp(__global const float *x, __global const int *e, __global float *fr,
                                __global float *ld, __global float *mant, __global int *ex) {
  uint i = gid(0);
  float v = x[i];
  fr[i] = __builtin_amdgcn_fractf(v);
  ld[i] = __builtin_amdgcn_ldexpf(v, e[i]);
  mant[i] = __builtin_amdgcn_frexp_mantf(v);
  ex[i] = __builtin_amdgcn_frexp_expf(v);
}

// OpenCL's default f32 division is accurate to 2.5 ulp (no -cl-fp32-correctly-rounded-divide-sqrt).
__kernel void fdiv(__global const float *a, __global const float *b, __global float *q) {
  uint i = gid(0);
  q[i] = a[i] / b[i];
}

__kernel void ddiv_sqrt(__global const double *a, __global const double *b, __global double *q, __global double *r) {
  uint i = gid(0);
  q[i] = a[i] / b[i];
  r[i] = __builtin_sqrt(a[i]);
}

__kernel void half_div_sqrt(__global const half *a, __global const half *b, __global half *q, __global half *r,
                            __global half *rc) {
  uint i = gid(0);
  q[i] = a[i] / b[i];
  r[i] = __builtin_amdgcn_sqrth(a[i]);
  rc[i] = __builtin_amdgcn_rcph(b[i]);
}
