/* springs.h - the built-in compliance models and reference maps, ASR_LANES joints at a time
 * (private). The one definition of each formula: the batch step calls these on lanes of
 * instances, the models' C callbacks (model_*.c, asr_compliance_eval) on one broadcast value
 * (models.c, builtin_elastic), so both give the same bits. Parameters p are the model's own
 * (after the common ones), one lane vector each, indexed by name (model_params.h); symbols as
 * in docs/models.md. */
#ifndef ASR_SPRINGS_H
#define ASR_SPRINGS_H

#include <math.h>

#include "internal.h"
#include "lanes.h"
#include "model_params.h"

/* The built-in models the step knows by formula (BUILTIN_MODELS, internal.h), SPRING_<ID> in
 * the order of the built-in table; SPRING_USER: a callback, called lane by lane. */
#define SPRING_KIND_(id, name) SPRING_##id,
typedef enum spring_kind {
    SPRING_USER = 0,
    BUILTIN_MODELS(SPRING_KIND_)
} spring_kind;
#undef SPRING_KIND_

/* asr_elastic_in lane by lane. */
#define LANE_ELASTIC_IN_FIELD_(name, unit, doc) lane_d name;
typedef struct lane_elastic_in {
    ASR_ELASTIC_INPUTS(LANE_ELASTIC_IN_FIELD_)
} lane_elastic_in;
#undef LANE_ELASTIC_IN_FIELD_

/* asr_elastic_out lane by lane (clamped as a double). */
#define LANE_ELASTIC_FIELD_(name, unit, doc) lane_d name;
typedef struct lane_elastic_out {
    ASR_ELASTIC_OUTPUTS(LANE_ELASTIC_FIELD_)
    lane_d clamped;
} lane_elastic_out;
#undef LANE_ELASTIC_FIELD_

LANE_INLINE void lane_elastic_zero(lane_elastic_out* out) {
    lane_d z = lane_set(0.0);
#define LANE_ELASTIC_ZERO_(name, unit, doc) out->name = z;
    ASR_ELASTIC_OUTPUTS(LANE_ELASTIC_ZERO_)
#undef LANE_ELASTIC_ZERO_
    out->clamped = z;
}

/* Lane l of a lane output into a single one (clamped rounds toward zero, an exact count). */
LANE_INLINE void lane_elastic_get(const lane_elastic_out* lo, int l, asr_elastic_out* out) {
#define LANE_ELASTIC_GET_(name, unit, doc) out->name = lo->name[l];
    ASR_ELASTIC_OUTPUTS(LANE_ELASTIC_GET_)
#undef LANE_ELASTIC_GET_
    out->clamped = (int)lo->clamped[l];
}

/* A single output into lane l of a lane output. */
LANE_INLINE void lane_elastic_put(lane_elastic_out* lo, int l, const asr_elastic_out* out) {
#define LANE_ELASTIC_PUT_(name, unit, doc) lo->name[l] = out->name;
    ASR_ELASTIC_OUTPUTS(LANE_ELASTIC_PUT_)
#undef LANE_ELASTIC_PUT_
    lo->clamped[l] = out->clamped;
}

/* Linear SEA ([Mengacci2021] eq. 3). */
LANE_INLINE void spring_sea(const lane_d* p, const lane_elastic_in* in, lane_elastic_out* out) {
    lane_d k = p[SEA_K], max_def = p[SEA_MAX_DEF];
    lane_d raw = in->q - in->th1;
    lane_d phi = lane_sat(raw, max_def);
    lane_elastic_zero(out);
    out->tau1 = -k * phi;
    out->stiffness = k;
    out->load1 = -out->tau1;
    out->kload1 = k;
    out->defl1 = phi;
    out->clamped = lane_one_if(lane_abs(raw) > max_def);
}

/* Visco-elastic SEA ([Kamedula2016] eq. 3): tau_t = Kt (th - q) + Dt (thd - qd) on the link,
 * -tau_t on the motor. */
