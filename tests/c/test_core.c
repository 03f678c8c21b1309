/* test_core.c - a plain C test of asr's public C API (asr.h), no framework.
 *
 * Every function with NULL pointers and out-of-range arguments; batches of several models
 * created, configured, stepped, rolled out, reset and destroyed; the built-in compliance models
 * against hand-computed closed forms; a deterministic random-input fuzz loop (own xorshift PRNG);
 * thread count 1 vs 2 bit-identical. Prints "N passed, M failed" and returns non-zero on failure.
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

#include "asr.h"

/* ---------------------------------------------------------------- checks */

#include "check.h"

static int close_to(double a, double b, double rel, double abs_tol) {
    return fabs(a - b) <= abs_tol + rel * fabs(b);
}

/* An asr_series: instance i's values at step t start at data + i * stride_i + t * stride_t. */
static asr_series S(const double* data, long long stride_i, long long stride_t) {
    asr_series s = {data, stride_i, stride_t};
    return s;
}

static int valid_status(int st) { return st >= ASR_OK && st <= ASR_ERR_DIVERGED; }

/* A named class of fuzz failure: counted, the first one described. */
typedef struct fuzz_class {
    const char* name;
    long count;
    char first[512];
} fuzz_class;

static void fuzz_fail(fuzz_class* c, const char* detail) {
    if (c->count++ == 0) snprintf(c->first, sizeof c->first, "%s", detail);
}

static void fuzz_report(const fuzz_class* c) {
    if (c->count) {
        fprintf(stderr, "fuzz: %ld x %s; first: %s\n", c->count, c->name, c->first);
    }
    check_(c->count == 0, c->name, __FILE__, __LINE__);
}

/* ---------------------------------------------------------------- helpers */

static const asr_model_def* model(const char* name) {
    return asr_model_get(asr_model_find(name));
}

static int elastic_out_finite(const asr_elastic_out* o) {
    const double v[12] = {o->tau1, o->tau2, o->stiffness, o->damping, o->load1, o->load2,
                          o->kload1, o->kload2, o->cload1, o->cload2, o->defl1, o->defl2};
    for (int k = 0; k < 12; ++k) {
        if (!isfinite(v[k])) return 0;
    }
    return 1;
}

#include "tbatch.h"

static int tb_running_finite(const tbatch* t) {
    for (int i = 0; i < t->n; ++i) {
        if (t->code[i] != ASR_OK) continue;
        for (int j = 0; j < t->nj; ++j) {
            for (int k = 0; k < ASR_NFIELD; ++k) {
                if (!isfinite(*field(t, i, j, k))) return 0;
            }
        }
    }
    return 1;
}

