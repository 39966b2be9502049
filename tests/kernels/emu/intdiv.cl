// Integer division and remainder: the compiler expands 32- and 64-bit division inline (no hardware divide),
// and divisions by constants become multiply-high sequences. Inputs never divide by 0 or INT_MIN by -1.
#include "emu.h"

__kernel void udiv32(__global const uint *a, __global const uint *b, __global uint *q, __global uint *r) {
  uint i = gid(0);
  q[i] = a[i] / b[i];
  r[i] = a[i] % b[i];
}

__kernel void sdiv32(__global const int *a, __global const int *b, __global int *q, __global int *r) {
  uint i = gid(0);
  q[i] = a[i] / b[i];
  r[i] = a[i] % b[i];
}

__kernel void udiv64(__global const ulong *a, __global const ulong *b, __global ulong *q, __global ulong *r) {
  uint i = gid(0);
  q[i] = a[i] / b[i];
  r[i] = a[i] % b[i];
}

__kernel void sdiv64(__global const long *a, __global const long *b, __global long *q, __global long *r) {
  uint i = gid(0);
  q[i] = a[i] / b[i];
  r[i] = a[i] % b[i];
}

// Constant divisors (magic multiplies) and a uniform run-time divisor d (scalar-register operands).
#define CDIV 8
__kernel void div_const(__global const int *a, __global const long *w, __global long *out, int d, ulong dl) {
  uint i = gid(0);
  int x = a[i];
  long y = w[i];
  __global long *o = out + CDIV * i;
  o[0] = x / 7;
  o[1] = x % 7;
  o[2] = (uint)x / 10u;
  o[3] = x / -16;
  o[4] = x / d;
  o[5] = x % d;
  o[6] = y / 1000000007L;
  o[7] = (long)((ulong)y % dl);
}
