/* batch.c - creating a batch, its parameters, reset, step and rollout. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "asr_threads.h"

/* Field names, units and docs, indexed by asr_field (generated from asr_fields.h). */
static const struct {
    const char* name;
    const char* unit;
    const char* doc;
} fields[ASR_NFIELD] = {
#define ASR_FIELD_ENTRY_(id, name, unit, doc) [ASR_F_##id] = {#name, unit, doc},
    ASR_STATE_FIELDS(ASR_FIELD_ENTRY_)
#undef ASR_FIELD_ENTRY_
};

const char* asr_state_field_name(int k) {
    return (k >= 0 && k < ASR_NFIELD) ? fields[k].name : NULL;
}

const char* asr_state_field_unit(int k) {
    return (k >= 0 && k < ASR_NFIELD) ? fields[k].unit : NULL;
}

const char* asr_state_field_doc(int k) { return (k >= 0 && k < ASR_NFIELD) ? fields[k].doc : NULL; }

/* ---------------------------------------------------------------- parameters */

static const asr_param_spec* param_spec(const asr_model_def* m, int k) {
    return k < ASR_NCOMMON ? asr_common_param_spec(k) : &m->params[k - ASR_NCOMMON];
}

static double param_default(const asr_model_def* m, int k) {
    return k < ASR_NCOMMON ? asr_common_param_default(m, k) : m->params[k - ASR_NCOMMON].def;
}

static void update_varying(joint_params* jp) {
    jp->nvarying = 0;
    for (int k = 0; k < jp->nparam; ++k) {
        if (jp->count[k] > 1) jp->varying[jp->nvarying++] = k;
    }
}

static asr_status init_joint_params(joint_params* jp, const asr_model_def* m) {
    jp->nparam = ASR_NCOMMON + m->nparam;
    for (int k = 0; k < jp->nparam; ++k) {
        jp->values[k] = (double*)malloc(sizeof(double));
        if (!jp->values[k]) return ASR_ERR_NOMEM;
        jp->values[k][0] = param_default(m, k);
        jp->count[k] = 1;
    }
    update_varying(jp);
    return ASR_OK;
}

static asr_status check_model(const asr_model_def* m, int mode) {
    if (!m || !m->elastic || !m->refmap || (m->nparam > 0 && !m->params)) return ASR_ERR_NULL;
    if (m->nparam < 0 || m->nparam > asr_model_max_params()) return ASR_ERR_RANGE;
    if (m->nmotor < 0 || m->nmotor > 2 || (m->ndefault > 0 && !m->defaults)) return ASR_ERR_MODEL;
    for (int d = 0; d < m->ndefault; ++d) {
        if (m->defaults[d].k < 0 || m->defaults[d].k >= ASR_NCOMMON) return ASR_ERR_PARAM;
    }
    if (mode < ASR_MODE_LINK_TORQUE || mode > ASR_MODE_EQ_PRESET_PID) return ASR_ERR_RANGE;
    if (m->nmotor == 0 && mode > ASR_MODE_LINK_PID) return ASR_ERR_MODEL;
    return ASR_OK;
}

asr_status asr_batch_create(asr_batch** out, int n_inst, int n_joint,
                            const asr_model_def* const* model_defs, const int* modes, double* state,
                            asr_status_arrays status) {
    if (!out || !model_defs || !modes || !state || !status.code || !status.joint || !status.step) {
        return ASR_ERR_NULL;
    }
    *out = NULL;
    if (n_inst < 1 || n_joint < 1) return ASR_ERR_RANGE;
    for (int j = 0; j < n_joint; ++j) {
        asr_status st = check_model(model_defs[j], modes[j]);
        if (st != ASR_OK) return st;
    }
    asr_batch* b = (asr_batch*)calloc(1, sizeof(asr_batch));
    if (!b) return ASR_ERR_NOMEM;
    b->n_inst = n_inst;
    b->n_joint = n_joint;
    b->state = state;
    b->status = status;
    b->max_substep = 1e-3;
    b->n_threads = 1;
    chunk_pick_kernel(b);
    b->model = (const asr_model_def**)calloc((size_t)n_joint, sizeof(*b->model));
    b->kind = (spring_kind*)calloc((size_t)n_joint, sizeof(*b->kind));
    b->mode = (int*)calloc((size_t)n_joint, sizeof(int));
    b->params = (joint_params*)calloc((size_t)n_joint, sizeof(joint_params));
    asr_status st = (b->model && b->kind && b->mode && b->params) ? ASR_OK : ASR_ERR_NOMEM;
    for (int j = 0; j < n_joint && st == ASR_OK; ++j) {
        b->model[j] = model_defs[j];
        b->kind[j] = (spring_kind)spring_kind_of(model_defs[j]);
        b->mode[j] = modes[j];
        st = init_joint_params(&b->params[j], model_defs[j]);
    }
    if (st == ASR_OK) st = asr_batch_reset(b, NULL, NULL);
    if (st != ASR_OK) {
        asr_batch_destroy(b);
        return st;
    }
    *out = b;
    return ASR_OK;
}

