/* config.c - reading and checking an asr.actuator instance's configuration (config.h).
 *
 * MuJoCo's compiler calls the plugin's nstate and init callbacks, which read every instance
 * with these functions, so a bad MJCF fails to load with a message naming the instance, its
 * actuator, the key, the value and the valid range. A step re-reads an instance only when the
 * model it is given differs from the one its configuration came from; what fails then stops the
 * actuator with a status and a warning (plugin.c), never an error from inside a step.
 *
 * An instance's text is read in one pass: MuJoCo stores it as one NUL-terminated value per
 * declared key, in the declared order (an absent key and an empty value are both ""). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr_mujoco.h"
#include "config.h"

/* ---------------------------------------------------------------- declared keys */

/* The keys that are not parameters, in this order at the start of the table. */
enum {
    KEY_MODEL,
    KEY_MODE,
    KEY_MAX_SUBSTEP,
    KEY_MOTOR_SCHEME,
    KEY_PARAMS,
    KEY_JOINTS,
    NSETTING
};
static const char* const SETTING_KEYS[NSETTING] = {"model",        "mode",   "max_substep",
                                                   "motor_scheme", "params", "joints"};
enum {
    /* up to 16 built-in models, each with at most asr_model_max_params() parameters of its own */
    MAX_KEYS = NSETTING + ASR_NCOMMON + 16 * (ASR_MAX_PARAM - ASR_NCOMMON),
    MAX_TEXT = 2048, /* longest value read (a params list) */
    MAX_NAME = 256   /* longest joint name in key 'joints' */
};
static const char* keys[MAX_KEYS];
static int nkeys = 0;
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void add_key(const char* name) {
    for (int k = 0; k < nkeys; ++k) {
        if (!strcmp(keys[k], name)) return;
    }
    if (nkeys < MAX_KEYS) keys[nkeys++] = name;
}

static void build_keys(void) {
    for (int k = 0; k < NSETTING; ++k) add_key(SETTING_KEYS[k]);
    for (int k = 0; k < ASR_NCOMMON; ++k) add_key(asr_common_param_spec(k)->name);
    for (int i = 0; i < asr_model_count(); ++i) {
        const asr_model_def* def = asr_model_get(i);
        for (int k = 0; k < def->nparam; ++k) add_key(def->params[k].name);
    }
}

int config_key_count(void) {
    pthread_once(&keys_once, build_keys);
    return nkeys;
}

const char* const* config_keys(void) {
    pthread_once(&keys_once, build_keys);
    return keys;
}

ASR_MUJOCO_API int asr_mujoco_key_count(void) { return config_key_count(); }

ASR_MUJOCO_API const char* asr_mujoco_key_name(int k) {
    return k >= 0 && k < config_key_count() ? keys[k] : NULL;
}

/* ---------------------------------------------------------------- work counter */

/* Per thread: a counter all threads add to in every pass would bounce its cache line between
 * the cores of a threaded mujoco.batch or mujoco.rollout. */
static _Thread_local long long work_done = 0;

void config_count_work(long long n) { work_done += n; }

ASR_MUJOCO_API long long asr_mujoco_work(void) { return work_done; }

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

/* Who a message is about (the instance and its first actuator, by name where they have one),
 * the instance's values by key index, and where a failure is reported. */
typedef struct reader {
    const mjModel* m;
    int inst;
    char who[256];
    const char* value[MAX_KEYS]; /* "" where the key is absent */
    config_error* err;
} reader;

