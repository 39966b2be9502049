// Local data share with barriers: tree reduction, Hillis-Steele scan, tile transpose, LDS atomics,
// and a dynamically sized __local argument.
#include "emu.h"

#define RB 256
__kernel void reduce_tree(__global const int *a, __global int *sums) {
  __local int buf[RB];
  uint l = lid(0);
  buf[l] = a[gid(0)];
  lbarrier();
  for (uint s = RB / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] += buf[l + s];
    lbarrier();
  }
  if (l == 0) sums[grp(0)] = buf[0];
}

// Inclusive scan of each workgroup's 256 values, double-buffered so no step reads what it writes.
__kernel void scan_hillis_steele(__global const uint *a, __global uint *out) {
  __local uint buf[2][RB];
  uint l = lid(0), src = 0;
  buf[0][l] = a[gid(0)];
  lbarrier();
  for (uint off = 1; off < RB; off <<= 1) {
    uint v = buf[src][l];
    if (l >= off) v += buf[src][l - off];
    buf[src ^ 1][l] = v;
    src ^= 1;
    lbarrier();
  }
  out[gid(0)] = buf[src][l];
}

// out = in^T for a w x h matrix (h rows of w); 16x16 blocks, a padded tile avoids bank conflicts.
#define T 16
__kernel void transpose(__global const float *in, __global float *out, uint w, uint h) {
  __local float tile[T][T + 1];
  uint x = gid(0), y = gid(1);
  tile[lid(1)][lid(0)] = in[y * w + x];
  lbarrier();
  uint ox = grp(1) * T + lid(0), oy = grp(0) * T + lid(1);
  out[oy * h + ox] = tile[lid(0)][lid(1)];
}

// 64-bin histogram and min/max in LDS, merged into global memory with device-scope atomics.
#define BINS 64
__kernel void lds_atomics(__global const uint *a, __global uint *hist, __global uint *minmax) {
  __local atomic_uint bins[BINS];
  __local atomic_uint lmin, lmax;
  uint l = lid(0);
  if (l < BINS) __opencl_atomic_store(&bins[l], 0u, memory_order_relaxed, memory_scope_work_group);
  if (l == 0) {
    __opencl_atomic_store(&lmin, 0xffffffffu, memory_order_relaxed, memory_scope_work_group);
    __opencl_atomic_store(&lmax, 0u, memory_order_relaxed, memory_scope_work_group);
  }
  lbarrier();
  uint v = a[gid(0)];
  RELAXED_WG(fetch_add, &bins[v % BINS], 1u);
  RELAXED_WG(fetch_min, &lmin, v);
  RELAXED_WG(fetch_max, &lmax, v);
  lbarrier();
  if (l < BINS) {
    uint c = __opencl_atomic_load(&bins[l], memory_order_relaxed, memory_scope_work_group);
    RELAXED_DEV(fetch_add, (__global atomic_uint *)&hist[l], c);
  }
  if (l == 0) {
    RELAXED_DEV(fetch_min, (__global atomic_uint *)&minmax[0],
                __opencl_atomic_load(&lmin, memory_order_relaxed, memory_scope_work_group));
    RELAXED_DEV(fetch_max, (__global atomic_uint *)&minmax[1],
                __opencl_atomic_load(&lmax, memory_order_relaxed, memory_scope_work_group));
  }
}

// buf is sized by the launch (dynamic LDS): reverse each workgroup's slice.
__kernel void dyn_lds_reverse(__global const int *a, __global int *out, __local int *buf) {
  uint l = lid(0), n = lsize(0);
  buf[l] = a[gid(0)];
  lbarrier();
  out[gid(0)] = buf[n - 1 - l];
}
