/* batch.h - the batch object (private). Constant parameters apart from mutable state: the state
 * block and the status arrays are caller-owned; parameters are owned here. */
#ifndef ASR_BATCH_H
#define ASR_BATCH_H

#include "internal.h"
#include "springs.h"

typedef struct joint_params {
    int nparam;                    /* ASR_NCOMMON + model->nparam */
    double* values[ASR_MAX_PARAM]; /* parameter k: count[k] values (1: shared, n_inst: each) */
    int count[ASR_MAX_PARAM];
    int nvarying;               /* parameters given per instance ... */
    int varying[ASR_MAX_PARAM]; /* ... and their indices, so the step gathers only those */
} joint_params;

struct lane_chunk;
struct step_inputs;

/* A build of the joint step (joint_kernel.h) for one instruction set. */
typedef asr_status (*chunk_kernel)(struct asr_batch* b, struct lane_chunk* ch,
                                   const struct step_inputs* in, long long step_index);

struct asr_batch {
    int n_inst, n_joint;
    const asr_model_def** model; /* n_joint */
    spring_kind* kind;           /* n_joint: the built-in formula, or SPRING_USER */
    int* mode;                   /* n_joint */
    joint_params* params;        /* n_joint */
    double* state;               /* n_inst x n_joint x ASR_NFIELD, caller-owned */
    asr_status_arrays status;    /* n_inst each, caller-owned */
    double max_substep;          /* s */
    int motor_scheme;            /* asr_motor_scheme */
    int n_threads;
    long long step_count;
    long long param_version; /* counts asr_batch_set_param's changes (asr_lanes reloads) */
    chunk_kernel kernel;     /* the step built for the widest vector unit here (joint.c) */
    const char* kernel_name; /* "baseline", "avx2" or "avx512" */
};

/* Inputs of one step for the whole batch (pointers into caller arrays, NULL: zero): instance i's
 * values start at pointer + i * its stride (doubles), one per joint (two for refs). */
typedef struct step_inputs {
    double dt;
    const double* q;
    const double* qd;
    const double* refs;
    const double* tau_ext; /* or NULL */
    const double* tau_ff;  /* or NULL */
    long long stride_q, stride_qd, stride_refs, stride_ext, stride_ff;
} step_inputs;

/* One joint of a chunk of instances, lane l holding instance i0 + l (lanes.h). */
typedef struct lane_joint {
    lane_d s[ASR_NFIELD];    /* the state records' fields */
    lane_d p[ASR_MAX_PARAM]; /* parameters (the first nparam are set) */
    /* derived from the parameters when they are loaded, not every step */
    lane_d z_motor;      /* friction / friction_K: motor presliding band, rad */
    lane_d z_edge_motor; /* motor_band_edge(z_motor) (motor.h), rad */
    lane_d z_link;       /* link_friction / link_friction_K, rad */
    int torque_drive;    /* 1: drive == 0 in every lane (no voltage drive) */
    int no_integral;     /* 1: ki == 0 in every lane */
} lane_joint;

/* Up to ASR_LANES consecutive instances stepped together (joint.c). Lanes past n repeat the last
 * instance (stepped, never stored). */
typedef struct lane_chunk {
    int i0, n;              /* first instance, instances in the chunk */
    int inst[ASR_LANES];    /* lane l's instance: i0 + l, the last one repeated past n */
    lane_m live;            /* lanes in use whose instance is not frozen */
    lane_joint* J;          /* n_joint, 32-byte aligned */
    double dt, max_substep; /* the step timing below was derived from (s) */
    double h;               /* motor sub-step, s */
    int nsub;               /* motor sub-steps per step */
} lane_chunk;

/* A step's inputs of one joint, lane by lane: link angle (rad) and velocity (rad/s), the two
 * references, external and feed-forward torque (N m). */
typedef struct lane_step_in {
    lane_d q, qd, r1, r2, ext, tff;
} lane_step_in;

static inline int chunk_instance(const lane_chunk* ch, int l) { return ch->inst[l]; }

/* The chunk of instances [i, min(i + ASR_LANES, i_end)). */
static inline void chunk_at(lane_chunk* ch, int i, int i_end) {
    ch->i0 = i;
    ch->n = i_end - i < ASR_LANES ? i_end - i : ASR_LANES;
    for (int l = 0; l < ASR_LANES; ++l) ch->inst[l] = i + (l < ch->n ? l : ch->n - 1);
}

asr_status chunk_alloc(const asr_batch* b, lane_chunk* ch);
void chunk_free(lane_chunk* ch);
/* The state records and parameters of the chunk's instances into its lanes, and which step. */
void chunk_load(const asr_batch* b, lane_chunk* ch);
/* Only the state records (and which instances run), for a chunk whose lanes already hold the
 * same instances' parameters (the MuJoCo plugin steps one instance again and again). */
void chunk_load_state(const asr_batch* b, lane_chunk* ch);
/* The lanes' state back into the records of the chunk's instances. */
void chunk_store(asr_batch* b, const lane_chunk* ch);
/* One step of every joint of the chunk's live instances; freezes those that fail. Returns the
 * first status newly raised, or ASR_OK. */
asr_status chunk_step(asr_batch* b, lane_chunk* ch, const step_inputs* in, long long step_index);

/* The kernels chunk_step runs (joint.c; the last two only on GCC for x86-64), and the choice of
 * one for a batch: the widest this CPU runs, capped by the environment variable ASR_SIMD. */
asr_status chunk_step_baseline(asr_batch* b, lane_chunk* ch, const step_inputs* in,
                               long long step_index);
asr_status chunk_step_avx2(asr_batch* b, lane_chunk* ch, const step_inputs* in,
                           long long step_index);
asr_status chunk_step_avx512(asr_batch* b, lane_chunk* ch, const step_inputs* in,
                             long long step_index);
void chunk_pick_kernel(asr_batch* b);

/* Step instances [i0, i1) (joint.c): load, step and store chunk by chunk. Returns the first
 * status newly raised, or ASR_OK. */
asr_status step_instances(asr_batch* b, int i0, int i1, const step_inputs* in,
                          long long step_index);

/* Parameter k of instance i. */
static inline double param_at(const joint_params* jp, int k, int i) {
    return jp->values[k][jp->count[k] > 1 ? i : 0];
}

/* All parameters of instance i into p[jp->nparam]. */
static inline void gather_params(const joint_params* jp, int i, double* p) {
    for (int k = 0; k < jp->nparam; ++k) p[k] = param_at(jp, k, i);
}

/* The state record (ASR_NFIELD doubles) of joint x = i*n_joint + j. */
static inline double* joint_state(const asr_batch* b, size_t x) {
    return b->state + x * (size_t)ASR_NFIELD;
}

#endif
