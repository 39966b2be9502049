// Shared memory: static arrays, a tree reduction, and dynamic shared memory (launch's shared= bytes) alone and
// after a static array.
#include "nv.h"

extern __shared__ float dyn_f[];
extern __shared__ __attribute__((aligned(16))) unsigned char dyn_bytes[];

extern "C" __global__ void reduce_tree(const int *in, int *out) {
  __shared__ int s[256];
  int t = threadIdx.x;
  s[t] = in[gid()];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void dyn_reverse(const float *in, float *out) {
  int t = threadIdx.x;
  dyn_f[t] = in[gid()];
  __syncthreads();
  out[gid()] = dyn_f[blockDim.x - 1 - t];
}

// dynamic memory carved into blockDim.x doubles followed by blockDim.x ints, after a static counter
extern "C" __global__ void dyn_mixed(const int *in, double *out, int *count) {
  __shared__ int hits;
  double *d = (double *)dyn_bytes;
  int *k = (int *)(d + blockDim.x);
  int t = threadIdx.x;
  if (t == 0) hits = 0;
  k[t] = in[gid()];
  d[t] = 0.5 * k[t];
  __syncthreads();
  int j = (t + 1) % blockDim.x;
  out[gid()] = d[j] + k[blockDim.x - 1 - t];
  if (k[j] > 0) atomicAdd(&hits, 1);
  __syncthreads();
  if (t == 0) count[blockIdx.x] = hits;
}
