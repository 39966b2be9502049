/* One warp's run through a kernel's C (codegen.py emits the labelled blocks between WARP_BEGIN and WARP_END), and
 * the scheduler that runs a batch's blocks: each warp until its lanes have all ended or wait at a barrier, the
 * block's barrier released once every lane not exited waits at it.
 *
 * The state is the reference backend's own arrays (State, built by executor.py): every register an array over the
 * batch's lanes, the lanes' PCs and statuses, shared, local and param memory. So an instruction handed to the
 * reference (goto fallback) sees and leaves the same registers and memory, and the C goes on from there.
 *
 * Within a warp the lanes at the PC first in the program's reverse post-order run, as the active mask m, as the
 * reference runs them: lanes that branch apart wait in the PC array, and wmin (the least order among the waiting
 * lanes) tells each instruction's tail whether it may go on or must merge with them first. Compiled after State,
 * ORDER_OF (the order of a PC), the kernel's registers in a warp's scratch (SCRATCH bytes, REGS) and their copies
 * from and to the State's arrays (LOAD, SAVE, CLEAR). */
#include <math.h>
#include "helpers.h"
#include "gmem.h"

enum { RC_OK, RC_DONE, RC_FALLBACK, RC_HANG, RC_QUOTA, RC_STUCK };
enum { RUN, BAR, EXIT };

#define SHARED_WINDOW 0x00007E0000000000ull
#define LOCAL_WINDOW 0x00007D0000000000ull
#define WINDOW (1ull << 32)
#define CLUSTER_SHARED (1ull << 31)
#define F32(x) BITCAST(float, uint32_t, (uint32_t)(x))
#define F64(x) BITCAST(double, uint64_t, (uint64_t)(x))
#define U32(x) BITCAST(uint32_t, float, (float)(x))
#define U64(x) BITCAST(uint64_t, double, (double)(x))
#define F16(x) BITCAST(_Float16, uint16_t, (uint16_t)(x))
#define U16(x) BITCAST(uint16_t, _Float16, (_Float16)(x))
#define BIT(l) (1u << (l))
/* one loop over the warp, vectorised and not unrolled (unrolled, the kernels take twice as long to compile) */
#define LANES(mask) _Pragma("clang loop unroll(disable) vectorize_width(16) interleave_count(1)") \
    for (int l = 0; l < 32; l++) if (((mask) >> l) & 1)
/* a loop over lanes none of which reads memory another writes (codegen's runs of each lane's own instructions: the
 * lane's registers, and memory only read; a store of one element a lane, whose scatter keeps the lane order), which
 * the compiler cannot see through the accesses' addresses */
#define RUN_LANES(mask) \
    _Pragma("clang loop unroll(disable) vectorize(assume_safety) vectorize_width(16) interleave_count(1)") \
    for (int l = 0; l < 32; l++) if (((mask) >> l) & 1)
#define POPC(x) __builtin_popcount(x)
/* the warp issues each instruction of the basic block of len from s once (the PC sampler's counts) */
#define ISSUE(s, len) for (int64_t i_ = (s); i_ < (s) + (len); i_++) st->issued[i_]++;
/* a basic block of len instructions from s may run: else the slice ends before it, or the budget ends at the
 * instruction of the block where the warp's steps reach it (the reference's hang names that one) */
#define CHECK(s, len) if (steps + (len) > limit) { pc = (s); over = steps + (len) > budget ? (s) + (budget - steps) : -1; \
    goto limit; }

/* the lanes l < cnt whose p[l] is v, as a mask: a whole warp's in one vector compare (clang's bool vectors are
 * bits), where a loop over the lanes shifts and ORs each */
typedef _Bool bits32 __attribute__((ext_vector_type(32)));
#define EQ_MASK(name, T) \
    typedef T name##_x32 __attribute__((ext_vector_type(32))); \
    static inline uint32_t name(const T *p, int cnt, T v) { \
        if (cnt == 32) { \
            name##_x32 x; memcpy(&x, p, sizeof x); \
            bits32 b = __builtin_convertvector(x == v, bits32); \
            uint32_t r; memcpy(&r, &b, 4); \
            return r; \
        } \
        uint32_t r = 0; \
        for (int l = 0; l < cnt; l++) r |= (uint32_t)(p[l] == v) << l; \
        return r; \
    }
EQ_MASK(eq8, int8_t) EQ_MASK(eq64, int64_t)
/* a predicate register's lanes as a mask */
static inline uint32_t pmask(const _Bool *p) { return ~eq8((const int8_t *)p, 32, 0); }

