// Kernel arguments: by-value scalars of every width, vectors, a struct by value, a __constant pointer.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#include "emu.h"

// Work-item 0 writes back every scalar; all items also combine them.
__kernel void scalar_args(__global long *li, __global double *dd, char c, uchar uc, short s, ushort us, int i,
                          uint ui, long l, ulong ul, float f, double d, half h, __global int *per_item) {
  uint g = gid(0);
  if (g == 0) {
    li[0] = c;
    li[1] = uc;
    li[2] = s;
    li[3] = us;
    li[4] = i;
    li[5] = ui;
    li[6] = l;
    li[7] = (long)ul;
    dd[0] = f;
    dd[1] = d;
    dd[2] = (double)h;
  }
  per_item[g] = (int)((uint)c * g + (uint)uc + (uint)s * 3u + (uint)us + (uint)i + ui * g + (uint)l + (uint)(ul >> 32));
}

// Natural C layout: tag@0, n@4, scale@8, pair@16, w@20; 24 bytes, 8-aligned.
typedef struct {
  char tag;
  int n;
  double scale;
  short pair[2];
  float w;
} params_t;

#define VS 12
__kernel void vector_struct_args(__global double *fields, __global float *out, uint2 u, float4 v, params_t p,
                                 short tail) {
  uint g = gid(0);
  if (g == 0) {
    fields[0] = u.x;
    fields[1] = u.y;
    fields[2] = v.x;
    fields[3] = v.y;
    fields[4] = v.z;
    fields[5] = v.w;
    fields[6] = p.tag;
    fields[7] = p.n;
    fields[8] = p.scale;
    fields[9] = p.pair[0] * 1000 + p.pair[1];
    fields[10] = p.w;
    fields[11] = tail;
  }
  float vv[4] = {v.x, v.y, v.z, v.w};
  out[g] = vv[g & 3] * (float)p.scale + (float)((g & 1) ? u.y : u.x) + (float)(p.pair[g & 1] + p.tag + tail);
}

// Horner evaluation with coefficients from the constant address space (scalar loads).
__kernel void constant_poly(__constant float *coef, __global const float *x, __global float *y, int degree) {
  uint i = gid(0);
  float v = x[i], acc = coef[degree];
  for (int k = degree - 1; k >= 0; --k) acc = __builtin_fmaf(acc, v, coef[k]);
  y[i] = acc;
}
