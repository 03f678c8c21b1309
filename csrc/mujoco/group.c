/* group.c - the asr.actuator instances of one mjData stepped together (group.h). */
#include <stdlib.h>
#include <string.h>

#include "group.h"

struct group {
    int n;
    const joint_config** cfg; /* n: the members' configurations */
    asr_batch* batch;         /* n instances of one joint, parameters per instance */
    double* state;            /* n x ASR_NFIELD: the batch's state block */
    int *code, *joint;        /* n each: the batch's status arrays */
    long long* step;          /* n */
    int* was;                 /* n: each member's status before the step */
    double *q, *qd, *refs;    /* step inputs: n, n, 2 n */
    lane_chunk* chunks;       /* nchunk, ASR_LANES members each, parameters loaded once */
    int nchunk;
};

int group_compatible(const joint_config* a, const joint_config* b) {
    return a->model == b->model && a->mode == b->mode && a->max_substep == b->max_substep &&
           a->motor_scheme == b->motor_scheme;
}

void group_destroy(group* g) {
    if (!g) return;
    for (int c = 0; c < g->nchunk; ++c) chunk_free(&g->chunks[c]);
    free(g->chunks);
    asr_batch_destroy(g->batch);
    free(g->cfg);
    free(g->state);
    free(g->code);
    free(g->joint);
    free(g->step);
    free(g->was);
    free(g->q);
    free(g->qd);
    free(g->refs);
    free(g);
}

/* Parameter k of every member, one value each, into the batch. */
static int set_params(group* g, double* scratch) {
    const joint_config* c0 = g->cfg[0];
    for (int k = 0; k < c0->nparam; ++k) {
        for (int i = 0; i < g->n; ++i) scratch[i] = g->cfg[i]->params[k];
        if (asr_batch_set_param(g->batch, 0, k, scratch, g->n, NULL) != ASR_OK) return -1;
    }
    if (asr_batch_set_max_substep(g->batch, c0->max_substep) != ASR_OK) return -1;
    return asr_batch_set_motor_scheme(g->batch, c0->motor_scheme) == ASR_OK ? 0 : -1;
}

/* The lanes, with the members' parameters loaded for good (states come per step). */
static int make_chunks(group* g) {
    g->nchunk = (g->n + ASR_LANES - 1) / ASR_LANES;
    size_t bytes = ((size_t)g->nchunk * sizeof(lane_chunk) + 63) / 64 * 64;
    g->chunks = (lane_chunk*)aligned_alloc(64, bytes); /* lane_chunk holds lane vectors */
    if (!g->chunks) return -1;
    memset(g->chunks, 0, bytes);
    for (int c = 0; c < g->nchunk; ++c) {
        if (chunk_alloc(g->batch, &g->chunks[c]) != ASR_OK) return -1;
        chunk_at(&g->chunks[c], c * ASR_LANES, g->n);
        chunk_load(g->batch, &g->chunks[c]);
    }
    return 0;
}

group* group_create(const joint_config* const* cfg, int n) {
    group* g = (group*)calloc(1, sizeof(group));
    if (!g) return NULL;
    size_t un = (size_t)n;
    g->n = n;
    g->cfg = (const joint_config**)malloc(un * sizeof(*g->cfg));
    g->state = (double*)calloc(un * ASR_NFIELD, sizeof(double));
    g->code = (int*)calloc(un, sizeof(int));
    g->joint = (int*)calloc(un, sizeof(int));
    g->step = (long long*)calloc(un, sizeof(long long));
    g->was = (int*)calloc(un, sizeof(int));
    g->q = (double*)calloc(un, sizeof(double));
    g->qd = (double*)calloc(un, sizeof(double));
    g->refs = (double*)calloc(2 * un, sizeof(double));
    if (!g->cfg || !g->state || !g->code || !g->joint || !g->step || !g->was || !g->q || !g->qd ||
        !g->refs) {
        group_destroy(g);
        return NULL;
    }
    memcpy(g->cfg, cfg, un * sizeof(*g->cfg));
    asr_status_arrays status = {g->code, g->joint, g->step};
    const asr_model_def* models[1] = {cfg[0]->model};
    if (asr_batch_create(&g->batch, n, 1, models, &cfg[0]->mode, g->state, status) != ASR_OK ||
        set_params(g, g->q) != 0 || make_chunks(g) != 0) {
        group_destroy(g);
        return NULL;
    }
    return g;
}

