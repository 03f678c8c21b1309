/* test_core_batch.c - a plain C test of asr's batch API (asr.h), no framework: every
 * function with NULL pointers and out-of-range arguments; batches of several models created,
 * configured, stepped, rolled out, reset and destroyed; user models' callbacks failing, out of
 * range or non-finite; huge finite inputs. Prints "N passed, M failed" and returns non-zero on
 * failure.
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

/* ---------------------------------------------------------------- batch API */

/* User models (C function pointers) for the callback paths. */
static int elastic_fails(void* user, const double* p, const asr_elastic_in* in,
                         asr_elastic_out* out) {
    (void)user;
    (void)p;
    (void)in;
    memset(out, 0, sizeof *out);
    return 42;
}

static int elastic_range(void* user, const double* p, const asr_elastic_in* in,
                         asr_elastic_out* out) {
    (void)user;
    (void)p;
    memset(out, 0, sizeof *out);
    return in->q > 0.5 ? ASR_ERR_RANGE : 0;
}

static int elastic_nan(void* user, const double* p, const asr_elastic_in* in,
                       asr_elastic_out* out) {
    (void)user;
    (void)p;
    memset(out, 0, sizeof *out);
    out->tau1 = in->q > 0.5 ? NAN : -(in->q - in->th1);
    out->stiffness = 1.0;
    out->kload1 = 1.0;
    out->load1 = -out->tau1;
    return 0;
}

