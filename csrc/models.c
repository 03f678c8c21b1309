/* models.c - the table of built-in compliance models and their pure-function evaluation. */
#include <stddef.h>
#include <string.h>

#include "internal.h"

static const asr_model_def* const builtin[] = {
    &asr_model_rigid, &asr_model_sea, &asr_model_sea_damped, &asr_model_awas2,
    &asr_model_bavs, &asr_model_qbmove_advanced, &asr_model_qbmove,
};

#define NBUILTIN ((int)(sizeof(builtin) / sizeof(builtin[0])))

int asr_model_count(void) { return NBUILTIN; }

const asr_model_def* asr_model_get(int index) {
    return (index >= 0 && index < NBUILTIN) ? builtin[index] : NULL;
}

int asr_model_find(const char* name) {
    if (!name) return -1;
    for (int m = 0; m < NBUILTIN; ++m) {
        if (strcmp(builtin[m]->name, name) == 0) return m;
    }
    return -1;
}

/* A callback's non-zero return becomes ASR_ERR_RANGE if it said so, else ASR_ERR_CALLBACK. */
static asr_status callback_status(int rc) {
    if (rc == 0) return ASR_OK;
    return rc == ASR_ERR_RANGE ? ASR_ERR_RANGE : ASR_ERR_CALLBACK;
}

asr_status asr_compliance_eval(const asr_model_def* model, int n, const double* params,
                               int pstride, const asr_elastic_in* in, asr_elastic_out* out) {
    if (!model || !model->elastic || !in || !out || (model->nparam > 0 && !params)) {
        return ASR_ERR_NULL;
    }
    if (n < 0 || pstride < 0) return ASR_ERR_RANGE;
    for (int m = 0; m < n; ++m) {
        const double* p = params ? params + (size_t)m * (size_t)pstride : NULL;
        asr_status st = callback_status(model->elastic(model->user, p, &in[m], &out[m]));
        if (st != ASR_OK) return st;
    }
    return ASR_OK;
}

asr_status asr_reference_map_eval(const asr_model_def* model, int n, const double* params,
                                  int pstride, const double* eq, const double* preset,
                                  double* th1, double* th2) {
    if (!model || !model->refmap || !eq || !preset || !th1 || !th2 ||
        (model->nparam > 0 && !params)) {
        return ASR_ERR_NULL;
    }
    if (n < 0 || pstride < 0) return ASR_ERR_RANGE;
    for (int m = 0; m < n; ++m) {
        const double* p = params ? params + (size_t)m * (size_t)pstride : NULL;
        asr_status st =
            callback_status(model->refmap(model->user, p, eq[m], preset[m], &th1[m], &th2[m]));
        if (st != ASR_OK) return st;
    }
    return ASR_OK;
}
