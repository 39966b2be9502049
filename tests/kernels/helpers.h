// Work-item functions built from clang builtins, for the corpus that needs no device library (the builtin-only
// path: compile_opencl links libclc only when a kernel calls OpenCL's own get_global_id, barrier, ...; the
// standard-OpenCL corpus is tests/kernels/std/). These ignore the global offset (always 0 for our launches).
#ifndef USERGPU_HELPERS_H
#define USERGPU_HELPERS_H

static inline uint lid(uint d) {
  return d == 0 ? __builtin_amdgcn_workitem_id_x() : d == 1 ? __builtin_amdgcn_workitem_id_y()
                                                            : __builtin_amdgcn_workitem_id_z();
}
static inline uint grp(uint d) {
  return d == 0 ? __builtin_amdgcn_workgroup_id_x() : d == 1 ? __builtin_amdgcn_workgroup_id_y()
                                                             : __builtin_amdgcn_workgroup_id_z();
}
static inline uint lsize(uint d) {
  return d == 0 ? __builtin_amdgcn_workgroup_size_x() : d == 1 ? __builtin_amdgcn_workgroup_size_y()
                                                               : __builtin_amdgcn_workgroup_size_z();
}
static inline uint gid(uint d) { return grp(d) * lsize(d) + lid(d); }

// barrier(CLK_LOCAL_MEM_FENCE): release LDS writes, wait for the workgroup, acquire the others' writes.
static inline void lbarrier(void) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

#if defined(__gfx942__) || defined(__gfx950__)
#define WAVE 64
#else
#define WAVE 32
#endif

#endif
