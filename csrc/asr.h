/* asr.h - public C API of the asr compliant-actuator core.
 *
 * This header is also the cffi cdef: asr/_build.py runs it through the C preprocessor (the state
 * fields are an X-macro list, asr_fields.h) and hands the result to cdef(), so keep it to plain
 * typedefs, enums, prototypes and macros that expand to them (no system includes, no static
 * inline functions).
 *
 * Naming
 *   asr_<thing>            types (structs, enums, function pointer types)
 *   asr_<thing>_<verb>()   functions; functions acting on a batch take it as first argument
 *   ASR_<NAME>             enum constants
 *
 * Units are SI everywhere: rad, rad/s, N m, N m/rad, N m s/rad, kg m^2, s, V, A, ohm.
 * Inputs of the batch are (n_inst x n_joint) row-major: element (i, j) at i*n_joint + j. The batch
 * state is (n_inst x n_joint x ASR_NFIELD): all fields of one joint are contiguous.
 * Every public function returns an asr_status and never aborts or exits.
 */
#ifndef ASR_H
#define ASR_H

#include "asr_fields.h"

/* ------------------------------------------------------------------ status codes */

typedef enum asr_status {
    ASR_OK = 0,
    ASR_ERR_NULL = 1,           /* a required pointer was NULL */
    ASR_ERR_RANGE = 2,          /* an argument or parameter is outside its valid range */
    ASR_ERR_MODEL = 3,          /* unknown model, or a mode the model does not support */
    ASR_ERR_PARAM = 4,          /* unknown parameter index */
    ASR_ERR_NONFINITE = 5,      /* NaN or inf in the state after a step (instance frozen) */
    ASR_ERR_INPUT = 6,          /* NaN or inf in an input (q, qd, refs, external torques) */
    ASR_ERR_NOMEM = 7,          /* allocation failed */
    ASR_ERR_CALLBACK = 8,       /* a user model callback returned non-zero */
    ASR_ERR_DIVERGED = 9        /* a link turned faster than link_vel_max (instance frozen) */
} asr_status;

/* More motor sub-steps per step than this is a configuration error (ASR_ERR_RANGE). */
enum { ASR_MAX_SUBSTEPS = 1000000 };

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
 * ASR_ERR_CALLBACK. The Python bindings return ASR_ERR_CALLBACK from a Python model that raised,
 * keep its exception and re-raise it when the C call returns. */
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

/* Evaluate a model at n points. params holds the model's own parameters (model->nparam values,
 * no common ones) of point m at params + m*pstride (pstride 0: one set shared by every point,
 * pstride = model->nparam: one row per point). in[n], out[n]. Every point is evaluated; a point
 * with a non-finite input (ASR_ERR_INPUT), a parameter out of range (ASR_ERR_RANGE), a failed
 * callback or a non-finite result gets zero outputs and clamped = -1; the first such status is
 * returned. */
asr_status asr_compliance_eval(const asr_model_def* model, int n, const double* params,
                               int pstride, const asr_elastic_in* in, asr_elastic_out* out);

/* Reference map at n points; params and bad points as in asr_compliance_eval (bad points get
 * th1 = th2 = 0). */
asr_status asr_reference_map_eval(const asr_model_def* model, int n, const double* params,
                                  int pstride, const double* eq, const double* preset,
                                  double* th1, double* th2);

/* ------------------------------------------------------------------ the batch */

/* State fields. The caller-owned state block is (n_inst x n_joint x ASR_NFIELD) doubles: field k of
 * instance i, joint j at state[(i*n_joint + j)*ASR_NFIELD + k], so one joint's state is one
 * contiguous record. The fields are listed once, in asr_fields.h. */
#define ASR_FIELD_ENUM_(id, name, unit, doc) ASR_F_##id,
#define ASR_FIELD_COUNT_(id, name, unit, doc) +1
typedef enum asr_field {
    ASR_STATE_FIELDS(ASR_FIELD_ENUM_)   /* ASR_F_TAU_JOINT = 0, ... (asr_fields.h) */
    ASR_NFIELD,
    /* the first ASR_NCHECKED fields are computed by the step and checked for NaN/inf after
     * every step; the rest are copies of checked inputs and counters */
    ASR_NCHECKED = 0 ASR_STATE_FIELDS_CHECKED(ASR_FIELD_COUNT_)
} asr_field;
#undef ASR_FIELD_ENUM_
#undef ASR_FIELD_COUNT_

