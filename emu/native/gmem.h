/* Bounds-checked access to GPU memory from a native backend's C: a State (declared before this) has the Memory's
 * mappings as sorted tables (base, end, host, writable, nranges; emu/native mappings()), the mapping found last
 * (last), and the fault's facts (fault_addr, fault_access, fault_size, fault_why) that the executor reports. */
#include <stdint.h>

enum { WHY_UNMAPPED, WHY_PAST_END, WHY_READ_ONLY };

/* the host bytes of [addr, addr + size) in GPU memory, inside one mapping, or 0 with the fault recorded; write: 0
 * a read, 1 a write, 2 a read-modify-write (faults as a read where nothing is mapped) */
static __attribute__((noinline)) uint8_t *gmem_find(State *st, uint64_t addr, int64_t size, int write);
static inline __attribute__((always_inline)) uint8_t *gmem(State *st, uint64_t addr, int64_t size, int write) {
    const int64_t i = st->last;  /* the mapping the last access found: most accesses are there again */
    if (i >= 0 && addr >= st->base[i] && addr + size <= st->end[i] && (!write || st->writable[i]))
        return st->host[i] + (addr - st->base[i]);
    return gmem_find(st, addr, size, write);
}
static uint8_t *gmem_find(State *st, uint64_t addr, int64_t size, int write) {
    int64_t i = st->last;
    if (i < 0 || addr < st->base[i] || addr + size > st->end[i]) {
        int64_t lo = 0, hi = st->nranges;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (st->base[mid] <= addr) lo = mid + 1; else hi = mid;
        }
        i = lo - 1;
        st->fault_addr = addr, st->fault_access = write == 1, st->fault_size = size;
        if (i < 0 || addr >= st->end[i]) { st->fault_why = WHY_UNMAPPED; return 0; }
        if (addr + size > st->end[i]) { st->fault_why = WHY_PAST_END; return 0; }
        st->last = i;
    }
    if (write && !st->writable[i]) {
        st->fault_addr = addr, st->fault_access = 1, st->fault_size = size, st->fault_why = WHY_READ_ONLY;
        return 0;
    }
    return st->host[i] + (addr - st->base[i]);
}