static void test_batch_create_errors(void) {
    const asr_model_def* defs[2] = {model("sea"), model("bavs")};
    int modes[2] = {5, 3};
    double state[2 * 2 * ASR_NFIELD];
    int code[2], joint[2];
    long long step[2];
    asr_status_arrays s = {code, joint, step};
    asr_batch* b = NULL;
    asr_status_arrays s_null;

    CHECK_ST(asr_batch_create(NULL, 2, 2, defs, modes, state, s), ASR_ERR_NULL);
    CHECK_ST(asr_batch_create(&b, 2, 2, NULL, modes, state, s), ASR_ERR_NULL);
    CHECK_ST(asr_batch_create(&b, 2, 2, defs, NULL, state, s), ASR_ERR_NULL);
    CHECK_ST(asr_batch_create(&b, 2, 2, defs, modes, NULL, s), ASR_ERR_NULL);
    s_null = s;
    s_null.code = NULL;
    CHECK_ST(asr_batch_create(&b, 2, 2, defs, modes, state, s_null), ASR_ERR_NULL);
    s_null = s;
    s_null.joint = NULL;
    CHECK_ST(asr_batch_create(&b, 2, 2, defs, modes, state, s_null), ASR_ERR_NULL);
    s_null = s;
    s_null.step = NULL;
    CHECK_ST(asr_batch_create(&b, 2, 2, defs, modes, state, s_null), ASR_ERR_NULL);

    int dummy;
    b = (asr_batch*)(void*)&dummy; /* must be set to NULL on failure */
    CHECK_ST(asr_batch_create(&b, 0, 2, defs, modes, state, s), ASR_ERR_RANGE);
    CHECK(b == NULL);
    CHECK_ST(asr_batch_create(&b, -1, 2, defs, modes, state, s), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_create(&b, 2, 0, defs, modes, state, s), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_create(&b, 2, -5, defs, modes, state, s), ASR_ERR_RANGE);
    int bad_modes[2] = {7, 3};
    CHECK_ST(asr_batch_create(&b, 2, 2, defs, bad_modes, state, s), ASR_ERR_RANGE);
    bad_modes[0] = -1;
    CHECK_ST(asr_batch_create(&b, 2, 2, defs, bad_modes, state, s), ASR_ERR_RANGE);
    const asr_model_def* rigid_defs[1] = {model("rigid")};
    int mode2[1] = {2};
    CHECK_ST(asr_batch_create(&b, 2, 1, rigid_defs, mode2, state, s), ASR_ERR_MODEL);
    mode2[0] = 6;
    CHECK_ST(asr_batch_create(&b, 2, 1, rigid_defs, mode2, state, s), ASR_ERR_MODEL);
    const asr_model_def* null_defs[2] = {model("sea"), NULL};
    CHECK_ST(asr_batch_create(&b, 2, 2, null_defs, modes, state, s), ASR_ERR_NULL);

    /* malformed user model definitions */
    asr_model_def d = *model("sea");
    const asr_model_def* ud[1] = {&d};
    int m5[1] = {5};
    d.elastic = NULL;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_NULL);
    d = *model("sea");
    d.refmap = NULL;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_NULL);
    d = *model("sea");
    d.params = NULL;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_NULL);
    d = *model("sea");
    d.nparam = -1;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_RANGE);
    d = *model("sea");
    d.nparam = 1000;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_RANGE);
    d = *model("sea");
    d.nmotor = 3;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_MODEL);
    d = *model("sea");
    d.nmotor = -1;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_MODEL);
    d = *model("sea");
    d.ndefault = 1;
    d.defaults = NULL;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_MODEL);
    asr_param_default bad_default = {ASR_NCOMMON, 1.0};
    d = *model("sea");
    d.ndefault = 1;
    d.defaults = &bad_default;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_PARAM);
    bad_default.k = -1;
    CHECK_ST(asr_batch_create(&b, 1, 1, ud, m5, state, s), ASR_ERR_PARAM);

    /* functions taking a batch, with a NULL batch */
    double v = 1.0, out[2];
    int bad_index = -7;
    CHECK(asr_batch_nparam(NULL, 0) == -1);
    CHECK_ST(asr_batch_set_param(NULL, 0, 0, &v, 1, &bad_index), ASR_ERR_NULL);
    CHECK_ST(asr_batch_get_param(NULL, 0, 0, out), ASR_ERR_NULL);
    CHECK_ST(asr_batch_set_mode(NULL, 0, 5), ASR_ERR_NULL);
    CHECK_ST(asr_batch_set_max_substep(NULL, 1e-3), ASR_ERR_NULL);
    CHECK_ST(asr_batch_set_threads(NULL, 2), ASR_ERR_NULL);
    CHECK_ST(asr_batch_set_motor_scheme(NULL, ASR_MOTOR_EULER), ASR_ERR_NULL);
    CHECK_ST(asr_batch_reset(NULL, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_batch_step(NULL, 1e-3, out, out, out, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(NULL, 1, 1e-3, S(out, 0, 0), S(out, 0, 0), S(out, 0, 0),
                               S(NULL, 0, 0), 0, NULL, NULL),
             ASR_ERR_NULL);
    CHECK(asr_batch_step_count(NULL) == -1);
    asr_batch_destroy(NULL); /* no crash */
}

static void test_batch_api(void) {
    const asr_model_def* defs[3] = {model("sea"), model("qbmove_advanced"), model("awas2")};
    int modes[3] = {2, 6, 3};
    tbatch t;
    const int n = 3, nj = 3;
    CHECK_ST(tb_create(&t, n, nj, defs, modes), ASR_OK);
    if (!t.b) return;
    asr_batch* b = t.b;
    CHECK(asr_batch_step_count(b) == 0);
    for (int i = 0; i < n; ++i) CHECK(t.code[i] == 0 && t.joint[i] == -1 && t.step[i] == -1);

    /* nparam */
    CHECK(asr_batch_nparam(b, 0) == ASR_NCOMMON + 2);
    CHECK(asr_batch_nparam(b, 1) == ASR_NCOMMON + 6);
    CHECK(asr_batch_nparam(b, 2) == ASR_NCOMMON + 4);
    CHECK(asr_batch_nparam(b, -1) == -1);
    CHECK(asr_batch_nparam(b, nj) == -1);

    /* defaults */
    double got[3];
    CHECK_ST(asr_batch_get_param(b, 0, ASR_NCOMMON + 0, got), ASR_OK);
    CHECK(got[0] == 10.0 && got[1] == 10.0 && got[2] == 10.0);
    CHECK_ST(asr_batch_get_param(b, 1, ASR_P_KP, got), ASR_OK);
    CHECK(got[0] == 125.0 && got[2] == 125.0);

    /* set_param errors */
    double vals[4] = {200.0, 300.0, 400.0, 500.0};
    int bad = -7;
    CHECK_ST(asr_batch_set_param(b, -1, 0, vals, 1, &bad), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_param(b, nj, 0, vals, 1, &bad), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_param(b, 0, -1, vals, 1, &bad), ASR_ERR_PARAM);
    CHECK_ST(asr_batch_set_param(b, 0, ASR_NCOMMON + 2, vals, 1, &bad), ASR_ERR_PARAM);
    CHECK_ST(asr_batch_set_param(b, 0, 0, NULL, 1, &bad), ASR_ERR_NULL);
    CHECK_ST(asr_batch_set_param(b, 0, 0, vals, 0, &bad), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_param(b, 0, 0, vals, 2, &bad), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_param(b, 0, 0, vals, 4, &bad), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_param(b, 0, 0, vals, -1, &bad), ASR_ERR_RANGE);
    CHECK(bad == -7); /* no value was at fault */
    double kvals[3] = {200.0, -1.0, NAN};
    CHECK_ST(asr_batch_set_param(b, 0, ASR_NCOMMON + 0, kvals, 3, &bad), ASR_ERR_RANGE);
    CHECK(bad == 1);
    kvals[1] = 5.0;
    CHECK_ST(asr_batch_set_param(b, 0, ASR_NCOMMON + 0, kvals, 3, &bad), ASR_ERR_RANGE);
    CHECK(bad == 2);
    CHECK_ST(asr_batch_set_param(b, 0, ASR_NCOMMON + 0, kvals, 3, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_get_param(b, 0, ASR_NCOMMON + 0, got), ASR_OK);
    CHECK(got[0] == 10.0 && got[1] == 10.0 && got[2] == 10.0); /* nothing changed */
    double half = 0.5, zero = 0.0, neg = -2.0;
    CHECK_ST(asr_batch_set_param(b, 0, ASR_P_DRIVE, &half, 1, &bad), ASR_ERR_RANGE);
    CHECK(bad == 0);
    CHECK_ST(asr_batch_set_param(b, 0, ASR_P_MOTOR_J, &zero, 1, &bad), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_param(b, 0, ASR_P_MOTOR_J, &neg, 1, &bad), ASR_ERR_RANGE);
    double big_def = 1.0; /* awas2 max_def <= pi/4 */
    CHECK_ST(asr_batch_set_param(b, 2, ASR_NCOMMON + 3, &big_def, 1, &bad), ASR_ERR_RANGE);

    /* set_param round trip: per instance, then shared again */
    CHECK_ST(asr_batch_set_param(b, 0, ASR_NCOMMON + 0, vals, 3, &bad), ASR_OK);
    CHECK_ST(asr_batch_get_param(b, 0, ASR_NCOMMON + 0, got), ASR_OK);
    CHECK(got[0] == 200.0 && got[1] == 300.0 && got[2] == 400.0);
    CHECK_ST(asr_batch_set_param(b, 0, ASR_NCOMMON + 0, vals, 1, &bad), ASR_OK);
    CHECK_ST(asr_batch_get_param(b, 0, ASR_NCOMMON + 0, got), ASR_OK);
    CHECK(got[0] == 200.0 && got[1] == 200.0 && got[2] == 200.0);
    CHECK_ST(asr_batch_get_param(b, -1, 0, got), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_get_param(b, nj, 0, got), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_get_param(b, 0, 99, got), ASR_ERR_PARAM);
    CHECK_ST(asr_batch_get_param(b, 0, -1, got), ASR_ERR_PARAM);
    CHECK_ST(asr_batch_get_param(b, 0, 0, NULL), ASR_ERR_NULL);

    /* set_mode */
    CHECK_ST(asr_batch_set_mode(b, -1, 5), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_mode(b, nj, 5), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_mode(b, 0, 7), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_mode(b, 0, -1), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_mode(b, 0, 5), ASR_OK);
    CHECK_ST(asr_batch_set_mode(b, 0, 2), ASR_OK);

    /* max_substep and threads */
    CHECK_ST(asr_batch_set_max_substep(b, 0.0), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_max_substep(b, -1e-3), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_max_substep(b, NAN), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_max_substep(b, HUGE_VAL), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_max_substep(b, 1e-3), ASR_OK);
    CHECK_ST(asr_batch_set_motor_scheme(b, -1), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_motor_scheme(b, 2), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_motor_scheme(b, ASR_MOTOR_TRAPEZOID), ASR_OK);
    CHECK_ST(asr_batch_set_motor_scheme(b, ASR_MOTOR_EULER), ASR_OK);
    CHECK_ST(asr_batch_set_threads(b, 0), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_threads(b, -3), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_threads(b, 1025), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_set_threads(b, 4), ASR_OK);
    CHECK_ST(asr_batch_set_threads(b, 1), ASR_OK);

    /* step: argument errors change nothing */
    double q[9] = {0.1, 0.0, 0.0, 0.1, 0.0, 0.0, 0.1, 0.0, 0.0};
    double qd[9] = {0};
    double refs[18] = {0};
    double ext[9] = {1.5, 0, 0, 1.5, 0, 0, 1.5, 0, 0};
    for (int i = 0; i < n; ++i) {
        refs[2 * (i * nj + 1) + 1] = 0.3;  /* qbmove preset */
        refs[2 * (i * nj + 2) + 1] = 0.02; /* awas2 pivot */
    }
    CHECK_ST(asr_batch_step(b, 0.0, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_step(b, -1e-3, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_step(b, NAN, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_step(b, HUGE_VAL, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_step(b, 1e-3, NULL, qd, refs, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_batch_step(b, 1e-3, q, NULL, refs, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_batch_step(b, 1e-3, q, qd, NULL, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_batch_set_max_substep(b, 1e-9), ASR_OK);
    CHECK_ST(asr_batch_step(b, 1.0, q, qd, refs, NULL, NULL), ASR_ERR_RANGE); /* 1e9 sub-steps */
    CHECK_ST(asr_batch_set_max_substep(b, 1e-3), ASR_OK);
    CHECK(asr_batch_step_count(b) == 0);

    /* a real step: sea mode 2, motor at 0, k = 200, q = 0.1: tau_link = -20 */
    CHECK_ST(asr_batch_step(b, 1e-3, q, qd, refs, ext, NULL), ASR_OK);
    CHECK(asr_batch_step_count(b) == 1);
    for (int i = 0; i < n; ++i) {
        CHECK(close_to(*field(&t, i, 0, ASR_F_TAU_LINK), -20.0, 1e-14, 0));
        CHECK(close_to(*field(&t, i, 0, ASR_F_TAU_JOINT), -18.5, 1e-14, 0));
        CHECK(*field(&t, i, 0, ASR_F_TAU_EXT) == 1.5 && *field(&t, i, 0, ASR_F_Q) == 0.1);
        CHECK(*field(&t, i, 2, ASR_F_TH2) == 0.02); /* awas2 pivot as a kinematic input */
        CHECK(t.code[i] == 0);
    }
    CHECK(tb_running_finite(&t));

    /* a non-finite input freezes exactly that instance, at this step, for that joint */
    q[1 * nj + 2] = NAN;
    CHECK_ST(asr_batch_step(b, 1e-3, q, qd, refs, ext, NULL), ASR_ERR_INPUT);
    CHECK(t.code[0] == 0 && t.code[1] == ASR_ERR_INPUT && t.code[2] == 0);
    CHECK(t.joint[1] == 2 && t.step[1] == 1);
    for (int j = 0; j < nj; ++j) {
        CHECK(*field(&t, 1, j, ASR_F_TAU_JOINT) == 0.0 && *field(&t, 1, j, ASR_F_TAU_LINK) == 0.0);
    }
    q[1 * nj + 2] = 0.0;
    /* the frozen instance is not reported again; the others keep going */
    CHECK_ST(asr_batch_step(b, 1e-3, q, qd, refs, ext, NULL), ASR_OK);
    CHECK(t.code[1] == ASR_ERR_INPUT && t.step[1] == 1);
    CHECK(close_to(*field(&t, 2, 0, ASR_F_TAU_JOINT), -18.5, 1e-14, 0));
    CHECK(asr_batch_step_count(b) == 3);
    double bad_ff[9] = {0};
    bad_ff[0] = HUGE_VAL; /* a non-finite feed-forward torque is an input too */
    CHECK_ST(asr_batch_step(b, 1e-3, q, qd, refs, ext, bad_ff), ASR_ERR_INPUT);
    CHECK(t.code[0] == ASR_ERR_INPUT && t.joint[0] == 0);

    /* reset: clears statuses and the state, puts the motors where refs0 say */
    double q0[9] = {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2};
    q0[4] = NAN;
    CHECK_ST(asr_batch_reset(b, q0, NULL), ASR_ERR_INPUT);
    q0[4] = 0.2;
    double refs0[18];
    memcpy(refs0, refs, sizeof refs0);
    refs0[2 * (0 * nj + 2) + 1] = 0.05; /* awas2 pivot = L */
    CHECK_ST(asr_batch_reset(b, q0, refs0), ASR_ERR_RANGE);
    refs0[2 * (0 * nj + 2) + 1] = 0.02;
    refs0[2 * (2 * nj + 1) + 0] = NAN;
    CHECK_ST(asr_batch_reset(b, q0, refs0), ASR_ERR_INPUT);
    refs0[2 * (2 * nj + 1) + 0] = 0.1;
    CHECK_ST(asr_batch_reset(b, q0, refs0), ASR_OK);
    CHECK(asr_batch_step_count(b) == 0);
    for (int i = 0; i < n; ++i) {
        CHECK(t.code[i] == 0 && t.joint[i] == -1 && t.step[i] == -1);
        CHECK(*field(&t, i, 0, ASR_F_Q) == 0.2 && *field(&t, i, 0, ASR_F_TAU_JOINT) == 0.0);
        CHECK(*field(&t, i, 2, ASR_F_TH2) == 0.02);
    }
    /* qbmove_advanced in mode 6: th = eq +/- preset */
    CHECK(*field(&t, 2, 1, ASR_F_TH1) == 0.1 + 0.3 && *field(&t, 2, 1, ASR_F_TH2) == 0.1 - 0.3);
    CHECK_ST(asr_batch_reset(b, NULL, NULL), ASR_OK);
    CHECK(*field(&t, 0, 0, ASR_F_Q) == 0.0);

    /* reset of some instances: the others and the step count untouched */
    CHECK_ST(asr_batch_step(b, 1e-3, q, qd, refs, NULL, NULL), ASR_OK);
    double keep0 = *field(&t, 0, 1, ASR_F_TH1), keep2 = *field(&t, 2, 1, ASR_F_TH1);
    int only1[1] = {1}, bad_idx[1] = {n};
    CHECK_ST(asr_batch_reset_instances(NULL, 1, only1, q0, refs0), ASR_ERR_NULL);
    CHECK_ST(asr_batch_reset_instances(b, 1, NULL, q0, refs0), ASR_ERR_NULL);
    CHECK_ST(asr_batch_reset_instances(b, -1, only1, q0, refs0), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_reset_instances(b, 1, bad_idx, q0, refs0), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_reset_instances(b, 0, NULL, q0, refs0), ASR_OK);
    CHECK_ST(asr_batch_reset_instances(b, 1, only1, q0, refs0), ASR_OK);
    CHECK(asr_batch_step_count(b) == 1);
    CHECK(*field(&t, 0, 1, ASR_F_TH1) == keep0 && *field(&t, 2, 1, ASR_F_TH1) == keep2);
    CHECK(*field(&t, 1, 0, ASR_F_Q) == 0.2 && *field(&t, 1, 0, ASR_F_TAU_JOINT) == 0.0);
    CHECK(*field(&t, 0, 0, ASR_F_Q) != 0.2);
    CHECK_ST(asr_batch_reset(b, NULL, NULL), ASR_OK);

    /* rollout argument errors */
    int rec_fields[2] = {ASR_F_TAU_JOINT, ASR_F_TH1};
    double rec[2 * 2 * 9];
    asr_series sq = S(q, nj, 0), sqd = S(qd, nj, 0), sr = S(refs, 2 * nj, 0), none = S(NULL, 0, 0);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, none, sqd, sr, none, 2, rec_fields, rec), ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, none, sr, none, 2, rec_fields, rec), ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, none, none, 2, rec_fields, rec), ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, NULL, rec), ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, rec_fields, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, -1, 1e-3, sq, sqd, sr, none, 2, rec_fields, rec), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 0.0, sq, sqd, sr, none, 2, rec_fields, rec), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, NAN, sq, sqd, sr, none, 2, rec_fields, rec), ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, S(q, nj, -9), sqd, sr, none, 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, S(refs, -18, 0), none, 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, S(ext, -9, 0), 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, -1, rec_fields, rec), ASR_ERR_RANGE);
    int bad_fields[2] = {ASR_F_TH1, ASR_NFIELD};
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, bad_fields, rec), ASR_ERR_RANGE);
    bad_fields[1] = -1;
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, bad_fields, rec), ASR_ERR_RANGE);
    CHECK(asr_batch_step_count(b) == 0);
    CHECK_ST(asr_batch_rollout(b, 0, 1e-3, sq, sqd, sr, none, 0, NULL, NULL), ASR_OK);
    CHECK(asr_batch_step_count(b) == 0);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, S(ext, nj, 0), 2, rec_fields, rec), ASR_OK);
    CHECK(asr_batch_step_count(b) == 2);
    /* record layout: ((r * n_inst + i) * nstep + t) * n_joint + j */
    CHECK(close_to(rec[((0 * n + 1) * 2 + 1) * nj + 0], -18.5, 1e-14, 0));
    CHECK(rec[((1 * n + 2) * 2 + 1) * nj + 1] == *field(&t, 2, 1, ASR_F_TH1));
    tb_free(&t);
}

