/* internal.h - declarations shared by the C core's files; not part of the public API. */
#ifndef ASR_INTERNAL_H
#define ASR_INTERNAL_H

#include <math.h>
#include <stddef.h>

#include "asr.h"

/* sat(x, m) = min(max(x, -m), m). Written with comparisons, not fmin/fmax: without -ffast-math
 * the compiler keeps those as library calls, while these compile to minsd/maxsd. */
static inline double asr_clamp(double x, double lo, double hi) {
    double y = x < lo ? lo : x;
    return y > hi ? hi : y;
}
static inline double asr_sat(double x, double m) { return asr_clamp(x, -m, m); }
static inline double asr_sign(double x) { return (double)((x > 0.0) - (x < 0.0)); }

/* 1 if every v[k] is finite. x - x is 0 for finite x and NaN otherwise, so the sum flags any NaN
 * or inf without branches (the loop vectorises) and without the overflow a sum of the values
 * themselves could hit. */
static inline int asr_all_finite(const double* v, int n) {
    double acc = 0.0;
    for (int k = 0; k < n; ++k) acc += v[k] - v[k];
    return acc == 0.0;
}

/* Built-in model definitions (one file per family). */
extern const asr_model_def asr_model_rigid;
extern const asr_model_def asr_model_sea;
extern const asr_model_def asr_model_sea_damped;
extern const asr_model_def asr_model_awas2;
extern const asr_model_def asr_model_bavs;
extern const asr_model_def asr_model_qbmove_advanced;
extern const asr_model_def asr_model_qbmove;

/* Clear an elastic output to the "no spring" state. */
void asr_elastic_out_zero(asr_elastic_out* out);

#endif
