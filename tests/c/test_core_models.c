/* test_core_models.c - a plain C test of asr's public C API (asr.h), no framework: the
 * model table, parameter specs and fields, the built-in compliance models against hand-computed
 * closed forms (NULL pointers and out-of-range arguments too), the reference maps and the
 * reporting of non-finite outputs. Prints "N passed, M failed" and returns non-zero on failure.
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

/* ---------------------------------------------------------------- model table, specs, fields */

static void test_model_table(void) {
    static const char* names[] = {"rigid",           "sea",   "sea_damped", "awas2", "bavs",
                                  "qbmove_advanced", "qbmove"};
    CHECK(asr_model_count() == 7);
    for (int m = 0; m < 7; ++m) {
        const asr_model_def* d = asr_model_get(m);
        CHECK(d != NULL);
        if (!d) continue;
        CHECK(strcmp(d->name, names[m]) == 0);
        CHECK(asr_model_find(names[m]) == m);
        CHECK(d->elastic != NULL && d->refmap != NULL);
        CHECK(d->nmotor >= 0 && d->nmotor <= 2);
        for (int p = 0; p < d->nparam; ++p) {
            CHECK(asr_param_valid(&d->params[p], d->params[p].def) == 1);
        }
        for (int k = 0; k < ASR_NCOMMON; ++k) {
            CHECK(asr_param_valid(asr_common_param_spec(k), asr_common_param_default(d, k)));
        }
    }
    CHECK(asr_model_get(-1) == NULL);
    CHECK(asr_model_get(7) == NULL);
    CHECK(asr_model_get(1 << 30) == NULL);
    CHECK(asr_model_find(NULL) == -1);
    CHECK(asr_model_find("") == -1);
    CHECK(asr_model_find("SEA") == -1);
    CHECK(asr_model_find("qbmove_advancedx") == -1);
    CHECK(strcmp(asr_model_get(0)->name, "rigid") == 0 && asr_model_get(0)->nmotor == 0);
    CHECK(model("awas2")->kinematic_th2 == 1);
    CHECK(model("qbmove")->nmotor == 2);

    for (int k = 0; k < ASR_NCOMMON; ++k) {
        const asr_param_spec* s = asr_common_param_spec(k);
        CHECK(s != NULL && s->name != NULL && s->unit != NULL && s->group != NULL);
        if (s) CHECK(asr_common_param_default(NULL, k) == s->def || isnan(s->def));
    }
    CHECK(asr_common_param_spec(-1) == NULL);
    CHECK(asr_common_param_spec(ASR_NCOMMON) == NULL);
    CHECK(strcmp(asr_common_param_spec(ASR_P_MOTOR_J)->name, "motor_J") == 0);
    CHECK(asr_common_param_default(NULL, ASR_P_MOTOR_J) == 0.0233);
    CHECK(asr_common_param_default(NULL, ASR_P_KP) == 125.0);
    CHECK(asr_common_param_default(model("sea_damped"), ASR_P_KP) == 1000.0);
    CHECK(asr_common_param_default(model("qbmove"), ASR_P_DRIVE) == 1.0);
    CHECK(isnan(asr_common_param_default(NULL, -1)));
    CHECK(isnan(asr_common_param_default(model("sea"), ASR_NCOMMON)));

    const asr_param_spec* J = asr_common_param_spec(ASR_P_MOTOR_J);
    const asr_param_spec* drive = asr_common_param_spec(ASR_P_DRIVE);
    const asr_param_spec* vmax = asr_common_param_spec(ASR_P_VEL_MAX);
    const asr_param_spec* tmax = asr_common_param_spec(ASR_P_TAU_MAX);
    const asr_param_spec* pmin = asr_common_param_spec(ASR_P_POS_MIN);
    CHECK(asr_param_valid(NULL, 1.0) == 0);
    CHECK(asr_param_valid(J, NAN) == 0);
    CHECK(asr_param_valid(J, 0.0) == 0);
    CHECK(asr_param_valid(J, -1.0) == 0);
    CHECK(asr_param_valid(J, 1e-300) == 1);
    CHECK(asr_param_valid(J, HUGE_VAL) == 0);
    CHECK(asr_param_valid(drive, 0.5) == 0);
    CHECK(asr_param_valid(drive, 1.0) == 1);
    CHECK(asr_param_valid(drive, 2.0) == 0);
    CHECK(asr_param_valid(drive, -0.0) == 1);
    CHECK(asr_param_valid(vmax, HUGE_VAL) == 1);
    CHECK(asr_param_valid(tmax, HUGE_VAL) == 0);
    CHECK(asr_param_valid(pmin, -HUGE_VAL) == 1);
    CHECK(asr_param_valid(pmin, NAN) == 0);

    for (int k = 0; k < ASR_NFIELD; ++k) {
        const char* n = asr_state_field_name(k);
        CHECK(n != NULL && asr_state_field_doc(k) != NULL && asr_state_field_unit(k) != NULL);
        for (int l = 0; n && l < k; ++l) CHECK(strcmp(n, asr_state_field_name(l)) != 0);
    }
    CHECK(asr_state_field_name(-1) == NULL && asr_state_field_doc(-1) == NULL);
    CHECK(asr_state_field_name(ASR_NFIELD) == NULL && asr_state_field_doc(ASR_NFIELD) == NULL);
    CHECK(asr_state_field_unit(-1) == NULL && asr_state_field_unit(ASR_NFIELD) == NULL);
    CHECK(strcmp(asr_state_field_unit(ASR_F_STIFFNESS), "N m/rad") == 0);
    CHECK(ASR_NCHECKED == ASR_F_Q && ASR_F_CTRL_TIMER == ASR_NCHECKED - 1);
    CHECK(strcmp(asr_state_field_name(ASR_F_Q), "q") == 0);
    CHECK(strcmp(asr_state_field_name(ASR_F_TAU_JOINT), "tau_joint") == 0);
    CHECK(strcmp(asr_state_field_name(ASR_F_TH2D), "th2d") == 0);
}

