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
 * Plan. The instances of one mjData share one plan (refcounted by their plugin_data): every
 * instance's configuration read once, its actuators, and the groups. It is made when the mjData
 * is (init: the first instance reads and checks every instance, so a bad configuration fails
 * the compilation and leaves nothing allocated), and made again only when a step is given a
 * model that differs from it in anything the plugin derived: in every forward pass the first
 * instance compares the model with the plan (sizes, every actuator's transmission, gear, force
 * limits, dynamics, delay, group, every instance's configuration text, its joint's type and
 * addresses): linear in the model's size, no text parsed. One mjData may so step several models
 * in turn (mujoco.rollout with a model per initial state, mujoco.batch's set_models), a freed
 * model's address may come back for another model, and a program may edit a model in place:
 * each is read afresh. An actuator the new reading cannot run stops with a status and a
 * warning; no step calls mju_error.
 *
 * Groups. The joints (units) of the instances of one model, mode and integration settings are
 * stepped together by the instance of the first of them, one joint per lane of the core's vectors
 * (group.h); the others' compute calls, which MuJoCo makes after the leader's in the same pass,
 * find their candidates made. An instance's candidate holds a record per joint it drives (the
 * compact form's key 'joints'), taken by the first of its joints stepped in the pass.
 *
 * State. Everything that evolves lives in the plugin state (asr_mujoco.h), a record per joint;
 * plugin_data holds only the plan and the candidates, so one mjData may run several simulations
 * in turn (mujoco.batch swaps states in and out of a thread's data) and mj_setState restores a
 * run exactly. Nothing is kept outside an mjData but the key table and the registered user
 * models (config.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>

#include "asr_mujoco.h"
#include "config.h"
#include "group.h"

enum {
    NCANDIDATE = 4 /* forward passes per step: RK4 has 4 */
};

/* Why a candidate's actuator is stopped, for advance's warning. */
enum {
    WHY_STEP,   /* the asr step (a status of the core) */
    WHY_CONFIG, /* the plan cannot run it (its entry's message) */
    WHY_HEADER  /* its committed plugin state's header was not one a step writes */
};

/* An instance's plugin state after a step computed from the inputs at `time`: nunit records. */
typedef struct candidate {
    double time;
    int* why;      /* nunit: why each joint stopped (WHY_*) */
    double* state; /* nunit x NSTATE */
} candidate;

typedef struct plugin_data {
    plan* plan;
    int nunit; /* joints of the instance (its plugin state holds nunit x NSTATE values) */
    candidate cand[NCANDIDATE];
    int ncand, next; /* candidates kept, the slot of the next */
    long long pass;  /* the plan's pass of the latest candidate */
    /* with act: the motors each joint's step starts from (act at the step's first pass, nunit x
     * ASR_MJ_NACT), its time, and whether this pass is a later one of the step (RK4) */
    double* act0;
    double act0_time;
    int act_later;
    /* the blocks the arrays above point into */
    double* block;
    int* whys;
} plugin_data;

/* ---------------------------------------------------------------- lifetime */

static plugin_data* data_of(const mjData* d, int inst) {
    return (plugin_data*)d->plugin_data[inst];
}

/* Instance inst's plugin data in d if d holds this plugin's there (d was made for a model with
 * it at inst), else NULL. */
static plugin_data* own_data(const mjModel* m, const mjData* d, int inst) {
    if (inst < 0 || inst >= d->nplugin || d->plugin[inst] != m->plugin[inst]) return NULL;
    return data_of(d, inst);
}

/* The first sensor naming instance inst, -1 if none, when no actuator names it (a sensor
 * declared with the plugin= shortcut, which makes an instance of its own); else -1. */
static int sensor_only(const mjModel* m, int inst) {
    for (int i = 0; i < m->nu; ++i) {
        if (m->actuator_plugin[i] == inst) return -1;
    }
    for (int j = 0; j < m->nsensor; ++j) {
        if (m->sensor_plugin[j] == inst) return j;
    }
    return -1;
}

static int nstate(const mjModel* m, int inst) {
    int njoint = config_joint_count(m, inst);
    joint_config cfg;
    config_error err;
    /* the actuators are checked by init, at compile time too */
    if (config_read_keys(m, inst, &cfg, &err)) {
        int j = sensor_only(m, inst);
        if (j < 0) mju_error("%s", err.msg);
        const char* name = mj_id2name(m, mjOBJ_SENSOR, j);
        mju_error("%s: sensor '%s' (#%d) names instance #%d, which drives no actuator: a sensor "
                  "gives the state of the instance of a joint's actuators, named with "
                  "<sensor><plugin instance=\"<the instance's name>\"/> (plugin=\"%s\" makes a "
                  "new instance); %s",
                  ASR_MUJOCO_PLUGIN, name ? name : "", j, inst, ASR_MUJOCO_PLUGIN, err.msg);
    }
    return NSTATE * (njoint > 0 ? njoint : 1);
}

static void data_free(plugin_data* pd) {
    free(pd->block);
    free(pd->whys);
    free(pd);
}

/* Instance inst's plugin data for nunit joints: NULL without memory. */
static plugin_data* data_create(int nunit) {
    plugin_data* pd = (plugin_data*)calloc(1, sizeof(plugin_data));
    if (!pd) return NULL;
    size_t n = (size_t)nunit;
    pd->nunit = nunit;
    pd->block = (double*)calloc(n * (NCANDIDATE * NSTATE + ASR_MJ_NACT), sizeof(double));
    pd->whys = (int*)calloc(n * NCANDIDATE, sizeof(int));
    if (!pd->block || !pd->whys) {
        data_free(pd);
        return NULL;
    }
    for (int c = 0; c < NCANDIDATE; ++c) {
        pd->cand[c].state = pd->block + (size_t)c * n * NSTATE;
        pd->cand[c].why = pd->whys + (size_t)c * n;
    }
    pd->act0 = pd->block + NCANDIDATE * n * NSTATE;
    return pd;
}

static void destroy(mjData* d, int inst) {
    plugin_data* pd = data_of(d, inst);
    if (!pd) return;
    if (pd->plan && --pd->plan->refs == 0) plan_free(pd->plan);
    data_free(pd);
    d->plugin_data[inst] = 0;
}

/* The plan of the nearest earlier instance of this plugin in d, NULL if none (each instance's
 * init looks back only to the previous one of this plugin: linear in all). */
static plan* earlier_plan(const mjModel* m, const mjData* d, int inst) {
    for (int j = inst - 1; j >= 0; --j) {
        if (d->plugin[j] == m->plugin[inst] && data_of(d, j)) return data_of(d, j)->plan;
    }
    return NULL;
}

static int init(const mjModel* m, mjData* d, int inst) {
    int nunit = m->plugin_statenum[inst] / NSTATE;
    plugin_data* pd = data_create(nunit > 0 ? nunit : 1);
    if (!pd) return -1;
    plan* p = earlier_plan(m, d, inst);
    if (!p) { /* the first instance: the plan of the whole model, every instance checked */
        char msg[sizeof(((config_error*)0)->msg)] = "";
        p = (plan*)calloc(1, sizeof(plan));
        if (!p || plan_read(p, m, m->plugin[inst]) != 0) {
            snprintf(msg, sizeof msg, "%s: out of memory (allocating the actuators' plan)",
                     ASR_MUJOCO_PLUGIN);
        }
        for (int k = 0; p && p->e && !msg[0] && k < p->nplugin; ++k) {
            const entry* e = &p->e[k];
            if (e->ours && e->code) snprintf(msg, sizeof msg, "%s", e->why ? e->why : "?");
        }
        if (msg[0]) { /* nothing of this mjData's plugin stays allocated */
            plan_free(p);
            data_free(pd);
            mju_error("%s", msg);
            return -1;
        }
    }
    p->refs++;
    pd->plan = p;
    d->plugin_data[inst] = (uintptr_t)pd;
    return 0;
}

/* plugin_state: the instance's own values (MuJoCo passes them offset already). */
static void reset(const mjModel* m, double* plugin_state, void* plugin_data, int inst) {
    double* s = plugin_state;
    (void)plugin_data;
    int n = m->plugin_statenum[inst];
    memset(s, 0, (size_t)n * sizeof(double));
    for (int at = 0; at + NSTATE <= n; at += NSTATE) s[at + ASR_MJ_FAILED_STEP] = -1.0;
}

/* ---------------------------------------------------------------- step */

/* Joint j of instance e's first actuator, -1 if unknown (an instance that cannot run: the
 * one-joint form's first actuator, else none). */
static int first_act(const plan* p, const entry* e, int j) {
    if (!e || j >= e->nunit) return -1;
    if (!e->code) return p->u[e->unit0 + j].cfg.act[0];
    return e->nunit == 1 && e->nact ? e->acts[0] : -1;
}

/* Joint j of an instance stopped: c its candidate record (why: WHY_*), s its committed one. */
static void warn_stopped(const mjModel* m, const plan* p, const entry* e, int j, int why,
                         const double* c, const double* s) {
    char who[128] = "an actuator";
    int act = first_act(p, e, j);
    if (act >= 0) config_actuator_text(m, act, who, sizeof who);
    int code = (int)c[ASR_MJ_STATUS];
    long long step = (long long)c[ASR_MJ_FAILED_STEP];
    if (why == WHY_CONFIG) {
        mju_warning("%s: %s stopped at step %lld with asr status %d: %s (it applies no torque "
                    "until the next reset after that is fixed)",
                    ASR_MUJOCO_PLUGIN, who, step, code, e && e->why ? e->why : "?");
    } else if (why == WHY_HEADER) {
        mju_warning("%s: %s stopped at step %lld with asr status %d: its plugin state's header "
                    "(started %g, status %g, steps %g, failed_step %g) is not one a step writes; "
                    "valid: started 0 or 1, status an integer code in [0, 255], steps an integer "
                    ">= 0, failed_step -1 or a step (it applies no torque until the next reset)",
                    ASR_MUJOCO_PLUGIN, who, step, code, s[ASR_MJ_STARTED], s[ASR_MJ_STATUS],
                    s[ASR_MJ_STEPS], s[ASR_MJ_FAILED_STEP]);
    } else {
        mju_warning("%s: %s stopped at step %lld with asr status %d (it applies no torque "
                    "until the next reset; asr.mujoco_plugin.states() explains the code)",
                    ASR_MUJOCO_PLUGIN, who, step, code);
    }
}

/* The candidate of instance pd in this pass (p->pass): the next slot, taken by the first of its
 * joints stepped in the pass. Whether the pass is a later one of the step (with act, RK4: up to
 * a timestep after the step's first pass with no advance between, see start_motors) is judged
 * then, once for all its joints. */
static candidate* pass_candidate(const mjModel* m, const mjData* d, const plan* p,
                                 plugin_data* pd) {
    if (pd->pass == p->pass && pd->ncand > 0) {
        return &pd->cand[(pd->next - 1 + NCANDIDATE) % NCANDIDATE];
    }
    double h = m->opt.timestep, t = pd->act0_time;
    pd->act_later = m->opt.integrator == mjINT_RK4 && pd->ncand > 0 && d->time > t &&
                    d->time <= t + h + 1e-6 * h;
    if (!pd->act_later) pd->act0_time = d->time;
    candidate* c = &pd->cand[pd->next];
    pd->next = (pd->next + 1) % NCANDIDATE;
    pd->ncand = pd->ncand < NCANDIDATE ? pd->ncand + 1 : NCANDIDATE;
    pd->pass = p->pass;
    c->time = d->time;
    return c;
}

/* The motors joint j's step starts from, with act at cfg->act_adr, into its pd->act0: act as the
 * step's first pass saw it, kept for RK4's later passes within the step (MuJoCo gives them
 * integrated act; they see the motors as at the step's start, as without act). group_step puts
 * them in place of the committed record's when the actuator has started (the first step after a
 * reset places the motors instead). */
static const double* start_motors(const mjData* d, const plugin_data* pd, int j,
                                  const joint_config* cfg) {
    double* act0 = pd->act0 + (size_t)j * ASR_MJ_NACT;
    if (!pd->act_later) {
        for (int v = 0; v < ASR_MJ_NACT; ++v) act0[v] = d->act[cfg->act_adr + v];
    }
    return act0;
}

/* Leader unit `lead` steps its group: a candidate record for every member, whose torque goes to
 * MuJoCo; a member with act starts from the motors in act and gets act_dot (the candidate's
 * motors less the step's start, over the timestep). */
static void step_group(const mjModel* m, mjData* d, const plan* p, const unit* lead) {
    const double* s[MAX_GROUP];
    const double* act[MAX_GROUP];
    double* out[MAX_GROUP];
    mj_header h[MAX_GROUP];
    for (int i = 0; i < lead->nmember; ++i) {
        const unit* u = &p->u[lead->members[i]];
        plugin_data* pd = data_of(d, u->inst);
        candidate* c = pass_candidate(m, d, p, pd);
        s[i] = d->plugin_state + m->plugin_stateadr[u->inst] + (size_t)u->k * NSTATE;
        act[i] = u->cfg.act_adr >= 0 ? start_motors(d, pd, u->k, &u->cfg) : NULL;
        out[i] = c->state + (size_t)u->k * NSTATE;
        c->why[u->k] = header_read(s[i], &h[i]) ? WHY_HEADER : WHY_STEP;
    }
    group_step(lead->grp, m, d, s, h, act, out);
    for (int i = 0; i < lead->nmember; ++i) {
        const unit* u = &p->u[lead->members[i]];
        const joint_config* cfg = &u->cfg;
        d->actuator_force[cfg->act[0]] = out[i][ASR_MJ_NHEADER + ASR_F_TAU_JOINT];
        if (cfg->nact == 2) d->actuator_force[cfg->act[1]] = 0.0;
        if (cfg->act_adr < 0) continue;
        const double* act0 = act[i];
        for (int j = 0; j < ASR_MJ_NACT; ++j) {
            d->act_dot[cfg->act_adr + j] =
                (out[i][ASR_MJ_NHEADER + mj_act_fields[j]] - act0[j]) / m->opt.timestep;
        }
    }
}

/* Instance inst cannot run (its entry says why): each joint stopped, no torque. */
static void step_stopped(const mjModel* m, mjData* d, const plan* p, const entry* e, int inst) {
    plugin_data* pd = data_of(d, inst);
    candidate* c = pass_candidate(m, d, p, pd);
    int n = pd->nunit < e->nunit ? pd->nunit : e->nunit;
    for (int j = 0; j < n; ++j) {
        const double* s = d->plugin_state + m->plugin_stateadr[inst] + (size_t)j * NSTATE;
        header_stop(s, e->code, c->state + (size_t)j * NSTATE);
        c->why[j] = WHY_CONFIG;
    }
    for (int a = 0; a < e->nact; ++a) d->actuator_force[e->acts[a]] = 0.0;
}

/* The plan of d made current for m before instance inst's compute; NULL if it has no memory.
 * The first instance of a pass compares the whole model (MuJoCo calls the instances in index
 * order); any other finds it done, unless m's first instance is not the plan's. */
static plan* current_plan(const mjModel* m, mjData* d, plan* p, int inst) {
    int stale = inst < p->first || inst >= p->nplugin || !p->e || !p->e[inst].ours ||
                p->slot != m->plugin[inst] || p->first >= m->nplugin ||
                m->plugin[p->first] != p->slot;
    if (!stale && inst == p->first) stale = !plan_matches(p, m);
    if (stale) {
        if (plan_read(p, m, m->plugin[inst]) != 0) return NULL;
        for (int k = 0; k < p->nplugin; ++k) { /* an mjData made for another model */
            entry* e = &p->e[k];
            const plugin_data* pk = own_data(m, d, k);
            if (e->ours && !e->code && (!pk || pk->nunit != e->nunit)) {
                config_error err = {ASR_ERR_MODEL, ""};
                snprintf(err.msg, sizeof err.msg,
                         "%s: instance #%d is not this plugin's in the mjData stepped with this "
                         "model (made for another model)",
                         ASR_MUJOCO_PLUGIN, k);
                entry_fail(e, &err);
            }
        }
    }
    if (!p->grouped) plan_group(p, m);
    return p;
}

static void sense(const mjModel* m, mjData* d, int inst);

static void compute(const mjModel* m, mjData* d, int inst, int capability) {
    if (capability == mjPLUGIN_SENSOR) {
        sense(m, d, inst);
        return;
    }
    plugin_data* pd = own_data(m, d, inst);
    if (!pd) {
        mju_warning("%s: instance #%d of the model is not this plugin's in the mjData (made for "
                    "another model): not stepped",
                    ASR_MUJOCO_PLUGIN, inst);
        return;
    }
    plan* p = current_plan(m, d, pd->plan, inst);
    if (!p) {
        mju_warning("%s: out of memory reading the model: instance #%d not stepped",
                    ASR_MUJOCO_PLUGIN, inst);
        return;
    }
    if (inst == p->first) p->pass++; /* MuJoCo calls it first in every pass */
    const entry* e = &p->e[inst];
    if (e->code) {
        step_stopped(m, d, p, e, inst);
        return;
    }
    for (int j = 0; j < e->nunit; ++j) { /* the groups its joints lead */
        const unit* u = &p->u[e->unit0 + j];
        if (u->grp) step_group(m, d, p, u);
    } /* its other joints: their leaders, called earlier in this pass, stepped them */
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
 * that stopped a joint's actuator (a link faster than link_vel_max, a non-finite torque) stops
 * it as well: its torque was missing from the step, so the step cannot be trusted. */
static void advance(const mjModel* m, mjData* d, int inst) {
    plugin_data* pd = own_data(m, d, inst);
    if (!pd || pd->ncand == 0) return; /* not this plugin's, or no forward pass since */
    int n = m->plugin_statenum[inst] / NSTATE;
    n = n < pd->nunit ? n : pd->nunit;
    double* s0 = d->plugin_state + m->plugin_stateadr[inst];
    int age = step_start_age(m, d, pd);
    candidate* c = candidate_aged(pd, age);
    const plan* p = pd->plan;
    const entry* e = p && p->e && inst < p->nplugin ? &p->e[inst] : NULL;
    for (int j = 0; j < n; ++j) {
        double* cs = c->state + (size_t)j * NSTATE;
        double* s = s0 + (size_t)j * NSTATE;
        for (int k = age - 1; k >= 1 && cs[ASR_MJ_STATUS] == 0.0; --k) {
            const candidate* later = candidate_aged(pd, k);
            const double* ls = later->state + (size_t)j * NSTATE;
            if (ls[ASR_MJ_STATUS] != 0.0) {
                cs[ASR_MJ_STATUS] = ls[ASR_MJ_STATUS];
                cs[ASR_MJ_FAILED_STEP] = ls[ASR_MJ_FAILED_STEP];
                c->why[j] = later->why[j];
            }
        }
        mj_header h;
        if (cs[ASR_MJ_STATUS] != 0.0 && (header_read(s, &h) || h.status == 0)) {
            warn_stopped(m, p, e, j, c->why[j], cs, s);
        }
        memcpy(s, cs, NSTATE * sizeof(double));
        /* act: the committed motors exactly (MuJoCo integrated act_dot into it before this call) */
        int a = first_act(p, e, j);
        if (a >= 0 && a < m->nu && m->actuator_actnum[a] == ASR_MJ_NACT) {
            int adr = m->actuator_actadr[a];
            for (int v = 0; v < ASR_MJ_NACT; ++v)
                d->act[adr + v] = s[ASR_MJ_NHEADER + mj_act_fields[v]];
        }
    }
    pd->ncand = 0;
}

/* ---------------------------------------------------------------- sensors */

/* Sensors (asr_mujoco.h, ASR_MUJOCO_SENSOR). Stage: position (needstage mjSTAGE_POS). A sensor
 * copies the committed plugin state, which no stage of a forward pass changes (compute keeps its
 * step in a candidate; only advance, after the integrator, commits), so the earliest stage gives
 * the same values as any later one, and MuJoCo runs no preparation for it: it calls
 * mj_subtreeVel before a velocity-stage sensor plugin and mj_rnePostConstraint before an
 * acceleration-stage one, for every instance of a plugin with sensors, whether the model
 * declares a sensor or not. MuJoCo computes sensors only in the step's first forward pass (RK4's
 * later stages skip them), and in mj_step1, so they read the record the previous step committed.
 *
 * MuJoCo calls the sensor compute of every instance; the first instance of the pass writes every
 * sensor of this plugin in one scan of the model's sensors (linear per pass), the others return.
 * The plan's first instance is current unless the model changed since the last actuator pass
 * (sensors come before it): then an instance before it, or every instance when the plan's first
 * is not this plugin's in m, writes them too (the same values). */

#define SENSOR_STATE_(id, name, unit, state, doc) state,
static const int sensor_state[ASR_MJ_NSENSOR] = {ASR_MUJOCO_SENSOR(SENSOR_STATE_)};
#undef SENSOR_STATE_

/* A sensor gives ASR_MJ_NSENSOR values per joint of its instance, in the instance's joint order
 * (config text: MuJoCo asks right after nstate). */
static int nsensordata(const mjModel* m, int inst, int sensor_id) {
    (void)sensor_id;
    int njoint = config_joint_count(m, inst);
    return ASR_MJ_NSENSOR * (njoint > 0 ? njoint : 1);
}

/* Writes every sensor of plugin slot `slot` in m from its instance's committed plugin state; NaN
 * for an instance that is not this plugin's in d (made for another model), as compute does not
 * step it. */
static void write_sensors(const mjModel* m, mjData* d, int slot) {
    config_count_work(m->nsensor);
    for (int j = 0; j < m->nsensor; ++j) {
        int k = m->sensor_plugin[j];
        if (m->sensor_type[j] != mjSENS_PLUGIN || k < 0 || k >= m->nplugin ||
            m->plugin[k] != slot) {
            continue;
        }
        double* out = d->sensordata + m->sensor_adr[j];
        int n = m->sensor_dim[j], njoint = m->plugin_statenum[k] / NSTATE;
        if (!own_data(m, d, k) || m->plugin_statenum[k] != NSTATE * njoint ||
            n != ASR_MJ_NSENSOR * njoint) {
            for (int v = 0; v < n; ++v) out[v] = NAN;
            continue;
        }
        const double* s = d->plugin_state + m->plugin_stateadr[k];
        for (int u = 0; u < njoint; ++u, out += ASR_MJ_NSENSOR, s += NSTATE) {
            for (int v = 0; v < ASR_MJ_NSENSOR; ++v) out[v] = s[sensor_state[v]];
        }
    }
}

static void sense(const mjModel* m, mjData* d, int inst) {
    plugin_data* pd = own_data(m, d, inst);
    if (!pd || !pd->plan || m->nsensor == 0) return;
    const plan* p = pd->plan;
    int slot = m->plugin[inst];
    int writer = inst <= p->first || p->slot != slot || p->first >= m->nplugin ||
                 m->plugin[p->first] != slot;
    if (writer) write_sensors(m, d, slot);
}

/* ---------------------------------------------------------------- registration */

#define HEADER_NAME_(id, name, doc) #name,
static const char* const header_names[ASR_MJ_NHEADER] = {ASR_MUJOCO_HEADER(HEADER_NAME_)};
#undef HEADER_NAME_

ASR_MUJOCO_API int asr_mujoco_header_count(void) { return ASR_MJ_NHEADER; }
ASR_MUJOCO_API const char* asr_mujoco_header_name(int k) {
    return k >= 0 && k < ASR_MJ_NHEADER ? header_names[k] : NULL;
}
#define ACT_NAME_(id, name, unit) #name,
#define ACT_UNIT_(id, name, unit) unit,
static const char* const act_names[ASR_MJ_NACT] = {ASR_MUJOCO_ACT(ACT_NAME_)};
static const char* const act_units[ASR_MJ_NACT] = {ASR_MUJOCO_ACT(ACT_UNIT_)};
#undef ACT_NAME_
#undef ACT_UNIT_

ASR_MUJOCO_API int asr_mujoco_act_count(void) { return ASR_MJ_NACT; }
ASR_MUJOCO_API const char* asr_mujoco_act_name(int k) {
    return k >= 0 && k < ASR_MJ_NACT ? act_names[k] : NULL;
}
ASR_MUJOCO_API const char* asr_mujoco_act_unit(int k) {
    return k >= 0 && k < ASR_MJ_NACT ? act_units[k] : NULL;
}
ASR_MUJOCO_API int asr_mujoco_act_field(int k) {
    return k >= 0 && k < ASR_MJ_NACT ? mj_act_fields[k] : -1;
}
#define SENSOR_NAME_(id, name, unit, state, doc) #name,
static const char* const sensor_names[ASR_MJ_NSENSOR] = {ASR_MUJOCO_SENSOR(SENSOR_NAME_)};
#undef SENSOR_NAME_
#define SENSOR_UNIT_(id, name, unit, state, doc) unit,
static const char* const sensor_units[ASR_MJ_NSENSOR] = {ASR_MUJOCO_SENSOR(SENSOR_UNIT_)};
#undef SENSOR_UNIT_

ASR_MUJOCO_API int asr_mujoco_sensor_count(void) { return ASR_MJ_NSENSOR; }
ASR_MUJOCO_API const char* asr_mujoco_sensor_name(int k) {
    return k >= 0 && k < ASR_MJ_NSENSOR ? sensor_names[k] : NULL;
}
ASR_MUJOCO_API const char* asr_mujoco_sensor_unit(int k) {
    return k >= 0 && k < ASR_MJ_NSENSOR ? sensor_units[k] : NULL;
}
ASR_MUJOCO_API int asr_mujoco_field_count(void) { return ASR_NFIELD; }
ASR_MUJOCO_API int asr_mujoco_built_for(void) { return mjVERSION_HEADER; }

/* The MuJoCo version the library was built for, also as text in the file, which
 * asr.mujoco_plugin reads before loading it: a library built for another MuJoCo need not load at
 * all (it needs that MuJoCo's libmujoco.so.<version>). */
#define ASR_MJ_TEXT_(x) #x
#define ASR_MJ_TEXT(x) ASR_MJ_TEXT_(x)
ASR_MUJOCO_API const char asr_mujoco_stamp[] =
    "ASR_MUJOCO_BUILT_FOR=" ASR_MJ_TEXT(mjVERSION_HEADER);

ASR_MUJOCO_API int asr_mujoco_max_user_models(void) { return ASR_MUJOCO_MAX_USER_MODELS; }

/* 1: this library registered the plugin; -1: another library had registered the name first;
 * 0: not registered (another MuJoCo version is running). */
static int registered = 0;
ASR_MUJOCO_API int asr_mujoco_registered(void) { return registered; }

ASR_MUJOCO_API int asr_mujoco_slot(void) {
    int slot = -1;
    return registered == 1 && mjp_getPlugin(ASR_MUJOCO_PLUGIN, &slot) ? slot : -1;
}

ASR_MUJOCO_API unsigned long long asr_mujoco_registered_code(void) {
    int slot = -1;
    const mjpPlugin* p =
        mj_version() == mjVERSION_HEADER ? mjp_getPlugin(ASR_MUJOCO_PLUGIN, &slot) : NULL;
    return p ? (unsigned long long)p->init : 0;
}

mjPLUGIN_LIB_INIT(asr_actuator) {
    if (mj_version() != mjVERSION_HEADER) { /* the plugin table's layout may differ */
        mju_warning("%s: not registered: built for MuJoCo %d, running %d", ASR_MUJOCO_PLUGIN,
                    mjVERSION_HEADER, mj_version());
        return;
    }
    int slot = -1;
    if (mjp_getPlugin(ASR_MUJOCO_PLUGIN, &slot)) {
        /* another copy of this library (another file) registered it: registering the name again
         * is mju_error, which ends the process */
        registered = -1;
        mju_warning("%s: not registered by this library: another library registered it first "
                    "(plugin slot %d); load one copy of asr's plugin per process",
                    ASR_MUJOCO_PLUGIN, slot);
        return;
    }
    mjpPlugin p;
    mjp_defaultPlugin(&p);
    p.name = ASR_MUJOCO_PLUGIN;
    p.capabilityflags = mjPLUGIN_ACTUATOR | mjPLUGIN_SENSOR;
    p.needstage = mjSTAGE_POS; /* the sensors' stage: "sensors" above says why */
    p.nsensordata = nsensordata;
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
