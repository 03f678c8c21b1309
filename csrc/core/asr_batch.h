/* asr_batch.h - the batch: state fields, per-instance statuses, create, parameters,
 * reset, step and rollout (asr_series and the rollout layout shared with engine/asr_engine.h).
 * Part of the public C API: included by asr.h, whose conventions (naming, SI units, layouts,
 * no system includes: this is also the cffi cdef) apply here.
 */
#ifndef ASR_API_BATCH_H
#define ASR_API_BATCH_H

#include "asr_fields.h"
#include "asr_status.h"
#include "asr_model.h"

/* ------------------------------------------------------------------ the batch */

/* State fields. The caller-owned state block is (n_inst x n_joint x ASR_NFIELD) doubles: field k of
 * instance i, joint j at state[(i*n_joint + j)*ASR_NFIELD + k], so one joint's state is one
 * contiguous record. The fields are listed once, in asr_fields.h. */
#define ASR_FIELD_ENUM_(id, name, unit, doc) ASR_F_##id,
#define ASR_FIELD_COUNT_(id, name, unit, doc) +1
typedef enum asr_field {
    ASR_STATE_FIELDS(ASR_FIELD_ENUM_) /* ASR_F_TAU_JOINT = 0, ... (asr_fields.h) */
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
    int* code;       /* asr_status of the instance; non-zero: frozen since */
    int* joint;      /* joint where it happened, -1 if none */
    long long* step; /* step count when it happened, -1 if none */
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
                            const asr_model_def* const* model_defs, const int* modes, double* state,
                            asr_status_arrays status);
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
#define ASR_MOTOR_SCHEMES(X) X(EULER, "euler") X(TRAPEZOID, "trapezoid")
#define ASR_MOTOR_SCHEME_ENUM_(id, name) ASR_MOTOR_##id,
typedef enum asr_motor_scheme {
    ASR_MOTOR_SCHEMES(ASR_MOTOR_SCHEME_ENUM_) /* ASR_MOTOR_EULER = 0, ASR_MOTOR_TRAPEZOID = 1 */
    ASR_NMOTOR_SCHEME
} asr_motor_scheme;
#undef ASR_MOTOR_SCHEME_ENUM_
asr_status asr_batch_set_motor_scheme(asr_batch* b, int scheme);
/* Name of motor scheme k (0 <= k < ASR_NMOTOR_SCHEME), or NULL. */
const char* asr_motor_scheme_name(int k);
/* Worker threads for step and rollout (>= 1). Results do not depend on it. */
asr_status asr_batch_set_threads(asr_batch* b, int n_threads);
/* The instruction sets the step is built for, narrowest first, listed once: X(ID, name). */
#define ASR_SIMD_KERNELS(X) X(BASELINE, "baseline") X(AVX2, "avx2") X(AVX512, "avx512")
#define ASR_SIMD_ENUM_(id, name) ASR_SIMD_##id,
typedef enum asr_simd_kernel {
    ASR_SIMD_KERNELS(ASR_SIMD_ENUM_) ASR_NSIMD
} asr_simd_kernel;
#undef ASR_SIMD_ENUM_
/* Name of instruction set k (0 <= k < ASR_NSIMD), or NULL. */
const char* asr_simd_name(int k);
/* The instruction set the batch's step was built for: the widest this CPU runs and this build
 * has (non-x86 builds: "baseline"); the environment variable ASR_SIMD, one of the names, caps
 * it when the batch is created. Results do not depend on it. */
const char* asr_batch_simd(const asr_batch* b);

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

/* A batch's instances held in the step's lanes, parameters loaded once: for a caller that steps
 * the same batch one step at a time, again and again, with few instances (the MuJoCo plugin,
 * csrc/mujoco: one instance per actuator, stepped at every mj_step), where loading every
 * parameter into the lanes at each step would cost as much as the step. asr_lanes_step is
 * asr_batch_step, bit for bit (the same inputs, statuses, step count and result), on the calling
 * thread, loading only the state records per step; the parameters are loaded again when
 * asr_batch_set_param has changed one since. The lanes belong to the batch they were made for:
 * destroy them before it. */
