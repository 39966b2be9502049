// Kernel arguments: structs by value, vectors by value, many scalars of every width.
#include "helpers.h"

typedef struct {
  float scale;
  int offset;
  char tag;
  double weight;
  short pair[2];
} params_t;

typedef struct {
  float4 v;
  uint n;
} small_t;

__kernel void by_struct(__global float *out, params_t p, small_t s) {
  uint i = gid(0);
  out[i] = out[i] * p.scale + p.offset + p.tag + (float)p.weight + p.pair[0] * p.pair[1] + s.v.x * s.v.w + s.n;
}

__kernel void many_args(__global int *o, char a, uchar b, short c, ushort d, int e, uint f, long g, ulong h,
                        float k, double l, int m, int n, int p, int q, int r, int s, float t, float u,
                        __global const int *extra, uint last) {
  uint i = gid(0);
  o[i] = a + b + c + d + e + (int)f + (int)g + (int)h + (int)k + (int)l + m * n + p * q + r * s + (int)(t * u) +
         extra[i] + (int)last;
}

__kernel void vec_args(__global float4 *o, float4 v, int2 w, uchar4 x) {
  uint i = gid(0);
  o[i] = v * (float)w.x + (float4)((float)x.s0, (float)x.s1, (float)x.s2, (float)x.s3) + (float)w.y;
}

__kernel void no_args(void) {}
