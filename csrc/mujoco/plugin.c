/* plugin.c - the MuJoCo actuator plugin "asr.actuator" (asr_mujoco.h): registration and the
 * callbacks MuJoCo's step calls.
 *
 * Timing. MuJoCo calls compute (actuator forces) from every forward pass and advance once per
 * step, after the integrator has moved qpos, qvel and time. asr's coupling (engine/engine.c)
 * computes the joint torque from the state at the start of the step and advances the motors over
 * the step from there. So compute runs the whole asr step for the inputs it sees (link angle and
 * velocity, ctrl) on a copy of the committed state, writes the torque and keeps the advanced copy
 * as a candidate, tagged with d->time; advance commits the latest candidate computed at the
 * step's start time (time - timestep), i.e. the step-start evaluation. The committed state is
 * never changed by compute, so an mj_forward in between, and RK4's intermediate stages (which
 * see the link at later times with the motors as at the step's start), leave it alone.
 *
 * State. Everything that evolves lives in the plugin state (asr_mujoco.h); plugin_data holds only
 * the configuration, a one-instance batch with its lanes and the candidates, all rebuilt from the
 * plugin state by each compute, so one mjData may run several simulations in turn (mujoco.batch
 * swaps states in and out of a thread's data) and mj_setState restores a run exactly. */
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>

#include "asr_mujoco.h"
#include "config.h"

enum {
    NSTATE = ASR_MJ_NHEADER + ASR_NFIELD, /* plugin state values of an instance */
    NCANDIDATE = 4                        /* forward passes per step: RK4 has 4 */
};

/* An instance's plugin state after a step computed from the inputs at `time`. */
typedef struct candidate {
    double time;
    double state[NSTATE];
} candidate;

typedef struct plugin_data {
    const mjModel* model; /* the model cfg was read from ... */
    char* attr;           /* ... and a copy of its configuration text, nattr bytes */
    int nattr;
    joint_config cfg;
    asr_batch* batch; /* one instance, one joint; its state block is the record of the
                                  candidate being computed (`record` between steps) */
    double record[ASR_NFIELD];
    int code, joint; /* the batch's status arrays (one instance) */
    long long step;
    lane_chunk chunk; /* the instance's lanes, kept between steps */
    candidate cand[NCANDIDATE];
    int ncand, next; /* candidates kept, the slot of the next */
} plugin_data;

/* ---------------------------------------------------------------- lifetime */

static int nstate(const mjModel* m, int inst) {
    joint_config cfg;
    config_read_keys(m, inst, &cfg); /* the actuators are checked by init, at compile time too */
    return NSTATE;
}

/* The batch, its lanes and the configuration copy (what configure makes). */
static void release(plugin_data* pd) {
    chunk_free(&pd->chunk);
    asr_batch_destroy(pd->batch);
    free(pd->attr);
    pd->batch = NULL;
    pd->attr = NULL;
}

static void destroy(mjData* d, int inst) {
    plugin_data* pd = (plugin_data*)d->plugin_data[inst];
    if (!pd) return;
    release(pd);
    free(pd);
    d->plugin_data[inst] = 0;
}

static int make_batch(plugin_data* pd) {
    const joint_config* c = &pd->cfg;
    asr_status_arrays status = {&pd->code, &pd->joint, &pd->step};
    const asr_model_def* models[1] = {c->model};
    if (asr_batch_create(&pd->batch, 1, 1, models, &c->mode, pd->record, status) != ASR_OK) {
        return -1;
    }
    for (int k = 0; k < c->nparam; ++k) {
        if (asr_batch_set_param(pd->batch, 0, k, &c->params[k], 1, NULL) != ASR_OK) return -1;
    }
    if (asr_batch_set_max_substep(pd->batch, c->max_substep) != ASR_OK ||
        asr_batch_set_motor_scheme(pd->batch, c->motor_scheme) != ASR_OK) {
        return -1;
    }
    if (chunk_alloc(pd->batch, &pd->chunk) != ASR_OK) return -1;
    chunk_at(&pd->chunk, 0, 1);
    chunk_load(pd->batch, &pd->chunk); /* the parameters stay in the lanes; states come per step */
    return 0;
}

/* Instance inst's configuration text in m (key and value strings), its length into *n. */
static const char* config_text(const mjModel* m, int inst, int* n) {
    int start = m->plugin_attradr[inst], end = (int)m->npluginattr;
    for (int k = 0; k < m->nplugin; ++k) { /* the next instance's text ends this one */
        int adr = m->plugin_attradr[k];
        if (adr > start && adr < end) end = adr;
    }
    *n = end - start;
    return m->plugin_attr + start;
}

/* Reads instance inst's configuration from m into pd and builds its batch: 0, or -1 without
 * memory. */
static int configure(const mjModel* m, int inst, plugin_data* pd) {
    int n;
    const char* text = config_text(m, inst, &n);
    release(pd);
    config_read(m, inst, &pd->cfg);
    pd->model = m;
    pd->nattr = n;
    pd->attr = (char*)malloc((size_t)n + 1);
    pd->ncand = 0;
    if (!pd->attr) return -1;
    memcpy(pd->attr, text, (size_t)n);
    return make_batch(pd);
}

