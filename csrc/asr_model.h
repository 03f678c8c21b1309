/* asr_model.h - operation modes, parameter specs and compliance models
 * (model definitions, their second reference / stiffness preset, elastic and refmap callbacks).
 * Part of the public C API: included by asr.h, whose conventions (naming, SI units, layouts,
 * no system includes: this is also the cffi cdef) apply here.
 */
#ifndef ASR_API_MODEL_H
#define ASR_API_MODEL_H

#include "asr_status.h"

/* ------------------------------------------------------------------ operation modes */

/* The seven operation modes of the reference toolbox ([Mengacci2021] sec. 3.1), same numbers. */
typedef enum asr_mode {
    ASR_MODE_LINK_TORQUE = 0,   /* ref1 = link torque (rigid joint) */
    ASR_MODE_LINK_PID = 1,      /* ref1 = link position, PID on the link (rigid joint) */
    ASR_MODE_MOTOR_POS = 2,     /* ref1, ref2 = motor positions, motors ideal position sources */
    ASR_MODE_EQ_PRESET = 3,     /* ref1, ref2 = equilibrium, preset -> map -> as mode 2 */
    ASR_MODE_MOTOR_TORQUE = 4,  /* ref1, ref2 = motor torque (or PWM command), motor dynamics */
    ASR_MODE_MOTOR_PID = 5,     /* ref1, ref2 = motor position references, PID + motor dynamics */
    ASR_MODE_EQ_PRESET_PID = 6  /* ref1, ref2 = equilibrium, preset references -> map -> mode 5 */
} asr_mode;

/* ------------------------------------------------------------------ parameter specs */

typedef struct asr_param_spec {
    const char* name;           /* parameter name, as used in Python keywords */
    double def;                 /* default value */
    double lo, hi;              /* valid closed range [lo, hi], after the open flags below */
    int lo_open, hi_open;       /* 1: the bound itself is excluded */
    int integer;                /* 1: value must be an integer (flags, enumerations) */
    const char* unit;           /* SI unit, "" for non-dimensional */
    const char* group;          /* "spring", "motor", "friction", "controller", "electrical", "link" */
    const char* doc;            /* one line */
} asr_param_spec;

/* Common joint parameters (motor, friction, controllers, electrical interface, link friction).
 * Every joint has them, in this order, before its model's own compliance parameters. */
typedef enum asr_common_param {
    ASR_P_MOTOR_J = 0,          /* motor inertia at the output, kg m^2, > 0 */
    ASR_P_MOTOR_D,              /* motor viscous damping, N m s/rad, >= 0 */
    ASR_P_TAU_MAX,              /* motor torque limit, N m, > 0 */
    ASR_P_VEL_MAX,              /* motor velocity limit, rad/s, > 0 (inf: none) */
    ASR_P_POS_MIN,              /* motor lower position limit, rad */
    ASR_P_POS_MAX,              /* motor upper position limit, rad */
    ASR_P_FRICTION,             /* motor static friction torque, N m, >= 0 */
    ASR_P_FRICTION_K,           /* motor presliding stiffness, N m/rad, > 0 */
    ASR_P_KP,                   /* motor PID proportional gain */
    ASR_P_KI,                   /* motor PID integral gain */
    ASR_P_KD,                   /* motor PID derivative gain (on measurement) */
    ASR_P_I_MAX,                /* anti-windup bound on ki * integral, controller units */
    ASR_P_CTRL_PERIOD,          /* controller period, s (0: every integration sub-step) */
    ASR_P_LINK_KP,              /* link PID (mode 1) proportional gain, N m/rad */
    ASR_P_LINK_KI,              /* link PID integral gain, N m/(rad s) */
    ASR_P_LINK_KD,              /* link PID derivative gain, N m s/rad */
    ASR_P_LINK_TAU_MAX,         /* link PID output limit, N m */
    ASR_P_DRIVE,                /* 0: torque-controlled motor, 1: voltage drive (PWM + H-bridge) */
    ASR_P_KT,                   /* torque constant, N m/A (voltage drive) */
    ASR_P_KB,                   /* back-EMF constant, V s/rad (voltage drive) */
    ASR_P_R,                    /* winding resistance, ohm (voltage drive) */
    ASR_P_V_SUPPLY,             /* supply voltage, V (voltage drive) */
    ASR_P_DEAD_ZONE,            /* PWM dead zone as a fraction of full command (voltage drive) */
    ASR_P_LINK_FRICTION,        /* output-shaft static friction, N m, >= 0 */
    ASR_P_LINK_FRICTION_K,      /* output-shaft presliding stiffness, N m/rad, > 0 */
    ASR_P_LINK_VEL_MAX,         /* link speed taken as divergence, rad/s, > 0 */
    ASR_NCOMMON
} asr_common_param;

