// OpenCL's work-item functions on 1D, 2D and 3D launches (the standard form of ../emu/grids.cl).

// Each work-item writes what it is told about itself at its linear global position.
__kernel void ids(__global uint *global_ids, __global uint *local_ids, __global uint *sizes) {
  size_t x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
  size_t p = (z * get_global_size(1) + y) * get_global_size(0) + x;
  global_ids[p] = (uint)(x | y << 8 | z << 16);
  local_ids[p] = (uint)(get_local_id(0) | get_local_id(1) << 4 | get_local_id(2) << 8 | get_group_id(0) << 12 |
                        get_group_id(1) << 16 | get_group_id(2) << 20);
  __global uint *s = sizes + 8 * p;
  for (uint d = 0; d < 3; d++) {
    s[d] = (uint)(get_local_size(d) | get_num_groups(d) << 16);
    s[3 + d] = (uint)(get_global_size(d) | get_global_offset(d) << 16);
  }
  s[6] = get_work_dim();
  s[7] = (uint)(get_local_size(3) + get_global_size(7) + get_num_groups(9) - get_global_offset(3));  // 1, 1, 1, 0
}

// y = a * x + y with one rounding; the grid overshoots n, so the tail work-items must leave y alone.
__kernel void saxpy(__global float *y, __global const float *x, float a, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = fma(a, x[i], y[i]);
}
