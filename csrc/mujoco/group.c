/* group.c - the joints (units) of one mjData's asr.actuator instances stepped together, and the
 * plan that says which (group.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
    asr_lanes* lanes;         /* the members in the step's lanes, parameters loaded once */
};

#define ACT_FIELD_(id, name, unit) ASR_F_##id,
const int mj_act_fields[ASR_MJ_NACT] = {ASR_MUJOCO_ACT(ACT_FIELD_)};
#undef ACT_FIELD_

/* x is an integer in [lo, hi] (so that a cast is defined): lo and hi lie in [-2^53, 2^53], where
 * the cast to long long and back is exact for an integer and changes any other value. */
static int integer_in(double x, double lo, double hi) {
    return x >= lo && x <= hi && (double)(long long)x == x;
}

int header_read(const double* s, mj_header* h) {
    double started = s[ASR_MJ_STARTED], status = s[ASR_MJ_STATUS], steps = s[ASR_MJ_STEPS];
    double failed = s[ASR_MJ_FAILED_STEP], most = 9007199254740992.0; /* 2^53 */
    if (started == 1.0 && status == 0.0 && failed == -1.0 && integer_in(steps, 0, most)) {
        /* what every running step writes: the general reading below gives the same */
        h->started = 1;
        h->status = 0;
        h->steps = (long long)steps;
        h->failed_step = -1;
        return 0;
    }
    int ok = (started == 0.0 || started == 1.0) && integer_in(status, 0, 255) &&
             integer_in(steps, 0, most) && integer_in(failed, -1, most);
    h->steps = integer_in(steps, 0, most) ? (long long)steps : 0;
    if (!ok) {
        h->started = 1;
        h->status = ASR_ERR_RANGE;
        h->failed_step = h->steps;
        return ASR_ERR_RANGE;
    }
    h->started = started != 0.0;
    h->status = (int)status;
    h->failed_step = (long long)failed;
    return 0;
}

void header_stop(const double* s, int code, double* o) {
    mj_header h;
    header_read(s, &h);
    memcpy(o, s, NSTATE * sizeof(double));
    o[ASR_MJ_STARTED] = 1.0;
    o[ASR_MJ_STATUS] = h.status ? h.status : code;
    o[ASR_MJ_STEPS] = (double)(h.steps + 1);
    o[ASR_MJ_FAILED_STEP] = (double)(h.status ? h.failed_step : h.steps);
    o[ASR_MJ_NHEADER + ASR_F_TAU_JOINT] = 0.0;
    o[ASR_MJ_NHEADER + ASR_F_TAU_LINK] = 0.0;
}

int group_compatible(const joint_config* a, const joint_config* b) {
    return a->model == b->model && a->mode == b->mode && a->max_substep == b->max_substep &&
           a->motor_scheme == b->motor_scheme;
}

void group_destroy(group* g) {
    if (!g) return;
    asr_lanes_destroy(g->lanes);
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
        set_params(g, g->q) != 0 || asr_lanes_create(g->batch, &g->lanes) != ASR_OK) {
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
        double x = d->ctrl[m->actuator_ctrladr[i]];
        if (clamp && m->actuator_ctrllimited[i]) {
            const double* r = m->actuator_ctrlrange + 2 * i;
            x = x < r[0] ? r[0] : x > r[1] ? r[1] : x;
        }
        refs[a] = x;
    }
}

/* Member i's inputs, committed state (its motors act's, when given and started) and status into
 * the batch; a member not started yet is reset from them (as asr.Sim.reset(q0=qpos, refs=ctrl)). */
