/* asr_interaction.h - interaction control on a position interface ([Storiale2022]): admittance
 * and direct force control with a finite state machine, a force/torque sensor and damped
 * least-squares inverse kinematics, run per instance inside the engine rollout.
 * Part of the public C API: included by asr.h, whose conventions (naming, SI units, layouts,
 * no system includes: this is also the cffi cdef) apply here.
 *
 * Frames: the world (the engine's), the base frame F_b (a constant pose in the world; position
 * references and recorded positions are in F_b), the task frame (a rotation in the world; the
 * gains, force references and recorded forces are along its axes; the tool frame at the
 * setpoint by default) and the sensor frame (the F/T sensor's site, where the engine reports its
 * readings).
 *
 * Per instance and step, after the engine's step1 (positions and velocities known):
 *   sensor: every sensor_period steps a sample of the engine's force / torque sensor (+ white
 *     noise), low-pass filtered, minus the bias, turned into the force the robot applies on the
 *     environment f_e = R_task^T R_sensor (reading - bias): the engine reports the force the
 *     parent body exerts on the sensor's body, which with the tool at rest and its weight in the
 *     bias is the force the tool applies on what it touches; held between samples;
 *   FSM: JOINT moves the joint references from q_start to q_goal over move_time and raises
 *     SETPOINT_REACHED once they are within setpoint_tol / setpoint_vel_tol; TRAJECTORY takes
 *     the next (x_d, f_d) sample and raises TRAJECTORY_COMPLETED after the last; STATIC holds;
 *   law (STATIC and TRAJECTORY), with f~ = f_d - f_e in the task frame:
 *     admittance    M z'' + K_D z' + K_P z = f~,  x_c = x_d + R z  (R: the task axes in F_b; z the offset of
 *                   the commanded position from the reference; f~ held over the step, the
 *                   linear system integrated exactly (zero-order hold, matrix exponential)),
 *     direct force  x_c = x_d + R (K_P f~ + K_I integral f~ dt),
 *     each task direction's offset bounded by max_offset (an offset at the bound stops the
 *     integration that would push it further: anti-windup);
 *   inverse kinematics: joint commands q_c with the site at x_c and the orientation R_d by damped
 *     least squares, warm-started from the last q_c; not converged within ik_max_iter
 *     iterations: the last q_c is held and ik_ok = 0 for the step (ik_fail counts such steps);
 *   the actuated joints' first references become q_c (modes 1, 3 and 6: link position or
 *     equilibrium; the second reference, e.g. the stiffness preset, is the caller's).
 */
#ifndef ASR_API_INTERACTION_H
#define ASR_API_INTERACTION_H

#include "core/asr_batch.h"
#include "engine/asr_engine.h"

/* The controlled chain has at most this many actuated joints. */
enum {
    ASR_IC_MAX_JOINTS = 16
};

typedef enum asr_ic_law {
    ASR_IC_ADMITTANCE = 0,
    ASR_IC_DIRECT_FORCE = 1
} asr_ic_law;

/* The states of [Storiale2022] sec. 2.2.1. */
typedef enum asr_ic_fsm {
    ASR_FSM_STATIC = 0,     /* the control law with fixed references */
    ASR_FSM_TRAJECTORY = 1, /* the control law along a workspace trajectory */
    ASR_FSM_JOINT = 2       /* independent joint control towards a setpoint */
} asr_ic_fsm;

typedef enum asr_ic_event {
    ASR_EV_INIT = 0,
    ASR_EV_TRAJECTORY_RECEIVED = 1,
    ASR_EV_SETPOINT_RECEIVED = 2,
    ASR_EV_TRAJECTORY_COMPLETED = 3,
    ASR_EV_SETPOINT_REACHED = 4
} asr_ic_event;

/* The state after event ev in state s, or -1 when the event is rejected there (a setpoint or
 * trajectory received while one runs; a completion or arrival that cannot happen in s). */
