// Float special values (NaN, infinities, signed zeros, denormals, extremes) through IEEE arithmetic, min/max and
// conversions. Out-of-range float-to-integer conversions use CUDA's __float2int_rz family (the prelude's, PTX
// cvt.rzi and friends): it clamps to the destination range and turns NaN into 0 (a C cast would be undefined).
#include "nv.h"

extern "C" __global__ void special_arith(const float *a, const float *b, const float *c, float *out, int n) {
  int i = gid();
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i], *o = out + 6 * i;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = x / y;
  o[4] = __builtin_fmaf(x, y, z);
  o[5] = __builtin_sqrtf(x);
}

// no (+0, -0) pairs here: which zero min/max return for them is left open
extern "C" __global__ void special_minmax(const float *a, const float *b, float *out, unsigned *cmp, int n) {
  int i = gid();
  if (i >= n) return;
  float x = a[i], y = b[i];
  out[2 * i] = __builtin_fminf(x, y);
  out[2 * i + 1] = __builtin_fmaxf(x, y);
  cmp[i] = (x < y) | (x <= y) << 1 | (x == y) << 2 | (x != y) << 3 | (x > y) << 4 | (x >= y) << 5 |
           (x != x) << 6 | (__builtin_isinf(x) != 0) << 7 | (__builtin_signbit(x) != 0) << 8;
}

extern "C" __global__ void float_to_int(const float *a, const double *b, int *o32, unsigned *ou32, long long *o64,
                                        unsigned long long *ou64, int n) {
  int i = gid();
  if (i >= n) return;
  float x = a[i];
  double d = b[i];
  o32[5 * i] = __float2int_rz(x);
  o32[5 * i + 1] = __float2int_rn(x);
  o32[5 * i + 2] = __float2int_rd(x);
  o32[5 * i + 3] = __float2int_ru(x);
  o32[5 * i + 4] = __double2int_rz(d);
  ou32[2 * i] = __float2uint_rz(x);
  ou32[2 * i + 1] = __double2uint_rz(d);
  o64[2 * i] = __float2ll_rz(x);
  o64[2 * i + 1] = __double2ll_rz(d);
  ou64[2 * i] = __float2ull_rz(x);
  ou64[2 * i + 1] = __double2ull_rz(d);
}

// in-range C casts both ways, rounding to nearest even where the integer has more bits than the mantissa
extern "C" __global__ void int_float(const float *a, const int *b, const unsigned *c, const long long *d,
                                     const unsigned long long *e, int *oi, float *of, double *od, int n) {
  int i = gid();
  if (i >= n) return;
  oi[2 * i] = (int)a[i];
  oi[2 * i + 1] = (int)(unsigned)__builtin_fabsf(a[i]);
  of[4 * i] = (float)b[i];
  of[4 * i + 1] = (float)c[i];
  of[4 * i + 2] = (float)d[i];
  of[4 * i + 3] = (float)e[i];
  od[3 * i] = (double)d[i];
  od[3 * i + 1] = (double)e[i];
  od[3 * i + 2] = (double)a[i];
}

// f16 and bf16 conversions: round to nearest even, overflow to infinity, subnormals kept, NaN stays NaN
extern "C" __global__ void half_convert(const float *a, const double *b, const _Float16 *h, _Float16 *oh,
                                        float *of, int *oi, int n) {
  int i = gid();
  if (i >= n) return;
  float x = a[i];
  oh[3 * i] = (_Float16)x;
  oh[3 * i + 1] = (_Float16)b[i];
  oh[3 * i + 2] = (_Float16)(i - 40);
  of[3 * i] = (float)(__bf16)x;
  of[3 * i + 1] = (float)h[i];
  of[3 * i + 2] = (float)((_Float16)x * h[i]);
  oi[i] = __builtin_isfinite(h[i]) ? (int)(h[i] / (_Float16)64) : -7;
}
