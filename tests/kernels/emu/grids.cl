// Launch geometry: 2D and 3D grids and blocks (workgroup and work-item ids in y and z), many workgroups.
#include "emu.h"

// w x h image (row-major); the grid is exact so every pixel has one work-item.
__kernel void grid2d(__global const int *in, __global int *out, __global int *ids, uint w) {
  uint x = gid(0), y = gid(1), p = y * w + x;
  out[p] = in[p] * 3 + (int)x - 2 * (int)y;
  ids[p] = (int)(grp(0) | grp(1) << 8 | lid(0) << 16 | lid(1) << 24);
}

// Each work-item writes its global and local coordinates at its linear global position.
__kernel void grid3d(__global uint *pos, __global uint *local_ids, uint nx, uint ny) {
  uint x = gid(0), y = gid(1), z = gid(2);
  uint p = (z * ny + y) * nx + x;
  pos[p] = x | y << 8 | z << 16 | grp(2) << 24;
  local_ids[p] = flat_lid() | lid(2) << 8 | lid(1) << 12 | lid(0) << 16 | grp(0) << 20 | grp(1) << 26;
}

// 256 workgroups of 64: per-item values plus one per-workgroup value (the group's first input).
__kernel void many_groups(__global const uint *a, __global uint *out, __global uint *firsts) {
  uint i = gid(0), g = grp(0);
  out[i] = a[i] * (g + 1) + lid(0);
  if (lid(0) == 0) firsts[g] = a[i] ^ g;
}

// 32 x 32 workgroups of 8 x 4 in 2D: 1024 workgroups.
__kernel void many_groups_2d(__global uint *out, uint w) {
  uint x = gid(0), y = gid(1);
  out[y * w + x] = (grp(1) * 32 + grp(0)) * 32 + lid(1) * 8 + lid(0);
}
