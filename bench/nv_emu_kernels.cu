// The PTX emulator bench's kernels (bench/nv_emu_bench.py): the AMD emulator bench's six, in CUDA C.
extern "C" __global__ void saxpy(float *y, const float *x, float a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// 16x16 tiles through shared memory, as the AMD corpus' matmul_tiled
extern "C" __global__ void matmul_tiled(const float *a, const float *b, float *c, unsigned n) {
  __shared__ float ta[16][16], tb[16][16];
  unsigned row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.0f;
  for (unsigned t = 0; t < n; t += 16) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + t + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(t + threadIdx.y) * n + col];
    __syncthreads();
    for (unsigned k = 0; k < 16; ++k) acc = fmaf(ta[threadIdx.y][k], tb[k][threadIdx.x], acc);
    __syncthreads();
  }
  c[row * n + col] = acc;
}

// a block's 256 ints summed by a tree in shared memory
extern "C" __global__ void reduce_tree(const int *in, int *out) {
  __shared__ int s[256];
  unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned half = 128; half > 0; half >>= 1) {
    if (t < half) s[t] += s[t + half];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// loop-heavy: `steps` dependent FMAs per lane (c >= 1: every step adds at least 1)
extern "C" __global__ void fma_chain(float *out, const float *c, unsigned steps) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0.0f, m = c[i];
  for (unsigned s = 0; s < steps; ++s) acc = fmaf(acc, m, 1.0f);
  out[i] = acc;
}

// divergent: even and odd lanes run outer loops of different lengths, with a data-dependent inner loop
extern "C" __global__ void divergent(unsigned *v, unsigned even_steps, unsigned odd_steps) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x, x = v[i];
  unsigned n = threadIdx.x & 1 ? odd_steps : even_steps;
  for (unsigned j = 0; j < n; ++j) {
    if (x & 1) {
      for (unsigned k = 0; k <= x >> 29; ++k) x = x * 1664525u + 1013904223u;
    } else {
      x = (x >> 1) ^ 0x9e3779b9u;
    }
  }
  v[i] = x;
}
