/* test_engine.c - a plain C test of the rigid-body engine coupling asr_batch_rollout_engine, no
 * framework and no real engine.
 *
 * A tiny fake engine stands in for MuJoCo: a "model" (inertia I, damping c, gravity torque
 * coefficient g, time step h) and a "data" (qpos, qvel, qfrc_applied, step counters) per
 * instance; step1 computes nothing (it only counts and notes its thread), step2 integrates every
 * dof with semi-implicit Euler of I qdd = qfrc_applied - c qd - g cos(q). The data has 4 qpos and
 * 3 dofs, dof d at qpos DOF_QPOS[d] (qpos[2] belongs to no dof, like a quaternion component);
 * the actuated joints are dof 2 (qpos 3) and dof 0 (qpos 0), dof 1 is passive with a constant
 * applied force that the coupling must leave alone.
 *
 * Checked: sea joints in mode 3 against an independent hand-written loop (bit-identical state,
 * engine data and records, including frozen instances); the documented record layout and
 * asr_series strides (per instance, per step, held, NULL); held external torques shifting the
 * result by a hand-computable amount; modes 5/6 and two-motor joints against the same loop built
 * on asr_batch_step; thread counts 1, 2, 3 and 8 bit-identical; every NULL and range error with
 * nothing stepped; non-finite inputs and a diverging instance frozen with the right code, joint
 * and step, then applying zero torque, while the other instances are unaffected.
 * Prints "N passed, M failed" and returns non-zero on failure.
 *
 * Build (see tests/test_c_core.py): gcc -std=c11 -Wall -Wextra -Wpedantic -Wmissing-prototypes
 * -Werror -ffp-contract=off -Icsrc, csrc/ sources plus this file, -lm -lpthread. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr.h"

/* ---------------------------------------------------------------- checks */

#include "check.h"

/* Bit-identical, or both NaN (a frozen instance's engine data may run into NaN). */
static int same(double a, double b) {
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* got[k] vs want[k] for k < n: bit-identical (tol 0) or within tol. One check per element; the
 * first mismatch of a call is described. */
static void check_arrays(const char* what, const double* got, const double* want, size_t n,
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
            fprintf(stderr, "%s:%d: FAILED: %s: element %zu: got %.17g, want %.17g\n", file,
                    line, what, k, got[k], want[k]);
        }
    }
    if (bad > 1) fprintf(stderr, "%s:%d: ... %zu mismatches in %s\n", file, line, bad, what);
}

#define CHECK_ARRAYS(what, got, want, n, tol) \
    check_arrays((what), (got), (want), (size_t)(n), (tol), __FILE__, __LINE__)

