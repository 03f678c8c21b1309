/* asr_mujoco.h - asr's actuators as a MuJoCo engine plugin (the library asr/_asr_mujoco*.so).
 *
 * The plugin "asr.actuator" (ASR_MUJOCO_PLUGIN) drives one hinge or slide joint with one asr
 * actuator: a built-in compliance model (or one registered with asr_mujoco_register_model), its
 * motors with friction, the PID and one of the seven operation modes, stepped by the same C core
 * as asr.Sim. MJCF (docs/mujoco_plugin.md has the full reference):
 *
 *   <extension><plugin plugin="asr.actuator"><instance name="shoulder">
 *     <config key="model" value="qbmove_advanced"/> <config key="mode" value="6"/>
 *     <config key="k1" value="0.01038"/> ...                (any parameter of the model, SI units)
 *   </instance></plugin></extension>
 *   <actuator>
 *     <plugin name="shoulder_ref1" joint="shoulder" instance="shoulder"/>   first reference
 *     <plugin name="shoulder_ref2" joint="shoulder" instance="shoulder"/>   second reference
 *   </actuator>
 *   <sensor><plugin name="shoulder_asr" instance="shoulder"/></sensor>   optional (below)
 *
 * The instance's actuators, in actuator order, take the joint's references from ctrl (one
 * actuator: the second reference is 0); the first carries the joint torque, the second none.
 *
 * The compact form: <config key="joints" value="shoulder elbow"/> makes one instance drive the
 * joints it lists, in that order, all with its configuration; its actuators (each on a listed
 * joint, one or two per joint) are, per joint and in actuator order, that joint's ref1 and ref2
 * as above. Absent or empty: the one joint of its actuators.
 *
 * Plugin state of an instance (mjSTATE_PLUGIN, saved and restored by mj_getState / mj_setState),
 * per joint it drives, in its order: ASR_MJ_NHEADER header values (ASR_MUJOCO_HEADER below),
 * then the joint's asr state record (ASR_NFIELD values in the order of core/asr_fields.h); joint
 * k's at plugin_stateadr + k (ASR_MJ_NHEADER + ASR_NFIELD). Everything that evolves lives there,
 * so mj_setState restores a run exactly and mujoco.rollout / mujoco.batch carry it.
 *
 * MuJoCo's act (optional): a joint's first actuator may declare actdim="4"
 * (<plugin ... actdim="4"/>); its act then holds the motors' state, ASR_MUJOCO_ACT below, a copy
 * of those fields of the record that the step starts from and advance writes back exactly, so
 * that mjd_transitionFD's A and B see the motors. actdim 0 (absent): the plugin state only.
  *
 * Like the rest of csrc/ this is plain C11 with no system include here; the plugin's sources
 * include MuJoCo's headers, this header does not.
 */
#ifndef ASR_MUJOCO_H
#define ASR_MUJOCO_H

#include "core/asr_model.h"

/* The plugin's name in MJCF's <plugin plugin="..."> and <extension>. */
#define ASR_MUJOCO_PLUGIN "asr.actuator"

/* The header of an instance's plugin state, listed once: X(ID, name, doc). */
#define ASR_MUJOCO_HEADER(X)                                                                       \
    X(STARTED, started, "0 until the first step after a reset (which places the motors), then 1")  \
    X(STATUS, status, "asr status of the actuator: 0 running, else frozen with zero torque")       \
    X(STEPS, steps, "steps taken since the reset")                                                 \
    X(FAILED_STEP, failed_step, "step at which the actuator froze, -1 if it runs")

#define ASR_MUJOCO_HEADER_ENUM_(id, name, doc) ASR_MJ_##id,
typedef enum asr_mujoco_header {
    ASR_MUJOCO_HEADER(ASR_MUJOCO_HEADER_ENUM_) /* ASR_MJ_STARTED = 0, ... */
    ASR_MJ_NHEADER
} asr_mujoco_header;
#undef ASR_MUJOCO_HEADER_ENUM_

/* The record fields an instance's act holds when its first actuator has actdim="4", in act
 * order, listed once: X(ID, name, unit) with ASR_F_<ID> the field (core/asr_fields.h). The
 * motors' angles and velocities: the state the joint's dynamics integrate. The friction stick
 * points, PID integrals and held commands stay in the plugin state only (docs/mujoco_plugin.md,
 * "Derivatives and act"). */
#define ASR_MUJOCO_ACT(X)                                                                          \
    X(TH1, th1, "rad")                                                                             \
    X(TH2, th2, "rad or m")                                                                        \
    X(TH1D, th1d, "rad/s")                                                                         \
    X(TH2D, th2d, "rad/s or m/s")

/* The actdim an instance may declare: the number of ASR_MUJOCO_ACT entries. */
#define ASR_MUJOCO_ACT_ONE_(id, name, unit) +1
enum {
    ASR_MJ_NACT = 0 ASR_MUJOCO_ACT(ASR_MUJOCO_ACT_ONE_)
};
#undef ASR_MUJOCO_ACT_ONE_

/* A sensor of an instance (MJCF: <sensor><plugin name="shoulder_asr" instance="shoulder"/>
 * </sensor>, any number per instance, each the same values) gives, per joint of the instance in
 * its order, the joint's committed values, listed once: X(ID, name, unit, state, doc), state the value's index in the instance's plugin
 * state. Committed: the plugin state's record when MuJoCo computes the sensor (its position
 * stage, at the start of a step: the record the previous step committed), never the candidate
 * of a forward pass of the current step. */
