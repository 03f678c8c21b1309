/* group.h - the asr.actuator instances of one mjData stepped together (private).
 *
 * The core steps ASR_LANES instances of a joint per vector instruction. MuJoCo calls the plugin
 * once per instance, so each joint alone would fill one lane of four; instead the first instance
 * of a group (its leader, the lowest instance index, which MuJoCo calls first in every forward
 * pass) steps every instance of the same model, mode and integration settings at once, one
 * joint per lane, and hands each its result. The results are those of separate steps: the core's
 * lanes do not interact. */
#ifndef ASR_MUJOCO_GROUP_H
#define ASR_MUJOCO_GROUP_H

#include "asr_mujoco.h"
#include "config.h"

enum {
    NSTATE = ASR_MJ_NHEADER + ASR_NFIELD /* plugin state values of an instance */
};

typedef struct group group;

/* Whether two configurations can share a group (model, mode, max_substep, motor scheme). */
int group_compatible(const joint_config* a, const joint_config* b);

/* A group of n members with configurations cfg[n] (kept by pointer: they must stay put while
 * the group lives); NULL without memory. */
group* group_create(const joint_config* const* cfg, int n);
void group_destroy(group* g);

/* One step of every member from its committed plugin state s[i] (NSTATE values, not changed) and
 * the inputs MuJoCo's data d gives it (joint angle and velocity, ctrl): the new plugin state into
 * out[i]. A member whose actuator has not started (header `started` 0) is first reset as
 * asr.Sim.reset(q0=qpos, refs=ctrl) does; a stopped one keeps its state and applies no torque. */
void group_step(group* g, const mjModel* m, const mjData* d, const double* const* s,
                double* const* out);

#endif
