/* fake_engine.h - the C tests of the rigid-body engine coupling (test_engine_*.c): bit-exact
 * array checks and a tiny fake engine in MuJoCo's place, no real engine.
 *
 * The fake engine: a "model" (inertia I, damping c, gravity torque coefficient g, time step h)
 * and a "data" (qpos, qvel, qfrc_applied, step counters) per instance; step1 computes nothing
 * (it only counts and notes its thread), step2 integrates every dof with semi-implicit Euler of
 * I qdd = qfrc_applied - c qd - g cos(q). The data has 4 qpos and 3 dofs, dof d at qpos
 * DOF_QPOS[d] (qpos[2] belongs to no dof, like a quaternion component); the actuated joints are
 * dof 2 (qpos 3) and dof 0 (qpos 0), dof 1 is passive with a constant applied force that the
 * coupling must leave alone. */
#ifndef ASR_TEST_FAKE_ENGINE_H
#define ASR_TEST_FAKE_ENGINE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr.h"
#include "check.h"

/* Bit-identical, or both NaN (a frozen instance's engine data may run into NaN). */
static inline int same(double a, double b) {
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* got[k] vs want[k] for k < n: bit-identical (tol 0) or within tol. One check per element; the
 * first mismatch of a call is described. */
static inline void check_arrays(const char* what, const double* got, const double* want, size_t n,
                                double tol, const char* file, int line) {
    size_t bad = 0;
    for (size_t k = 0; k < n; ++k) {
        int ok = same(got[k], want[k]) || (tol > 0.0 && fabs(got[k] - want[k]) <= tol);
        if (ok) {
            ++n_pass;
            continue;
        }
        ++n_fail;
        if (bad++ == 0) {
            fprintf(stderr, "%s:%d: FAILED: %s: element %zu: got %.17g, want %.17g\n", file, line,
                    what, k, got[k], want[k]);
        }
    }
    if (bad > 1) fprintf(stderr, "%s:%d: ... %zu mismatches in %s\n", file, line, bad, what);
}

#define CHECK_ARRAYS(what, got, want, n, tol)                                                      \
    check_arrays((what), (got), (want), (size_t)(n), (tol), __FILE__, __LINE__)

static inline void* xcalloc(size_t n, size_t size) {
    void* p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* ---------------------------------------------------------------- the fake engine */

enum {
    NQ = 4,
    NV = 3,
    MAXJ = 2,
    MAXN = 16
};

static const int DOF_QPOS[NV] = {0, 1, 3}; /* qpos index of each dof; qpos[2] is no dof's */
static const int QPOS_ADR[MAXJ] = {3, 0};  /* joint 0: qpos 3 (dof 2); joint 1: qpos 0 (dof 0) */
static const int DOF_ADR[MAXJ] = {2, 0};
static const double PASSIVE_FRC[NV] = {0.125, 0.25, -0.375}; /* initial qfrc_applied */
static const double SPARE_QPOS = 0.7;                        /* qpos[2]: never touched */
#define PASSIVE_DOF 1

typedef struct fake_model {
    double I, c, g, h; /* inertia, damping, gravity torque coefficient, time step */
    int nv;
    const int* dof_qpos; /* nv */
} fake_model;

typedef struct fake_data {
    double* qpos;         /* NQ, allocated alone so that ASan sees any access past it */
    double* qvel;         /* NV */
    double* qfrc_applied; /* NV */
    long n1, n2;          /* step1 / step2 calls */
    long order_errors;    /* step1 and step2 not alternating */
    uintptr_t tag_first;  /* thread of the first step1 */
    long tag_changes;     /* step1 calls on another thread than the first */
} fake_data;

static const fake_model MODELS[2] = {
    {0.05, 0.02, 0.3, 1e-3, NV, DOF_QPOS},
    {0.08, 0.01, -0.2, 1e-3, NV, DOF_QPOS},
};
#define DT 1e-3

static _Thread_local char thread_tag;

static inline void fake_step1(const void* model, void* data) {
    (void)model;
    fake_data* d = (fake_data*)data;
    if (d->n1 != d->n2) ++d->order_errors;
    ++d->n1;
    uintptr_t tag = (uintptr_t)&thread_tag;
    if (d->tag_first == 0) {
        d->tag_first = tag;
    } else if (d->tag_first != tag) {
        ++d->tag_changes;
    }
}

static inline void fake_step2(const void* model, void* data) {
    const fake_model* m = (const fake_model*)model;
    fake_data* d = (fake_data*)data;
    if (d->n1 != d->n2 + 1) ++d->order_errors;
    for (int v = 0; v < m->nv; ++v) {
        double* q = &d->qpos[m->dof_qpos[v]];
        double qdd = (d->qfrc_applied[v] - m->c * d->qvel[v] - m->g * cos(*q)) / m->I;
        d->qvel[v] += m->h * qdd;
        *q += m->h * d->qvel[v];
    }
    ++d->n2;
}

/* Initial engine state of (original) instance o. */
static inline void initial_state(int o, double qpos[NQ], double qvel[NV], double qfrc[NV]) {
    qpos[0] = 0.1 + 0.05 * o;
    qpos[1] = -0.2 + 0.01 * o;
    qpos[2] = SPARE_QPOS;
    qpos[3] = -0.3 + 0.02 * o;
    qvel[0] = 0.1 - 0.01 * o;
    qvel[1] = 0.5;
    qvel[2] = -0.2 + 0.03 * o;
    for (int v = 0; v < NV; ++v) qfrc[v] = PASSIVE_FRC[v];
}

/* n engine instances; instance i is a copy of "original" instance orig[i] (its model and initial
 * state), so that a run without some instance can be compared with the full one. */
typedef struct rig {
    int n, nj;
    int orig[MAXN];
    fake_data data[MAXN];
    const void* model_p[MAXN];
    void* data_p[MAXN];
    double* qpos_p[MAXN];
    double* qvel_p[MAXN];
    double* qfrc_p[MAXN];
    asr_engine e;
} rig;

static inline void rig_init(rig* r, int n, int nj, const int* orig) {
    memset(r, 0, sizeof *r);
    r->n = n;
    r->nj = nj;
    for (int i = 0; i < n; ++i) {
        int o = orig ? orig[i] : i;
        fake_data* d = &r->data[i];
        r->orig[i] = o;
        d->qpos = (double*)xcalloc(NQ, sizeof(double));
        d->qvel = (double*)xcalloc(NV, sizeof(double));
        d->qfrc_applied = (double*)xcalloc(NV, sizeof(double));
        initial_state(o, d->qpos, d->qvel, d->qfrc_applied);
        r->model_p[i] = &MODELS[o % 2];
        r->data_p[i] = d;
        r->qpos_p[i] = d->qpos;
        r->qvel_p[i] = d->qvel;
        r->qfrc_p[i] = d->qfrc_applied;
    }
    asr_engine e = {fake_step1, fake_step2, r->model_p, r->data_p, r->qpos_p,
                    r->qvel_p,  r->qfrc_p,  QPOS_ADR,   DOF_ADR};
    r->e = e;
}

static inline void rig_free(rig* r) {
    for (int i = 0; i < r->n; ++i) {
        free(r->data[i].qpos);
        free(r->data[i].qvel);
        free(r->data[i].qfrc_applied);
    }
    memset(r, 0, sizeof *r);
}

/* Link angles of the actuated joints, (n x nj), for asr_batch_reset. */
static inline void rig_q0(const rig* r, double* q0) {
    for (int i = 0; i < r->n; ++i) {
        for (int j = 0; j < r->nj; ++j) q0[i * r->nj + j] = r->data[i].qpos[QPOS_ADR[j]];
    }
}

/* Engine data of instance ia of a and ib of b bit-identical. */
static inline int rig_same_instance(const rig* a, int ia, const rig* b, int ib) {
    const fake_data *x = &a->data[ia], *y = &b->data[ib];
    return memcmp(x->qpos, y->qpos, NQ * sizeof(double)) == 0 &&
           memcmp(x->qvel, y->qvel, NV * sizeof(double)) == 0 &&
           memcmp(x->qfrc_applied, y->qfrc_applied, NV * sizeof(double)) == 0;
}

/* ---------------------------------------------------------------- batches */

#include "tbatch.h"

static inline const asr_model_def* model_named(const char* name) {
    return asr_model_get(asr_model_find(name));
}

/* Parameter index (for asr_batch_set_param) of a model's own parameter, by name. */
static inline int own_param(const asr_model_def* m, const char* name) {
    for (int k = 0; k < m->nparam; ++k) {
        if (strcmp(m->params[k].name, name) == 0) return ASR_NCOMMON + k;
    }
    return -1;
}

/* The documented reading of a series: value k of instance i at step t, 0 for NULL data. */
static inline double series_val(asr_series s, int i, int t, int k) {
    return s.data ? s.data[(long long)i * s.stride_i + (long long)t * s.stride_t + k] : 0.0;
}

/* The documented record layout. */
static inline size_t rec_at(int r, int i, int t, int j, int n, int nstep, int nj) {
    return (((size_t)r * (size_t)n + (size_t)i) * (size_t)nstep + (size_t)t) * (size_t)nj +
           (size_t)j;
}

#endif