LANE_INLINE void spring_sea_damped(const lane_d* p, const lane_elastic_in* in,
                                   lane_elastic_out* out) {
    lane_d Kt = p[SEA_DAMPED_KT], Dt = p[SEA_DAMPED_DT], max_def = p[SEA_DAMPED_MAX_DEF];
    lane_d raw = in->q - in->th1;
    lane_d phi = lane_sat(raw, max_def);
    lane_elastic_zero(out);
    out->tau1 = -Kt * phi + Dt * (in->th1d - in->qd);
    out->stiffness = Kt;
    out->damping = Dt;
    out->load1 = -out->tau1;
    out->kload1 = Kt;
    out->cload1 = Dt;
    out->defl1 = phi;
    out->clamped = lane_one_if(lane_abs(raw) > max_def);
}

/* sin and cos of each lane through libm, the same call for every path. */
LANE_INLINE void lane_sincos_libm(lane_d x, lane_d* s, lane_d* c) {
    for (int l = 0; l < ASR_LANES; ++l) {
        (*s)[l] = sin(x[l]);
        (*c)[l] = cos(x[l]);
    }
}

/* AwAS-II ([Mengacci2021] eq. 4), pivot s = th2. Returns the lanes whose pivot is outside
 * [0, L) (a singular lever: their output is meaningless). */
LANE_INLINE lane_m spring_awas2(const lane_d* p, const lane_elastic_in* in, lane_elastic_out* out) {
    lane_d s = in->th2, L = p[AWAS2_L], max_def = p[AWAS2_MAX_DEF];
    lane_elastic_zero(out);
    lane_m bad = ~((s >= 0.0) & (s < L));
    lane_d raw = in->q - in->th1;
    lane_d phi = lane_sat(raw, max_def);
    lane_d G = (L / p[AWAS2_R_T]) * s / (L - s);
    lane_d kg = p[AWAS2_KS] * G * G;
    lane_d sn, cs;
    lane_sincos_libm(2.0 * phi, &sn, &cs);
    out->tau1 = -kg * sn;
    out->stiffness = 2.0 * kg * cs;
    out->load1 = -out->tau1;
    out->kload1 = out->stiffness;
    out->defl1 = phi;
    out->clamped = lane_one_if(lane_abs(raw) > max_def);
    return bad;
}

/* DLR BAVS ([Mengacci2021] eq. 5-6). */
LANE_INLINE void spring_bavs(const lane_d* p, const lane_elastic_in* in, lane_elastic_out* out) {
    lane_d a = p[BAVS_A], b = p[BAVS_B], k = p[BAVS_K], ke = p[BAVS_KE], m = p[BAVS_MAX_DEF];
    lane_d raw1 = in->th1 - in->q, raw2 = in->th2 - in->q;
    lane_d phi1 = lane_sat(raw1, m), phi2 = lane_sat(raw2, m);
    lane_d e1 = lane_exp(ke * phi1), e2 = lane_exp(ke * phi2);
    lane_d r1 = 1.0 / e1, r2 = 1.0 / e2;
    lane_elastic_zero(out);
    out->tau1 = k * (b * e1 - a * r1);
    out->tau2 = k * (a * e2 - b * r2);
    out->kload1 = k * ke * (b * e1 + a * r1);
    out->kload2 = k * ke * (a * e2 + b * r2);
    out->stiffness = out->kload1 + out->kload2;
    out->load1 = -out->tau1;
    out->load2 = -out->tau2;
    out->defl1 = phi1;
    out->defl2 = phi2;
    out->clamped = lane_one_if(lane_abs(raw1) > m) + lane_one_if(lane_abs(raw2) > m);
}

/* Spring pair tau_i = -k_i sinh(a_i phi_i), phi_i = sat(q - th_i, max_def); kc couples the
 * motors (qbmove Advanced, [Mengacci2021]; qbmove, [Parnenzini2015]). */
