// Global atomics whose final memory is independent of the order the work-items ran in.
// (The compiler's atomic optimizer may first combine a wave's uniform-address updates with cross-lane ops.)
#include "emu.h"

#define G(type, p) ((__global type *)(p))

__kernel void atomic_add_sub(__global const uint *a, __global uint *ctr) {
  uint i = gid(0), v = a[i];
  RELAXED_DEV(fetch_add, G(atomic_uint, &ctr[i & 15]), v);  // 16 counters, lane-varying address
  RELAXED_DEV(fetch_add, G(atomic_uint, &ctr[16]), 1u);     // one address: the whole grid
  RELAXED_DEV(fetch_sub, G(atomic_uint, &ctr[17]), v & 0xff);
}

__kernel void atomic_minmax(__global const int *a, __global int *mm) {
  int v = a[gid(0)];
  RELAXED_DEV(fetch_min, G(atomic_int, &mm[0]), v);
  RELAXED_DEV(fetch_max, G(atomic_int, &mm[1]), v);
  RELAXED_DEV(fetch_min, G(atomic_uint, &mm[2]), (uint)v);
  RELAXED_DEV(fetch_max, G(atomic_uint, &mm[3]), (uint)v);
  RELAXED_DEV(fetch_min, G(atomic_int, &mm[4 + (gid(0) & 3)]), v);  // per-lane address
}

__kernel void atomic_bitwise(__global const uint *a, __global uint *bits) {
  uint v = a[gid(0)];
  RELAXED_DEV(fetch_and, G(atomic_uint, &bits[0]), v);
  RELAXED_DEV(fetch_or, G(atomic_uint, &bits[1]), v);
  RELAXED_DEV(fetch_xor, G(atomic_uint, &bits[2]), v);
}

// Each workgroup exchanges its work-items' ids through one slot. Every old value comes out exactly once,
// and after the barrier the slot holds the last id: marking all of them gives one mark per id and the seed.
__kernel void atomic_xchg(__global uint *slot, __global uint *seen) {
  uint g = grp(0), i = gid(0);
  uint old = __opencl_atomic_exchange(G(atomic_uint, &slot[g]), i + 1, memory_order_relaxed, memory_scope_device);
  RELAXED_DEV(fetch_add, G(atomic_uint, &seen[old]), 1u);
  gbarrier();
  if (lid(0) == 0) {
    uint last = __opencl_atomic_load(G(atomic_uint, &slot[g]), memory_order_relaxed, memory_scope_device);
    RELAXED_DEV(fetch_add, G(atomic_uint, &seen[last]), 1u);
  }
}

// Float maximum by a compare-exchange loop on the bits (no float max atomic needed).
__kernel void atomic_cas_fmax(__global const float *a, __global float *m) {
  float v = a[gid(0)];
  __global atomic_uint *p = G(atomic_uint, m);
  uint cur = __opencl_atomic_load(p, memory_order_relaxed, memory_scope_device);
  while (as_float(cur) < v &&
         !__opencl_atomic_compare_exchange_weak(p, &cur, as_uint(v), memory_order_relaxed, memory_order_relaxed,
                                                memory_scope_device)) {
  }
}

__kernel void atomic_add_u64(__global const ulong *a, __global ulong *sum) {
  ulong v = a[gid(0)];
  RELAXED_DEV(fetch_add, G(atomic_ulong, &sum[0]), v);
  RELAXED_DEV(fetch_add, G(atomic_ulong, &sum[1 + (gid(0) & 1)]), v << 20);
}

// Inputs are multiples of 1/4 with small sums, so every order of the f32 additions is exact.
__kernel void atomic_add_f32(__global const float *a, __global float *sum) {
  float v = a[gid(0)];
  RELAXED_DEV(fetch_add, G(atomic_float, &sum[0]), v);
  // the same through a compare-exchange loop
  __global atomic_uint *p = G(atomic_uint, &sum[1]);
  uint cur = __opencl_atomic_load(p, memory_order_relaxed, memory_scope_device);
  while (!__opencl_atomic_compare_exchange_weak(p, &cur, as_uint(as_float(cur) + v), memory_order_relaxed,
                                                memory_order_relaxed, memory_scope_device)) {
  }
}

// fetch_add hands out unique tickets; every ticket's flag is set exactly once. atomic_inc wraps at `wrap`.
__kernel void atomic_ticket(__global uint *ctr, __global uint *flags, uint wrap) {
  uint t = RELAXED_DEV(fetch_add, G(atomic_uint, &ctr[0]), 1u);
  flags[t] += 1;
  __builtin_amdgcn_atomic_inc32((volatile __global uint *)&ctr[1], wrap, __ATOMIC_RELAXED, "agent");
  __builtin_amdgcn_atomic_dec32((volatile __global uint *)&ctr[2], wrap, __ATOMIC_RELAXED, "agent");
}
