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
 * Groups. The instances of one model, mode and integration settings are stepped together by the
 * first of them, one joint per lane of the core's vectors (group.h); the others' compute calls,
 * which MuJoCo makes after the leader's in the same pass, find their candidates made.
 *
 * State. Everything that evolves lives in the plugin state (asr_mujoco.h); plugin_data holds only
 * the configuration, the group and the candidates, all rebuilt from the plugin state by each
 * compute, so one mjData may run several simulations in turn (mujoco.batch swaps states in and
 * out of a thread's data) and mj_setState restores a run exactly. */
#include <stdlib.h>
#include <string.h>

#include <mujoco/mujoco.h>

#include "asr_mujoco.h"
#include "config.h"
#include "group.h"

enum {
    NCANDIDATE = 4, /* forward passes per step: RK4 has 4 */
    MAX_GROUP = 64  /* instances in a group (more: the rest form further groups) */
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
    int leader;   /* the instance that steps this one (itself when leading), -1: none yet */
    group* grp;   /* a leader's group: its members ... */
    int* members; /* ... by instance index, the leader first */
    int nmember;
    candidate cand[NCANDIDATE];
    int ncand, next; /* candidates kept, the slot of the next */
} plugin_data;

static plugin_data* data_of(const mjData* d, int inst) {
    return (plugin_data*)d->plugin_data[inst];
}

/* ---------------------------------------------------------------- lifetime */

static int nstate(const mjModel* m, int inst) {
    joint_config cfg;
    config_read_keys(m, inst, &cfg); /* the actuators are checked by init, at compile time too */
    return NSTATE;
}

/* Leader inst's group, if it leads one: its other members have no leader until a compute gives
 * them one (a later leader's group, or their own). */
static void release_group(const mjData* d, int inst) {
    plugin_data* pd = data_of(d, inst);
    for (int i = 0; i < pd->nmember; ++i) {
        plugin_data* member = data_of(d, pd->members[i]);
        if (member && member->leader == inst) member->leader = -1;
    }
    group_destroy(pd->grp);
    free(pd->members);
    pd->grp = NULL;
    pd->members = NULL;
    pd->nmember = 0;
}

static void destroy(mjData* d, int inst) {
    plugin_data* pd = data_of(d, inst);
    if (!pd) return;
    release_group(d, inst);
    free(pd->attr);
    free(pd);
    d->plugin_data[inst] = 0;
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

/* Reads instance inst's configuration from m into its plugin data: 0, or -1 without memory. Its
 * group, if it led one, is dissolved. */
static int configure(const mjModel* m, const mjData* d, int inst) {
    plugin_data* pd = data_of(d, inst);
    int n;
    const char* text = config_text(m, inst, &n);
    release_group(d, inst);
    free(pd->attr);
    config_read(m, inst, &pd->cfg);
    pd->model = m;
    pd->nattr = n;
    pd->attr = (char*)malloc((size_t)n + 1);
    pd->leader = -1;
    pd->ncand = 0;
    if (!pd->attr) return -1;
    memcpy(pd->attr, text, (size_t)n);
    return 0;
}

/* Whether pd was configured from m as m is now. One mjData may step several models in turn
 * (mujoco.rollout with a model per initial state, mujoco.batch's set_models), and a freed
 * model's address may come back for another, so the text is compared too. */
static int configured_for(const plugin_data* pd, const mjModel* m, int inst) {
    int n;
    const char* text = config_text(m, inst, &n);
    return pd->model == m && pd->nattr == n && !memcmp(pd->attr, text, (size_t)n);
}

static void fail_memory(void) {
    mju_error("%s: cannot create the actuators (out of memory)", ASR_MUJOCO_PLUGIN);
}

static int init(const mjModel* m, mjData* d, int inst) {
    plugin_data* pd = (plugin_data*)calloc(1, sizeof(plugin_data));
    if (!pd) return -1;
    d->plugin_data[inst] = (uintptr_t)pd;
    pd->leader = -1;
    if (configure(m, d, inst) != 0) {
        destroy(d, inst);
        fail_memory();
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

/* ---------------------------------------------------------------- groups */

/* Whether instance k of m runs this plugin. */
static int is_asr(const mjModel* m, int k, int slot) { return m->plugin[k] == slot; }

/* Leader inst's group: itself and every later instance it can share lanes with that no earlier
 * leader took (configured afresh where m changed). 0, or -1 without memory. */
static int form_group(const mjModel* m, const mjData* d, int inst) {
    plugin_data* pd = data_of(d, inst);
    const joint_config* cfg[MAX_GROUP];
    release_group(d, inst);
    pd->members = (int*)malloc((size_t)m->nplugin * sizeof(int));
    if (!pd->members) return -1;
    for (int k = inst; k < m->nplugin && pd->nmember < MAX_GROUP; ++k) {
        plugin_data* other = is_asr(m, k, m->plugin[inst]) ? data_of(d, k) : NULL;
        if (!other || (k > inst && other->leader >= 0 && other->leader < inst)) continue;
        if (!configured_for(other, m, k) && configure(m, d, k) != 0) return -1;
        if (!group_compatible(&pd->cfg, &other->cfg)) continue;
        if (k > inst) release_group(d, k); /* it led a group of its own: it joins this one */
        other->leader = inst;
        cfg[pd->nmember] = &other->cfg;
        pd->members[pd->nmember++] = k;
    }
    pd->grp = group_create(cfg, pd->nmember);
    return pd->grp ? 0 : -1;
}

/* Whether leader inst's group still holds: it and every member configured from m as m is now. A
 * member configured afresh leaves (and leads its own group, or joins one, at its own compute). */
static int group_current(const mjModel* m, const mjData* d, int inst) {
    plugin_data* pd = data_of(d, inst);
    int current = pd->grp != NULL;
    for (int i = 0; i < pd->nmember; ++i) {
        int k = pd->members[i];
        plugin_data* member = data_of(d, k);
        if (member->leader != inst || !configured_for(member, m, k)) current = 0;
    }
    return current;
}

static void warn_stopped(const mjModel* m, const plugin_data* pd, int code, long long step) {
    const char* name = mj_id2name(m, mjOBJ_ACTUATOR, pd->cfg.act[0]);
    mju_warning("%s: actuator '%s' stopped at step %lld with asr status %d (it applies no torque "
                "until the next reset; asr.mujoco_plugin.states() explains the code)",
                ASR_MUJOCO_PLUGIN, name ? name : "", step, code);
}

/* ---------------------------------------------------------------- step */

/* Leader inst steps its group: a candidate for every member, whose torque goes to MuJoCo. */
static void step_group(const mjModel* m, mjData* d, int inst) {
    plugin_data* pd = data_of(d, inst);
    const double* s[MAX_GROUP];
    double* out[MAX_GROUP];
    for (int i = 0; i < pd->nmember; ++i) {
        int k = pd->members[i];
        plugin_data* member = data_of(d, k);
        candidate* c = &member->cand[member->next];
        member->next = (member->next + 1) % NCANDIDATE;
        member->ncand = member->ncand < NCANDIDATE ? member->ncand + 1 : NCANDIDATE;
        c->time = d->time;
        s[i] = d->plugin_state + m->plugin_stateadr[k];
        out[i] = c->state;
    }
    group_step(pd->grp, m, d, s, out);
    for (int i = 0; i < pd->nmember; ++i) {
        const joint_config* cfg = &data_of(d, pd->members[i])->cfg;
        d->actuator_force[cfg->act[0]] = out[i][ASR_MJ_NHEADER + ASR_F_TAU_JOINT];
        if (cfg->nact == 2) d->actuator_force[cfg->act[1]] = 0.0;
    }
}

static void compute(const mjModel* m, mjData* d, int inst, int capability) {
    plugin_data* pd = data_of(d, inst);
    (void)capability;
    /* a member: its leader, called first in every pass, checked its configuration and stepped it
     * (if the leader is still an asr.actuator instance that ran on this model) */
    int leader = pd->leader;
    if (leader >= 0 && leader != inst && is_asr(m, leader, m->plugin[inst]) &&
        data_of(d, leader)->model == m) {
        return;
    }
    if (!configured_for(pd, m, inst) && configure(m, d, inst) != 0) fail_memory();
    if ((pd->leader != inst || !group_current(m, d, inst)) && form_group(m, d, inst) != 0) {
        fail_memory();
    }
    step_group(m, d, inst);
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
    plugin_data* pd = data_of(d, inst);
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
        warn_stopped(m, pd, (int)c->state[ASR_MJ_STATUS], (long long)c->state[ASR_MJ_FAILED_STEP]);
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