static void test_user_model_callbacks(void) {
    asr_model_def d = *model("sea");
    d.name = "user";
    d.nparam = 0;
    d.params = NULL;
    d.ndefault = 0;
    d.defaults = NULL;
    const asr_model_def* defs[1] = {&d};
    int modes[1] = {5};
    double q[3] = {0.0, 0.6, 0.1}, qd[3] = {0}, refs[6] = {0};

    d.elastic = elastic_fails;
    tbatch t;
    CHECK_ST(tb_create(&t, 3, 1, defs, modes), ASR_OK);
    CHECK_ST(asr_batch_step(t.b, 1e-3, q, qd, refs, NULL, NULL), ASR_ERR_CALLBACK);
    CHECK(t.code[0] == ASR_ERR_CALLBACK && t.code[1] == ASR_ERR_CALLBACK && t.step[2] == 0);
    tb_free(&t);

    d.elastic = elastic_range;
    CHECK_ST(tb_create(&t, 3, 1, defs, modes), ASR_OK);
    CHECK_ST(asr_batch_step(t.b, 1e-3, q, qd, refs, NULL, NULL), ASR_ERR_RANGE);
    CHECK(t.code[0] == 0 && t.code[1] == ASR_ERR_RANGE && t.code[2] == 0 && t.joint[1] == 0);
    tb_free(&t);

    d.elastic = elastic_nan;
    CHECK_ST(tb_create(&t, 3, 1, defs, modes), ASR_OK);
    CHECK_ST(asr_batch_step(t.b, 1e-3, q, qd, refs, NULL, NULL), ASR_ERR_NONFINITE);
    CHECK(t.code[0] == 0 && t.code[1] == ASR_ERR_NONFINITE && t.code[2] == 0);
    CHECK(*field(&t, 1, 0, ASR_F_TAU_JOINT) == 0.0);
    CHECK(close_to(*field(&t, 2, 0, ASR_F_TAU_JOINT), -0.1, 1e-14, 0));
    CHECK(tb_running_finite(&t));
    tb_free(&t);
}

