// vloadn/vstoren, vector arithmetic and swizzles, half storage, geometric functions (the standard form of the
// vector cases in ../emu/args.cl and ../memory.cl).

// Work-item i reads floats 3i..3i+2 (vload3: no 16-byte alignment) and 4-vectors at i.
__kernel void vec_ops(__global const float *a, __global const float *b, __global float *out) {
  size_t i = get_global_id(0);
  float3 p = vload3(i, a), q = vload3(i, b);
  float4 u = vload4(i, a), v = vload4(i, b);
  vstore4(u * v + (float4)(1.0f, 2.0f, 3.0f, 4.0f), 2 * i, out);
  vstore4(u.wzyx - v.xxyy, 2 * i + 1, out);
  vstore2((float2)(dot(p, q), u.s3 * 0.5f), i, out + 8 * get_global_size(0));
}

// Integer vectors of every width the hardware loads at once.
__kernel void vec_int(__global const int *a, __global int *out) {
  size_t i = get_global_id(0);
  int8 x = vload8(i, a);
  int2 lo = vload2(4 * i, a);
  vstore8(x.s76543210 + (int8)(lo, lo.yx, lo * 2, lo - 1), i, out);
}

// Half storage: vload_half/vstore_half convert f16 <-> f32 around f32 arithmetic (round to nearest even).
__kernel void half_storage(__global const half *h, __global half *ho, __global float *f) {
  size_t i = get_global_id(0);
  float4 v = vload_half4(i, h);
  f[i] = v.x + v.y + v.z + v.w;
  vstore_half4(v * 3.0f, i, ho);
}
