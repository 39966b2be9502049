// OpenCL's math built-in functions, f32 and f64 (the standard form of ../emu/math.cl and ../emu/transcend.cl):
// libclc's implementations, so the kernels exercise the instruction sequences real OpenCL programs run.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// One kernel per accuracy class of the OpenCL C specification (its ulp bounds for the full profile).
__kernel void float_exact(__global const float *a, __global const float *b, __global float *out) {
  size_t i = get_global_id(0);
  float x = a[i], y = b[i];
  vstore4((float4)(fma(x, y, x), fmin(x, y), fmax(x, y), floor(x) + ceil(y)), i, out);
}

#define ULP4 9  // at most 4 ulp
__kernel void float_ulp4(__global const float *a, __global const float *b, __global float *out) {
  size_t i = get_global_id(0);
  float x = a[i], y = b[i];
  __global float *o = out + ULP4 * i;
  o[0] = sqrt(fabs(x));
  o[1] = exp(y);
  o[2] = log(fabs(x));
  o[3] = sin(x);
  o[4] = cos(x);
  o[5] = rsqrt(fabs(x));
  o[6] = exp2(y);
  o[7] = log2(fabs(x));
  o[8] = hypot(x, y);
}

__kernel void float_ulp16(__global const float *a, __global const float *b, __global float *out) {
  size_t i = get_global_id(0);
  float x = a[i], y = b[i];
  vstore3((float3)(tanh(y), atan2(x, y), pow(fabs(x), y)), i, out);  // 5, 6 and 16 ulp
}

#define F64OPS 6
__kernel void double_math(__global const double *a, __global const double *b, __global double *out) {
  size_t i = get_global_id(0);
  double x = a[i], y = b[i];
  __global double *o = out + F64OPS * i;
  o[0] = sqrt(fabs(x));
  o[1] = fma(x, y, x);
  o[2] = exp(y);
  o[3] = log(fabs(x));
  o[4] = sin(x);
  o[5] = fmin(x, y) + trunc(y);
}

// Integer built-ins: exact, so compared bit for bit.
#define IOPS 8
__kernel void int_math(__global const int *a, __global const int *b, __global int *out) {
  size_t i = get_global_id(0);
  int x = a[i], y = b[i];
  __global int *o = out + IOPS * i;
  o[0] = abs(x);
  o[1] = mul_hi(x, y);
  o[2] = add_sat(x, y);
  o[3] = sub_sat(x, y);
  o[4] = clz(x);
  o[5] = popcount(x);
  o[6] = rotate(x, y);
  o[7] = clamp(x, -1000, 1000) + mad24(x & 0x7ff, y & 0x7ff, 1);
}