/* Whether pd was configured from m as m is now. One mjData may step several models in turn
 * (mujoco.rollout with a model per initial state, mujoco.batch's set_models), and a freed
 * model's address may come back for another, so the text is compared too. */
static int configured_for(const plugin_data* pd, const mjModel* m, int inst) {
    int n;
    const char* text = config_text(m, inst, &n);
    return pd->model == m && pd->nattr == n && !memcmp(pd->attr, text, (size_t)n);
}

static void fail_memory(mjData* d, int inst) {
    destroy(d, inst);
    mju_error("%s: cannot create the actuator (out of memory)", ASR_MUJOCO_PLUGIN);
}

static int init(const mjModel* m, mjData* d, int inst) {
    /* aligned for the lane vectors in the chunk (calloc guarantees only 16 bytes) */
    size_t size = (sizeof(plugin_data) + 63) / 64 * 64;
    plugin_data* pd = (plugin_data*)aligned_alloc(64, size);
    if (!pd) return -1;
    memset(pd, 0, size);
    d->plugin_data[inst] = (uintptr_t)pd;
    if (configure(m, inst, pd) != 0) {
        fail_memory(d, inst);
        return -1;
    }
    return 0;
}

/* plugin_state: the instance's own values (MuJoCo passes them offset already). */
static void reset(const mjModel* m, double* plugin_state, void* plugin_data, int inst) {
    double* s = plugin_state;
    (void)m, (void)plugin_data, (void)inst;
    memset(s, 0, NSTATE * sizeof(double));
    s[ASR_MJ_FAILED_STEP] = -1.0;
}

/* ---------------------------------------------------------------- step */

/* The references of the joint from ctrl, clamped to ctrlrange where the actuator has one and
 * the model does not disable clamping (MuJoCo clamps ctrl only for its own actuator types). */
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

/* The batch's status from a plugin state's header, and back. */
static void load_status(plugin_data* pd, const double* s) {
    pd->code = (int)s[ASR_MJ_STATUS];
    pd->joint = pd->code ? 0 : -1;
    pd->step = (long long)s[ASR_MJ_FAILED_STEP];
}

static void warn_stopped(const mjModel* m, const plugin_data* pd, long long step) {
    const char* name = mj_id2name(m, mjOBJ_ACTUATOR, pd->cfg.act[0]);
    mju_warning("%s: actuator '%s' stopped at step %lld with asr status %d (it applies no torque "
                "until the next reset; asr.mujoco_plugin.states() explains the code)",
                ASR_MUJOCO_PLUGIN, name ? name : "", step, pd->code);
}

/* One asr step from plugin state s (not changed) for the current inputs: the result into *out.
 * The batch's state block is pointed at the candidate's record, so the step writes it there. */
static void step_candidate(const mjModel* m, const mjData* d, plugin_data* pd, const double* s,
                           candidate* out) {
    const joint_config* c = &pd->cfg;
    double q = d->qpos[c->qpos_adr], qd = d->qvel[c->dof_adr], refs[2];
    double* o = out->state;
    long long steps = (long long)s[ASR_MJ_STEPS];
    references(m, d, c, refs);
    memcpy(o + ASR_MJ_NHEADER, s + ASR_MJ_NHEADER, ASR_NFIELD * sizeof(double));
    pd->batch->state = o + ASR_MJ_NHEADER;
    load_status(pd, s);
    if (s[ASR_MJ_STARTED] == 0.0) { /* as asr.Sim.reset(q0=qpos, refs=ctrl) */
        asr_status st = asr_batch_reset(pd->batch, &q, refs);
        if (st != ASR_OK) {
            pd->code = st;
            pd->step = 0;
        }
    }
    double dt = m->opt.timestep; /* checked at compile time, but a program may change it */
    if (pd->code == ASR_OK && (!(dt > 0.0) || dt / c->max_substep > ASR_MAX_SUBSTEPS)) {
        pd->code = ASR_ERR_RANGE;
        pd->step = steps;
    }
    if (pd->code == ASR_OK) {
        step_inputs in = {dt, &q, &qd, refs, NULL, NULL, 1, 1, 2, 1, 1};
        chunk_load_state(pd->batch, &pd->chunk); /* its parameters were loaded by init */
        chunk_step(pd->batch, &pd->chunk, &in, steps);
        chunk_store(pd->batch, &pd->chunk);
    }
    out->time = d->time;
    o[ASR_MJ_STARTED] = 1.0;
    o[ASR_MJ_STATUS] = pd->code;
    o[ASR_MJ_STEPS] = (double)(steps + 1);
    o[ASR_MJ_FAILED_STEP] = pd->code ? (double)pd->step : -1.0;
    if (pd->code != ASR_OK) { /* frozen: no torque */
        o[ASR_MJ_NHEADER + ASR_F_TAU_JOINT] = 0.0;
        o[ASR_MJ_NHEADER + ASR_F_TAU_LINK] = 0.0;
    }
}

