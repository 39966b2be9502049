// 2D and 3D grids whose last blocks hang over the data (bounds checks), and the built-in variables in every
// dimension.
#include "nv.h"

extern "C" __global__ void grid2d(const float *in, float *out, int *ids, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  int i = y * w + x;
  out[i] = in[i] * 2.0f + (float)x - (float)y;
  ids[2 * i] = blockIdx.x | blockIdx.y << 8 | threadIdx.x << 16 | threadIdx.y << 24;
  ids[2 * i + 1] = gridDim.x | gridDim.y << 8 | blockDim.x << 16 | blockDim.y << 24;
}

extern "C" __global__ void grid3d(const int *in, int *out, int w, int h, int d) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  int z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < w && y < h && z < d) {
    int i = (z * h + y) * w + x;
    out[3 * i] = in[i] + x * 10000 + y * 100 + z;
    out[3 * i + 1] = threadIdx.z | blockIdx.z << 8 | blockDim.z << 16 | gridDim.z << 24;
    out[3 * i + 2] = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  }
}
