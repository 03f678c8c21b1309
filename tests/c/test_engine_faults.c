/* test_engine_faults.c - a plain C test of the rigid-body engine coupling
 * asr_batch_rollout_engine against a fake engine (fake_engine.h), no framework: non-finite inputs
 * and a diverging instance frozen with the right code, joint and step, then applying zero torque,
 * while the other instances are unaffected; every NULL and range error with nothing stepped.
 * Prints "N passed, M failed" and returns non-zero on failure.
 *
 * Build (see tests/test_c_core.py): gcc -std=c11 -Wall -Wextra -Wpedantic -Wmissing-prototypes
 * -Werror -ffp-contract=off -Icsrc, csrc/ sources plus this file, -lm -lpthread. */
#include "sea_hand.h"

/* ---------------------------------------------------------------- non-finite inputs */

static void test_nonfinite_inputs(void) {
    enum {
        N = 4,
        NJ = 2,
        NSTEP = 12
    };
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
    CHECK_ST(
        asr_batch_rollout_engine(t.b, &r.e, NSTEP, DT, c.refs, c.ext, c.ff, NSEA_REC, SEA_REC, rec),
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

enum {
    DV_N = 5,
    DV_NJ = 2,
    DV_BAD = 2,
    DV_NSTEP1 = 5,
    DV_NSTEP2 = 40,
    DV_NSTEP3 = 3
};

static const int DV_REC[] = {ASR_F_TAU_JOINT, ASR_F_Q, ASR_F_QD, ASR_F_TH1};
enum {
    DV_NREC = (int)(sizeof DV_REC / sizeof DV_REC[0])
};

typedef struct dv_run {
    sea_case c;
    rig r;
    tbatch t;
    hand h;
    double *refs, *ext; /* per instance held; per instance and step */
    double* rec[3];     /* the three rollouts' records */
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
        d->st[k] = asr_batch_rollout_engine(d->t.b, &d->r.e, DV_NSTEPS[k], DT, d->c.refs, d->c.ext,
                                            d->c.ff, DV_NREC, DV_REC, d->rec[k]);
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
                                   rest.rec[k][rec_at(r, i, s, j, DV_N - 1, DV_NSTEPS[k], DV_NJ)]);
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
              memcmp(now.qfrc[i], s->qfrc[i], sizeof now.qfrc[i]) == 0 && now.n1[i] == s->n1[i] &&
              now.n2[i] == s->n2[i] && now.code[i] == s->code[i] && now.joint[i] == s->joint[i] &&
              now.step[i] == s->step[i];
    }
    free(now.state);
    return ok;
}

static void test_errors(void) {
    enum {
        N = 3,
        NJ = 2,
        NSTEP = 4
    };
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

#define EXPECT(call, status)                                                                       \
    do {                                                                                           \
        CHECK_ST(call, status);                                                                    \
        check_(unchanged(&s0, &r, &t), "nothing stepped: " #call, __FILE__, __LINE__);             \
    } while (0)

    /* NULL batch, engine, step halves */
    EXPECT(asr_batch_rollout_engine(NULL, &good, NSTEP, DT, R, none, none, 2, rf, rec),
           ASR_ERR_NULL);
    EXPECT(asr_batch_rollout_engine(b, NULL, NSTEP, DT, R, none, none, 2, rf, rec), ASR_ERR_NULL);
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
        case 0:
            e.model = NULL;
            break;
        case 1:
            e.data = NULL;
            break;
        case 2:
            e.qpos = NULL;
            break;
        case 3:
            e.qvel = NULL;
            break;
        case 4:
            e.qfrc = NULL;
            break;
        case 5:
            e.qpos_adr = NULL;
            break;
        default:
            e.dof_adr = NULL;
            break;
        }
        EXPECT(asr_batch_rollout_engine(b, &e, NSTEP, DT, R, none, none, 2, rf, rec), ASR_ERR_NULL);
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
    EXPECT(asr_batch_rollout_engine(b, &good, NSTEP, DT, R, none, none, 2, rf, NULL), ASR_ERR_NULL);
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

/* ---------------------------------------------------------------- main */

int main(void) {
    test_nonfinite_inputs();
    test_diverging_instance();
    test_errors();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
