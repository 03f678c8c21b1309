/* lanes.h - ASR_LANES instances side by side in GCC's portable vector type (private).
 *
 * The actuator step (joint_kernel.h) runs ASR_LANES instances of one joint at once, one per
 * lane. Every operation here acts lane by lane with the IEEE operation of the scalar formula (no
 * FMA: the build sets -ffp-contract=off), so a lane computes exactly what a scalar evaluation
 * would, and neither the vector width nor the instruction set the step was built for (simd.h, asr_simd.h)
 * changes a bit. Branches of the scalar formulas become selects: both sides are computed, a mask
 * picks one.
 *
 * Masks (lane_m) are 0 (false) or all ones (true) per lane, what GCC's vector comparisons give.
 * Everything is always inlined, so a caller built for a wider target (joint_avx2.c, or a
 * function cloned by ASR_CLONED) compiles it for that target, with AVX's blends and min/max
 * where __AVX__ is defined; non-inlined functions take vectors by pointer only, never by value
 * (the build passes -Wno-psabi: GCC would note, at every by-value use, that such arguments once
 * passed differently). */
#ifndef ASR_LANES_H
#define ASR_LANES_H

#include <stdint.h>

#define ASR_LANES 4

/* Aligned to their size whatever the target: without AVX, GCC would give a 32-byte vector
 * 16-byte alignment, while the AVX clone of a function loads it with aligned 32-byte moves. */
#define LANE_BYTES (ASR_LANES * 8)
typedef double lane_d __attribute__((vector_size(LANE_BYTES), aligned(LANE_BYTES)));
typedef long long lane_m __attribute__((vector_size(LANE_BYTES), aligned(LANE_BYTES)));
typedef uint64_t lane_u __attribute__((vector_size(LANE_BYTES), aligned(LANE_BYTES)));

#define LANE_INLINE static inline __attribute__((always_inline))

_Static_assert(ASR_LANES == 4, "the initialisers below and lane_any are written for four lanes");

/* Initialisers, not loops: a loop filling an uninitialised vector draws GCC's maybe-uninitialized
 * warning in some builds (AVX-512 under ThreadSanitizer). */
LANE_INLINE lane_d lane_set(double x) { return (lane_d){x, x, x, x}; }

LANE_INLINE lane_m lane_mset(long long x) { return (lane_m){x, x, x, x}; }

LANE_INLINE lane_m lane_mask(int on) { return lane_mset(on ? -1 : 0); }

/* m ? a : b, lane by lane: one blend where the code is built for AVX (joint_avx2.c), three
 * bitwise operations otherwise (GCC's C has no vector ?:). */
LANE_INLINE lane_d lane_sel(lane_m m, lane_d a, lane_d b) {
#ifdef __AVX__
    return __builtin_ia32_blendvpd256(b, a, (lane_d)m);
#else
    return (lane_d)((m & (lane_m)a) | (~m & (lane_m)b));
#endif
}

/* Some lane true: the lanes' sign bits at once with AVX, else an OR across lanes by two
 * shuffles, in vector registers. */
LANE_INLINE int lane_any(lane_m m) {
#ifdef __AVX__
    return __builtin_ia32_movmskpd256((lane_d)m) != 0;
#else
    lane_m t = m | __builtin_shuffle(m, (lane_m){2, 3, 0, 1});
    t |= __builtin_shuffle(t, (lane_m){1, 0, 3, 2});
    return t[0] != 0;
#endif
}

LANE_INLINE int lane_all(lane_m m) { return !lane_any(~m); }

LANE_INLINE lane_d lane_abs(lane_d x) { return (lane_d)((lane_u)x & ~(lane_u)lane_set(-0.0)); }

/* min(max(x, lo), hi) written as num_clamp: a NaN x stays NaN. With AVX, maxpd(lo, x) is
 * exactly x < lo ? lo : x (it returns its second operand unless the first is greater, NaN and
 * signed zeros included), and minpd(hi, y) is y > hi ? hi : y. */