/* ---------------------------------------------------------------- compliance, closed forms */

static asr_elastic_in in_of(double q, double qd, double th1, double th2, double th1d, double th2d) {
    asr_elastic_in in = {q, qd, th1, th2, th1d, th2d};
    return in;
}

static void test_compliance_null_and_range(void) {
    const asr_model_def* sea = model("sea");
    double p[2] = {200.0, 0.8};
    asr_elastic_in in = in_of(0.1, 0, 0, 0, 0, 0);
    asr_elastic_out out;
    CHECK_ST(asr_compliance_eval(NULL, 1, p, 0, &in, &out), ASR_ERR_NULL);
    CHECK_ST(asr_compliance_eval(sea, 1, NULL, 0, &in, &out), ASR_ERR_NULL);
    CHECK_ST(asr_compliance_eval(sea, 1, p, 0, NULL, &out), ASR_ERR_NULL);
    CHECK_ST(asr_compliance_eval(sea, 1, p, 0, &in, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_compliance_eval(sea, -1, p, 0, &in, &out), ASR_ERR_RANGE);
    CHECK_ST(asr_compliance_eval(sea, 1, p, -2, &in, &out), ASR_ERR_RANGE);
    CHECK_ST(asr_compliance_eval(sea, 0, p, 0, &in, &out), ASR_OK);
    CHECK_ST(asr_compliance_eval(model("rigid"), 1, NULL, 0, &in, &out), ASR_OK);
    CHECK(out.tau1 == 0.0 && out.stiffness == 0.0 && out.clamped == 0);
    asr_model_def broken = *sea;
    broken.elastic = NULL;
    CHECK_ST(asr_compliance_eval(&broken, 1, p, 0, &in, &out), ASR_ERR_NULL);

    double eq = 0.1, pre = 0.2, t1, t2;
    CHECK_ST(asr_reference_map_eval(NULL, 1, p, 0, &eq, &pre, &t1, &t2), ASR_ERR_NULL);
    CHECK_ST(asr_reference_map_eval(sea, 1, NULL, 0, &eq, &pre, &t1, &t2), ASR_ERR_NULL);
    CHECK_ST(asr_reference_map_eval(sea, 1, p, 0, NULL, &pre, &t1, &t2), ASR_ERR_NULL);
    CHECK_ST(asr_reference_map_eval(sea, 1, p, 0, &eq, NULL, &t1, &t2), ASR_ERR_NULL);
    CHECK_ST(asr_reference_map_eval(sea, 1, p, 0, &eq, &pre, NULL, &t2), ASR_ERR_NULL);
    CHECK_ST(asr_reference_map_eval(sea, 1, p, 0, &eq, &pre, &t1, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_reference_map_eval(sea, -3, p, 0, &eq, &pre, &t1, &t2), ASR_ERR_RANGE);
    CHECK_ST(asr_reference_map_eval(sea, 1, p, -1, &eq, &pre, &t1, &t2), ASR_ERR_RANGE);
    CHECK_ST(asr_reference_map_eval(sea, 0, p, 0, &eq, &pre, &t1, &t2), ASR_OK);
    broken = *sea;
    broken.refmap = NULL;
    CHECK_ST(asr_reference_map_eval(&broken, 1, p, 0, &eq, &pre, &t1, &t2), ASR_ERR_NULL);
}

static void test_compliance_closed_forms(void) {
    asr_elastic_out o[4];
    asr_elastic_in in[4];

    /* sea: tau = -k sat(q - th1, max_def), stiffness k */
    double sea_p[2] = {200.0, 0.8};
    in[0] = in_of(0.1, 0, 0, 0, 0, 0);
    in[1] = in_of(1.0, 0, 0, 0, 0, 0);
    in[2] = in_of(-0.3, 0, 0.2, 0, 0, 0);
    CHECK_ST(asr_compliance_eval(model("sea"), 3, sea_p, 0, in, o), ASR_OK);
    CHECK(close_to(o[0].tau1, -20.0, 1e-14, 0) && o[0].stiffness == 200.0);
    CHECK(close_to(o[0].load1, 20.0, 1e-14, 0) && o[0].kload1 == 200.0);
    CHECK(close_to(o[0].defl1, 0.1, 1e-15, 0) && o[0].clamped == 0 && o[0].tau2 == 0.0);
    CHECK(o[1].tau1 == -160.0 && o[1].defl1 == 0.8 && o[1].clamped == 1);
    CHECK(close_to(o[2].tau1, 100.0, 1e-14, 0));
    /* one parameter row per point */
    double rows[4] = {100.0, 0.8, 300.0, 0.8};
    in[1] = in_of(0.1, 0, 0, 0, 0, 0);
    CHECK_ST(asr_compliance_eval(model("sea"), 2, rows, 2, in, o), ASR_OK);
    CHECK(close_to(o[0].tau1, -10.0, 1e-14, 0) && close_to(o[1].tau1, -30.0, 1e-14, 0));

    /* sea_damped: tau = -Kt phi + Dt (th1d - qd) */
    double sd_p[3] = {100.0, 0.5, HUGE_VAL};
    in[0] = in_of(0.1, 0.2, 0.0, 0, 2.0, 0);
    CHECK_ST(asr_compliance_eval(model("sea_damped"), 1, sd_p, 0, in, o), ASR_OK);
    CHECK(close_to(o[0].tau1, -10.0 + 0.5 * 1.8, 1e-14, 0));
    CHECK(o[0].stiffness == 100.0 && o[0].damping == 0.5 && o[0].cload1 == 0.5);

    /* awas2: G = (L/r_t) s/(L - s), tau = -Ks G^2 sin(2 phi), sigma = 2 Ks G^2 cos(2 phi) */
    double aw_p[4] = {10.0, 0.05, 0.015, 0.3};
    double G = (0.05 / 0.015) * 0.025 / (0.05 - 0.025);
    in[0] = in_of(0.1, 0, 0, 0.025, 0, 0);
    in[1] = in_of(0.5, 0, 0, 0.025, 0, 0); /* clamped at max_def 0.3 */
    in[2] = in_of(0.1, 0, 0, 0.0, 0, 0);   /* pivot 0: no stiffness */
    CHECK_ST(asr_compliance_eval(model("awas2"), 3, aw_p, 0, in, o), ASR_OK);
    CHECK(close_to(o[0].tau1, -10.0 * G * G * sin(0.2), 1e-12, 0));
    CHECK(close_to(o[0].stiffness, 2.0 * 10.0 * G * G * cos(0.2), 1e-12, 0));
    CHECK(close_to(o[1].tau1, -10.0 * G * G * sin(0.6), 1e-12, 0) && o[1].clamped == 1);
    CHECK(o[2].tau1 == 0.0 && o[2].stiffness == 0.0);
    in[0] = in_of(0.1, 0, 0, 0.05, 0, 0); /* pivot at L: singular, rejected */
    CHECK_ST(asr_compliance_eval(model("awas2"), 1, aw_p, 0, in, o), ASR_ERR_RANGE);
    in[0] = in_of(0.1, 0, 0, -1e-3, 0, 0);
    CHECK_ST(asr_compliance_eval(model("awas2"), 1, aw_p, 0, in, o), ASR_ERR_RANGE);
    in[0] = in_of(0.1, 0, 0, NAN, 0, 0); /* a NaN input is reported as such */
    CHECK_ST(asr_compliance_eval(model("awas2"), 1, aw_p, 0, in, o), ASR_ERR_INPUT);

    /* bavs defaults at zero deflection: pretension k (b - a) = 0.1872 N m per spring,
     * sigma = 2 k ke (a + b) = 10.006 N m/rad (docs/models.md) */
    const asr_model_def* bavs = model("bavs");
    double bv_p[5];
    for (int k = 0; k < 5; ++k) bv_p[k] = bavs->params[k].def;
    in[0] = in_of(0.0, 0, 0, 0, 0, 0);
    in[1] = in_of(0.0, 0, 0.1, -0.1, 0, 0);
    CHECK_ST(asr_compliance_eval(bavs, 2, bv_p, 0, in, o), ASR_OK);
    CHECK(close_to(o[0].tau1, 0.1872, 1e-12, 0) && close_to(o[0].tau2, -0.1872, 1e-12, 0));
    CHECK(close_to(o[0].stiffness, 10.006, 0, 5e-4));
    double e1 = exp(8.71 * 0.1), e2 = exp(-8.71 * 0.1);
    CHECK(close_to(o[1].tau1, 1.6e5 * (2.38e-6 * e1 - 1.21e-6 / e1), 1e-12, 0));
    CHECK(close_to(o[1].tau2, 1.6e5 * (1.21e-6 * e2 - 2.38e-6 / e2), 1e-12, 0));

    /* qbmove_advanced defaults: sigma = 2 a k cosh(a preset) at equilibrium (docs/models.md:
     * 0.0342 / 0.106 / 0.626 / 3.78 N m/rad for preset 0 / 0.2 / 0.4 / 0.6) */
    const asr_model_def* qa = model("qbmove_advanced");
    double qa_p[6];
    for (int k = 0; k < 6; ++k) qa_p[k] = qa->params[k].def;
    const double presets[4] = {0.0, 0.2, 0.4, 0.6}, sigma[4] = {0.0342, 0.106, 0.626, 3.78};
    for (int m = 0; m < 4; ++m) in[m] = in_of(0.0, 0, presets[m], -presets[m], 0, 0);
    CHECK_ST(asr_compliance_eval(qa, 4, qa_p, 0, in, o), ASR_OK);
    for (int m = 0; m < 4; ++m) {
        CHECK(close_to(o[m].stiffness, sigma[m], 5e-3, 0));
        CHECK(close_to(o[m].stiffness, 2 * 8.9992 * 0.0019 * cosh(8.9992 * presets[m]), 1e-12, 0));
        CHECK(close_to(o[m].tau1 + o[m].tau2, 0.0, 0, 1e-15));
    }
    in[0] = in_of(0.3, 0, 0, 0, 0, 0);
    CHECK_ST(asr_compliance_eval(qa, 1, qa_p, 0, in, o), ASR_OK);
    CHECK(close_to(o[0].tau1, -0.0019 * sinh(8.9992 * 0.3), 1e-12, 0));

    /* qbmove: sigma at equal motor angles = 2 a k = 0.3014 N m/rad, no clamp */
    const asr_model_def* qb = model("qbmove");
    double qb_p[3] = {0.022, 6.85, 3.1497};
    in[0] = in_of(0.0, 0, 0, 0, 0, 0);
    in[1] = in_of(2.0, 0, 0, 0, 0, 0);
    CHECK_ST(asr_compliance_eval(qb, 2, qb_p, 0, in, o), ASR_OK);
    CHECK(close_to(o[0].stiffness, 0.3014, 0, 1e-4) && o[0].clamped == 0);
    CHECK(close_to(o[1].tau1, -0.022 * sinh(6.85 * 2.0), 1e-12, 0) && o[1].clamped == 0);
}

static void test_reference_maps(void) {
    double eq[3] = {0.1, 3.0, -0.4}, pre[3] = {0.2, 1.0, 0.01}, t1[3], t2[3];
    double sea_p[2] = {10.0, 0.8};
    CHECK_ST(asr_reference_map_eval(model("sea"), 3, sea_p, 0, eq, pre, t1, t2), ASR_OK);
    CHECK(t1[0] == 0.1 && t1[1] == 3.0 && t1[2] == -0.4);
    CHECK_ST(asr_reference_map_eval(model("rigid"), 1, NULL, 0, eq, pre, t1, t2), ASR_OK);
    CHECK(t1[0] == 0.1 && t2[0] == 0.0);
    double bv_p[5] = {1.21e-6, 2.38e-6, 1.6e5, 8.71, 0.27};
    CHECK_ST(asr_reference_map_eval(model("bavs"), 3, bv_p, 0, eq, pre, t1, t2), ASR_OK);
    CHECK(t1[0] == 0.1 + 0.2 && t2[0] == 0.1 - 0.2 && t1[1] == 4.0 && t2[1] == 2.0);
    double qa_p[6] = {0.0019, 8.9992, 0.0019, 8.9992, 0.8, 0.0};
    CHECK_ST(asr_reference_map_eval(model("qbmove_advanced"), 1, qa_p, 0, eq, pre, t1, t2), ASR_OK);
    CHECK(t1[0] == 0.1 + 0.2 && t2[0] == 0.1 - 0.2);
    double qb_p[3] = {0.022, 6.85, 3.1497};
    CHECK_ST(asr_reference_map_eval(model("qbmove"), 3, qb_p, 0, eq, pre, t1, t2), ASR_OK);
    CHECK(t1[1] == 3.1497 && t2[1] == 2.0); /* clamped to th_max */
    double aw_p[4] = {10.0, 0.05, 0.015, 0.3};
    CHECK_ST(asr_reference_map_eval(model("awas2"), 1, aw_p, 0, &eq[2], &pre[2], t1, t2), ASR_OK);
    CHECK(t1[0] == -0.4 && t2[0] == 0.01);
    double bad = 0.05;
    CHECK_ST(asr_reference_map_eval(model("awas2"), 1, aw_p, 0, eq, &bad, t1, t2), ASR_ERR_RANGE);
    bad = -0.001;
    CHECK_ST(asr_reference_map_eval(model("awas2"), 1, aw_p, 0, eq, &bad, t1, t2), ASR_ERR_RANGE);
}

/* An evaluation that overflows with finite inputs and valid parameters must not report ASR_OK
 * with inf or NaN outputs: the batch freezes such an instance (ASR_ERR_NONFINITE), the pure
 * functions should say so as well. */
static void test_nonfinite_outputs_reported(void) {
    const asr_model_def* qa = model("qbmove_advanced");
    double qa_p[6] = {0.0019, 1000.0, 0.0019, 8.9992, 0.8, 0.0}; /* a1 = 1000: exp(800) */
    asr_elastic_in in = in_of(0.8, 0, 0, 0, 0, 0);
    asr_elastic_out out;
    int st = asr_compliance_eval(qa, 1, qa_p, 0, &in, &out);
    CHECK(st != ASR_OK || elastic_out_finite(&out));
    CHECK(valid_status(st));
    const asr_model_def* bavs = model("bavs");
    double bv_p[5] = {1.21e-6, 0.0, 1.6e5, 1e4, 0.27}; /* b = 0: 0 * exp(2700) = NaN */
    in = in_of(0.0, 0, 0.27, 0, 0, 0);
    st = asr_compliance_eval(bavs, 1, bv_p, 0, &in, &out);
    CHECK(st != ASR_OK || elastic_out_finite(&out));
    double eq = 1e308, pre = 1e308, t1, t2;
    double bv_def[5] = {1.21e-6, 2.38e-6, 1.6e5, 8.71, 0.27};
    st = asr_reference_map_eval(bavs, 1, bv_def, 0, &eq, &pre, &t1, &t2);
    CHECK(st != ASR_OK || (isfinite(t1) && isfinite(t2)));
}

/* ---------------------------------------------------------------- main */

int main(void) {
    test_model_table();
    test_compliance_null_and_range();
    test_compliance_closed_forms();
    test_reference_maps();
    test_nonfinite_outputs_reported();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
