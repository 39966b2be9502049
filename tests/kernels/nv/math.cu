// CUDA's math library (NVIDIA's libdevice, linked by compile_cuda) and its fast intrinsics, one kernel per
// function; the cases hold them to the error bounds CUDA's programming guide states.
#include "nv.h"

#define UNARY(NAME, T, EXPR)                                                  \
  extern "C" __global__ void NAME(const T *x, T *y, int n) {                  \
    int i = gid();                                                            \
    if (i < n) y[i] = EXPR(x[i]);                                             \
  }
#define BINARY(NAME, T, EXPR)                                                 \
  extern "C" __global__ void NAME(const T *x, const T *y, T *z, int n) {      \
    int i = gid();                                                            \
    if (i < n) z[i] = EXPR(x[i], y[i]);                                       \
  }

UNARY(m_expf, float, expf)
UNARY(m_logf, float, logf)
UNARY(m_sinf, float, sinf)
UNARY(m_cosf, float, cosf)
UNARY(m_sqrtf, float, sqrtf)
BINARY(m_powf, float, powf)
UNARY(m_exp, double, exp)
UNARY(m_log, double, log)
UNARY(m_sin, double, sin)
UNARY(m_sqrt, double, sqrt)
BINARY(m_pow, double, pow)
UNARY(i_sinf, float, __sinf)
UNARY(i_cosf, float, __cosf)
UNARY(i_expf, float, __expf)
UNARY(i_logf, float, __logf)
BINARY(i_fdividef, float, __fdividef)