static void* xcalloc(size_t n, size_t size) {
    void* p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* ---------------------------------------------------------------- the fake engine */

enum { NQ = 4, NV = 3, MAXJ = 2, MAXN = 16 };

static const int DOF_QPOS[NV] = {0, 1, 3};  /* qpos index of each dof; qpos[2] is no dof's */
static const int QPOS_ADR[MAXJ] = {3, 0};   /* joint 0: qpos 3 (dof 2); joint 1: qpos 0 (dof 0) */
static const int DOF_ADR[MAXJ] = {2, 0};
static const double PASSIVE_FRC[NV] = {0.125, 0.25, -0.375}; /* initial qfrc_applied */
static const double SPARE_QPOS = 0.7;       /* qpos[2]: never touched */
#define PASSIVE_DOF 1

typedef struct fake_model {
    double I, c, g, h;   /* inertia, damping, gravity torque coefficient, time step */
    int nv;
    const int* dof_qpos; /* nv */
} fake_model;

typedef struct fake_data {
    double* qpos;        /* NQ, allocated alone so that ASan sees any access past it */
    double* qvel;        /* NV */
    double* qfrc_applied; /* NV */
    long n1, n2;         /* step1 / step2 calls */
    long order_errors;   /* step1 and step2 not alternating */
    uintptr_t tag_first; /* thread of the first step1 */
    long tag_changes;    /* step1 calls on another thread than the first */
} fake_data;

static const fake_model MODELS[2] = {
    {0.05, 0.02, 0.3, 1e-3, NV, DOF_QPOS},
    {0.08, 0.01, -0.2, 1e-3, NV, DOF_QPOS},
};
#define DT 1e-3

static _Thread_local char thread_tag;

static void fake_step1(const void* model, void* data) {
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

static void fake_step2(const void* model, void* data) {
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
static void initial_state(int o, double qpos[NQ], double qvel[NV], double qfrc[NV]) {
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

static void rig_init(rig* r, int n, int nj, const int* orig) {
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
    asr_engine e = {fake_step1, fake_step2, r->model_p, r->data_p, r->qpos_p, r->qvel_p,
                    r->qfrc_p, QPOS_ADR, DOF_ADR};
    r->e = e;
}

static void rig_free(rig* r) {
    for (int i = 0; i < r->n; ++i) {
        free(r->data[i].qpos);
        free(r->data[i].qvel);
        free(r->data[i].qfrc_applied);
    }
    memset(r, 0, sizeof *r);
}

/* Link angles of the actuated joints, (n x nj), for asr_batch_reset. */
static void rig_q0(const rig* r, double* q0) {
    for (int i = 0; i < r->n; ++i) {
        for (int j = 0; j < r->nj; ++j) q0[i * r->nj + j] = r->data[i].qpos[QPOS_ADR[j]];
    }
}

/* Engine data of instance ia of a and ib of b bit-identical. */
static int rig_same_instance(const rig* a, int ia, const rig* b, int ib) {
    const fake_data *x = &a->data[ia], *y = &b->data[ib];
    return memcmp(x->qpos, y->qpos, NQ * sizeof(double)) == 0 &&
           memcmp(x->qvel, y->qvel, NV * sizeof(double)) == 0 &&
           memcmp(x->qfrc_applied, y->qfrc_applied, NV * sizeof(double)) == 0;
}

/* ---------------------------------------------------------------- batches */

#include "tbatch.h"

static const asr_model_def* model_named(const char* name) {
    return asr_model_get(asr_model_find(name));
}

/* Parameter index (for asr_batch_set_param) of a model's own parameter, by name. */
static int own_param(const asr_model_def* m, const char* name) {
    for (int k = 0; k < m->nparam; ++k) {
        if (strcmp(m->params[k].name, name) == 0) return ASR_NCOMMON + k;
    }
    return -1;
}

/* The documented reading of a series: value k of instance i at step t, 0 for NULL data. */
static double series_val(asr_series s, int i, int t, int k) {
    return s.data ? s.data[(long long)i * s.stride_i + (long long)t * s.stride_t + k] : 0.0;
}

/* The documented record layout. */
static size_t rec_at(int r, int i, int t, int j, int n, int nstep, int nj) {
    return (((size_t)r * (size_t)n + (size_t)i) * (size_t)nstep + (size_t)t) * (size_t)nj +
           (size_t)j;
}

/* ---------------------------------------------------------------- sea, mode 3, by hand */

/* Fields of a sea joint in mode 3 the hand loop reproduces. */
static const int SEA_FIELDS[] = {ASR_F_TAU_JOINT, ASR_F_TAU_LINK, ASR_F_STIFFNESS, ASR_F_TAU_EL1,
                                 ASR_F_DEFL1, ASR_F_TH1, ASR_F_Q, ASR_F_QD, ASR_F_REF1,
                                 ASR_F_REF2, ASR_F_TAU_EXT};
enum { NSEA_FIELDS = (int)(sizeof SEA_FIELDS / sizeof SEA_FIELDS[0]) };

/* The default link_vel_max, rad/s: a faster link is a divergence. */
#define LINK_VEL_MAX 1e4

/* A batch of sea joints in mode 3 coupled to the fake engine. */
typedef struct sea_case {
    int n, nj;
    int orig[MAXN];                    /* original instance of each instance */
    double k[MAXN][MAXJ], md[MAXN][MAXJ]; /* spring stiffness and deflection limit */
    double vmax;                       /* link_vel_max of every joint, rad/s */
    asr_series refs, ext, ff;
} sea_case;

static void sea_case_init(sea_case* c, int n, int nj, const int* orig) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->nj = nj;
    c->vmax = LINK_VEL_MAX;
    for (int i = 0; i < n; ++i) {
        int o = orig ? orig[i] : i;
        c->orig[i] = o;
        c->k[i][0] = 5.0 + o;
        c->md[i][0] = o == 1 ? 0.05 : 0.8; /* instance 1's joint 0 runs into its clamp */
        if (nj > 1) {
            c->k[i][1] = 12.0 - 0.5 * o;
            c->md[i][1] = 0.8;
        }
    }
}

static void sea_batch(tbatch* t, const sea_case* c, const rig* r, int threads) {
    const asr_model_def* sea = model_named("sea");
    const asr_model_def* defs[MAXJ] = {sea, sea};
    int modes[MAXJ] = {ASR_MODE_EQ_PRESET, ASR_MODE_EQ_PRESET};
    CHECK_ST(tb_create(t, c->n, c->nj, defs, modes), ASR_OK);
    if (!t->b) exit(2);
    int pk = own_param(sea, "k"), pmd = own_param(sea, "max_def");
    CHECK(pk >= ASR_NCOMMON && pmd >= ASR_NCOMMON);
    for (int j = 0; j < c->nj; ++j) {
        double k[MAXN], md[MAXN];
        for (int i = 0; i < c->n; ++i) {
            k[i] = c->k[i][j];
            md[i] = c->md[i][j];
        }
        CHECK_ST(asr_batch_set_param(t->b, j, pk, k, c->n, NULL), ASR_OK);
        CHECK_ST(asr_batch_set_param(t->b, j, pmd, md, c->n, NULL), ASR_OK);
        CHECK_ST(asr_batch_set_param(t->b, j, ASR_P_LINK_VEL_MAX, &c->vmax, 1, NULL), ASR_OK);
    }
    CHECK_ST(asr_batch_set_threads(t->b, threads), ASR_OK);
    double q0[MAXN * MAXJ];
    rig_q0(r, q0);
    CHECK_ST(asr_batch_reset(t->b, q0, NULL), ASR_OK);
}

/* The hand-written coupled loop: its own copy of the engine state, the sea joints' fields and
 * the status arrays. */
typedef struct hand {
    int n, nj;
    double qpos[MAXN][NQ], qvel[MAXN][NV], qfrc[MAXN][NV];
    double s[MAXN][MAXJ][ASR_NFIELD];
    int code[MAXN], joint[MAXN];
    long long step[MAXN];
    long long step_count;
} hand;

static void hand_init(hand* h, const sea_case* c) {
    memset(h, 0, sizeof *h);
    h->n = c->n;
    h->nj = c->nj;
    for (int i = 0; i < c->n; ++i) {
        initial_state(c->orig[i], h->qpos[i], h->qvel[i], h->qfrc[i]);
        h->code[i] = ASR_OK;
        h->joint[i] = -1;
        h->step[i] = -1;
        for (int j = 0; j < c->nj; ++j) { /* reset with q0, no references: motor at q0 */
            h->s[i][j][ASR_F_Q] = h->qpos[i][QPOS_ADR[j]];
            h->s[i][j][ASR_F_TH1] = h->qpos[i][QPOS_ADR[j]];
        }
    }
}

static double sat(double x, double m) {
    double y = x < -m ? -m : x;
    return y > m ? m : y;
}

/* nstep coupled steps by hand; expected records (layout as documented) into rec. */
static void hand_run(hand* h, const sea_case* c, int nstep, int nrec, const int* rf,
                     double* rec) {
    for (int i = 0; i < c->n; ++i) {
        const fake_model* m = &MODELS[c->orig[i] % 2];
        for (int t = 0; t < nstep; ++t) {
            for (int j = 0; j < c->nj && h->code[i] == ASR_OK; ++j) {
                double* s = h->s[i][j];
                double q = h->qpos[i][QPOS_ADR[j]], qd = h->qvel[i][DOF_ADR[j]];
                double r1 = series_val(c->refs, i, t, 2 * j);
                double r2 = series_val(c->refs, i, t, 2 * j + 1);
                double ext = series_val(c->ext, i, t, j), ff = series_val(c->ff, i, t, j);
                if (!(isfinite(q) && isfinite(qd) && isfinite(r1) && isfinite(r2) &&
                      isfinite(ext) && isfinite(ff))) {
                    h->code[i] = ASR_ERR_INPUT; /* nothing of this joint is stored */
                    h->joint[i] = j;
                    h->step[i] = h->step_count + t;
                    break;
                }
                s[ASR_F_Q] = q;
                s[ASR_F_QD] = qd;
                s[ASR_F_REF1] = r1;
                s[ASR_F_REF2] = r2;
                s[ASR_F_TAU_EXT] = ext;
                if (!(fabs(qd) <= c->vmax)) { /* a runaway link: nothing else stored */
                    h->code[i] = ASR_ERR_DIVERGED;
                    h->joint[i] = j;
                    h->step[i] = h->step_count + t;
                    break;
                }
                /* mode 3: the motor is an ideal position source at the equilibrium reference;
                 * the spring torque -k (q - th) with the deflection clamped at max_def */
                double phi = sat(q - r1, c->md[i][j]);
                double tau_el = -c->k[i][j] * phi;
                double tau_link = (tau_el + 0.0) - 0.0; /* + spring 2 (none) - shaft friction */
                s[ASR_F_TH1] = r1;
                s[ASR_F_STIFFNESS] = c->k[i][j];
                s[ASR_F_TAU_EL1] = tau_el;
                s[ASR_F_DEFL1] = phi;
                s[ASR_F_TAU_LINK] = tau_link;
                s[ASR_F_TAU_JOINT] = tau_link + ext;
                if (!isfinite(tau_link) || !isfinite(tau_link + ext) || !isfinite(phi)) {
                    h->code[i] = ASR_ERR_NONFINITE;
                    h->joint[i] = j;
                    h->step[i] = h->step_count + t;
                }
            }
            if (h->code[i] != ASR_OK) { /* frozen: zero torque from now on */
                for (int j = 0; j < c->nj; ++j) {
                    h->s[i][j][ASR_F_TAU_JOINT] = 0.0;
                    h->s[i][j][ASR_F_TAU_LINK] = 0.0;
                }
            }
            for (int j = 0; j < c->nj; ++j) h->qfrc[i][DOF_ADR[j]] = h->s[i][j][ASR_F_TAU_JOINT];
            for (int v = 0; v < NV; ++v) { /* I qdd = f - c qd - g cos(q), semi-implicit Euler */
                double* q = &h->qpos[i][DOF_QPOS[v]];
                double qdd = (h->qfrc[i][v] - m->c * h->qvel[i][v] - m->g * cos(*q)) / m->I;
                h->qvel[i][v] += m->h * qdd;
                *q += m->h * h->qvel[i][v];
            }
            for (int r = 0; r < nrec; ++r) { /* q, qd: the engine's after the step */
                for (int j = 0; j < c->nj; ++j) {
                    double v = rf[r] == ASR_F_Q    ? h->qpos[i][QPOS_ADR[j]]
                               : rf[r] == ASR_F_QD ? h->qvel[i][DOF_ADR[j]]
                                                   : h->s[i][j][rf[r]];
                    rec[rec_at(r, i, t, j, c->n, nstep, c->nj)] = v;
                }
            }
        }
    }
    h->step_count += nstep;
}

/* The coupled run against the hand loop: engine data, state fields, statuses. */
static void check_against_hand(const char* name, const rig* r, const tbatch* t, const hand* h) {
    char what[160];
    for (int i = 0; i < r->n; ++i) {
        const fake_data* d = &r->data[i];
        snprintf(what, sizeof what, "%s: qpos of instance %d", name, i);
        CHECK_ARRAYS(what, d->qpos, h->qpos[i], NQ, 0.0);
        snprintf(what, sizeof what, "%s: qvel of instance %d", name, i);
        CHECK_ARRAYS(what, d->qvel, h->qvel[i], NV, 0.0);
        snprintf(what, sizeof what, "%s: qfrc_applied of instance %d", name, i);
        CHECK_ARRAYS(what, d->qfrc_applied, h->qfrc[i], NV, 0.0);
        CHECK(d->qpos[2] == SPARE_QPOS);                           /* no dof's qpos: untouched */
        CHECK(d->qfrc_applied[PASSIVE_DOF] == PASSIVE_FRC[PASSIVE_DOF]); /* not actuated */
        if (r->nj == 1) CHECK(d->qfrc_applied[0] == PASSIVE_FRC[0]);
        for (int j = 0; j < r->nj; ++j) {
            for (int f = 0; f < NSEA_FIELDS; ++f) {
                int k = SEA_FIELDS[f];
                snprintf(what, sizeof what, "%s: field %s of instance %d joint %d", name,
                         asr_state_field_name(k), i, j);
                CHECK_ARRAYS(what, field(t, i, j, k), &h->s[i][j][k], 1, 0.0);
            }
            /* the torque in the applied forces is the state's joint torque */
            if (h->step_count > 0) CHECK(same(d->qfrc_applied[DOF_ADR[j]], *field(t, i, j, ASR_F_TAU_JOINT)));
        }
        CHECK(t->code[i] == h->code[i]);
        CHECK(t->joint[i] == h->joint[i]);
        CHECK(t->step[i] == h->step[i]);
        CHECK(d->order_errors == 0);
        CHECK(d->n1 == h->step_count && d->n2 == h->step_count);
    }
    CHECK(asr_batch_step_count(t->b) == h->step_count);
}

static const int SEA_REC[] = {ASR_F_TAU_JOINT, ASR_F_Q, ASR_F_REF1, ASR_F_REF2, ASR_F_TH1,
                              ASR_F_TAU_EXT, ASR_F_DEFL1, ASR_F_TAU_LINK, ASR_F_QD};
enum { NSEA_REC = (int)(sizeof SEA_REC / sizeof SEA_REC[0]) };

/* Run case c for nstep steps with `threads` threads, coupled and by hand, and compare. Returns
 * the coupled rollout's status; the records are left in rec_out (if not NULL). */
static asr_status run_sea_case(const char* name, const sea_case* c, int nstep, int threads,
                               double* rec_out) {
    rig r;
    tbatch t;
    hand h;
    rig_init(&r, c->n, c->nj, c->orig);
    sea_batch(&t, c, &r, threads);
    hand_init(&h, c);
    size_t nrec_total = (size_t)NSEA_REC * (size_t)c->n * (size_t)nstep * (size_t)c->nj;
    double* rec = (double*)xcalloc(nrec_total, sizeof(double));
    double* want = (double*)xcalloc(nrec_total, sizeof(double));
    for (size_t k = 0; k < nrec_total; ++k) rec[k] = -999.0;
    asr_status st = asr_batch_rollout_engine(t.b, &r.e, nstep, DT, c->refs, c->ext, c->ff,
                                             NSEA_REC, SEA_REC, rec);
    hand_run(&h, c, nstep, NSEA_REC, SEA_REC, want);
    check_against_hand(name, &r, &t, &h);
    char what[160];
    snprintf(what, sizeof what, "%s: record", name);
    CHECK_ARRAYS(what, rec, want, nrec_total, 0.0);
    /* the last record is the state at the end */
    for (int i = 0; i < c->n && nstep > 0; ++i) {
        for (int j = 0; j < c->nj; ++j) {
            CHECK(same(rec[rec_at(0, i, nstep - 1, j, c->n, nstep, c->nj)],
                       *field(&t, i, j, ASR_F_TAU_JOINT)));
        }
    }
    if (rec_out) memcpy(rec_out, rec, nrec_total * sizeof(double));
    free(rec);
    free(want);
    tb_free(&t);
    rig_free(&r);
    return st;
}

/* ---------------------------------------------------------------- series and strides */

static void test_sea_per_instance_per_step(void) {
    enum { N = 4, NJ = 2, NSTEP = 40 };
    sea_case c;
    sea_case_init(&c, N, NJ, NULL);
    /* refs per instance and step, tau_ext per instance held, tau_ff per step for all */
    double* refs = (double*)xcalloc((size_t)N * NSTEP * NJ * 2, sizeof(double));
    double* ext = (double*)xcalloc((size_t)N * NJ, sizeof(double));
    double* ff = (double*)xcalloc((size_t)NSTEP * NJ, sizeof(double));
    for (int i = 0; i < N; ++i) {
        for (int t = 0; t < NSTEP; ++t) {
            for (int j = 0; j < NJ; ++j) {
                double* r = refs + ((size_t)i * NSTEP + (size_t)t) * NJ * 2 + 2 * j;
                r[0] = (j ? -0.2 : 0.15) + 0.004 * t * (j ? -1.0 : 1.0) + 0.03 * i;
                r[1] = 0.5 + j + 0.01 * t + 0.001 * i; /* preset: unused by the sea */
                ff[t * NJ + j] = 0.01 * t - 0.2 * j;
            }
        }
        for (int j = 0; j < NJ; ++j) ext[i * NJ + j] = 0.03 * (i + 1) * (j ? -1.0 : 1.0);
    }
    c.refs = (asr_series){refs, NSTEP * NJ * 2, NJ * 2};
    c.ext = (asr_series){ext, NJ, 0};
    c.ff = (asr_series){ff, 0, NJ};
    size_t nrec = (size_t)NSEA_REC * N * NSTEP * NJ;
    double* rec1 = (double*)xcalloc(nrec, sizeof(double));
    double* rec2 = (double*)xcalloc(nrec, sizeof(double));
    CHECK_ST(run_sea_case("sea per instance and step", &c, NSTEP, 1, rec1), ASR_OK);
    CHECK_ST(run_sea_case("sea per instance and step, 2 threads", &c, NSTEP, 2, rec2), ASR_OK);
    CHECK(memcmp(rec1, rec2, nrec * sizeof(double)) == 0);
    /* the record reads as documented: field r, instance i, step t, joint j */
    int clamped = 0, moved = 0;
    for (int i = 0; i < N; ++i) {
        for (int t = 0; t < NSTEP; ++t) {
            for (int j = 0; j < NJ; ++j) {
                const double* r = refs + ((size_t)i * NSTEP + (size_t)t) * NJ * 2 + 2 * j;
                CHECK(rec1[rec_at(2, i, t, j, N, NSTEP, NJ)] == r[0]); /* REF1 */
                CHECK(rec1[rec_at(3, i, t, j, N, NSTEP, NJ)] == r[1]); /* REF2 */
                CHECK(rec1[rec_at(4, i, t, j, N, NSTEP, NJ)] == r[0]); /* TH1 = eq */
                CHECK(rec1[rec_at(5, i, t, j, N, NSTEP, NJ)] == ext[i * NJ + j]);
                double defl = rec1[rec_at(6, i, t, j, N, NSTEP, NJ)];
                clamped += fabs(defl) == 0.05;
                moved += fabs(rec1[rec_at(0, i, t, j, N, NSTEP, NJ)]) > 0.05;
            }
        }
    }
    CHECK(clamped > 0); /* instance 1's clamp was reached */
    CHECK(moved > N * NSTEP);
    free(rec1);
    free(rec2);
    free(refs);
    free(ext);
    free(ff);
}

static void test_sea_shared_ramp_one_joint(void) {
    enum { N = 3, NJ = 1, NSTEP = 25 };
    sea_case c;
    sea_case_init(&c, N, NJ, NULL);
    /* a reference ramp per step shared by every instance; tau_ext per instance and step */
    double* refs = (double*)xcalloc((size_t)NSTEP * NJ * 2, sizeof(double));
    double* ext = (double*)xcalloc((size_t)N * NSTEP * NJ, sizeof(double));
    for (int t = 0; t < NSTEP; ++t) {
        refs[2 * t] = -0.2 + 0.01 * t;
        refs[2 * t + 1] = 0.0;
        for (int i = 0; i < N; ++i) ext[i * NSTEP + t] = 0.02 * sin(0.3 * t + i);
    }
    c.refs = (asr_series){refs, 0, 2};
    c.ext = (asr_series){ext, NSTEP, 1};
    size_t nrec = (size_t)NSEA_REC * N * NSTEP * NJ;
    double* rec = (double*)xcalloc(nrec, sizeof(double));
    CHECK_ST(run_sea_case("sea ramp, one joint", &c, NSTEP, 1, rec), ASR_OK);
    for (int i = 0; i < N; ++i) {
        for (int t = 0; t < NSTEP; ++t) {
            CHECK(rec[rec_at(2, i, t, 0, N, NSTEP, NJ)] == -0.2 + 0.01 * t);
            CHECK(rec[rec_at(4, i, t, 0, N, NSTEP, NJ)] == -0.2 + 0.01 * t);
            CHECK(rec[rec_at(5, i, t, 0, N, NSTEP, NJ)] == ext[i * NSTEP + t]);
        }
    }
    free(rec);
    free(refs);
    free(ext);
}

static void test_sea_held_inputs(void) {
    enum { N = 3, NJ = 2, NSTEP = 20 };
    /* everything held: refs and tau_ext of exactly one instance and step (stride 0, 0) */
    double* refs = (double*)xcalloc(NJ * 2, sizeof(double));
    double* ext = (double*)xcalloc(NJ, sizeof(double));
    double* ff = (double*)xcalloc(NJ, sizeof(double));
    const double E[NJ] = {0.4, -0.7};
    refs[0] = -0.25;
    refs[1] = 0.1;
    refs[2] = 0.3;
    refs[3] = -0.1;
    ext[0] = E[0];
    ext[1] = E[1];
    ff[0] = 1.5;
    ff[1] = -2.5;
    sea_case c;
    sea_case_init(&c, N, NJ, NULL);
    c.refs = (asr_series){refs, 0, 0};
    c.ext = (asr_series){ext, 0, 0};
    c.ff = (asr_series){ff, 0, 0};
    size_t nrec = (size_t)NSEA_REC * N * NSTEP * NJ;
    double* with = (double*)xcalloc(nrec, sizeof(double));
    double* without = (double*)xcalloc(nrec, sizeof(double));
    CHECK_ST(run_sea_case("sea held", &c, NSTEP, 1, with), ASR_OK);
    c.ext = (asr_series){NULL, 0, 0}; /* NULL data: zero */
    c.ff = (asr_series){NULL, 5, 7};  /* strides of a NULL series are never used */
    CHECK_ST(run_sea_case("sea held, no tau_ext", &c, NSTEP, 1, without), ASR_OK);
    /* the held tau_ext is applied on top of the actuator torque at every step */
    for (int i = 0; i < N; ++i) {
        for (int t = 0; t < NSTEP; ++t) {
            for (int j = 0; j < NJ; ++j) {
                double joint = with[rec_at(0, i, t, j, N, NSTEP, NJ)];
                double link = with[rec_at(7, i, t, j, N, NSTEP, NJ)];
                CHECK(same(joint, link + E[j]));
                CHECK(with[rec_at(5, i, t, j, N, NSTEP, NJ)] == E[j]);
                CHECK(without[rec_at(5, i, t, j, N, NSTEP, NJ)] == 0.0);
                CHECK(same(without[rec_at(0, i, t, j, N, NSTEP, NJ)],
                           without[rec_at(7, i, t, j, N, NSTEP, NJ)]));
            }
        }
    }
    /* after one step from the same state: the same actuator torque, and the velocity of joint j
     * shifted by h E_j / I, the other dof not at all */
    rig ra, rb;
    tbatch ta, tb;
    sea_case_init(&c, N, NJ, NULL);
    c.refs = (asr_series){refs, 0, 0};
    rig_init(&ra, N, NJ, NULL);
    rig_init(&rb, N, NJ, NULL);
    sea_batch(&ta, &c, &ra, 1);
    sea_batch(&tb, &c, &rb, 1);
    asr_series none = {NULL, 0, 0};
    asr_series held = {ext, 0, 0};
    CHECK_ST(asr_batch_rollout_engine(ta.b, &ra.e, 1, DT, c.refs, held, none, 0, NULL, NULL),
             ASR_OK);
    CHECK_ST(asr_batch_rollout_engine(tb.b, &rb.e, 1, DT, c.refs, none, none, 0, NULL, NULL),
             ASR_OK);
    for (int i = 0; i < N; ++i) {
        const fake_model* m = &MODELS[i % 2];
        for (int j = 0; j < NJ; ++j) {
            int v = DOF_ADR[j];
            CHECK(same(*field(&ta, i, j, ASR_F_TAU_LINK), *field(&tb, i, j, ASR_F_TAU_LINK)));
            double shift = ra.data[i].qvel[v] - rb.data[i].qvel[v];
            CHECK(fabs(shift - m->h * E[j] / m->I) <= 1e-14);
            CHECK(fabs((ra.data[i].qpos[QPOS_ADR[j]] - rb.data[i].qpos[QPOS_ADR[j]]) -
                       m->h * m->h * E[j] / m->I) <= 1e-15);
        }
        CHECK(ra.data[i].qvel[PASSIVE_DOF] == rb.data[i].qvel[PASSIVE_DOF]);
        CHECK(ra.data[i].qpos[DOF_QPOS[PASSIVE_DOF]] == rb.data[i].qpos[DOF_QPOS[PASSIVE_DOF]]);
    }
    tb_free(&ta);
    tb_free(&tb);
    rig_free(&ra);
    rig_free(&rb);
    free(with);
    free(without);
    free(refs);
    free(ext);
    free(ff);
}

static void test_sea_per_instance_held_refs(void) {
    enum { N = 5, NJ = 2, NSTEP = 15 };
    double* refs = (double*)xcalloc((size_t)N * NJ * 2, sizeof(double));
    double* ff = (double*)xcalloc(NJ, sizeof(double));
    for (int i = 0; i < N; ++i) {
        for (int j = 0; j < NJ; ++j) {
            refs[(i * NJ + j) * 2] = 0.1 * i - 0.15 * j;
            refs[(i * NJ + j) * 2 + 1] = -1.0;
        }
    }
    ff[0] = 0.5;
    sea_case c;
    sea_case_init(&c, N, NJ, NULL);
    c.refs = (asr_series){refs, NJ * 2, 0};
    c.ff = (asr_series){ff, 0, 0};
    CHECK_ST(run_sea_case("sea per-instance held refs, 3 threads", &c, NSTEP, 3, NULL), ASR_OK);
    /* nstep 0: nothing happens, the hand loop agrees */
    CHECK_ST(run_sea_case("sea zero steps", &c, 0, 1, NULL), ASR_OK);
    free(refs);
    free(ff);
}

/* ---------------------------------------------------------------- non-finite inputs */

static void test_nonfinite_inputs(void) {
    enum { N = 4, NJ = 2, NSTEP = 12 };
    double* refs = (double*)xcalloc((size_t)N * NSTEP * NJ * 2, sizeof(double));
    double* ff = (double*)xcalloc((size_t)N * NSTEP * NJ, sizeof(double));
    for (int i = 0; i < N; ++i) {
        for (int t = 0; t < NSTEP; ++t) {
            for (int j = 0; j < NJ; ++j) {
                refs[(((size_t)i * NSTEP + (size_t)t) * NJ + (size_t)j) * 2] = 0.05 * (t - i);
                ff[((size_t)i * NSTEP + (size_t)t) * NJ + (size_t)j] = 0.1;
            }
        }
    }
    /* instance 1: NaN preset (the second reference) of joint 0 at step 4 */
    refs[(((size_t)1 * NSTEP + 4) * NJ + 0) * 2 + 1] = NAN;
    /* instance 3: infinite feed-forward torque of joint 1 at step 2 (checked in every mode) */
    ff[((size_t)3 * NSTEP + 2) * NJ + 1] = INFINITY;
    sea_case c;
    sea_case_init(&c, N, NJ, NULL);
    c.refs = (asr_series){refs, NSTEP * NJ * 2, NJ * 2};
    c.ff = (asr_series){ff, NSTEP * NJ, NJ};
    rig r;
    tbatch t;
    hand h;
    rig_init(&r, N, NJ, NULL);
    sea_batch(&t, &c, &r, 2);
    hand_init(&h, &c);
    /* instance 0: NaN link angle of joint 1 in the engine before the first step */
    r.data[0].qpos[QPOS_ADR[1]] = NAN;
    h.qpos[0][QPOS_ADR[1]] = NAN;
    size_t nrec = (size_t)NSEA_REC * N * NSTEP * NJ;
    double* rec = (double*)xcalloc(nrec, sizeof(double));
    double* want = (double*)xcalloc(nrec, sizeof(double));
    CHECK_ST(asr_batch_rollout_engine(t.b, &r.e, NSTEP, DT, c.refs, c.ext, c.ff, NSEA_REC,
                                      SEA_REC, rec),
             ASR_ERR_INPUT);
    hand_run(&h, &c, NSTEP, NSEA_REC, SEA_REC, want);
    check_against_hand("non-finite inputs", &r, &t, &h);
    CHECK_ARRAYS("non-finite inputs: record", rec, want, nrec, 0.0);
    CHECK(t.code[0] == ASR_ERR_INPUT && t.joint[0] == 1 && t.step[0] == 0);
    CHECK(t.code[1] == ASR_ERR_INPUT && t.joint[1] == 0 && t.step[1] == 4);
    CHECK(t.code[2] == ASR_OK && t.joint[2] == -1 && t.step[2] == -1);
    CHECK(t.code[3] == ASR_ERR_INPUT && t.joint[3] == 1 && t.step[3] == 2);
    /* zero torque from the freeze on, in the record and in the engine */
    int zero = 1;
    for (int i = 0; i < N; ++i) {
        if (t.code[i] == ASR_OK) continue;
        for (int s = (int)t.step[i]; s < NSTEP; ++s) {
            for (int j = 0; j < NJ; ++j) zero &= rec[rec_at(0, i, s, j, N, NSTEP, NJ)] == 0.0;
        }
        for (int j = 0; j < NJ; ++j) zero &= r.data[i].qfrc_applied[DOF_ADR[j]] == 0.0;
    }
    CHECK(zero);
    /* instance 3 ran two good steps with torque */
    CHECK(rec[rec_at(0, 3, 1, 1, N, NSTEP, NJ)] != 0.0);
    free(rec);
    free(want);
    tb_free(&t);
    rig_free(&r);
    free(refs);
    free(ff);
}

/* ---------------------------------------------------------------- a diverging instance */

enum { DV_N = 5, DV_NJ = 2, DV_BAD = 2, DV_NSTEP1 = 5, DV_NSTEP2 = 40, DV_NSTEP3 = 3 };

static const int DV_REC[] = {ASR_F_TAU_JOINT, ASR_F_Q, ASR_F_QD, ASR_F_TH1};
enum { DV_NREC = (int)(sizeof DV_REC / sizeof DV_REC[0]) };

typedef struct dv_run {
    sea_case c;
    rig r;
    tbatch t;
    hand h;
    double *refs, *ext;     /* per instance held; per instance and step */
    double* rec[3];         /* the three rollouts' records */
    double* want[3];
    asr_status st[3];
} dv_run;

static const int DV_NSTEPS[3] = {DV_NSTEP1, DV_NSTEP2, DV_NSTEP3};

/* The divergence scenario for instances orig[0..n): the same instances, inputs and parameters
 * whether or not the diverging instance DV_BAD is among them. */
static void dv_run_all(dv_run* d, int n, const int* orig) {
    sea_case_init(&d->c, n, DV_NJ, orig);
    d->c.vmax = HUGE_VAL; /* the speed bound off: the state itself overflows */
    for (int i = 0; i < n; ++i) {
        if (orig[i] == DV_BAD) { /* joint 1: explicit coupling unstable, h^2 k / I >> 4 */
            d->c.k[i][1] = 1e20;
            d->c.md[i][1] = 1e300;
        }
    }
    d->refs = (double*)xcalloc((size_t)n * DV_NJ * 2, sizeof(double));
    d->ext = (double*)xcalloc((size_t)n * DV_NSTEP2 * DV_NJ, sizeof(double));
    for (int i = 0; i < n; ++i) {
        int o = orig[i];
        for (int j = 0; j < DV_NJ; ++j) {
            d->refs[(i * DV_NJ + j) * 2] = 0.1 * o - 0.2 * j;
            d->refs[(i * DV_NJ + j) * 2 + 1] = 0.0;
            for (int s = 0; s < DV_NSTEP2; ++s) {
                d->ext[((size_t)i * DV_NSTEP2 + (size_t)s) * DV_NJ + (size_t)j] =
                    0.01 * cos(0.2 * s + o + j);
            }
        }
    }
    d->c.refs = (asr_series){d->refs, DV_NJ * 2, 0};
    d->c.ext = (asr_series){d->ext, DV_NSTEP2 * DV_NJ, DV_NJ};
    rig_init(&d->r, n, DV_NJ, orig);
    sea_batch(&d->t, &d->c, &d->r, 1);
    hand_init(&d->h, &d->c);
    for (int k = 0; k < 3; ++k) {
        size_t nrec = (size_t)DV_NREC * (size_t)n * (size_t)DV_NSTEPS[k] * DV_NJ;
        d->rec[k] = (double*)xcalloc(nrec, sizeof(double));
        d->want[k] = (double*)xcalloc(nrec, sizeof(double));
        d->st[k] = asr_batch_rollout_engine(d->t.b, &d->r.e, DV_NSTEPS[k], DT, d->c.refs,
                                            d->c.ext, d->c.ff, DV_NREC, DV_REC, d->rec[k]);
        hand_run(&d->h, &d->c, DV_NSTEPS[k], DV_NREC, DV_REC, d->want[k]);
        char what[80];
        snprintf(what, sizeof what, "divergence (%d instances), rollout %d", n, k);
        check_against_hand(what, &d->r, &d->t, &d->h);
        CHECK_ARRAYS(what, d->rec[k], d->want[k], nrec, 0.0);
    }
}

static void dv_free(dv_run* d) {
    for (int k = 0; k < 3; ++k) {
        free(d->rec[k]);
        free(d->want[k]);
    }
    free(d->refs);
    free(d->ext);
    tb_free(&d->t);
    rig_free(&d->r);
}

static void test_diverging_instance(void) {
    static dv_run full, rest;
    const int all[DV_N] = {0, 1, 2, 3, 4}, others[DV_N - 1] = {0, 1, 3, 4};
    dv_run_all(&full, DV_N, all);
    dv_run_all(&rest, DV_N - 1, others);
    /* the diverging instance: frozen in the second rollout, on joint 1, at a global step */
    int code = full.t.code[DV_BAD];
    long long at = full.t.step[DV_BAD];
    CHECK(code == ASR_ERR_NONFINITE || code == ASR_ERR_INPUT);
    CHECK(full.t.joint[DV_BAD] == 1);
    CHECK(at > DV_NSTEP1 && at < DV_NSTEP1 + DV_NSTEP2);
    CHECK_ST(full.st[0], ASR_OK);
    CHECK_ST(full.st[1], code);
    CHECK_ST(full.st[2], ASR_OK); /* frozen before: nothing newly raised */
    for (int i = 0; i < DV_N; ++i) {
        if (i != DV_BAD) CHECK(full.t.code[i] == ASR_OK);
    }
    /* zero torque from the freeze on: records and applied forces */
    int zero = 1, before = 1;
    int t0 = (int)(at - DV_NSTEP1);
    for (int s = 0; s < DV_NSTEP2; ++s) {
        for (int j = 0; j < DV_NJ; ++j) {
            double tau = full.rec[1][rec_at(0, DV_BAD, s, j, DV_N, DV_NSTEP2, DV_NJ)];
            if (s >= t0) zero &= tau == 0.0;
            if (s < t0) before &= isfinite(tau) && tau != 0.0;
        }
    }
    for (int s = 0; s < DV_NSTEP3; ++s) {
        for (int j = 0; j < DV_NJ; ++j) {
            zero &= full.rec[2][rec_at(0, DV_BAD, s, j, DV_N, DV_NSTEP3, DV_NJ)] == 0.0;
        }
    }
    for (int j = 0; j < DV_NJ; ++j) zero &= full.r.data[DV_BAD].qfrc_applied[DOF_ADR[j]] == 0.0;
    CHECK(zero);
    CHECK(before);
    CHECK(full.r.data[DV_BAD].n1 == DV_NSTEP1 + DV_NSTEP2 + DV_NSTEP3); /* still stepped */
    /* the others: bit-identical to the run without the diverging instance */
    for (int k = 0; k < 3; ++k) CHECK_ST(rest.st[k], ASR_OK);
    for (int i = 0; i < DV_N - 1; ++i) {
        int o = others[i];
        CHECK(rest.t.code[i] == ASR_OK);
        CHECK(rig_same_instance(&full.r, o, &rest.r, i));
        CHECK(memcmp(field(&full.t, o, 0, 0), field(&rest.t, i, 0, 0),
                     (size_t)DV_NJ * ASR_NFIELD * sizeof(double)) == 0);
        for (int k = 0; k < 3; ++k) {
            int ok = 1;
            for (int r = 0; r < DV_NREC; ++r) {
                for (int s = 0; s < DV_NSTEPS[k]; ++s) {
                    for (int j = 0; j < DV_NJ; ++j) {
                        ok &= same(full.rec[k][rec_at(r, o, s, j, DV_N, DV_NSTEPS[k], DV_NJ)],
                                   rest.rec[k][rec_at(r, i, s, j, DV_N - 1, DV_NSTEPS[k],
                                                      DV_NJ)]);
                    }
                }
            }
            CHECK(ok);
        }
    }
    dv_free(&full);
    dv_free(&rest);
}

/* ---------------------------------------------------------------- errors: nothing stepped */

typedef struct snapshot {
    double qpos[MAXN][NQ], qvel[MAXN][NV], qfrc[MAXN][NV];
    long n1[MAXN], n2[MAXN];
    double* state;
    int code[MAXN], joint[MAXN];
    long long step[MAXN];
    long long step_count;
} snapshot;

static void snap(snapshot* s, const rig* r, const tbatch* t) {
    size_t nstate = (size_t)t->n * (size_t)t->nj * ASR_NFIELD;
    if (!s->state) s->state = (double*)xcalloc(nstate, sizeof(double));
    for (int i = 0; i < r->n; ++i) {
        memcpy(s->qpos[i], r->data[i].qpos, NQ * sizeof(double));
        memcpy(s->qvel[i], r->data[i].qvel, NV * sizeof(double));
        memcpy(s->qfrc[i], r->data[i].qfrc_applied, NV * sizeof(double));
        s->n1[i] = r->data[i].n1;
        s->n2[i] = r->data[i].n2;
        s->code[i] = t->code[i];
        s->joint[i] = t->joint[i];
        s->step[i] = t->step[i];
    }
    memcpy(s->state, t->state, nstate * sizeof(double));
    s->step_count = asr_batch_step_count(t->b);
}

static int unchanged(const snapshot* s, const rig* r, const tbatch* t) {
    snapshot now;
    memset(&now, 0, sizeof now);
    snap(&now, r, t);
    int ok = now.step_count == s->step_count &&
             memcmp(now.state, s->state,
                    (size_t)t->n * (size_t)t->nj * ASR_NFIELD * sizeof(double)) == 0;
    for (int i = 0; i < r->n; ++i) {
        ok &= memcmp(now.qpos[i], s->qpos[i], sizeof now.qpos[i]) == 0 &&
              memcmp(now.qvel[i], s->qvel[i], sizeof now.qvel[i]) == 0 &&
              memcmp(now.qfrc[i], s->qfrc[i], sizeof now.qfrc[i]) == 0 &&
              now.n1[i] == s->n1[i] && now.n2[i] == s->n2[i] && now.code[i] == s->code[i] &&
              now.joint[i] == s->joint[i] && now.step[i] == s->step[i];
    }
    free(now.state);
    return ok;
}

static void test_errors(void) {
    enum { N = 3, NJ = 2, NSTEP = 4 };
    sea_case c;
    sea_case_init(&c, N, NJ, NULL);
    double* refs = (double*)xcalloc(NJ * 2, sizeof(double));
    refs[0] = 0.1;
    refs[2] = -0.1;
    asr_series R = {refs, 0, 0}, none = {NULL, 0, 0};
    c.refs = R;
    rig r;
    tbatch t;
    rig_init(&r, N, NJ, NULL);
    sea_batch(&t, &c, &r, 2);
    /* two good steps first, so that the state is not the reset one */
    CHECK_ST(asr_batch_rollout_engine(t.b, &r.e, 2, DT, R, none, none, 0, NULL, NULL), ASR_OK);
    snapshot s0;
    memset(&s0, 0, sizeof s0);
    snap(&s0, &r, &t);
    int rf[2] = {ASR_F_TAU_JOINT, ASR_F_Q};
    double* rec = (double*)xcalloc((size_t)2 * N * NSTEP * NJ, sizeof(double));
    asr_batch* b = t.b;
    const asr_engine good = r.e;
    asr_engine e;

#define EXPECT(call, status)                                                     \
    do {                                                                         \
        CHECK_ST(call, status);                                                  \
        check_(unchanged(&s0, &r, &t), "nothing stepped: " #call, __FILE__, __LINE__); \
    } while (0)

    /* NULL batch, engine, step halves */
    EXPECT(asr_batch_rollout_engine(NULL, &good, NSTEP, DT, R, none, none, 2, rf, rec),
           ASR_ERR_NULL);
    EXPECT(asr_batch_rollout_engine(b, NULL, NSTEP, DT, R, none, none, 2, rf, rec),
           ASR_ERR_NULL);
    e = good;
    e.step1 = NULL;
    EXPECT(asr_batch_rollout_engine(b, &e, NSTEP, DT, R, none, none, 2, rf, rec), ASR_ERR_NULL);
    e = good;
    e.step2 = NULL;
    EXPECT(asr_batch_rollout_engine(b, &e, NSTEP, DT, R, none, none, 2, rf, rec), ASR_ERR_NULL);
    /* NULL arrays of the engine */
    for (int k = 0; k < 7; ++k) {
        e = good;
        switch (k) {
            case 0: e.model = NULL; break;
            case 1: e.data = NULL; break;
            case 2: e.qpos = NULL; break;
            case 3: e.qvel = NULL; break;
            case 4: e.qfrc = NULL; break;
            case 5: e.qpos_adr = NULL; break;
            default: e.dof_adr = NULL; break;
        }
        EXPECT(asr_batch_rollout_engine(b, &e, NSTEP, DT, R, none, none, 2, rf, rec),
               ASR_ERR_NULL);
    }
    /* a NULL pointer for one instance (the last, the first) */
    for (int i = N - 1; i >= 0; i -= N - 1) {
        const void* m = r.model_p[i];
        void* d = r.data_p[i];
        double *qp = r.qpos_p[i], *qv = r.qvel_p[i], *qf = r.qfrc_p[i];
        r.model_p[i] = NULL;
        EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, rec),
               ASR_ERR_NULL);
        r.model_p[i] = m;
        r.data_p[i] = NULL;
        EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, rec),
               ASR_ERR_NULL);
        r.data_p[i] = d;
        r.qpos_p[i] = NULL;
        EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, rec),
               ASR_ERR_NULL);
        r.qpos_p[i] = qp;
        r.qvel_p[i] = NULL;
        EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, rec),
               ASR_ERR_NULL);
        r.qvel_p[i] = qv;
        r.qfrc_p[i] = NULL;
        EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, rec),
               ASR_ERR_NULL);
        r.qfrc_p[i] = qf;
    }
    /* negative addresses */
    const int bad_qpos[MAXJ] = {3, -1}, bad_dof[MAXJ] = {-2, 0};
    e = good;
    e.qpos_adr = bad_qpos;
    EXPECT(asr_batch_rollout_engine(b, &e, NSTEP, DT, R, none, none, 2, rf, rec), ASR_ERR_RANGE);
    e = good;
    e.dof_adr = bad_dof;
    EXPECT(asr_batch_rollout_engine(b, &e, NSTEP, DT, R, none, none, 2, rf, rec), ASR_ERR_RANGE);
    /* references are required */
    EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, none, R, R, 2, rf, rec), ASR_ERR_NULL);
    /* record pointers */
    EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, NULL),
           ASR_ERR_NULL);
    EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, NULL, rec),
           ASR_ERR_NULL);
    EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, -1, rf, rec),
           ASR_ERR_RANGE);
    const int bad_rf[3][2] = {{ASR_F_TAU_JOINT, ASR_NFIELD}, {-1, ASR_F_Q}, {ASR_F_Q, 1000}};
    for (int k = 0; k < 3; ++k) {
        EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, bad_rf[k], rec),
               ASR_ERR_RANGE);
    }
    /* time step and step count */
    const double bad_dt[] = {0.0, -0.0, -1e-3, NAN, INFINITY, -INFINITY, 2000.0};
    for (size_t k = 0; k < sizeof bad_dt / sizeof bad_dt[0]; ++k) {
        EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, bad_dt[k], R, none, none, 2, rf, rec),
               ASR_ERR_RANGE);
    }
    EXPECT(asr_batch_rollout_engine(b, &good, -1, DT, R, none, none, 2, rf, rec), ASR_ERR_RANGE);
    EXPECT(asr_batch_rollout_engine(b, &good, -1000000, DT, R, none, none, 0, NULL, NULL),
           ASR_ERR_RANGE);
    /* zero steps: valid, nothing stepped; nrecord 0 needs no record */
    EXPECT(asr_batch_rollout_engine(b, &good, 0, DT, R, none, none, 2, rf, rec), ASR_OK);
    EXPECT(asr_batch_rollout_engine(b, &good, 0, DT, R, none, none, 0, NULL, NULL), ASR_OK);
