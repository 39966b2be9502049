/* The C forms of the functions semantics.py's expressions call (exec/helpers.py, exec/fp.py), and of the numpy
 * functions they use: h_<function>_<dtype of the first argument>. Each does what its Python twin does for that
 * dtype, bit for bit; tests/emu/amd/exec/native/test_helpers.py checks them against it on edge values.
 * Compiled with -fwrapv -ffp-contract=off and no fast-math: integer arithmetic wraps as numpy's does, and each
 * float operation rounds once, as numpy's loops do. */
#include <stdint.h>
#include <math.h>
#include <string.h>

#define BITCAST(to, from, x) ({ from b_in_ = (x); to b_out_; memcpy(&b_out_, &b_in_, sizeof b_out_); b_out_; })
#define H static inline __attribute__((unused))
/* a value the compiler cannot see into: float constants go through it, else LLVM folds x * 1.0 to x and drops the
 * quieting of a signaling NaN x that the hardware (and numpy) does */
#define OPAQUE(T, x) ({ T o_ = (x); __asm__("" : "+r"(o_)); o_; })
/* a NaN quieted as x86 and numpy quiet it: the top mantissa bit set (done on the bits: LLVM may drop x + 0) */
#define QUIET(T, U, BIT, x) BITCAST(T, U, BITCAST(U, T, x) | (U)(BIT))
#define QUIETS(S, T, U, BIT) H T h_quiet_##S(T x) { return QUIET(T, U, BIT, x); }
QUIETS(f16, _Float16, uint16_t, 0x200) QUIETS(f32, float, uint32_t, 0x400000u) QUIETS(f64, double, uint64_t, 0x8000000000000ull)

/* numpy's shifts: a count at or past the width gives 0 (a right shift of a negative signed value: -1) */
#define SHIFTS(S, T, U, BITS) \
    H T h_shl_##S(T a, T b) { return (uint64_t)b < BITS ? (T)((U)a << b) : 0; } \
    H T h_shr_##S(T a, T b) { return (uint64_t)b < BITS ? (T)(a >> b) : (T)(a < 0 ? -1 : 0); }
SHIFTS(u8, uint8_t, uint8_t, 8) SHIFTS(u16, uint16_t, uint16_t, 16) SHIFTS(u32, uint32_t, uint32_t, 32)
SHIFTS(u64, uint64_t, uint64_t, 64) SHIFTS(i8, int8_t, uint8_t, 8) SHIFTS(i16, int16_t, uint16_t, 16)
SHIFTS(i32, int32_t, uint32_t, 32) SHIFTS(i64, int64_t, uint64_t, 64)

/* IEEE-754-2019 minimumNumber / maximumNumber (helpers.fmin, fmax): a NaN operand gives the other (both NaN: the
 * first, quieted), -0 below +0 */
#define FMINMAX(S, T) \
    H T h_fmin_##S(T a, T b) { if (a != a && b != b) return h_quiet_##S(a); \
        return b != b ? a : a != a ? b : (a < b || (a == b && signbit((double)a))) ? a : b; } \
    H T h_fmax_##S(T a, T b) { if (a != a && b != b) return h_quiet_##S(a); \
        return b != b ? a : a != a ? b : (a > b || (a == b && !signbit((double)a))) ? a : b; } \
    H _Bool h_isnan_##S(T a) { return a != a; }
FMINMAX(f16, _Float16) FMINMAX(f32, float) FMINMAX(f64, double)
#define COPYSIGN(S, T, U, SIGN) H T h_copysign_##S(T a, T b) { \
    return BITCAST(T, U, (BITCAST(U, T, a) & ~(U)SIGN) | (BITCAST(U, T, b) & (U)SIGN)); }
COPYSIGN(f16, _Float16, uint16_t, 0x8000) COPYSIGN(f32, float, uint32_t, 0x80000000u)
COPYSIGN(f64, double, uint64_t, 0x8000000000000000ull)

/* integer np.minimum / np.maximum / np.clip / np.abs (wrapping at the minimum, as numpy's does) */
#define INTS(S, T) \
    H T h_npmin_##S(T a, T b) { return a < b ? a : b; } \
    H T h_fmin_##S(T a, T b) { return a < b ? a : b; } H T h_fmax_##S(T a, T b) { return a > b ? a : b; } \
    H T h_npmax_##S(T a, T b) { return a > b ? a : b; } \
    H T h_clip_##S(T a, T lo, T hi) { return a < lo ? lo : a > hi ? hi : a; } \
    H T h_abs_##S(T a) { return a < 0 ? (T)(0 - a) : a; }
