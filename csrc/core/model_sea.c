/* model_sea.c - the rigid joint, the linear SEA ([Mengacci2021] eq. 3) and the visco-elastic SEA of
 * CENTAURO ([Kamedula2016] eq. 3). Link torques are restoring: they drive q toward the motor.
 * Defaults and reference ranges are defined here, the parameters in model_params.h, the formulas
 * in springs.h (BUILTIN_CALLBACKS makes the model's callbacks from them). */
#include <math.h>

#include "internal.h"
#include "model_params.h"

/* ---------------------------------------------------------------- rigid */

BUILTIN_CALLBACKS(rigid, model_rigid)

const asr_model_def model_rigid = {
    .name = "rigid",
    .doc = "rigid joint without spring; modes 0 (link torque) and 1 (link PID) only",
    .nmotor = 0,
    .elastic = rigid_elastic,
    .refmap = rigid_refmap,
    .ref2 = {.meaning = "unused (no spring)", .unit = "", .kind = ASR_PRESET_NONE},
};

/* ---------------------------------------------------------------- sea */

static const asr_param_spec sea_params[] = MODEL_PARAM_SPECS(SEA);

BUILTIN_CALLBACKS(sea, model_sea)

const asr_model_def model_sea = {
    .name = "sea",
    .doc = "linear series elastic actuator ([Mengacci2021] eq. 3); map th1 = eq, preset unused",
    .nmotor = 1,
    .nparam = SEA_NPARAM,
    .params = sea_params,
    .elastic = sea_elastic,
    .refmap = sea_refmap,
    .ref2 = {.meaning = "unused; the stiffness preset is the spring stiffness k",
             .unit = "N m/rad",
             .kind = ASR_PRESET_PARAM,
             .param = "k",
             .lo = 0.0,
             .hi = 1000.0,
             .soft = 200.0,
             .stiff = 400.0},
};

/* ---------------------------------------------------------------- sea_damped */

static const asr_param_spec sea_damped_params[] = MODEL_PARAM_SPECS(SEA_DAMPED);

BUILTIN_CALLBACKS(sea_damped, model_sea_damped)

/* [Kamedula2016] sec. 5.1: Bm, Dm (with back-EMF), PD Kp 1000 Kd 0, 33 N m, no friction. */
static const asr_param_default sea_damped_defaults[] = {
    {ASR_P_MOTOR_J, 0.0742}, {ASR_P_MOTOR_D, 24.768}, {ASR_P_TAU_MAX, 33.0},
    {ASR_P_FRICTION, 0.0},   {ASR_P_KP, 1000.0},      {ASR_P_KD, 0.0},
};

const asr_model_def model_sea_damped = {
    .name = "sea_damped",
    .doc = "visco-elastic SEA of CENTAURO ([Kamedula2016] eq. 3); motor defaults of its validation "
           "joint",
    .nmotor = 1,
    .nparam = SEA_DAMPED_NPARAM,
    .params = sea_damped_params,
    .ndefault = 6,
    .defaults = sea_damped_defaults,
    .elastic = sea_damped_elastic,
    .refmap = sea_damped_refmap,
    .ref2 = {.meaning = "unused; the stiffness preset is the transmission stiffness Kt",
             .unit = "N m/rad",
             .kind = ASR_PRESET_PARAM,
             .param = "Kt",
             .lo = 0.0,
             .hi = 1000.0,
             .soft = 100.0,
             .stiff = 400.0},
};
