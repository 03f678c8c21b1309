/* model_bavs.c - DLR bidirectional antagonistic VSA ([Mengacci2021] eq. 5-6). Deflection sign is
 * opposite to the other models: phi_i = th_i - q. Each spring carries a pretension k (b - a). */
#include <math.h>

#include "internal.h"

#define INF HUGE_VAL

enum { BV_A, BV_B, BV_K, BV_KE, BV_MAX_DEF };

static const asr_param_spec bavs_params[] = {
    {"a", 1.21e-6, 0, INF, 0, 1, 0, "", "spring", "antagonist exponential weight"},
    {"b", 2.38e-6, 0, INF, 0, 1, 0, "", "spring", "agonist exponential weight"},
    {"k", 1.60e5, 0, INF, 1, 1, 0, "N m", "spring", "spring torque scale"},
    {"ke", 8.71, 0, INF, 1, 1, 0, "1/rad", "spring", "exponential rate"},
    {"max_def", 0.27, 0, INF, 1, 1, 0, "rad", "spring", "deflection limit (clamp)"},
};

static int bavs_elastic(void* user, const double* p, const asr_elastic_in* in,
                        asr_elastic_out* out) {
    (void)user;
    double m = p[BV_MAX_DEF], k = p[BV_K], ke = p[BV_KE], a = p[BV_A], b = p[BV_B];
    double raw1 = in->th1 - in->q, raw2 = in->th2 - in->q;
    double phi1 = num_sat(raw1, m), phi2 = num_sat(raw2, m);
    double e1 = exp(ke * phi1), e2 = exp(ke * phi2);
    double r1 = 1.0 / e1, r2 = 1.0 / e2;
    elastic_out_zero(out);
    out->tau1 = k * (b * e1 - a * r1);
    out->tau2 = k * (a * e2 - b * r2);
    out->kload1 = k * ke * (b * e1 + a * r1);
    out->kload2 = k * ke * (a * e2 + b * r2);
    out->stiffness = out->kload1 + out->kload2;
    out->load1 = -out->tau1;
    out->load2 = -out->tau2;
    out->defl1 = phi1;
    out->defl2 = phi2;
    out->clamped = (fabs(raw1) > m) + (fabs(raw2) > m);
    return 0;
}

const asr_model_def model_bavs = {
    .name = "bavs",
    .doc = "DLR bidirectional antagonistic VSA ([Mengacci2021] eq. 5-6); map th = eq +/- preset",
    .nmotor = 2,
    .nparam = 5,
    .params = bavs_params,
    .elastic = bavs_elastic,
    .refmap = refmap_antagonistic,
    .ref2 = {.meaning = "preset angle: motors at eq +/- preset", .unit = "rad",
             .kind = ASR_PRESET_REF, .lo = 0.0, .hi = 0.27, .soft = 0.05, .stiff = 0.2},
};