static void load_member(group* g, const mjModel* m, const mjData* d, int i, const double* s,
                        const mj_header* hp, const double* act) {
    const joint_config* c = g->cfg[i];
    double dt = m->opt.timestep; /* checked at compile time, but a program may change it */
    mj_header h = *hp;
    g->q[i] = d->qpos[c->qpos_adr];
    g->qd[i] = d->qvel[c->dof_adr];
    references(m, d, c, g->refs + 2 * i);
    double* state = g->state + (size_t)i * ASR_NFIELD;
    memcpy(state, s + ASR_MJ_NHEADER, ASR_NFIELD * sizeof(double));
    if (act && s[ASR_MJ_STARTED] == 1.0) {
        for (int j = 0; j < ASR_MJ_NACT; ++j) state[mj_act_fields[j]] = act[j];
    }
    g->code[i] = h.status;
    g->joint[i] = g->code[i] ? 0 : -1;
    g->step[i] = h.failed_step;
    if (!h.started) { /* a header header_read rejects reads as started */
        asr_status st = asr_batch_reset_instances(g->batch, 1, &i, g->q, g->refs);
        if (st != ASR_OK) g->code[i] = st;
    }
    if (g->code[i] == ASR_OK && !(dt / c->max_substep <= ASR_MAX_SUBSTEPS && dt > 0.0)) {
        g->code[i] = ASR_ERR_RANGE;
    }
    g->was[i] = g->code[i];
    if (g->code[i] != ASR_OK && h.status == 0) g->step[i] = h.steps;
}

/* Member i's new plugin state: header, then its record (a stopped member applies no torque). */
static void store_member(const group* g, int i, const mj_header* hp, double* o) {
    mj_header h = *hp;
    int code = g->code[i];
    memcpy(o + ASR_MJ_NHEADER, g->state + (size_t)i * ASR_NFIELD, ASR_NFIELD * sizeof(double));
    o[ASR_MJ_STARTED] = 1.0;
    o[ASR_MJ_STATUS] = code;
    o[ASR_MJ_STEPS] = (double)(h.steps + 1);
    /* stopped by this step: at its own step count (the batch's step count is the group's) */
    o[ASR_MJ_FAILED_STEP] = !code ? -1.0 : g->was[i] ? (double)g->step[i] : (double)h.steps;
    if (code != ASR_OK) {
        o[ASR_MJ_NHEADER + ASR_F_TAU_JOINT] = 0.0;
        o[ASR_MJ_NHEADER + ASR_F_TAU_LINK] = 0.0;
    }
}

void group_step(group* g, const mjModel* m, const mjData* d, const double* const* s,
                const mj_header* h, const double* const* act, double* const* out) {
    int running = 0;
    for (int i = 0; i < g->n; ++i) {
        load_member(g, m, d, i, s[i], h + i, act[i]);
        running += g->code[i] == ASR_OK;
    }
    if (running) {
        /* the batch's statuses and step count are not the members' (store_member) */
        asr_lanes_step(g->lanes, m->opt.timestep, g->q, g->qd, g->refs, NULL, NULL);
    }
    for (int i = 0; i < g->n; ++i) store_member(g, i, h + i, out[i]);
}

/* ---------------------------------------------------------------- the plan (group.h) */

static void act_print_of(const mjModel* m, int i, int slot, act_print* a) {
    int inst = m->actuator_plugin[i];
    memset(a, 0, sizeof *a);
    a->inst = inst >= 0 && inst < m->nplugin && m->plugin[inst] == slot ? inst : -1;
    if (a->inst < 0) return;
    a->trntype = m->actuator_trntype[i];
    a->trnid = m->actuator_trnid[2 * i];
    a->dyntype = m->actuator_dyntype[i];
    a->actnum = m->actuator_actnum[i];
    a->actadr = m->actuator_actadr[i];
    a->nsample = m->actuator_history[2 * i];
    a->ctrlnum = m->actuator_ctrlnum[i];
    a->ctrladr = m->actuator_ctrladr[i];
    int group = m->actuator_group[i];
    a->disabled = group >= 0 && group < 31 && ((m->opt.disableactuator >> group) & 1);
    a->forcelimited = m->actuator_forcelimited[i];
    memcpy(a->gear, m->actuator_gear + 6 * i, sizeof a->gear);
    a->delay = m->actuator_delay[i];
}

