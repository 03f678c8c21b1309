/* params.c - the common joint parameters (motor, friction, controllers, electrical drive, link
 * friction): names, defaults, units and valid ranges, defined once for C and Python. */
#include <math.h>
#include <stddef.h>

#include "internal.h"

#define INF HUGE_VAL

/* name, default, lo, hi, lo_open, hi_open, integer, unit, group, doc */
static const asr_param_spec common_specs[ASR_NCOMMON] = {
    {"motor_J", 0.0233, 0, INF, 1, 1, 0, "kg m^2", "motor", "motor inertia reflected at the output"},
    {"motor_D", 0.2698, 0, INF, 0, 1, 0, "N m s/rad", "motor", "motor viscous damping"},
    {"tau_max", 6.0, 0, INF, 1, 1, 0, "N m", "motor", "motor torque limit"},
    {"vel_max", INF, 0, INF, 1, 0, 0, "rad/s", "motor", "motor velocity limit (inf: none)"},
    {"pos_min", -INF, -INF, INF, 0, 0, 0, "rad", "motor", "motor lower position limit"},
    {"pos_max", INF, -INF, INF, 0, 0, 0, "rad", "motor", "motor upper position limit"},
    {"friction", 0.02, 0, INF, 0, 1, 0, "N m", "friction", "motor static friction torque"},
    {"friction_K", 1e3, 0, INF, 1, 1, 0, "N m/rad", "friction",
     "motor presliding stiffness (Dahl / Hayward-Armstrong stick point)"},
    {"kp", 125.0, 0, INF, 0, 1, 0, "N m/rad", "controller", "motor PID proportional gain"},
    {"ki", 0.0, 0, INF, 0, 1, 0, "N m/(rad s)", "controller", "motor PID integral gain"},
    {"kd", 4.5, 0, INF, 0, 1, 0, "N m s/rad", "controller",
     "motor PID derivative gain, on the measured velocity"},
    {"i_max", INF, 0, INF, 1, 0, 0, "N m", "controller",
     "anti-windup bound on the integral action ki * integral"},
    {"ctrl_period", 0.0, 0, INF, 0, 1, 0, "s", "controller",
     "controller period, command held between ticks (0: every sub-step)"},
    {"link_kp", 0.8, 0, INF, 0, 1, 0, "N m/rad", "link", "link PID proportional gain (mode 1)"},
    {"link_ki", 0.0, 0, INF, 0, 1, 0, "N m/(rad s)", "link", "link PID integral gain (mode 1)"},
    {"link_kd", 0.2, 0, INF, 0, 1, 0, "N m s/rad", "link", "link PID derivative gain (mode 1)"},
    {"link_tau_max", INF, 0, INF, 1, 0, 0, "N m", "link", "link PID output limit (mode 1)"},
    {"drive", 0.0, 0, 1, 0, 0, 1, "", "electrical",
     "0: torque-controlled motor; 1: voltage drive (PWM dead zone, saturation, back-EMF)"},
    {"motor_Kt", 0.8, 0, INF, 1, 1, 0, "N m/A", "electrical", "motor torque constant (drive 1)"},
    {"motor_Kb", 0.3, 0, INF, 0, 1, 0, "V s/rad", "electrical", "back-EMF constant (drive 1)"},
    {"motor_R", 2.3, 0, INF, 1, 1, 0, "ohm", "electrical", "winding resistance (drive 1)"},
    {"V_supply", 8.0, 0, INF, 1, 1, 0, "V", "electrical", "H-bridge supply voltage (drive 1)"},
    {"dead_zone", 0.3, 0, 1, 0, 1, 0, "", "electrical",
     "PWM dead zone as a fraction of the full command (drive 1)"},
    {"link_friction", 0.0, 0, INF, 0, 1, 0, "N m", "link", "output-shaft static friction torque"},
    {"link_friction_K", 1e3, 0, INF, 1, 1, 0, "N m/rad", "link",
     "output-shaft presliding stiffness"},
    {"link_vel_max", 1e4, 0, INF, 1, 0, 0, "rad/s", "link",
     "link speed beyond which the instance is stopped as diverged (inf: never)"},
};

const asr_param_spec* asr_common_param_spec(int k) {
    if (k < 0 || k >= ASR_NCOMMON) return NULL;
    return &common_specs[k];
}

double asr_common_param_default(const asr_model_def* model, int k) {
    if (k < 0 || k >= ASR_NCOMMON) return NAN;
    if (model) {
        for (int d = 0; d < model->ndefault; ++d) {
            if (model->defaults[d].k == k) return model->defaults[d].value;
        }
    }
    return common_specs[k].def;
}

int asr_param_valid(const asr_param_spec* spec, double v) {
    if (!spec || isnan(v)) return 0;
    if (spec->lo_open ? !(v > spec->lo) : !(v >= spec->lo)) return 0;
    if (spec->hi_open ? !(v < spec->hi) : !(v <= spec->hi)) return 0;
    if (spec->integer && v != floor(v)) return 0;
    return 1;
}
