// Cross-lane operations: ds_bpermute, readfirstlane/readlane, DPP moves, ds_swizzle, ballot and lane counts.
#include "helpers.h"

__kernel void shuffles(__global int *a) {
  uint i = gid(0), l = lid(0);
  int x = a[i];
  int up = __builtin_amdgcn_ds_bpermute((int)(((l + 1) % WAVE) * 4), x);
  int first = __builtin_amdgcn_readfirstlane(x);
  int third = __builtin_amdgcn_readlane(x, 3);
  int sw = __builtin_amdgcn_ds_swizzle(x, 0x041f);
  a[i] = up + first + third + sw;
}

__kernel void dpp(__global int *a) {
  uint i = gid(0);
  int x = a[i];
  int q = __builtin_amdgcn_mov_dpp(x, 0x1b, 0xf, 0xf, false);    // quad_perm [3,2,1,0]
  int s = __builtin_amdgcn_update_dpp(0, x, 0x111, 0xf, 0xf, false);  // row_shr:1
  int r = __builtin_amdgcn_update_dpp(x, x, 0x121, 0xf, 0xf, true);   // row_ror:1
  a[i] = q + s + r;
}

__kernel void ballot_count(__global const int *a, __global uint *out) {
  uint i = gid(0);
  bool p = a[i] > 0;
#if WAVE == 64
  ulong mask = __builtin_amdgcn_ballot_w64(p);
  uint below = __builtin_amdgcn_mbcnt_hi((uint)(mask >> 32), __builtin_amdgcn_mbcnt_lo((uint)mask, 0u));
  out[i] = (uint)__builtin_popcountl(mask) * 1000u + below;
#else
  uint mask = __builtin_amdgcn_ballot_w32(p);
  out[i] = (uint)__builtin_popcount(mask) * 1000u + __builtin_amdgcn_mbcnt_lo(mask, 0u);
#endif
}

__kernel void wave_reduce(__global const float *in, __global float *out) {
  float v = in[gid(0)];
  for (int off = WAVE / 2; off > 0; off >>= 1) {
    int src = (int)((lid(0) + off) % WAVE) * 4;
    v += as_float(__builtin_amdgcn_ds_bpermute(src, as_int(v)));
  }
  if ((lid(0) % WAVE) == 0) out[gid(0) / WAVE] = v;
  __builtin_amdgcn_wave_barrier();
}
