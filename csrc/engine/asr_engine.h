/* asr_engine.h - coupling a batch to a rigid-body engine (asr_engine,
 * asr_batch_rollout_engine), with an optional controller run inside the loop (asr_controller).
 * Part of the public C API: included by asr.h, whose conventions (naming, SI units, layouts,
 * no system includes: this is also the cffi cdef) apply here.
 */
#ifndef ASR_API_ENGINE_H
#define ASR_API_ENGINE_H

#include "core/asr_batch.h"

/* ------------------------------------------------------------------ rigid-body engine coupling */

/* One of the engine's step halves, e.g. MuJoCo's mj_step1 and mj_step2 (model, data). The core
 * needs only these two functions and pointers into the engine's arrays, so it does not compile
 * against any engine version. */
typedef void (*asr_engine_fn)(const void* model, void* data);

/* An engine with one model and one data per instance (several instances may share a model). */
typedef struct asr_engine {
    asr_engine_fn step1;      /* positions and velocities ready; applied forces may change */
    asr_engine_fn step2;      /* integrates with the applied forces */
    const void* const* model; /* n_inst engine models */
    void* const* data;        /* n_inst engine data, one per instance */
    double* const* qpos;      /* n_inst pointers to each data's generalized positions */
    double* const* qvel;      /* n_inst pointers to each data's generalized velocities */
    double* const* qfrc;      /* n_inst pointers to each data's applied generalized forces */
    const int* qpos_adr;      /* n_joint: index of joint j's angle in qpos, rad */
    const int* dof_adr;       /* n_joint: index of joint j's velocity / force in qvel, qfrc */
} asr_engine;

/* nstep coupled steps of length dt (the engine's own time step): for every instance and step,
 * step1 -> link state of the actuated joints -> actuator step with refs, tau_ext and tau_ff
 * (as in asr_batch_step) -> joint torques written into qfrc[dof_adr] (the other entries are
 * left to the caller) -> step2. refs, tau_ext, tau_ff and record are in the rollout layout (see
 * core/asr_batch.h; refs data must not be NULL). Recorded ASR_F_Q and ASR_F_QD are
 * from the engine after step2 (the link state at the end of the step), the others from the state
 * (torques applied over the step, motors at its end). Each thread runs whole instances over all
 * steps, so results do not depend on the thread count. */
asr_status asr_batch_rollout_engine(asr_batch* b, const asr_engine* engine, int nstep, double dt,
                                    asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                    int nrecord, const int* record_fields, double* record);

/* A controller run inside the engine loop through hooks, so the loop knows no particular
 * controller (the interaction controller of interaction/asr_interaction.h registers itself this
 * way). The loop passes user to check and begin; each thread then gets its own state from begin
 * and hands it to the per-step hooks. Every hook may be NULL (not called). */
typedef struct asr_controller {
    void* user;
    /* Before the rollout: ASR_OK, or a status the rollout returns unchanged. */
    asr_status (*check)(void* user, const asr_batch* b, const asr_engine* e);
    /* Per thread, before its instances [i0, i1) run nstep steps of dt: *local is handed to the
     * hooks below. ASR_OK, or a status (e.g. ASR_ERR_NOMEM) that stops the thread (begin then
     * releases what it took itself). */
    asr_status (*begin)(void* user, const asr_batch* b, const asr_engine* e, double dt, int nstep,
                        int i0, int i1, void** local);
    /* Instance i at step t after step1, before its actuators: may rewrite refs (its references,
     * 2 per joint). */
    void (*after_step1)(void* local, int i, int t, double* refs);
    /* Instance i at step t after its joint torques are written, before step2. */
    void (*before_step2)(void* local, int i, int t);
    /* Instance i at step t after step2. */
    void (*after_step2)(void* local, int i, int t);
    /* Instance i after its last step of the rollout. */
    void (*finish)(void* local, int i);
    /* Per thread, at its end after a successful begin: releases local. */
    void (*end)(void* local);
} asr_controller;

/* asr_batch_rollout_engine with the controller ctl (NULL: none) run inside the loop. */
asr_status asr_batch_rollout_controlled(asr_batch* b, const asr_engine* engine,
                                        const asr_controller* ctl, int nstep, double dt,
                                        asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                        int nrecord, const int* record_fields, double* record);

/* ------------------------------------------------------------------ recording engine positions */

/* What asr_qpos_recorder records: n entries of each instance's engine positions, qpos[adr[k]]
 * (e.g. a free base's position m and unit quaternion w x y z, which no state field holds), after
 * every step, into record in the rollout's instances and steps (n_inst x nstep x n doubles, C
 * order: instance i's step t at record + (i * nstep + t) * n), with an inner controller (NULL:
 * none) run inside the recorder as the loop would run it. */
typedef struct asr_qpos_record {
    const asr_controller* inner; /* or NULL */
    int nq;                      /* entries of each instance's qpos: every adr[k] in [0, nq) */
    int n;                       /* entries recorded per instance and step, >= 0 */
    const int* adr;              /* n indices into qpos (not NULL when n > 0) */
    double* record;              /* n_inst x nstep x n (not NULL when n > 0) */
} asr_qpos_record;

/* Fills *ctl with a controller recording as rec says, for asr_batch_rollout_controlled; rec and
 * what it points to must stay valid while a rollout runs ctl. Each hook calls the inner
 * controller's first (its after_step2 too, so the record holds qpos as a caller would read it
 * between one-step rollouts); each thread writes its own instances' rows. The rollout's check
 * refuses rec's contents with ASR_ERR_RANGE (nq or n < 0, an address outside [0, nq)) or
 * ASR_ERR_NULL (adr or record NULL with n > 0), before anything steps, then runs the inner
 * check. Returns ASR_ERR_NULL for a NULL rec or ctl, else ASR_OK. */
asr_status asr_qpos_recorder(const asr_qpos_record* rec, asr_controller* ctl);

#endif
