// Atomics on global and shared memory, every operation the prelude offers, 32 and 64 bit. Every result is
// independent of the order the threads ran in: commutative totals, multisets of returned values (histograms),
// or CAS-claimed slots whose contents form a fixed multiset.
#include "nv.h"

extern "C" __global__ void global_ops(const int *a, int *si, unsigned *su, unsigned long long *s64, int n) {
  int i = gid();
  if (i >= n) return;  // partial last block
  int v = a[i];
  unsigned u = (unsigned)v;
  unsigned long long w = (unsigned long long)(long long)v * 0x9e3779b97f4a7c15ull;
  atomicAdd(&si[0], v);
  atomicSub(&si[1], v);
  atomicMin(&si[2], v);
  atomicMax(&si[3], v);
  atomicAnd(&si[4], v | 0x7ff7fff7);
  atomicOr(&si[5], v & (1 << (i & 31)));
  atomicXor(&si[6], v);
  atomicAdd(&si[7 + (i & 7)], 1);  // lane-dependent addresses
  atomicAdd(&su[0], u);
  atomicSub(&su[1], u >> 4);
  atomicMin(&su[2], u);
  atomicMax(&su[3], u);
  atomicAnd(&su[4], ~(1u << (u & 31)));
  atomicOr(&su[5], 1u << (u >> 27));
  atomicXor(&su[6], u * 2654435761u);
  atomicAdd(&s64[0], w);
  atomicAdd(&s64[1], 0 - (w >> 3));  // CUDA has no 64-bit atomicSub: add the two's complement
  atomicMin(&s64[2], w);
  atomicMax(&s64[3], w);
  atomicAnd(&s64[4], w | 0xfffefffffffeffffull);
  atomicOr(&s64[5], 1ull << (w >> 58));
  atomicXor(&s64[6], w);
}

// values are multiples of 1/8 small enough that every partial sum is exact in any order
extern "C" __global__ void float_add(const float *a, const double *b, float *fs, double *ds, int n) {
  int i = gid();
  if (i >= n) return;
  atomicAdd(&fs[i & 7], a[i]);
  atomicAdd(&fs[8], a[i]);
  atomicAdd(&ds[i & 3], b[i]);
}

// every thread swaps its id + 1 into its block's slot; each old value comes out once, the last stays behind
extern "C" __global__ void exchange(unsigned *slot, unsigned *seen, unsigned *ticket, unsigned *order) {
  unsigned b = blockIdx.x, t = threadIdx.x, stride = blockDim.x + 1;
  unsigned old = atomicExch(&slot[b], t + 1);
  atomicAdd(&seen[b * stride + old], 1u);
  unsigned k = atomicAdd(&ticket[0], 1u);  // a grid-wide ticket: 0 .. threads - 1, each once
  atomicAdd(&order[k], 1u);
  __syncthreads();
  if (t == 0) atomicAdd(&seen[b * stride + atomicExch(&slot[b], 0u)], 1u);
}

// inc/dec wrap at limit: the counter steps through 0..limit in a cycle, so the returned values form a fixed
// multiset whatever the order
extern "C" __global__ void inc_dec(unsigned *ctr, unsigned *hist_inc, unsigned *hist_dec, unsigned limit) {
  unsigned old = atomicInc(&ctr[0], limit);
  atomicAdd(&hist_inc[old], 1u);
  old = atomicDec(&ctr[1], limit);
  atomicAdd(&hist_dec[old], 1u);
}

// compare-and-swap loops: a float maximum on the bit pattern, a 64-bit product (mod 2^64), a hash-table insert
extern "C" __global__ void cas_loops(const float *a, const unsigned long long *b, unsigned *fmax_bits,
                                     unsigned long long *prod, unsigned *table, unsigned size, int n) {
  int i = gid();
  if (i >= n) return;
  unsigned old = *fmax_bits, assumed;
  do {
    assumed = old;
    old = atomicCAS(fmax_bits, assumed, __float_as_uint(__builtin_fmaxf(__uint_as_float(assumed), a[i])));
  } while (old != assumed);
  unsigned long long o = *prod, e;
  do {
    e = o;
    o = atomicCAS(prod, e, e * b[i]);
  } while (o != e);
  unsigned h = ((unsigned)i * 2654435761u) % size;
  while (atomicCAS(&table[h], 0u, (unsigned)i + 1) != 0u) h = (h + 1) % size;
}

// the same operations on shared memory, each block's totals written out by thread 0
extern "C" __global__ void shared_ops(const int *a, const float *f, int *out, unsigned long long *out64,
                                      float *outf, unsigned *seen) {
  __shared__ int si[7];
  __shared__ unsigned su[4], slot;
  __shared__ unsigned long long s64[3];
  __shared__ float sf;
  __shared__ unsigned sseen[257];
  unsigned t = threadIdx.x, b = blockIdx.x;
  if (t < 7) si[t] = t == 2 ? 0x7fffffff : t == 3 ? (int)0x80000000 : t == 4 ? -1 : 0;
  if (t < 4) su[t] = t == 2 ? 0xffffffffu : 0;
  if (t < 3) s64[t] = t == 1 ? 1ull : 0;
  if (t == 0) sf = 0.0f, slot = 0;
  sseen[t] = 0;
  if (t == 0) sseen[blockDim.x] = 0;
  __syncthreads();
  int v = a[gid()];
  unsigned u = (unsigned)v;
  atomicAdd(&si[0], v);
  atomicSub(&si[1], v >> 8);
  atomicMin(&si[2], v);
  atomicMax(&si[3], v);
  atomicAnd(&si[4], v | 0x7ffbffbf);
  atomicOr(&si[5], 1 << (u & 31));
  atomicXor(&si[6], v);
  atomicAdd(&su[0], u);
  atomicInc(&su[1], 9u);
  atomicMin(&su[2], u);
  atomicMax(&su[3], u);
  atomicAdd(&s64[0], (unsigned long long)u << 20);
  unsigned long long e, o = s64[1];
  do {
    e = o;
    o = atomicCAS(&s64[1], e, e * (2ull * u + 1));
  } while (o != e);
  atomicMax(&s64[2], (unsigned long long)u * u);
  atomicAdd(&sf, f[gid()]);
  atomicAdd(&sseen[atomicExch(&slot, t + 1)], 1u);
  __syncthreads();
  if (t == 0) {
    sseen[slot] += 1;
    for (int k = 0; k < 7; ++k) out[b * 11 + k] = si[k];
    for (int k = 0; k < 4; ++k) out[b * 11 + 7 + k] = (int)su[k];
    for (int k = 0; k < 3; ++k) out64[b * 3 + k] = s64[k];
    outf[b] = sf;
  }
  __syncthreads();
  seen[b * (blockDim.x + 1) + t] = sseen[t];
  if (t == 0) seen[b * (blockDim.x + 1) + blockDim.x] = sseen[blockDim.x];
}
