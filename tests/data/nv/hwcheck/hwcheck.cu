// The kernels of usergpu's NVIDIA hardware check (tools/hwcheck/nv.py). Shipped as cubins (build.py) so the check
// runs on a machine with no compiler; extern "C" keeps their names plain.
#define TILE 16
#define REDUCE_BLOCK 256

// c = a + b over n floats
extern "C" __global__ void hwcheck_vadd(const float *a, const float *b, float *c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// C (M x N) = A (M x K) @ B (K x N), 16 x 16 tiles staged in shared memory, edges padded with zeros
extern "C" __global__ void hwcheck_matmul(const float *A, const float *B, float *C, unsigned M, unsigned N,
                                          unsigned K) {
  __shared__ float As[TILE][TILE], Bs[TILE][TILE];
  unsigned tx = threadIdx.x, ty = threadIdx.y;
  unsigned row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (unsigned k0 = 0; k0 < K; k0 += TILE) {
    As[ty][tx] = row < M && k0 + tx < K ? A[row * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = k0 + ty < K && col < N ? B[(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (unsigned k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

// partial[b] = the sum of block b's 2 * REDUCE_BLOCK values of x (a tree in shared memory); integers, so exact
extern "C" __global__ void hwcheck_reduce(const unsigned *x, unsigned *partial, unsigned n) {
  __shared__ unsigned s[REDUCE_BLOCK];
  unsigned t = threadIdx.x, i = blockIdx.x * 2 * REDUCE_BLOCK + t;
  s[t] = (i < n ? x[i] : 0u) + (i + REDUCE_BLOCK < n ? x[i + REDUCE_BLOCK] : 0u);
  __syncthreads();
  for (unsigned stride = REDUCE_BLOCK / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] = s[0];
}

// nothing: what a launch costs
extern "C" __global__ void hwcheck_empty(void) {}

// p[thread] = v: given an unmapped p, the fault the check expects
extern "C" __global__ void hwcheck_store(unsigned *p, unsigned v) { p[threadIdx.x] = v; }