#undef EXPECT
    /* after all that, a good call steps (so "unchanged" can see a change) */
    CHECK_ST(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, rec), ASR_OK);
    CHECK(!unchanged(&s0, &r, &t));
    CHECK(asr_batch_step_count(b) == 2 + NSTEP);
    for (int i = 0; i < N; ++i) CHECK(r.data[i].n1 == 2 + NSTEP && r.data[i].n2 == 2 + NSTEP);
    free(s0.state);
    free(rec);
    tb_free(&t);
    rig_free(&r);
    free(refs);
}

/* ---------------------------------------------------------------- modes 5/6, threads */

/* Two joints with motor dynamics: a sea in mode 6 with feed-forward torque and a qbmove_advanced
 * (two motors) in mode 6 with a controller period; per-instance gains. */
enum { M6_N = 8, M6_NJ = 2, M6_NSTEP = 60, M6_NAN_I = 5, M6_NAN_T = 37 };

static const int M6_REC[] = {ASR_F_TAU_JOINT, ASR_F_TH1, ASR_F_TH2, ASR_F_CMD1, ASR_F_Q,
                             ASR_F_QD, ASR_F_TAU_M1};
enum { M6_NREC = (int)(sizeof M6_REC / sizeof M6_REC[0]) };

typedef struct m6_inputs {
    double *refs, *ext, *ff;
    asr_series s_refs, s_ext, s_ff;
} m6_inputs;

