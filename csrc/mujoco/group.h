/* group.h - the joints of one mjData's asr.actuator instances stepped together (private).
 *
 * The core steps several instances of a joint per vector instruction, in lanes (asr_lanes,
 * core/asr_batch.h). MuJoCo calls the plugin once per instance, so each joint alone would fill
 * one lane of four; instead the joints (units: an instance's joint, one per instance of the
 * one-joint form, one per listed joint of the compact form) of one model, mode and integration
 * settings form a group, across instances, and the instance of its first unit (its leader, of the
 * lowest instance index, which MuJoCo calls first in every forward pass) steps them all at once,
 * one joint per lane, and hands each its result. The results are those of separate steps: the
 * core's lanes do not interact. */
#ifndef ASR_MUJOCO_GROUP_H
#define ASR_MUJOCO_GROUP_H

#include "asr_mujoco.h"
#include "config.h"

enum {
    NSTATE = ASR_MJ_NHEADER + ASR_NFIELD, /* plugin state values of a joint (a unit) */
    MAX_GROUP = 64 /* units in a group (more: the rest form further groups) */
};

/* The header of a joint's plugin state record, as numbers. */
typedef struct mj_header {
    int started, status;
    long long steps, failed_step;
} mj_header;

/* Reads the header of plugin state s into *h: 0, or ASR_ERR_RANGE when a value is not one a
 * step writes (a state restored from elsewhere: started not 0 or 1, status not an integer code
 * in [0, 255], steps not an integer >= 0, failed_step not -1 or a step); *h then holds a
 * stopped actuator (status ASR_ERR_RANGE at its step count, 0 if that too is bad). Never casts
 * a value that does not fit. */
int header_read(const double* s, mj_header* h);

/* The plugin state o after a step of an actuator that cannot run (status code) from committed
 * state s: its record kept, no torque, stopped at this step unless it had stopped before. */
void header_stop(const double* s, int code, double* o);

typedef struct group group;

/* Whether two configurations can share a group (model, mode, max_substep, motor scheme). */
int group_compatible(const joint_config* a, const joint_config* b);

/* A group of n members with configurations cfg[n] (kept by pointer: they must stay put while
 * the group lives); NULL without memory. */
group* group_create(const joint_config* const* cfg, int n);
void group_destroy(group* g);

/* The record fields an instance's act holds, in act order (ASR_MUJOCO_ACT). */
extern const int mj_act_fields[ASR_MJ_NACT];

/* One step of every member from its committed plugin state s[i] (NSTATE values, not changed),
 * whose header header_read gave as h[i], with act[i] (NULL: none; else ASR_MJ_NACT values, the
 * motors in mj_act_fields order) in place of its record's motors once it has started, and the
 * inputs MuJoCo's data d gives it (joint angle and velocity, ctrl): the new plugin state into
 * out[i]. A member whose actuator has not started (header `started` 0) is first reset as
 * asr.Sim.reset(q0=qpos, refs=ctrl) does; a stopped one keeps its state and applies no torque. */
void group_step(group* g, const mjModel* m, const mjData* d, const double* const* s,
                const mj_header* h, const double* const* act, double* const* out);

/* ---------------------------------------------------------------- the plan
 *
 * What the plugin read from a model for one mjData (plugin.c): every instance's configuration,
 * its actuators, and the groups. */

/* What the plan took from one actuator of the model: compared in every pass. */
typedef struct act_print {
    int inst; /* the instance of this plugin it belongs to, -1: none (nothing else kept) */
    int trntype, trnid, dyntype, actnum, actadr, nsample, ctrlnum, ctrladr, disabled, forcelimited;
    double gear[6], delay;
} act_print;

/* A unit: one joint of an instance, stepped as one lane of a group. An instance of the one-joint
 * form has one; one of the compact form (key 'joints') one per listed joint, in its order, whose
 * record is at plugin_stateadr + k NSTATE. */
typedef struct unit {
    int inst, k;                /* the instance, and the joint's index in it */
    joint_config cfg;           /* the instance's code 0 */
    int jtype, qposadr, dofadr; /* its joint's, code 0 */
    int leader;                 /* the unit that steps it, -1: none */
    group* grp;                 /* a leader's group: its members, by unit, the leader first */
    int* members;
    int nmember;
} unit;

/* Instance k of the plan's model. */
typedef struct entry {
    int ours;        /* it runs this plugin */
    int code;        /* 0: its units hold their configurations; else why it cannot run */
    char* why;       /* ... the message (malloc) */
    int nact, *acts; /* its actuators, in actuator order (malloc) */
    char* text;      /* a copy of its configuration text, ntext bytes */
    int ntext;
    int unit0, nunit; /* its units: plan u[unit0, unit0 + nunit), one per joint it drives */
} entry;

typedef struct plan {
    int refs; /* plugin_data pointing here */
    int slot; /* this plugin's */
    int nplugin, nu, nq, nv, njnt;
    long long npluginattr;
    int first;   /* the first instance of this plugin, called first in every pass */
    int grouped; /* groups formed */
    entry* e;    /* nplugin */
    unit* u;     /* nunit: every instance's units, by instance, in its joint order */
    int nunit;
    long long pass;  /* forward passes begun (by the first instance's compute) */
    act_print* acts; /* nu */
    /* the model arrays act_print_of reads, as they were (group.c, PLAN_ARRAYS), for plan_matches'
     * quick check; NULL without memory (then every actuator is compared) */
    unsigned char* snap;
    size_t nsnap;
} plan;

/* Reads m into p (slot: this plugin's): sizes, every actuator, which instance has which, every
 * instance of this plugin configured, one unit per joint it drives (an entry that cannot run gets
 * code and why). Groups are formed apart (plan_group). 0, or -1 without memory (p is then
 * empty). */
int plan_read(plan* p, const mjModel* m, int slot);

/* Whether m is, in everything the plugin derived from it, the model p was read from: the sizes,
 * every actuator's instance, transmission, gear, force limit, dynamics, act, delay, control and
 * disabled group, every instance's configuration text and its joint's type and addresses.
 * Linear in the model's size; no text parsed. */
int plan_matches(const plan* p, const mjModel* m);

/* The groups: the units that can run, of one model, mode and integration settings, in unit
 * order (by instance, then joint), up to MAX_GROUP each, led by the first (the instance of a unit
 * whose group cannot be allocated stops with ASR_ERR_NOMEM). */
void plan_group(plan* p, const mjModel* m);

/* Frees p and all it holds (NULL: nothing). */
void plan_free(plan* p);

/* Entry e cannot run: err's code and message. */
void entry_fail(entry* e, const config_error* err);

#endif