typedef struct asr_lanes asr_lanes;
asr_status asr_lanes_create(asr_batch* b, asr_lanes** out);
void asr_lanes_destroy(asr_lanes* lanes);
asr_status asr_lanes_step(asr_lanes* lanes, double dt, const double* q, const double* qd,
                          const double* refs, const double* tau_ext, const double* tau_ff);

/* A per-instance, per-step input: the values of instance i at step t start at
 * data + i*stride_i + t*stride_t (doubles, >= 0; stride 0: the same for every instance or step),
 * one value per joint (two for references). data NULL: zero. */
typedef struct asr_series {
    const double* data;
    long long stride_i, stride_t;
} asr_series;

/* Rollout layout (asr_batch_rollout and asr_batch_rollout_engine, and asr.Batch.rollout and
 * asr.Sim.rollout in Python): instance first. Time-varying inputs are asr_series (per step:
 * (n_inst x nstep x n_joint[ x 2]), stride_i = nstep * n_joint[ * 2], stride_t = n_joint[ * 2];
 * held: (n_inst x n_joint[ x 2]), stride_t = 0). Fields listed in record_fields[nrecord] are
 * copied after every step into record[((r * n_inst + i) * nstep + t) * n_joint + j]
 * (record may be NULL when nrecord == 0). */

/* nstep steps with a fixed-link or prescribed link trajectory: q, qd, refs (data not NULL),
 * tau_ext (data may be NULL), in the rollout layout above. Threads are started once for the
 * whole rollout. */
asr_status asr_batch_rollout(asr_batch* b, int nstep, double dt, asr_series q, asr_series qd,
                             asr_series refs, asr_series tau_ext, int nrecord,
                             const int* record_fields, double* record);

/* Number of steps taken since the last reset. */
long long asr_batch_step_count(const asr_batch* b);

/* The batch's sizes (-1 when b is NULL) and joint's operation mode (-1 when out of range). */
int asr_batch_n_inst(const asr_batch* b);
int asr_batch_n_joint(const asr_batch* b);
int asr_batch_mode(const asr_batch* b, int joint);
/* The values of instance i at step t of s (s.data + i * s.stride_i + t * s.stride_t), or NULL
 * when s.data is NULL. */
const double* asr_series_at(asr_series s, int i, int t);

/* ------------------------------------------------------------------ stepping driven from outside */

/* One instance's actuators after a step of asr_batch_drive: read with asr_drive_value. */
typedef struct asr_drive_lane asr_drive_lane;

/* Field k (asr_field) of joint j of the instance after the step; NaN when j or k is out of range. */
double asr_drive_value(const asr_drive_lane* lane, int joint, int field);

/* A rollout whose link state and inputs come from outside the core at every step (csrc/engine:
 * a rigid-body engine's two step halves around the actuators). Instances run in chunks of the
 * vector width over all nstep steps, over the batch's threads (one instance is worth a thread).
 * Per step t: before(i, t) for each instance i of the chunk writes row i of the input arrays
 * given to asr_batch_drive (the batch layout: n_inst x n_joint, refs x 2); the chunk's actuators
 * step together; after(i, t, lane) reads each instance's outputs. begin / end (may be NULL)
 * bracket a thread's instance range [i0, i1) and give it its `local` state (a begin that
 * returns a status other than ASR_OK ends the range with it); finish (may be NULL) follows an
 * instance's last step. */
typedef struct asr_driver {
    void* user;
    asr_status (*begin)(void* user, int i0, int i1, void** local);
    void (*before)(void* user, void* local, int i, int t);
    void (*after)(void* user, void* local, int i, int t, const asr_drive_lane* lane);
    void (*finish)(void* user, void* local, int i);
    void (*end)(void* user, void* local);
} asr_driver;

/* nstep steps of length dt driven by driver; q, qd, refs (not NULL), tau_ext and tau_ff (NULL:
 * zero) are the arrays before() fills. Returns the first status raised. */
asr_status asr_batch_drive(asr_batch* b, const asr_driver* driver, int nstep, double dt,
                           const double* q, const double* qd, const double* refs,
                           const double* tau_ext, const double* tau_ff);

#endif