LANE_INLINE void spring_sinh_pair(lane_d k1, lane_d a1, lane_d k2, lane_d a2, lane_d max_def,
                                  lane_d kc, const lane_elastic_in* in, lane_elastic_out* out) {
    lane_d raw1 = in->q - in->th1, raw2 = in->q - in->th2;
    lane_d phi1 = lane_sat(raw1, max_def), phi2 = lane_sat(raw2, max_def);
    lane_d e1 = lane_exp(a1 * phi1), e2 = lane_exp(a2 * phi2);
    lane_d r1 = 1.0 / e1, r2 = 1.0 / e2;
    lane_d coupling = kc * (in->th1 - in->th2); /* linear motor-coupling spring g(th1, th2) */
    lane_elastic_zero(out);
    out->tau1 = -k1 * 0.5 * (e1 - r1);
    out->tau2 = -k2 * 0.5 * (e2 - r2);
    out->kload1 = a1 * k1 * 0.5 * (e1 + r1);
    out->kload2 = a2 * k2 * 0.5 * (e2 + r2);
    out->stiffness = out->kload1 + out->kload2;
    out->load1 = -out->tau1 - coupling;
    out->load2 = -out->tau2 + coupling;
    out->kload1 += kc;
    out->kload2 += kc;
    out->defl1 = phi1;
    out->defl2 = phi2;
    out->clamped = lane_one_if(lane_abs(raw1) > max_def) + lane_one_if(lane_abs(raw2) > max_def);
}

/* The built-in model `kind` (not SPRING_USER) at in: returns the lanes where it is undefined. */
LANE_INLINE lane_m lane_spring(spring_kind kind, const lane_d* p, const lane_elastic_in* in,
                               lane_elastic_out* out) {
    switch (kind) {
    case SPRING_SEA:
        spring_sea(p, in, out);
        break;
    case SPRING_SEA_DAMPED:
        spring_sea_damped(p, in, out);
        break;
    case SPRING_AWAS2:
        return spring_awas2(p, in, out);
    case SPRING_BAVS:
        spring_bavs(p, in, out);
        break;
    case SPRING_QBMOVE_ADVANCED:
        spring_sinh_pair(p[QBMOVE_ADVANCED_K1], p[QBMOVE_ADVANCED_A1], p[QBMOVE_ADVANCED_K2],
                         p[QBMOVE_ADVANCED_A2], p[QBMOVE_ADVANCED_MAX_DEF], p[QBMOVE_ADVANCED_KC],
                         in, out);
        break;
    case SPRING_QBMOVE: /* the 2015 plugin has no clamp and one spring law for both */
        spring_sinh_pair(p[QBMOVE_K], p[QBMOVE_A], p[QBMOVE_K], p[QBMOVE_A], lane_set(HUGE_VAL),
                         lane_set(0.0), in, out);
        break;
    default:
        lane_elastic_zero(out);
        break; /* rigid: no spring */
    }
    return lane_mask(0);
}

/* The built-in reference map of `kind`: (eq, preset) -> motor targets th1, th2. Returns the
 * lanes where the preset is outside the model's range. */
LANE_INLINE lane_m lane_refmap(spring_kind kind, const lane_d* p, lane_d eq, lane_d preset,
                               lane_d* th1, lane_d* th2) {
    switch (kind) {
    case SPRING_BAVS:
    case SPRING_QBMOVE_ADVANCED: /* agonistic-antagonistic: th = eq +/- preset */
        *th1 = eq + preset;
        *th2 = eq - preset;
        return lane_mask(0);
    case SPRING_QBMOVE: /* clamped to |th| <= th_max */
        *th1 = lane_sat(eq + preset, p[QBMOVE_TH_MAX]);
        *th2 = lane_sat(eq - preset, p[QBMOVE_TH_MAX]);
        return lane_mask(0);
    case SPRING_RIGID:
        *th1 = eq;
        *th2 = lane_set(0.0);
        return lane_mask(0);
    case SPRING_AWAS2: /* th1 = eq, pivot s = preset in [0, L) */
        *th1 = eq;
        *th2 = preset;
        return ~((preset >= 0.0) & (preset < p[AWAS2_L]));
    default: /* sea, sea_damped: th1 = eq, preset unused */
        *th1 = eq;
        *th2 = preset;
        return lane_mask(0);
    }
}

#endif
