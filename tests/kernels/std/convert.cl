// convert_<type>[_sat][_rounding] and as_<type> (the standard form of ../emu/convert.cl).

__kernel void float_to_int(__global const float *f, __global int *out) {
  size_t i = get_global_id(0);
  float x = f[i];
  __global int *o = out + 8 * i;
  o[0] = convert_int(x > 2e9f || x < -2e9f || isnan(x) ? 0.0f : x);  // in range: truncation
  o[1] = convert_int_sat(x);
  o[2] = convert_int_sat_rte(x);
  o[3] = convert_int_sat_rtp(x);
  o[4] = convert_int_sat_rtn(x);
  o[5] = convert_uchar_sat(x);
  o[6] = convert_short_sat_rte(x);
  o[7] = as_int(x) ^ convert_uint_sat(x);
}

__kernel void int_to_float(__global const int *a, __global float *out, __global uchar *narrow) {
  size_t i = get_global_id(0);
  int x = a[i];
  out[2 * i] = convert_float(x);
  out[2 * i + 1] = convert_float((uint)x);
  narrow[i] = convert_uchar_sat(x);
  if (i < get_global_size(0) / 4) vstore4(convert_uchar4_sat(vload4(i, a) >> 20), i, narrow + get_global_size(0));
}

__kernel void double_to_float(__global const double *d, __global float *out) {
  size_t i = get_global_id(0);
  out[3 * i] = convert_float(d[i]);        // round to nearest even
  out[3 * i + 1] = convert_float_rtz(d[i]);
  out[3 * i + 2] = convert_float_rtp(d[i]);
}