INTS(i8, int8_t) INTS(i16, int16_t) INTS(i32, int32_t) INTS(i64, int64_t) INTS(u8, uint8_t) INTS(u16, uint16_t)
INTS(u32, uint32_t) INTS(u64, uint64_t)

/* one-argument float functions: f32 and f64 by libm (correctly rounded, as numpy's), f16 in float, rounded once */
H float h_abs_f32(float a) { return BITCAST(float, uint32_t, BITCAST(uint32_t, float, a) & 0x7FFFFFFFu); }
H double h_abs_f64(double a) { return BITCAST(double, uint64_t, BITCAST(uint64_t, double, a) & 0x7FFFFFFFFFFFFFFFull); }
H _Float16 h_abs_f16(_Float16 a) { return BITCAST(_Float16, uint16_t, BITCAST(uint16_t, _Float16, a) & 0x7FFF); }
#define ROUNDING(S, T, F) \
    H T h_sqrt_##S(T a) { return (T)sqrt##F(a); } H T h_floor_##S(T a) { return (T)floor##F(a); } \
    H T h_ceil_##S(T a) { return (T)ceil##F(a); } H T h_trunc_##S(T a) { return (T)trunc##F(a); } \
    H T h_rint_##S(T a) { return (T)rint##F(a); } H T h_ldexp_##S(T a, int32_t e) { return (T)ldexp##F(a, e); }
ROUNDING(f32, float, f) ROUNDING(f64, double, )
H _Float16 h_sqrt_f16(_Float16 a) { return (_Float16)sqrtf((float)a); }
H _Float16 h_floor_f16(_Float16 a) { return (_Float16)floorf((float)a); }
H _Float16 h_ceil_f16(_Float16 a) { return (_Float16)ceilf((float)a); }
H _Float16 h_trunc_f16(_Float16 a) { return (_Float16)truncf((float)a); }
H _Float16 h_rint_f16(_Float16 a) { return (_Float16)rintf((float)a); }
H _Float16 h_ldexp_f16(_Float16 a, int32_t e) { return (_Float16)ldexpf((float)a, e); }

/* + - * / as numpy's loops give them, whichever way the compiler orders the operands: a NaN first operand is the
 * result (quieted), else a NaN second one (f16: computed in float, rounded once to half) */
#define ARITH(S, T, C) \
    H T h_add_##S(T a, T b) { return a != a ? h_quiet_##S(a) : b != b ? h_quiet_##S(b) : (T)((C)a + (C)b); } \
    H T h_sub_##S(T a, T b) { return a != a ? h_quiet_##S(a) : b != b ? h_quiet_##S(b) : (T)((C)a - (C)b); } \
    H T h_mul_##S(T a, T b) { return a != a ? h_quiet_##S(a) : b != b ? h_quiet_##S(b) : (T)((C)a * (C)b); } \
    H T h_div_##S(T a, T b) { return a != a ? h_quiet_##S(a) : b != b ? h_quiet_##S(b) : (T)((C)a / (C)b); }
ARITH(f16, _Float16, float) ARITH(f32, float, float) ARITH(f64, double, double)
/* a NaN result as the reference's fma (a * b + c in double arithmetic) gives it: a's or b's quieted, else the
 * product's own (inf x 0: the host's default NaN), else c's quieted */
#define FIRST_NAN(S, T, a, b, c) \
    if (a != a || b != b) return h_quiet_##S(a != a ? a : b); \
    { const double p_ = (double)a * (double)b; if (p_ != p_) return (T)p_; } \
    if (c != c) return h_quiet_##S(c)

/* fma: one rounding (f16: the exact double product plus c, rounded to double, then to half, as fp.py does) */
H float h_fma_f32(float a, float b, float c) { FIRST_NAN(f32, float, a, b, c); return fmaf(a, b, c); }
H double h_fma_f64(double a, double b, double c) { FIRST_NAN(f64, double, a, b, c); return fma(a, b, c); }
H _Float16 h_fma_f16(_Float16 a, _Float16 b, _Float16 c) {
    return (_Float16)h_add_f64(h_mul_f64((double)a, (double)b), (double)c);
}

