/* batch.h - the batch object (private). Constant parameters apart from mutable state: the state
 * block and the status arrays are caller-owned; parameters are owned here. */
#ifndef ASR_BATCH_H
#define ASR_BATCH_H

#include "internal.h"

#define ASR_MAX_PARAM 64           /* common + model parameters of one joint */

typedef struct joint_params {
    int nparam;                    /* ASR_NCOMMON + model->nparam */
    double* values[ASR_MAX_PARAM]; /* parameter k: count[k] values (1: shared, n_inst: each) */
    int count[ASR_MAX_PARAM];
    int nvarying;                  /* parameters given per instance ... */
    int varying[ASR_MAX_PARAM];    /* ... and their indices, so the step gathers only those */
} joint_params;

struct asr_batch {
    int n_inst, n_joint;
    const asr_model_def** model;   /* n_joint */
    int* mode;                     /* n_joint */
    joint_params* params;      /* n_joint */
    double* state;                 /* n_inst x n_joint x ASR_NFIELD, caller-owned */
    asr_status_arrays status;      /* n_inst each, caller-owned */
    double max_substep;            /* s */
    int motor_scheme;              /* asr_motor_scheme */
    int n_threads;
    long long step_count;
};

/* Inputs of one step for the whole batch (pointers into caller arrays, NULL: zero): instance i's
 * values start at pointer + i * its stride (doubles), one per joint (two for refs). */
typedef struct step_inputs {
    double dt;
    const double* q;
    const double* qd;
    const double* refs;
    const double* tau_ext;         /* or NULL */
    const double* tau_ff;          /* or NULL */
    long long stride_q, stride_qd, stride_refs, stride_ext, stride_ff;
} step_inputs;

/* Values of a series for instance i at step t, or NULL. */
static inline const double* series_at(asr_series s, int i, int t) {
    return s.data ? s.data + i * s.stride_i + t * s.stride_t : NULL;
}

/* Step instances [i0, i1) (joint.c). Returns the first status newly raised, or ASR_OK. */
asr_status step_instances(asr_batch* b, int i0, int i1, const step_inputs* in,
                          long long step_index);

/* Parameter k of instance i. */
static inline double param_at(const joint_params* jp, int k, int i) {
    return jp->values[k][jp->count[k] > 1 ? i : 0];
}

/* All parameters of instance i into p[jp->nparam]. */
static inline void gather_params(const joint_params* jp, int i, double* p) {
    for (int k = 0; k < jp->nparam; ++k) p[k] = param_at(jp, k, i);
}

/* The state record (ASR_NFIELD doubles) of joint x = i*n_joint + j. */
static inline double* joint_state(const asr_batch* b, size_t x) {
    return b->state + x * (size_t)ASR_NFIELD;
}

#endif
