/* sea_hand.h - the C tests of the engine coupling (test_engine_*.c): sea joints in mode 3
 * coupled to the fake engine, and an independent hand-written loop of the same steps that the
 * batch must reproduce bit for bit. */
#ifndef ASR_TEST_SEA_HAND_H
#define ASR_TEST_SEA_HAND_H

#include "fake_engine.h"

/* ---------------------------------------------------------------- sea, mode 3, by hand */

/* Fields of a sea joint in mode 3 the hand loop reproduces. */
static const int SEA_FIELDS[] = {ASR_F_TAU_JOINT, ASR_F_TAU_LINK, ASR_F_STIFFNESS, ASR_F_TAU_EL1,
                                 ASR_F_DEFL1,     ASR_F_TH1,      ASR_F_Q,         ASR_F_QD,
                                 ASR_F_REF1,      ASR_F_REF2,     ASR_F_TAU_EXT};
enum {
    NSEA_FIELDS = (int)(sizeof SEA_FIELDS / sizeof SEA_FIELDS[0])
};

/* The default link_vel_max, rad/s: a faster link is a divergence. */
#define LINK_VEL_MAX 1e4

/* A batch of sea joints in mode 3 coupled to the fake engine. */
typedef struct sea_case {
    int n, nj;
    int orig[MAXN];                       /* original instance of each instance */
    double k[MAXN][MAXJ], md[MAXN][MAXJ]; /* spring stiffness and deflection limit */
    double vmax;                          /* link_vel_max of every joint, rad/s */
    asr_series refs, ext, ff;
} sea_case;

static inline void sea_case_init(sea_case* c, int n, int nj, const int* orig) {
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

static inline void sea_batch(tbatch* t, const sea_case* c, const rig* r, int threads) {
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

static inline void hand_init(hand* h, const sea_case* c) {
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

static inline double sat(double x, double m) {
    double y = x < -m ? -m : x;
    return y > m ? m : y;
}

/* nstep coupled steps by hand; expected records (layout as documented) into rec. */
static inline void hand_run(hand* h, const sea_case* c, int nstep, int nrec, const int* rf,
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
static inline void check_against_hand(const char* name, const rig* r, const tbatch* t,
                                      const hand* h) {
    char what[160];
    for (int i = 0; i < r->n; ++i) {
        const fake_data* d = &r->data[i];
        snprintf(what, sizeof what, "%s: qpos of instance %d", name, i);
        CHECK_ARRAYS(what, d->qpos, h->qpos[i], NQ, 0.0);
        snprintf(what, sizeof what, "%s: qvel of instance %d", name, i);
        CHECK_ARRAYS(what, d->qvel, h->qvel[i], NV, 0.0);
        snprintf(what, sizeof what, "%s: qfrc_applied of instance %d", name, i);
        CHECK_ARRAYS(what, d->qfrc_applied, h->qfrc[i], NV, 0.0);
        CHECK(d->qpos[2] == SPARE_QPOS); /* no dof's qpos: untouched */
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
            if (h->step_count > 0)
                CHECK(same(d->qfrc_applied[DOF_ADR[j]], *field(t, i, j, ASR_F_TAU_JOINT)));
        }
        CHECK(t->code[i] == h->code[i]);
        CHECK(t->joint[i] == h->joint[i]);
        CHECK(t->step[i] == h->step[i]);
        CHECK(d->order_errors == 0);
        CHECK(d->n1 == h->step_count && d->n2 == h->step_count);
    }
    CHECK(asr_batch_step_count(t->b) == h->step_count);
}

static const int SEA_REC[] = {ASR_F_TAU_JOINT, ASR_F_Q,     ASR_F_REF1,     ASR_F_REF2, ASR_F_TH1,
                              ASR_F_TAU_EXT,   ASR_F_DEFL1, ASR_F_TAU_LINK, ASR_F_QD};
enum {
    NSEA_REC = (int)(sizeof SEA_REC / sizeof SEA_REC[0])
};

/* Run case c for nstep steps with `threads` threads, coupled and by hand, and compare. Returns
 * the coupled rollout's status; the records are left in rec_out (if not NULL). */
static inline asr_status run_sea_case(const char* name, const sea_case* c, int nstep, int threads,
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
    asr_status st = asr_batch_rollout_engine(t.b, &r.e, nstep, DT, c->refs, c->ext, c->ff, NSEA_REC,
                                             SEA_REC, rec);
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

#endif