/* float to integer toward zero, saturating, NaN to 0 (fp.to_int) */
#define TO_INT(D, TD, LO, HI, S, TS) \
    H TD h_to_int_##D##_##S(TS x) { double t = x != x ? 0.0 : trunc((double)x); \
        return t < (double)(LO) ? (TD)(LO) : t > (double)(HI) ? (TD)(HI) : (TD)t; }
#define TO_INTS(S, TS) TO_INT(i32, int32_t, INT32_MIN, INT32_MAX, S, TS) TO_INT(u32, uint32_t, 0, UINT32_MAX, S, TS) \
    TO_INT(i16, int16_t, INT16_MIN, INT16_MAX, S, TS) TO_INT(u16, uint16_t, 0, UINT16_MAX, S, TS) \
    TO_INT(u8, uint8_t, 0, UINT8_MAX, S, TS)
TO_INTS(f16, _Float16) TO_INTS(f32, float) TO_INTS(f64, double)

/* frexp's mantissa and exponent (inf and NaN: themselves, and 0); x - floor(x) below 1 (fp.py) */
#define FREXP(S, T, F, ONE_BELOW) \
    H T h_frexp_mant_##S(T x) { int e; return isfinite((double)x) ? (T)frexp##F(x, &e) : x; } \
    H int32_t h_frexp_exp_##S(T x) { int e = 0; if (!isfinite((double)x)) return 0; frexp##F(x, &e); return e; } \
    H T h_fract_##S(T x) { if (isinf((double)x)) return (T)NAN; T f = (T)(x - floor##F(x)); \
        return x != x ? (T)(x - floor##F(x)) : (f < ONE_BELOW ? f : ONE_BELOW); }
FREXP(f32, float, f, 0x1.fffffep-1f) FREXP(f64, double, , 0x1.fffffffffffffp-1)
H _Float16 h_frexp_mant_f16(_Float16 x) { int e; return isfinite((float)x) ? (_Float16)frexpf((float)x, &e) : x; }
H int32_t h_frexp_exp_f16(_Float16 x) { int e = 0; if (!isfinite((float)x)) return 0; frexpf((float)x, &e); return e; }
H _Float16 h_fract_f16(_Float16 x) {
    if (isinf((float)x)) return (_Float16)NAN;
    _Float16 f = (_Float16)((float)x - floorf((float)x)), below = (_Float16)0x1.ffcp-1;
    return x != x ? f : (f < below ? f : below);
}

/* bit counting: popcount (u32), leading / trailing zeros and leading sign bits (i32, -1 where none) */
#define BITS(S, T, U, N) \
    H uint32_t h_popcount_##S(T a) { return (uint32_t)__builtin_popcountll((uint64_t)a); } \
    H int32_t h_clz_##S(T a) { return (U)a ? __builtin_clzll((uint64_t)(U)a) - (64 - N) : -1; } \
    H int32_t h_ctz_##S(T a) { return (U)a ? __builtin_ctzll((uint64_t)(U)a) : -1; } \
    H int32_t h_cls_##S(T a) { U u = (U)a; return h_clz_##S((T)((u >> (N - 1)) ? ~u : u)); } \
    H T h_brev_##S(T a) { U u = (U)a, r = 0; for (int i = 0; i < N; i++) r |= (U)((u >> i) & 1) << (N - 1 - i); \
        return (T)r; }
BITS(u32, uint32_t, uint32_t, 32) BITS(i32, int32_t, uint32_t, 32) BITS(u64, uint64_t, uint64_t, 64)
BITS(i64, int64_t, uint64_t, 64)

H uint32_t h_mul_hi_u32(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
H int32_t h_mul_hi_i32(int32_t a, int32_t b) { return (int32_t)(((int64_t)a * b) >> 32); }
H int32_t h_sext24_u32(uint32_t a) { int64_t x = a & 0xFFFFFF; return (int32_t)(x & 0x800000 ? x - 0x1000000 : x); }
H uint32_t h_alignbit_u32(uint32_t a, uint32_t b, uint32_t c) {
    return (uint32_t)((((uint64_t)a << 32) | b) >> (c & 31));
}

/* bit-field extract: the width-bit field at off (modulo the width); a signed field's top bit extends */
#define BFE(S, T, N) \
    H T h_bfe_u_##S(T a, uint64_t off, uint64_t w) { uint64_t u = (uint64_t)a >> (off & (N - 1)); \
        return (T)(w >= 64 ? u : u & ((1ull << w) - 1)); } \
    H T h_bfe_i_##S(T a, int64_t off, int64_t w) { int64_t f = (int64_t)a >> (off & (N - 1)); \
        int64_t up = 64 - (w < 1 ? 1 : w > 64 ? 64 : w); int64_t ext = (int64_t)((uint64_t)f << up) >> up; \
        return (T)(w == 0 ? 0 : w >= N ? f : ext); }
