/* motor.h - DC motor sub-step, stick-point friction and the voltage drive, ASR_LANES instances
 * at a time (private, inlined into the step so the hot path has no calls; lanes.h says how a
 * lane matches the scalar formula).
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

#include "asr_model.h"
#include "lanes.h"

/* Dahl / Hayward-Armstrong friction on a coordinate given from outside (the output shaft, whose
 * angle the rigid-body engine integrates): the stick point w follows th at distance
 * z = tau_fs/K at most; tau_f = K (th - w), so |tau_f| <= tau_fs whatever the step. */
LANE_INLINE lane_d motor_friction(lane_d* w, lane_d th, lane_d z, lane_d K) {
    *w = th - lane_sat(th - *w, z);
    return K * (th - *w);
}

/* Voltage drive ([Parnenzini2015]): normalised command u -> dead zone and saturation -> voltage
 * V = Vs (sat(u, 1) - dz sign(u)) / (1 - dz) for |u| > dz, else 0. *gain receives dV/du. */
LANE_INLINE lane_d motor_drive_voltage(lane_d u, lane_d dz, lane_d vs, lane_d* gain) {
    lane_d us = lane_sat(u, lane_set(1.0));
    lane_d live = lane_one_if(lane_abs(u) > dz);
    *gain = lane_sel(lane_abs(u) < 1.0, live * vs / (1.0 - dz), lane_set(0.0));
    return live * vs * (us - dz * lane_sign(u)) / (1.0 - dz);
}

/* Motor data of one sub-step: inertia, forces without friction, limits, scheme. */
typedef struct motor_step {
    lane_d J;    /* inertia, kg m^2 */
    lane_d F;    /* drive + load - damping torques at the current state, N m */
    lane_d k, c; /* their local stiffness (N m/rad) and damping (N m s/rad) */
    lane_d r;    /* dF/dt from the link's motion, k_load qd, N m/s */
    lane_d vel_max, pos_min, pos_max;
    lane_d tau_fs, K; /* static friction, N m; presliding stiffness, N m/rad */
    lane_d z;         /* tau_fs / K, rad */
    lane_d z_edge;    /* motor_band_edge(z), rad */
    int scheme;       /* asr_motor_scheme */
} motor_step;

/* One linearly implicit sub-step of one motor under the torque m->F + dF, with the scheme given
 * (dF: friction at the start; kf: its stiffness, always taken at the end of the step). Applies
 * the velocity and position limits. */
LANE_INLINE void motor_update(lane_d* th, lane_d* v, double h, const motor_step* m, lane_d dF,
                              lane_d kf, int scheme) {
    lane_d F = m->F + dF, vn, tn;
    if (scheme == ASR_MOTOR_TRAPEZOID) {
        lane_d kt = 0.5 * m->k + kf;
        vn = *v +
             h * (F + 0.5 * h * m->r - h * kt * *v) / (m->J + 0.5 * h * m->c + 0.5 * h * h * kt);
        vn = lane_sat(vn, m->vel_max);
        tn = *th + 0.5 * h * (*v + vn);
    } else {
        lane_d kt = m->k + kf;
        vn = *v + h * (F + h * m->r - h * kt * *v) / (m->J + h * m->c + h * h * kt);
        vn = lane_sat(vn, m->vel_max);
        tn = *th + h * vn;
    }
    lane_d tc = lane_clamp(tn, m->pos_min, m->pos_max);
    /* at a stop the motor keeps only the velocity that leaves the stop */
    lane_m stopped = ((tc > tn) & (vn < 0.0)) | ((tc < tn) & (vn > 0.0));
    *th = tc;
    *v = lane_sel(stopped, lane_set(0.0), vn);
}

/* One sub-step of a motor with stick-point friction treated implicitly, i.e. evaluated at the
 * end of the step (backward Euler on a monotone friction law: no energy is created for any h).
 * Sticking: friction is the presliding spring K (th+ - w), valid if the motor ends within the
 * band |th+ - w| <= z = tau_fs/K. Sliding: friction is tau_fs against the slip s, valid if the
 * motor ends beyond the band on that side, s (th+ - w) > z; the stick point is dragged behind.
 * The end state is increasing in the friction force, so exactly one case is consistent. A motor
 * that ended the last sub-step at the band edge most likely slides on: that case (a) is taken
 * where consistent, else sticking (b) where consistent, else sliding the other way (c). The
 * exactly-one argument needs one scheme for every case, so the trapezoidal rule is used only for
 * a sliding motor that goes on sliding; every other sub-step (sticking, or a change between
 * sticking and sliding) takes the Euler step, which also damps the stiff presliding spring.
 *
 * "At the edge" allows |th - w| to fall short of z by 2^-20 z: the stick point a slide leaves,
 * w = th - s z, is rounded, so th - w lands a few ulps of th below z about one sub-step in
 * four. Trying (a) first is only an order (each case is taken only where consistent); without
 * the allowance a sliding motor took (b) and (c), and the Euler step, that often.
 *
 * motor_advance takes the common sub-step, every lane sliding on in case (a), by itself;
 * otherwise motor_advance_cases redoes (a) and goes on through (b) and (c). Both compute (a) by
 * the same operations, so a lane's result does not depend on its neighbours. Returns tau_f,
 * |tau_f| <= tau_fs. */

