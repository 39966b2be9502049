// Divergence: lane-dependent loop trip counts, nested branches, early returns, break/continue, switch,
// partially filled waves (blocks that are not a multiple of the wave size) and uniform (scalar) branches.
#include "emu.h"

// Collatz steps to reach 1 (capped): every lane loops a different number of times.
__kernel void collatz(__global const uint *n, __global uint *steps, __global uint *peak) {
  uint i = gid(0);
  uint v = n[i], s = 0, top = v;
  while (v != 1 && s < 1000) {
    v = (v & 1) ? 3 * v + 1 : v >> 1;
    top = v > top ? v : top;
    ++s;
  }
  steps[i] = s;
  peak[i] = top;
}

__kernel void nested_branches(__global const int *a, __global int *out) {
  uint i = gid(0);
  int x = a[i], r;
  if (x > 0) {
    if (x & 1)
      r = x * 3;
    else if (x % 3 == 0)
      r = x / 3;
    else
      r = -x;
  } else if (x < -100) {
    r = x + 1000;
    if (r < 0) r = 0;
  } else {
    r = x * x;
  }
  switch (x & 7) {
  case 0:
    r += 1;
    break;
  case 1:
    r ^= 0x55;
    break;
  case 3:
  case 5:
    r -= 7;
    break;
  default:
    r <<= 1;
  }
  out[i] = r;
}

// The grid overshoots n; negative inputs leave early; the loop skips and stops on data.
__kernel void early_exit(__global const int *a, __global int *out, int n, int limit) {
  int i = (int)gid(0);
  if (i >= n) return;
  int x = a[i];
  if (x < 0) {
    out[i] = -1;
    return;
  }
  int s = 0;
  for (int k = 0; k < x; ++k) {
    if (k % 5 == 4) continue;
    s += k;
    if (s > limit) break;
  }
  out[i] = s;
}

// Block of 96: three wave32s, or a full and a half-empty wave64. Inner trip count depends on the outer index.
__kernel void nested_loops(__global const uint *a, __global uint *out) {
  uint i = gid(0);
  uint x = a[i], acc = 0;
  for (uint j = 0; j < (x & 15); ++j)
    for (uint k = j; k < ((x >> 4) & 15); ++k) acc = acc * 31u + (j ^ k);
  out[i] = acc;
}

// mode is uniform (a kernel argument): its branches are scalar; the data-dependent one is not.
__kernel void uniform_branch(__global const int *a, __global int *out, int mode) {
  uint i = gid(0);
  int x = a[i];
  int r;
  if (mode == 0)
    r = x + 1;
  else if (mode == 1)
    r = x * 2;
  else
    r = x - 3;
  for (int k = 0; k < mode; ++k) r += k;  // uniform trip count
  if (x > 50) r = -r;
  out[i] = r;
}