static void m6_inputs_make(m6_inputs* in) {
    in->refs = (double*)xcalloc((size_t)M6_N * M6_NSTEP * M6_NJ * 2, sizeof(double));
    in->ext = (double*)xcalloc((size_t)M6_NSTEP * M6_NJ, sizeof(double));
    in->ff = (double*)xcalloc((size_t)M6_N * M6_NSTEP * M6_NJ, sizeof(double));
    for (int i = 0; i < M6_N; ++i) {
        for (int t = 0; t < M6_NSTEP; ++t) {
            size_t x = ((size_t)i * M6_NSTEP + (size_t)t) * M6_NJ;
            in->refs[2 * x] = 0.3 * sin(0.05 * t + i);          /* sea: position */
            in->refs[2 * x + 1] = 7.0;                          /* sea: unused */
            in->refs[2 * x + 2] = 0.2 * cos(0.04 * t + 0.5 * i); /* qbmove: equilibrium */
            in->refs[2 * x + 3] = 0.1 + 0.02 * i;               /* qbmove: preset */
            in->ff[x] = 0.2 * sin(0.1 * t + i);
            in->ff[x + 1] = 0.3; /* unused by a two-motor joint */
        }
    }
    for (int t = 0; t < M6_NSTEP; ++t) {
        in->ext[t * M6_NJ] = 0.05 * cos(0.07 * t);
        in->ext[t * M6_NJ + 1] = -0.02;
    }
    /* a NaN reference freezes one instance in the middle of the second thread's range */
    in->refs[(((size_t)M6_NAN_I * M6_NSTEP + M6_NAN_T) * M6_NJ + 1) * 2] = NAN;
    in->s_refs = (asr_series){in->refs, M6_NSTEP * M6_NJ * 2, M6_NJ * 2};
    in->s_ext = (asr_series){in->ext, 0, M6_NJ};
    in->s_ff = (asr_series){in->ff, M6_NSTEP * M6_NJ, M6_NJ};
}

