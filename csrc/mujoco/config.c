/* config.c - reading and checking an asr.actuator instance's configuration (config.h).
 *
 * Every check runs when MuJoCo compiles the model (the plugin's nstate callback), so a bad MJCF
 * fails to load with a message naming the instance, its actuator, the key, the value and the
 * valid range, and nothing can go wrong later in a step. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr_mujoco.h"
#include "config.h"

/* ---------------------------------------------------------------- declared keys */

/* The keys that are not parameters. */
static const char* const SETTING_KEYS[] = {"model", "mode", "max_substep", "motor_scheme",
                                           "params"};
enum {
    NSETTING = sizeof(SETTING_KEYS) / sizeof(SETTING_KEYS[0]),
    MAX_KEYS = NSETTING + ASR_NCOMMON + 16 * ASR_MAX_MODEL_PARAM
};
static const char* keys[MAX_KEYS];
static int nkeys = 0;

static void add_key(const char* name) {
    for (int k = 0; k < nkeys; ++k) {
        if (!strcmp(keys[k], name)) return;
    }
    if (nkeys < MAX_KEYS) keys[nkeys++] = name;
}

/* Built once, when the library registers the plugin (before any other thread can ask). */
static void build_keys(void) {
    if (nkeys) return;
    for (int k = 0; k < NSETTING; ++k) add_key(SETTING_KEYS[k]);
    for (int k = 0; k < ASR_NCOMMON; ++k) add_key(asr_common_param_spec(k)->name);
    for (int i = 0; i < asr_model_count(); ++i) {
        const asr_model_def* def = asr_model_get(i);
        for (int k = 0; k < def->nparam; ++k) add_key(def->params[k].name);
    }
}

int config_key_count(void) {
    build_keys();
    return nkeys;
}

const char* const* config_keys(void) {
    build_keys();
    return keys;
}

/* ---------------------------------------------------------------- user models */

static const asr_model_def* user_models[ASR_MUJOCO_MAX_USER_MODELS];
static int nuser = 0;
static pthread_mutex_t user_lock = PTHREAD_MUTEX_INITIALIZER;

static const asr_model_def* find_user(const char* name) {
    for (int k = 0; k < nuser; ++k) {
        if (!strcmp(user_models[k]->name, name)) return user_models[k];
    }
    return NULL;
}

ASR_MUJOCO_API int asr_mujoco_register_model(const asr_model_def* def) {
    if (!def || !def->name || !def->elastic || !def->refmap) return ASR_ERR_NULL;
    if (asr_model_find(def->name) >= 0) return ASR_ERR_MODEL;
    pthread_mutex_lock(&user_lock);
    const asr_model_def* old = find_user(def->name);
    int st = old == def ? ASR_OK : old ? ASR_ERR_MODEL : ASR_OK;
    if (!old) {
        if (nuser < ASR_MUJOCO_MAX_USER_MODELS) {
            user_models[nuser++] = def;
        } else {
            st = ASR_ERR_NOMEM;
        }
    }
    pthread_mutex_unlock(&user_lock);
    return st;
}

const asr_model_def* config_find_model(const char* name) {
    int k = asr_model_find(name);
    if (k >= 0) return asr_model_get(k);
    pthread_mutex_lock(&user_lock);
    const asr_model_def* def = find_user(name);
    pthread_mutex_unlock(&user_lock);
    return def;
}

/* ---------------------------------------------------------------- messages */

/* Who a message is about: the instance and its first actuator, by name where they have one. */
typedef struct reader {
    const mjModel* m;
    int inst;
    char who[256];
} reader;

/* "actuator 'name'" (or "actuator #i" when unnamed) into buf. */
static void actuator_text(const mjModel* m, int act, char* buf, size_t size) {
    const char* name = mj_id2name(m, mjOBJ_ACTUATOR, act);
    if (name && name[0]) {
        snprintf(buf, size, "actuator '%s'", name);
    } else {
        snprintf(buf, size, "actuator #%d", act);
    }
}

/* "instance 'name'" (or "instance #k" when unnamed) into buf. */
static void instance_text(const mjModel* m, int inst, char* buf, size_t size) {
    const char* name = m->names + m->name_pluginadr[inst];
    if (name[0]) {
        snprintf(buf, size, "instance '%s'", name);
    } else {
        snprintf(buf, size, "instance #%d", inst);
    }
}

/* The reader of instance inst, naming actuator act too (act < 0: none). */
static void name_reader(reader* r, const mjModel* m, int inst, int act) {
    char ibuf[96], abuf[96];
    r->m = m;
    r->inst = inst;
    instance_text(m, inst, ibuf, sizeof ibuf);
    if (act < 0) {
        snprintf(r->who, sizeof r->who, "%s %s", ASR_MUJOCO_PLUGIN, ibuf);
        return;
    }
    actuator_text(m, act, abuf, sizeof abuf);
    if (m->names[m->name_pluginadr[inst]]) {
        snprintf(r->who, sizeof r->who, "%s %s (%s)", ASR_MUJOCO_PLUGIN, ibuf, abuf);
    } else { /* an actuator's own <plugin> element: the actuator names it */
        snprintf(r->who, sizeof r->who, "%s on %s", ASR_MUJOCO_PLUGIN, abuf);
    }
}