/* Name, SI unit ("" when none or per mode) and description (without the unit) of field k; NULL
 * when k is not a field. */
const char* asr_state_field_name(int k);
const char* asr_state_field_unit(int k);
const char* asr_state_field_doc(int k);

/* Per-instance status, caller-owned (n_inst each). */
typedef struct asr_status_arrays {
    int* code;                  /* asr_status of the instance; non-zero: frozen since */
    int* joint;                 /* joint where it happened, -1 if none */
    long long* step;            /* step count when it happened, -1 if none */
} asr_status_arrays;

typedef struct asr_batch asr_batch;

/* Create a batch of n_inst instances of n_joint joints. model_defs[j] is the model of joint j
 * (kept by pointer: it must outlive the batch), modes[j] its operation mode. state is the
 * caller-owned block of n_inst * n_joint * ASR_NFIELD doubles; status the caller-owned status
 * arrays. Parameters start at their model defaults.
 * Threads: a batch takes no locks. Use each batch from one caller thread at a time (its calls
 * run its own worker threads; asr_batch_set_param may reallocate arrays they read, so it must
 * not overlap a step). Separate batches share no mutable state and may run at once. */
asr_status asr_batch_create(asr_batch** out, int n_inst, int n_joint,
                            const asr_model_def* const* model_defs, const int* modes,
                            double* state, asr_status_arrays status);
void asr_batch_destroy(asr_batch* b);

/* Number of parameters of joint j (ASR_NCOMMON + the model's own). */
int asr_batch_nparam(const asr_batch* b, int joint);

/* Set parameter k of joint j to count values (1: shared by all instances, n_inst: one each).
 * Every value is checked against the parameter's range; on failure nothing changes and
 * *bad_index (if not NULL) receives the index of the first offending value. */
asr_status asr_batch_set_param(asr_batch* b, int joint, int k, const double* values, int count,
                               int* bad_index);
/* Copy parameter k of joint j for every instance into out[n_inst]. */
asr_status asr_batch_get_param(const asr_batch* b, int joint, int k, double* out);
/* Change the operation mode of joint j. */
asr_status asr_batch_set_mode(asr_batch* b, int joint, int mode);

/* Integration: each step of length dt is split into ceil(dt / max_substep) equal motor sub-steps
 * (linearly implicit, stable for any sub-step). Default max_substep = 1e-3 s. */
asr_status asr_batch_set_max_substep(asr_batch* b, double max_substep);

/* Motor sub-step scheme. EULER: linearly implicit (backward) Euler, first order, L-stable; it
 * damps an undamped motor oscillation of frequency w with a damping ratio of about h w / 2.
 * TRAPEZOID: linearly implicit trapezoidal rule, second order, A-stable, no numerical damping
 * of a linear oscillator (stiff modes ring instead of dying out). Default EULER. */
typedef enum asr_motor_scheme {
    ASR_MOTOR_EULER = 0,
    ASR_MOTOR_TRAPEZOID = 1
} asr_motor_scheme;
asr_status asr_batch_set_motor_scheme(asr_batch* b, int scheme);
/* Worker threads for step and rollout (>= 1). Results do not depend on it. */
asr_status asr_batch_set_threads(asr_batch* b, int n_threads);

/* Reset every instance: zero the state, clear statuses, set link state to q0 (n_inst x n_joint,
 * or NULL for zero) and put the motors where the references refs0 (n_inst x n_joint x 2, or NULL)
 * put them in the joint's mode (modes 2, 3, 5, 6), else at zero deflection from q0. */
asr_status asr_batch_reset(asr_batch* b, const double* q0, const double* refs0);

/* Reset only instances[count] (as asr_batch_reset does, with q0 and refs0 laid out for the whole
 * batch, read at those instances' rows); the others and the step count are untouched (e.g. the
 * sub-environments of a vector environment that ended). */
asr_status asr_batch_reset_instances(asr_batch* b, int count, const int* instances,
                                     const double* q0, const double* refs0);