void asr_batch_destroy(asr_batch* b) {
    if (!b) return;
    if (b->params) {
        for (int j = 0; j < b->n_joint; ++j) {
            for (int k = 0; k < b->params[j].nparam; ++k) free(b->params[j].values[k]);
        }
    }
    free(b->params);
    free(b->mode);
    free(b->kind);
    free(b->model);
    free(b);
}

int asr_batch_nparam(const asr_batch* b, int joint) {
    if (!b || joint < 0 || joint >= b->n_joint) return -1;
    return b->params[joint].nparam;
}

static asr_status check_joint_param(const asr_batch* b, int joint, int k) {
    if (!b) return ASR_ERR_NULL;
    if (joint < 0 || joint >= b->n_joint) return ASR_ERR_RANGE;
    if (k < 0 || k >= b->params[joint].nparam) return ASR_ERR_PARAM;
    return ASR_OK;
}

asr_status asr_batch_set_param(asr_batch* b, int joint, int k, const double* values, int count,
                               int* bad_index) {
    asr_status st = check_joint_param(b, joint, k);
    if (st != ASR_OK) return st;
    if (!values) return ASR_ERR_NULL;
    if (count != 1 && count != b->n_inst) return ASR_ERR_RANGE;
    const asr_param_spec* spec = param_spec(b->model[joint], k);
    for (int i = 0; i < count; ++i) {
        if (!asr_param_valid(spec, values[i])) {
            if (bad_index) *bad_index = i;
            return ASR_ERR_RANGE;
        }
    }
    joint_params* jp = &b->params[joint];
    if (k == ASR_P_POS_MIN || k == ASR_P_POS_MAX) { /* the limits must stay ordered */
        int other = k == ASR_P_POS_MIN ? ASR_P_POS_MAX : ASR_P_POS_MIN;
        for (int i = 0; i < b->n_inst; ++i) {
            double v = values[count > 1 ? i : 0], o = param_at(jp, other, i);
            if (!(k == ASR_P_POS_MIN ? v < o : o < v)) {
                if (bad_index) *bad_index = count > 1 ? i : 0;
                return ASR_ERR_RANGE;
            }
        }
    }
    if (jp->count[k] != count) {
        double* grown = (double*)realloc(jp->values[k], (size_t)count * sizeof(double));
        if (!grown) return ASR_ERR_NOMEM;
        jp->values[k] = grown;
        jp->count[k] = count;
        update_varying(jp);
    }
    memcpy(jp->values[k], values, (size_t)count * sizeof(double));
    b->param_version += 1;
    return ASR_OK;
}

asr_status asr_batch_get_param(const asr_batch* b, int joint, int k, double* out) {
    asr_status st = check_joint_param(b, joint, k);
    if (st != ASR_OK) return st;
    if (!out) return ASR_ERR_NULL;
    const joint_params* jp = &b->params[joint];
    for (int i = 0; i < b->n_inst; ++i) out[i] = param_at(jp, k, i);
    return ASR_OK;
}

asr_status asr_batch_set_mode(asr_batch* b, int joint, int mode) {
    if (!b) return ASR_ERR_NULL;
    if (joint < 0 || joint >= b->n_joint) return ASR_ERR_RANGE;
    asr_status st = check_model(b->model[joint], mode);
    if (st == ASR_OK) b->mode[joint] = mode;
    return st;
}

