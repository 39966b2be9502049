// Compares, selects and divergent control flow: if/else, loops with breaks, switch, early return.
#include "helpers.h"

__kernel void compare_select(__global const float *a, __global const int *b, __global float *out) {
  uint i = gid(0);
  float x = a[i];
  int y = b[i];
  out[i] = (x > 0.5f && y != 3) ? x * 2.0f : (y < -1 ? -x : (float)y);
  out[i + 1] = x >= 1.0f || x <= -1.0f ? 1.0f : 0.0f;
}

__kernel void diverge(__global int *a) {
  uint i = gid(0);
  int v = a[i];
  if (i & 1) {
    v = v * 3 + 1;
    if (v > 100) v -= 50;
  } else {
    v >>= 1;
  }
  a[i] = v;
}

__kernel void loops(__global int *a, int n) {
  uint i = gid(0);
  int acc = 0;
  for (int k = 0; k < n + (int)i % 5; ++k) {
    if (a[k] == 7) break;
    acc += a[k] * k;
  }
  int j = 0;
  while (acc > 10 && j < 32) {
    acc = acc % 2 ? 3 * acc + 1 : acc / 2;
    ++j;
  }
  a[i] = acc + j;
}

__kernel void switch_case(__global int *a) {
  uint i = gid(0);
  if (a[i] < 0) return;
  switch (a[i] & 7) {
    case 0: a[i] = 10; break;
    case 1: a[i] = 20; break;
    case 3: a[i] += 5; break;
    case 6: a[i] *= 9; break;
    default: a[i] = -1;
  }
}