/* Finite inputs are not "non-finite inputs", however large: a rigid joint in mode 0 applies
 * ref1 whatever the link state (asr.h: ASR_ERR_INPUT is NaN or inf in an input), once the
 * link speed bound is off; with it, the huge speed is a divergence. */
static void test_huge_finite_inputs(void) {
    const asr_model_def* defs[1] = {model("rigid")};
    int modes[1] = {0};
    tbatch t;
    CHECK_ST(tb_create(&t, 2, 1, defs, modes), ASR_OK);
    if (!t.b) return;
    double q[2] = {0.0, 1.7976931348623157e308}, qd[2] = {0.0, 1.7976931348623157e308};
    double refs[4] = {1.0, 0.0, 1.0, 0.0};
    CHECK_ST(asr_batch_step(t.b, 1e-3, q, qd, refs, NULL, NULL), ASR_ERR_DIVERGED);
    CHECK(t.code[0] == ASR_OK && t.code[1] == ASR_ERR_DIVERGED);
    double off = HUGE_VAL;
    CHECK_ST(asr_batch_set_param(t.b, 0, ASR_P_LINK_VEL_MAX, &off, 1, NULL), ASR_OK);
    CHECK_ST(asr_batch_reset(t.b, NULL, NULL), ASR_OK);
    CHECK_ST(asr_batch_step(t.b, 1e-3, q, qd, refs, NULL, NULL), ASR_OK);
    CHECK(t.code[0] == ASR_OK && t.code[1] == ASR_OK);
    CHECK(*field(&t, 1, 0, ASR_F_TAU_JOINT) == 1.0);
    tb_free(&t);
}

/* ---------------------------------------------------------------- main */

int main(void) {
    test_batch_create_errors();
    test_batch_api();
    test_user_model_callbacks();
    test_huge_finite_inputs();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