/* One step of length dt for every instance. q, qd: (n_inst x n_joint); refs: (n_inst x n_joint
 * x 2); tau_ext, tau_ff: (n_inst x n_joint) or NULL (zero). tau_ff is a feed-forward motor torque
 * (gravity compensation, [Kamedula2016] eq. 4) used in modes 5 and 6 of single-motor joints.
 * The joint torques to apply are in the state field ASR_F_TAU_JOINT afterwards. Returns ASR_OK
 * or the first non-zero instance status newly raised during this step. */
asr_status asr_batch_step(asr_batch* b, double dt, const double* q, const double* qd,
                          const double* refs, const double* tau_ext, const double* tau_ff);

/* nstep steps with a fixed-link or prescribed link trajectory. Each time-varying input is given
 * with a time stride in doubles (0: the same array every step): q and qd (stride_q),
 * refs (stride_refs), tau_ext (stride_ext, may be NULL). Fields listed in record_fields[nrecord]
 * are copied after every step into record[((t * nrecord + r) * n_inst + i) * n_joint + j]
 * (record may be NULL when nrecord == 0). Threads are started once for the whole rollout. */
asr_status asr_batch_rollout(asr_batch* b, int nstep, double dt,
                             const double* q, const double* qd, long long stride_q,
                             const double* refs, long long stride_refs,
                             const double* tau_ext, long long stride_ext,
                             int nrecord, const int* record_fields, double* record);

/* Number of steps taken since the last reset. */
long long asr_batch_step_count(const asr_batch* b);

/* ------------------------------------------------------------------ rigid-body engine coupling */

/* One of the engine's step halves, e.g. MuJoCo's mj_step1 and mj_step2 (model, data). The core
 * needs only these two functions and pointers into the engine's arrays, so it does not compile
 * against any engine version. */
typedef void (*asr_engine_fn)(const void* model, void* data);

/* An engine with one model and one data per instance (several instances may share a model). */
typedef struct asr_engine {
    asr_engine_fn step1;        /* positions and velocities ready; applied forces may change */
    asr_engine_fn step2;        /* integrates with the applied forces */
    const void* const* model;   /* n_inst engine models */
    void* const* data;          /* n_inst engine data, one per instance */
    double* const* qpos;        /* n_inst pointers to each data's generalized positions */
    double* const* qvel;        /* n_inst pointers to each data's generalized velocities */
    double* const* qfrc;        /* n_inst pointers to each data's applied generalized forces */
    const int* qpos_adr;        /* n_joint: index of joint j's angle in qpos, rad */
    const int* dof_adr;         /* n_joint: index of joint j's velocity / force in qvel, qfrc */
} asr_engine;

/* A per-instance, per-step input: the values of instance i at step t start at
 * data + i*stride_i + t*stride_t (doubles, >= 0; stride 0: the same for every instance or step),
 * one value per joint (two for references). data NULL: zero. */
typedef struct asr_series {
    const double* data;
    long long stride_i, stride_t;
} asr_series;

/* nstep coupled steps of length dt (the engine's own time step): for every instance and step,
 * step1 -> link state of the actuated joints -> actuator step with refs, tau_ext and tau_ff
 * (as in asr_batch_step) -> joint torques written into qfrc[dof_adr] (the other entries are
 * left to the caller) -> step2. refs must not be NULL. Fields record_fields[nrecord] are copied
 * after every step into record[((r * n_inst + i) * nstep + t) * n_joint + j]: ASR_F_Q and ASR_F_QD
 * from the engine after step2 (the link state at the end of the step), the others from the state
 * (torques applied over the step, motors at its end). Each thread runs whole instances over all
 * steps, so results do not depend on the thread count. */
asr_status asr_batch_rollout_engine(asr_batch* b, const asr_engine* engine, int nstep, double dt,
                                    asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                    int nrecord, const int* record_fields, double* record);

/* ------------------------------------------------------------------ continuum parallel robots */

/* A Cosserat rod (static, Till's convention; docs/cpr.md). State y (ASR_ROD_NSTATE
 * doubles) along the arc length: p (3, m), R (9, row-major, rod frame -> world), n (3, N),
 * m (3, N m); n and m are the internal force and moment in the world frame, exerted by the
 * material beyond s on the material before it. Circular cross-section of radius r. */
enum { ASR_ROD_NSTATE = 18 };