/* ---------------------------------------------------------------- PRNG (xorshift64) */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double unit(void) { return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

static int below(int n) { return (int)(next_u64() % (uint64_t)n); }

static const double specials[] = {
    0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, -1e-300, 4.9406564584124654e-324, 2.2250738585072014e-308,
    1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308, 1e10, -1e10, 0.05, 0.8,
    3.14159, 1e5,
};
#define NSPECIAL ((int)(sizeof specials / sizeof specials[0]))

/* Any double: specials, NaN, +-inf, raw bit patterns (NaN payloads, denormals, huge), uniform. */
static double any_double(void) {
    switch (below(10)) {
    case 0: return specials[below(NSPECIAL)];
    case 1: return NAN;
    case 2: return below(2) ? HUGE_VAL : -HUGE_VAL;
    case 3: {
        uint64_t u = next_u64();
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    case 4: return (unit() - 0.5) * 2e6;
    default: return (unit() - 0.5) * 4.0;
    }
}

/* Mostly a modest value, sometimes anything. */
static double mostly_small(double scale) {
    return below(8) ? (unit() - 0.5) * 2.0 * scale : any_double();
}

/* A parameter value: mostly its default or a valid-looking multiple, sometimes anything. */
static double any_param(const asr_param_spec* spec, double def) {
    switch (below(6)) {
    case 0:
    case 1: return def;
    case 2:
    case 3: {
        double v = (isfinite(def) && def != 0.0 ? def : 1.0) * pow(10.0, (unit() - 0.5) * 6.0);
        return asr_param_valid(spec, v) ? v : def;
    }
    default: return any_double();
    }
}

static const asr_param_spec* joint_param_spec(const asr_model_def* m, int k) {
    return k < ASR_NCOMMON ? asr_common_param_spec(k) : &m->params[k - ASR_NCOMMON];
}

/* ---------------------------------------------------------------- model table, specs, fields */

static void test_model_table(void) {
    static const char* names[] = {"rigid", "sea", "sea_damped", "awas2", "bavs",
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

static asr_elastic_in in_of(double q, double qd, double th1, double th2, double th1d,
                            double th2d) {
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
        CHECK(close_to(o[m].stiffness, 2 * 8.9992 * 0.0019 * cosh(8.9992 * presets[m]), 1e-12,
                       0));
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
    CHECK_ST(asr_reference_map_eval(model("qbmove_advanced"), 1, qa_p, 0, eq, pre, t1, t2),
             ASR_OK);
    CHECK(t1[0] == 0.1 + 0.2 && t2[0] == 0.1 - 0.2);
    double qb_p[3] = {0.022, 6.85, 3.1497};
    CHECK_ST(asr_reference_map_eval(model("qbmove"), 3, qb_p, 0, eq, pre, t1, t2), ASR_OK);
    CHECK(t1[1] == 3.1497 && t2[1] == 2.0); /* clamped to th_max */
    double aw_p[4] = {10.0, 0.05, 0.015, 0.3};
    CHECK_ST(asr_reference_map_eval(model("awas2"), 1, aw_p, 0, &eq[2], &pre[2], t1, t2),
             ASR_OK);
    CHECK(t1[0] == -0.4 && t2[0] == 0.01);
    double bad = 0.05;
    CHECK_ST(asr_reference_map_eval(model("awas2"), 1, aw_p, 0, eq, &bad, t1, t2),
             ASR_ERR_RANGE);
    bad = -0.001;
    CHECK_ST(asr_reference_map_eval(model("awas2"), 1, aw_p, 0, eq, &bad, t1, t2),
             ASR_ERR_RANGE);
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
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, none, sqd, sr, none, 2, rec_fields, rec),
             ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, none, sr, none, 2, rec_fields, rec),
             ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, none, none, 2, rec_fields, rec),
             ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, NULL, rec),
             ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, rec_fields, NULL),
             ASR_ERR_NULL);
    CHECK_ST(asr_batch_rollout(b, -1, 1e-3, sq, sqd, sr, none, 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 0.0, sq, sqd, sr, none, 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, NAN, sq, sqd, sr, none, 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, S(q, nj, -9), sqd, sr, none, 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, S(refs, -18, 0), none, 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, S(ext, -9, 0), 2, rec_fields, rec),
             ASR_ERR_RANGE);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, -1, rec_fields, rec),
             ASR_ERR_RANGE);
    int bad_fields[2] = {ASR_F_TH1, ASR_NFIELD};
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, bad_fields, rec),
             ASR_ERR_RANGE);
    bad_fields[1] = -1;
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, none, 2, bad_fields, rec),
             ASR_ERR_RANGE);
    CHECK(asr_batch_step_count(b) == 0);
    CHECK_ST(asr_batch_rollout(b, 0, 1e-3, sq, sqd, sr, none, 0, NULL, NULL), ASR_OK);
    CHECK(asr_batch_step_count(b) == 0);
    CHECK_ST(asr_batch_rollout(b, 2, 1e-3, sq, sqd, sr, S(ext, nj, 0), 2, rec_fields, rec),
             ASR_OK);
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
    const asr_model_def* defs[3] = {model("qbmove_advanced"), model("sea_damped"),
                                    model("bavs")};
    int modes[3] = {6, 5, 4};
    enum { N = 7, NJ = 3, NSTEP = 60 };
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
                               S(NULL, 0, 0), 0, NULL, NULL), ASR_OK);
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
    enum { N = 5000, NJ = 2, NSTEP = 10 };
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
enum { APP_THREADS = 3, APP_N = 1500, APP_NJ = 2, APP_NSTEP = 12 };

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
            app_job job = {q, qd, refs, ext, 50.0 + 20.0 * k,
                           rec + (size_t)(pass * APP_THREADS + k) * nrec, ASR_OK};
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

/* ---------------------------------------------------------------- fuzz */