BFE(u32, uint32_t, 32) BFE(i32, int32_t, 32) BFE(u64, uint64_t, 64) BFE(i64, int64_t, 64)

/* v_perm_b32: each result byte from the 8 bytes {a, b} (b: bytes 0-3), a byte's sign, 0 or 0xFF by selector */
H uint32_t h_perm_u32(uint32_t a, uint32_t b, uint32_t sel) {
    uint64_t src = ((uint64_t)a << 32) | b;
    uint32_t out = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t s = (sel >> (8 * i)) & 0xFF, byte;
        if (s >= 8 && s <= 11) byte = (src >> (8 * (2 * (s - 8) + 1) + 7)) & 1 ? 0xFF : 0;
        else if (s == 12) byte = 0;
        else if (s > 12) byte = 0xFF;
        else byte = (src >> (8 * s)) & 0xFF;
        out |= byte << (8 * i);
    }
    return out;
}

/* med3: the middle value; floats with a NaN among them: the least of the others (np.fmin's rules) */
#define MED3F(S, T) H T h_med3_##S(T a, T b, T c) { \
    if (a != a || b != b || c != c) return h_fmin_##S(h_fmin_##S(a, b), c); \
    return h_fmax_##S(h_fmin_##S(a, b), h_fmin_##S(h_fmax_##S(a, b), c)); }
MED3F(f16, _Float16) MED3F(f32, float) MED3F(f64, double)
#define MED3I(S, T) H T h_med3_##S(T a, T b, T c) { \
    return h_npmax_##S(h_npmin_##S(a, b), h_npmin_##S(h_npmax_##S(a, b), c)); }
MED3I(i16, int16_t) MED3I(u16, uint16_t) MED3I(i32, int32_t) MED3I(u32, uint32_t)

/* IEEE-754-2019 minimum / maximum: a NaN (quieted) if either is; -0 below +0 */
#define MINMAX(S, T) \
    H T h_minimum_##S(T a, T b) { T r = (a == 0 && b == 0) ? (signbit((double)a) ? a : b) : \
        (a != a || b != b) ? (a != a ? a : b) : (a < b ? a : b); return r != r ? h_quiet_##S(r) : r; } \
    H T h_maximum_##S(T a, T b) { T r = (a == 0 && b == 0) ? (signbit((double)a) ? b : a) : \
        (a != a || b != b) ? (a != a ? a : b) : (a > b ? a : b); return r != r ? h_quiet_##S(r) : r; }
MINMAX(f16, _Float16) MINMAX(f32, float) MINMAX(f64, double)

/* v_cmp_class: whether a is in a class the mask selects (sNaN, qNaN, -inf, -normal, -denormal, -0, +0,
 * +denormal, +normal, +inf) */
#define FCLASS(S, T, U, QUIET, TINY) H _Bool h_fclass_##S(T a, uint32_t m) { \
    U bits = BITCAST(U, T, a); int neg = signbit((double)a), cls; double x = (double)a; \
    if (x != x) cls = (bits & QUIET) ? 1 : 0; \
    else if (isinf(x)) cls = neg ? 2 : 9; \
    else if (x == 0) cls = neg ? 5 : 6; \
    else if (fabs(x) < TINY) cls = neg ? 4 : 7; \
    else cls = neg ? 3 : 8; \
    return (m >> cls) & 1; }
FCLASS(f16, _Float16, uint16_t, 0x200, 0x1p-14) FCLASS(f32, float, uint32_t, 0x400000u, 0x1p-126)
FCLASS(f64, double, uint64_t, 0x8000000000000ull, 0x1p-1022)