typedef struct asr_rod {
    double E, G;                /* Young's and shear moduli, Pa, > 0 */
    double r;                   /* cross-section radius, m, > 0 */
    double rho;                 /* density, kg/m^3, >= 0 (weight rho*A*g per metre) */
    double g[3];                /* gravity, m/s^2, world */
    double u0[3];               /* precurvature, 1/m, rod frame (0: straight) */
    double f_ext[3];            /* distributed external force, N/m, world */
} asr_rod;

/* Integrate a rod of length L (m, > 0) from its base state y0 (18) with fixed-step RK4 over
 * n_grid >= 2 points (n_grid - 1 steps). y_tip (18) receives the state at s = L; path, if not
 * NULL, receives all n_grid states (n_grid x 18). No allocation. */
asr_status asr_rod_integrate(const asr_rod* rod, double L, const double* y0, int n_grid,
                             double* y_tip, double* path);

/* Base joint of a leg (actuated; its value q is the leg's joint value). */
typedef enum asr_cpr_base {
    ASR_CPR_BASE_REVOLUTE = 0,  /* q: angle about base_axis, rad; the rod frame turns with it */
    ASR_CPR_BASE_PRISMATIC = 1, /* q: displacement along base_axis, m */
    ASR_CPR_BASE_EXTENSIBLE = 2 /* q: the rod length, m (fed through the base) */
} asr_cpr_base;

/* Joint between a rod tip and the plate ([Gotelli2022], Table 1). */
typedef enum asr_cpr_tip {
    ASR_CPR_TIP_FIXED = 0,      /* clamped: position and orientation */
    ASR_CPR_TIP_REVOLUTE = 1,   /* free rotation about tip_axis, zero moment about it */
    ASR_CPR_TIP_PRISMATIC = 2,  /* free translation along tip_axis, zero force along it */
    ASR_CPR_TIP_SPHERICAL = 3   /* position only, zero moment */
} asr_cpr_tip;

typedef struct asr_cpr_leg {
    asr_rod rod;
    double L;                   /* rod length, m (ignored for extensible legs: L = q) */
    int base_joint;             /* asr_cpr_base */
    double base_p[3];           /* base joint origin, m, world */
    double base_R[9];           /* rod base frame at q = 0 (row-major; 3rd column = tangent) */
    double base_axis[3];        /* unit joint axis, world (revolute, prismatic) */
    int free_twist;             /* 1: the rod may twist in its base hole: no moment about its
                                 * base tangent, tip twist free (isotropic straight rods, fixed
                                 * tip only); the leg then has 5 base wrench unknowns */
    int tip_joint;              /* asr_cpr_tip */
    double tip_p[3];            /* attachment point, m, plate frame */
    double tip_R[9];            /* clamped rod tip frame, plate frame (row-major) */
    double tip_axis[3];         /* unit joint axis, plate frame (revolute, prismatic) */
} asr_cpr_leg;

typedef struct asr_cpr {
    int n_leg;
    const asr_cpr_leg* legs;    /* n_leg legs */
    double plate_mass;          /* kg, centre of mass at the plate origin */
    double g[3];                /* gravity on the plate, m/s^2, world */
    double wrench[6];           /* external force (N) and moment (N m) at the plate origin, world */
} asr_cpr;

typedef enum asr_cpr_problem {
    ASR_CPR_IGM = 0,            /* plate pose given (in x), find the joint values */
    ASR_CPR_DGM = 1             /* joint values given (in x), find the plate pose */
} asr_cpr_problem;

typedef struct asr_cpr_options {
    int n_grid;                 /* rod grid points, >= 2 */
    double tol;                 /* converged when the residual 2-norm is below this, > 0 */
    int max_iter;               /* Levenberg-Marquardt iterations, >= 1 */
    int threads;                /* threads over legs within a Jacobian, >= 1 */
} asr_cpr_options;

typedef struct asr_cpr_report {
    int converged;              /* 1 when the residual norm reached tol */
    int iterations;             /* Levenberg-Marquardt steps (forward-difference or Broyden J) */
    double residual_norm;       /* 2-norm of the residual at the returned x */
} asr_cpr_report;

/* Length of the unknown vector x: per leg [n0 (3), m0 (3, or 2 with free_twist: components
 * along the base frame's 1st and 2nd columns), q (1)], then the plate [position (3, m),
 * rotation vector (3, rad)]. n0, m0 in N and N m, world. */
