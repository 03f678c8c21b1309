/* motor.h - DC motor sub-step, stick-point friction and the voltage drive (private, inlined into
 * the per-joint loop so the hot path has no calls).
 *
 * Motor dynamics ([Mengacci2021] eq. 7, docs/integration.md), per motor:
 *     J thdd = tau_drive + load(th - q, thd - qd) - tau_f(th) - D thd
 * integrated over a sub-step of length h by a linearly implicit method: the torque is linearised
 * about the current state, F(t + s) ~ F - k (dth - dq) - c (dthd - dqd), where k = -dF/dth and
 * c = -dF/dthd are its local stiffness and damping. The spring acts on the deflection th - q, so
 * the link's own motion over the sub-step enters too: with q advancing at qd (the engine gives
 * no link acceleration, so qd is held), dq = s qd, and F gains the rate r = k_load qd. Leaving r
 * out treats the spring's far end as fixed: a motor riding on a moving link then lags it by h qd
 * and drags on it with k h qd.
 *
 * Two schemes, chosen per batch (asr_motor_scheme):
 * - backward (linearly implicit) Euler, the default: L-stable, first order,
 *       v+ = v + h (F + h r - h k v) / (J + h c + h^2 k),   th+ = th + h v+;
 *   stable for any h and it damps stiff modes; it also damps an undamped motor oscillation of
 *   frequency w with a numerical damping ratio of about h w / 2.
 * - trapezoidal rule (linearly implicit; the implicit midpoint rule on the linearised system):
 *   A-stable, second order, no numerical damping of a linear oscillator,
 *       v+ = v + h (F + h r / 2 - h k v / 2) / (J + h c / 2 + h^2 k / 4),   th+ = th + h (v + v+) / 2;
 *   not L-stable: a mode with h w >> 1 rings instead of dying out, so the stiff presliding
 *   friction spring of a sticking motor always takes the Euler step.
 * (The toolbox's semi-implicit Euler needs h c/J < 2 and h^2 k/J + 2 h c/J < 4, i.e.
 * h < 8.8 ms with its motor PD.) Accuracy is set by the sub-step length, not by stability. */
#ifndef ASR_MOTOR_H
#define ASR_MOTOR_H

#include <math.h>

#include "internal.h"

/* Dahl / Hayward-Armstrong friction on a coordinate given from outside (the output shaft, whose
 * angle the rigid-body engine integrates): the stick point w follows th at distance tau_fs/K at
 * most; tau_f = K (th - w), so |tau_f| <= tau_fs whatever the step. */
static inline double motor_friction(double* w, double th, double tau_fs, double K) {
    *w = th - num_sat(th - *w, tau_fs / K);
    return K * (th - *w);
}

/* Voltage drive ([Parnenzini2015]): normalised command u -> dead zone and saturation -> voltage
 * V = Vs (sat(u, 1) - dz sign(u)) / (1 - dz) for |u| > dz, else 0. *gain receives dV/du. */
static inline double motor_drive_voltage(double u, double dz, double vs, double* gain) {
    double us = num_sat(u, 1.0);
    double live = (fabs(u) > dz) ? 1.0 : 0.0;
    *gain = (fabs(u) < 1.0) ? live * vs / (1.0 - dz) : 0.0;
    return live * vs * (us - dz * num_sign(u)) / (1.0 - dz);
}

/* Motor data of one sub-step: inertia, forces without friction, limits, scheme. */
typedef struct motor_step {
    double J;                   /* inertia, kg m^2 */
    double F;                   /* drive + load - damping torques at the current state, N m */
    double k, c;                /* their local stiffness (N m/rad) and damping (N m s/rad) */
    double r;                   /* dF/dt from the link's motion, k_load qd, N m/s */
    double vel_max, pos_min, pos_max;
    double tau_fs, K;           /* static friction, N m; presliding stiffness, N m/rad */
    int scheme;                 /* asr_motor_scheme */
} motor_step;

/* One linearly implicit sub-step of one motor under the torque m->F + dF, with the scheme given
 * (dF: friction at the start; kf: its stiffness, always taken at the end of the step). Applies
 * the velocity and position limits. */
static inline void motor_update(double* th, double* v, double h, const motor_step* m,
                                double dF, double kf, int scheme) {
    double F = m->F + dF, vn, tn;
    if (scheme == ASR_MOTOR_TRAPEZOID) {
        double kt = 0.5 * m->k + kf;
        vn = *v + h * (F + 0.5 * h * m->r - h * kt * *v) /
                      (m->J + 0.5 * h * m->c + 0.5 * h * h * kt);
        vn = num_sat(vn, m->vel_max);
        tn = *th + 0.5 * h * (*v + vn);
    } else {
        double kt = m->k + kf;
        vn = *v + h * (F + h * m->r - h * kt * *v) / (m->J + h * m->c + h * h * kt);
        vn = num_sat(vn, m->vel_max);
        tn = *th + h * vn;
    }
    double tc = num_clamp(tn, m->pos_min, m->pos_max);
    /* at a stop the motor keeps only the velocity that leaves the stop */
    vn = (tc > tn && vn < 0.0) || (tc < tn && vn > 0.0) ? 0.0 : vn;
    *th = tc;
    *v = vn;
}

/* One sub-step of a motor with stick-point friction treated implicitly, i.e. evaluated at the
 * end of the step (backward Euler on a monotone friction law: no energy is created for any h).
 * Sticking: friction is the presliding spring K (th+ - w), valid if the motor ends within the
 * band |th+ - w| <= z = tau_fs/K. Sliding: friction is tau_fs against the slip s, valid if the
 * motor ends beyond the band on that side, s (th+ - w) > z; the stick point is dragged behind.
 * The end state is increasing in the friction force, so exactly one case is consistent. A motor
 * that ended the last sub-step at the band edge most likely slides on: that case is tried
 * first, the other only when it turns out inconsistent. The exactly-one argument needs one
 * scheme for every case, so the trapezoidal rule is used only for a sliding motor that goes on
 * sliding; every other sub-step (sticking, or a change between sticking and sliding) takes
 * the Euler step, which also damps the stiff presliding spring. Returns tau_f,
 * |tau_f| <= tau_fs. */
static inline double motor_advance(double* th, double* v, double* w, double h,
                                   const motor_step* m) {
    double th0 = *th, v0 = *v;
    double z = m->tau_fs / m->K;
    double d0 = th0 - *w;
    double s = num_sign(d0);
    int sliding = fabs(d0) >= z;
    if (sliding) {
        motor_update(th, v, h, m, -m->tau_fs * s, 0.0, m->scheme);
        if (s * (*th - *w) > z || z == 0.0) {
            *w = *th - s * z;
            return m->K * (*th - *w);
        }
        *th = th0;
        *v = v0;
    }
    motor_update(th, v, h, m, -m->K * d0, m->K, ASR_MOTOR_EULER);
    double d = *th - *w;
    if (fabs(d) <= z) return m->K * d;
    /* slides after all (it was sticking, or reversed within one sub-step) */
    s = num_sign(d);
    *th = th0;
    *v = v0;
    motor_update(th, v, h, m, -m->tau_fs * s, 0.0, ASR_MOTOR_EULER);
    *w = *th - num_sat(*th - *w, z);
    return m->K * (*th - *w);
}

#endif