/* v_div_fixup: IEEE division's special cases of num / den; elsewhere q with the quotient's sign */
#define DIV_FIXUP(S, T) H T h_div_fixup_##S(T q, T den, T num) { \
    T exact = (T)((double)num / (double)den); \
    int special = num != num || den != den || den == 0 || num == 0 || isinf((double)num) || isinf((double)den) \
        || isinf((double)exact); \
    T aq = h_abs_##S(q); \
    return special ? exact : (signbit((double)den) != signbit((double)num) ? (T)-aq : aq); }
DIV_FIXUP(f32, float) DIV_FIXUP(f16, _Float16)
H double h_div_fixup_f64(double q, double den, double num) {
    double exact = num / den;
    int special = num != num || den != den || den == 0 || num == 0 || isinf(num) || isinf(den) || isinf(exact);
    double aq = h_abs_f64(q);
    return special ? exact : (signbit(den) != signbit(num) ? -aq : aq);
}

/* two halves packed: f16 toward zero (v_cvt_pkrtz), or 16-bit values as they are */
H _Float16 h_f32_to_f16(float x);
H uint16_t f16_rtz(float x) {
    _Float16 h = h_f32_to_f16(x);
    uint16_t bits = BITCAST(uint16_t, _Float16, h);
    if (isfinite(x) && fabsf((float)h) > fabsf(x))  /* rounded away from zero: one step back toward it */
        bits = (bits & 0x7FFF) == 0 ? bits : (uint16_t)(bits - 1);
    return bits;
}
H uint32_t h_pkrtz_f32(float a, float b) { return (uint32_t)f16_rtz(a) | ((uint32_t)f16_rtz(b) << 16); }
H uint32_t h_pack16_f16(_Float16 a, _Float16 b) {
    return (uint32_t)BITCAST(uint16_t, _Float16, a) | ((uint32_t)BITCAST(uint16_t, _Float16, b) << 16);
}
H uint32_t h_pack16_u16(uint16_t a, uint16_t b) { return (uint32_t)a | ((uint32_t)b << 16); }
H uint32_t h_pack16_i16(int16_t a, int16_t b) { return (uint32_t)(uint16_t)a | ((uint32_t)(uint16_t)b << 16); }

/* v_mbcnt: the set bits of mask below this lane (lanes first .. first + 31); the lane is the caller's `lane` */
#define h_mbcnt_u32(mask, first, lanes) mbcnt_((mask), (first), lane)
H uint32_t mbcnt_(uint32_t mask, int first, int lane) {
    int below = lane - first < 0 ? 0 : lane - first > 32 ? 32 : lane - first;
    uint64_t keep = below >= 32 ? 0xFFFFFFFFull : (1ull << below) - 1;
    return (uint32_t)__builtin_popcountll((uint64_t)mask & keep);
}

/* s_quadmask / s_wqm / s_bitreplicate on 4-bit groups and bits */
#define QUADS(S, T, N) \
    H T h_quadmask_##S(T a) { uint64_t u = (uint64_t)a, r = 0; \
        for (int i = 0; i < N / 4; i++) r |= (uint64_t)(((u >> 4 * i) & 0xF) != 0) << i; return (T)r; } \
    H T h_wqm_##S(T a) { uint64_t u = (uint64_t)a, r = 0; \
        for (int i = 0; i < N / 4; i++) r |= ((u >> 4 * i) & 0xF) ? 0xFull << 4 * i : 0; return (T)r; }
QUADS(u32, uint32_t, 32) QUADS(u64, uint64_t, 64)
H uint64_t h_bitreplicate_u32(uint32_t a) {
    uint64_t r = 0;
    for (int i = 0; i < 32; i++) r |= (uint64_t)((a >> i) & 1) * (3ull << 2 * i);
    return r;
}

/* sums of absolute differences of 8/16/32-bit fields; v_lerp_u8's rounded byte averages */
H uint32_t h_sad_u32(uint32_t a, uint32_t b, int bits) {
    uint64_t total = 0, mask = bits == 32 ? 0xFFFFFFFFull : (1ull << bits) - 1;
    for (int i = 0; i < 32 / bits; i++) {
        int64_t x = (a >> bits * i) & mask, y = (b >> bits * i) & mask;
        total += (uint64_t)(x > y ? x - y : y - x);
    }
    return (uint32_t)total;
}
H uint32_t h_lerp_u8_u32(uint32_t a, uint32_t b, uint32_t c) {
    uint64_t r = 0;
    for (int i = 0; i < 4; i++)
        r += (uint64_t)((((a >> 8 * i) & 0xFF) + ((b >> 8 * i) & 0xFF) + ((c >> 8 * i) & 1)) >> 1) << (8 * i);
    return (uint32_t)r;
}

