/* model_sea.c - the rigid joint, the linear SEA ([Mengacci2021] eq. 3) and the visco-elastic SEA of
 * CENTAURO ([Kamedula2016] eq. 3). Link torques are restoring: they drive q toward the motor. */
#include <math.h>

#include "internal.h"

#define INF HUGE_VAL

/* ---------------------------------------------------------------- rigid */

static int rigid_elastic(void* user, const double* p, const asr_elastic_in* in,
                         asr_elastic_out* out) {
    (void)user; (void)p; (void)in;
    elastic_out_zero(out);
    return 0;
}

static int rigid_refmap(void* user, const double* p, double eq, double preset, double* th1,
                        double* th2) {
    (void)user; (void)p; (void)preset;
    *th1 = eq;
    *th2 = 0.0;
    return 0;
}

const asr_model_def model_rigid = {
    .name = "rigid",
    .doc = "rigid joint without spring; modes 0 (link torque) and 1 (link PID) only",
    .nmotor = 0,
    .elastic = rigid_elastic,
    .refmap = rigid_refmap,
    .ref2 = {.meaning = "unused (no spring)", .unit = "", .kind = ASR_PRESET_NONE},
};

/* ---------------------------------------------------------------- sea */

enum { SEA_K, SEA_MAX_DEF };

static const asr_param_spec sea_params[] = {
    {"k", 10.0, 0, INF, 1, 1, 0, "N m/rad", "spring", "spring stiffness"},
    {"max_def", 0.8, 0, INF, 1, 1, 0, "rad", "spring", "deflection limit (clamp)"},
};

static int sea_elastic(void* user, const double* p, const asr_elastic_in* in,
                       asr_elastic_out* out) {
    (void)user;
    double raw = in->q - in->th1;
    double phi = num_sat(raw, p[SEA_MAX_DEF]);
    elastic_out_zero(out);
    out->tau1 = -p[SEA_K] * phi;
    out->stiffness = p[SEA_K];
    out->load1 = -out->tau1;
    out->kload1 = p[SEA_K];
    out->defl1 = phi;
    out->clamped = fabs(raw) > p[SEA_MAX_DEF];
    return 0;
}

/* Equilibrium-preset map of single-motor joints: th1 = eq, th2 = preset. */
static int single_refmap(void* user, const double* p, double eq, double preset, double* th1,
                         double* th2) {
    (void)user; (void)p;
    *th1 = eq;
    *th2 = preset;
    return 0;
}

const asr_model_def model_sea = {
    .name = "sea",
    .doc = "linear series elastic actuator ([Mengacci2021] eq. 3); map th1 = eq, preset unused",
    .nmotor = 1,
    .nparam = 2,
    .params = sea_params,
    .elastic = sea_elastic,
    .refmap = single_refmap,
    .ref2 = {.meaning = "unused; the stiffness preset is the spring stiffness k",
             .unit = "N m/rad", .kind = ASR_PRESET_PARAM, .param = "k",
             .lo = 0.0, .hi = 1000.0, .soft = 200.0, .stiff = 400.0},
};

/* ---------------------------------------------------------------- sea_damped */

enum { SEAD_KT, SEAD_DT, SEAD_MAX_DEF };

static const asr_param_spec sea_damped_params[] = {
    {"Kt", 188.0, 0, INF, 1, 1, 0, "N m/rad", "spring", "transmission stiffness"},
    {"Dt", 0.5, 0, INF, 0, 1, 0, "N m s/rad", "spring", "transmission damping"},
    {"max_def", INF, 0, INF, 1, 0, 0, "rad", "spring", "deflection limit (inf: none)"},
};

static int sea_damped_elastic(void* user, const double* p, const asr_elastic_in* in,
                              asr_elastic_out* out) {
    (void)user;
    double raw = in->q - in->th1;
    double phi = num_sat(raw, p[SEAD_MAX_DEF]);
    elastic_out_zero(out);
    /* tau_t = Kt (th - q) + Dt (thd - qd) on the link, -tau_t on the motor ([Kamedula2016] eq. 3) */
    out->tau1 = -p[SEAD_KT] * phi + p[SEAD_DT] * (in->th1d - in->qd);
    out->stiffness = p[SEAD_KT];
    out->damping = p[SEAD_DT];
    out->load1 = -out->tau1;
    out->kload1 = p[SEAD_KT];
    out->cload1 = p[SEAD_DT];
    out->defl1 = phi;
    out->clamped = fabs(raw) > p[SEAD_MAX_DEF];
    return 0;
}

/* [Kamedula2016] sec. 5.1: Bm, Dm (with back-EMF), PD Kp 1000 Kd 0, 33 N m, no friction. */
static const asr_param_default sea_damped_defaults[] = {
    {ASR_P_MOTOR_J, 0.0742}, {ASR_P_MOTOR_D, 24.768}, {ASR_P_TAU_MAX, 33.0},
    {ASR_P_FRICTION, 0.0}, {ASR_P_KP, 1000.0}, {ASR_P_KD, 0.0},
};

const asr_model_def model_sea_damped = {
    .name = "sea_damped",
    .doc = "visco-elastic SEA of CENTAURO ([Kamedula2016] eq. 3); motor defaults of its validation "
           "joint",
    .nmotor = 1,
    .nparam = 3,
    .params = sea_damped_params,
    .ndefault = 6,
    .defaults = sea_damped_defaults,
    .elastic = sea_damped_elastic,
    .refmap = single_refmap,
    .ref2 = {.meaning = "unused; the stiffness preset is the transmission stiffness Kt",
             .unit = "N m/rad", .kind = ASR_PRESET_PARAM, .param = "Kt",
             .lo = 0.0, .hi = 1000.0, .soft = 100.0, .stiff = 400.0},
};
