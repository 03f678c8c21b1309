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

/* Dahl / Hayward-Armstrong friction on a coordinate given from outside (the output shaft, whose
 * angle the rigid-body engine integrates): the stick point w follows th at distance tau_fs/K at
 * most; tau_f = K (th - w), so |tau_f| <= tau_fs whatever the step. */
static inline double asr_friction(double* w, double th, double tau_fs, double K) {
    *w = th - asr_sat(th - *w, tau_fs / K);
    return K * (th - *w);
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
static inline void asr_implicit_euler(double* th, double* v, double h, double J, double F,
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

/* Motor data of one sub-step: inertia, forces without friction, limits. */
typedef struct asr_motor_step {
    double J;                   /* inertia, kg m^2 */
    double F;                   /* drive + load - damping torques at the current state, N m */
    double k, c;                /* their local stiffness (N m/rad) and damping (N m s/rad) */
    double vel_max, pos_min, pos_max;
    double tau_fs, K;           /* static friction, N m; presliding stiffness, N m/rad */
} asr_motor_step;

/* One sub-step of a motor with stick-point friction treated implicitly, i.e. evaluated at the
 * end of the step (backward Euler on a monotone friction law: no energy is created for any h).
 * Sticking: friction is the presliding spring K (th+ - w), valid if the motor ends within the
 * band |th+ - w| <= z = tau_fs/K. Sliding: friction is tau_fs against the slip s, valid if the
 * motor ends beyond the band on that side, s (th+ - w) > z; the stick point is dragged behind.
 * The end state is increasing in the friction force, so exactly one case is consistent. A motor
 * that ended the last sub-step at the band edge most likely slides on: that case is tried
 * first, the other only when it turns out inconsistent. Returns tau_f, |tau_f| <= tau_fs. */
static inline double asr_motor_substep(double* th, double* v, double* w, double h,
                                       const asr_motor_step* m) {
    double th0 = *th, v0 = *v;
    double z = m->tau_fs / m->K;
    double d0 = th0 - *w;
    double s = asr_sign(d0);
    int sliding = fabs(d0) >= z;
    if (sliding) {
        asr_implicit_euler(th, v, h, m->J, m->F - m->tau_fs * s, m->k, m->c, m->vel_max,
                           m->pos_min, m->pos_max);
        if (s * (*th - *w) > z || z == 0.0) {
            *w = *th - s * z;
            return m->K * (*th - *w);
        }
        *th = th0;
        *v = v0;
    }
    asr_implicit_euler(th, v, h, m->J, m->F - m->K * d0, m->k + m->K, m->c, m->vel_max,
                       m->pos_min, m->pos_max);
    double d = *th - *w;
    if (fabs(d) <= z) return m->K * d;
    /* slides after all (it was sticking, or reversed within one sub-step) */
    s = asr_sign(d);
    *th = th0;
    *v = v0;
    asr_implicit_euler(th, v, h, m->J, m->F - m->tau_fs * s, m->k, m->c, m->vel_max,
                       m->pos_min, m->pos_max);
    *w = *th - asr_sat(*th - *w, z);
    return m->K * (*th - *w);
}

#endif
