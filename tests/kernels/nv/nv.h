// Shared by the corpus kernels (compiled with -I this folder, after usergpu's CUDA prelude).
#pragma once
#define FULL 0xffffffffu

static __device__ __forceinline__ int gid() { return blockIdx.x * blockDim.x + threadIdx.x; }
static __device__ __forceinline__ int lane() { return threadIdx.x & 31; }