/* sign flips (numpy's negative of a float: the sign bit, NaN payloads kept) and FLUSH_* modes' denormals to 0 */
#define SIGNS(S, T, U, SIGN, TINY) \
    H T h_neg_##S(T a) { return BITCAST(T, U, BITCAST(U, T, a) ^ (U)SIGN); } \
    H T h_flush_##S(T a) { return h_abs_##S(a) < (T)TINY ? BITCAST(T, U, BITCAST(U, T, a) & (U)SIGN) : a; }
SIGNS(f16, _Float16, uint16_t, 0x8000, 0x1p-14) SIGNS(f32, float, uint32_t, 0x80000000u, 0x1p-126)
SIGNS(f64, double, uint64_t, 0x8000000000000000ull, 0x1p-1022)

/* conversions to and from half as numpy does them: bit for bit, so a signaling NaN stays signaling (its payload
 * truncated or widened; a payload truncated to nothing keeps one bit), other values rounded to nearest even */
H float h_f16_to_f32(_Float16 h) {
    uint16_t b = BITCAST(uint16_t, _Float16, h);
    if ((b & 0x7C00) == 0x7C00 && (b & 0x3FF))
        return BITCAST(float, uint32_t, ((uint32_t)(b & 0x8000) << 16) | 0x7F800000u | ((uint32_t)(b & 0x3FF) << 13));
    return (float)h;
}
H double h_f16_to_f64(_Float16 h) {
    uint16_t b = BITCAST(uint16_t, _Float16, h);
    if ((b & 0x7C00) == 0x7C00 && (b & 0x3FF))
        return BITCAST(double, uint64_t, ((uint64_t)(b & 0x8000) << 48) | 0x7FF0000000000000ull |
                                         ((uint64_t)(b & 0x3FF) << 42));
    return (double)h;
}
H _Float16 h_f32_to_f16(float x) {
    uint32_t b = BITCAST(uint32_t, float, x);
    if (x != x) {
        uint16_t h = (uint16_t)(0x7C00 + ((b & 0x7FFFFF) >> 13));
        return BITCAST(_Float16, uint16_t, (uint16_t)(((b >> 16) & 0x8000) | (h == 0x7C00 ? 0x7C01 : h)));
    }
    return (_Float16)x;
}
H _Float16 h_f64_to_f16(double x) {
    uint64_t b = BITCAST(uint64_t, double, x);
    if (x != x) {
        uint16_t h = (uint16_t)(0x7C00 + ((b & 0xFFFFFFFFFFFFFull) >> 42));
        return BITCAST(_Float16, uint16_t, (uint16_t)(((b >> 48) & 0x8000) | (h == 0x7C00 ? 0x7C01 : h)));
    }
    return (_Float16)x;
}

/* integers saturated to a narrower type (helpers.sat); floats to normalized 16-bit integers (helpers.norm: NaN 0,
 * -1..1 or 0..1 scaled by the type's largest value in f32, rounded to nearest even) */
#define SAT(D, TD, LO, HI, S, TS) H TD h_sat_##D##_##S(TS a) { int64_t x = (int64_t)a; \
    return (TD)(x < (LO) ? (LO) : x > (HI) ? (HI) : x); }
#define SATS(S, TS) SAT(i16, int16_t, INT16_MIN, INT16_MAX, S, TS) SAT(u16, uint16_t, 0, UINT16_MAX, S, TS) \
    SAT(u8, uint8_t, 0, UINT8_MAX, S, TS)
SATS(i16, int16_t) SATS(i32, int32_t) SATS(u32, uint32_t)
#define NORM(D, TD, LO, HI, S, TS, TOF) H TD h_norm_##D##_##S(TS a) { float x = TOF(a); \
    x = x != x ? 0.0f : x; x = x < (LO) ? (LO) : x > 1.0f ? 1.0f : x; return (TD)rintf(x * (float)(HI)); }
#define NORMS(S, TS, TOF) NORM(i16, int16_t, -1.0f, INT16_MAX, S, TS, TOF) NORM(u16, uint16_t, 0.0f, UINT16_MAX, S, TS, TOF)
NORMS(f16, _Float16, h_f16_to_f32) NORMS(f32, float, )