asr_status asr_batch_set_max_substep(asr_batch* b, double max_substep) {
    if (!b) return ASR_ERR_NULL;
    if (!(max_substep > 0.0) || !isfinite(max_substep)) return ASR_ERR_RANGE;
    b->max_substep = max_substep;
    return ASR_OK;
}

#define MOTOR_SCHEME_NAME_(id, name) name,
static const char* const motor_scheme_names[ASR_NMOTOR_SCHEME] = {
    ASR_MOTOR_SCHEMES(MOTOR_SCHEME_NAME_)};
#undef MOTOR_SCHEME_NAME_

const char* asr_motor_scheme_name(int k) {
    return (k >= 0 && k < ASR_NMOTOR_SCHEME) ? motor_scheme_names[k] : NULL;
}

asr_status asr_batch_set_motor_scheme(asr_batch* b, int scheme) {
    if (!b) return ASR_ERR_NULL;
    if (!asr_motor_scheme_name(scheme)) return ASR_ERR_RANGE;
    b->motor_scheme = scheme;
    return ASR_OK;
}

asr_status asr_batch_set_threads(asr_batch* b, int n_threads) {
    if (!b) return ASR_ERR_NULL;
    if (n_threads < 1 || n_threads > 1024) return ASR_ERR_RANGE;
    b->n_threads = n_threads;
    return ASR_OK;
}

const char* asr_batch_simd(const asr_batch* b) { return b ? b->kernel_name : ""; }

long long asr_batch_step_count(const asr_batch* b) { return b ? b->step_count : -1; }

int asr_batch_n_inst(const asr_batch* b) { return b ? b->n_inst : -1; }

int asr_batch_n_joint(const asr_batch* b) { return b ? b->n_joint : -1; }

int asr_batch_mode(const asr_batch* b, int joint) {
    return b && joint >= 0 && joint < b->n_joint ? b->mode[joint] : -1;
}

const double* asr_series_at(asr_series s, int i, int t) {
    return s.data ? s.data + i * s.stride_i + t * s.stride_t : NULL;
}

/* ---------------------------------------------------------------- reset */

/* Motor positions for instance i, joint j at reset: where the references put them in a mode
 * with motors, else at zero deflection from the link. */
static asr_status reset_motors(asr_batch* b, int i, int j, double q0, const double* refs0) {
    const asr_model_def* m = b->model[j];
    const joint_params* jp = &b->params[j];
    size_t x = (size_t)i * (size_t)b->n_joint + (size_t)j;
    double p[ASR_MAX_PARAM];
    gather_params(jp, i, p);
    double th1 = q0, th2 = m->nmotor == 2 ? q0 : 0.0;
    int mode = b->mode[j];
    if (refs0 && mode >= ASR_MODE_MOTOR_POS && mode != ASR_MODE_MOTOR_TORQUE) {
        double r1 = refs0[2 * x], r2 = refs0[2 * x + 1];
        if (!isfinite(r1) || !isfinite(r2)) return ASR_ERR_INPUT;
        th1 = r1;
        th2 = r2;
        if (mode == ASR_MODE_EQ_PRESET || mode == ASR_MODE_EQ_PRESET_PID) {
            if (m->refmap(m->user, p + ASR_NCOMMON, r1, r2, &th1, &th2) || !isfinite(th1) ||
                !isfinite(th2)) {
                return ASR_ERR_RANGE;
            }
        }
    }
    double* s = joint_state(b, x);
    s[ASR_F_TH1] = th1;
    s[ASR_F_TH2] = th2;
    s[ASR_F_W1] = th1;
    s[ASR_F_W2] = th2;
    s[ASR_F_WQ] = q0;
    s[ASR_F_Q] = q0;
    return ASR_OK;
}

/* Reset instance i: zero its state records and status, place the link and motors. */
static asr_status reset_instance(asr_batch* b, int i, const double* q0, const double* refs0) {
    size_t nj = (size_t)b->n_joint, x0 = (size_t)i * nj;
    for (size_t j = 0; j < nj; ++j) {
        if (q0 && !isfinite(q0[x0 + j])) return ASR_ERR_INPUT;
    }
    memset(joint_state(b, x0), 0, nj * ASR_NFIELD * sizeof(double));
    b->status.code[i] = ASR_OK;
    b->status.joint[i] = -1;
    b->status.step[i] = -1;
    for (int j = 0; j < b->n_joint; ++j) {
        asr_status st = reset_motors(b, i, j, q0 ? q0[x0 + (size_t)j] : 0.0, refs0);
        if (st != ASR_OK) return st;
    }
    return ASR_OK;
}

