// OpenCL 1.x atomic built-ins on global memory, whose final memory does not depend on the order the work-items
// ran in (the standard form of ../emu/atomics.cl).

__kernel void counters(__global const uint *a, __global uint *ctr, __global int *mm) {
  size_t i = get_global_id(0);
  uint v = a[i];
  atomic_add(&ctr[i & 15], v);  // 16 counters, lane-varying address
  atomic_inc(&ctr[16]);         // one address: the whole grid
  atomic_sub(&ctr[17], v & 0xff);
  atomic_and(&ctr[18], v | 0xffff0000u);
  atomic_or(&ctr[19], v & 0x0f0f0f0fu);
  atomic_xor(&ctr[20], v);
  atomic_min(&mm[0], (int)v);
  atomic_max(&mm[1], (int)v);
  atomic_min((__global uint *)&mm[2], v);
  atomic_max((__global uint *)&mm[3], v);
}

// Each work-item takes a ticket; the first work-item of each ticket block claims the block with cmpxchg.
__kernel void tickets(__global uint *next, __global uint *owner, __global uint *seen) {
  uint t = atomic_inc(next);
  atomic_xchg(&seen[t], 1u);
  if (t % 64 == 0) atomic_cmpxchg(&owner[t / 64], 0u, t + 1);
}
