// Integer division and remainder: C truncates toward zero and the remainder takes the dividend's sign.
// Divisors are never zero and INT_MIN / -1 never occurs (both undefined in C).
#include "nv.h"

extern "C" __global__ void div32(const int *a, const int *b, int *out, int n) {
  int i = gid();
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y;
  int *o = out + 4 * i;
  o[0] = x / y;
  o[1] = x % y;
  o[2] = (int)(ux / uy);
  o[3] = (int)(ux % uy);
}

extern "C" __global__ void div64(const long long *a, const long long *b, long long *out, int n) {
  int i = gid();
  if (i >= n) return;
  long long x = a[i], y = b[i];
  unsigned long long ux = x, uy = y;
  long long *o = out + 4 * i;
  o[0] = x / y;
  o[1] = x % y;
  o[2] = (long long)(ux / uy);
  o[3] = (long long)(ux % uy);
}

// constant divisors: the compiler's multiply-high sequences
extern "C" __global__ void div_const(const int *a, const long long *b, long long *out, int n) {
  int i = gid();
  if (i >= n) return;
  int x = a[i];
  unsigned ux = x;
  long long w = b[i];
  unsigned long long uw = w;
  long long *o = out + 16 * i;
  o[0] = x / 7;
  o[1] = x % 7;
  o[2] = x / -3;
  o[3] = x % -3;
  o[4] = x / 16;
  o[5] = x % 16;
  o[6] = x / 1000;
  o[7] = ux / 7u;
  o[8] = ux % 10u;
  o[9] = ux / 0x80000001u;
  o[10] = w / 7;
  o[11] = w % 1000000007LL;
  o[12] = w / -64;
  o[13] = (long long)(uw / 10u);
  o[14] = (long long)(uw % 3u);
  o[15] = (long long)(uw / 0x100000001ull);
}

// one divisor for the whole grid, a kernel parameter
extern "C" __global__ void div_param(const int *a, const long long *b, long long *out, int n, int d,
                                     unsigned long long e) {
  int i = gid();
  if (i >= n) return;
  long long *o = out + 4 * i;
  o[0] = a[i] / d;
  o[1] = a[i] % d;
  o[2] = (long long)((unsigned long long)b[i] / e);
  o[3] = (long long)((unsigned long long)b[i] % e);
}