/* ------------------------------------------------------------------ compliance models */

/* Input of a compliance model for one joint. */
typedef struct asr_elastic_in {
    double q, qd;               /* link angle, rad; link velocity, rad/s */
    double th1, th2;            /* motor 1, 2 angles, rad (adjuster models: th2 = stiffness input) */
    double th1d, th2d;          /* motor 1, 2 velocities, rad/s */
} asr_elastic_in;

/* Output of a compliance model for one joint. */
typedef struct asr_elastic_out {
    double tau1, tau2;          /* torque of spring 1, 2 on the link, N m */
    double stiffness;           /* -d(tau1 + tau2)/dq, N m/rad */
    double damping;             /* -d(tau1 + tau2)/dqd, N m s/rad */
    double load1, load2;        /* torque of the mechanism on motor 1, 2, N m */
    double kload1, kload2;      /* -d(load_i)/d(th_i), N m/rad (used by the implicit motor update) */
    double cload1, cload2;      /* -d(load_i)/d(th_i_dot), N m s/rad */
    double defl1, defl2;        /* spring deflections after clamping, rad */
    int clamped;                /* number of springs at their deflection limit */
} asr_elastic_out;

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
typedef int (*asr_refmap_fn)(void* user, const double* p, double eq, double preset,
                             double* th1, double* th2);

/* A model's own default for common parameter k. */
typedef struct asr_param_default {
    int k;                      /* asr_common_param index */
    double value;
} asr_param_default;

/* Kinds of stiffness preset (the dashboard's soft / stiff command). */
typedef enum asr_preset_kind {
    ASR_PRESET_NONE = 0,        /* no stiffness command (rigid joint) */
    ASR_PRESET_REF = 1,         /* the second reference of modes 3 and 6 */
    ASR_PRESET_PARAM = 2        /* a spring parameter set directly (single-motor SEAs) */
} asr_preset_kind;

/* What a model's second reference (preset) means and its stiffness preset: the one place these
 * are defined (the package, the dashboard and the docs read them from here). */
typedef struct asr_ref2_spec {
    const char* meaning;        /* what the second reference / preset is, e.g. "preset angle" */
    const char* unit;           /* unit of the preset (PARAM kind: the parameter's unit) */
    int kind;                   /* asr_preset_kind */
    const char* param;          /* PARAM kind: name of the spring parameter the preset sets */
    double lo, hi;              /* preset range offered (soft .. stiff lie inside) */
    double soft, stiff;         /* the soft and stiff presets */
    const char* below_param;    /* non-NULL: the second reference must lie in [lo, p) with p this
                                   model parameter (AwAS-II: pivot s in [0, L)) */
} asr_ref2_spec;

typedef struct asr_model_def {
    const char* name;
    const char* doc;
    int nmotor;                 /* dynamic motors: 0 (rigid), 1 (SEA, adjuster), 2 (antagonistic) */
    int kinematic_th2;          /* 1: th2 is a kinematic input (AwAS-II pivot), not a motor */
    int nparam;                 /* number of model parameters */
    const asr_param_spec* params;          /* nparam specs */
    int ndefault;               /* number of overridden common defaults */
    const asr_param_default* defaults;     /* ndefault overrides of the toolbox's defaults */
    asr_elastic_fn elastic;
    asr_refmap_fn refmap;
    void* user;                 /* passed to elastic and refmap (NULL for built-in models) */
    asr_ref2_spec ref2;         /* the second reference and the stiffness preset */
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
/* The most parameters of its own a model may have in a batch (the common ones take the rest of
 * a joint's parameter slots); asr_batch_create refuses a model with more. */
int asr_model_max_params(void);

/* Evaluate a model at n points. params holds the model's own parameters (model->nparam values,
 * no common ones) of point m at params + m*pstride (pstride 0: one set shared by every point,
 * pstride = model->nparam: one row per point). in[n], out[n]. Every point is evaluated; a point
 * with a non-finite input (ASR_ERR_INPUT), a parameter out of range (ASR_ERR_RANGE), a failed
 * callback (its status) or a non-finite result (ASR_ERR_RANGE: finite inputs outside the range
 * where the model's result is finite) gets zero outputs and clamped = -1; the first such status
 * is returned. */
asr_status asr_compliance_eval(const asr_model_def* model, int n, const double* params,
                               int pstride, const asr_elastic_in* in, asr_elastic_out* out);

/* Reference map at n points; params and bad points as in asr_compliance_eval (bad points get
 * th1 = th2 = 0). */
asr_status asr_reference_map_eval(const asr_model_def* model, int n, const double* params,
                                  int pstride, const double* eq, const double* preset,
                                  double* th1, double* th2);

#endif