static void compute(const mjModel* m, mjData* d, int inst, int capability) {
    plugin_data* pd = (plugin_data*)d->plugin_data[inst];
    const double* s = d->plugin_state + m->plugin_stateadr[inst];
    (void)capability;
    if (!configured_for(pd, m, inst) && configure(m, inst, pd) != 0) {
        fail_memory(d, inst);
        return;
    }
    candidate* c = &pd->cand[pd->next];
    step_candidate(m, d, pd, s, c);
    pd->next = (pd->next + 1) % NCANDIDATE;
    pd->ncand = pd->ncand < NCANDIDATE ? pd->ncand + 1 : NCANDIDATE;
    d->actuator_force[pd->cfg.act[0]] = c->state[ASR_MJ_NHEADER + ASR_F_TAU_JOINT];
    if (pd->cfg.nact == 2) d->actuator_force[pd->cfg.act[1]] = 0.0;
}

/* The candidate of age k (1: the latest). */
static candidate* candidate_aged(plugin_data* pd, int k) {
    return &pd->cand[(pd->next - k + NCANDIDATE) % NCANDIDATE];
}

/* The age of the latest candidate computed at the step's start (time - timestep, to a millionth
 * of the timestep: RK4's other stages are half a timestep or more later), else 1 (the latest). */
static int step_start_age(const mjModel* m, const mjData* d, plugin_data* pd) {
    double h = m->opt.timestep, start = d->time - h;
    for (int k = 1; k <= pd->ncand; ++k) {
        double t = candidate_aged(pd, k)->time;
        if (t >= start - 1e-6 * h && t <= start + 1e-6 * h) return k;
    }
    return 1;
}

/* Commits the step-start candidate. An evaluation after it within the step (RK4's later stages)
 * that stopped the actuator (a link faster than link_vel_max, a non-finite torque) stops it as
 * well: its torque was missing from the step, so the step cannot be trusted. */
static void advance(const mjModel* m, mjData* d, int inst) {
    plugin_data* pd = (plugin_data*)d->plugin_data[inst];
    double* s = d->plugin_state + m->plugin_stateadr[inst];
    if (pd->ncand == 0) return; /* no forward pass since the last advance */
    int age = step_start_age(m, d, pd);
    candidate* c = candidate_aged(pd, age);
    for (int k = age - 1; k >= 1 && c->state[ASR_MJ_STATUS] == 0.0; --k) {
        const candidate* later = candidate_aged(pd, k);
        if (later->state[ASR_MJ_STATUS] != 0.0) {
            c->state[ASR_MJ_STATUS] = later->state[ASR_MJ_STATUS];
            c->state[ASR_MJ_FAILED_STEP] = later->state[ASR_MJ_FAILED_STEP];
        }
    }
    if (c->state[ASR_MJ_STATUS] != 0.0 && s[ASR_MJ_STATUS] == 0.0) {
        pd->code = (int)c->state[ASR_MJ_STATUS];
        warn_stopped(m, pd, (long long)c->state[ASR_MJ_FAILED_STEP]);
    }
    memcpy(s, c->state, NSTATE * sizeof(double));
    pd->ncand = 0;
}

/* ---------------------------------------------------------------- registration */

#define HEADER_NAME_(id, name, doc) #name,
static const char* const header_names[ASR_MJ_NHEADER] = {ASR_MUJOCO_HEADER(HEADER_NAME_)};
#undef HEADER_NAME_

ASR_MUJOCO_API int asr_mujoco_header_count(void) { return ASR_MJ_NHEADER; }
ASR_MUJOCO_API const char* asr_mujoco_header_name(int k) {
    return k >= 0 && k < ASR_MJ_NHEADER ? header_names[k] : NULL;
}
ASR_MUJOCO_API int asr_mujoco_field_count(void) { return ASR_NFIELD; }
ASR_MUJOCO_API int asr_mujoco_built_for(void) { return mjVERSION_HEADER; }

static int registered = 0;
ASR_MUJOCO_API int asr_mujoco_registered(void) { return registered; }

ASR_MUJOCO_API int asr_mujoco_slot(void) {
    int slot = -1;
    return registered && mjp_getPlugin(ASR_MUJOCO_PLUGIN, &slot) ? slot : -1;
}

mjPLUGIN_LIB_INIT(asr_actuator) {
    if (mj_version() != mjVERSION_HEADER) { /* the plugin table's layout may differ */
        mju_warning("%s: not registered: built for MuJoCo %d, running %d", ASR_MUJOCO_PLUGIN,
                    mjVERSION_HEADER, mj_version());
        return;
    }
    mjpPlugin p;
    mjp_defaultPlugin(&p);
    p.name = ASR_MUJOCO_PLUGIN;
    p.capabilityflags = mjPLUGIN_ACTUATOR;
    p.nattribute = config_key_count();
    p.attributes = config_keys();
    p.nstate = nstate;
    p.init = init;
    p.destroy = destroy;
    p.reset = reset;
    p.compute = compute;
    p.advance = advance;
    mjp_registerPlugin(&p);
    registered = 1;
}
