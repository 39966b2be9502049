/* One wave's run through a kernel's C (codegen.py emits the labelled blocks between WAVE_BEGIN and WAVE_END), and
 * the scheduler that runs a batch's workgroups: each wave to its end or to a barrier, the group's barrier released
 * once every wave not done waits at it. The state is the reference backend's own arrays (State, built by
 * executor.py), so a block handed to the reference (goto fallback) sees and leaves the same registers and memory.
 * Compiled after the State typedef and L (lanes per wave). */
#include "helpers.h"
#include "gmem.h"

enum { RC_OK, RC_DONE, RC_FALLBACK, RC_FAULT, RC_HANG, RC_QUOTA };
enum { WHY_SCRATCH = WHY_READ_ONLY + 1 };

#define VR(r) (vw + (int64_t)(r) * L)
#define SR(r) sw[r]
#define SCC st->scc[w]
#define EXECM (L == 64 ? ((uint64_t)SR(126) | (uint64_t)SR(127) << 32) : (uint64_t)SR(126))
#define ON ((em >> lane) & 1)
#define DN32 st->denorm32
#define DN16 st->denorm16
#define DONE st->done
#define WAITING st->waiting
#define CODE_BASE st->entry
#define LDS_SIZE st->lds_size
#define LDS_OF(w) (st->lds + st->group[w] * st->lds_size)
/* An LDS access of size bytes at a: its bytes, or, outside the workgroup's allocation (no fault on the hardware: a
 * load reads 0, a store or atomic is dropped), the zeros a load reads or the sink a store writes, counted. */
static uint8_t LDS_ZEROS[16], LDS_SINK[16];
#define LDS_AT(lds, a, size, outside) \
    (((a) < 0 || (a) + (size) > LDS_SIZE) ? (st->lds_outside++, (outside)) : (lds) + (a))

#define WAVE_BEGIN \
static int run_wave(State *st, int64_t w) { \
    uint32_t *restrict const vw = st->v + w * st->vgprs * L; uint32_t *restrict const sw = st->s + w * 128; \
    int64_t pc = st->pc[w] - CODE_BASE, steps = st->steps[w]; \
    const int64_t start = steps, budget = st->budget; \
    const int64_t limit = budget < steps + st->quota ? budget : steps + st->quota; \
    int rc; (void)vw;
#define WAVE_END \
limit: \
    if (steps >= budget) { steps++; rc = RC_HANG; } else rc = RC_QUOTA; \
    goto save_pc; \
fallback: rc = RC_FALLBACK; goto save_pc; \
fault: rc = RC_FAULT; goto save_pc; \
out: rc = RC_OK; \
save_pc: st->pc[w] = CODE_BASE + pc; st->steps[w] = steps; st->quota -= steps - start; st->wave = w; \
    return rc; \
} \
int run(State *st) { \
    while (st->gi < st->ngroups) { \
        const int64_t lo = st->gstart[st->gi], hi = st->gstart[st->gi + 1]; \
        int live = 0, waiting = 1; \
        for (int64_t w = lo; w < hi; w++) { \
            if (st->done[w]) continue; \
            live = 1; \
            if (st->waiting[w]) continue; \
            int rc = run_wave(st, w); \
            if (rc != RC_OK) return rc; \
        } \
        if (!live) { st->gi++; continue; } \
        for (int64_t w = lo; w < hi; w++) waiting &= st->done[w] || st->waiting[w]; \
        if (waiting) for (int64_t w = lo; w < hi; w++) st->waiting[w] = 0; \
    } \
    return RC_DONE; \
}
