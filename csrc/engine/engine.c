/* engine.c - coupling with a rigid-body engine (MuJoCo) through its two step halves.
 *
 * Per instance and step: step1 (the engine computes everything that depends on positions and
 * velocities) -> the actuators see the link state -> their joint torques go into the applied
 * forces -> step2 (the engine integrates). The actuator torque of a step is computed from the
 * state at its start and held over the step: an explicit coupling, first order in the time step,
 * whose error is that of evaluating the spring torque at the start of the step instead of along
 * it (see README). No global engine callback is used, so several robots can run in one process.
 * A controller (asr_controller) runs through its hooks around the engine's step halves; this file
 * knows none in particular. */
#include <stdlib.h>
#include <string.h>

#include "asr_engine.h"

/* The coupling runs as a driver of the core's stepping (asr_batch_drive): the engine's step1
 * and the inputs before each actuator step, the torques, step2 and the records after it. */
typedef struct engine_job {
    const asr_batch* b;
    const asr_engine* e;
    const asr_controller* ctl; /* or NULL */
    int nstep, n_inst, n_joint;
    double dt;
    asr_series refs, tau_ext, tau_ff;
    int nrecord;
    const int* record_fields;
    double* record;
    /* step inputs in the batch's layout, each thread filling its own instances' entries */
    double *q, *qd, *refs_now, *ext_now, *ff_now; /* n_inst x n_joint (refs_now: x 2) */
} engine_job;

/* Step inputs of instance i at step t: the link state of its actuated joints from the engine,
 * its references and external torques. */
static void gather_inputs(const engine_job* job, int i, int t) {
    const asr_engine* e = job->e;
    size_t nj = (size_t)job->n_joint, x0 = (size_t)i * nj;
    const double* refs = asr_series_at(job->refs, i, t);
    const double* ext = asr_series_at(job->tau_ext, i, t);
    const double* ff = asr_series_at(job->tau_ff, i, t);
    for (size_t j = 0; j < nj; ++j) {
        job->q[x0 + j] = e->qpos[i][e->qpos_adr[j]];
        job->qd[x0 + j] = e->qvel[i][e->dof_adr[j]];
        job->refs_now[2 * (x0 + j)] = refs[2 * j];
        job->refs_now[2 * (x0 + j) + 1] = refs[2 * j + 1];
        job->ext_now[x0 + j] = ext ? ext[j] : 0.0;
        job->ff_now[x0 + j] = ff ? ff[j] : 0.0;
    }
}

/* Recorded after step2: the link angle and velocity as the engine has them after the step (the
 * state's q, qd hold what the actuators saw at its start), everything else from the actuators. */
static void record_instance(const engine_job* job, const asr_drive_lane* lane, int i, int t) {
    const asr_engine* e = job->e;
    size_t n_inst = (size_t)job->n_inst, nj = (size_t)job->n_joint;
    for (int r = 0; r < job->nrecord; ++r) {
        int k = job->record_fields[r];
        double* dst = job->record + (((size_t)r * n_inst + (size_t)i) * job->nstep + t) * nj;
        for (int j = 0; j < job->n_joint; ++j) {
            dst[j] = k == ASR_F_Q    ? e->qpos[i][e->qpos_adr[j]]
                     : k == ASR_F_QD ? e->qvel[i][e->dof_adr[j]]
                                     : asr_drive_value(lane, j, k);
        }
    }
}

/* A thread's range: the controller's local state for it. */
static asr_status engine_begin(void* user, int i0, int i1, void** local) {
    const engine_job* job = (const engine_job*)user;
    const asr_controller* c = job->ctl;
    if (!c || !c->begin) return ASR_OK;
    return c->begin(c->user, job->b, job->e, job->dt, job->nstep, i0, i1, local);
}

/* Before the actuators' step t of instance i: the engine's step1, then the inputs it gives. */
static void engine_before(void* user, void* local, int i, int t) {
    const engine_job* job = (const engine_job*)user;
    const asr_engine* e = job->e;
    const asr_controller* c = job->ctl;
    e->step1(e->model[i], e->data[i]);
    gather_inputs(job, i, t);
    if (c && c->after_step1)
        c->after_step1(local, i, t, job->refs_now + 2 * (size_t)i * job->n_joint);
}

