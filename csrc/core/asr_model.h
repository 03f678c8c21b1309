/* asr_model.h - operation modes, parameter specs and compliance models
 * (model definitions, their second reference / stiffness preset, elastic and refmap callbacks).
 * Part of the public C API: included by asr.h, whose conventions (naming, SI units, layouts,
 * no system includes: this is also the cffi cdef) apply here.
 */
#ifndef ASR_API_MODEL_H
#define ASR_API_MODEL_H

#include "asr_status.h"

/* ------------------------------------------------------------------ operation modes */

/* The seven operation modes of the reference toolbox ([Mengacci2021] sec. 3.1), listed once in
 * the toolbox's numbering (0..6): X(ID, doc). ASR_MODE_<ID> is the number, doc its one-line
 * description (asr_mode_doc, Python's asr.MODES). */
#define ASR_MODES(X)                                                                               \
    /* ref1 = link torque */                                                                       \
    X(LINK_TORQUE, "link torque (rigid joint)")                                                    \
    /* ref1 = link position */                                                                     \
    X(LINK_PID, "PID on the link (rigid joint)")                                                   \
    /* ref1, ref2 = motor positions */                                                             \
    X(MOTOR_POS, "motor positions, motors as ideal position sources")                              \
    /* ref1, ref2 = equilibrium, preset -> map -> as mode 2 */                                     \
    X(EQ_PRESET, "equilibrium and preset, mapped to motor positions")                              \
    /* ref1, ref2 = motor torque (or PWM command) */                                               \
    X(MOTOR_TORQUE, "motor torques, motor dynamics")                                               \
    /* ref1, ref2 = motor position references */                                                   \
    X(MOTOR_PID, "motor position references, PID per motor, motor dynamics")                       \
    /* ref1, ref2 = equilibrium, preset references -> map -> mode 5 */                             \
    X(EQ_PRESET_PID, "equilibrium and preset references, mapped, PID per motor, motor dynamics")

#define ASR_MODE_ENUM_(id, doc) ASR_MODE_##id,
typedef enum asr_mode {
    ASR_MODES(ASR_MODE_ENUM_) /* ASR_MODE_LINK_TORQUE = 0, ... */
    ASR_NMODE
} asr_mode;
#undef ASR_MODE_ENUM_

/* Description of operation mode k (0 <= k < ASR_NMODE), or NULL. */
const char* asr_mode_doc(int k);

/* ------------------------------------------------------------------ parameter specs */

typedef struct asr_param_spec {
    const char* name;     /* parameter name, as used in Python keywords */
    double def;           /* default value */
    double lo, hi;        /* valid closed range [lo, hi], after the open flags below */
    int lo_open, hi_open; /* 1: the bound itself is excluded */
    int integer;          /* 1: value must be an integer (flags, enumerations) */
    const char* unit;     /* SI unit, "" for non-dimensional */
    const char* group;    /* "spring", "motor", "friction", "controller", "electrical", "link" */
    const char* doc;      /* one line */
} asr_param_spec;

/* Common joint parameters (motor, friction, controllers, electrical interface, link friction),
 * listed once: X(ID, name, default, lo, hi, lo_open, hi_open, integer, unit, group, doc), the
 * fields of asr_param_spec after ID. Every joint has them, in this order, before its model's own
 * compliance parameters: ASR_P_<ID> is the index (the enum below), and params.c builds the spec
 * table from the same list (expanding the values needs <math.h> for HUGE_VAL). */
