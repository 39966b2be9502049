// A dense switch, which clang-22 compiles to a jump table: brx.idx over a .branchtargets list.
#include "nv.h"

extern "C" __global__ void switch_dense(const int *a, int *out) {
  int i = gid(), x = a[i], r;
  switch (x & 15) {
    case 0: r = x; break;
    case 1: r = x * 7; break;
    case 2: r = x - 100; break;
    case 3: r = x ^ 0x55; break;
    case 4: r = x >> 2; break;
    case 5: r = -x; break;
    case 6: r = x | 0x100; break;
    case 7: r = x * x; break;
    case 8: r = 8; break;
    case 9: r = x + 9000; break;
    case 10: r = x & 0xf0; break;
    case 11: r = (int)((unsigned)x << 3); break;
    default: r = 12345; break;
  }
  out[i] = r;
}
