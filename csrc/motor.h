/* motor.h - DC motor sub-step, stick-point friction and the voltage drive (private, inlined into
 * the per-joint loop so the hot path has no calls).
 *
 * Motor dynamics (seed 000 eq. 7, models.md sec. 2), per motor:
 *     J thdd = tau_drive + load(th, thd) - tau_f(th) - D thd
 * integrated with a linearly implicit Euler step of length h: the velocity update treats the
 * local stiffness k = -dF/dth and damping c = -dF/dthd implicitly,
 *     v+ = v + h (F - h k v) / (J + h c + h^2 k),   th+ = th + h v+,
 * which is exact to first order like the toolbox's semi-implicit Euler but stable for any h
 * (semi-implicit Euler needs h c/J < 2 and h^2 k/J + 2 h c/J < 4, i.e. h < 8.8 ms with the
 * toolbox's motor PD). Accuracy is set by the sub-step length, not by stability. */
#ifndef ASR_MOTOR_H
#define ASR_MOTOR_H

#include <math.h>

#include "internal.h"

/* Dahl / Hayward-Armstrong friction: the stick point w follows th at distance tau_fs/K at most;
 * tau_f = K (th - w), so |tau_f| <= tau_fs whatever the step. *k_f is its local stiffness
 * (K while sticking, 0 while sliding). */
static inline double asr_friction(double* w, double th, double tau_fs, double K, double* k_f) {
    double z = tau_fs / K;
    double d = th - *w;
    *w = th - asr_sat(d, z);
    double r = th - *w;
    *k_f = (fabs(d) < z) ? K : 0.0;
    return K * r;
}

/* Voltage drive (seed 002): normalised command u -> dead zone and saturation -> voltage
 * V = Vs (sat(u, 1) - dz sign(u)) / (1 - dz) for |u| > dz, else 0. *gain receives dV/du. */
static inline double asr_drive_voltage(double u, double dz, double vs, double* gain) {
    double us = asr_sat(u, 1.0);
    double live = (fabs(u) > dz) ? 1.0 : 0.0;
    *gain = (fabs(u) < 1.0) ? live * vs / (1.0 - dz) : 0.0;
    return live * vs * (us - dz * asr_sign(u)) / (1.0 - dz);
}

/* One linearly implicit Euler sub-step of one motor; F the total torque at the current state,
 * k and c its local stiffness and damping. Applies the velocity and position limits. */
static inline void asr_motor_substep(double* th, double* v, double h, double J, double F,
                                     double k, double c, double vel_max, double pos_min,
                                     double pos_max) {
    double vn = *v + h * (F - h * k * *v) / (J + h * c + h * h * k);
    vn = asr_sat(vn, vel_max);
    double tn = *th + h * vn;
    double tc = asr_clamp(tn, pos_min, pos_max);
    /* at a stop the motor keeps only the velocity that leaves the stop */
    vn = (tc > tn && vn < 0.0) || (tc < tn && vn > 0.0) ? 0.0 : vn;
    *th = tc;
    *v = vn;
}

#endif
