// Warp shuffles (idx, up, down, xor; whole warps and sub-warps of width 16/8/4), votes, activemask in divergent
// code and match_any. Semantics as CUDA's programming guide documents them: a sub-warp of `width` lanes behaves
// as its own warp; up/down never wrap (a lane with no source keeps its value); xor may read an earlier sub-warp
// but a later one gives the lane its own value; idx takes srcLane modulo width.
#include "nv.h"

extern "C" __global__ void shuffles(const int *v, const float *f, const int *src, int *out, float *fout) {
  int i = gid(), l = lane();
  int x = v[i], s = src[i];
  float y = f[i];
  int *o = out + 12 * i;
  o[0] = __shfl_sync(FULL, x, s);
  o[1] = __shfl_sync(FULL, x, s, 16);
  o[2] = __shfl_sync(FULL, x, s, 4);
  o[3] = __shfl_up_sync(FULL, x, 1);
  o[4] = __shfl_up_sync(FULL, x, 5, 8);
  o[5] = __shfl_up_sync(FULL, x, s & 31);
  o[6] = __shfl_down_sync(FULL, x, 3);
  o[7] = __shfl_down_sync(FULL, x, 2, 16);
  o[8] = __shfl_xor_sync(FULL, x, 1);
  o[9] = __shfl_xor_sync(FULL, x, 12, 8);
  o[10] = __shfl_xor_sync(FULL, x, s & 31, 16);
  o[11] = (int)__shfl_sync(FULL, (unsigned)x, 31 - l);
  fout[4 * i] = __shfl_sync(FULL, y, s, 8);
  fout[4 * i + 1] = __shfl_down_sync(FULL, y, 7);
  fout[4 * i + 2] = __shfl_up_sync(FULL, y, 2, 4);
  fout[4 * i + 3] = __shfl_xor_sync(FULL, y, 16);
}

// butterfly reduction: every lane ends with its warp's sum
extern "C" __global__ void warp_sum(const int *v, int *out) {
  int x = v[gid()];
  for (int m = 16; m > 0; m >>= 1) x += __shfl_xor_sync(FULL, x, m);
  out[gid()] = x;
}

extern "C" __global__ void votes(const int *v, unsigned *out) {
  int i = gid(), l = lane(), p = v[i];
  unsigned *o = out + 8 * i;
  o[0] = __ballot_sync(FULL, p & 1);
  o[1] = __any_sync(FULL, p == 7);
  o[2] = __all_sync(FULL, p >= 2);
  o[3] = __uni_sync(FULL, p > 8);
  if (l < 20) {  // the first 20 lanes vote among themselves
    o[4] = __ballot_sync(0xfffffu, p & 2);
    o[5] = __any_sync(0xfffffu, p == 3);
    o[6] = __all_sync(0xfffffu, p < 12);
  } else {
    o[4] = o[5] = o[6] = 0xdeadu;
  }
  o[7] = __ballot_sync(FULL, l & 1) ^ __ballot_sync(FULL, p > l);
}

// blocks of 48 threads: the second warp has 16 lanes; branches on data split the warps further
extern "C" __global__ void activemask(const int *v, unsigned *out) {
  int i = gid(), p = v[i];
  unsigned *o = out + 3 * i;
  o[0] = __activemask();
  if (p & 1)
    o[1] = __activemask();
  else
    o[1] = ~__activemask();
  if (p > 4) {
    if (p > 9) o[2] = __activemask();
    else o[2] = __activemask() ^ 0x80000000u;
  } else {
    o[2] = 0;
  }
}

extern "C" __global__ void match_any(const unsigned *v, const unsigned long long *w, unsigned *out) {
  int i = gid();
  out[2 * i] = __match_any_sync(FULL, v[i]);
  out[2 * i + 1] = __match_any_sync(FULL, w[i]);
}
