// Block-level inclusive prefix sum: a shuffle-up scan within each warp, the warp totals scanned by the first warp
// through shared memory, then added back. The last block is partial.
#include "nv.h"

extern "C" __global__ void block_scan(const int *in, int *out, int n) {
  __shared__ int warp_total[32];
  int t = threadIdx.x, i = gid(), l = lane(), w = t >> 5, nwarps = blockDim.x >> 5;
  int x = i < n ? in[i] : 0;
  for (int d = 1; d < 32; d <<= 1) {
    int y = __shfl_up_sync(FULL, x, d);
    if (l >= d) x += y;
  }
  if (l == 31) warp_total[w] = x;
  __syncthreads();
  if (w == 0) {
    int s = l < nwarps ? warp_total[l] : 0;
    for (int d = 1; d < 32; d <<= 1) {
      int y = __shfl_up_sync(FULL, s, d);
      if (l >= d) s += y;
    }
    warp_total[l] = s;
  }
  __syncthreads();
  if (w > 0) x += warp_total[w - 1];
  if (i < n) out[i] = x;
}