static void m6_inputs_free(m6_inputs* in) {
    free(in->refs);
    free(in->ext);
    free(in->ff);
}

static void m6_setup(tbatch* t, rig* r, const m6_inputs* in, int threads) {
    const asr_model_def* defs[M6_NJ] = {model_named("sea"), model_named("qbmove_advanced")};
    int modes[M6_NJ] = {ASR_MODE_EQ_PRESET_PID, ASR_MODE_EQ_PRESET_PID};
    CHECK_ST(tb_create(t, M6_N, M6_NJ, defs, modes), ASR_OK);
    if (!t->b) exit(2);
    double kp[M6_N], k[M6_N];
    for (int i = 0; i < M6_N; ++i) {
        kp[i] = 60.0 + 10.0 * i;
        k[i] = 8.0 + i;
    }
    double period = 2e-3;
    CHECK_ST(asr_batch_set_param(t->b, 0, ASR_P_KP, kp, M6_N, NULL), ASR_OK);
    CHECK_ST(asr_batch_set_param(t->b, 0, own_param(defs[0], "k"), k, M6_N, NULL), ASR_OK);
    CHECK_ST(asr_batch_set_param(t->b, 1, ASR_P_CTRL_PERIOD, &period, 1, NULL), ASR_OK);
    CHECK_ST(asr_batch_set_max_substep(t->b, 2.5e-4), ASR_OK);
    CHECK_ST(asr_batch_set_threads(t->b, threads), ASR_OK);
    rig_init(r, M6_N, M6_NJ, NULL);
    double q0[M6_N * M6_NJ], refs0[M6_N * M6_NJ * 2];
    rig_q0(r, q0);
    for (int i = 0; i < M6_N; ++i) {
        for (int j = 0; j < M6_NJ; ++j) {
            refs0[(i * M6_NJ + j) * 2] = series_val(in->s_refs, i, 0, 2 * j);
            refs0[(i * M6_NJ + j) * 2 + 1] = series_val(in->s_refs, i, 0, 2 * j + 1);
        }
    }
    CHECK_ST(asr_batch_reset(t->b, q0, refs0), ASR_OK);
}

