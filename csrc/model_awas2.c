/* model_awas2.c - AwAS-II, a VSA with adjuster ([Mengacci2021] eq. 4). The second "motor" is the pivot
 * position s, a kinematic stiffness input in [0, L): lever gain G = (L/r_t) s/(L - s).
 * Parameters, defaults and reference ranges are defined here; the formulas, in the parameters'
 * order, in springs.h (BUILTIN_CALLBACKS makes the model's callbacks from them). */
#include <math.h>

#include "internal.h"

#define INF HUGE_VAL

static const asr_param_spec awas2_params[] = {
    {"Ks", 10.0, 0, INF, 1, 1, 0, "N m", "spring", "spring constant"},
    {"L", 0.05, 0, INF, 1, 1, 0, "m", "spring", "lever length; the pivot s must stay in [0, L)"},
    {"r_t", 0.015, 0, INF, 1, 1, 0, "m", "spring", "spring attachment radius"},
    {"max_def", 0.3, 0, 0.7853981633974483, 1, 0, 0, "rad", "spring",
     "deflection limit (clamp), at most pi/4 where the stiffness vanishes"},
};

BUILTIN_CALLBACKS(awas2, model_awas2)

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
