// Kernel parameters: structs passed by value (launch takes them as bytes in C layout) and 24 scalars of every
// type.
#include "nv.h"

struct Mixed {
  char c;
  short s;
  int i;
  float f;
  double d;
  long long ll;
  unsigned char tag[3];
};

struct Inner {
  float x, y;
};

struct Outer {
  int n;
  Inner in[2];
  double w;
  short tail;
};

extern "C" __global__ void struct_args(Mixed m, Outer o, double *out, long long *oi) {
  int i = gid();
  out[4 * i] = m.f * i + m.d;
  out[4 * i + 1] = o.in[i & 1].x - o.in[i & 1].y;
  out[4 * i + 2] = o.w * o.n;
  out[4 * i + 3] = (double)o.tail;
  oi[4 * i] = m.c + m.s + (long long)m.i * i;
  oi[4 * i + 1] = m.ll + i;
  oi[4 * i + 2] = m.tag[i % 3];
  oi[4 * i + 3] = o.n;
}

#define ALL(X) X(0) X(1)
extern "C" __global__ void many_params(long long *oi, double *of, signed char a0, unsigned char b0, short c0,
                                       unsigned short d0, int e0, unsigned f0, long long g0, unsigned long long h0,
                                       float p0, double q0, _Float16 r0, __bf16 s0, signed char a1,
                                       unsigned char b1, short c1, unsigned short d1, int e1, unsigned f1,
                                       long long g1, unsigned long long h1, float p1, double q1, _Float16 r1,
                                       __bf16 s1) {
  int i = gid();
  long long *o = oi + 16 * i;
  double *d = of + 8 * i;
#define INTS(K) o[8 * K] = a##K; o[8 * K + 1] = b##K; o[8 * K + 2] = c##K; o[8 * K + 3] = d##K; \
  o[8 * K + 4] = e##K; o[8 * K + 5] = f##K; o[8 * K + 6] = g##K + i; o[8 * K + 7] = (long long)(h##K ^ i);
#define FLOATS(K) d[4 * K] = p##K * i; d[4 * K + 1] = q##K - i; d[4 * K + 2] = (double)r##K; \
  d[4 * K + 3] = (double)(float)s##K;
  ALL(INTS)
  ALL(FLOATS)
}
