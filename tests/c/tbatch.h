/* tbatch.h - a batch with its caller-owned memory, for the C tests. */
#ifndef ASR_TEST_TBATCH_H
#define ASR_TEST_TBATCH_H

#include <stdlib.h>
#include <string.h>

#include "asr.h"

typedef struct tbatch {
    asr_batch* b;
    int n, nj;
    double* state;   /* n x nj x ASR_NFIELD */
    int* code;       /* n */
    int* joint;      /* n */
    long long* step; /* n */
} tbatch;

static inline asr_status tb_create(tbatch* t, int n, int nj, const asr_model_def* const* defs,
                                   const int* modes) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->nj = nj;
    t->state = (double*)calloc((size_t)n * (size_t)nj * ASR_NFIELD, sizeof(double));
    t->code = (int*)calloc((size_t)n, sizeof(int));
    t->joint = (int*)calloc((size_t)n, sizeof(int));
    t->step = (long long*)calloc((size_t)n, sizeof(long long));
    if (!t->state || !t->code || !t->joint || !t->step) return ASR_ERR_NOMEM;
    asr_status_arrays s = {t->code, t->joint, t->step};
    return asr_batch_create(&t->b, n, nj, defs, modes, t->state, s);
}

static inline void tb_free(tbatch* t) {
    asr_batch_destroy(t->b);
    free(t->state);
    free(t->code);
    free(t->joint);
    free(t->step);
    memset(t, 0, sizeof *t);
}

/* Field k of instance i, joint j. */
static inline double* field(const tbatch* t, int i, int j, int k) {
    return &t->state[((size_t)i * (size_t)t->nj + (size_t)j) * ASR_NFIELD + (size_t)k];
}

#endif
