/* internal.h - declarations shared by the C core's files; not part of the public API. */
#ifndef ASR_INTERNAL_H
#define ASR_INTERNAL_H

#include <math.h>
#include <stddef.h>

#include "asr.h"

/* sat(x, m) = min(max(x, -m), m). Written with comparisons, not fmin/fmax: without -ffast-math
 * the compiler keeps those as library calls, while these compile to minsd/maxsd. */
static inline double num_clamp(double x, double lo, double hi) {
    double y = x < lo ? lo : x;
    return y > hi ? hi : y;
}
static inline double num_sat(double x, double m) { return num_clamp(x, -m, m); }
static inline double num_sign(double x) { return (double)((x > 0.0) - (x < 0.0)); }

/* 1 if every v[k] is finite. x - x is exactly 0 for finite x and NaN for NaN or inf, so sums of
 * such terms are 0 unless some v[k] is not finite (and cannot overflow, unlike a sum of the
 * values). Four independent sums keep the dependent-add chain short: the compiler may not
 * reorder floating-point adds by itself. */
static inline int num_all_finite(const double* v, int n) {
    double a[4] = {0.0, 0.0, 0.0, 0.0};
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        for (int l = 0; l < 4; ++l) a[l] += v[k + l] - v[k + l];
    }
    for (; k < n; ++k) a[0] += v[k] - v[k];
    return (a[0] + a[1]) + (a[2] + a[3]) == 0.0;
}

/* The status of a user callback's return: 0 is ASR_OK; a non-zero return aborts with
 * ASR_ERR_RANGE if the callback said so, else ASR_ERR_CALLBACK (see asr_elastic_fn). */
static inline asr_status callback_status(int rc) {
    if (rc == 0) return ASR_OK;
    return rc == ASR_ERR_RANGE ? ASR_ERR_RANGE : ASR_ERR_CALLBACK;
}

/* Equilibrium-point map of agonistic-antagonistic models: th1 = eq + preset, th2 = eq - preset. */
int refmap_antagonistic(void* user, const double* p, double eq, double preset, double* th1,
                        double* th2);

/* Built-in model definitions (one file per family). */
extern const asr_model_def model_rigid;
extern const asr_model_def model_sea;
extern const asr_model_def model_sea_damped;
extern const asr_model_def model_awas2;
extern const asr_model_def model_bavs;
extern const asr_model_def model_qbmove_advanced;
extern const asr_model_def model_qbmove;

/* Clear an elastic output to the "no spring" state. */
static inline void elastic_out_zero(asr_elastic_out* out) {
    asr_elastic_out zero = {0};
    *out = zero;
}

#endif
