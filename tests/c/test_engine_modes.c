/* test_engine_modes.c - a plain C test of the rigid-body engine coupling
 * asr_batch_rollout_engine against a fake engine (fake_engine.h), no framework: modes 5/6 and
 * two-motor joints against the same loop built on asr_batch_step; thread counts 1, 2, 3 and 8
 * bit-identical. Prints "N passed, M failed" and returns non-zero on failure.
 *
 * Build (see tests/test_c_core.py): gcc -std=c11 -Wall -Wextra -Wpedantic -Wmissing-prototypes
 * -Werror -ffp-contract=off -Icsrc, csrc/ sources plus this file, -lm -lpthread. */
#include "fake_engine.h"

/* ---------------------------------------------------------------- modes 5/6, threads */

/* Two joints with motor dynamics: a sea in mode 6 with feed-forward torque and a qbmove_advanced
 * (two motors) in mode 6 with a controller period; per-instance gains. */
enum {
    M6_N = 8,
    M6_NJ = 2,
    M6_NSTEP = 60,
    M6_NAN_I = 5,
    M6_NAN_T = 37
};

static const int M6_REC[] = {ASR_F_TAU_JOINT, ASR_F_TH1, ASR_F_TH2,   ASR_F_CMD1,
                             ASR_F_Q,         ASR_F_QD,  ASR_F_TAU_M1};
enum {
    M6_NREC = (int)(sizeof M6_REC / sizeof M6_REC[0])
};

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
            in->refs[2 * x] = 0.3 * sin(0.05 * t + i);           /* sea: position */
            in->refs[2 * x + 1] = 7.0;                           /* sea: unused */
            in->refs[2 * x + 2] = 0.2 * cos(0.04 * t + 0.5 * i); /* qbmove: equilibrium */
            in->refs[2 * x + 3] = 0.1 + 0.02 * i;                /* qbmove: preset */
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
    enum {
        X = M6_N * M6_NJ
    };
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
    test_modes_5_6_and_threads();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
