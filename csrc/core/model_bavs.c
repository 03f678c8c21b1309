/* model_bavs.c - DLR bidirectional antagonistic VSA ([Mengacci2021] eq. 5-6). Deflection sign is
 * opposite to the other models: phi_i = th_i - q. Each spring carries a pretension k (b - a).
 * Defaults and reference ranges are defined here, the parameters in model_params.h, the formulas
 * in springs.h (BUILTIN_CALLBACKS makes the model's callbacks from them). */
#include <math.h>

#include "internal.h"
#include "model_params.h"

static const asr_param_spec bavs_params[] = MODEL_PARAM_SPECS(BAVS);

BUILTIN_CALLBACKS(bavs, model_bavs)

const asr_model_def model_bavs = {
    .name = "bavs",
    .doc = "DLR bidirectional antagonistic VSA ([Mengacci2021] eq. 5-6); map th = eq +/- preset",
    .nmotor = 2,
    .nparam = BAVS_NPARAM,
    .params = bavs_params,
    .elastic = bavs_elastic,
    .refmap = bavs_refmap,
    .ref2 = {.meaning = "preset angle: motors at eq +/- preset",
             .unit = "rad",
             .kind = ASR_PRESET_REF,
             .lo = 0.0,
             .hi = 0.27,
             .soft = 0.05,
             .stiff = 0.2},
};
