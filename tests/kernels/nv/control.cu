// Divergence and loops: data-dependent trip counts, nested ifs, break/continue, early returns.
#include "nv.h"

extern "C" __global__ void collatz(const unsigned *in, unsigned *steps, int n) {
  int i = gid();
  if (i >= n) return;
  unsigned long long x = in[i];
  unsigned k = 0;
  while (x != 1 && k < 500) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    ++k;
  }
  steps[i] = k;
}

extern "C" __global__ void nested_ifs(const int *a, const int *b, int *out) {
  int i = gid(), x = a[i], y = b[i], r;
  if (x > 0) {
    if (y > 0) r = x + y;
    else if (y < -50) r = x - y;
    else r = x * 3;
  } else {
    if (x == y) r = -1;
    else if ((x ^ y) & 4) r = y > x ? y : x;
    else r = x & y;
  }
  if (r > 100) r -= 100;
  out[i] = r;
}

// each thread walks its own row of `len[i]` values: negatives are skipped, 99 ends the row
extern "C" __global__ void break_continue(const int *data, const int *len, int *out, int width) {
  int i = gid(), sum = 0, used = 0;
  for (int j = 0; j < len[i]; ++j) {
    int v = data[i * width + j];
    if (v < 0) continue;
    if (v == 99) break;
    sum += v * (j + 1);
    ++used;
  }
  out[2 * i] = sum;
  out[2 * i + 1] = used;
}

extern "C" __global__ void early_return(const int *a, int *out, int n) {
  int i = gid();
  if (i >= n) return;
  int x = a[i];
  if (x < 0) return;  // leaves out[i] as it was
  if (x % 3 == 0) {
    out[i] = 1;
    return;
  }
  for (int k = 0; k < x % 7; ++k) {
    if (x > 1000) return;
    x = x * 2 + k;
  }
  out[i] = x;
}
