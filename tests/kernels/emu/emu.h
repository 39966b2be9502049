// Shared helpers of the emulator corpus (on top of ../helpers.h: lid, grp, lsize, gid, lbarrier).
#ifndef USERGPU_EMU_H
#define USERGPU_EMU_H
#include "../helpers.h"

// clang defines no wave-size macro, but __has_builtin honours target features and ballot_w32 needs wave32:
// EMU_WAVE32 picks between builtins that exist for one wave size only (WMMA _w32/_w64, ballot).
#if __has_builtin(__builtin_amdgcn_ballot_w32)
#define EMU_WAVE32 1
#else
#define EMU_WAVE32 0
#endif

static inline uint wave_size(void) { return __builtin_amdgcn_wavefrontsize(); }

// Waves are cut from the workgroup's flattened work-item index (x fastest).
static inline uint flat_lid(void) { return lid(0) + lsize(0) * (lid(1) + lsize(1) * lid(2)); }
static inline uint lane_id(void) { return flat_lid() % wave_size(); }

// barrier() that also orders global memory among the workgroup's work-items.
static inline void gbarrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup", "global");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup", "global");
}

#define RELAXED_DEV(op, p, v) __opencl_atomic_##op((p), (v), memory_order_relaxed, memory_scope_device)
#define RELAXED_WG(op, p, v) __opencl_atomic_##op((p), (v), memory_order_relaxed, memory_scope_work_group)

#endif
