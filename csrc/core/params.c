/* params.c - the common joint parameters (motor, friction, controllers, electrical drive, link
 * friction): names, defaults, units and valid ranges, defined once for C and Python. */
#include <math.h>
#include <stddef.h>

#include "internal.h"

/* The table of asr_common_param_spec, from the list in asr_model.h. */
#define COMMON_SPEC_(id, name, def, lo, hi, lo_open, hi_open, integer, unit, group, doc)           \
    {name, def, lo, hi, lo_open, hi_open, integer, unit, group, doc},
static const asr_param_spec common_specs[ASR_NCOMMON] = {ASR_COMMON_PARAMS(COMMON_SPEC_)};
#undef COMMON_SPEC_

const asr_param_spec* asr_common_param_spec(int k) {
    if (k < 0 || k >= ASR_NCOMMON) return NULL;
    return &common_specs[k];
}

double asr_common_param_default(const asr_model_def* model, int k) {
    if (k < 0 || k >= ASR_NCOMMON) return NAN;
    if (model) {
        for (int d = 0; d < model->ndefault; ++d) {
            if (model->defaults[d].k == k) return model->defaults[d].value;
        }
    }
    return common_specs[k].def;
}

int asr_param_valid(const asr_param_spec* spec, double v) {
    if (!spec || isnan(v)) return 0;
    if (spec->lo_open ? !(v > spec->lo) : !(v >= spec->lo)) return 0;
    if (spec->hi_open ? !(v < spec->hi) : !(v <= spec->hi)) return 0;
    if (spec->integer && v != floor(v)) return 0;
    return 1;
}
