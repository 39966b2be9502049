// Integer arithmetic: division and modulo (32 and 64 bit), high multiplies, bit counting, shifts and bit fields.
#include "helpers.h"

__kernel void divmod(__global int *a, __global uint *b, __global long *c, __global ulong *d) {
  uint i = gid(0);
  int x = a[i], y = a[i + 1];
  a[i] = x / y + x % y;
  b[i] = b[i] / b[i + 1] + b[i] % 7u;
  c[i] = c[i] / c[i + 1] - c[i] % c[i + 2];
  d[i] = d[i] / d[i + 1] + d[i] % 10ul;
}

__kernel void mulhi(__global int *a, __global uint *b, __global long *c) {
  uint i = gid(0);
  a[i] = (int)(((long)a[i] * a[i + 1]) >> 32);
  b[i] = (uint)(((ulong)b[i] * b[i + 1]) >> 32) + b[i] * 24u;
  c[i] = c[i] * c[i + 1] + (long)a[i] * b[i];
}

__kernel void bits(__global uint *a, __global ulong *w) {
  uint i = gid(0);
  uint x = a[i];
  a[i] = __builtin_popcount(x) + __builtin_clz(x | 1) + __builtin_ctz(x | 0x80000000u) +
         __builtin_bitreverse32(x) + __builtin_bswap32(x) + __builtin_rotateleft32(x, 7);
  a[i + 1] = (x & 0xff00ff) | (x ^ 0x1234) | ~x;
  a[i + 2] = __builtin_amdgcn_ubfe(x, 4, 8) + (uint)__builtin_amdgcn_sbfe((int)x, 3, 9) +
             __builtin_amdgcn_alignbit(x, a[i + 3], 5) + __builtin_amdgcn_alignbyte(x, a[i + 4], 2);
  w[i] = __builtin_popcountl(w[i]) + __builtin_clzl(w[i] | 1) + (w[i] >> 13) + (w[i] << 40);
}

__kernel void shifts(__global int *a, __global uint *b, uint s) {
  uint i = gid(0);
  a[i] = (a[i] >> s) + (a[i] << (s & 31));
  b[i] = (b[i] >> (s & 31)) | (b[i] << 3);
}

__kernel void minmax_abs(__global int *a, __global uint *b, __global short *h, __global char *c) {
  uint i = gid(0);
  int x = a[i], y = a[i + 1];
  a[i] = (x < y ? x : y) + (x > y ? x : y) + (x < 0 ? -x : x);
  b[i] = b[i] < b[i + 1] ? b[i + 1] - b[i] : b[i] - b[i + 1];
  h[i] = (short)(h[i] * h[i + 1] + 3);
  c[i] = (char)(c[i] + c[i + 1] - 5);
  a[i + 2] = __builtin_amdgcn_sad_u8(b[i], b[i + 2], 0u) + __builtin_amdgcn_lerp(b[i], b[i + 2], 1u);
}