asr_status asr_batch_reset(asr_batch* b, const double* q0, const double* refs0) {
    if (!b) return ASR_ERR_NULL;
    b->step_count = 0;
    for (int i = 0; i < b->n_inst; ++i) {
        asr_status st = reset_instance(b, i, q0, refs0);
        if (st != ASR_OK) return st;
    }
    return ASR_OK;
}

asr_status asr_batch_reset_instances(asr_batch* b, int count, const int* instances,
                                     const double* q0, const double* refs0) {
    if (!b || (count > 0 && !instances)) return ASR_ERR_NULL;
    if (count < 0) return ASR_ERR_RANGE;
    for (int c = 0; c < count; ++c) {
        if (instances[c] < 0 || instances[c] >= b->n_inst) return ASR_ERR_RANGE;
    }
    for (int c = 0; c < count; ++c) {
        asr_status st = reset_instance(b, instances[c], q0, refs0);
        if (st != ASR_OK) return st;
    }
    return ASR_OK;
}

/* ---------------------------------------------------------------- step and rollout */

static asr_status check_step(const asr_batch* b, double dt) {
    if (!b) return ASR_ERR_NULL;
    if (!(dt > 0.0) || !isfinite(dt)) return ASR_ERR_RANGE;
    if (dt / b->max_substep > ASR_MAX_SUBSTEPS) return ASR_ERR_RANGE;
    return ASR_OK;
}

typedef struct step_job {
    asr_batch* b;
    step_inputs in;
} step_job;

static asr_status step_range(void* ctx, int i0, int i1) {
    step_job* job = (step_job*)ctx;
    return step_instances(job->b, i0, i1, &job->in, job->b->step_count);
}

/* Threads for nstep steps started once: the work per instance is n_joint * nstep joint-steps. */
static int batch_threads(const asr_batch* b, int nstep) {
    long long per_inst = (long long)b->n_joint * nstep;
    return asr_thread_count(b->n_threads, b->n_inst, per_inst > 1 << 20 ? 1 << 20 : (int)per_inst);
}

asr_status asr_batch_step(asr_batch* b, double dt, const double* q, const double* qd,
                          const double* refs, const double* tau_ext, const double* tau_ff) {
    asr_status st = check_step(b, dt);
    if (st != ASR_OK) return st;
    if (!q || !qd || !refs) return ASR_ERR_NULL;
    long long nj = b->n_joint;
    step_job job = {b, {dt, q, qd, refs, tau_ext, tau_ff, nj, nj, 2 * nj, nj, nj}};
    st = asr_parallel_for(batch_threads(b, 1), b->n_inst, step_range, &job);
    b->step_count += 1;
    return st;
}

/* ---------------------------------------------------------------- held lanes */

struct asr_lanes {
    asr_batch* b;
    long long param_version; /* the batch's when the lanes' parameters were loaded */
    int nchunk;
    lane_chunk* chunks; /* nchunk, ASR_LANES instances each */
};

void asr_lanes_destroy(asr_lanes* lanes) {
    if (!lanes) return;
    for (int c = 0; c < lanes->nchunk; ++c) chunk_free(&lanes->chunks[c]);
    free(lanes->chunks);
    free(lanes);
}