/* mju_error with the instance named first; does not return. */
static void fail(const reader* r, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mju_error("%s: %s", r->who, msg);
}

/* "(0, inf) N m/rad" or "integer in [0, 1]" for a parameter spec. */
static void range_text(const asr_param_spec* s, char* out, size_t size) {
    char lo[32], hi[32];
    snprintf(lo, sizeof lo, "%.17g", s->lo);
    snprintf(hi, sizeof hi, "%.17g", s->hi);
    snprintf(out, size, "%s%s%s, %s%s%s%s", s->integer ? "integer in " : "", s->lo_open ? "(" : "[",
             lo, hi, s->hi_open ? ")" : "]", s->unit[0] ? " " : "", s->unit);
}

/* ---------------------------------------------------------------- values */

static const char* value_of(const reader* r, const char* key) {
    const char* v = mj_getPluginConfig(r->m, r->inst, key);
    return v && v[0] ? v : NULL;
}

/* The number in text (the whole of it; inf allowed, checked by the caller), or fail. */
static double number(const reader* r, const char* key, const char* text, const char* valid) {
    char* end;
    double x = strtod(text, &end);
    if (end == text || *end)
        fail(r, "key '%s' = '%s' is not a number; valid: %s", key, text, valid);
    return x;
}

static void read_model_and_mode(const reader* r, joint_config* c) {
    const char* name = value_of(r, "model");
    char valid[512] = "";
    for (int i = 0; i < asr_model_count(); ++i) {
        strncat(valid, i ? ", " : "", sizeof valid - strlen(valid) - 1);
        strncat(valid, asr_model_get(i)->name, sizeof valid - strlen(valid) - 1);
    }
    if (!name) fail(r, "key 'model' is missing; valid: %s, or a registered user model", valid);
    c->model = config_find_model(name);
    if (!c->model) {
        fail(r, "key 'model' = '%s' is not a model; valid: %s, or a registered user model", name,
             valid);
    }
    const char* mode = value_of(r, "mode");
    int lo = 0, hi = c->model->nmotor == 0 ? ASR_MODE_LINK_PID : ASR_NMODE - 1;
    if (!mode) fail(r, "key 'mode' is missing; valid: integer in [%d, %d]", lo, hi);
    char* end;
    long k = strtol(mode, &end, 10);
    if (end == mode || *end || k < lo || k > hi) {
        fail(r, "key 'mode' = '%s' for model '%s'; valid: integer in [%d, %d]", mode, name, lo, hi);
    }
    c->mode = (int)k;
}

/* Parameter k of the joint (common first, then the model's own), or NULL. */
static const asr_param_spec* param_spec(const joint_config* c, int k) {
    return k < ASR_NCOMMON ? asr_common_param_spec(k) : &c->model->params[k - ASR_NCOMMON];
}

static int param_index(const joint_config* c, const char* name) {
    for (int k = 0; k < c->nparam; ++k) {
        if (!strcmp(param_spec(c, k)->name, name)) return k;
    }
    return -1;
}

static void set_param(const reader* r, joint_config* c, const char* key, const char* text) {
    int k = param_index(c, key);
    if (k < 0) {
        char own[512] = "";
        for (int p = 0; p < c->model->nparam; ++p) {
            strncat(own, p ? ", " : "", sizeof own - strlen(own) - 1);
            strncat(own, c->model->params[p].name, sizeof own - strlen(own) - 1);
        }
        fail(r,
             "key '%s' is not a parameter of model '%s'; valid: its own (%s) and the common "
             "ones (motor, friction, controller, electrical, link: asr.models()['%s'].params)",
             key, c->model->name, own[0] ? own : "none", c->model->name);
    }
    const asr_param_spec* s = param_spec(c, k);
    char valid[160];
    range_text(s, valid, sizeof valid);
    double x = number(r, key, text, valid);
    if (!asr_param_valid(s, x))
        fail(r, "key '%s' = '%s' is out of range; valid: %s", key, text, valid);
    c->params[k] = x;
}

/* params="name=value name=value ...": parameters without a key of their own (user models). */
static void read_param_list(const reader* r, joint_config* c) {
    const char* list = value_of(r, "params");
    if (!list) return;
    char buf[2048];
    if (strlen(list) >= sizeof buf)
        fail(r, "key 'params' is longer than %zu characters", sizeof buf - 1);
    strcpy(buf, list);
    for (char* tok = strtok(buf, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
        char* eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1]) {
            fail(
                r,
                "key 'params': '%s' is not name=value; valid: name=value pairs separated by spaces",
                tok);
        }
        *eq = '\0';
        set_param(r, c, tok, eq + 1);
    }
}

static void read_params(const reader* r, joint_config* c) {
    c->nparam = ASR_NCOMMON + c->model->nparam;
    for (int k = 0; k < c->nparam; ++k) {
        c->params[k] =
            k < ASR_NCOMMON ? asr_common_param_default(c->model, k) : param_spec(c, k)->def;
    }
    for (int k = NSETTING; k < config_key_count(); ++k) {
        const char* text = value_of(r, keys[k]);
        if (text) set_param(r, c, keys[k], text);
    }
    read_param_list(r, c);
}

