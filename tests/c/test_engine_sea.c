/* test_engine_sea.c - a plain C test of the rigid-body engine coupling
 * asr_batch_rollout_engine against a fake engine (fake_engine.h), no framework: sea joints in
 * mode 3 against an independent hand-written loop (sea_hand.h; bit-identical state, engine data
 * and records, including frozen instances); the documented record layout and asr_series strides
 * (per instance, per step, held, NULL); held external torques shifting the result by a
 * hand-computable amount; asr_qpos_recorder's engine positions recorded inside the rollout equal
 * those read between one-step rollouts. Prints "N passed, M failed" and returns non-zero on failure.
 *
 * Build (see tests/test_c_core.py): gcc -std=c11 -Wall -Wextra -Wpedantic -Wmissing-prototypes
 * -Werror -ffp-contract=off -Icsrc, csrc/ sources plus this file, -lm -lpthread. */
#include "sea_hand.h"

/* ---------------------------------------------------------------- series and strides */

static void test_sea_per_instance_per_step(void) {
    enum {
        N = 4,
        NJ = 2,
        NSTEP = 40
    };
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
    enum {
        N = 3,
        NJ = 1,
        NSTEP = 25
    };
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
    enum {
        N = 3,
        NJ = 2,
        NSTEP = 20
    };
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
    enum {
        N = 5,
        NJ = 2,
        NSTEP = 15
    };
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

/* ---------------------------------------------------------------- main */

/* ---------------------------------------------------------------- engine positions recorded */

enum {
    QR_N = 5,
    QR_NJ = 2,
    QR_NSTEP = 9
};
static const int QR_ADR[3] = {2, 3, 0};

/* a counting inner controller: begin/end balanced, after_step2 count */
static int qr_n_begin, qr_n_end, qr_n_after2, qr_n_finish;
static asr_status in_begin(void* u, const asr_batch* b, const asr_engine* e, double dt, int ns,
                           int i0, int i1, void** local) {
    (void)u;
    (void)b;
    (void)e;
    (void)dt;
    (void)ns;
    (void)i0;
    (void)i1;
    __atomic_add_fetch(&qr_n_begin, 1, __ATOMIC_SEQ_CST);
    *local = malloc(16);
    return ASR_OK;
}
static void in_after2(void* l, int i, int t) {
    (void)l;
    (void)i;
    (void)t;
    __atomic_add_fetch(&qr_n_after2, 1, __ATOMIC_SEQ_CST);
}
static void in_finish(void* l, int i) {
    (void)l;
    (void)i;
    __atomic_add_fetch(&qr_n_finish, 1, __ATOMIC_SEQ_CST);
}
static void in_end(void* l) {
    free(l);
    __atomic_add_fetch(&qr_n_end, 1, __ATOMIC_SEQ_CST);
}

/* asr_qpos_recorder: chosen qpos entries recorded inside one rollout of 2 threads, around an
 * inner controller whose hooks stay balanced, equal those read after each step of one-step
 * rollouts, bit for bit; bad records refused before anything steps. */
static void test_qpos_recorder(void) {
    double refs[QR_N * QR_NSTEP * QR_NJ * 2];
    for (int k = 0; k < QR_N * QR_NSTEP * QR_NJ * 2; ++k) refs[k] = 0.01 * (k % 7);
    sea_case c;
    sea_case_init(&c, QR_N, QR_NJ, NULL);
    c.refs = (asr_series){refs, QR_NSTEP * QR_NJ * 2, QR_NJ * 2};
    /* recorded in one call, 2 threads, with the inner controller */
    rig r;
    tbatch t;
    rig_init(&r, QR_N, QR_NJ, NULL);
    sea_batch(&t, &c, &r, 2);
    double rec[QR_N * QR_NSTEP * 3];
    asr_controller inner = {NULL, NULL, in_begin, NULL, NULL, in_after2, in_finish, in_end};
    asr_qpos_record qr = {&inner, NQ, 3, QR_ADR, rec};
    asr_controller ctl;
    CHECK_ST(asr_qpos_recorder(&qr, &ctl), ASR_OK);
    double tau[QR_N * QR_NSTEP * QR_NJ];
    int f = ASR_F_TAU_JOINT;
    CHECK_ST(asr_batch_rollout_controlled(t.b, &r.e, &ctl, QR_NSTEP, DT, c.refs, c.ext, c.ff, 1, &f,
                                          tau),
             ASR_OK);
    CHECK(qr_n_begin >= 1 && qr_n_begin == qr_n_end && qr_n_after2 == QR_N * QR_NSTEP &&
          qr_n_finish == QR_N);
    /* reference: one step per call, qpos read after each */
    rig r2;
    tbatch t2;
    rig_init(&r2, QR_N, QR_NJ, NULL);
    sea_batch(&t2, &c, &r2, 1);
    double want[QR_N * QR_NSTEP * 3];
    for (int s = 0; s < QR_NSTEP; ++s) {
        asr_series rs = {refs + s * QR_NJ * 2, QR_NSTEP * QR_NJ * 2, QR_NJ * 2};
        double tau1[QR_N * QR_NJ];
        CHECK_ST(asr_batch_rollout_engine(t2.b, &r2.e, 1, DT, rs, c.ext, c.ff, 1, &f, tau1),
                 ASR_OK);
        for (int i = 0; i < QR_N; ++i)
            for (int k = 0; k < 3; ++k)
                want[(i * QR_NSTEP + s) * 3 + k] = r2.data[i].qpos[QR_ADR[k]];
    }
    CHECK_ARRAYS("qpos record", rec, want, QR_N * QR_NSTEP * 3, 0.0);
    /* refused before stepping */
    int bad[1] = {NQ};
    asr_qpos_record qb = {NULL, NQ, 1, bad, rec};
    CHECK_ST(asr_qpos_recorder(&qb, &ctl), ASR_OK);
    double q_before = r.data[0].qpos[0];
    CHECK_ST(asr_batch_rollout_controlled(t.b, &r.e, &ctl, QR_NSTEP, DT, c.refs, c.ext, c.ff, 1, &f,
                                          tau),
             ASR_ERR_RANGE);
    CHECK(same(q_before, r.data[0].qpos[0]));
    asr_qpos_record qn = {NULL, NQ, 1, NULL, rec};
    CHECK_ST(asr_qpos_recorder(&qn, &ctl), ASR_OK);
    CHECK_ST(asr_batch_rollout_controlled(t.b, &r.e, &ctl, QR_NSTEP, DT, c.refs, c.ext, c.ff, 1, &f,
                                          tau),
             ASR_ERR_NULL);
    asr_qpos_record qneg = {NULL, -1, 0, NULL, NULL};
    CHECK_ST(asr_qpos_recorder(&qneg, &ctl), ASR_OK);
    CHECK_ST(asr_batch_rollout_controlled(t.b, &r.e, &ctl, QR_NSTEP, DT, c.refs, c.ext, c.ff, 1, &f,
                                          tau),
             ASR_ERR_RANGE);
    tb_free(&t);
    rig_free(&r);
    tb_free(&t2);
    rig_free(&r2);
}

int main(void) {
    test_sea_per_instance_per_step();
    test_sea_shared_ramp_one_joint();
    test_sea_held_inputs();
    test_sea_per_instance_held_refs();
    test_qpos_recorder();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
