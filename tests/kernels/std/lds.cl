// Local memory with barrier(CLK_LOCAL_MEM_FENCE) (the standard form of ../emu/lds.cl).

// Tree reduction of each workgroup's values, in a __local buffer the launch sizes.
__kernel void reduce_sum(__global const int *in, __global int *sums, __local int *buf) {
  size_t l = get_local_id(0);
  buf[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (l < s) buf[l] += buf[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) sums[get_group_id(0)] = buf[0];
}

// 16 x 16 tile transpose through a fixed-size __local tile (2D launch).
__kernel void transpose(__global const float *in, __global float *out, uint w, uint h) {
  __local float tile[16][17];
  size_t lx = get_local_id(0), ly = get_local_id(1);
  tile[ly][lx] = in[get_global_id(1) * w + get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  size_t ox = get_group_id(1) * 16 + lx, oy = get_group_id(0) * 16 + ly;
  out[oy * h + ox] = tile[lx][ly];
}

// A per-workgroup histogram in local memory with atomic_inc, then added to the global one with atomic_add.
__kernel void histogram(__global const uint *in, __global uint *hist) {
  __local uint bins[64];
  size_t l = get_local_id(0);
  if (l < 64) bins[l] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  atomic_inc(&bins[in[get_global_id(0)] % 64]);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l < 64) atomic_add(&hist[l], bins[l]);
}
