/* test_core_threads.c - a plain C test of asr's rollouts (asr.h), no framework: a rollout
 * equals its steps; thread count 1 vs 2 bit-identical; several batches on application threads.
 * Prints "N passed, M failed" and returns non-zero on failure.
 *
 * Build (see tests/test_c_core.py): gcc -std=c11 -Wall -Wextra -Wpedantic -Wmissing-prototypes
 * -Werror -ffp-contract=off -Icsrc, csrc/ sources plus this file, -lm -lpthread. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_check.h"

/* ---------------------------------------------------------------- rollout = steps */

static void fill_inputs(int nstep, int n, int nj, double* q, double* qd, double* refs,
                        double* ext) {
    for (int s = 0; s < nstep; ++s) {
        for (int i = 0; i < n; ++i) {
            for (int j = 0; j < nj; ++j) {
                size_t x = ((size_t)s * (size_t)n + (size_t)i) * (size_t)nj + (size_t)j;
                double tm = s * 2e-3;
                q[x] = 0.3 * sin(2.5 * tm + 0.7 * i + 0.4 * j);
                qd[x] = 0.75 * cos(2.5 * tm + 0.7 * i + 0.4 * j);
                refs[2 * x] = 0.4 * sin(3.0 * tm + i);
                refs[2 * x + 1] = (j == 0) ? 0.2 + 0.05 * i : 0.1;
                ext[x] = 0.05 * cos(tm + i + j);
            }
        }
    }
}

static void test_rollout_equals_steps(void) {
    const asr_model_def* defs[3] = {model("qbmove_advanced"), model("sea_damped"), model("bavs")};
    int modes[3] = {6, 5, 4};
    enum {
        N = 7,
        NJ = 3,
        NSTEP = 60
    };
    tbatch a, b;
    CHECK_ST(tb_create(&a, N, NJ, defs, modes), ASR_OK);
    CHECK_ST(tb_create(&b, N, NJ, defs, modes), ASR_OK);
    if (!a.b || !b.b) return;
    double kp[N], period[N];
    for (int i = 0; i < N; ++i) {
        kp[i] = 50.0 + 30.0 * i;
        period[i] = (i % 3) * 1e-3;
    }
    for (int k = 0; k < 2; ++k) {
        asr_batch* x = k ? b.b : a.b;
        CHECK_ST(asr_batch_set_param(x, 0, ASR_P_KP, kp, N, NULL), ASR_OK);
        CHECK_ST(asr_batch_set_param(x, 1, ASR_P_CTRL_PERIOD, period, N, NULL), ASR_OK);
    }
    size_t per = (size_t)N * NJ;
    double* q = (double*)malloc(NSTEP * per * sizeof(double));
    double* qd = (double*)malloc(NSTEP * per * sizeof(double));
    double* refs = (double*)malloc(NSTEP * per * 2 * sizeof(double));
    double* ext = (double*)malloc(NSTEP * per * sizeof(double));
    int rf[ASR_NFIELD];
    for (int k = 0; k < ASR_NFIELD; ++k) rf[k] = k;
    double* rec = (double*)malloc((size_t)NSTEP * ASR_NFIELD * per * sizeof(double));
    double* mine = (double*)malloc((size_t)NSTEP * ASR_NFIELD * per * sizeof(double));
    if (!q || !qd || !refs || !ext || !rec || !mine) {
        CHECK(!"out of memory");
        return;
    }
    fill_inputs(NSTEP, N, NJ, q, qd, refs, ext);
    for (int s = 0; s < NSTEP; ++s) {
        CHECK_ST(asr_batch_step(a.b, 2e-3, q + s * per, qd + s * per, refs + 2 * s * per,
                                ext + s * per, NULL),
                 ASR_OK);
        for (int k = 0; k < ASR_NFIELD; ++k) {
            for (size_t x = 0; x < per; ++x) {
                size_t i = x / NJ, j = x % NJ; /* record: (field, instance, step, joint) */
                mine[(((size_t)k * N + i) * NSTEP + (size_t)s) * NJ + j] =
                    a.state[x * ASR_NFIELD + (size_t)k];
            }
        }
    }
    /* the step-major inputs as series: instance stride one row, step stride one frame */
    long long lp = (long long)per;
    CHECK_ST(asr_batch_rollout(b.b, NSTEP, 2e-3, S(q, NJ, lp), S(qd, NJ, lp),
                               S(refs, 2 * NJ, 2 * lp), S(ext, NJ, lp), ASR_NFIELD, rf, rec),
             ASR_OK);
    CHECK(memcmp(a.state, b.state, per * ASR_NFIELD * sizeof(double)) == 0);
    CHECK(memcmp(rec, mine, (size_t)NSTEP * ASR_NFIELD * per * sizeof(double)) == 0);
    CHECK(asr_batch_step_count(a.b) == NSTEP && asr_batch_step_count(b.b) == NSTEP);
    CHECK(tb_running_finite(&a));
    /* held inputs (stride 0) equal the same array passed every step */
    CHECK_ST(asr_batch_reset(a.b, NULL, NULL), ASR_OK);
    CHECK_ST(asr_batch_reset(b.b, NULL, NULL), ASR_OK);
    for (int s = 0; s < 10; ++s) {
        CHECK_ST(asr_batch_step(a.b, 2e-3, q, qd, refs, NULL, NULL), ASR_OK);
    }
    CHECK_ST(asr_batch_rollout(b.b, 10, 2e-3, S(q, NJ, 0), S(qd, NJ, 0), S(refs, 2 * NJ, 0),
                               S(NULL, 0, 0), 0, NULL, NULL),
             ASR_OK);
    CHECK(memcmp(a.state, b.state, per * ASR_NFIELD * sizeof(double)) == 0);
    free(q);
    free(qd);
    free(refs);
    free(ext);
    free(rec);
    free(mine);
    tb_free(&a);
    tb_free(&b);
}