enum { FZ_N = 3, FZ_MAXP = 64 };

static void test_fuzz(long iterations) {
    fuzz_class bad_status = {"status code outside the asr_status enum", 0, ""};
    /* non-finite outputs of an ASR_OK evaluation, by cause: a non-finite input, a parameter
     * outside its spec's range, or neither (overflow inside the model) */
    fuzz_class comp_nonfinite[3] = {
        {"asr_compliance_eval returned ASR_OK with non-finite outputs for a non-finite input "
         "(expected ASR_ERR_INPUT)", 0, ""},
        {"asr_compliance_eval returned ASR_OK with non-finite outputs for an out-of-range "
         "parameter (expected ASR_ERR_RANGE)", 0, ""},
        {"asr_compliance_eval returned ASR_OK with non-finite outputs for finite inputs and "
         "valid parameters (expected ASR_ERR_NONFINITE)", 0, ""}};
    fuzz_class map_nonfinite[3] = {
        {"asr_reference_map_eval returned ASR_OK with non-finite outputs for a non-finite "
         "input (expected ASR_ERR_INPUT)", 0, ""},
        {"asr_reference_map_eval returned ASR_OK with non-finite outputs for an out-of-range "
         "parameter (expected ASR_ERR_RANGE)", 0, ""},
        {"asr_reference_map_eval returned ASR_OK with non-finite outputs for finite inputs and "
         "valid parameters (expected ASR_ERR_NONFINITE)", 0, ""}};
    fuzz_class set_bad_index = {"asr_batch_set_param: bad_index wrong", 0, ""};
    fuzz_class set_roundtrip = {"asr_batch_set_param/get_param do not round-trip", 0, ""};
    fuzz_class input_false = {
        "an instance frozen with ASR_ERR_INPUT although all its inputs were finite", 0, ""};
    fuzz_class running_nonfinite = {
        "a running instance (status 0) has a non-finite state field", 0, ""};
    fuzz_class frozen_torque = {"a frozen instance applies torque", 0, ""};
    fuzz_class rollout_nonfinite = {"rollout recorded a non-finite tau_joint of a running "
                                    "instance", 0, ""};
    char msg[512];

    /* one joint of every built-in model, in a mode with motors where it has them */
    enum { NJ = 7 };
    const asr_model_def* defs[NJ];
    int modes[NJ] = {1, 5, 6, 3, 4, 6, 6};
    for (int m = 0; m < NJ; ++m) defs[m] = asr_model_get(m);
    tbatch t;
    CHECK_ST(tb_create(&t, FZ_N, NJ, defs, modes), ASR_OK);
    if (!t.b) return;
    const size_t per = (size_t)FZ_N * NJ;

    for (long it = 0; it < iterations; ++it) {
        /* ---- compliance and reference map of a random model */
        int mi = below(asr_model_count());
        const asr_model_def* m = asr_model_get(mi);
        int npt = 1 + below(3);
        int np = m->nparam;
        double params[3 * 8];
        for (int r = 0; r < npt; ++r) {
            for (int k = 0; k < np; ++k) params[r * np + k] = any_param(&m->params[k],
                                                                       m->params[k].def);
        }
        int pstride = below(2) ? np : 0;
        int params_valid[3];
        for (int p = 0; p < npt; ++p) {
            params_valid[p] = 1;
            for (int k = 0; k < np; ++k) {
                double v = params[(pstride ? p : 0) * np + k];
                params_valid[p] &= asr_param_valid(&m->params[k], v);
            }
        }
        asr_elastic_in in[3];
        asr_elastic_out out[3];
        int inputs_finite[3];
        for (int p = 0; p < npt; ++p) {
            in[p].q = mostly_small(1.0);
            in[p].qd = mostly_small(5.0);
            in[p].th1 = mostly_small(1.0);
            in[p].th2 = (mi == 3) ? (below(4) ? unit() * 0.04 : any_double()) : mostly_small(1.0);
            in[p].th1d = mostly_small(5.0);
            in[p].th2d = mostly_small(5.0);
            inputs_finite[p] = isfinite(in[p].q) && isfinite(in[p].qd) && isfinite(in[p].th1) &&
                               isfinite(in[p].th2) && isfinite(in[p].th1d) &&
                               isfinite(in[p].th2d);
        }
        int st = asr_compliance_eval(m, below(50) ? npt : -1, np ? params : NULL,
                                     below(50) ? pstride : -1, in, out);
        if (!valid_status(st)) {
            snprintf(msg, sizeof msg, "compliance %s -> %d", m->name, st);
            fuzz_fail(&bad_status, msg);
        }
        if (st == ASR_OK) {
            for (int p = 0; p < npt; ++p) {
                if (elastic_out_finite(&out[p])) continue;
                snprintf(msg, sizeof msg,
                         "%s q=%g qd=%g th1=%g th2=%g th1d=%g th2d=%g p0=%g p1=%g -> tau1=%g "
                         "stiffness=%g",
                         m->name, in[p].q, in[p].qd, in[p].th1, in[p].th2, in[p].th1d,
                         in[p].th2d, np > 0 ? params[(pstride ? p * np : 0)] : 0.0,
                         np > 1 ? params[(pstride ? p * np : 0) + 1] : 0.0, out[p].tau1,
                         out[p].stiffness);
                fuzz_fail(&comp_nonfinite[!inputs_finite[p] ? 0 : (!params_valid[p] ? 1 : 2)], msg);
                break;
            }
        }
        double eq[3], pre[3], t1[3], t2[3];
        for (int p = 0; p < npt; ++p) {
            eq[p] = mostly_small(2.0);
            pre[p] = (mi == 3) ? (below(4) ? unit() * 0.04 : any_double()) : mostly_small(1.0);
        }
        st = asr_reference_map_eval(m, npt, np ? params : NULL, pstride, eq, pre, t1, t2);
        if (!valid_status(st)) {
            snprintf(msg, sizeof msg, "reference map %s -> %d", m->name, st);
            fuzz_fail(&bad_status, msg);
        }
        for (int p = 0; st == ASR_OK && p < npt; ++p) {
            if (isfinite(t1[p]) && isfinite(t2[p])) continue;
            snprintf(msg, sizeof msg, "%s eq=%g preset=%g p0=%g -> th1=%g th2=%g", m->name,
                     eq[p], pre[p], np > 0 ? params[(pstride ? p : 0) * np] : 0.0, t1[p], t2[p]);
            int finite_in = isfinite(eq[p]) && isfinite(pre[p]);
            fuzz_fail(&map_nonfinite[!finite_in ? 0 : (!params_valid[p] ? 1 : 2)], msg);
            break;
        }

        /* ---- batch: random parameter */
        {
            int j = below(12) ? below(NJ) : below(NJ + 4) - 2;
            int nparam = (j >= 0 && j < NJ) ? asr_batch_nparam(t.b, j) : -1;
            int k = below(12) ? below(nparam > 0 ? nparam : 1) : below(80) - 8;
            int count = below(2) ? 1 : (below(8) ? FZ_N : below(6) - 1);
            double vals[FZ_N + 4];
            const asr_param_spec* spec =
                (nparam > 0 && k >= 0 && k < nparam) ? joint_param_spec(defs[j], k) : NULL;
            double def = !spec ? 0.0
                         : (k < ASR_NCOMMON ? asr_common_param_default(defs[j], k) : spec->def);
            for (int c = 0; c < FZ_N + 4; ++c) {
                vals[c] = spec ? any_param(spec, def) : any_double();
            }
            /* the motor position limits must also stay ordered (pos_min < pos_max) */
            int is_limit = spec && (k == ASR_P_POS_MIN || k == ASR_P_POS_MAX);
            double other[FZ_N];
            if (is_limit) {
                asr_batch_get_param(t.b, j, k == ASR_P_POS_MIN ? ASR_P_POS_MAX : ASR_P_POS_MIN,
                                    other);
            }
            int bad = -99;
            st = asr_batch_set_param(t.b, j, k, vals, count, &bad);
            if (!valid_status(st)) {
                snprintf(msg, sizeof msg, "set_param j=%d k=%d count=%d -> %d", j, k, count, st);
                fuzz_fail(&bad_status, msg);
            }
            if (spec && (count == 1 || count == FZ_N)) {
                int first_bad = -1;
                for (int c = 0; c < count && first_bad < 0; ++c) {
                    if (!asr_param_valid(spec, vals[c])) first_bad = c;
                }
                for (int i = 0; is_limit && first_bad < 0 && i < FZ_N; ++i) {
                    double v = vals[count == 1 ? 0 : i];
                    int ordered = k == ASR_P_POS_MIN ? v < other[i] : other[i] < v;
                    if (!ordered) first_bad = count == 1 ? 0 : i;
                }
                int wrong = (first_bad >= 0) != (st == ASR_ERR_RANGE) ||
                            (first_bad >= 0 && bad != first_bad);
                if (wrong) {
                    snprintf(msg, sizeof msg, "j=%d k=%d count=%d st=%d bad=%d expected %d", j,
                             k, count, st, bad, first_bad);
                    fuzz_fail(&set_bad_index, msg);
                }
                if (st == ASR_OK) {
                    double got[FZ_N];
                    asr_batch_get_param(t.b, j, k, got);
                    for (int i = 0; i < FZ_N; ++i) {
                        double want = vals[count == 1 ? 0 : i];
                        if (memcmp(&got[i], &want, sizeof want) != 0) {
                            snprintf(msg, sizeof msg, "j=%d k=%d i=%d got %g want %g", j, k, i,
                                     got[i], want);
                            fuzz_fail(&set_roundtrip, msg);
                            break;
                        }
                    }
                }
            }
        }
        if (below(20) == 0) {
            st = asr_batch_set_mode(t.b, below(NJ + 2) - 1, below(9) - 1);
            if (!valid_status(st)) fuzz_fail(&bad_status, "set_mode");
        }
        if (below(40) == 0) {
            double h = below(2) ? any_double() : 1e-3;
            st = asr_batch_set_max_substep(t.b, h);
            if (!valid_status(st)) fuzz_fail(&bad_status, "set_max_substep");
            if (st == ASR_OK && !(h >= 1e-4)) asr_batch_set_max_substep(t.b, 1e-3); /* time */
        }
        if (below(30) == 0) {
            double q0[FZ_N * NJ], r0[2 * FZ_N * NJ];
            for (size_t x = 0; x < per; ++x) {
                q0[x] = below(50) ? mostly_small(1.0) : any_double();
                r0[2 * x] = mostly_small(1.0);
                r0[2 * x + 1] = unit() * 0.04;
            }
            st = asr_batch_reset(t.b, below(4) ? q0 : NULL, below(2) ? r0 : NULL);
            if (!valid_status(st)) fuzz_fail(&bad_status, "reset");
        }

        /* ---- batch: one step with random inputs */
        double q[FZ_N * NJ], qd[FZ_N * NJ], refs[2 * FZ_N * NJ], ext[FZ_N * NJ], ff[FZ_N * NJ];
        for (size_t x = 0; x < per; ++x) {
            q[x] = below(30) ? mostly_small(1.0) : any_double();
            qd[x] = below(30) ? mostly_small(3.0) : any_double();
            refs[2 * x] = below(30) ? mostly_small(1.0) : any_double();
            refs[2 * x + 1] = below(30) ? unit() * 0.04 : any_double();
            ext[x] = below(30) ? mostly_small(1.0) : any_double();
            ff[x] = below(4) ? 0.0 : (below(30) ? mostly_small(1.0) : any_double());
        }
        double dt = below(16) ? 1e-5 + unit() * 0.01 : any_double();
        /* a long but valid dt only costs time (up to 1e6 sub-steps): cap it, keep the huge
         * values that must be rejected */
        if (isfinite(dt) && dt > 0.05 && dt < 1e290) dt = 0.05;
        int use_ext = below(2), use_ff = below(2);
        int code_before[FZ_N];
        memcpy(code_before, t.code, sizeof code_before);
        st = below(8) ? asr_batch_step(t.b, dt, q, qd, refs, use_ext ? ext : NULL,
                                       use_ff ? ff : NULL)
                      : asr_batch_rollout(t.b, below(3), dt, S(q, NJ, 0), S(qd, NJ, 0),
                                          S(refs, 2 * NJ, 0), S(use_ext ? ext : NULL, NJ, 0),
                                          0, NULL, NULL);
        if (!valid_status(st)) {
            snprintf(msg, sizeof msg, "step -> %d", st);
            fuzz_fail(&bad_status, msg);
        }
        for (int i = 0; i < FZ_N; ++i) {
            if (!valid_status(t.code[i])) fuzz_fail(&bad_status, "status.code");
            if (t.code[i] == ASR_ERR_INPUT && code_before[i] == ASR_OK) {
                int j = t.joint[i];
                size_t x = (size_t)i * NJ + (size_t)(j >= 0 ? j : 0);
                int fin = isfinite(q[x]) && isfinite(qd[x]) && isfinite(refs[2 * x]) &&
                          isfinite(refs[2 * x + 1]) && (!use_ext || isfinite(ext[x])) &&
                          (!use_ff || isfinite(ff[x]));
                if (fin) {
                    snprintf(msg, sizeof msg,
                             "joint %d: q=%g qd=%g ref1=%g ref2=%g tau_ext=%g tau_ff=%g", j,
                             q[x], qd[x], refs[2 * x], refs[2 * x + 1], use_ext ? ext[x] : 0.0,
                             use_ff ? ff[x] : 0.0);
                    fuzz_fail(&input_false, msg);
                }
            }
            for (int j = 0; j < NJ; ++j) {
                if (t.code[i] != ASR_OK) {
                    if (*field(&t, i, j, ASR_F_TAU_JOINT) != 0.0 ||
                        *field(&t, i, j, ASR_F_TAU_LINK) != 0.0) {
                        fuzz_fail(&frozen_torque, asr_model_get(j)->name);
                    }
                    continue;
                }
                for (int k = 0; k < ASR_NFIELD; ++k) {
                    double v = *field(&t, i, j, k);
                    if (isfinite(v)) continue;
                    snprintf(msg, sizeof msg, "model %s mode %d field %s = %g", defs[j]->name,
                             modes[j], asr_state_field_name(k), v);
                    fuzz_fail(&running_nonfinite, msg);
                    break;
                }
            }
        }
        if (below(50) == 0) {
            int rf[2] = {ASR_F_TAU_JOINT, ASR_F_TH1};
            double rec[3 * 2 * FZ_N * NJ];
            st = asr_batch_rollout(t.b, 3, 1e-3, S(q, NJ, 0), S(qd, NJ, 0), S(refs, 2 * NJ, 0),
                                   S(NULL, 0, 0), 2, rf, rec);
            if (!valid_status(st)) fuzz_fail(&bad_status, "rollout");
            if (st == ASR_OK) {
                for (int i = 0; i < FZ_N; ++i) {
                    if (t.code[i] != ASR_OK) continue;
                    for (int s = 0; s < 3; ++s) {
                        for (int j = 0; j < NJ; ++j) {
                            double v = rec[((size_t)i * 3 + (size_t)s) * NJ + (size_t)j];
                            if (!isfinite(v)) fuzz_fail(&rollout_nonfinite, defs[j]->name);
                        }
                    }
                }
            }
        }
        if (it % 25 == 0) { /* revive frozen instances, and sometimes the default parameters */
            asr_batch_reset(t.b, NULL, NULL);
            if (it % 500 == 0) {
                tb_free(&t);
                CHECK_ST(tb_create(&t, FZ_N, NJ, defs, modes), ASR_OK);
                if (!t.b) return;
            }
        }
    }
    tb_free(&t);
    fuzz_report(&bad_status);
    for (int c = 0; c < 3; ++c) fuzz_report(&comp_nonfinite[c]);
    for (int c = 0; c < 3; ++c) fuzz_report(&map_nonfinite[c]);
    fuzz_report(&set_bad_index);
    fuzz_report(&set_roundtrip);
    fuzz_report(&input_false);
    fuzz_report(&running_nonfinite);
    fuzz_report(&frozen_torque);
    fuzz_report(&rollout_nonfinite);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char** argv) {
    long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    test_model_table();
    test_compliance_null_and_range();
    test_compliance_closed_forms();
    test_reference_maps();
    test_nonfinite_outputs_reported();
    test_batch_create_errors();
    test_batch_api();
    test_user_model_callbacks();
    test_huge_finite_inputs();
    test_rollout_equals_steps();
    test_threads_bit_identical();
    test_batches_on_application_threads();
    test_fuzz(iterations);
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