/* Whether actuator i of m is as a says (act_print_of, compared field by field). */
static int act_same(const mjModel* m, int i, int slot, const act_print* a) {
    int inst = m->actuator_plugin[i];
    if (!(inst >= 0 && inst < m->nplugin && m->plugin[inst] == slot)) return a->inst < 0;
    int group = m->actuator_group[i];
    int disabled = group >= 0 && group < 31 && ((m->opt.disableactuator >> group) & 1);
    const double* gear = m->actuator_gear + 6 * i;
    return inst == a->inst && m->actuator_trntype[i] == a->trntype &&
           m->actuator_trnid[2 * i] == a->trnid && m->actuator_dyntype[i] == a->dyntype &&
           m->actuator_actnum[i] == a->actnum && m->actuator_actadr[i] == a->actadr &&
           m->actuator_history[2 * i] == a->nsample && m->actuator_ctrlnum[i] == a->ctrlnum &&
           m->actuator_ctrladr[i] == a->ctrladr && disabled == a->disabled &&
           m->actuator_forcelimited[i] == a->forcelimited && gear[0] == a->gear[0] &&
           gear[1] == a->gear[1] && gear[2] == a->gear[2] && gear[3] == a->gear[3] &&
           gear[4] == a->gear[4] && gear[5] == a->gear[5] && m->actuator_delay[i] == a->delay;
}

/* The model arrays act_print_of reads (field, element count), kept whole by the plan: equal to
 * them, a model passes every actuator's comparison (act_same), so plan_matches compares the
 * actuators one by one only when one differs (a NaN gear or delay fails act_same but not a byte
 * comparison: such a model keeps its plan instead of being read afresh in every pass, the same
 * reading). */
#define PLAN_ARRAYS(X)                                                                             \
    X(actuator_plugin, m->nu)                                                                      \
    X(actuator_trntype, m->nu)                                                                     \
    X(actuator_trnid, 2 * m->nu)                                                                   \
    X(actuator_dyntype, m->nu)                                                                     \
    X(actuator_actnum, m->nu)                                                                      \
    X(actuator_actadr, m->nu)                                                                      \
    X(actuator_history, 2 * m->nu)                                                                 \
    X(actuator_ctrlnum, m->nu)                                                                     \
    X(actuator_ctrladr, m->nu)                                                                     \
    X(actuator_group, m->nu)                                                                       \
    X(actuator_forcelimited, m->nu)                                                                \
    X(actuator_gear, 6 * m->nout)                                                                  \
    X(actuator_delay, m->nu)                                                                       \
    X(plugin, m->nplugin)

enum {
    SNAPSHOT_MIN_NU = 8
}; /* fewer actuators: compared one by one */

static size_t snapshot_size(const mjModel* m) {
    size_t n = sizeof m->opt.disableactuator;
#define SIZE_(field, count) n += (size_t)(count) * sizeof(*m->field);
    PLAN_ARRAYS(SIZE_)
#undef SIZE_
    return n;
}

/* p->snap: m's PLAN_ARRAYS and disableactuator (NULL without memory). */
static void snapshot_take(plan* p, const mjModel* m) {
    p->nsnap = snapshot_size(m);
    p->snap = (unsigned char*)malloc(p->nsnap);
    if (!p->snap) return;
    unsigned char* at = p->snap;
#define TAKE_(field, count)                                                                        \
    if ((count) > 0) memcpy(at, m->field, (size_t)(count) * sizeof(*m->field));                    \
    at += (size_t)(count) * sizeof(*m->field);
    PLAN_ARRAYS(TAKE_)
#undef TAKE_
    memcpy(at, &m->opt.disableactuator, sizeof m->opt.disableactuator);
}

/* Whether m's PLAN_ARRAYS and disableactuator are byte for byte those of p->snap. */
static int snapshot_same(const plan* p, const mjModel* m) {
    if (!p->snap || snapshot_size(m) != p->nsnap) return 0;
    const unsigned char* at = p->snap;
#define SAME_(field, count)                                                                        \
    if ((count) > 0 && memcmp(at, m->field, (size_t)(count) * sizeof(*m->field))) return 0;        \
    at += (size_t)(count) * sizeof(*m->field);
    PLAN_ARRAYS(SAME_)
#undef SAME_
    return !memcmp(at, &m->opt.disableactuator, sizeof m->opt.disableactuator);
}

static void drop_group(unit* u) {
    group_destroy(u->grp);
    free(u->members);
    u->grp = NULL;
    u->members = NULL;
    u->nmember = 0;
}