/* ---------------------------------------------------------------- threads */

/* The sea model, counting the distinct threads that evaluate it. */
static atomic_int threads_seen;
static _Thread_local int this_thread_counted;

static int counting_sea(void* user, const double* p, const asr_elastic_in* in,
                        asr_elastic_out* out) {
    (void)user;
    if (!this_thread_counted) {
        this_thread_counted = 1;
        atomic_fetch_add(&threads_seen, 1);
    }
    return model("sea")->elastic(NULL, p, in, out);
}

static void test_threads_bit_identical(void) {
    /* 5000 instances x 2 joints: well above 1024 joint-steps per thread for 2 threads */
    asr_model_def counting = *model("sea");
    counting.elastic = counting_sea;
    const asr_model_def* defs[2] = {model("qbmove_advanced"), &counting};
    int modes[2] = {6, 5};
    enum {
        N = 5000,
        NJ = 2,
        NSTEP = 10
    };
    tbatch t[2];
    size_t per = (size_t)N * NJ;
    double* q = (double*)malloc(NSTEP * per * sizeof(double));
    double* qd = (double*)malloc(NSTEP * per * sizeof(double));
    double* refs = (double*)malloc(NSTEP * per * 2 * sizeof(double));
    double* ext = (double*)malloc(NSTEP * per * sizeof(double));
    double* kp = (double*)malloc(N * sizeof(double));
    double* rec[2];
    int rf[3] = {ASR_F_TAU_JOINT, ASR_F_TH1, ASR_F_CMD1};
    rec[0] = (double*)malloc(NSTEP * 3 * per * sizeof(double));
    rec[1] = (double*)malloc(NSTEP * 3 * per * sizeof(double));
    if (!q || !qd || !refs || !ext || !kp || !rec[0] || !rec[1]) {
        CHECK(!"out of memory");
        return;
    }
    fill_inputs(NSTEP, N, NJ, q, qd, refs, ext);
    for (int i = 0; i < N; ++i) kp[i] = 60.0 + 0.05 * i;
    for (int k = 0; k < 2; ++k) {
        CHECK_ST(tb_create(&t[k], N, NJ, defs, modes), ASR_OK);
        CHECK_ST(asr_batch_set_threads(t[k].b, k + 1), ASR_OK);
        /* the first step: how many threads ran the model (the main thread counts itself once
         * per process, so reset its flag too) */
        atomic_store(&threads_seen, 0);
        this_thread_counted = 0;
        CHECK_ST(asr_batch_step(t[k].b, 2e-3, q, qd, refs, ext, NULL), ASR_OK);
        CHECK(atomic_load(&threads_seen) == k + 1);
        CHECK_ST(asr_batch_reset(t[k].b, NULL, NULL), ASR_OK);
        CHECK_ST(asr_batch_set_param(t[k].b, 0, ASR_P_KP, kp, N, NULL), ASR_OK);
        for (int s = 0; s < NSTEP; ++s) {
            CHECK_ST(asr_batch_step(t[k].b, 2e-3, q + s * per, qd + s * per, refs + 2 * s * per,
                                    ext + s * per, NULL),
                     ASR_OK);
        }
        long long lp = (long long)per;
        CHECK_ST(asr_batch_rollout(t[k].b, NSTEP, 2e-3, S(q, NJ, lp), S(qd, NJ, lp),
                                   S(refs, 2 * NJ, 2 * lp), S(ext, NJ, lp), 3, rf, rec[k]),
                 ASR_OK);
    }
    CHECK(memcmp(t[0].state, t[1].state, per * ASR_NFIELD * sizeof(double)) == 0);
    CHECK(memcmp(rec[0], rec[1], NSTEP * 3 * per * sizeof(double)) == 0);
    CHECK(memcmp(t[0].code, t[1].code, N * sizeof(int)) == 0);
    CHECK(tb_running_finite(&t[0]));
    for (int i = 0; i < N; ++i) {
        if (t[0].code[i]) {
            CHECK(!"an instance stopped in the threads test");
            break;
        }
    }
    /* a non-finite input in the middle of the second thread's range: same freeze in both */
    q[N * NJ - 3] = NAN;
    for (int k = 0; k < 2; ++k) {
        CHECK_ST(asr_batch_step(t[k].b, 2e-3, q, qd, refs, ext, NULL), ASR_ERR_INPUT);
    }
    CHECK(memcmp(t[0].state, t[1].state, per * ASR_NFIELD * sizeof(double)) == 0);
    CHECK(memcmp(t[0].code, t[1].code, N * sizeof(int)) == 0);
    CHECK(memcmp(t[0].step, t[1].step, N * sizeof(long long)) == 0);
    CHECK(t[1].code[N - 2] == ASR_ERR_INPUT && t[1].step[N - 2] == 2 * NSTEP);
    free(q);
    free(qd);
    free(refs);
    free(ext);
    free(kp);
    free(rec[0]);
    free(rec[1]);
    tb_free(&t[0]);
    tb_free(&t[1]);
}