#define ASR_COMMON_PARAMS(X)                                                                       \
    X(MOTOR_J, "motor_J", 0.0233, 0, HUGE_VAL, 1, 1, 0, "kg m^2", "motor",                         \
      "motor inertia reflected at the output")                                                     \
    X(MOTOR_D, "motor_D", 0.2698, 0, HUGE_VAL, 0, 1, 0, "N m s/rad", "motor",                      \
      "motor viscous damping")                                                                     \
    X(TAU_MAX, "tau_max", 6.0, 0, HUGE_VAL, 1, 1, 0, "N m", "motor", "motor torque limit")         \
    X(VEL_MAX, "vel_max", HUGE_VAL, 0, HUGE_VAL, 1, 0, 0, "rad/s", "motor",                        \
      "motor velocity limit (inf: none)")                                                          \
    X(POS_MIN, "pos_min", -HUGE_VAL, -HUGE_VAL, HUGE_VAL, 0, 0, 0, "rad", "motor",                 \
      "motor lower position limit")                                                                \
    X(POS_MAX, "pos_max", HUGE_VAL, -HUGE_VAL, HUGE_VAL, 0, 0, 0, "rad", "motor",                  \
      "motor upper position limit")                                                                \
    X(FRICTION, "friction", 0.02, 0, HUGE_VAL, 0, 1, 0, "N m", "friction",                         \
      "motor static friction torque")                                                              \
    X(FRICTION_K, "friction_K", 1e3, 0, HUGE_VAL, 1, 1, 0, "N m/rad", "friction",                  \
      "motor presliding stiffness (Dahl / Hayward-Armstrong stick point)")                         \
    X(KP, "kp", 125.0, 0, HUGE_VAL, 0, 1, 0, "N m/rad", "controller",                              \
      "motor PID proportional gain")                                                               \
    X(KI, "ki", 0.0, 0, HUGE_VAL, 0, 1, 0, "N m/(rad s)", "controller", "motor PID integral gain") \
    X(KD, "kd", 4.5, 0, HUGE_VAL, 0, 1, 0, "N m s/rad", "controller",                              \
      "motor PID derivative gain, on the measured velocity")                                       \
    X(I_MAX, "i_max", HUGE_VAL, 0, HUGE_VAL, 1, 0, 0, "N m", "controller",                         \
      "anti-windup bound on the integral action ki * integral")                                    \
    X(CTRL_PERIOD, "ctrl_period", 0.0, 0, HUGE_VAL, 0, 1, 0, "s", "controller",                    \
      "controller period, command held between ticks (0: every sub-step)")                         \
    X(LINK_KP, "link_kp", 0.8, 0, HUGE_VAL, 0, 1, 0, "N m/rad", "link",                            \
      "link PID proportional gain (mode 1)")                                                       \
    X(LINK_KI, "link_ki", 0.0, 0, HUGE_VAL, 0, 1, 0, "N m/(rad s)", "link",                        \
      "link PID integral gain (mode 1)")                                                           \
    X(LINK_KD, "link_kd", 0.2, 0, HUGE_VAL, 0, 1, 0, "N m s/rad", "link",                          \
      "link PID derivative gain (mode 1)")                                                         \
    X(LINK_TAU_MAX, "link_tau_max", HUGE_VAL, 0, HUGE_VAL, 1, 0, 0, "N m", "link",                 \
      "link PID output limit (mode 1)")                                                            \
    X(DRIVE, "drive", 0.0, 0, 1, 0, 0, 1, "", "electrical",                                        \
      "0: torque-controlled motor; 1: voltage drive (PWM dead zone, saturation, back-EMF)")        \
    X(KT, "motor_Kt", 0.8, 0, HUGE_VAL, 1, 1, 0, "N m/A", "electrical",                            \
      "motor torque constant (drive 1)")                                                           \
    X(KB, "motor_Kb", 0.3, 0, HUGE_VAL, 0, 1, 0, "V s/rad", "electrical",                          \
      "back-EMF constant (drive 1)")                                                               \
    X(R, "motor_R", 2.3, 0, HUGE_VAL, 1, 1, 0, "ohm", "electrical",                                \
      "winding resistance (drive 1)")                                                              \
    X(V_SUPPLY, "V_supply", 8.0, 0, HUGE_VAL, 1, 1, 0, "V", "electrical",                          \
      "H-bridge supply voltage (drive 1)")                                                         \
    X(DEAD_ZONE, "dead_zone", 0.3, 0, 1, 0, 1, 0, "", "electrical",                                \
      "PWM dead zone as a fraction of the full command (drive 1)")                                 \
    X(LINK_FRICTION, "link_friction", 0.0, 0, HUGE_VAL, 0, 1, 0, "N m", "link",                    \
      "output-shaft static friction torque")                                                       \
    X(LINK_FRICTION_K, "link_friction_K", 1e3, 0, HUGE_VAL, 1, 1, 0, "N m/rad", "link",            \
      "output-shaft presliding stiffness")                                                         \
    X(LINK_VEL_MAX, "link_vel_max", 1e4, 0, HUGE_VAL, 1, 0, 0, "rad/s", "link",                    \
      "link speed beyond which the instance is stopped as diverged (inf: never)")

#define ASR_COMMON_PARAM_ENUM_(id, name, def, lo, hi, lo_open, hi_open, integer, unit, group, doc) \
    ASR_P_##id,
typedef enum asr_common_param {
    ASR_COMMON_PARAMS(ASR_COMMON_PARAM_ENUM_) /* ASR_P_MOTOR_J = 0, ... */
    ASR_NCOMMON
} asr_common_param;
#undef ASR_COMMON_PARAM_ENUM_

/* ------------------------------------------------------------------ compliance models */

/* The inputs of a compliance model, listed once: X(name, unit, doc) in struct order. The struct
 * below, its lane copy (springs.h), the initialisers from lanes and the name table
 * (asr_elastic_in_name, Python's IN_FIELDS) are generated from it. */
