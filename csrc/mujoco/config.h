/* config.h - an asr.actuator instance's MJCF configuration, read and checked (private). */
#ifndef ASR_MUJOCO_CONFIG_H
#define ASR_MUJOCO_CONFIG_H

#include <mujoco/mujoco.h>

#include "core/batch.h"

/* What an instance's configuration and actuators say, checked. */
typedef struct joint_config {
    const asr_model_def* model;
    int mode;                     /* asr_mode */
    int nparam;                   /* ASR_NCOMMON + model->nparam */
    double params[ASR_MAX_PARAM]; /* every parameter: its config value or the model's default */
    double max_substep;           /* s */
    int motor_scheme;             /* asr_motor_scheme */
    int nact;                     /* 1 or 2 actuators, in actuator order */
    int act[2];                   /* their ids: the first takes ref1 and carries the torque */
    int qpos_adr, dof_adr;        /* the joint's angle in qpos, velocity in qvel */
} joint_config;

/* The declared configuration keys (MuJoCo refuses any other): model, mode, max_substep,
 * motor_scheme, params, then every parameter name of the common set and of the built-in
 * models, each once. */
int config_key_count(void);
const char* const* config_keys(void);

/* Reads and checks instance inst's configuration keys (config_read_keys: when MuJoCo's compiler
 * asks for the plugin state size, before it has copied the actuators' transmissions) or its keys
 * and actuators (config_read: when it makes an mjData) into *c. A bad one is reported with
 * mju_error, naming the instance, its actuator, the key, the value and the valid range
 * (mju_error does not return: MuJoCo's compiler turns it into a compile error). */
void config_read_keys(const mjModel* m, int inst, joint_config* c);
void config_read(const mjModel* m, int inst, joint_config* c);

/* A model by name: a built-in one or one registered with asr_mujoco_register_model; NULL if
 * none. */
const asr_model_def* config_find_model(const char* name);

#endif