/* The coupling written out with asr_batch_step: step1, gather the link state of the actuated
 * joints, one batch step, torques into qfrc_applied[dof_adr], step2, record. */
static asr_status m6_step_loop(tbatch* t, rig* r, const m6_inputs* in, double* rec) {
    enum { X = M6_N * M6_NJ };
    double q[X], qd[X], refs[2 * X], ext[X], ff[X];
    asr_status first = ASR_OK;
    for (int s = 0; s < M6_NSTEP; ++s) {
        for (int i = 0; i < M6_N; ++i) {
            fake_step1(r->model_p[i], r->data_p[i]);
            for (int j = 0; j < M6_NJ; ++j) {
                int x = i * M6_NJ + j;
                q[x] = r->data[i].qpos[QPOS_ADR[j]];
                qd[x] = r->data[i].qvel[DOF_ADR[j]];
                refs[2 * x] = series_val(in->s_refs, i, s, 2 * j);
                refs[2 * x + 1] = series_val(in->s_refs, i, s, 2 * j + 1);
                ext[x] = series_val(in->s_ext, i, s, j);
                ff[x] = series_val(in->s_ff, i, s, j);
            }
        }
        asr_status st = asr_batch_step(t->b, DT, q, qd, refs, ext, ff);
        if (first == ASR_OK) first = st;
        for (int i = 0; i < M6_N; ++i) {
            for (int j = 0; j < M6_NJ; ++j) {
                r->data[i].qfrc_applied[DOF_ADR[j]] = *field(t, i, j, ASR_F_TAU_JOINT);
            }
            fake_step2(r->model_p[i], r->data_p[i]);
            for (int k = 0; k < M6_NREC; ++k) { /* q, qd: the engine's after the step */
                for (int j = 0; j < M6_NJ; ++j) {
                    double v = M6_REC[k] == ASR_F_Q    ? r->data[i].qpos[QPOS_ADR[j]]
                               : M6_REC[k] == ASR_F_QD ? r->data[i].qvel[DOF_ADR[j]]
                                                       : *field(t, i, j, M6_REC[k]);
                    rec[rec_at(k, i, s, j, M6_N, M6_NSTEP, M6_NJ)] = v;
                }
            }
        }
    }
    return first;
}