asr_status asr_lanes_create(asr_batch* b, asr_lanes** out) {
    if (!out) return ASR_ERR_NULL;
    *out = NULL;
    if (!b) return ASR_ERR_NULL;
    asr_lanes* lanes = (asr_lanes*)calloc(1, sizeof(asr_lanes));
    if (!lanes) return ASR_ERR_NOMEM;
    int nchunk = (b->n_inst + ASR_LANES - 1) / ASR_LANES;
    size_t bytes = ((size_t)nchunk * sizeof(lane_chunk) + 63) / 64 * 64;
    lanes->chunks = (lane_chunk*)aligned_alloc(64, bytes); /* lane_chunk holds lane vectors */
    if (!lanes->chunks) {
        free(lanes);
        return ASR_ERR_NOMEM;
    }
    memset(lanes->chunks, 0, bytes); /* chunk_free of a chunk not allocated yet: no-op */
    lanes->b = b;
    lanes->nchunk = nchunk;
    lanes->param_version = b->param_version;
    for (int c = 0; c < nchunk; ++c) {
        if (chunk_alloc(b, &lanes->chunks[c]) != ASR_OK) {
            asr_lanes_destroy(lanes);
            return ASR_ERR_NOMEM;
        }
        chunk_at(&lanes->chunks[c], c * ASR_LANES, b->n_inst);
        chunk_load(b, &lanes->chunks[c]);
    }
    *out = lanes;
    return ASR_OK;
}

asr_status asr_lanes_step(asr_lanes* lanes, double dt, const double* q, const double* qd,
                          const double* refs, const double* tau_ext, const double* tau_ff) {
    if (!lanes) return ASR_ERR_NULL;
    asr_batch* b = lanes->b;
    asr_status st = check_step(b, dt);
    if (st != ASR_OK) return st;
    if (!q || !qd || !refs) return ASR_ERR_NULL;
    long long nj = b->n_joint;
    step_inputs in = {dt, q, qd, refs, tau_ext, tau_ff, nj, nj, 2 * nj, nj, nj};
    int reload = lanes->param_version != b->param_version;
    asr_status first = ASR_OK;
    for (int c = 0; c < lanes->nchunk; ++c) {
        lane_chunk* ch = &lanes->chunks[c];
        if (reload) {
            chunk_load(b, ch);
        } else {
            chunk_load_state(b, ch);
        }
        st = chunk_step(b, ch, &in, b->step_count);
        chunk_store(b, ch);
        if (first == ASR_OK) first = st;
    }
    lanes->param_version = b->param_version;
    b->step_count += 1;
    return first;
}

typedef struct rollout_job {
    asr_batch* b;
    int nstep;
    double dt;
    asr_series q, qd, refs, tau_ext;
    int nrecord;
    const int* record_fields;
    double* record;
} rollout_job;

/* The recorded fields of the chunk's instances after step t, from its lanes. */
static void record_chunk(const rollout_job* job, const lane_chunk* ch, int t) {
    const asr_batch* b = job->b;
    size_t nj = (size_t)b->n_joint;
    for (int r = 0; r < job->nrecord; ++r) {
        int k = job->record_fields[r];
        for (int l = 0; l < ch->n; ++l) {
            size_t i = (size_t)(ch->i0 + l);
            double* dst =
                job->record +
                (((size_t)r * (size_t)b->n_inst + i) * (size_t)job->nstep + (size_t)t) * nj;
            for (size_t j = 0; j < nj; ++j) dst[j] = ch->J[j].s[k][l];
        }
    }
}

/* Instances are independent over a rollout: each chunk runs all its steps with its state in
 * its lanes (loaded and stored once), instead of streaming the whole batch's records through
 * memory every step. */
static asr_status rollout_range(void* ctx, int i0, int i1) {
    rollout_job* job = (rollout_job*)ctx;
    lane_chunk ch;
    if (chunk_alloc(job->b, &ch) != ASR_OK) return ASR_ERR_NOMEM;
    asr_status first = ASR_OK;
    for (int i = i0; i < i1; i += ASR_LANES) {
        chunk_at(&ch, i, i1);
        chunk_load(job->b, &ch);
        for (int t = 0; t < job->nstep; ++t) {
            step_inputs in = {job->dt,
                              asr_series_at(job->q, 0, t),
                              asr_series_at(job->qd, 0, t),
                              asr_series_at(job->refs, 0, t),
                              asr_series_at(job->tau_ext, 0, t),
                              NULL,
                              job->q.stride_i,
                              job->qd.stride_i,
                              job->refs.stride_i,
                              job->tau_ext.stride_i,
                              0};
            asr_status st = chunk_step(job->b, &ch, &in, job->b->step_count + t);
            if (first == ASR_OK) first = st;
            record_chunk(job, &ch, t);
        }
        chunk_store(job->b, &ch);
    }
    chunk_free(&ch);
    return first;
}