#define ASR_MUJOCO_SENSOR(X)                                                                       \
    X(DEFL1, defl1, "rad", ASR_MJ_NHEADER + ASR_F_DEFL1, "deflection of spring 1")                 \
    X(DEFL2, defl2, "rad", ASR_MJ_NHEADER + ASR_F_DEFL2, "deflection of spring 2")                 \
    X(STIFFNESS, stiffness, "N m/rad", ASR_MJ_NHEADER + ASR_F_STIFFNESS, "link stiffness")         \
    X(TAU_EL1, tau_el1, "N m", ASR_MJ_NHEADER + ASR_F_TAU_EL1, "elastic torque of spring 1")       \
    X(TAU_EL2, tau_el2, "N m", ASR_MJ_NHEADER + ASR_F_TAU_EL2, "elastic torque of spring 2")       \
    X(TAU_JOINT, tau_joint, "N m", ASR_MJ_NHEADER + ASR_F_TAU_JOINT,                               \
      "joint torque of the last committed step (its step-start evaluation, applied by MuJoCo)")    \
    X(TH1, th1, "rad", ASR_MJ_NHEADER + ASR_F_TH1, "motor 1 angle")                                \
    X(TH2, th2, "rad or m", ASR_MJ_NHEADER + ASR_F_TH2,                                            \
      "motor 2 angle (adjuster models: the stiffness input, m for awas2)")                         \
    X(STATUS, status, "", ASR_MJ_STATUS, "asr status: 0 running, else frozen with zero torque")

#define ASR_MUJOCO_SENSOR_ENUM_(id, name, unit, state, doc) ASR_MJS_##id,
typedef enum asr_mujoco_sensor {
    ASR_MUJOCO_SENSOR(ASR_MUJOCO_SENSOR_ENUM_) /* ASR_MJS_DEFL1 = 0, ... */
    ASR_MJ_NSENSOR
} asr_mujoco_sensor;
#undef ASR_MUJOCO_SENSOR_ENUM_

/* The library's entry points besides the plugin registration (which runs when it is loaded). */
#if defined(__GNUC__)
#define ASR_MUJOCO_API __attribute__((visibility("default")))
#else
#define ASR_MUJOCO_API
#endif

/* Number of header values and the name of header value k (NULL if none). */
ASR_MUJOCO_API int asr_mujoco_header_count(void);
ASR_MUJOCO_API const char* asr_mujoco_header_name(int k);
/* Number of act values of an instance with act (ASR_MJ_NACT), the name and unit of value k, and
 * its index in the asr state record (NULL, NULL, -1 if none). */
ASR_MUJOCO_API int asr_mujoco_act_count(void);
ASR_MUJOCO_API const char* asr_mujoco_act_name(int k);
ASR_MUJOCO_API const char* asr_mujoco_act_unit(int k);
ASR_MUJOCO_API int asr_mujoco_act_field(int k);
/* Number of values of a sensor (ASR_MJ_NSENSOR), the name and the SI unit ("" for none) of
 * value k (NULL if none). */
ASR_MUJOCO_API int asr_mujoco_sensor_count(void);
ASR_MUJOCO_API const char* asr_mujoco_sensor_name(int k);
ASR_MUJOCO_API const char* asr_mujoco_sensor_unit(int k);
/* Number of asr state fields after the header (ASR_NFIELD). */
ASR_MUJOCO_API int asr_mujoco_field_count(void);
/* The MuJoCo version the library was built against (mjVERSION_HEADER, e.g. 4000000); it
 * registers the plugin only when the running library has the same version. */
ASR_MUJOCO_API int asr_mujoco_built_for(void);
/* 1 if the library registered the plugin when it was loaded, -1 if another library (another
 * copy of this one) had registered the name first, else 0 (another MuJoCo version runs). */
ASR_MUJOCO_API int asr_mujoco_registered(void);
/* Address of the registered asr.actuator's init callback (0 if none), whichever library
 * registered it: dladdr names that library. */
ASR_MUJOCO_API unsigned long long asr_mujoco_registered_code(void);
/* MuJoCo's slot number of the plugin (mjModel.plugin holds it per instance), -1 if not
 * registered. */
ASR_MUJOCO_API int asr_mujoco_slot(void);

/* Work the plugin has done outside the actuators' steps since the library was loaded, in units
 * of one configuration byte read or compared, or one actuator or instance scanned: reading a
 * model and checking in every forward pass that the model is still the one read. Linear in the
 * model's size per mjData made and per pass; for tests of that (never reset). Counted per
 * thread: the work done on the calling thread. */
ASR_MUJOCO_API long long asr_mujoco_work(void);

/* The configuration keys the plugin declares to MuJoCo, in the order MuJoCo stores an instance's
 * values (mjModel.plugin_attr): their number, and the name of key k (NULL if none). */
ASR_MUJOCO_API int asr_mujoco_key_count(void);
ASR_MUJOCO_API const char* asr_mujoco_key_name(int k);

/* Make a user-defined model available as config key model="<def->name>" (kept by pointer: it
 * must outlive every MuJoCo model that uses it). Returns ASR_OK, ASR_ERR_NULL, ASR_ERR_MODEL
 * (a built-in model's name, or one registered with another definition) or ASR_ERR_NOMEM (more
 * than ASR_MUJOCO_MAX_USER_MODELS). Parameters of a user model beyond the declared keys are given
 * as one config key, params="name=value name=value ...". */
enum {
    ASR_MUJOCO_MAX_USER_MODELS = 64
};
ASR_MUJOCO_API int asr_mujoco_register_model(const asr_model_def* def);
/* ASR_MUJOCO_MAX_USER_MODELS, for callers that cannot read the enum. */
ASR_MUJOCO_API int asr_mujoco_max_user_models(void);

#endif
