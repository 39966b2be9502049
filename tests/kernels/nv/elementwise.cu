// Elementwise arithmetic on every scalar type. Signed results wrap through the unsigned type U (C's signed
// overflow is undefined, its unsigned arithmetic is modular); narrowing to the signed type keeps the low bits.
#include "nv.h"

template <typename T, typename U>
static __device__ __forceinline__ void int_ops(const T *a, const T *b, T *out, int n) {
  int i = gid();
  if (i >= n) return;
  T x = a[i], y = b[i];
  unsigned s = (unsigned)y & (8 * sizeof(T) - 1);
  T *o = out + 14 * i;
  o[0] = (T)((U)x + (U)y);
  o[1] = (T)((U)x - (U)y);
  o[2] = (T)((U)x * (U)y);
  o[3] = x & y;
  o[4] = x | y;
  o[5] = x ^ y;
  o[6] = (T)~x;
  o[7] = (T)((U)x << s);
  o[8] = (T)(x >> s);  // arithmetic for signed types
  o[9] = x < y ? x : y;
  o[10] = x > y ? x : y;
  o[11] = (T)((x < y) | (x == y) << 1 | (x > (T)0) << 2);
  o[12] = (T)((U)0 - (U)x);
  o[13] = (T)((U)x * (U)3 + (U)y);
}

#define INT_OPS(NAME, T, U) \
  extern "C" __global__ void NAME(const T *a, const T *b, T *out, int n) { int_ops<T, U>(a, b, out, n); }
INT_OPS(int_ops_i8, signed char, unsigned)
INT_OPS(int_ops_u8, unsigned char, unsigned)
INT_OPS(int_ops_i16, short, unsigned)
INT_OPS(int_ops_u16, unsigned short, unsigned)
INT_OPS(int_ops_i32, int, unsigned)
INT_OPS(int_ops_u32, unsigned, unsigned)
INT_OPS(int_ops_i64, long long, unsigned long long)
INT_OPS(int_ops_u64, unsigned long long, unsigned long long)

extern "C" __global__ void float_ops_f32(const float *a, const float *b, const float *c, float *out, int n) {
  int i = gid();
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i], *o = out + 16 * i;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = x / y;
  o[4] = __builtin_fmaf(x, y, z);
  o[5] = __builtin_sqrtf(__builtin_fabsf(x));
  o[6] = __builtin_floorf(x);
  o[7] = __builtin_ceilf(x);
  o[8] = __builtin_truncf(x);
  o[9] = __builtin_rintf(x);
  o[10] = __builtin_fminf(x, y);
  o[11] = __builtin_fmaxf(x, y);
  o[12] = __builtin_copysignf(x, y);
  o[13] = -x;
  o[14] = __builtin_fabsf(y);
  o[15] = (float)((x < y) + 2 * (x == z) + 4 * (x >= y));
}

extern "C" __global__ void float_ops_f64(const double *a, const double *b, const double *c, double *out, int n) {
  int i = gid();
  if (i >= n) return;
  double x = a[i], y = b[i], z = c[i], *o = out + 12 * i;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = x / y;
  o[4] = __builtin_fma(x, y, z);
  o[5] = __builtin_sqrt(__builtin_fabs(x));
  o[6] = __builtin_floor(x);
  o[7] = __builtin_ceil(x);
  o[8] = __builtin_rint(x);
  o[9] = __builtin_fmin(x, y);
  o[10] = __builtin_fmax(x, y);
  o[11] = -__builtin_fabs(x);
}

// f16 has native add/sub/mul/fma on sm_53+; division goes through f32 (exact: 24 >= 2 * 11 + 2 bits)
extern "C" __global__ void half_ops(const _Float16 *a, const _Float16 *b, const _Float16 *c, _Float16 *out, int n) {
  int i = gid();
  if (i >= n) return;
  _Float16 x = a[i], y = b[i], z = c[i], *o = out + 8 * i;
  o[0] = x + z;
  o[1] = x - z;
  o[2] = x * y;
  o[3] = x * z;
  o[4] = x / y;
  o[5] = __builtin_fmaf16(x, y, z);
  o[6] = -z;
  o[7] = x < z ? x : z;
}

// bf16 arithmetic (fma.rn.bf16 on sm_80, add/mul.bf16 on sm_90); results widened to f32 exactly
extern "C" __global__ void bf16_ops(const __bf16 *a, const __bf16 *b, float *out, int n) {
  int i = gid();
  if (i >= n) return;
  __bf16 x = a[i], y = b[i];
  float *o = out + 5 * i;
  o[0] = (float)(__bf16)(x + y);
  o[1] = (float)(__bf16)(x - y);
  o[2] = (float)(__bf16)(x * y);
  o[3] = (float)(__bf16)(x / y);
  o[4] = (float)(__bf16)(-x);
}