void config_actuator_text(const mjModel* m, int act, char* buf, size_t size) {
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

/* Names instance inst in r->who, and actuator act too (act < 0: none). */
static void name_reader(reader* r, int act) {
    char ibuf[96], abuf[96];
    const mjModel* m = r->m;
    instance_text(m, r->inst, ibuf, sizeof ibuf);
    if (act < 0) {
        snprintf(r->who, sizeof r->who, "%s %s", ASR_MUJOCO_PLUGIN, ibuf);
        return;
    }
    config_actuator_text(m, act, abuf, sizeof abuf);
    if (m->names[m->name_pluginadr[r->inst]]) {
        snprintf(r->who, sizeof r->who, "%s %s (%s)", ASR_MUJOCO_PLUGIN, ibuf, abuf);
    } else { /* an actuator's own <plugin> element: the actuator names it */
        snprintf(r->who, sizeof r->who, "%s on %s", ASR_MUJOCO_PLUGIN, abuf);
    }
}

/* Fills r->err with the instance named first; returns code. */
static int fail(const reader* r, int code, const char* fmt, ...) {
    char msg[760];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->err->code = code;
    snprintf(r->err->msg, sizeof r->err->msg, "%s: %s", r->who, msg);
    return code;
}

void config_out_of_memory(const mjModel* m, int inst, const char* what, config_error* err) {
    reader r;
    r.m = m;
    r.inst = inst;
    r.err = err;
    name_reader(&r, -1);
    fail(&r, ASR_ERR_NOMEM, "out of memory (allocating %s)", what);
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

int config_text_length(const mjModel* m, int inst) {
    long long start = m->plugin_attradr[inst], end = (long long)m->npluginattr, at = start;
    int n = config_key_count();
    if (start < 0) return -1;
    for (int k = 0; k < n; ++k) {
        while (at < end && m->plugin_attr[at]) ++at;
        if (at >= end) return -1;
        ++at; /* the NUL */
    }
    config_count_work(at - start);
    return (int)(at - start);
}

/* The instance's values by key index, in one pass over its text. */
static int split_values(reader* r) {
    const char* at = r->m->plugin_attr + r->m->plugin_attradr[r->inst];
    if (config_text_length(r->m, r->inst) < 0) {
        return fail(r, ASR_ERR_RANGE,
                    "its configuration text is truncated (not a model MuJoCo "
                    "compiled with this plugin)");
    }
    for (int k = 0; k < config_key_count(); ++k) {
        r->value[k] = at;
        at += strlen(at) + 1;
    }
    return 0;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* text without leading and trailing white space into buf (size MAX_TEXT), or -1 if too long. */
static int trimmed(const char* text, char* buf) {
    while (is_space(*text)) ++text;
    size_t n = strlen(text);
    while (n && is_space(text[n - 1])) --n;
    if (n >= MAX_TEXT) return -1;
    memcpy(buf, text, n);
    buf[n] = '\0';
    return 0;
}

/* The number in text (all of it but surrounding white space; inf allowed, checked by the
 * caller) into *x: 0, or a status with the message filled. */
static int number(const reader* r, const char* key, const char* text, const char* valid,
                  double* x) {
    char buf[MAX_TEXT], *end;
    if (trimmed(text, buf) != 0 || !buf[0]) {
        return fail(r, ASR_ERR_RANGE, "key '%s' = '%s' is not a number; valid: %s", key, text,
                    valid);
    }
    *x = strtod(buf, &end);
    if (end == buf || *end) {
        return fail(r, ASR_ERR_RANGE, "key '%s' = '%s' is not a number; valid: %s", key, text,
                    valid);
    }
    return 0;
}

static int read_model_and_mode(const reader* r, joint_config* c) {
    const char* name = r->value[KEY_MODEL];
    char valid[512] = "", buf[MAX_TEXT];
    for (int i = 0; i < asr_model_count(); ++i) {
        strncat(valid, i ? ", " : "", sizeof valid - strlen(valid) - 1);
        strncat(valid, asr_model_get(i)->name, sizeof valid - strlen(valid) - 1);
    }
    if (trimmed(name, buf) != 0 || !buf[0]) {
        if (!name[0]) {
            return fail(r, ASR_ERR_MODEL,
                        "key 'model' is missing; valid: %s, or a registered user model", valid);
        }
        buf[0] = '\0';
    }
    c->model = buf[0] ? config_find_model(buf) : NULL;
    if (!c->model) {
        return fail(r, ASR_ERR_MODEL,
                    "key 'model' = '%s' is not a model; valid: %s, or a registered user model",
                    name, valid);
    }
    const char* mode = r->value[KEY_MODE];
    int lo = 0, hi = c->model->nmotor == 0 ? ASR_MODE_LINK_PID : ASR_NMODE - 1;
    if (!mode[0]) {
        return fail(r, ASR_ERR_MODEL, "key 'mode' is missing; valid: integer in [%d, %d]", lo, hi);
    }
    char* end;
    long k = 0;
    int ok = trimmed(mode, buf) == 0 && buf[0] && (k = strtol(buf, &end, 10), !*end);
    if (!ok || k < lo || k > hi) {
        return fail(r, ASR_ERR_MODEL,
                    "key 'mode' = '%s' for model '%s'; valid: integer in [%d, %d]", mode,
                    c->model->name, lo, hi);
    }
    c->mode = (int)k;
    return 0;
}

/* Parameter k of the joint (common first, then the model's own). */
static const asr_param_spec* param_spec(const joint_config* c, int k) {
    return k < ASR_NCOMMON ? asr_common_param_spec(k) : &c->model->params[k - ASR_NCOMMON];
}

static int param_index(const joint_config* c, const char* name, size_t len) {
    for (int k = 0; k < c->nparam; ++k) {
        const char* p = param_spec(c, k)->name;
        if (!strncmp(p, name, len) && !p[len]) return k;
    }
    return -1;
}

/* Parameter `key` (len characters) = text into c. */
static int set_param(const reader* r, joint_config* c, const char* key, size_t len,
                     const char* text) {
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), key);
    int k = param_index(c, key, len);
    if (k < 0) {
        char own[512] = "";
        for (int p = 0; p < c->model->nparam; ++p) {
            strncat(own, p ? ", " : "", sizeof own - strlen(own) - 1);
            strncat(own, c->model->params[p].name, sizeof own - strlen(own) - 1);
        }
        return fail(
            r, ASR_ERR_PARAM,
            "key '%s' is not a parameter of model '%s'; valid: its own (%s) and the common "
            "ones (motor, friction, controller, electrical, link: asr.models()['%s'].params)",
            name, c->model->name, own[0] ? own : "none", c->model->name);
    }
    const asr_param_spec* s = param_spec(c, k);
    char valid[160];
    double x = 0.0;
    range_text(s, valid, sizeof valid);
    int st = number(r, name, text, valid, &x);
    if (st) return st;
    if (!asr_param_valid(s, x)) {
        return fail(r, ASR_ERR_RANGE, "key '%s' = '%s' is out of range; valid: %s", name, text,
                    valid);
    }
    c->params[k] = x;
    return 0;
}

/* params="name=value name=value ...": parameters without a key of their own (user models).
 * Split by hand: no strtok, whose hidden position all threads would share. */
static int read_param_list(const reader* r, joint_config* c) {
    const char* at = r->value[KEY_PARAMS];
    if (strlen(at) >= MAX_TEXT) {
        return fail(r, ASR_ERR_RANGE, "key 'params' is longer than %d characters", MAX_TEXT - 1);
    }
    for (;;) {
        while (is_space(*at)) ++at;
        if (!*at) return 0;
        const char* tok = at;
        while (*at && !is_space(*at)) ++at;
        size_t len = (size_t)(at - tok);
        const char* eq = memchr(tok, '=', len);
        if (!eq || eq == tok || eq + 1 == at) {
            return fail(r, ASR_ERR_RANGE,
                        "key 'params': '%.*s' is not name=value; valid: name=value pairs "
                        "separated by spaces",
                        (int)len, tok);
        }
        char value[MAX_TEXT];
        snprintf(value, sizeof value, "%.*s", (int)(at - eq - 1), eq + 1);
        int st = set_param(r, c, tok, (size_t)(eq - tok), value);
        if (st) return st;
    }
}

/* The motor's position limits must be ordered (asr_batch_set_param refuses them otherwise). */
static int check_limits(const reader* r, const joint_config* c) {
    double lo = c->params[ASR_P_POS_MIN], hi = c->params[ASR_P_POS_MAX];
    if (lo < hi) return 0;
    return fail(r, ASR_ERR_RANGE,
                "key 'pos_min' = %.17g is not below key 'pos_max' = %.17g; valid: pos_min < "
                "pos_max (rad)",
                lo, hi);
}

static int read_params(const reader* r, joint_config* c) {
    c->nparam = ASR_NCOMMON + c->model->nparam;
    for (int k = 0; k < c->nparam; ++k) {
        c->params[k] =
            k < ASR_NCOMMON ? asr_common_param_default(c->model, k) : param_spec(c, k)->def;
    }
    for (int k = NSETTING; k < config_key_count(); ++k) {
        const char* text = r->value[k];
        int st = text[0] ? set_param(r, c, keys[k], strlen(keys[k]), text) : 0;
        if (st) return st;
    }
    int st = read_param_list(r, c);
    return st ? st : check_limits(r, c);
}

static int read_integration(const reader* r, joint_config* c) {
    const char* text = r->value[KEY_MAX_SUBSTEP];
    double dt = r->m->opt.timestep;
    c->max_substep = 1e-3;
    if (text[0]) {
        const char* valid = "(0, inf) s";
        int st = number(r, "max_substep", text, valid, &c->max_substep);
        if (st) return st;
        if (!(c->max_substep > 0.0) || !isfinite(c->max_substep)) {
            return fail(r, ASR_ERR_RANGE, "key 'max_substep' = '%s' is out of range; valid: %s",
                        text, valid);
        }
    }
    if (!(dt / c->max_substep <= ASR_MAX_SUBSTEPS)) {
        return fail(r, ASR_ERR_RANGE,
                    "key 'max_substep' = '%s' splits the timestep %g s into more than %d motor "
                    "sub-steps; valid: >= %g s",
                    text[0] ? text : "0.001", dt, ASR_MAX_SUBSTEPS, dt / ASR_MAX_SUBSTEPS);
    }
    text = r->value[KEY_MOTOR_SCHEME];
    c->motor_scheme = ASR_MOTOR_EULER;
    if (text[0]) {
        char buf[MAX_TEXT];
        if (trimmed(text, buf) == 0) {
            for (int k = 0; k < ASR_NMOTOR_SCHEME; ++k) {
                if (!strcmp(buf, asr_motor_scheme_name(k))) {
                    c->motor_scheme = k;
                    return 0;
                }
            }
        }
        return fail(r, ASR_ERR_RANGE, "key 'motor_scheme' = '%s'; valid: euler, trapezoid", text);
    }
    return 0;
}

/* ---------------------------------------------------------------- actuators */

static const char* joint_name(const mjModel* m, int jnt) {
    const char* name = mj_id2name(m, mjOBJ_JOINT, jnt);
    return name ? name : "(unnamed)";
}

/* What MuJoCo would do to actuator i's force or input that the plugin cannot honour: 0, or a
 * status with the message filled (r names the actuator). */
static int check_unhonoured(const reader* r, int i, int first) {
    const mjModel* m = r->m;
    if (m->actuator_gear[6 * i] != 1.0) {
        return fail(r, ASR_ERR_RANGE,
                    "gear = %g; valid: 1 (the plugin applies the joint torque itself)",
                    m->actuator_gear[6 * i]);
    }
    if (m->actuator_forcelimited[i]) {
        const double* f = m->actuator_forcerange + 2 * i;
        return fail(r, ASR_ERR_RANGE,
                    "forcerange = [%g, %g]; valid: none (MuJoCo would clip the torque the actuator "
                    "model computed and records; limit the motor with its own parameters, e.g. "
                    "tau_max)",
                    f[0], f[1]);
    }
    if (m->actuator_dyntype[i] != mjDYN_NONE) {
        static const char* const DYN[] = {"none",   "integrator", "filter", "filterexact",
                                          "muscle", "dcmotor",    "pid",    "user"};
        int t = m->actuator_dyntype[i];
        return fail(r, ASR_ERR_RANGE,
                    "dyntype = %s; valid: none (the actuator's dynamics are the asr model's, its "
                    "state the plugin state)",
                    t >= 0 && t < (int)(sizeof DYN / sizeof DYN[0]) ? DYN[t] : "(other)");
    }
    if (first && m->actuator_actnum[i] != 0 && m->actuator_actnum[i] != ASR_MJ_NACT) {
        return fail(r, ASR_ERR_RANGE,
                    "actdim = %d; valid: 0 (the actuator's state is the plugin state only) or %d "
                    "(MuJoCo's act holds the motors' th1, th2, th1d, th2d too)",
                    m->actuator_actnum[i], ASR_MJ_NACT);
    }
    if (!first && m->actuator_actnum[i] != 0) {
        return fail(r, ASR_ERR_RANGE,
                    "actdim = %d; valid: 0 (only the instance's first actuator may hold act, "
                    "with actdim %d)",
                    m->actuator_actnum[i], ASR_MJ_NACT);
    }
    if (m->actuator_delay[i] != 0.0) {
        return fail(r, ASR_ERR_RANGE, "delay = %g s; valid: 0 (the plugin reads ctrl as it is now)",
                    m->actuator_delay[i]);
    }
    if (m->actuator_history[2 * i] != 0) {
        return fail(r, ASR_ERR_RANGE,
                    "nsample = %d; valid: 0 (the plugin keeps no ctrl history; it reads ctrl as it "
                    "is now)",
                    m->actuator_history[2 * i]);
    }
    if (m->actuator_ctrlnum[i] != 1) {
        return fail(r, ASR_ERR_RANGE, "takes %d controls; valid: 1 (its reference)",
                    m->actuator_ctrlnum[i]);
    }
    int group = m->actuator_group[i];
    if (group >= 0 && group < 31 && (m->opt.disableactuator >> group) & 1) {
        return fail(r, ASR_ERR_RANGE,
                    "group %d is disabled (option disableactuator = %d); valid: an enabled group "
                    "(MuJoCo would drop the torque the actuator model computed and records)",
                    group, m->opt.disableactuator);
    }
    return 0;
}

/* The instance of the plugin besides inst on joint jnt (on: the first two per joint). */
static joint_rival rival_on(const joint_rival* on, int jnt, int inst) {
    const joint_rival* r = on + 2 * jnt;
    return r[0].inst != inst ? r[0] : r[1];
}

/* Joint jnt of c: a hinge or slide joint that no other instance of the plugin drives. */
static int check_joint(const reader* r, int jnt, const joint_rival* on, joint_config* c) {
    const mjModel* m = r->m;
    int type = m->jnt_type[jnt];
    if (type != mjJNT_HINGE && type != mjJNT_SLIDE) {
        return fail(r, ASR_ERR_RANGE, "joint '%s' is a %s joint; valid: a hinge or slide joint",
                    joint_name(m, jnt), type == mjJNT_BALL ? "ball" : "free");
    }
    joint_rival rival = rival_on(on, jnt, r->inst);
    if (rival.inst >= 0) {
        char ibuf[96], abuf[96];
        instance_text(m, rival.inst, ibuf, sizeof ibuf);
        config_actuator_text(m, rival.act, abuf, sizeof abuf);
        return fail(r, ASR_ERR_RANGE,
                    "joint '%s' is also driven by %s (%s); valid: one instance "
                    "per joint",
                    joint_name(m, jnt), ibuf, abuf);
    }
    c->jnt = jnt;
    c->qpos_adr = m->jnt_qposadr[jnt];
    c->dof_adr = m->jnt_dofadr[jnt];
    c->act_adr = m->actuator_actnum[c->act[0]] == ASR_MJ_NACT ? m->actuator_actadr[c->act[0]] : -1;
    return 0;
}

/* The one-joint form (no key 'joints'): one or two actuators, joint transmission, honoured
 * settings, on the joint of the first. */
static int read_actuators(const reader* r, const int* acts, int nact, const joint_rival* on,
                          joint_config* c) {
    const mjModel* m = r->m;
    if (nact > 2) {
        return fail(r, ASR_ERR_RANGE,
                    "drives more than two actuators; valid: 1 (ref1) or 2 (ref1, ref2)");
    }
    if (nact == 0) {
        return fail(r, ASR_ERR_RANGE, "drives no actuator; valid: 1 (ref1) or 2 (ref1, ref2)");
    }
    c->nact = nact;
    int jnt = m->actuator_trnid[2 * acts[0]];
    for (int a = 0; a < nact; ++a) {
        int i = c->act[a] = acts[a];
        reader ra = *r;
        name_reader(&ra, i);
        if (m->actuator_trntype[i] != mjTRN_JOINT) {
            return fail(&ra, ASR_ERR_RANGE, "transmission must be a joint (joint=\"...\")");
        }
        if (m->actuator_trnid[2 * i] != jnt) {
            return fail(&ra, ASR_ERR_RANGE,
                        "joint '%s' differs from the instance's first actuator's joint '%s'",
                        joint_name(m, m->actuator_trnid[2 * i]), joint_name(m, jnt));
        }
        int st = check_unhonoured(&ra, i, a == 0);
        if (st) return st;
    }
    return check_joint(r, jnt, on, c);
}

/* The next name of a 'joints' list at *at into name (MAX_NAME, cut to fit): its length (>=
 * MAX_NAME: too long), 0 at the end. */
static size_t next_name(const char** at, char* name) {
    while (is_space(**at)) ++*at;
    const char* tok = *at;
    while (**at && !is_space(**at)) ++*at;
    size_t len = (size_t)(*at - tok);
    size_t kept = len < MAX_NAME ? len : MAX_NAME - 1;
    memcpy(name, tok, kept);
    name[kept] = '\0';
    return len;
}

int config_joint_count(const mjModel* m, int inst) {
    if (config_text_length(m, inst) < 0) return -1;
    const char* at = m->plugin_attr + m->plugin_attradr[inst];
    for (int k = 0; k < KEY_JOINTS; ++k) at += strlen(at) + 1;
    int n = 0;
    char name[MAX_NAME];
    while (next_name(&at, name) != 0) ++n;
    return n ? n : 1;
}

/* The compact form (key 'joints' lists njoint names): joint k of c[k] is the k-th name, its
 * actuators the instance's actuators on it, in actuator order (one or two each); every actuator
 * of the instance on a listed joint. c[0] holds the keys' configuration, copied to each. */
static int read_joint_list(const reader* r, const int* acts, int nact, const joint_rival* on,
                           joint_config* c, int njoint) {
    const mjModel* m = r->m;
    const char* list = r->value[KEY_JOINTS];
    const char* at = list;
    int* slot = (int*)malloc((size_t)m->njnt * sizeof(int) + 1); /* joint -> its index, -1 */
    if (!slot) return fail(r, ASR_ERR_NOMEM, "out of memory (reading key 'joints')");
    for (int j = 0; j < m->njnt; ++j) slot[j] = -1;
    int st = 0;
    char name[MAX_NAME];
    for (int k = 0; k < njoint && !st; ++k) {
        if (next_name(&at, name) >= MAX_NAME) {
            st = fail(r, ASR_ERR_RANGE,
                      "key 'joints' = '%.200s' has a name longer than %d "
                      "characters; valid: joint names separated by spaces",
                      list, MAX_NAME - 1);
            break;
        }
        int jnt = mj_name2id(m, mjOBJ_JOINT, name);
        if (jnt < 0) {
            st = fail(r, ASR_ERR_RANGE,
                      "key 'joints' = '%.200s': '%s' is not a joint of the model; valid: names "
                      "of the model's hinge or slide joints, separated by spaces",
                      list, name);
        } else if (slot[jnt] >= 0) {
            st = fail(r, ASR_ERR_RANGE,
                      "key 'joints' = '%.200s' lists joint '%s' twice; valid: each joint once",
                      list, name);
        } else {
            if (k) c[k] = c[0];
            c[k].nact = 0;
            c[k].jnt = jnt;
            slot[jnt] = k;
        }
    }
    config_count_work(m->njnt + nact);
    for (int a = 0; a < nact && !st; ++a) {
        int i = acts[a];
        reader ra = *r;
        name_reader(&ra, i);
        int jnt = m->actuator_trnid[2 * i];
        if (m->actuator_trntype[i] != mjTRN_JOINT) {
            st = fail(&ra, ASR_ERR_RANGE, "transmission must be a joint (joint=\"...\")");
        } else if (jnt < 0 || jnt >= m->njnt || slot[jnt] < 0) {
            st = fail(&ra, ASR_ERR_RANGE,
                      "joint '%s' is not in the instance's key 'joints' = '%.200s'; valid: an "
                      "actuator on a listed joint",
                      joint_name(m, jnt), list);
        } else if (c[slot[jnt]].nact == 2) {
            st = fail(&ra, ASR_ERR_RANGE,
                      "joint '%s' has a third actuator of the instance; valid: 1 (ref1) or 2 "
                      "(ref1, ref2) per listed joint",
                      joint_name(m, jnt));
        } else {
            joint_config* cj = &c[slot[jnt]];
            st = check_unhonoured(&ra, i, cj->nact == 0);
            cj->act[cj->nact++] = i;
        }
    }
    free(slot);
    for (int k = 0; k < njoint && !st; ++k) {
        if (c[k].nact == 0) {
            st = fail(r, ASR_ERR_RANGE,
                      "joint '%s' (key 'joints') has no actuator of the instance; valid: 1 (ref1) "
                      "or 2 (ref1, ref2) per listed joint",
                      joint_name(m, c[k].jnt));
        } else {
            reader ra = *r;
            name_reader(&ra, c[k].act[0]);
            st = check_joint(&ra, c[k].jnt, on, &c[k]);
        }
    }
    return st;
}

/* The reader of instance inst, naming its first actuator (if any) in every message. */
static void open_reader(reader* r, const mjModel* m, int inst, int first_act, config_error* err) {
    r->m = m;
    r->inst = inst;
    r->err = err;
    err->code = 0;
    err->msg[0] = '\0';
    name_reader(r, first_act);
}

/* The first actuator of instance inst, -1 if none. */
static int first_actuator(const mjModel* m, int inst) {
    for (int i = 0; i < m->nu; ++i) {
        if (m->actuator_plugin[i] == inst) {
            config_count_work(i + 1);
            return i;
        }
    }
    config_count_work(m->nu);
    return -1;
}

static int read_keys(reader* r, joint_config* c) {
    memset(c, 0, sizeof *c);
    int st = split_values(r);
    if (!st) st = read_model_and_mode(r, c);
    if (!st) st = read_params(r, c);
    if (!st) st = read_integration(r, c);
    return st;
}

int config_read_keys(const mjModel* m, int inst, joint_config* c, config_error* err) {
    reader r;
    open_reader(&r, m, inst, -1, err);
    int st = read_keys(&r, c);
    if (st) { /* again, naming the first actuator (found only now: a scan of them all) */
        open_reader(&r, m, inst, first_actuator(m, inst), err);
        st = read_keys(&r, c);
    }
    return st;
}

int config_read(const mjModel* m, int inst, const int* acts, int nact, const joint_rival* on,
                joint_config* c, int njoint, config_error* err) {
    reader r;
    open_reader(&r, m, inst, nact ? acts[0] : -1, err);
    int st = read_keys(&r, c);
    if (st) return st;
    const char* at = r.value[KEY_JOINTS];
    char name[MAX_NAME];
    if (next_name(&at, name) == 0) return read_actuators(&r, acts, nact, on, c); /* absent */
    int listed = config_joint_count(m, inst);
    if (listed != njoint) {
        return fail(&r, ASR_ERR_MODEL,
                    "key 'joints' lists %d joints, its plugin state holds %d (not the model the "
                    "mjData was made for)",
                    listed, njoint);
    }
    return read_joint_list(&r, acts, nact, on, c, njoint);
}
