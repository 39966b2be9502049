// Cross-lane operations. ds_swizzle, DPP and permlane work inside 32-, 16-, 8- or 4-lane groups, and the
// bpermute kernels stay inside aligned groups of 32, so those results do not depend on the wave size; the
// wave_* kernels read whole waves, and their cases are split by wave size.
#include "emu.h"

#define NSW 7
__kernel void swizzle_modes(__global const int *a, __global int *out) {
  uint i = gid(0);
  int x = a[i];
  __global int *o = out + NSW * i;
  // bitmask mode: source = ((lane & and) | or) ^ xor within 32 lanes; offset = and | or << 5 | xor << 10
  o[0] = __builtin_amdgcn_ds_swizzle(x, 0x041f);  // xor 1: swap neighbours
  o[1] = __builtin_amdgcn_ds_swizzle(x, 0x401f);  // xor 0x10: swap 16-lane halves
  o[2] = __builtin_amdgcn_ds_swizzle(x, 0x7c1f);  // xor 0x1f: reverse
  o[3] = __builtin_amdgcn_ds_swizzle(x, 0x00b8);  // and 0x18, or 5: broadcast lane 5 of each 8
  o[4] = __builtin_amdgcn_ds_swizzle(x, 0x0e0f);  // and 0x0f, or 0x10, xor 3
  // quad-permute mode (bit 15): 2-bit source per lane of each quad
  o[5] = __builtin_amdgcn_ds_swizzle(x, 0x801b);  // [3,2,1,0]
  o[6] = __builtin_amdgcn_ds_swizzle(x, 0x8025);  // [1,1,2,0]
}

// Pull (bpermute: read lane addr/4) and push (permute: write lane addr/4) inside each aligned 32-lane group.
__kernel void lane_permute(__global const int *a, __global int *out, uint k) {
  uint i = gid(0), lane = lane_id(), base = lane & ~31u;
  int x = a[i];
  out[3 * i] = __builtin_amdgcn_ds_bpermute((int)((base | ((lane ^ k) & 31)) * 4), x);
  int x3 = (int)((uint)x * 3u);
  out[3 * i + 1] = __builtin_amdgcn_ds_bpermute((int)((base | ((uint)x & 31)) * 4), x3);  // lane chosen by data
  out[3 * i + 2] = __builtin_amdgcn_ds_permute((int)((base | ((lane + 5) & 31)) * 4), x);
}

// DPP inside rows of 16 lanes (and, on gfx9, across rows). A lane whose source falls outside its row (wave)
// keeps `old` (-1): bound_ctrl off.
#define NDPP 8
__kernel void dpp_rows(__global const int *a, __global int *out) {
  uint i = gid(0);
  int x = a[i];
  __global int *o = out + NDPP * i;
  o[0] = __builtin_amdgcn_update_dpp(-1, x, 0x111, 0xf, 0xf, false);  // row_shr:1
  o[1] = __builtin_amdgcn_update_dpp(-1, x, 0x113, 0xf, 0xf, false);  // row_shr:3
  o[2] = __builtin_amdgcn_update_dpp(-1, x, 0x102, 0xf, 0xf, false);  // row_shl:2
  o[3] = __builtin_amdgcn_update_dpp(-1, x, 0x140, 0xf, 0xf, false);  // row_mirror
  o[4] = __builtin_amdgcn_update_dpp(-1, x, 0x141, 0xf, 0xf, false);  // row_half_mirror
  o[5] = __builtin_amdgcn_mov_dpp(x, 0x4e, 0xf, 0xf, false);          // quad_perm:[2,3,0,1]
#if __has_builtin(__builtin_amdgcn_mov_dpp8)  // RDNA: any of 8 lanes
  o[6] = __builtin_amdgcn_mov_dpp8(x, 0x053977);                      // dpp8:[7,6,5,4,3,2,1,0]
  o[7] = __builtin_amdgcn_mov_dpp8(x, 0x1f58d1);                      // dpp8:[1,2,3,4,5,6,7,0]
#else  // gfx9: whole-wave shifts and row broadcasts instead (rows 1 and 3 written, the others keep old)
  o[6] = __builtin_amdgcn_update_dpp(-1, x, 0x138, 0xf, 0xf, false);  // wave_shr:1
  o[7] = __builtin_amdgcn_update_dpp(-1, x, 0x142, 0xa, 0xf, false);  // row_bcast:15
#endif
}

// v_permlane16: lane l of a row reads lane sel[l % 16] of the same row; permlanex16 reads the other row of
// its 32-lane half. The selectors are nibbles of (hi:lo), uniform kernel arguments.
#if __has_builtin(__builtin_amdgcn_permlane16)  // RDNA only
__kernel void permlane(__global const int *a, __global int *out, uint lo, uint hi, uint xlo, uint xhi) {
  uint i = gid(0);
  int x = a[i];
  out[2 * i] = __builtin_amdgcn_permlane16(0, x, lo, hi, false, false);
  out[2 * i + 1] = __builtin_amdgcn_permlanex16(0, x, xlo, xhi, false, false);
}
#endif

// Whole-wave reads: first lane, a chosen lane, the first active lane under divergence, and a butterfly sum.
__kernel void wave_read(__global const int *a, __global int *first, __global int *chosen, __global int *odd_first,
                        __global int *wsum, uint src_lane) {
  uint i = gid(0), lane = lane_id();
  int x = a[i];
  first[i] = __builtin_amdgcn_readfirstlane(x);
  chosen[i] = __builtin_amdgcn_readlane(x, src_lane);
  int r = -1;
  if (x & 1) r = __builtin_amdgcn_readfirstlane(x);
  odd_first[i] = r;
  int s = x;
  for (uint off = wave_size() / 2; off > 0; off >>= 1) s += __builtin_amdgcn_ds_bpermute((int)((lane ^ off) * 4), s);
  wsum[i] = s;
}

// Ballot of a predicate: lanes set in the wave, and set lanes below this one (mbcnt).
__kernel void wave_ballot(__global const int *a, __global uint *count, __global uint *below, __global uint *mask_lo,
                          __global uint *mask_hi) {
  uint i = gid(0);
  bool p = a[i] > 0;
#if EMU_WAVE32
  uint m = __builtin_amdgcn_ballot_w32(p);
  count[i] = __builtin_popcount(m);
  below[i] = __builtin_amdgcn_mbcnt_lo(m, 0u);
  mask_lo[i] = m;
  mask_hi[i] = 0;
#else
  ulong m = __builtin_amdgcn_ballot_w64(p);
  count[i] = __builtin_popcountll(m);
  below[i] = __builtin_amdgcn_mbcnt_hi((uint)(m >> 32), __builtin_amdgcn_mbcnt_lo((uint)m, 0u));
  mask_lo[i] = (uint)m;
  mask_hi[i] = (uint)(m >> 32);
#endif
}
