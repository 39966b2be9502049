// A 256-bin histogram: a grid-stride loop counts into shared bins with shared atomics, then each block adds its
// bins to the global ones with global atomics.
#include "nv.h"

extern "C" __global__ void histogram(const unsigned char *data, unsigned *hist, int n) {
  __shared__ unsigned bins[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  for (int i = gid(); i < n; i += gridDim.x * blockDim.x) atomicAdd(&bins[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x)
    if (bins[b]) atomicAdd(&hist[b], bins[b]);
}