/* PTX's float results: a NaN is the canonical one; .ftz flushes a subnormal to a zero of its sign; .sat clamps to
 * [0, 1] with NaN to 0 (fp.py) */
/* (on the bits: LLVM takes any NaN for any other, and would fold the choice of a NaN away) */
static inline float canon32(float x) {
    uint32_t u = U32(x);
    return F32((u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFFFFFFu : u);
}
static inline double canon64(double x) {
    uint64_t u = U64(x);
    return F64((u & ~(1ull << 63)) > 0x7FF0000000000000ull ? 0x7FFFFFFFFFFFFFFFull : u);
}
static inline float ftz32(float x) { return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x; }
static inline double ftz64(double x) { return fabs(x) < 0x1p-1022 ? copysign(0.0, x) : x; }
static inline float sat32(float x) { return x != x ? 0.0f : x < 0 ? 0.0f : x > 1 ? 1.0f : x; }
static inline double sat64(double x) { return x != x ? 0.0 : x < 0 ? 0.0 : x > 1 ? 1.0 : x; }
/* f32 to bf16 bits rounded to nearest even, NaN the canonical 0x7fff (fp.to_bf16) */
static inline uint16_t to_bf16(float x) {
    uint32_t u = U32(x);
    return (u & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFF : (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}
static inline uint16_t canon16(_Float16 x) {
    uint16_t u = U16(x);
    return (u & 0x7FFF) > 0x7C00 ? 0x7FFF : u;
}
/* min/max: a NaN operand loses, -0 below +0 */
#define FMINMAX(S, T, FA) \
    static inline T fmin_##S(T a, T b) { if (a == 0 && b == 0) return signbit(a) || signbit(b) ? -FA(a) : FA(a); \
        return a != a ? b : b != b ? a : a < b ? a : b; } \
    static inline T fmax_##S(T a, T b) { if (a == 0 && b == 0) return signbit(a) && signbit(b) ? -FA(a) : FA(a); \
        return a != a ? b : b != b ? a : a > b ? a : b; }
FMINMAX(32, float, fabsf) FMINMAX(64, double, fabs)
/* div.approx.f32: the quotient, but 0 (NaN for an infinite a) where 2^126 < |b| < inf */
static inline float div_approx(float a, float b) {
    float q = a / b;
    return isfinite(b) && fabsf(b) > 0x1p126f ? (isinf(a) ? F32(0x7FC00000u) : q * 0) : q;
}

/* integer division as the reference does it: x / 0 is -1 (signed) or all ones, x % 0 is x; INT_MIN / -1 wraps */
static inline int64_t sdiv(int64_t a, int64_t b, int rem) {
    if (b == 0) return rem ? a : -1;
    uint64_t ua = a < 0 ? -(uint64_t)a : (uint64_t)a, ub = b < 0 ? -(uint64_t)b : (uint64_t)b;
    uint64_t q = ua / ub, r = ua % ub;
    if (rem) return a < 0 ? (int64_t)-r : (int64_t)r;
    return (a < 0) != (b < 0) ? (int64_t)-q : (int64_t)q;
}
static inline uint64_t udiv(uint64_t a, uint64_t b, int rem, uint64_t max) {
    return b == 0 ? (rem ? a : max) : rem ? a % b : a / b;
}
/* cvt from a float to an integer type: rounded, saturated to [lo, hi], NaN to nan (fp.to_integer) */
static inline uint64_t to_int(double w, int mode, double lo, double hi, uint64_t ilo, uint64_t ihi, uint64_t nan,
                              int is_signed) {
    if (w != w) return nan;
    double r = mode == 0 ? rint(w) : mode == 1 ? trunc(w) : mode == 2 ? floor(w) : ceil(w);
    if (r >= hi) return ihi;
    if (r <= lo) return ilo;
    return is_signed ? (uint64_t)(int64_t)r : (uint64_t)r;
}
/* bfe: len bits from pos (both mod 256), sign-filled from bit min(pos + len - 1, msb) for a signed type */
static inline uint64_t bfe(uint64_t x, uint64_t p, uint64_t n, int size, int is_signed) {
    p &= 0xFF, n &= 0xFF;
    if (n == 0) return 0;
    int64_t valid = (int64_t)n < size - (int64_t)p ? (int64_t)n : size - (int64_t)p;
    if (valid < 0) valid = 0;
    uint64_t keep = valid >= 64 ? ~0ull : (1ull << valid) - 1;
    uint64_t field = p >= (uint64_t)size ? 0 : (x >> p) & keep;
    uint64_t full = size == 64 ? ~0ull : (1ull << size) - 1;
    if (is_signed) {
        uint64_t sbit = p + n - 1 < (uint64_t)size - 1 ? p + n - 1 : (uint64_t)size - 1;
        if ((x >> sbit) & 1) field |= ~keep & full;
    }
    return field & full;
}
static inline uint64_t bfi(uint64_t a, uint64_t b, uint64_t p, uint64_t n, int size) {
    p &= 0xFF, n &= 0xFF;
    uint64_t room = p >= (uint64_t)size ? 0 : size - p;
    if (n > room) n = room;
    if (n == 0) return b;
    uint64_t keep = n >= 64 ? ~0ull : (1ull << n) - 1;
    uint64_t full = size == 64 ? ~0ull : (1ull << size) - 1;
    return ((b & ~(keep << p)) | ((a & keep) << p)) & full;
}
static inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t s) {
    uint64_t pair = (uint64_t)a | (uint64_t)b << 32;
    uint32_t out = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t nib = s >> (4 * i) & 0xF;
        uint32_t byte = pair >> (8 * (nib & 7)) & 0xFF;
        if (nib & 8) byte = byte & 0x80 ? 0xFF : 0;
        out |= byte << (8 * i);
    }
    return out;
}

