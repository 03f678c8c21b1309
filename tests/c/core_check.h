/* core_check.h - helpers of the C tests of asr's public API (test_core_*.c): series, statuses,
 * models by name, finiteness of outputs and batch states. */
#ifndef ASR_TEST_CORE_CHECK_H
#define ASR_TEST_CORE_CHECK_H

#include <math.h>

#include "asr.h"
#include "check.h"
#include "tbatch.h"

/* An asr_series: instance i's values at step t start at data + i * stride_i + t * stride_t. */
static inline asr_series S(const double* data, long long stride_i, long long stride_t) {
    asr_series s = {data, stride_i, stride_t};
    return s;
}

static inline int valid_status(int st) { return st >= ASR_OK && st <= ASR_ERR_DIVERGED; }

static inline const asr_model_def* model(const char* name) {
    return asr_model_get(asr_model_find(name));
}

static inline int elastic_out_finite(const asr_elastic_out* o) {
    const double v[12] = {o->tau1,   o->tau2,   o->stiffness, o->damping, o->load1, o->load2,
                          o->kload1, o->kload2, o->cload1,    o->cload2,  o->defl1, o->defl2};
    for (int k = 0; k < 12; ++k) {
        if (!isfinite(v[k])) return 0;
    }
    return 1;
}

static inline int tb_running_finite(const tbatch* t) {
    for (int i = 0; i < t->n; ++i) {
        if (t->code[i] != ASR_OK) continue;
        for (int j = 0; j < t->nj; ++j) {
            for (int k = 0; k < ASR_NFIELD; ++k) {
                if (!isfinite(*field(t, i, j, k))) return 0;
            }
        }
    }
    return 1;
}

#endif
