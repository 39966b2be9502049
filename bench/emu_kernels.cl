// The emulator bench's own kernels (bench/emu_bench.py), on top of the corpus' helpers (tests/kernels/emu/emu.h).
#include "emu.h"

// Loop-heavy: `steps` dependent FMAs per lane (a runtime count, so the loop stays a loop). c >= 1 and d = 1 make
// every step add at least 1, so a run that drops or repeats one differs from numpy by far more than rounding.
__kernel void fma_chain(__global float *out, __global const float *c, uint steps) {
  uint i = gid(0);
  float acc = 0.0f, m = c[i];
  for (uint s = 0; s < steps; ++s) acc = __builtin_fmaf(acc, m, 1.0f);
  out[i] = acc;
}

// Divergent: even and odd lanes run outer loops of different lengths; inside, a data-dependent branch whose odd
// side is a loop of its own (1 to 8 LCG steps, by the value's top bits), so EXEC splits by lane and by data.
__kernel void divergent(__global uint *v, uint even_steps, uint odd_steps) {
  uint i = gid(0), x = v[i];
  uint n = lane_id() & 1 ? odd_steps : even_steps;
  for (uint j = 0; j < n; ++j) {
    if (x & 1) {
      for (uint k = 0; k <= x >> 29; ++k) x = x * 1664525u + 1013904223u;
    } else {
      x = (x >> 1) ^ 0x9e3779b9u;
    }
  }
  v[i] = x;
}