/* Everything the plan holds, freed (the arrays stay). */
static void plan_clear(plan* p) {
    for (int i = 0; i < p->nunit; ++i) drop_group(&p->u[i]);
    for (int k = 0; k < p->nplugin; ++k) {
        free(p->e[k].why);
        free(p->e[k].text);
        free(p->e[k].acts);
    }
    p->grouped = 0;
}

void plan_free(plan* p) {
    if (!p) return;
    if (p->e) plan_clear(p);
    free(p->e);
    free(p->u);
    free(p->acts);
    free(p->snap);
    free(p);
}

/* Instance k cannot run: code and message. */
void entry_fail(entry* e, const config_error* err) {
    e->code = err->code ? err->code : ASR_ERR_RANGE;
    free(e->why);
    e->why = (char*)malloc(strlen(err->msg) + 1);
    if (e->why) strcpy(e->why, err->msg);
}

/* Reads instance k's configuration and actuators from m into its entry and units (on: the first
 * two instances on each joint, find_rivals). */
static void entry_configure(const mjModel* m, plan* p, int k, const joint_rival* on) {
    config_error err;
    entry* e = &p->e[k];
    unit* u = p->u + e->unit0;
    e->ntext = config_text_length(m, k);
    e->text = e->ntext >= 0 ? (char*)malloc((size_t)e->ntext + 1) : NULL;
    if (e->text) memcpy(e->text, m->plugin_attr + m->plugin_attradr[k], (size_t)e->ntext);
    joint_config* cfg = (joint_config*)malloc((size_t)e->nunit * sizeof(joint_config) + 1);
    if (!cfg) {
        config_out_of_memory(m, k, "its joints' configurations", &err);
        e->code = err.code;
    } else {
        e->code = config_read(m, k, e->acts, e->nact, on, cfg, e->nunit, &err);
    }
    if (!e->code && e->ntext >= 0 && !e->text) {
        config_out_of_memory(m, k, "a copy of its configuration", &err);
        e->code = err.code;
    }
    if (!e->code && m->plugin_statenum[k] != NSTATE * e->nunit) {
        snprintf(err.msg, sizeof err.msg,
                 "%s: instance #%d holds %d plugin state values; valid: %d per joint it drives "
                 "(%d joints: not a model MuJoCo compiled with this plugin)",
                 ASR_MUJOCO_PLUGIN, k, m->plugin_statenum[k], NSTATE, e->nunit);
        err.code = e->code = ASR_ERR_MODEL;
    }
    if (e->code) {
        entry_fail(e, &err);
        free(cfg);
        return;
    }
    for (int j = 0; j < e->nunit; ++j) {
        u[j].cfg = cfg[j];
        u[j].jtype = m->jnt_type[cfg[j].jnt];
        u[j].qposadr = m->jnt_qposadr[cfg[j].jnt];
        u[j].dofadr = m->jnt_dofadr[cfg[j].jnt];
    }
    free(cfg);
}

/* The first two instances (their first actuators) found on every joint, in actuator order, into
 * on[2 njnt] (malloc); NULL without memory. */
static joint_rival* find_rivals(const plan* p, const mjModel* m) {
    joint_rival* on = (joint_rival*)malloc((size_t)(2 * m->njnt + 1) * sizeof(joint_rival));
    if (!on) return NULL;
    for (int j = 0; j < 2 * m->njnt; ++j) on[j].inst = -1;
    for (int i = 0; i < m->nu; ++i) {
        const act_print* a = &p->acts[i];
        if (a->inst < 0 || a->trntype != mjTRN_JOINT || a->trnid < 0 || a->trnid >= m->njnt) {
            continue;
        }
        joint_rival* r = on + 2 * a->trnid;
        if (r[0].inst < 0) {
            r[0] = (joint_rival){a->inst, i};
        } else if (r[0].inst != a->inst && r[1].inst < 0) {
            r[1] = (joint_rival){a->inst, i};
        }
    }
    config_count_work(m->nu + m->njnt);
    return on;
}

/* Every instance's actuators (e->acts, in actuator order) and units (p->u, one per joint it
 * drives: config_joint_count). 0, or -1 without memory. */