/* After it: the joint torques into the engine's applied forces, its step2, the records. A
 * frozen instance goes on with zero torque. */
static void engine_after(void* user, void* local, int i, int t, const asr_drive_lane* lane) {
    const engine_job* job = (const engine_job*)user;
    const asr_engine* e = job->e;
    const asr_controller* c = job->ctl;
    for (int j = 0; j < job->n_joint; ++j) {
        e->qfrc[i][e->dof_adr[j]] = asr_drive_value(lane, j, ASR_F_TAU_JOINT);
    }
    if (c && c->before_step2) c->before_step2(local, i, t);
    e->step2(e->model[i], e->data[i]);
    record_instance(job, lane, i, t);
    if (c && c->after_step2) c->after_step2(local, i, t);
}

static void engine_finish(void* user, void* local, int i) {
    const asr_controller* c = ((const engine_job*)user)->ctl;
    if (c && c->finish) c->finish(local, i);
}

static void engine_end(void* user, void* local) {
    const asr_controller* c = ((const engine_job*)user)->ctl;
    if (c && c->begin && c->end) c->end(local);
}

static asr_status check_engine(const asr_batch* b, const asr_engine* e) {
    if (!e || !e->step1 || !e->step2 || !e->model || !e->data || !e->qpos || !e->qvel || !e->qfrc ||
        !e->qpos_adr || !e->dof_adr) {
        return ASR_ERR_NULL;
    }
    for (int i = 0; i < asr_batch_n_inst(b); ++i) {
        if (!e->model[i] || !e->data[i] || !e->qpos[i] || !e->qvel[i] || !e->qfrc[i]) {
            return ASR_ERR_NULL;
        }
    }
    for (int j = 0; j < asr_batch_n_joint(b); ++j) {
        if (e->qpos_adr[j] < 0 || e->dof_adr[j] < 0) return ASR_ERR_RANGE;
    }
    return ASR_OK;
}

asr_status asr_batch_rollout_controlled(asr_batch* b, const asr_engine* engine,
                                        const asr_controller* ctl, int nstep, double dt,
                                        asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                        int nrecord, const int* record_fields, double* record) {
    if (!b || !refs.data || (nrecord > 0 && (!record_fields || !record))) return ASR_ERR_NULL;
    asr_status st = check_engine(b, engine);
    if (st == ASR_OK && ctl && ctl->check) st = ctl->check(ctl->user, b, engine);
    if (st != ASR_OK) return st;
    if (nstep < 0 || nrecord < 0) return ASR_ERR_RANGE; /* dt: asr_batch_drive */
    const asr_series series[3] = {refs, tau_ext, tau_ff};
    for (int k = 0; k < 3; ++k) {
        if (series[k].stride_i < 0 || series[k].stride_t < 0) return ASR_ERR_RANGE;
    }
    for (int r = 0; r < nrecord; ++r) {
        if (record_fields[r] < 0 || record_fields[r] >= ASR_NFIELD) return ASR_ERR_RANGE;
    }
    int n_inst = asr_batch_n_inst(b), n_joint = asr_batch_n_joint(b);
    size_t n = (size_t)n_inst * (size_t)n_joint;
    double* scratch = (double*)malloc(6 * n * sizeof(double));
    if (!scratch) return ASR_ERR_NOMEM;
    engine_job job = {
        b,      engine,  ctl,         nstep,           n_inst,          n_joint,
        dt,     refs,    tau_ext,     tau_ff,          nrecord,         record_fields,
        record, scratch, scratch + n, scratch + 2 * n, scratch + 4 * n, scratch + 5 * n};
    const asr_driver driver = {&job,         engine_begin,  engine_before,
                               engine_after, engine_finish, engine_end};
    st = asr_batch_drive(b, &driver, nstep, dt, job.q, job.qd, job.refs_now, job.ext_now,
                         job.ff_now);
    free(scratch);
    return st;
}

