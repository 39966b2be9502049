// Private memory: arrays indexed by data are too big for registers and live in scratch; non-inlined calls
// pass private pointers and use the stack.
#include "emu.h"

// A 64-entry table per work-item, walked by the values it holds.
#define PW 64
__kernel void private_walk(__global const int *tab, __global int *out, int steps) {
  int t[PW];
  uint i = gid(0);
  for (int k = 0; k < PW; ++k) t[k] = tab[i * PW + k];
  int idx = (int)(i % PW);
  uint acc = 0;  // wraps
  for (int s = 0; s < steps; ++s) {
    int v = t[idx];
    acc = acc * 3u + (uint)v;
    t[idx] = v + s;  // writes at data-dependent places too
    idx = (v ^ s) & (PW - 1);
  }
  out[i] = (int)acc;
}

// Insertion sort of 32 values per work-item in a private array.
#define PS 32
__kernel void private_sort(__global int *data) {
  int v[PS];
  uint i = gid(0);
  for (int k = 0; k < PS; ++k) v[k] = data[i * PS + k];
  for (int a = 1; a < PS; ++a)
    for (int b = a; b > 0 && v[b - 1] > v[b]; --b) {
      int t = v[b];
      v[b] = v[b - 1];
      v[b - 1] = t;
    }
  for (int k = 0; k < PS; ++k) data[i * PS + k] = v[k];
}

__attribute__((noinline)) static int weighted(__private const int *buf, int n, int w) {
  uint s = 0;  // wraps
  for (int k = 0; k < n; ++k) s += (uint)buf[k] * (uint)(w - k);
  return (int)s;
}

__attribute__((noinline)) static void fill(__private int *buf, int n, int seed) {
  for (int k = 0; k < n; ++k) buf[k] = (seed ^ (k * 7)) - k;
}

#define PC 40
__kernel void private_calls(__global const int *a, __global int *out) {
  int buf[PC];
  uint i = gid(0);
  int x = a[i];
  fill(buf, PC, x);
  int n = 1 + (x & 31);  // lane-dependent length
  out[2 * i] = weighted(buf, n, x >> 8);
  out[2 * i + 1] = buf[(x >> 3) % PC];
}