static int plan_units(plan* p, const mjModel* m) {
    p->nunit = 0;
    for (int k = 0; k < p->nplugin; ++k) {
        entry* e = &p->e[k];
        if (e->nact) e->acts = (int*)malloc((size_t)e->nact * sizeof(int));
        if (e->nact && !e->acts) return -1;
        e->nact = 0;
        if (!e->ours) continue;
        int n = config_joint_count(m, k);
        e->unit0 = p->nunit;
        e->nunit = n > 0 ? n : 1;
        p->nunit += e->nunit;
    }
    for (int i = 0; i < p->nu; ++i) {
        entry* e = p->acts[i].inst >= 0 ? &p->e[p->acts[i].inst] : NULL;
        if (e) e->acts[e->nact++] = i;
    }
    p->u = (unit*)calloc((size_t)p->nunit + 1, sizeof(unit));
    if (!p->u) return -1;
    for (int k = 0; k < p->nplugin; ++k) {
        const entry* e = &p->e[k];
        for (int j = 0; e->ours && j < e->nunit; ++j) {
            unit* u = &p->u[e->unit0 + j];
            u->inst = k;
            u->k = j;
            u->leader = -1;
        }
    }
    config_count_work(p->nplugin + p->nu);
    return 0;
}

/* The plan emptied after running out of memory: -1. */
static int plan_empty(plan* p) {
    if (p->e) plan_clear(p);
    free(p->e);
    free(p->u);
    free(p->acts);
    p->e = NULL;
    p->u = NULL;
    p->acts = NULL;
    p->nplugin = 0;
    p->nunit = 0;
    return -1;
}

/* The plan's view of m: sizes, actuators, which instance has which, every instance of this
 * plugin configured. 0, or -1 without memory (the plan is then empty). */
int plan_read(plan* p, const mjModel* m, int slot) {
    if (p->e) plan_clear(p);
    free(p->e);
    free(p->u);
    free(p->acts);
    free(p->snap);
    p->snap = NULL;
    p->u = NULL;
    p->nunit = 0;
    p->nplugin = (int)m->nplugin;
    p->e = (entry*)calloc((size_t)p->nplugin + 1, sizeof(entry));
    p->acts = (act_print*)calloc((size_t)m->nu + 1, sizeof(act_print));
    if (!p->e || !p->acts) return plan_empty(p);
    p->slot = slot;
    p->nu = (int)m->nu;
    p->nq = (int)m->nq;
    p->nv = (int)m->nv;
    p->njnt = (int)m->njnt;
    p->npluginattr = (long long)m->npluginattr;
    p->first = p->nplugin;
    for (int k = p->nplugin - 1; k >= 0; --k) {
        p->e[k].ours = m->plugin[k] == slot;
        if (p->e[k].ours) p->first = k;
    }
    for (int i = 0; i < p->nu; ++i) {
        act_print_of(m, i, slot, &p->acts[i]);
        if (p->acts[i].inst >= 0) p->e[p->acts[i].inst].nact++;
    }
    if (plan_units(p, m) != 0) return plan_empty(p);
    snapshot_take(p, m);
    joint_rival* on = find_rivals(p, m);
    if (!on) return plan_empty(p);
    for (int k = 0; k < p->nplugin; ++k) {
        if (p->e[k].ours) entry_configure(m, p, k, on);
    }
    free(on);
    return 0;
}