static void read_integration(const reader* r, joint_config* c) {
    const char* text = value_of(r, "max_substep");
    double dt = r->m->opt.timestep;
    c->max_substep = 1e-3;
    if (text) {
        const char* valid = "(0, inf) s";
        c->max_substep = number(r, "max_substep", text, valid);
        if (!(c->max_substep > 0.0) || !isfinite(c->max_substep)) {
            fail(r, "key 'max_substep' = '%s' is out of range; valid: %s", text, valid);
        }
    }
    if (dt / c->max_substep > ASR_MAX_SUBSTEPS) {
        fail(r,
             "key 'max_substep' = '%s' splits the timestep %g s into more than %d motor "
             "sub-steps; valid: >= %g s",
             text ? text : "0.001", dt, ASR_MAX_SUBSTEPS, dt / ASR_MAX_SUBSTEPS);
    }
    text = value_of(r, "motor_scheme");
    c->motor_scheme = ASR_MOTOR_EULER;
    if (text) {
        for (c->motor_scheme = 0; c->motor_scheme < ASR_NMOTOR_SCHEME; ++c->motor_scheme) {
            if (!strcmp(text, asr_motor_scheme_name(c->motor_scheme))) return;
        }
        fail(r, "key 'motor_scheme' = '%s'; valid: euler, trapezoid", text);
    }
}

/* ---------------------------------------------------------------- actuators */

static const char* joint_name(const mjModel* m, int jnt) {
    const char* name = mj_id2name(m, mjOBJ_JOINT, jnt);
    return name ? name : "(unnamed)";
}

/* The instance's actuators: one or two, joint transmission with gear 1, on one hinge or slide
 * joint that no other instance of the plugin drives. */
static void read_actuators(const reader* r, joint_config* c) {
    const mjModel* m = r->m;
    c->nact = 0;
    for (int i = 0; i < m->nu; ++i) {
        if (m->actuator_plugin[i] != r->inst) continue;
        if (c->nact == 2)
            fail(r, "drives more than two actuators; valid: 1 (ref1) or 2 (ref1, ref2)");
        c->act[c->nact++] = i;
    }
    if (c->nact == 0) fail(r, "drives no actuator; valid: 1 (ref1) or 2 (ref1, ref2)");
    int jnt = m->actuator_trnid[2 * c->act[0]];
    for (int a = 0; a < c->nact; ++a) {
        int i = c->act[a];
        reader ra = *r;
        name_reader(&ra, m, r->inst, i);
        if (m->actuator_trntype[i] != mjTRN_JOINT)
            fail(&ra, "transmission must be a joint (joint=\"...\")");
        if (m->actuator_trnid[2 * i] != jnt) {
            fail(&ra, "joint '%s' differs from the instance's first actuator's joint '%s'",
                 joint_name(m, m->actuator_trnid[2 * i]), joint_name(m, jnt));
        }
        if (m->actuator_gear[6 * i] != 1.0) {
            fail(&ra, "gear = %g; valid: 1 (the plugin applies the joint torque itself)",
                 m->actuator_gear[6 * i]);
        }
    }
    int type = m->jnt_type[jnt];
    if (type != mjJNT_HINGE && type != mjJNT_SLIDE) {
        fail(r, "joint '%s' is a %s joint; valid: a hinge or slide joint", joint_name(m, jnt),
             type == mjJNT_BALL ? "ball" : "free");
    }
    for (int i = 0; i < m->nu; ++i) {
        int other = m->actuator_plugin[i];
        if (other >= 0 && other != r->inst && m->plugin[other] == m->plugin[r->inst] &&
            m->actuator_trntype[i] == mjTRN_JOINT && m->actuator_trnid[2 * i] == jnt) {
            char ibuf[96], abuf[96];
            instance_text(m, other, ibuf, sizeof ibuf);
            actuator_text(m, i, abuf, sizeof abuf);
            fail(r, "joint '%s' is also driven by %s (%s); valid: one instance per joint",
                 joint_name(m, jnt), ibuf, abuf);
        }
    }
    c->qpos_adr = m->jnt_qposadr[jnt];
    c->dof_adr = m->jnt_dofadr[jnt];
}

/* The reader of instance inst, naming its first actuator in every message. */
static reader instance_reader(const mjModel* m, int inst) {
    reader r;
    name_reader(&r, m, inst, -1);
    for (int i = 0; i < m->nu; ++i) {
        if (m->actuator_plugin[i] == inst) {
            name_reader(&r, m, inst, i);
            break;
        }
    }
    return r;
}

void config_read_keys(const mjModel* m, int inst, joint_config* c) {
    reader r = instance_reader(m, inst);
    memset(c, 0, sizeof *c);
    read_model_and_mode(&r, c);
    read_params(&r, c);
    read_integration(&r, c);
}

void config_read(const mjModel* m, int inst, joint_config* c) {
    reader r = instance_reader(m, inst);
    config_read_keys(m, inst, c);
    read_actuators(&r, c);
}