/* the first lane in the batch, and the count of lanes, of warp k of block b (warp b * wpb + k) */
#define WARP_LANES(b, k) const int64_t lane0 = (b) * st->per_block + (k) * 32; \
    const int cnt = st->per_block - (k) * 32 < 32 ? (int)(st->per_block - (k) * 32) : 32;

/* A running warp's registers are in its scratch, one per warp of a block (the k-th warp of each block shares the
 * k-th): owner[k] is the warp whose registers it holds (-1: none). A warp taking its scratch saves the owner's to the
 * State's arrays, then loads its own (clears them, as it starts); whenever run() returns, every scratch is saved, so
 * the reference and Python see the registers in the State's arrays. */
static void save_warp(State *st, int64_t w) {
    const int64_t k = w % st->wpb;
    WARP_LANES(w / st->wpb, k)
    uint8_t *const base = st->scratch + k * SCRATCH; (void)base;
    REGS(base)
    SAVE
}
static void take(State *st, int64_t w, int64_t b, int64_t k) {
    const int64_t o = st->owner[k];
    if (o == w) return;
    if (o >= 0) save_warp(st, o);
    WARP_LANES(b, k)
    uint8_t *const base = st->scratch + k * SCRATCH; (void)base;
    REGS(base)
    if (!st->wsteps[w]) { CLEAR } else { LOAD }
    st->owner[k] = w;
}
static void flush(State *st) {
    for (int64_t k = 0; k < st->wpb; k++)
        if (st->owner[k] >= 0) save_warp(st, st->owner[k]), st->owner[k] = -1;
}

