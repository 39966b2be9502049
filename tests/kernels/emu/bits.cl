// Bit operations: population count, leading/trailing zeros, bitfield extract/insert, rotates, byte swaps.
#include "emu.h"

#define CNT 8
__kernel void bit_count(__global const uint *a, __global const ulong *b, __global int *out) {
  uint i = gid(0);
  uint x = a[i];
  ulong y = b[i];
  __global int *o = out + CNT * i;
  o[0] = __builtin_popcount(x);
  o[1] = x ? __builtin_clz(x) : 32;  // clz/ctz of 0 are undefined in C: give them the hardware's width
  o[2] = x ? __builtin_ctz(x) : 32;
  o[3] = __builtin_popcountl(y);  // OpenCL's long long is 128 bits: the l forms are the 64-bit ones
  o[4] = y ? __builtin_clzl(y) : 64;
  o[5] = y ? __builtin_ctzl(y) : 64;
  o[6] = __builtin_clrsb((int)x);  // leading bits equal to the sign bit, minus one
  o[7] = __builtin_parity(x);
}

static inline uint low_mask(uint w) { return w >= 32 ? 0xffffffffu : (1u << w) - 1u; }

#define BF 10
// b[i] packs the field: offset in bits 0..4, width-1 in bits 8..12 (clipped to fit), rotate in bits 16..20.
__kernel void bitfield(__global const uint *a, __global const uint *b, __global uint *out) {
  uint i = gid(0);
  uint x = a[i], c = b[i], y = a[i] * 2654435761u;
  uint off = c & 31, w = ((c >> 8) & 31) + 1, r = (c >> 16) & 31;
  if (off + w > 32) w = 32 - off;
  uint m = low_mask(w);
  __global uint *o = out + BF * i;
  o[0] = (x >> off) & m;
  o[1] = (uint)((int)(x << (32 - off - w)) >> (32 - w));  // signed extract
  o[2] = (x & ~(m << off)) | ((y & m) << off);          // insert
  o[3] = (x << r) | (x >> ((32 - r) & 31));             // rotate left (r = 0 keeps x)
  o[4] = (x >> r) | (x << ((32 - r) & 31));             // rotate right
  o[5] = __builtin_bswap32(x);
  o[6] = __builtin_bitreverse32(x);
  o[7] = (x & y) | (~x & c);  // bit select
  ulong z = ((ulong)y << 32) | x;
  ulong rz = (z << r) | (z >> ((64 - r) & 63));
  ulong bz = __builtin_bswap64(z);
  o[8] = (uint)rz ^ (uint)(rz >> 32);
  o[9] = (uint)bz + (uint)(bz >> 32) * 3u;
}