asr_status asr_batch_rollout_engine(asr_batch* b, const asr_engine* engine, int nstep, double dt,
                                    asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                    int nrecord, const int* record_fields, double* record) {
    return asr_batch_rollout_controlled(b, engine, NULL, nstep, dt, refs, tau_ext, tau_ff, nrecord,
                                        record_fields, record);
}

/* ---------------------------------------------------------------- recording engine positions */

/* A thread's recorder state: the record's layout and the inner controller's own local. */
typedef struct qpos_local {
    const asr_qpos_record* rec;
    const asr_engine* e;
    int nstep;
    void* inner; /* the inner controller's local, from its begin */
} qpos_local;

static asr_status qpos_check(void* user, const asr_batch* b, const asr_engine* e) {
    const asr_qpos_record* rec = (const asr_qpos_record*)user;
    if (rec->nq < 0 || rec->n < 0) return ASR_ERR_RANGE;
    if (rec->n > 0 && (!rec->adr || !rec->record)) return ASR_ERR_NULL;
    for (int k = 0; k < rec->n; ++k) {
        if (rec->adr[k] < 0 || rec->adr[k] >= rec->nq) return ASR_ERR_RANGE;
    }
    const asr_controller* c = rec->inner;
    return c && c->check ? c->check(c->user, b, e) : ASR_OK;
}

static asr_status qpos_begin(void* user, const asr_batch* b, const asr_engine* e, double dt,
                             int nstep, int i0, int i1, void** local) {
    const asr_qpos_record* rec = (const asr_qpos_record*)user;
    qpos_local* lc = (qpos_local*)malloc(sizeof *lc);
    if (!lc) return ASR_ERR_NOMEM;
    *lc = (qpos_local){rec, e, nstep, NULL};
    const asr_controller* c = rec->inner;
    if (c && c->begin) {
        asr_status st = c->begin(c->user, b, e, dt, nstep, i0, i1, &lc->inner);
        if (st != ASR_OK) {
            free(lc);
            return st;
        }
    }
    *local = lc;
    return ASR_OK;
}

static void qpos_after_step1(void* local, int i, int t, double* refs) {
    const qpos_local* lc = (const qpos_local*)local;
    const asr_controller* c = lc->rec->inner;
    if (c && c->after_step1) c->after_step1(lc->inner, i, t, refs);
}

static void qpos_before_step2(void* local, int i, int t) {
    const qpos_local* lc = (const qpos_local*)local;
    const asr_controller* c = lc->rec->inner;
    if (c && c->before_step2) c->before_step2(lc->inner, i, t);
}

static void qpos_after_step2(void* local, int i, int t) {
    const qpos_local* lc = (const qpos_local*)local;
    const asr_qpos_record* rec = lc->rec;
    const asr_controller* c = rec->inner;
    if (c && c->after_step2) c->after_step2(lc->inner, i, t);
    const double* qpos = lc->e->qpos[i];
    double* dst = rec->record + ((size_t)i * (size_t)lc->nstep + (size_t)t) * (size_t)rec->n;
    for (int k = 0; k < rec->n; ++k) dst[k] = qpos[rec->adr[k]];
}

static void qpos_finish(void* local, int i) {
    const qpos_local* lc = (const qpos_local*)local;
    const asr_controller* c = lc->rec->inner;
    if (c && c->finish) c->finish(lc->inner, i);
}

/* As the loop does (engine_end): the inner end only after an inner begin. */
static void qpos_end(void* local) {
    qpos_local* lc = (qpos_local*)local;
    const asr_controller* c = lc->rec->inner;
    if (c && c->begin && c->end) c->end(lc->inner);
    free(lc);
}

asr_status asr_qpos_recorder(const asr_qpos_record* rec, asr_controller* ctl) {
    if (!rec || !ctl) return ASR_ERR_NULL;
    *ctl = (asr_controller){(void*)rec,        qpos_check,       qpos_begin,  qpos_after_step1,
                            qpos_before_step2, qpos_after_step2, qpos_finish, qpos_end};
    return ASR_OK;
}