#define WARP_BEGIN \
static int run_warp(State *st, int64_t w, int64_t b, int64_t k) { \
    WARP_LANES(b, k) \
    int64_t *const pcs = st->pc + lane0; int8_t *const stat = st->status + lane0; \
    int64_t *const bsite = st->bar_site + lane0, *const bid = st->bar_id + lane0, *const bcount = st->bar_count + lane0; \
    /* the State's fields the instructions read, loaded once (a byte's or a predicate's store may alias them) */ \
    uint8_t *const shared_ = st->shared + b * st->shared_size, *const local_ = st->local + lane0 * st->local_size; \
    uint8_t *const param_ = st->param + lane0 * st->param_size; \
    const uint64_t shared_size_ = st->shared_size, local_size_ = st->local_size, param_size_ = st->param_size; \
    const uint32_t *const tid_ = st->tid + lane0, *const ctaid_ = st->ctaid + lane0; const int64_t n_ = st->n; \
    const int64_t ntid_[3] = { st->ntid[0], st->ntid[1], st->ntid[2] }; \
    const int64_t nctaid_[3] = { st->nctaid[0], st->nctaid[1], st->nctaid[2] }; const uint64_t *const gaddr_ = st->gaddr; \
    (void)bsite, (void)bid, (void)bcount, (void)shared_, (void)local_, (void)param_, (void)shared_size_; \
    (void)local_size_, (void)param_size_, (void)tid_, (void)ctaid_, (void)n_, (void)ntid_, (void)nctaid_, (void)gaddr_; \
    int64_t steps = st->wsteps[w], lsteps = 0, pc = 0, wmin = 0, over = -1; \
    const int64_t start = steps, budget = st->budget; \
    const int64_t limit = budget < steps + st->quota ? budget : steps + st->quota; \
    uint32_t m = 0, g = 0, live = 0; int rc; (void)g; \
    take(st, w, b, k); \
    uint8_t *const base = st->scratch + k * SCRATCH; (void)base; \
    REGS(base) \
    goto schedule;
#define WARP_END \
schedule: \
    live = eq8(stat, cnt, RUN); \
    if (eq8(stat, cnt, EXIT) == (cnt == 32 ? ~0u : BIT(cnt) - 1)) st->owner[k] = -1; /* registers read no more */ \
    if (!live) { rc = RC_OK; goto out; } \
    pc = pcs[__builtin_ctz(live)]; wmin = INT64_MAX; \
    m = eq64(pcs, cnt, pc) & live; \
    if (m != live) { /* lanes apart: those at the PC first in the order run */ \
      int64_t best = INT64_MAX; \
      LANES(live) { int64_t o = ORDER_OF(pcs[l]); if (o < best) best = o, pc = pcs[l]; } \
      m = 0; \
      LANES(live) { if (pcs[l] == pc) m |= BIT(l); else { int64_t o = ORDER_OF(pcs[l]); if (o < wmin) wmin = o; } } \
    } \
    goto dispatch; \
merge: \
    LANES(m) pcs[l] = pc; \
    goto schedule; \
limit: \
    rc = over >= 0 ? RC_HANG : RC_QUOTA; \
    LANES(m) pcs[l] = pc; \
    st->warp = w, st->at = over >= 0 ? over : pc; \
    goto out; \
fallback: \
    rc = RC_FALLBACK; \
    LANES(m) pcs[l] = pc; \
    st->warp = w, st->at = pc; \
out: \
    st->wsteps[w] = steps; st->quota -= steps - start; st->steps += steps - start; st->lane_steps += lsteps; \
    return rc; \
} \
/* the block's lanes that have not exited all wait at one plain barrier (no count, no reduction): released */ \
static int release(State *st, int64_t b) { \
    const int64_t lo = b * st->per_block, hi = lo + st->per_block; \
    { /* most often every lane not exited waits at one barrier instruction: looked for in one vectorised pass */ \
      int64_t first = lo; \
      while (first < hi && st->status[first] == EXIT) first++; \
      if (first == hi || st->status[first] != BAR) return 0; \
      const int64_t site0 = st->bar_site[first], id0 = st->bar_id[first]; int other = 0; \
      for (int64_t i = first; i < hi; i++) \
          other |= (st->status[i] != EXIT) & ((st->status[i] != BAR) | (st->bar_site[i] != site0) | \
                                              (st->bar_id[i] != id0) | (st->bar_count[i] != 0)); \
      if (!other) { \
          if (!PLAIN_BAR(site0)) return 0; \
          int8_t *const status = st->status; /* (a byte's store may alias st's fields: loaded once) */ \
          for (int64_t i = first; i < hi; i++) status[i] = status[i] == BAR ? RUN : status[i]; \
          return 1; \
      } } \
    int64_t id = -1, site = -1; \
    for (int64_t i = lo; i < hi; i++) { \
        if (st->status[i] == EXIT) continue; \
        if (st->status[i] != BAR || st->bar_count[i] || (id >= 0 && st->bar_id[i] != id)) return 0; \
        if (st->bar_site[i] != site && !PLAIN_BAR(st->bar_site[i])) return 0; \
        id = st->bar_id[i], site = st->bar_site[i]; \
    } \
    if (id < 0) return 0; \
    for (int64_t i = lo; i < hi; i++) if (st->status[i] == BAR) st->status[i] = RUN; \
    return 1; \
} \
static int runnable(State *st, int64_t b, int64_t k) { \
    WARP_LANES(b, k) \
    return eq8(st->status + lane0, cnt, RUN) != 0; \
} \
int run(State *st) { \
    int stuck = 0; \
    for (; st->bi < st->nblocks; st->bi++) { \
        const int64_t b = st->bi; \
        do { /* a warp runs until no lane of it can (RC_OK): then only a barrier's release lets any run on */ \
            for (int64_t k = 0; k < st->wpb; k++) { /* (the warp's block and place passed on: no division) */ \
                if (!runnable(st, b, k)) continue; \
                int rc = run_warp(st, b * st->wpb + k, b, k); \
                if (rc != RC_OK) { flush(st); return rc; } \
            } \
        } while (release(st, b)); \
        { const int8_t *const status = st->status; int waiting = 0; /* (vectorised: no early exit) */ \
          for (int64_t i = b * st->per_block; i < (b + 1) * st->per_block; i++) waiting |= status[i] == BAR; \
          stuck |= waiting; } \
    } \
    st->bi = 0; \
    flush(st); \
    return stuck ? RC_STUCK : RC_DONE; \
}