static void test_modes_5_6_and_threads(void) {
    m6_inputs in;
    m6_inputs_make(&in);
    size_t nrec = (size_t)M6_NREC * M6_N * M6_NSTEP * M6_NJ;
    size_t nstate = (size_t)M6_N * M6_NJ * ASR_NFIELD;
    /* the reference: the same coupling through asr_batch_step */
    tbatch tr;
    rig rr;
    m6_setup(&tr, &rr, &in, 1);
    double* want = (double*)xcalloc(nrec, sizeof(double));
    asr_status st_ref = m6_step_loop(&tr, &rr, &in, want);
    CHECK_ST(st_ref, ASR_ERR_INPUT);
    CHECK(tr.code[M6_NAN_I] == ASR_ERR_INPUT && tr.joint[M6_NAN_I] == 1 &&
          tr.step[M6_NAN_I] == M6_NAN_T);
    const int threads[] = {1, 2, 3, 8};
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; ++k) {
        tbatch t;
        rig r;
        m6_setup(&t, &r, &in, threads[k]);
        double* rec = (double*)xcalloc(nrec, sizeof(double));
        CHECK_ST(asr_batch_rollout_engine(t.b, &r.e, M6_NSTEP, DT, in.s_refs, in.s_ext, in.s_ff,
                                          M6_NREC, M6_REC, rec),
                 st_ref);
        char what[80];
        snprintf(what, sizeof what, "modes 5/6, %d threads: record", threads[k]);
        CHECK_ARRAYS(what, rec, want, nrec, 0.0);
        snprintf(what, sizeof what, "modes 5/6, %d threads: state", threads[k]);
        CHECK_ARRAYS(what, t.state, tr.state, nstate, 0.0);
        CHECK(memcmp(rec, want, nrec * sizeof(double)) == 0);
        CHECK(memcmp(t.state, tr.state, nstate * sizeof(double)) == 0);
        CHECK(memcmp(t.code, tr.code, M6_N * sizeof(int)) == 0);
        CHECK(memcmp(t.joint, tr.joint, M6_N * sizeof(int)) == 0);
        CHECK(memcmp(t.step, tr.step, M6_N * sizeof(long long)) == 0);
        CHECK(asr_batch_step_count(t.b) == M6_NSTEP);
        int tags_differ = 0;
        for (int i = 0; i < M6_N; ++i) {
            CHECK(rig_same_instance(&r, i, &rr, i));
            CHECK(r.data[i].n1 == M6_NSTEP && r.data[i].n2 == M6_NSTEP);
            CHECK(r.data[i].order_errors == 0);
            CHECK(r.data[i].tag_changes == 0); /* each instance on one thread throughout */
            tags_differ |= r.data[i].tag_first != r.data[0].tag_first;
        }
        CHECK(tags_differ == (threads[k] > 1));
        /* the torque of the last step of the running instances is in the engine, the rest of
         * qfrc_applied is the caller's */
        for (int i = 0; i < M6_N; ++i) {
            CHECK(r.data[i].qfrc_applied[PASSIVE_DOF] == PASSIVE_FRC[PASSIVE_DOF]);
            for (int j = 0; j < M6_NJ; ++j) {
                double last = rec[rec_at(0, i, M6_NSTEP - 1, j, M6_N, M6_NSTEP, M6_NJ)];
                CHECK(same(r.data[i].qfrc_applied[DOF_ADR[j]], last));
                if (i == M6_NAN_I) CHECK(last == 0.0);
                if (i != M6_NAN_I) CHECK(last != 0.0 && isfinite(last));
            }
        }
        free(rec);
        tb_free(&t);
        rig_free(&r);
    }
    /* the feed-forward torque series is read: without it the sea joint differs */
    {
        tbatch t;
        rig r;
        m6_setup(&t, &r, &in, 2);
        double* rec = (double*)xcalloc(nrec, sizeof(double));
        asr_series none = {NULL, 0, 0};
        CHECK_ST(asr_batch_rollout_engine(t.b, &r.e, M6_NSTEP, DT, in.s_refs, in.s_ext, none,
                                          M6_NREC, M6_REC, rec),
                 ASR_ERR_INPUT);
        CHECK(rec[rec_at(1, 0, 5, 0, M6_N, M6_NSTEP, M6_NJ)] !=
              want[rec_at(1, 0, 5, 0, M6_N, M6_NSTEP, M6_NJ)]); /* sea motor angle */
        CHECK(same(rec[rec_at(1, 0, 0, 1, M6_N, M6_NSTEP, M6_NJ)],
                   want[rec_at(1, 0, 0, 1, M6_N, M6_NSTEP, M6_NJ)])); /* qbmove: first step */
        free(rec);
        tb_free(&t);
        rig_free(&r);
    }
    free(want);
    tb_free(&tr);
    rig_free(&rr);
    m6_inputs_free(&in);
}

/* ---------------------------------------------------------------- main */

int main(void) {
    test_sea_per_instance_per_step();
    test_sea_shared_ramp_one_joint();
    test_sea_held_inputs();
    test_sea_per_instance_held_refs();
    test_nonfinite_inputs();
    test_diverging_instance();
    test_errors();
    test_modes_5_6_and_threads();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