asr_status asr_batch_rollout(asr_batch* b, int nstep, double dt, asr_series q, asr_series qd,
                             asr_series refs, asr_series tau_ext, int nrecord,
                             const int* record_fields, double* record) {
    asr_status st = check_step(b, dt);
    if (st != ASR_OK) return st;
    if (!q.data || !qd.data || !refs.data || (nrecord > 0 && (!record_fields || !record))) {
        return ASR_ERR_NULL;
    }
    if (nstep < 0 || nrecord < 0) return ASR_ERR_RANGE;
    const asr_series series[4] = {q, qd, refs, tau_ext};
    for (int k = 0; k < 4; ++k) {
        if (series[k].stride_i < 0 || series[k].stride_t < 0) return ASR_ERR_RANGE;
    }
    for (int r = 0; r < nrecord; ++r) {
        if (record_fields[r] < 0 || record_fields[r] >= ASR_NFIELD) return ASR_ERR_RANGE;
    }
    rollout_job job = {b, nstep, dt, q, qd, refs, tau_ext, nrecord, record_fields, record};
    st = asr_parallel_for(batch_threads(b, nstep), b->n_inst, rollout_range, &job);
    b->step_count += nstep;
    return st;
}

/* ---------------------------------------------------------------- stepping driven from outside */

struct asr_drive_lane {
    const lane_chunk* ch;
    int l, n_joint;
};

double asr_drive_value(const asr_drive_lane* lane, int joint, int field) {
    if (!lane || joint < 0 || joint >= lane->n_joint || field < 0 || field >= ASR_NFIELD) {
        return NAN;
    }
    return lane->ch->J[joint].s[field][lane->l];
}

typedef struct drive_job {
    asr_batch* b;
    const asr_driver* d;
    int nstep;
    step_inputs in;
} drive_job;

/* Instances [i0, i1) in chunks of ASR_LANES, each chunk over all steps (the driver's data for
 * it stays in cache, its actuator state in lanes), as rollout_range with the driver's calls
 * around each step. */
static asr_status drive_range(void* ctx, int i0, int i1) {
    const drive_job* job = (const drive_job*)ctx;
    asr_batch* b = job->b;
    const asr_driver* d = job->d;
    void* local = NULL;
    lane_chunk ch;
    if (chunk_alloc(b, &ch) != ASR_OK) return ASR_ERR_NOMEM;
    if (d->begin) {
        asr_status st = d->begin(d->user, i0, i1, &local);
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
            for (int l = 0; l < ch.n; ++l) d->before(d->user, local, c0 + l, t);
            asr_status st = chunk_step(b, &ch, &job->in, b->step_count + t);
            if (first == ASR_OK) first = st;
            for (int l = 0; l < ch.n; ++l) {
                asr_drive_lane lane = {&ch, l, b->n_joint};
                d->after(d->user, local, c0 + l, t, &lane);
            }
        }
        chunk_store(b, &ch);
        for (int l = 0; l < ch.n && d->finish; ++l) d->finish(d->user, local, c0 + l);
    }
    if (d->end) d->end(d->user, local);
    chunk_free(&ch);
    return first;
}

asr_status asr_batch_drive(asr_batch* b, const asr_driver* driver, int nstep, double dt,
                           const double* q, const double* qd, const double* refs,
                           const double* tau_ext, const double* tau_ff) {
    asr_status st = check_step(b, dt);
    if (st != ASR_OK) return st;
    if (!driver || !driver->before || !driver->after || !q || !qd || !refs) return ASR_ERR_NULL;
    if (nstep < 0) return ASR_ERR_RANGE;
    long long nj = b->n_joint;
    drive_job job = {b, driver, nstep, {dt, q, qd, refs, tau_ext, tau_ff, nj, nj, 2 * nj, nj, nj}};
    /* every instance is a whole simulation of the driver's: worth a thread from two on */
    int threads = b->n_threads < b->n_inst ? b->n_threads : b->n_inst;
    st = asr_parallel_for(threads, b->n_inst, drive_range, &job);
    b->step_count += nstep;
    return st;
}
