/* test_core_lanes.c - a plain C test of the held lanes (asr_lanes, core/asr_batch.h), what the
 * MuJoCo plugin steps its actuators with: their arguments (NULL, a bad step length), and a run
 * of asr_lanes_step beside asr_batch_step on a twin batch, bit for bit (states, statuses, step
 * count, returned status), across per-instance parameters, a padded chunk of lanes, parameters
 * changed between steps (the lanes load them again) and an instance stopped mid-run. Prints
 * "N passed, M failed" and returns non-zero on failure.
 *
 * Build (see tests/core/test_c_core.py): gcc -std=c11 -Wall -Wextra -Wpedantic
 * -Wmissing-prototypes -Werror -ffp-contract=off -Icsrc, csrc/ sources plus this file, -lm
 * -lpthread. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core_check.h"

enum {
    N = 6, /* two chunks of four lanes, the second padded */
    NJ = 2,
    NSTEP = 300
};

static void test_lanes_arguments(void) {
    const asr_model_def* defs[1] = {model("sea")};
    int modes[1] = {2};
    tbatch t;
    CHECK_ST(tb_create(&t, 2, 1, defs, modes), ASR_OK);
    if (!t.b) return;
    asr_lanes* lanes = (asr_lanes*)&t; /* overwritten with NULL on failure */
    CHECK_ST(asr_lanes_create(NULL, &lanes), ASR_ERR_NULL);
    CHECK(lanes == NULL);
    CHECK_ST(asr_lanes_create(t.b, NULL), ASR_ERR_NULL);
    double q[2] = {0}, qd[2] = {0}, refs[4] = {0};
    CHECK_ST(asr_lanes_step(NULL, 1e-3, q, qd, refs, NULL, NULL), ASR_ERR_NULL);
    asr_lanes_destroy(NULL);
    CHECK_ST(asr_lanes_create(t.b, &lanes), ASR_OK);
    CHECK(lanes != NULL);
    CHECK_ST(asr_lanes_step(lanes, 1e-3, NULL, qd, refs, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_lanes_step(lanes, 1e-3, q, NULL, refs, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_lanes_step(lanes, 1e-3, q, qd, NULL, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_lanes_step(lanes, 0.0, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_lanes_step(lanes, -1e-3, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_lanes_step(lanes, NAN, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_lanes_step(lanes, INFINITY, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_lanes_step(lanes, 1e4, q, qd, refs, NULL, NULL), ASR_ERR_RANGE); /* substeps */
    CHECK(asr_batch_step_count(t.b) == 0);
    CHECK_ST(asr_lanes_step(lanes, 1e-3, q, qd, refs, NULL, NULL), ASR_OK);
    CHECK(asr_batch_step_count(t.b) == 1);
    asr_lanes_destroy(lanes);
    tb_free(&t);
}

/* The twins' states, statuses and step counts the same, bit for bit. */
static int twins_equal(const tbatch* a, const tbatch* b) {
    size_t nrec = (size_t)a->n * (size_t)a->nj * ASR_NFIELD;
    return memcmp(a->state, b->state, nrec * sizeof(double)) == 0 &&
           memcmp(a->code, b->code, (size_t)a->n * sizeof(int)) == 0 &&
           memcmp(a->joint, b->joint, (size_t)a->n * sizeof(int)) == 0 &&
           memcmp(a->step, b->step, (size_t)a->n * sizeof(long long)) == 0 &&
           asr_batch_step_count(a->b) == asr_batch_step_count(b->b);
}

/* Parameter k of joint j, one value per instance, into both twins. */
static void set_both(tbatch* const t[2], int j, int k, const double* values, int count) {
    for (int w = 0; w < 2; ++w) {
        CHECK_ST(asr_batch_set_param(t[w]->b, j, k, values, count, NULL), ASR_OK);
    }
}

static void test_lanes_step_as_batch_step(void) {
    const asr_model_def* defs[NJ] = {model("sea"), model("qbmove_advanced")};
    int modes[NJ] = {2, 6};
    tbatch ta, tb;
    CHECK_ST(tb_create(&ta, N, NJ, defs, modes), ASR_OK);
    CHECK_ST(tb_create(&tb, N, NJ, defs, modes), ASR_OK);
    if (!ta.b || !tb.b) return;
    tbatch* const twins[2] = {&ta, &tb};
    double kp[N], motor_j[N], link_vel_max[N];
    for (int i = 0; i < N; ++i) {
        kp[i] = 50.0 + 20.0 * i;
        motor_j[i] = 0.01 + 0.005 * i;
        link_vel_max[i] = i == 4 ? 50.0 : 1e4;
    }
    set_both(twins, 0, ASR_P_KP, kp, N);
    set_both(twins, 1, ASR_P_KP, kp, N);
    set_both(twins, 0, ASR_P_LINK_VEL_MAX, link_vel_max, N);
    double q[N * NJ], qd[N * NJ], refs[N * NJ * 2], ext[N * NJ], tff[N * NJ];
    for (int x = 0; x < N * NJ; ++x) {
        q[x] = 0.05 * x;
        refs[2 * x] = 0.1 * x;
        refs[2 * x + 1] = 0.3;
    }
    for (int w = 0; w < 2; ++w) CHECK_ST(asr_batch_reset(twins[w]->b, q, refs), ASR_OK);
    asr_lanes* lanes = NULL;
    CHECK_ST(asr_lanes_create(tb.b, &lanes), ASR_OK);
    if (!lanes) return;
    int same = 1, stopped = 0;
    for (int t = 0; t < NSTEP; ++t) {
        if (t == 100) { /* new parameters: the lanes load them again */
            set_both(twins, 0, ASR_P_MOTOR_J, motor_j, N);
            double friction = 0.05;
            set_both(twins, 1, ASR_P_FRICTION, &friction, 1);
        }
        for (int x = 0; x < N * NJ; ++x) {
            q[x] = 0.3 * sin(0.01 * t + 0.2 * x);
            qd[x] = 3.0 * cos(0.01 * t + 0.2 * x);
            refs[2 * x] = 0.5 * sin(0.02 * t + x);
            ext[x] = 0.1 * cos(0.03 * t);
            tff[x] = 0.01 * x;
        }
        if (t == 200) qd[4 * NJ] = 1e3; /* instance 4 runs past its link speed bound */
        asr_status sa = asr_batch_step(ta.b, 1e-3, q, qd, refs, ext, tff);
        asr_status sb = asr_lanes_step(lanes, 1e-3, q, qd, refs, ext, tff);
        same = same && sa == sb && twins_equal(&ta, &tb);
        stopped = stopped || sa == ASR_ERR_DIVERGED;
    }
    CHECK(same);
    CHECK(stopped && ta.code[4] == ASR_ERR_DIVERGED && ta.step[4] == 200);
    CHECK(asr_batch_step_count(tb.b) == NSTEP);
    CHECK(tb_running_finite(&tb));
    asr_lanes_destroy(lanes);
    tb_free(&ta);
    tb_free(&tb);
}

int main(void) {
    test_lanes_arguments();
    test_lanes_step_as_batch_step();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
