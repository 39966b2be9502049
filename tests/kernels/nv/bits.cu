// Bit operations: CUDA's integer intrinsics (as its Math API documents them) and C bit-field idioms that clang
// turns into bfe (constant shift-and-mask, sign-extending shifts) and bfi (a byte-vector element insert).
#include "nv.h"

// a clang vector of bytes, not CUDA's uchar4 struct: an element insert into it is what clang lowers to bfi
typedef unsigned char u8x4 __attribute__((ext_vector_type(4)));

extern "C" __global__ void intrinsics(const unsigned *a, const unsigned *b, const unsigned long long *c,
                                      unsigned *out, unsigned long long *out64, int n) {
  int i = gid();
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  unsigned long long w = c[i];
  unsigned *o = out + 13 * i;
  o[0] = __popc(x);
  o[1] = __clz((int)x);
  o[2] = __brev(x);
  o[3] = __ffs((int)x);
  o[4] = __byte_perm(x, y, (y >> 16) & 0x7777u);  // selectors from data, byte copies
  o[12] = __nvvm_prmt(x, y, y >> 16);               // PTX prmt: a selector's bit 3 replicates the byte's sign
  o[5] = __funnelshift_l(x, y, i);    // shift amounts past 31 wrap
  o[6] = __funnelshift_r(x, y, i);
  o[7] = (unsigned)__mulhi((int)x, (int)y);
  o[8] = __umulhi(x, y);
  o[9] = __popcll(w);
  o[10] = __clzll((long long)w);
  o[11] = __builtin_elementwise_fshr(x, y, (unsigned)i);
  out64[2 * i] = __brevll(w);
  out64[2 * i + 1] = (w << (x & 63)) | (w >> (-x & 63));  // rotate left
}

extern "C" __global__ void bitfield(const unsigned *a, const unsigned *b, const unsigned long long *c,
                                    unsigned *out, unsigned long long *out64, u8x4 *bytes, int n) {
  int i = gid();
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  unsigned long long w = c[i];
  unsigned *o = out + 6 * i;
  o[0] = (x >> 5) & 0x3ffu;
  o[1] = (x >> 27);
  o[2] = (unsigned)((int)x << 8 >> 20);  // sign-extended field, bits 12..23
  o[3] = (unsigned)((int)(x << 3) >> 29);
  o[4] = (x << 7) | (x >> 25);  // rotate
  o[5] = (x & ~0xff0u) | ((y << 4) & 0xff0u);
  out64[i] = (w >> 17) & 0xfffffull;
  u8x4 v = bytes[i];
  v.y = (unsigned char)y;
  v.w = (unsigned char)(x >> 9);
  bytes[i] = v;
}
