// Private memory: arrays indexed by run-time values live in scratch; a non-inlined call uses the stack.
#include "helpers.h"

__kernel void private_array(__global const int *idx, __global int *out) {
  int tmp[64];
  uint i = gid(0);
  for (int k = 0; k < 64; ++k) tmp[k] = k * (int)i + idx[k];
  out[i] = tmp[idx[i] & 63] + tmp[(idx[i] >> 6) & 63];
}

__kernel void private_sort(__global float *data) {
  float v[16];
  uint i = gid(0);
  for (int k = 0; k < 16; ++k) v[k] = data[i * 16 + k];
  for (int a = 1; a < 16; ++a)
    for (int b = a; b > 0 && v[b - 1] > v[b]; --b) {
      float t = v[b];
      v[b] = v[b - 1];
      v[b - 1] = t;
    }
  for (int k = 0; k < 16; ++k) data[i * 16 + k] = v[k];
}

__attribute__((noinline)) static int callee(__private int *buf, int n) {
  int s = 0;
  for (int k = 0; k < n; ++k) s += buf[k] * buf[n - 1 - k];
  return s;
}

__kernel void calls(__global int *a) {
  int buf[32];
  uint i = gid(0);
  for (int k = 0; k < 32; ++k) buf[k] = a[(i + k) % 32];
  a[i] = callee(buf, (int)(i % 32) + 1);
}