#define ASR_ELASTIC_INPUTS(X)                                                                      \
    X(q, "rad", "link angle")                                                                      \
    X(qd, "rad/s", "link velocity")                                                                \
    X(th1, "rad", "motor 1 angle")                                                                 \
    X(th2, "rad", "motor 2 angle (adjuster models: the stiffness input)")                          \
    X(th1d, "rad/s", "motor 1 velocity")                                                           \
    X(th2d, "rad/s", "motor 2 velocity")

/* Input of a compliance model for one joint. */
#define ASR_ELASTIC_IN_FIELD_(name, unit, doc) double name;
typedef struct asr_elastic_in {
    ASR_ELASTIC_INPUTS(ASR_ELASTIC_IN_FIELD_)
} asr_elastic_in;
#undef ASR_ELASTIC_IN_FIELD_

/* Indices of asr_elastic_in's fields in asr_elastic_in_name's table: ASR_EI_<name>, then the
 * count ASR_NELASTIC_IN. */
#define ASR_ELASTIC_IN_ENUM_(name, unit, doc) ASR_EI_##name,
typedef enum asr_elastic_in_field {
    ASR_ELASTIC_INPUTS(ASR_ELASTIC_IN_ENUM_) /* ASR_EI_q = 0, ... */
    ASR_NELASTIC_IN
} asr_elastic_in_field;
#undef ASR_ELASTIC_IN_ENUM_

/* Name of asr_elastic_in field k (0 <= k < ASR_NELASTIC_IN, in struct order), or NULL. */
const char* asr_elastic_in_name(int k);

/* The real outputs of a compliance model, listed once: X(name, unit, doc) in struct order. The
 * struct below, the lane copy of the step (springs.h), the finiteness check and the name table
 * (asr_elastic_out_name, Python's OUT_FIELDS) are generated from it. */
#define ASR_ELASTIC_OUTPUTS(X)                                                                     \
    X(tau1, "N m", "torque of spring 1 on the link")                                               \
    X(tau2, "N m", "torque of spring 2 on the link")                                               \
    X(stiffness, "N m/rad", "-d(tau1 + tau2)/dq")                                                  \
    X(damping, "N m s/rad", "-d(tau1 + tau2)/dqd")                                                 \
    X(load1, "N m", "torque of the mechanism on motor 1")                                          \
    X(load2, "N m", "torque of the mechanism on motor 2")                                          \
    X(kload1, "N m/rad", "-d(load1)/d(th1), used by the implicit motor update")                    \
    X(kload2, "N m/rad", "-d(load2)/d(th2), used by the implicit motor update")                    \
    X(cload1, "N m s/rad", "-d(load1)/d(th1d)")                                                    \
    X(cload2, "N m s/rad", "-d(load2)/d(th2d)")                                                    \
    X(defl1, "rad", "deflection of spring 1 after clamping")                                       \
    X(defl2, "rad", "deflection of spring 2 after clamping")

/* Output of a compliance model for one joint: the real outputs, then the clamp count. */
#define ASR_ELASTIC_OUT_FIELD_(name, unit, doc) double name;
typedef struct asr_elastic_out {
    ASR_ELASTIC_OUTPUTS(ASR_ELASTIC_OUT_FIELD_)
    int clamped; /* number of springs at their deflection limit */
} asr_elastic_out;
#undef ASR_ELASTIC_OUT_FIELD_

/* Indices of asr_elastic_out's fields in asr_elastic_out_name's table: ASR_EO_<name> for the
 * ASR_NELASTIC_REAL real outputs, then ASR_EO_CLAMPED (the int). */
#define ASR_ELASTIC_OUT_ENUM_(name, unit, doc) ASR_EO_##name,
typedef enum asr_elastic_out_field {
    ASR_ELASTIC_OUTPUTS(ASR_ELASTIC_OUT_ENUM_) /* ASR_EO_tau1 = 0, ... */
    ASR_NELASTIC_REAL,
    ASR_EO_CLAMPED = ASR_NELASTIC_REAL,
    ASR_NELASTIC_OUT
} asr_elastic_out_field;
#undef ASR_ELASTIC_OUT_ENUM_

/* Name of asr_elastic_out field k (0 <= k < ASR_NELASTIC_OUT, in struct order), or NULL. */
const char* asr_elastic_out_name(int k);

/* Compliance function: p points at the model's own parameters (after the common ones).
 * Returns 0 on success. Callback rule (this and asr_refmap_fn, in a batch step and in
 * asr_compliance_eval / asr_reference_map_eval alike): a non-zero return aborts that instance's
 * step (the instance is frozen) or that point's evaluation; ASR_ERR_RANGE is reported as
 * ASR_ERR_RANGE (a parameter or input outside the model's range), any other value as
 * ASR_ERR_CALLBACK. In a batch step, a zero return with a NaN or inf output (any field) freezes
 * the instance with ASR_ERR_NONFINITE (reset: ASR_ERR_RANGE for such a refmap result). The
 * Python bindings return ASR_ERR_CALLBACK from a Python model that raised, keep its exception and
 * re-raise it when the C call returns. */
