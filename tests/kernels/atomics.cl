// Atomics on global and local memory: add, exchange, compare-exchange, min/max, bit ops, float add.
#include "helpers.h"

__kernel void global_int(__global int *ctr, __global uint *u, __global long *w) {
  uint i = gid(0);
  int old = __scoped_atomic_fetch_add(&ctr[0], 1, __ATOMIC_RELAXED, __MEMORY_SCOPE_DEVICE);
  __atomic_fetch_sub(&ctr[1], 2, __ATOMIC_SEQ_CST);
  __atomic_fetch_min(&ctr[2], (int)i - 100, __ATOMIC_RELAXED);
  __atomic_fetch_max(&ctr[3], (int)i, __ATOMIC_RELAXED);
  __atomic_fetch_min(&u[0], i, __ATOMIC_RELAXED);
  __atomic_fetch_and(&u[1], ~(1u << (i & 31)), __ATOMIC_RELAXED);
  __atomic_fetch_or(&u[2], 1u << (i & 31), __ATOMIC_RELAXED);
  __atomic_fetch_xor(&u[3], i, __ATOMIC_RELAXED);
  u[4 + i] = __atomic_exchange_n(&u[5 + i], (uint)old, __ATOMIC_ACQ_REL);
  __atomic_fetch_add(&w[0], (long)i, __ATOMIC_RELAXED);
}

__kernel void global_cas(__global int *lock, __global int *val) {
  int expected = 0;
  if (__atomic_compare_exchange_n(lock, &expected, (int)gid(0) + 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    val[0] += 1;
  long e = 5;
  __atomic_compare_exchange_n((__global long *)&val[2], &e, 6l, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

__kernel void global_float(__global float *f, __global double *d) {
  uint i = gid(0);
  __atomic_fetch_add(&f[0], (float)i, __ATOMIC_RELAXED);
  __atomic_fetch_max(&f[1], (float)i, __ATOMIC_RELAXED);
  __atomic_fetch_add(&d[0], 1.0, __ATOMIC_RELAXED);
}

__kernel void local_hist(__global const uint *in, __global uint *hist) {
  __local uint bins[16];
  __local float fsum;
  uint l = lid(0);
  if (l < 16) bins[l] = 0;
  if (l == 0) fsum = 0.0f;
  lbarrier();
  uint v = in[gid(0)];
  __atomic_fetch_add(&bins[v & 15], 1u, __ATOMIC_RELAXED);
  __atomic_fetch_max(&bins[(v >> 4) & 15], v, __ATOMIC_RELAXED);
  uint e = 0;
  __atomic_compare_exchange_n(&bins[0], &e, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  __atomic_fetch_add(&fsum, 1.0f, __ATOMIC_RELAXED);
  lbarrier();
  if (l < 16) __atomic_fetch_add(&hist[l], bins[l] + (uint)fsum, __ATOMIC_RELAXED);
}
