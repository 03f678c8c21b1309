/* models.c - the table of built-in compliance models and their pure-function evaluation. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "batch.h"
#include "internal.h"
#include "springs.h"

/* In the order of spring_kind, from SPRING_RIGID (both from BUILTIN_MODELS). */
#define BUILTIN_ENTRY_(id, name) &model_##name,
static const asr_model_def* const builtin[] = {BUILTIN_MODELS(BUILTIN_ENTRY_)};
#undef BUILTIN_ENTRY_

#define NBUILTIN ((int)(sizeof(builtin) / sizeof(builtin[0])))

int asr_model_count(void) { return NBUILTIN; }

#define ELASTIC_IN_NAME_(name, unit, doc) #name,
static const char* const elastic_in_names[ASR_NELASTIC_IN] = {ASR_ELASTIC_INPUTS(ELASTIC_IN_NAME_)};
#undef ELASTIC_IN_NAME_

const char* asr_elastic_in_name(int k) {
    return (k >= 0 && k < ASR_NELASTIC_IN) ? elastic_in_names[k] : NULL;
}

#define ELASTIC_OUT_NAME_(name, unit, doc) #name,
static const char* const elastic_out_names[ASR_NELASTIC_OUT] = {
    ASR_ELASTIC_OUTPUTS(ELASTIC_OUT_NAME_) "clamped",
};
#undef ELASTIC_OUT_NAME_

const char* asr_elastic_out_name(int k) {
    return (k >= 0 && k < ASR_NELASTIC_OUT) ? elastic_out_names[k] : NULL;
}

#define MODE_DOC_(id, doc) doc,
static const char* const mode_docs[ASR_NMODE] = {ASR_MODES(MODE_DOC_)};
#undef MODE_DOC_

const char* asr_mode_doc(int k) { return (k >= 0 && k < ASR_NMODE) ? mode_docs[k] : NULL; }

int asr_model_max_params(void) { return ASR_MAX_PARAM - ASR_NCOMMON; }

int spring_kind_of(const asr_model_def* m) {
    for (int k = 0; k < NBUILTIN; ++k) {
        if (m == builtin[k]) return SPRING_RIGID + k;
    }
    return SPRING_USER;
}

/* The model's parameters broadcast to every lane. */
static void broadcast_params(const asr_model_def* m, const double* p, lane_d* pl) {
    for (int k = 0; k < m->nparam; ++k) pl[k] = lane_set(p[k]);
}

int builtin_elastic(const asr_model_def* m, const double* p, const asr_elastic_in* in,
                    asr_elastic_out* out) {
    lane_d pl[ASR_MAX_MODEL_PARAM];
    broadcast_params(m, p, pl);
#define LANE_SET_IN_(name, unit, doc) lane_set(in->name),
    lane_elastic_in li = {ASR_ELASTIC_INPUTS(LANE_SET_IN_)};
#undef LANE_SET_IN_
    lane_elastic_out lo;
    int refused = (int)lane_spring((spring_kind)spring_kind_of(m), pl, &li, &lo)[0];
    if (refused) {
        elastic_out_zero(out);
        return ASR_ERR_RANGE;
    }
    lane_elastic_get(&lo, 0, out);
    return 0;
}

int builtin_refmap(const asr_model_def* m, const double* p, double eq, double preset, double* th1,
                   double* th2) {
    lane_d pl[ASR_MAX_MODEL_PARAM], t1, t2;
    broadcast_params(m, p, pl);
    lane_m refused =
        lane_refmap((spring_kind)spring_kind_of(m), pl, lane_set(eq), lane_set(preset), &t1, &t2);
    *th1 = t1[0];
    *th2 = t2[0];
    return refused[0] ? ASR_ERR_RANGE : 0;
}

const asr_model_def* asr_model_get(int index) {
    return (index >= 0 && index < NBUILTIN) ? builtin[index] : NULL;
}

int asr_model_find(const char* name) {
    if (!name) return -1;
    for (int m = 0; m < NBUILTIN; ++m) {
        if (strcmp(builtin[m]->name, name) == 0) return m;
    }
    return -1;
}

static int params_valid(const asr_model_def* model, const double* p) {
    for (int k = 0; k < model->nparam; ++k) {
        if (!asr_param_valid(&model->params[k], p[k])) return 0;
    }
    return 1;
}

/* Every point is evaluated; a bad point (non-finite input, parameter out of range, failed or
 * non-finite evaluation) gets zero outputs with clamped = -1, and the first such status is
 * returned. */
asr_status asr_compliance_eval(const asr_model_def* model, int n, const double* params, int pstride,
                               const asr_elastic_in* in, asr_elastic_out* out) {
    if (!model || !model->elastic || !in || !out || (model->nparam > 0 && !params)) {
        return ASR_ERR_NULL;
    }
    if (n < 0 || pstride < 0 || (model->nparam > 0 && !model->params)) return ASR_ERR_RANGE;
    asr_status first = ASR_OK;
    for (int m = 0; m < n; ++m) {
        const double* p = params ? params + (size_t)m * (size_t)pstride : NULL;
        const double x[] = {in[m].q, in[m].qd, in[m].th1, in[m].th2, in[m].th1d, in[m].th2d};
        asr_status st = !num_all_finite(x, 6) ? ASR_ERR_INPUT
                        : !params_valid(model, p)
                            ? ASR_ERR_RANGE
                            : callback_status(model->elastic(model->user, p, &in[m], &out[m]));
        if (st == ASR_OK && !elastic_out_finite(&out[m])) st = ASR_ERR_RANGE;
        if (st != ASR_OK) {
            elastic_out_zero(&out[m]);
            out[m].clamped = -1;
            if (first == ASR_OK) first = st;
        }
    }
    return first;
}

asr_status asr_reference_map_eval(const asr_model_def* model, int n, const double* params,
                                  int pstride, const double* eq, const double* preset, double* th1,
                                  double* th2) {
    if (!model || !model->refmap || !eq || !preset || !th1 || !th2 ||
        (model->nparam > 0 && !params)) {
        return ASR_ERR_NULL;
    }
    if (n < 0 || pstride < 0 || (model->nparam > 0 && !model->params)) return ASR_ERR_RANGE;
    asr_status first = ASR_OK;
    for (int m = 0; m < n; ++m) {
        const double* p = params ? params + (size_t)m * (size_t)pstride : NULL;
        const double x[] = {eq[m], preset[m]};
        asr_status st = !num_all_finite(x, 2) ? ASR_ERR_INPUT
                        : !params_valid(model, p)
                            ? ASR_ERR_RANGE
                            : callback_status(model->refmap(model->user, p, eq[m], preset[m],
                                                            &th1[m], &th2[m]));
        if (st == ASR_OK && !(isfinite(th1[m]) && isfinite(th2[m]))) st = ASR_ERR_RANGE;
        if (st != ASR_OK) {
            th1[m] = th2[m] = 0.0;
            if (first == ASR_OK) first = st;
        }
    }
    return first;
}
