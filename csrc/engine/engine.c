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
#include "core/batch.h"
#include "core/threads.h"

typedef struct engine_job {
    asr_batch* b;
    const asr_engine* e;
    const asr_controller* ctl; /* or NULL */
    int nstep;
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
    size_t nj = (size_t)job->b->n_joint, x0 = (size_t)i * nj;
    const double* refs = series_at(job->refs, i, t);
    const double* ext = series_at(job->tau_ext, i, t);
    const double* ff = series_at(job->tau_ff, i, t);
    for (size_t j = 0; j < nj; ++j) {
        job->q[x0 + j] = e->qpos[i][e->qpos_adr[j]];
        job->qd[x0 + j] = e->qvel[i][e->dof_adr[j]];
        job->refs_now[2 * (x0 + j)] = refs[2 * j];
        job->refs_now[2 * (x0 + j) + 1] = refs[2 * j + 1];
        job->ext_now[x0 + j] = ext ? ext[j] : 0.0;
        job->ff_now[x0 + j] = ff ? ff[j] : 0.0;
    }
}

/* Instance ch->i0 + l's joint torques, from its lane, into the engine's applied forces. */
static void write_torques(const engine_job* job, const lane_chunk* ch, int l) {
    int i = ch->i0 + l;
    for (int j = 0; j < job->b->n_joint; ++j) {
        job->e->qfrc[i][job->e->dof_adr[j]] = ch->J[j].s[ASR_F_TAU_JOINT][l];
    }
}

/* Recorded after step2: the link angle and velocity as the engine has them after the step (the
 * state's q, qd hold what the actuators saw at its start), everything else from the lane. */
static void record_instance(const engine_job* job, const lane_chunk* ch, int l, int t) {
    const asr_batch* b = job->b;
    const asr_engine* e = job->e;
    int i = ch->i0 + l;
    for (int r = 0; r < job->nrecord; ++r) {
        int k = job->record_fields[r];
        double* dst = job->record + (((size_t)r * b->n_inst + i) * job->nstep + t) * b->n_joint;
        for (int j = 0; j < b->n_joint; ++j) {
            dst[j] = k == ASR_F_Q    ? e->qpos[i][e->qpos_adr[j]]
                     : k == ASR_F_QD ? e->qvel[i][e->dof_adr[j]]
                                     : ch->J[j].s[k][l];
        }
    }
}

/* Instances [i0, i1) in chunks of ASR_LANES, each chunk over all steps (its engine data stays
 * in cache, its actuator state in lanes): per step, step1 of each instance, the actuators of
 * the chunk at once, then step2 of each. A controller's hooks run around them. */
static asr_status engine_range(void* ctx, int i0, int i1) {
    engine_job* job = (engine_job*)ctx;
    asr_batch* b = job->b;
    const asr_engine* e = job->e;
    const asr_controller* c = job->ctl;
    long long nj = b->n_joint;
    step_inputs in = {job->dt, job->q, job->qd, job->refs_now, job->ext_now, job->ff_now, nj, nj,
                      2 * nj,  nj,     nj};
    void* local = NULL;
    lane_chunk ch;
    if (chunk_alloc(b, &ch) != ASR_OK) return ASR_ERR_NOMEM;
    if (c && c->begin) {
        asr_status st = c->begin(c->user, b, e, job->dt, job->nstep, i0, i1, &local);
        if (st != ASR_OK) {
            chunk_free(&ch);
            return st;
        }
    }
    asr_status first = ASR_OK;
    for (int c0 = i0; c0 < i1; c0 += ASR_LANES) {
        chunk_at(&ch, c0, i1);
        chunk_load(b, &ch);
        for (int t = 0; t < job->nstep; ++t) { /* a frozen instance goes on with zero torque */
            for (int l = 0; l < ch.n; ++l) {
                int i = c0 + l;
                e->step1(e->model[i], e->data[i]);
                gather_inputs(job, i, t);
                if (c && c->after_step1) c->after_step1(local, i, t, job->refs_now + 2 * i * nj);
            }
            asr_status st = chunk_step(b, &ch, &in, b->step_count + t);
            if (first == ASR_OK) first = st;
            for (int l = 0; l < ch.n; ++l) {
                int i = c0 + l;
                write_torques(job, &ch, l);
                if (c && c->before_step2) c->before_step2(local, i, t);
                e->step2(e->model[i], e->data[i]);
                record_instance(job, &ch, l, t);
                if (c && c->after_step2) c->after_step2(local, i, t);
            }
        }
        chunk_store(b, &ch);
        for (int l = 0; l < ch.n && c && c->finish; ++l) c->finish(local, c0 + l);
    }
    if (c && c->begin && c->end) c->end(local);
    chunk_free(&ch);
    return first;
}

static asr_status check_engine(const asr_batch* b, const asr_engine* e) {
    if (!e || !e->step1 || !e->step2 || !e->model || !e->data || !e->qpos || !e->qvel || !e->qfrc ||
        !e->qpos_adr || !e->dof_adr) {
        return ASR_ERR_NULL;
    }
    for (int i = 0; i < b->n_inst; ++i) {
        if (!e->model[i] || !e->data[i] || !e->qpos[i] || !e->qvel[i] || !e->qfrc[i]) {
            return ASR_ERR_NULL;
        }
    }
    for (int j = 0; j < b->n_joint; ++j) {
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
    if (!(dt > 0.0) || dt / b->max_substep > ASR_MAX_SUBSTEPS || nstep < 0 || nrecord < 0) {
        return ASR_ERR_RANGE;
    }
    const asr_series series[3] = {refs, tau_ext, tau_ff};
    for (int k = 0; k < 3; ++k) {
        if (series[k].stride_i < 0 || series[k].stride_t < 0) return ASR_ERR_RANGE;
    }
    for (int r = 0; r < nrecord; ++r) {
        if (record_fields[r] < 0 || record_fields[r] >= ASR_NFIELD) return ASR_ERR_RANGE;
    }
    size_t n = (size_t)b->n_inst * (size_t)b->n_joint;
    double* scratch = (double*)malloc(6 * n * sizeof(double));
    if (!scratch) return ASR_ERR_NOMEM;
    engine_job job = {b,
                      engine,
                      ctl,
                      nstep,
                      dt,
                      refs,
                      tau_ext,
                      tau_ff,
                      nrecord,
                      record_fields,
                      record,
                      scratch,
                      scratch + n,
                      scratch + 2 * n,
                      scratch + 4 * n,
                      scratch + 5 * n};
    /* every instance is a whole engine simulation: worth a thread from two instances on */
    int threads = b->n_threads < b->n_inst ? b->n_threads : b->n_inst;
    st = parallel_for(threads, b->n_inst, engine_range, &job);
    free(scratch);
    b->step_count += nstep;
    return st;
}

asr_status asr_batch_rollout_engine(asr_batch* b, const asr_engine* engine, int nstep, double dt,
                                    asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                    int nrecord, const int* record_fields, double* record) {
    return asr_batch_rollout_controlled(b, engine, NULL, nstep, dt, refs, tau_ext, tau_ff, nrecord,
                                        record_fields, record);
}
