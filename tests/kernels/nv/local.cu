// Per-thread arrays indexed by runtime values, so they stay in local memory.
#include "nv.h"

extern "C" __global__ void local_lookup(const int *data, const int *idx, int *out) {
  int i = gid(), buf[32];
  for (int k = 0; k < 32; ++k) buf[k] = data[i] * k + (k ^ i);
  for (int j = 0; j < 4; ++j) buf[idx[8 * i + j] & 31] += j + 1;  // data-dependent writes
  int s = 0;
  for (int j = 4; j < 8; ++j) s += buf[idx[8 * i + j] & 31];
  out[i] = s;
}

// insertion sort of 16 floats in a local array
extern "C" __global__ void local_sort(const float *in, float *out) {
  int i = gid();
  float v[16];
  for (int k = 0; k < 16; ++k) v[k] = in[16 * i + k];
  for (int k = 1; k < 16; ++k) {
    float key = v[k];
    int j = k - 1;
    while (j >= 0 && v[j] > key) {
      v[j + 1] = v[j];
      --j;
    }
    v[j + 1] = key;
  }
  for (int k = 0; k < 16; ++k) out[16 * i + k] = v[k];
}