typedef int (*asr_elastic_fn)(void* user, const double* p, const asr_elastic_in* in,
                              asr_elastic_out* out);

/* Reference map (equilibrium, preset) -> (th1, th2). Returns 0 on success; non-zero as for
 * asr_elastic_fn. */
typedef int (*asr_refmap_fn)(void* user, const double* p, double eq, double preset, double* th1,
                             double* th2);

/* A model's own default for common parameter k. */
typedef struct asr_param_default {
    int k; /* asr_common_param index */
    double value;
} asr_param_default;

/* Kinds of stiffness preset (the dashboard's soft / stiff command). */
typedef enum asr_preset_kind {
    ASR_PRESET_NONE = 0, /* no stiffness command (rigid joint) */
    ASR_PRESET_REF = 1,  /* the second reference of modes 3 and 6 */
    ASR_PRESET_PARAM = 2 /* a spring parameter set directly (single-motor SEAs) */
} asr_preset_kind;

/* What a model's second reference (preset) means and its stiffness preset: the one place these
 * are defined (the package, the dashboard and the docs read them from here). */
typedef struct asr_ref2_spec {
    const char* meaning;     /* what the second reference / preset is, e.g. "preset angle" */
    const char* unit;        /* unit of the preset (PARAM kind: the parameter's unit) */
    int kind;                /* asr_preset_kind */
    const char* param;       /* PARAM kind: name of the spring parameter the preset sets */
    double lo, hi;           /* preset range offered (soft .. stiff lie inside) */
    double soft, stiff;      /* the soft and stiff presets */
    const char* below_param; /* non-NULL: the second reference must lie in [lo, p) with p this
                                   model parameter (AwAS-II: pivot s in [0, L)) */
} asr_ref2_spec;

typedef struct asr_model_def {
    const char* name;
    const char* doc;
    int nmotor;        /* dynamic motors: 0 (rigid), 1 (SEA, adjuster), 2 (antagonistic) */
    int kinematic_th2; /* 1: th2 is a kinematic input (AwAS-II pivot), not a motor */
    int nparam;        /* number of model parameters */
    const asr_param_spec* params;      /* nparam specs */
    int ndefault;                      /* number of overridden common defaults */
    const asr_param_default* defaults; /* ndefault overrides of the toolbox's defaults */
    asr_elastic_fn elastic;
    asr_refmap_fn refmap;
    void* user;         /* passed to elastic and refmap (NULL for built-in models) */
    asr_ref2_spec ref2; /* the second reference and the stiffness preset */
} asr_model_def;

/* Built-in models, in a fixed order: rigid, sea, sea_damped, awas2, bavs, qbmove_advanced, qbmove. */
int asr_model_count(void);
const asr_model_def* asr_model_get(int index);
/* Index of a built-in model by name, or -1. */
int asr_model_find(const char* name);
/* Spec of common parameter k (0 <= k < ASR_NCOMMON), or NULL. */
const asr_param_spec* asr_common_param_spec(int k);
/* Default of common parameter k for a model (its override or the toolbox default). */
double asr_common_param_default(const asr_model_def* model, int k);
/* 1 if value is inside spec's range (and integral where required), else 0. */
int asr_param_valid(const asr_param_spec* spec, double value);
/* A joint's parameter slots in a batch: the common parameters, then the model's own. */
#define ASR_MAX_PARAM 64
/* The most parameters of its own a model may have in a batch (ASR_MAX_PARAM less the
 * ASR_NCOMMON common ones); asr_batch_create refuses a model with more. */
int asr_model_max_params(void);

/* Evaluate a model at n points. params holds the model's own parameters (model->nparam values,
 * no common ones) of point m at params + m*pstride (pstride 0: one set shared by every point,
 * pstride = model->nparam: one row per point). in[n], out[n]. Every point is evaluated; a point
 * with a non-finite input (ASR_ERR_INPUT), a parameter out of range (ASR_ERR_RANGE), a failed
 * callback (its status) or a non-finite result (ASR_ERR_RANGE: finite inputs outside the range
 * where the model's result is finite) gets zero outputs and clamped = -1; the first such status
 * is returned. */
asr_status asr_compliance_eval(const asr_model_def* model, int n, const double* params, int pstride,
                               const asr_elastic_in* in, asr_elastic_out* out);

/* Reference map at n points; params and bad points as in asr_compliance_eval (bad points get
 * th1 = th2 = 0). */
asr_status asr_reference_map_eval(const asr_model_def* model, int n, const double* params,
                                  int pstride, const double* eq, const double* preset, double* th1,
                                  double* th2);

#endif