/* Case (a) for every lane: slide on in the direction s of the last sub-step. */
LANE_INLINE void motor_slide_on(lane_d* th, lane_d* v, lane_d* w, double h, const motor_step* m,
                                lane_d s) {
    motor_update(th, v, h, m, -m->tau_fs * s, lane_set(0.0), m->scheme);
    *w = *th - s * m->z;
}

/* The band edge less the allowance: the least |th - w| taken as "at the edge" (computed once,
 * when the parameters are loaded). */
LANE_INLINE lane_d motor_band_edge(lane_d z) { return z - z * 0x1p-20; }

/* The lanes that ended the last sub-step at the band edge. */
LANE_INLINE lane_m motor_at_edge(lane_d d0, lane_d z_edge) { return lane_abs(d0) >= z_edge; }

/* The lanes where (a) is consistent: the motor ends beyond the band on side s (or has none). */
LANE_INLINE lane_m motor_slides_on(lane_d th, lane_d w0, lane_d s, lane_d z) {
    return (s * (th - w0) > z) | (z == 0.0);
}

/* Every case, lane by lane: the sub-steps where (a) does not hold in every lane. */
LANE_INLINE lane_d motor_advance_cases(lane_d* th, lane_d* v, lane_d* w, double h,
                                       const motor_step* m) {
    const lane_d th0 = *th, v0 = *v, w0 = *w, zero = lane_set(0.0);
    lane_d z = m->z;
    lane_d d0 = th0 - w0;
    lane_d s = lane_sign(d0);
    lane_m done = motor_at_edge(d0, m->z_edge);
    lane_d tau_f = zero;
    if (lane_any(done)) {
        lane_d ta = th0, va = v0, wa;
        motor_slide_on(&ta, &va, &wa, h, m, s);
        done &= motor_slides_on(ta, w0, s, z);
        *th = lane_sel(done, ta, *th);
        *v = lane_sel(done, va, *v);
        *w = lane_sel(done, wa, *w);
        tau_f = lane_sel(done, m->K * (ta - wa), tau_f);
    }
    if (lane_all(done)) return tau_f;
    lane_d tb = th0, vb = v0;
    motor_update(&tb, &vb, h, m, -m->K * d0, m->K, ASR_MOTOR_EULER);
    lane_d d = tb - w0;
    lane_m stick = ~done & (lane_abs(d) <= z);
    *th = lane_sel(stick, tb, *th);
    *v = lane_sel(stick, vb, *v);
    tau_f = lane_sel(stick, m->K * d, tau_f);
    done |= stick;
    if (lane_all(done)) return tau_f;
    /* slides after all (it was sticking, or reversed within one sub-step) */
    lane_d tc = th0, vc = v0;
    motor_update(&tc, &vc, h, m, -m->tau_fs * lane_sign(d), zero, ASR_MOTOR_EULER);
    lane_d wc = tc - lane_sat(tc - w0, z);
    *th = lane_sel(done, *th, tc);
    *v = lane_sel(done, *v, vc);
    *w = lane_sel(done, *w, wc);
    return lane_sel(done, tau_f, m->K * (tc - wc));
}

LANE_INLINE lane_d motor_advance(lane_d* th, lane_d* v, lane_d* w, double h, const motor_step* m) {
    lane_d d0 = *th - *w, s = lane_sign(d0);
    if (lane_all(motor_at_edge(d0, m->z_edge))) {
        lane_d ta = *th, va = *v, wa;
        motor_slide_on(&ta, &va, &wa, h, m, s);
        if (lane_all(motor_slides_on(ta, *w, s, m->z))) {
            *th = ta, *v = va, *w = wa;
            return m->K * (ta - wa);
        }
    }
    return motor_advance_cases(th, v, w, h, m);
}

#endif