/* Independent batches stepped at once from application threads (each with its own workers),
 * as separate Python objects are: the same records as one after the other. Under
 * ThreadSanitizer this shows that batches share no unsynchronised state (model table,
 * parameter specs). Checks run on the main thread only (check.h's counters are plain). */
enum {
    APP_THREADS = 3,
    APP_N = 1500,
    APP_NJ = 2,
    APP_NSTEP = 12
};

typedef struct app_job {
    const double *q, *qd, *refs, *ext;
    double kp;
    double* rec;
    asr_status st;
} app_job;

static void* app_rollout(void* arg) {
    app_job* job = (app_job*)arg;
    const asr_model_def* defs[APP_NJ] = {model("qbmove_advanced"), model("sea")};
    int modes[APP_NJ] = {6, 5};
    int rf[2] = {ASR_F_TAU_JOINT, ASR_F_TH1};
    long long per = (long long)APP_N * APP_NJ;
    tbatch t;
    job->st = tb_create(&t, APP_N, APP_NJ, defs, modes);
    if (job->st == ASR_OK) job->st = asr_batch_set_threads(t.b, 2);
    if (job->st == ASR_OK) job->st = asr_batch_set_param(t.b, 0, ASR_P_KP, &job->kp, 1, NULL);
    if (job->st == ASR_OK) {
        job->st = asr_batch_rollout(t.b, APP_NSTEP, 2e-3, S(job->q, APP_NJ, per),
                                    S(job->qd, APP_NJ, per), S(job->refs, 2 * APP_NJ, 2 * per),
                                    S(job->ext, APP_NJ, per), 2, rf, job->rec);
    }
    tb_free(&t);
    return NULL;
}

static void test_batches_on_application_threads(void) {
    size_t per = (size_t)APP_N * APP_NJ, nrec = (size_t)APP_NSTEP * 2 * per;
    double* q = (double*)malloc(APP_NSTEP * per * sizeof(double));
    double* qd = (double*)malloc(APP_NSTEP * per * sizeof(double));
    double* refs = (double*)malloc(APP_NSTEP * per * 2 * sizeof(double));
    double* ext = (double*)malloc(APP_NSTEP * per * sizeof(double));
    double* rec = (double*)calloc(2 * APP_THREADS * nrec, sizeof(double));
    if (!q || !qd || !refs || !ext || !rec) {
        CHECK(!"out of memory");
        return;
    }
    fill_inputs(APP_NSTEP, APP_N, APP_NJ, q, qd, refs, ext);
    app_job jobs[2][APP_THREADS];
    for (int pass = 0; pass < 2; ++pass) { /* pass 0: one after the other; pass 1: at once */
        pthread_t th[APP_THREADS];
        int started[APP_THREADS] = {0};
        for (int k = 0; k < APP_THREADS; ++k) {
            app_job job = {q,
                           qd,
                           refs,
                           ext,
                           50.0 + 20.0 * k,
                           rec + (size_t)(pass * APP_THREADS + k) * nrec,
                           ASR_OK};
            jobs[pass][k] = job;
            if (pass == 0) {
                app_rollout(&jobs[pass][k]);
            } else {
                started[k] = pthread_create(&th[k], NULL, app_rollout, &jobs[pass][k]) == 0;
                CHECK(started[k]);
            }
        }
        for (int k = 0; k < APP_THREADS; ++k) {
            if (started[k]) pthread_join(th[k], NULL);
        }
    }
    for (int k = 0; k < APP_THREADS; ++k) {
        CHECK_ST(jobs[0][k].st, ASR_OK);
        CHECK_ST(jobs[1][k].st, ASR_OK);
        CHECK(memcmp(jobs[0][k].rec, jobs[1][k].rec, nrec * sizeof(double)) == 0);
    }
    CHECK(memcmp(jobs[0][0].rec, jobs[0][1].rec, nrec * sizeof(double)) != 0);
    free(q);
    free(qd);
    free(refs);
    free(ext);
    free(rec);
}

/* ---------------------------------------------------------------- main */

int main(void) {
    test_rollout_equals_steps();
    test_threads_bit_identical();
    test_batches_on_application_threads();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
