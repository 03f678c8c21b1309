/* model_bavs.c - DLR bidirectional antagonistic VSA ([Mengacci2021] eq. 5-6). Deflection sign is
 * opposite to the other models: phi_i = th_i - q. Each spring carries a pretension k (b - a).
 * Parameters, defaults and reference ranges are defined here; the formulas, in the parameters'
 * order, in springs.h (BUILTIN_CALLBACKS makes the model's callbacks from them). */
#include <math.h>

#include "internal.h"

#define INF HUGE_VAL

static const asr_param_spec bavs_params[] = {
    {"a", 1.21e-6, 0, INF, 0, 1, 0, "", "spring", "antagonist exponential weight"},
    {"b", 2.38e-6, 0, INF, 0, 1, 0, "", "spring", "agonist exponential weight"},
    {"k", 1.60e5, 0, INF, 1, 1, 0, "N m", "spring", "spring torque scale"},
    {"ke", 8.71, 0, INF, 1, 1, 0, "1/rad", "spring", "exponential rate"},
    {"max_def", 0.27, 0, INF, 1, 1, 0, "rad", "spring", "deflection limit (clamp)"},
};

BUILTIN_CALLBACKS(bavs, model_bavs)

const asr_model_def model_bavs = {
    .name = "bavs",
    .doc = "DLR bidirectional antagonistic VSA ([Mengacci2021] eq. 5-6); map th = eq +/- preset",
    .nmotor = 2,
    .nparam = 5,
    .params = bavs_params,
    .elastic = bavs_elastic,
    .refmap = bavs_refmap,
    .ref2 = {.meaning = "preset angle: motors at eq +/- preset", .unit = "rad",
             .kind = ASR_PRESET_REF, .lo = 0.0, .hi = 0.27, .soft = 0.05, .stiff = 0.2},
};
