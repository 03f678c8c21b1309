/* asr_gz.h - Gazebo's physics (gz-physics 5 with its DART plugin) as an asr engine.
 * A plain C API over C++: an SDF world is loaded with SDFormat, built in gz-physics with the
 * dartsim plugin, and its actuated joints found by name; asr_gz_step1 / asr_gz_step2 match
 * asr_engine_fn (asr_engine.h), with the world as both the model and the data argument, so the
 * unchanged asr core drives it through asr_batch_rollout_engine. Nothing here throws or aborts:
 * failures return NULL / a nonzero status and a message.
 * Each world has its own plugin instance (engine), so different worlds may be stepped from
 * different threads at once; creating and destroying worlds is serialised internally. One world
 * must not be used by two threads at once. SI units: rad, rad/s, N m, s.
 */
#ifndef ASR_GZ_H
#define ASR_GZ_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct asr_gz_world asr_gz_world;

/* Loads sdf_path (an SDF file with one <world>), builds it with DART and finds the n_joint
 * 1-DOF joints joint_names in the model model_name (NULL: the world's only model; a nested
 * model's joints as "inner::joint"). dt: the step length, s (<= 0: the world's
 * <physics><max_step_size>); DART steps in whole nanoseconds, so dt must be one. On failure
 * returns NULL and writes a message naming the file (and the joint) into err (err_len bytes). */
asr_gz_world* asr_gz_create(const char* sdf_path, const char* model_name,
                            const char* const* joint_names, int n_joint, double dt, char* err,
                            int err_len);

/* asr_engine_fn halves (model and data are both the world): step1 does nothing, since qpos / qvel
 * already hold the joints' state (asr_gz_create, asr_gz_set_state and every step2 read it);
 * step2 applies qfrc as joint forces, steps DART by dt and reads the positions and velocities
 * back. */
void asr_gz_step1(const void* model, void* world);
void asr_gz_step2(const void* model, void* world);

/* Bare DART for benchmarks: n_step steps of each of the n worlds (world by world) through
 * step1 / step2 as the asr core calls them, without any actuator model, the joint forces
 * replayed from qfrc (n x n_step x n_joint, world-major; NULL: zero forces). */
void asr_gz_step_replay(asr_gz_world* const* worlds, int n, int n_step, const double* qfrc);
/* The world's n_joint buffers: joint positions (rad), velocities (rad/s), applied forces (N m). */
double* asr_gz_qpos(asr_gz_world* world);
double* asr_gz_qvel(asr_gz_world* world);
double* asr_gz_qfrc(asr_gz_world* world);
int asr_gz_n_joint(const asr_gz_world* world);
double asr_gz_dt(const asr_gz_world* world);   /* the step length, s */
double asr_gz_time(const asr_gz_world* world); /* simulated time, s (steps * dt) */

/* A reset: sets the joints' positions q and velocities qd (n_joint each; NULL: leave as they
 * are), zeroes qfrc and the simulated time. Returns 0, or -1 with a message in err. */
int asr_gz_set_state(asr_gz_world* world, const double* q, const double* qd, char* err,
                     int err_len);

void asr_gz_destroy(asr_gz_world* world); /* NULL is allowed */

#ifdef __cplusplus
}
#endif

#endif