int asr_cpr_nx(const asr_cpr* robot);

/* Solve in place from the guess x (warm start): the IGM keeps the plate part of x fixed, the DGM
 * keeps every q fixed. x receives the last iterate even when it did not converge. */
asr_status asr_cpr_solve(const asr_cpr* robot, int problem, double* x,
                         const asr_cpr_options* opt, asr_cpr_report* report);

/* What a solve hands on to the next solve of a warm-started sequence, in one buffer of
 * asr_cpr_carry_size(robot, problem) doubles: the last Jacobian J (asr_cpr_nres x asr_cpr_nact,
 * column-major), then its inverse when the system is square (nact x nact, column-major), then
 * the rods' tip states at x (n_leg x 18, row per leg). Flags say which parts hold values. */
enum { ASR_CPR_CARRY_J = 1, ASR_CPR_CARRY_INV = 2, ASR_CPR_CARRY_TIPS = 4 };
int asr_cpr_carry_size(const asr_cpr* robot, int problem);

/* asr_cpr_solve with a carry buffer (see asr_cpr_carry_size). On input *flags says which parts
 * hold the previous solve's values: J and its inverse start the iteration (they are refreshed
 * when they stop helping; the answer never depends on them); tips must be the rods integrated
 * with opt->n_grid at x's leg unknowns, as in an IGM sequence, which only moves the plate, so the
 * first residual needs no rod integration. On output *flags says which parts hold this solve's
 * values. carry NULL: as asr_cpr_solve. */
asr_status asr_cpr_solve_warm(const asr_cpr* robot, int problem, double* x,
                              const asr_cpr_options* opt, asr_cpr_report* report, double* carry,
                              int* flags);

/* Number of unknowns the solver changes: asr_cpr_nx - 6 (IGM) or asr_cpr_nx - n_leg (DGM). */
int asr_cpr_nact(const asr_cpr* robot, int problem);

/* Solve `problem` at n targets: IGM targets are plate poses (n x 6: position, m, and rotation
 * vector, rad), DGM targets joint values (n x n_leg: rad, m or rod lengths). warm 0: every
 * target starts from x0 (nx) and they are independent, so opt->threads threads take whole
 * targets. warm 1: target k > 0 starts from the solution of target k-1, with its carry (see
 * asr_cpr_solve_warm; tips for the IGM only), a chain whose threads share each solve's rod
 * integrations. Results never depend on the thread count. xs (n x nx) receives each final
 * iterate, reports the n reports. Returns the first error status in target order;
 * non-convergence is not an error (see the reports). After an error, targets that were never
 * attempted report converged 0, iterations 0, residual_norm inf (with warm 0 and threads, which
 * ones depends on how the targets were split). */
asr_status asr_cpr_solve_batch(const asr_cpr* robot, int problem, int n, const double* targets,
                               const double* x0, int warm, const asr_cpr_options* opt,
                               double* xs, asr_cpr_report* reports);

/* The named quantities of n solver vectors xs (n x nx): joint values q (n x n_leg: rad, m or
 * rod lengths), plate position (n x 3, m), plate rotation (n x 9, row-major, plate -> world) and
 * base wrenches (n x n_leg x 6: n0, N, and m0, N m, world). Any output may be NULL. */
asr_status asr_cpr_unpack(const asr_cpr* robot, int n, const double* xs, double* q,
                          double* position, double* rotation, double* base_wrenches);

/* Rotation matrix R (9, row-major) of the rotation vector w (3, rad); any finite w whose
 * length |w| is finite (ASR_ERR_RANGE when |w| overflows, ASR_ERR_INPUT for NaN or inf). */
asr_status asr_rot_exp(const double* w, double* R);

/* Rotation vector w (3, rad, angle in [0, pi]) of the rotation matrix R (9, row-major);
 * ASR_ERR_RANGE when R is not a rotation: max |R^T R - I| > tol, or det R < 0. */
asr_status asr_rot_log(const double* R, double tol, double* w);

/* Residual vector at x (length asr_cpr_nres(robot)) and rod centerlines (n_leg x n_grid x 3,
 * may be NULL). */
int asr_cpr_nres(const asr_cpr* robot);
asr_status asr_cpr_residual(const asr_cpr* robot, const double* x, int n_grid, double* res,
                            double* centerlines);

#endif
