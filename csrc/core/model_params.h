/* model_params.h - the built-in models' own parameters, listed once per model (private).
 *
 * <MODEL>_PARAMS(X) holds X(MODEL, ID, name, default, lo, hi, lo_open, hi_open, integer, unit,
 * group, doc), the fields of asr_param_spec after MODEL and ID, in the model's parameter order.
 * From it come the enum of indices MODEL_ID (the formulas in springs.h read p[MODEL_ID], never a
 * bare position), MODEL_NPARAM, and the spec table of the model's definition (model_*.c,
 * MODEL_PARAM_SPECS). Expanding the values needs <math.h> for HUGE_VAL.
 */
#ifndef ASR_MODEL_PARAMS_H
#define ASR_MODEL_PARAMS_H

#define SEA_PARAMS(X)                                                                              \
    X(SEA, K, "k", 10.0, 0, HUGE_VAL, 1, 1, 0, "N m/rad", "spring", "spring stiffness")            \
    X(SEA, MAX_DEF, "max_def", 0.8, 0, HUGE_VAL, 1, 1, 0, "rad", "spring",                         \
      "deflection limit (clamp)")

#define SEA_DAMPED_PARAMS(X)                                                                       \
    X(SEA_DAMPED, KT, "Kt", 188.0, 0, HUGE_VAL, 1, 1, 0, "N m/rad", "spring",                      \
      "transmission stiffness")                                                                    \
    X(SEA_DAMPED, DT, "Dt", 0.5, 0, HUGE_VAL, 0, 1, 0, "N m s/rad", "spring",                      \
      "transmission damping")                                                                      \
    X(SEA_DAMPED, MAX_DEF, "max_def", HUGE_VAL, 0, HUGE_VAL, 1, 0, 0, "rad", "spring",             \
      "deflection limit (inf: none)")

#define AWAS2_PARAMS(X)                                                                            \
    X(AWAS2, KS, "Ks", 10.0, 0, HUGE_VAL, 1, 1, 0, "N m", "spring", "spring constant")             \
    X(AWAS2, L, "L", 0.05, 0, HUGE_VAL, 1, 1, 0, "m", "spring",                                    \
      "lever length; the pivot s must stay in [0, L)")                                             \
    X(AWAS2, R_T, "r_t", 0.015, 0, HUGE_VAL, 1, 1, 0, "m", "spring", "spring attachment radius")   \
    X(AWAS2, MAX_DEF, "max_def", 0.3, 0, 0.7853981633974483, 1, 0, 0, "rad", "spring",             \
      "deflection limit (clamp), at most pi/4 where the stiffness vanishes")

#define BAVS_PARAMS(X)                                                                             \
    X(BAVS, A, "a", 1.21e-6, 0, HUGE_VAL, 0, 1, 0, "", "spring", "antagonist exponential weight")  \
    X(BAVS, B, "b", 2.38e-6, 0, HUGE_VAL, 0, 1, 0, "", "spring", "agonist exponential weight")     \
    X(BAVS, K, "k", 1.60e5, 0, HUGE_VAL, 1, 1, 0, "N m", "spring", "spring torque scale")          \
    X(BAVS, KE, "ke", 8.71, 0, HUGE_VAL, 1, 1, 0, "1/rad", "spring", "exponential rate")           \
    X(BAVS, MAX_DEF, "max_def", 0.27, 0, HUGE_VAL, 1, 1, 0, "rad", "spring",                       \
      "deflection limit (clamp)")

#define QBMOVE_ADVANCED_PARAMS(X)                                                                  \
    X(QBMOVE_ADVANCED, K1, "k1", 0.0019, 0, HUGE_VAL, 1, 1, 0, "N m", "spring",                    \
      "spring 1 torque scale")                                                                     \
    X(QBMOVE_ADVANCED, A1, "a1", 8.9992, 0, HUGE_VAL, 1, 1, 0, "1/rad", "spring",                  \
      "spring 1 sinh rate")                                                                        \
    X(QBMOVE_ADVANCED, K2, "k2", 0.0019, 0, HUGE_VAL, 1, 1, 0, "N m", "spring",                    \
      "spring 2 torque scale")                                                                     \
    X(QBMOVE_ADVANCED, A2, "a2", 8.9992, 0, HUGE_VAL, 1, 1, 0, "1/rad", "spring",                  \
      "spring 2 sinh rate")                                                                        \
    X(QBMOVE_ADVANCED, MAX_DEF, "max_def", 0.8, 0, HUGE_VAL, 1, 1, 0, "rad", "spring",             \
      "deflection limit (clamp)")                                                                  \
    X(QBMOVE_ADVANCED, KC, "kc", 0.0, 0, HUGE_VAL, 0, 1, 0, "N m/rad", "spring",                   \
      "motor-coupling spring g = kc (th1 - th2), on motor 1 with minus, motor 2 with plus")

#define QBMOVE_PARAMS(X)                                                                           \
    X(QBMOVE, K, "k", 0.022, 0, HUGE_VAL, 1, 1, 0, "N m", "spring", "spring torque scale")         \
    X(QBMOVE, A, "a", 6.85, 0, HUGE_VAL, 1, 1, 0, "1/rad", "spring", "spring sinh rate")           \
    X(QBMOVE, TH_MAX, "th_max", 3.1497, 0, HUGE_VAL, 1, 1, 0, "rad", "spring",                     \
      "motor command clamp |th| <= th_max")

/* The index enum of one model: MODEL_ID, ..., MODEL_NPARAM. */
#define MODEL_PARAM_ENUM_(model, id, ...) model##_##id,
#define MODEL_PARAM_INDICES(model)                                                                 \
    enum model##_param { model##_PARAMS(MODEL_PARAM_ENUM_) model##_NPARAM }

MODEL_PARAM_INDICES(SEA);
MODEL_PARAM_INDICES(SEA_DAMPED);
MODEL_PARAM_INDICES(AWAS2);
MODEL_PARAM_INDICES(BAVS);
MODEL_PARAM_INDICES(QBMOVE_ADVANCED);
MODEL_PARAM_INDICES(QBMOVE);

/* The asr_param_spec initialisers of one model's table. */
#define MODEL_PARAM_SPEC_(model, id, name, def, lo, hi, lo_open, hi_open, integer, unit, group,    \
                          doc)                                                                     \
    {name, def, lo, hi, lo_open, hi_open, integer, unit, group, doc},
#define MODEL_PARAM_SPECS(model) {model##_PARAMS(MODEL_PARAM_SPEC_)}

#endif