int asr_ic_transition(int s, int ev);

/* Per-instance settings. Vectors of 3 are per task direction. */
typedef struct asr_ic_config {
    int law;                 /* asr_ic_law */
    double mass[3];          /* admittance M_d, kg (> 0) */
    double damping[3];       /* admittance K_D, N s/m (> 0) */
    double stiffness[3];     /* admittance K_P, N/m (>= 0) */
    double force_kp[3];      /* direct force proportional gain, m/N (>= 0; 0: position axis) */
    double force_ki[3];      /* direct force integral gain, m/(N s) (>= 0) */
    double max_offset[3];    /* bound of |x_c - x_d| along each task axis, m (> 0) */
    int task_frame_tool;     /* 1: the task frame becomes the tool frame at each setpoint */
    int sensor_period;       /* steps between sensor samples (>= 1) */
    double cutoff;           /* first-order low-pass cutoff, Hz (0: no filter) */
    double noise_force;      /* standard deviation of the noise on each force axis, N */
    double noise_torque;     /* ... on each torque axis, N m */
    double setpoint_tol;     /* JOINT -> STATIC once every |q - q_goal| <= this, rad */
    double setpoint_vel_tol; /* ... and every |qd| <= this, rad/s */
} asr_ic_config;

/* Per-instance controller state, caller-owned; the caller sets it up (asr_ic_init) and changes
 * it only between rollouts. Positions in F_b (m), forces in the task frame (N). */
typedef struct asr_ic_state {
    int fsm;                 /* asr_ic_fsm */
    int ik_ok;               /* 1: the last inverse kinematics converged */
    long long ik_fail;       /* steps whose inverse kinematics did not converge */
    long long k;             /* TRAJECTORY: next sample; JOINT: steps since the setpoint */
    long long sample_timer;  /* steps until the next sensor sample */
    unsigned long long rng;  /* noise generator state */
    double x_d[3], f_d[3];   /* references now */
    double x_c[3];           /* last commanded position */
    double x_m[3];           /* the site's position at the last step's start */
    double f_e[3], tau_e[3]; /* last force (N) and torque (N m) on the environment, task frame */
    double z[3], zd[3];      /* admittance offset (m) and its rate (m/s), task frame */
    double integral[3];      /* direct force: integral of f~, N s */
    double R_d[9];           /* orientation the IK holds, world, row-major */
    double R_task[9];        /* task frame in the world, row-major (columns: its axes) */
    double bias[6];          /* sensor bias, sensor frame: force N, torque N m */
    double filtered[6];      /* filtered sensor reading, sensor frame */
    double q_c[ASR_IC_MAX_JOINTS];     /* last joint commands, rad */
    double q_start[ASR_IC_MAX_JOINTS]; /* JOINT: where the move started, rad */
    double q_goal[ASR_IC_MAX_JOINTS];  /* JOINT: the setpoint, rad */
    double move_time;                  /* JOINT: duration of the move, s */
} asr_ic_state;

/* Signature of MuJoCo's mj_jacSite: jacp, jacr (3 x nv each, row-major) of a site. */
typedef void (*asr_site_jac_fn)(const void* model, const void* data, double* jacp, double* jacr,
                                int site);

/* What the controller needs from the engine and the caller. Per-instance pointer tables have
 * n_inst entries; each instance's IK runs on its own scratch engine data (never the simulated
 * one). */