LANE_INLINE lane_d lane_clamp(lane_d x, lane_d lo, lane_d hi) {
#ifdef __AVX__
    return __builtin_ia32_minpd256(hi, __builtin_ia32_maxpd256(lo, x));
#else
    lane_d y = lane_sel(x < lo, lo, x);
    return lane_sel(y > hi, hi, y);
#endif
}

LANE_INLINE lane_d lane_sat(lane_d x, lane_d m) { return lane_clamp(x, -m, m); }

/* 1, -1 or 0 (also for NaN) as num_sign. */
LANE_INLINE lane_d lane_sign(lane_d x) {
    return lane_sel(x > 0.0, lane_set(1.0), lane_sel(x < 0.0, lane_set(-1.0), lane_set(0.0)));
}

/* 1.0 where m, else 0.0. */
LANE_INLINE lane_d lane_one_if(lane_m m) { return lane_sel(m, lane_set(1.0), lane_set(0.0)); }

/* 2^n for integer-valued n in [-1022, 1023], through the exponent bits. shifter + n has n in
 * its low mantissa bits; unsigned arithmetic, so a NaN's bits wrap instead of overflowing. */
LANE_INLINE lane_d lane_pow2(lane_d n) {
    const double shifter = 0x1.8p52;
    lane_u bits = (lane_u)(n + shifter) - (lane_u)lane_set(shifter) + 1023u;
    return (lane_d)(bits << 52);
}

/* exp(x), the core's own: the same bits on every machine and in every lane, which libm's exp
 * (itself picked at load time by CPU features) does not promise. Reduction x = n ln2 + r,
 * |r| <= ln2 / 2, with ln2 split in two (n ln2_hi exact for |n| < 2^11);
 * exp(r) = (1 + r) + r^2 P(r), P the Taylor polynomial to r^13 (truncation below 5e-18
 * relative), the rounding error of 1 + r carried into the small term; 2^n applied in two exact
 * halves. Measured against a long-double reference (tests/c/test_lanes.c, 2 million
 * arguments): at most 0.82 ulp on [-708, 709] (the test allows 0.85); x > 709.79 gives inf,
 * x < -745.2 gives 0, NaN gives NaN; results in the subnormal range (x < -708.4) are rounded
 * twice. */
LANE_INLINE lane_d lane_exp(lane_d x) {
    const double log2e = 1.4426950408889634074, shifter = 0x1.8p52;
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    lane_d xc = lane_clamp(x, lane_set(-746.0), lane_set(710.0));
    lane_d n = (xc * log2e + shifter) - shifter; /* nearest integer to x / ln2 */
    lane_d r = (xc - n * ln2_hi) - n * ln2_lo;
    /* P(r) = sum_{k=0..11} r^k / (k + 2)! by Estrin's scheme: a short dependency chain */
    lane_d r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    lane_d p01 = 0.5 + r * (1.0 / 6.0), p23 = 1.0 / 24.0 + r * (1.0 / 120.0);
    lane_d p45 = 1.0 / 720.0 + r * (1.0 / 5040.0), p67 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    lane_d p89 = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    lane_d pab = 1.0 / 479001600.0 + r * (1.0 / 6227020800.0);
    lane_d p = (p01 + r2 * p23) + r4 * (p45 + r2 * p67) + r8 * (p89 + r2 * pab);
    lane_d hi = 1.0 + r, lo = (1.0 - hi) + r; /* 1 + r = hi + lo exactly (|r| < 1) */
    lane_d e = hi + (lo + r2 * p);
    lane_d n1 = (n * 0.5 + shifter) - shifter; /* n = n1 + n2, both within the normal range */
    return e * lane_pow2(n1) * lane_pow2(n - n1);
}

/* A scalar through lane 0 of the lane function: one formula for both paths. */
LANE_INLINE double lane_exp1(double x) { return lane_exp(lane_set(x))[0]; }

#endif
