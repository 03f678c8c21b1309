/* model_awas2.c - AwAS-II, a VSA with adjuster ([Mengacci2021] eq. 4). The second "motor" is the pivot
 * position s, a kinematic stiffness input in [0, L): lever gain G = (L/r_t) s/(L - s).
 * Defaults and reference ranges are defined here, the parameters in model_params.h, the formulas
 * in springs.h (BUILTIN_CALLBACKS makes the model's callbacks from them). */
#include <math.h>

#include "internal.h"
#include "model_params.h"

static const asr_param_spec awas2_params[] = MODEL_PARAM_SPECS(AWAS2);

BUILTIN_CALLBACKS(awas2, model_awas2)

const asr_model_def model_awas2 = {
    .name = "awas2",
    .doc = "AwAS-II variable stiffness actuator with adjuster ([Mengacci2021] eq. 4); map "
           "th1 = eq, pivot s = preset in [0, L)",
    .nmotor = 1,
    .kinematic_th2 = 1,
    .nparam = AWAS2_NPARAM,
    .params = awas2_params,
    .elastic = awas2_elastic,
    .refmap = awas2_refmap,
    .ref2 = {.meaning = "AwAS-II pivot position s",
             .unit = "m",
             .kind = ASR_PRESET_REF,
             .lo = 0.0,
             .hi = 0.045,
             .soft = 0.005,
             .stiff = 0.04,
             .below_param = "L"},
};
