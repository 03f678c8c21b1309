/* config.h - an asr.actuator instance's MJCF configuration, read and checked (private).
 *
 * Nothing here calls mju_error: every check returns an asr status and a message, which the
 * compiler's callbacks (nstate, init) turn into mju_error (a compile error) and a step turns into
 * a stopped actuator with a warning. Nothing here keeps state between calls but the key table
 * (built once) and the registered user models (under a lock). */
#ifndef ASR_MUJOCO_CONFIG_H
#define ASR_MUJOCO_CONFIG_H

#include <mujoco/mujoco.h>

#include "core/asr_batch.h"

/* What an instance's configuration and its actuators on one joint say, checked (one per joint it
 * drives). */
typedef struct joint_config {
    const asr_model_def* model;
    int mode;                     /* asr_mode */
    int nparam;                   /* ASR_NCOMMON + model->nparam */
    double params[ASR_MAX_PARAM]; /* every parameter: its config value or the model's default */
    double max_substep;           /* s */
    int motor_scheme;             /* asr_motor_scheme */
    int nact;                     /* 1 or 2 actuators, in actuator order */
    int act[2];                   /* their ids: the first takes ref1 and carries the torque */
    int jnt;                      /* the joint */
    int qpos_adr, dof_adr;        /* the joint's angle in qpos, velocity in qvel */
    int act_adr; /* the first actuator's act (ASR_MJ_NACT values: actdim="4"), -1: none */
} joint_config;

/* Why a configuration cannot run: an asr status (ASR_ERR_*) and a message naming the instance,
 * its actuator, the setting, the value and what is allowed. */
typedef struct config_error {
    int code;
    char msg[1024];
} config_error;

/* The declared configuration keys (MuJoCo refuses any other), in the order the plugin declares
 * them to MuJoCo (so instance text holds their values in this order): model, mode, max_substep,
 * motor_scheme, params, then every parameter name of the common set and of the built-in
 * models, each once. Built once, thread-safely. */
int config_key_count(void);
const char* const* config_keys(void);

/* The length in bytes of instance inst's configuration text in m (config_key_count()
 * NUL-terminated values from m->plugin_attr + m->plugin_attradr[inst]), -1 if it runs past
 * m->npluginattr. */
int config_text_length(const mjModel* m, int inst);

/* Another instance of the plugin on the same joint as an instance's first actuator: its index
 * and its first actuator on that joint (inst -1: none). */
typedef struct joint_rival {
    int inst, act;
} joint_rival;

/* The number of joints instance inst drives: the names in its key 'joints' (the compact form),
 * 1 when it lists none (the one-joint form: its actuators' joint); -1 if its text is truncated.
 * Config text only: what MuJoCo's compiler has when it asks for the state and sensor sizes. */
int config_joint_count(const mjModel* m, int inst);

/* Reads and checks instance inst's configuration keys into *c (config_read_keys: what MuJoCo's
 * compiler has when it asks for the plugin state size, before it has copied the actuators'
 * transmissions), or its keys and its actuators acts[nact] (all of them, in actuator order) into
 * c[njoint], one configuration per joint it drives, in its order (config_read; njoint as
 * config_joint_count says; on: the first two instances of the plugin with an actuator on each
 * model joint, 2 x njnt, for the one-instance-per-joint check). 0, or an asr status with *err
 * filled. */
int config_read_keys(const mjModel* m, int inst, joint_config* c, config_error* err);
int config_read(const mjModel* m, int inst, const int* acts, int nact, const joint_rival* on,
                joint_config* c, int njoint, config_error* err);

/* Fills *err (code ASR_ERR_NOMEM) for instance inst: the plugin could not allocate `what`. */
void config_out_of_memory(const mjModel* m, int inst, const char* what, config_error* err);

/* "actuator 'name'" (or "actuator #i" when unnamed) into buf. */
void config_actuator_text(const mjModel* m, int act, char* buf, size_t size);

/* A model by name: a built-in one or one registered with asr_mujoco_register_model; NULL if
 * none. */
const asr_model_def* config_find_model(const char* name);

/* Adds n to the library's work counter (asr_mujoco_work: configuration bytes read, actuators and
 * instances scanned; for tests of linear cost). */
void config_count_work(long long n);

#endif
