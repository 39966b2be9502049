// Kernels the profiler tests trace and count: straight-line code, a loop, a data-dependent branch, a barrier.
#include "helpers.h"

__kernel void straight(__global float *a, __global const float *b) {
  uint i = gid(0);
  a[i] = a[i] * 2.0f + b[i];
}

__kernel void loop(__global float *a, uint n) {
  uint i = gid(0);
  float acc = 0.0f;
  for (uint k = 0; k < n; k++) acc = acc * 0.5f + (float)(k + i);
  a[i] = acc;
}

__kernel void branch(__global int *a) {
  uint i = gid(0);
  if (a[i] > 0) a[i] = a[i] * 3;
  else a[i] = -a[i];
}

__kernel void reduce(__global float *out, __global const float *in) {
  __local float tile[64];
  uint l = lid(0);
  tile[l] = in[gid(0)];
  lbarrier();
  for (uint s = 32; s > 0; s >>= 1) {
    if (l < s) tile[l] += tile[l + s];
    lbarrier();
  }
  if (l == 0) out[grp(0)] = tile[0];
}
