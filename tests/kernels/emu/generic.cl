// Generic (flat) pointers: one non-inlined function reached with an LDS, a private and a global pointer, so the
// same flat_load/flat_store must find each memory through its aperture.
#include "emu.h"

__attribute__((noinline)) static int bump(int *p, int i) {
  p[i] += i;
  return p[i];
}

__kernel void generic_ptrs(__global int *out) {
  __local int lds[64];
  int priv[8];
  uint t = lid(0);
  lds[t] = 100 * t;
  for (int k = 0; k < 8; k++) priv[k] = k * t;
  lbarrier();
  int a = bump(lds, t), b = bump(priv, t & 7), c = bump(out, t);
  out[64 + t] = a + b + c;
}
