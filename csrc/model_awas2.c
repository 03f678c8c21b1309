/* model_awas2.c - AwAS-II, a VSA with adjuster ([Mengacci2021] eq. 4). The second "motor" is the pivot
 * position s, a kinematic stiffness input in [0, L): lever gain G = (L/r_t) s/(L - s). */
#include <math.h>

#include "internal.h"

#define INF HUGE_VAL

enum { AW_KS, AW_L, AW_RT, AW_MAX_DEF };

static const asr_param_spec awas2_params[] = {
    {"Ks", 10.0, 0, INF, 1, 1, 0, "N m", "spring", "spring constant"},
    {"L", 0.05, 0, INF, 1, 1, 0, "m", "spring", "lever length; the pivot s must stay in [0, L)"},
    {"r_t", 0.015, 0, INF, 1, 1, 0, "m", "spring", "spring attachment radius"},
    {"max_def", 0.3, 0, 0.7853981633974483, 1, 0, 0, "rad", "spring",
     "deflection limit (clamp), at most pi/4 where the stiffness vanishes"},
};

static int awas2_elastic(void* user, const double* p, const asr_elastic_in* in,
                         asr_elastic_out* out) {
    (void)user;
    double s = in->th2, L = p[AW_L];
    elastic_out_zero(out);
    if (!(s >= 0.0 && s < L)) return ASR_ERR_RANGE; /* singular lever: rejected, not computed */
    double raw = in->q - in->th1;
    double phi = num_sat(raw, p[AW_MAX_DEF]);
    double G = (L / p[AW_RT]) * s / (L - s);
    double kg = p[AW_KS] * G * G;
    out->tau1 = -kg * sin(2.0 * phi);
    out->stiffness = 2.0 * kg * cos(2.0 * phi);
    out->load1 = -out->tau1;
    out->kload1 = out->stiffness;
    out->defl1 = phi;
    out->clamped = fabs(raw) > p[AW_MAX_DEF];
    return 0;
}

static int awas2_refmap(void* user, const double* p, double eq, double preset, double* th1,
                        double* th2) {
    (void)user;
    *th1 = eq;
    *th2 = preset;
    return (preset >= 0.0 && preset < p[AW_L]) ? 0 : ASR_ERR_RANGE;
}

const asr_model_def model_awas2 = {
    .name = "awas2",
    .doc = "AwAS-II variable stiffness actuator with adjuster ([Mengacci2021] eq. 4); map "
           "th1 = eq, pivot s = preset in [0, L)",
    .nmotor = 1,
    .kinematic_th2 = 1,
    .nparam = 4,
    .params = awas2_params,
    .elastic = awas2_elastic,
    .refmap = awas2_refmap,
    .ref2 = {.meaning = "AwAS-II pivot position s", .unit = "m", .kind = ASR_PRESET_REF,
             .lo = 0.0, .hi = 0.045, .soft = 0.005, .stiff = 0.04, .below_param = "L"},
};
