// LDS with barriers: tree reduction, tile transpose, and a dynamically sized __local argument.
#include "helpers.h"

#define TILE 16

__kernel void reduce_sum(__global const float *in, __global float *out) {
  __local float buf[256];
  uint l = lid(0);
  buf[l] = in[gid(0)];
  lbarrier();
  for (uint s = lsize(0) / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] += buf[l + s];
    lbarrier();
  }
  if (l == 0) out[grp(0)] = buf[0];
}

__kernel void transpose(__global const float *in, __global float *out, uint width, uint height) {
  __local float tile[TILE][TILE + 1];
  uint x = gid(0), y = gid(1);
  if (x < width && y < height) tile[lid(1)][lid(0)] = in[y * width + x];
  lbarrier();
  x = grp(1) * TILE + lid(0);
  y = grp(0) * TILE + lid(1);
  if (x < height && y < width) out[y * height + x] = tile[lid(0)][lid(1)];
}

__kernel void dyn_local(__global int *data, __local int *scratch) {
  uint l = lid(0), n = lsize(0);
  scratch[l] = data[gid(0)];
  lbarrier();
  data[gid(0)] = scratch[(l + 1) % n] + scratch[n - 1 - l];
}
