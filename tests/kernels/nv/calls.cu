// Device functions kept as PTX `call`s (__noinline__): multi-level chains, a struct returned and one passed by
// value, a pointer argument written through, and a function with many arguments.
#include "nv.h"

struct Stats {
  int count;
  float total;
  double sumsq;
};

static __device__ __noinline__ int leaf(int x) { return x * x - 3 * x + 1; }

static __device__ __noinline__ int mid(int a, int b) { return leaf(a) + 2 * leaf(b); }

static __device__ __noinline__ int top(int a, int b, int c) { return mid(a, b) - mid(c, a); }

static __device__ __noinline__ Stats summarize(const float *p, int n) {
  Stats s = {0, 0.0f, 0.0};
  for (int k = 0; k < n; ++k) {
    if (p[k] > 0.0f) {
      s.count++;
      s.total += p[k];
      s.sumsq += (double)p[k] * p[k];
    }
  }
  return s;
}

static __device__ __noinline__ double weigh(Stats s, int k) { return s.sumsq * k + s.total - s.count; }

static __device__ __noinline__ void bump(int *p, int by) { *p += by; }

static __device__ __noinline__ long long spread(char a, short b, int c, long long d, float e, double f,
                                                unsigned char g, unsigned short h) {
  return a + 10LL * b + 100LL * c + d + (long long)(e * 4.0f) + (long long)(f * 8.0) + g * 3 + h * 5;
}

extern "C" __global__ void calls(const int *a, const float *f, int *oi, float *of, double *od, long long *ol) {
  int i = gid(), x = a[i];
  oi[2 * i] = top(x, x + 1, x - 2);
  int acc = x;
  bump(&acc, 17);
  bump(&acc, x);
  oi[2 * i + 1] = acc;
  Stats s = summarize(f + 8 * i, 8);
  of[i] = s.total;
  od[i] = weigh(s, i & 7);
  ol[i] = spread((char)x, (short)(x * 3), x, (long long)x * (1LL << 33), (float)x * 0.25f, x * 0.125, (unsigned char)i,
                 (unsigned short)(i * 7));
}