/* Whether m is, in everything the plugin derived from it, the model the plan was read from. */
int plan_matches(const plan* p, const mjModel* m) {
    if (!p->e || p->nplugin != m->nplugin || p->nu != m->nu || p->nq != m->nq || p->nv != m->nv ||
        p->njnt != m->njnt || p->npluginattr != (long long)m->npluginattr) {
        return 0;
    }
    long long bytes = 0;
    /* the arrays' byte comparison costs about what 8 actuators' one by one do */
    if (p->nu <= SNAPSHOT_MIN_NU || !snapshot_same(p, m)) {
        for (int i = 0; i < p->nu; ++i) {
            if (!act_same(m, i, p->slot, &p->acts[i])) return 0;
        }
    }
    for (int k = 0; k < p->nplugin; ++k) {
        const entry* e = &p->e[k];
        if (e->ours != (m->plugin[k] == p->slot)) return 0;
        if (!e->ours) continue;
        long long adr = m->plugin_attradr[k];
        if (e->ntext < 0 || !e->text || adr < 0 || adr + e->ntext > p->npluginattr ||
            memcmp(e->text, m->plugin_attr + adr, (size_t)e->ntext)) {
            return 0;
        }
        bytes += e->ntext;
        for (int j = 0; !e->code && j < e->nunit; ++j) {
            const unit* u = &p->u[e->unit0 + j];
            if (m->jnt_type[u->cfg.jnt] != u->jtype || m->jnt_qposadr[u->cfg.jnt] != u->qposadr ||
                m->jnt_dofadr[u->cfg.jnt] != u->dofadr) {
                return 0;
            }
        }
    }
    config_count_work(p->nu + p->nunit + bytes);
    return 1;
}

/* Orders the units that can run by what a group shares, then by unit index. */
typedef struct group_key {
    const asr_model_def* model;
    int mode, scheme, unit;
    double max_substep;
} group_key;

/* The order of the settings a group shares (0: the same, so group_compatible). */
static int class_order(const group_key* a, const group_key* b) {
    if (a->model != b->model) return (uintptr_t)a->model < (uintptr_t)b->model ? -1 : 1;
    if (a->mode != b->mode) return a->mode < b->mode ? -1 : 1;
    if (a->scheme != b->scheme) return a->scheme < b->scheme ? -1 : 1;
    if (a->max_substep != b->max_substep) return a->max_substep < b->max_substep ? -1 : 1;
    return 0;
}

static int key_order(const void* pa, const void* pb) {
    const group_key *a = (const group_key*)pa, *b = (const group_key*)pb;
    int order = class_order(a, b);
    return order ? order : a->unit < b->unit ? -1 : a->unit > b->unit;
}

/* The group of the n units at key[0..n), led by the first: made, or each unit's instance stopped
 * with ASR_ERR_NOMEM. */
static void make_group(plan* p, const mjModel* m, const group_key* key, int n) {
    const joint_config* cfg[MAX_GROUP];
    unit* lead = &p->u[key[0].unit];
    lead->members = (int*)malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; ++i) cfg[i] = &p->u[key[i].unit].cfg;
    lead->grp = lead->members ? group_create(cfg, n) : NULL;
    for (int i = 0; i < n; ++i) {
        unit* u = &p->u[key[i].unit];
        if (lead->grp) {
            lead->members[i] = key[i].unit;
            u->leader = key[0].unit;
        } else {
            config_error err;
            config_out_of_memory(m, u->inst, "the actuators' group", &err);
            entry_fail(&p->e[u->inst], &err);
        }
    }
    if (lead->grp) {
        lead->nmember = n;
    } else {
        drop_group(lead);
    }
}

static group_key key_of(const unit* u, int i) {
    return (group_key){u->cfg.model, u->cfg.mode, u->cfg.motor_scheme, i, u->cfg.max_substep};
}

/* The groups: the units of one model, mode and integration settings, in unit order, up to
 * MAX_GROUP each, led by the first. */
void plan_group(plan* p, const mjModel* m) {
    group_key* key = (group_key*)malloc((size_t)p->nunit * sizeof(group_key) + 1);
    int n = 0;
    p->grouped = 1;
    for (int i = 0; i < p->nunit; ++i) {
        const unit* u = &p->u[i];
        if (p->e[u->inst].code) continue;
        if (!key) { /* no memory for the sort: each alone */
            group_key one = key_of(u, i);
            make_group(p, m, &one, 1);
            continue;
        }
        key[n++] = key_of(u, i);
    }
    if (!key) return;
    qsort(key, (size_t)n, sizeof *key, key_order);
    for (int i = 0; i < n;) {
        int j = i + 1;
        while (j < n && j - i < MAX_GROUP && !class_order(&key[i], &key[j])) ++j;
        make_group(p, m, key + i, j - i);
        i = j;
    }
    free(key);
    config_count_work(p->nunit);
}