/* The references of a joint from ctrl, clamped to ctrlrange where the actuator has one and the
 * model does not disable clamping (MuJoCo clamps ctrl only for its own actuator types). */
static void references(const mjModel* m, const mjData* d, const joint_config* c, double refs[2]) {
    int clamp = !(m->opt.disableflags & mjDSBL_CLAMPCTRL);
    refs[1] = 0.0;
    for (int a = 0; a < c->nact; ++a) {
        int i = c->act[a];
        double x = d->ctrl[i];
        if (clamp && m->actuator_ctrllimited[i]) {
            const double* r = m->actuator_ctrlrange + 2 * i;
            x = x < r[0] ? r[0] : x > r[1] ? r[1] : x;
        }
        refs[a] = x;
    }
}

/* Member i's inputs, committed state and status into the batch; a member not started yet is
 * reset from them (as asr.Sim.reset(q0=qpos, refs=ctrl)). */
static void load_member(group* g, const mjModel* m, const mjData* d, int i, const double* s) {
    const joint_config* c = g->cfg[i];
    double dt = m->opt.timestep; /* checked at compile time, but a program may change it */
    g->q[i] = d->qpos[c->qpos_adr];
    g->qd[i] = d->qvel[c->dof_adr];
    references(m, d, c, g->refs + 2 * i);
    memcpy(g->state + (size_t)i * ASR_NFIELD, s + ASR_MJ_NHEADER, ASR_NFIELD * sizeof(double));
    g->code[i] = (int)s[ASR_MJ_STATUS];
    g->joint[i] = g->code[i] ? 0 : -1;
    g->step[i] = (long long)s[ASR_MJ_FAILED_STEP];
    if (s[ASR_MJ_STARTED] == 0.0) {
        asr_status st = asr_batch_reset_instances(g->batch, 1, &i, g->q, g->refs);
        if (st != ASR_OK) g->code[i] = st;
    }
    if (g->code[i] == ASR_OK && (!(dt > 0.0) || dt / c->max_substep > ASR_MAX_SUBSTEPS)) {
        g->code[i] = ASR_ERR_RANGE;
    }
    g->was[i] = g->code[i];
    if (g->code[i] != ASR_OK && s[ASR_MJ_STATUS] == 0.0) g->step[i] = (long long)s[ASR_MJ_STEPS];
}

/* Member i's new plugin state: header, then its record (a stopped member applies no torque). */
static void store_member(const group* g, int i, const double* s, double* o) {
    long long steps = (long long)s[ASR_MJ_STEPS];
    int code = g->code[i];
    memcpy(o + ASR_MJ_NHEADER, g->state + (size_t)i * ASR_NFIELD, ASR_NFIELD * sizeof(double));
    o[ASR_MJ_STARTED] = 1.0;
    o[ASR_MJ_STATUS] = code;
    o[ASR_MJ_STEPS] = (double)(steps + 1);
    /* stopped by this step: at its own step count (the lanes' step index is the group's) */
    o[ASR_MJ_FAILED_STEP] = !code ? -1.0 : g->was[i] ? (double)g->step[i] : (double)steps;
    if (code != ASR_OK) {
        o[ASR_MJ_NHEADER + ASR_F_TAU_JOINT] = 0.0;
        o[ASR_MJ_NHEADER + ASR_F_TAU_LINK] = 0.0;
    }
}

void group_step(group* g, const mjModel* m, const mjData* d, const double* const* s,
                double* const* out) {
    int running = 0;
    for (int i = 0; i < g->n; ++i) {
        load_member(g, m, d, i, s[i]);
        running += g->code[i] == ASR_OK;
    }
    if (running) {
        step_inputs in = {m->opt.timestep, g->q, g->qd, g->refs, NULL, NULL, 1, 1, 2, 1, 1};
        for (int c = 0; c < g->nchunk; ++c) {
            chunk_load_state(g->batch, &g->chunks[c]);
            chunk_step(g->batch, &g->chunks[c], &in, 0);
            chunk_store(g->batch, &g->chunks[c]);
        }
    }
    for (int i = 0; i < g->n; ++i) store_member(g, i, s[i], out[i]);
}
