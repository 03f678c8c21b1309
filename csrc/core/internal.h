/* internal.h - declarations shared by the C core's files; not part of the public API. */
#ifndef ASR_INTERNAL_H
#define ASR_INTERNAL_H

#include <math.h>
#include <stddef.h>

#include "asr_batch.h"

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

/* Most model parameters a built-in model has. */
#define ASR_MAX_MODEL_PARAM 8

/* The spring_kind (springs.h) of a model: its built-in formula, or SPRING_USER. */
int spring_kind_of(const asr_model_def* m);

/* A built-in model's compliance and reference map (asr_elastic_fn, asr_refmap_fn without the
 * user pointer) through its lane formula in springs.h, so that a single evaluation gives the
 * bits of a batch step's. */
int builtin_elastic(const asr_model_def* m, const double* p, const asr_elastic_in* in,
                    asr_elastic_out* out);
int builtin_refmap(const asr_model_def* m, const double* p, double eq, double preset, double* th1,
                   double* th2);

/* prefix_elastic and prefix_refmap, the callbacks of built-in model `model`. */
#define BUILTIN_CALLBACKS(prefix, model)                                                           \
    static int prefix##_elastic(void* user, const double* p, const asr_elastic_in* in,             \
                                asr_elastic_out* out) {                                            \
        (void)user;                                                                                \
        return builtin_elastic(&model, p, in, out);                                                \
    }                                                                                              \
    static int prefix##_refmap(void* user, const double* p, double eq, double preset, double* th1, \
                               double* th2) {                                                      \
        (void)user;                                                                                \
        return builtin_refmap(&model, p, eq, preset, th1, th2);                                    \
    }

/* The built-in models, listed once: X(ID, name) in the order of asr_model_get. From it come
 * their definitions' declarations model_<name> (one file per family, model_*.c), the table of
 * models.c and the step's formula kinds SPRING_<ID> (springs.h). */
#define BUILTIN_MODELS(X)                                                                          \
    X(RIGID, rigid)                                                                                \
    X(SEA, sea)                                                                                    \
    X(SEA_DAMPED, sea_damped)                                                                      \
    X(AWAS2, awas2)                                                                                \
    X(BAVS, bavs)                                                                                  \
    X(QBMOVE_ADVANCED, qbmove_advanced)                                                            \
    X(QBMOVE, qbmove)

#define BUILTIN_MODEL_DECL_(id, name) extern const asr_model_def model_##name;
BUILTIN_MODELS(BUILTIN_MODEL_DECL_)
#undef BUILTIN_MODEL_DECL_

/* Clear an elastic output to the "no spring" state. */
static inline void elastic_out_zero(asr_elastic_out* out) {
    asr_elastic_out zero = {0};
    *out = zero;
}

/* 1 if every output of a compliance evaluation is finite (a user model's may not be). */
static inline int elastic_out_finite(const asr_elastic_out* o) {
#define ELASTIC_OUT_VALUE_(name, unit, doc) o->name,
    const double v[ASR_NELASTIC_REAL] = {ASR_ELASTIC_OUTPUTS(ELASTIC_OUT_VALUE_)};
#undef ELASTIC_OUT_VALUE_
    return num_all_finite(v, ASR_NELASTIC_REAL);
}

#endif