typedef struct asr_interaction {
    asr_engine_fn kinematics;           /* positions -> frames (mj_kinematics) */
    asr_engine_fn com_pos;              /* frames -> what the Jacobian needs (mj_comPos) */
    asr_site_jac_fn jac_site;           /* mj_jacSite */
    int nq, nv;                         /* sizes of the engine's qpos and qvel */
    int site;                           /* index of the controlled site (the tool frame) */
    void* const* ik_data;               /* scratch engine data */
    double* const* ik_qpos;             /* its qpos (nq) */
    const double* const* ik_site_pos;   /* its site position (3, world) */
    const double* const* ik_site_mat;   /* its site orientation (9, world, row-major) */
    const double* const* site_pos;      /* the simulated data's site position (3) */
    const double* const* site_mat;      /* ... orientation (9) */
    const double* const* sensor_mat;    /* the sensor site's orientation (9) */
    const double* const* sensor_force;  /* the engine's force sensor reading (3, sensor frame) */
    const double* const* sensor_torque; /* the torque sensor reading (3, sensor frame) */
    double* const* wrench_body;  /* the tool body's applied wrench (6: force N, torque N m; world),
                                   or NULL when no external wrench is applied */
    asr_series wrench;           /* external wrench per instance and step (6 values), world;
                                   data NULL: none */
    double base_pos[3];          /* F_b's origin in the world, m */
    double base_mat[9];          /* F_b's rotation in the world, row-major */
    int ik_max_iter;             /* iterations per step (>= 1) */
    int ik_orientation;          /* 1: hold R_d as well (6 equations), 0: position only */
    double ik_tol_pos;           /* m (> 0) */
    double ik_tol_rot;           /* rad (> 0) */
    double ik_damping;           /* lambda of (J J^T + lambda^2 I) (>= 0; m and rad rows alike) */
    const asr_ic_config* config; /* n_inst */
    asr_ic_state* state;         /* n_inst */
    const double* const* traj;   /* n_inst: trajectory samples, one per step: x_d (3, F_b) then
                                   f_d (3, task frame); NULL when none */
    const long long* traj_len;   /* n_inst: samples in traj */
    double* record;              /* n_inst x nstep x ASR_IC_NREC (see below), or NULL */
} asr_interaction;

/* Recorded per instance and step: x_d, x_c, x_m (F_b, m), f_d, f_e (task frame, N), tau_e
 * (task frame, N m), the FSM state and ik_ok. */
enum {
    ASR_IC_NREC = 20
};

/* Check ic against the batch and engine: ASR_ERR_NULL, or ASR_ERR_RANGE naming nothing (the
 * Python layer names the field). */
asr_status asr_ic_check(const asr_batch* b, const asr_engine* e, const asr_interaction* ic);

/* The INIT event for instance i: STATIC at the simulated pose (x_d = x_c = x_m, R_d the
 * site's orientation, q_c the link angles, task frame from the tool when configured), offsets
 * and integral zero, the sensor's present reading taken as its bias (the caller makes it the
 * reading at rest, free of contact: asr computes it by inverse dynamics with zero
 * accelerations), the noise generator seeded with seed. */
asr_status asr_ic_init(const asr_batch* b, const asr_engine* e, const asr_interaction* ic, int i,
                       unsigned long long seed);

/* Inverse kinematics alone on instance i's scratch data: joint angles q (n_joint: in the start,
 * out: the solution) that put the site at x (F_b) with orientation R (world, row-major; NULL:
 * position only). Returns 1 when converged, 0 when not, -1 on bad arguments. */
int asr_ic_solve_ik(const asr_batch* b, const asr_engine* e, const asr_interaction* ic, int i,
                    const double* x, const double* R, double* q);

/* The interaction controller ic as the engine loop's controller (asr_controller: its hooks,
 * user = ic), for asr_batch_rollout_controlled. ASR_ERR_NULL when ic or ctl is NULL. */
asr_status asr_ic_controller(const asr_interaction* ic, asr_controller* ctl);

/* nstep coupled steps as asr_batch_rollout_engine, with the interaction controller writing the
 * first references of the actuated joints (refs gives the second ones):
 * asr_batch_rollout_controlled with asr_ic_controller(ic). */
asr_status asr_batch_rollout_interaction(asr_batch* b, const asr_engine* engine,
                                         const asr_interaction* ic, int nstep, double dt,
                                         asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                         int nrecord, const int* record_fields, double* record);

#endif
