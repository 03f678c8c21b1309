/* joint.c - one step of one joint of one instance: the seven operation modes ([Mengacci2021] sec. 3.1),
 * the PID controllers ([Mengacci2021] eq. 11, [Kamedula2016] eq. 4 and 7) and the motor sub-steps.
 *
 * Timing convention (explicit coupling with the rigid-body engine): the link torque returned by a
 * step is evaluated from the link state given to the step and the motor state at its start; the
 * motors are then advanced over dt in sub-steps with the link angle extrapolated as q + qd t.
 * Motor fields therefore hold the state at the end of the step, torque fields the torque applied
 * over it.
 *
 * s points at the joint's state record (ASR_NFIELD doubles, indexed by asr_field); p at its
 * parameters (ASR_NCOMMON common ones, then the model's own). Motor m's fields are the motor-1
 * field plus m (the field enum interleaves nothing between a motor-1 and motor-2 pair). */
#include <math.h>

#include "batch.h"
#include "motor.h"

/* Evaluate the joint's compliance model. */
static int elastic_at(const asr_model_def* m, const double* p, double q, double qd,
                      const double* s, asr_elastic_out* out) {
    asr_elastic_in in = {q, qd, s[ASR_F_TH1], s[ASR_F_TH2], s[ASR_F_TH1D], s[ASR_F_TH2D]};
    return m->elastic(m->user, p + ASR_NCOMMON, &in, out);
}

/* Step length, its motor sub-steps and their scheme (asr_motor_scheme). */
typedef struct step_timing {
    double dt;
    int nsub;
    int scheme;
} step_timing;

/* What the mechanism does to one motor: load torque, its local stiffness and damping, and the
 * rate at which the link's motion changes it (the spring acts on the deflection th - q: the
 * whole local stiffness is taken to act on it, so the rate is k qd). */
typedef struct motor_load {
    double load, k, c, rate;
} motor_load;

/* PID with the derivative on the measured velocity v, the integral bounded by |ki I| <= i_max and
 * frozen while the output saturates in the direction of the error (conditional integration). */
static double pid(double kp, double ki, double kd, double i_max, double u_max, double e, double v,
                  double ff, double dt, double* integral) {
    if (ki == 0.0) return kp * e - kd * v + ff; /* no integral action: nothing to wind up */
    double i_lim = (ki > 0.0) ? i_max / ki : 0.0;
    double i_new = num_sat(*integral + e * dt, i_lim);
    double u = kp * e + ki * i_new - kd * v + ff;
    int winding = fabs(u) > u_max && e * u > 0.0;
    if (!winding) *integral = i_new;
    return kp * e + ki * *integral - kd * v + ff;
}

/* Drive torque from a controller output u: torque drive saturates at tau_max; the voltage drive
 * goes through the PWM dead zone and saturation, its back-EMF is returned as extra damping.
 * *gain is d(torque)/du, 0 where saturated or in the dead zone. */
static inline double drive_torque(const double* p, double u, double* gain, double* c_bemf) {
    if (p[ASR_P_DRIVE] == 0.0) {
        *gain = (fabs(u) < p[ASR_P_TAU_MAX]) ? 1.0 : 0.0;
        *c_bemf = 0.0;
        return num_sat(u, p[ASR_P_TAU_MAX]);
    }
    double kr = p[ASR_P_KT] / p[ASR_P_R];
    double v = motor_drive_voltage(u, p[ASR_P_DEAD_ZONE], p[ASR_P_V_SUPPLY], gain);
    *gain *= kr;
    *c_bemf = kr * p[ASR_P_KB];
    return kr * v;
}

/* One sub-step of motor m toward target (a torque in mode 4, a position in modes 5-6), under
 * the mechanism's load and its local stiffness kload and damping cload. */
static void motor_substep(const double* p, double* s, int m, int mode, int tick, double target,
                          double ff, const motor_load* ld, double h, int scheme) {
    int position_loop = mode != ASR_MODE_MOTOR_TORQUE;
    int continuous = p[ASR_P_CTRL_PERIOD] == 0.0;
    double* th = &s[ASR_F_TH1 + m];
    double* v = &s[ASR_F_TH1D + m];
    double* cmd = &s[ASR_F_CMD1 + m];
    if (tick) {
        double u_max = (p[ASR_P_DRIVE] == 0.0) ? p[ASR_P_TAU_MAX] : 1.0;
        double dt_ctrl = continuous ? h : p[ASR_P_CTRL_PERIOD];
        *cmd = position_loop ? pid(p[ASR_P_KP], p[ASR_P_KI], p[ASR_P_KD], p[ASR_P_I_MAX], u_max,
                                   target - *th, *v, ff, dt_ctrl, &s[ASR_F_INT1 + m])
                             : target;
    }
    double gain, c_bemf;
    double tau = drive_torque(p, *cmd, &gain, &c_bemf);
    /* a controller evaluated every sub-step is part of the implicit linearisation */
    double implicit = (position_loop && continuous) ? gain : 0.0;
    motor_step ms = {
        .J = p[ASR_P_MOTOR_J],
        .F = tau + ld->load - (p[ASR_P_MOTOR_D] + c_bemf) * *v,
        .k = implicit * p[ASR_P_KP] + ld->k,
        .c = p[ASR_P_MOTOR_D] + c_bemf + implicit * p[ASR_P_KD] + ld->c,
        .r = ld->rate,
        .vel_max = p[ASR_P_VEL_MAX], .pos_min = p[ASR_P_POS_MIN], .pos_max = p[ASR_P_POS_MAX],
        .tau_fs = p[ASR_P_FRICTION], .K = p[ASR_P_FRICTION_K],
        .scheme = scheme,
    };
    double tau_f = motor_advance(th, v, &s[ASR_F_W1 + m], h, &ms);
    s[ASR_F_TAU_M1 + m] = tau;
    s[ASR_F_TAU_F1 + m] = tau_f;
}

/* Modes 4-6: advance the motors over dt in nsub sub-steps; el holds the model at the start. */
static int advance_motors(const asr_model_def* model, int mode, const double* p, double* s,
                          double q, double qd, const double target[2], const double ff[2],
                          const step_timing* tm, asr_elastic_out* el) {
    int nsub = tm->nsub;
    double h = tm->dt / nsub;
    double period = p[ASR_P_CTRL_PERIOD];
    for (int k = 0; k < nsub; ++k) {
        if (k > 0) {
            int rc = elastic_at(model, p, q + qd * (k * h), qd, s, el);
            if (rc) return rc;
        }
        int tick = period == 0.0 || s[ASR_F_CTRL_TIMER] <= 1e-9 * h;
        motor_load l1 = {el->load1, el->kload1, el->cload1, el->kload1 * qd};
        motor_substep(p, s, 0, mode, tick, target[0], ff[0], &l1, h, tm->scheme);
        if (model->nmotor == 2) {
            motor_load l2 = {el->load2, el->kload2, el->cload2, el->kload2 * qd};
            motor_substep(p, s, 1, mode, tick, target[1], ff[1], &l2, h, tm->scheme);
        }
        if (period > 0.0) {
            if (tick) {
                double next = s[ASR_F_CTRL_TIMER] + period;
                s[ASR_F_CTRL_TIMER] = next > 0.0 ? next : 0.0;
            }
            s[ASR_F_CTRL_TIMER] -= h;
        }
    }
    return 0;
}

/* Targets of the step: mapped in modes 3 and 6, as given otherwise. */
static int step_targets(const asr_model_def* model, int mode, const double* p, double r1,
                        double r2, double target[2]) {
    target[0] = r1;
    target[1] = r2;
    if (mode == ASR_MODE_EQ_PRESET || mode == ASR_MODE_EQ_PRESET_PID) {
        int rc = model->refmap(model->user, p + ASR_NCOMMON, r1, r2, &target[0], &target[1]);
        if (rc) return rc;
    }
    if (model->nmotor == 1 && !model->kinematic_th2) target[1] = 0.0;
    return 0;
}

static void store_elastic(double* s, const asr_elastic_out* el) {
    s[ASR_F_STIFFNESS] = el->stiffness;
    s[ASR_F_TAU_EL1] = el->tau1;
    s[ASR_F_TAU_EL2] = el->tau2;
    s[ASR_F_DEFL1] = el->defl1;
    s[ASR_F_DEFL2] = el->defl2;
    s[ASR_F_CLAMPED] = el->clamped;
    s[ASR_F_CLAMP_STEPS] += el->clamped > 0;
}

/* Compliant modes 2-6: returns the elastic link torque, or sets *rc. */
static double compliant_step(const asr_model_def* model, int mode, const double* p, double* s,
                             double q, double qd, double r1, double r2, double tff,
                             const step_timing* tm, int* rc) {
    double dt = tm->dt;
    double target[2];
    asr_elastic_out el;
    if ((*rc = step_targets(model, mode, p, r1, r2, target))) return 0.0;
    if (mode <= ASR_MODE_EQ_PRESET) { /* motors as ideal position sources */
        s[ASR_F_TH1D] = (target[0] - s[ASR_F_TH1]) / dt;
        s[ASR_F_TH2D] = (target[1] - s[ASR_F_TH2]) / dt;
        s[ASR_F_TH1] = target[0];
        s[ASR_F_TH2] = target[1];
    } else if (model->nmotor < 2) { /* th2: kinematic stiffness input, or unused */
        s[ASR_F_TH2D] = (target[1] - s[ASR_F_TH2]) / dt;
        s[ASR_F_TH2] = target[1];
    }
    if ((*rc = elastic_at(model, p, q, qd, s, &el))) return 0.0;
    store_elastic(s, &el);
    double tau = el.tau1 + el.tau2;
    if (mode >= ASR_MODE_MOTOR_TORQUE) {
        double ff[2] = {0.0, 0.0};
        if (model->nmotor == 1 && mode != ASR_MODE_MOTOR_TORQUE) {
            /* [Kamedula2016] eq. 4: th_d = q_d + g(q_d)/K, tau_m = g(q_d) + PD; a spring without
             * stiffness (AwAS-II at pivot 0) cannot deliver it by deflection: no offset */
            target[0] += el.kload1 > 0.0 ? tff / el.kload1 : 0.0;
            ff[0] = tff;
        }
        *rc = advance_motors(model, mode, p, s, q, qd, target, ff, tm, &el);
    }
    return tau;
}

/* Link PID of mode 1 (rigid joint). */
static double link_pid(const double* p, double* s, double q, double qd, double r1, double dt) {
    double lim = p[ASR_P_LINK_TAU_MAX];
    return num_sat(pid(p[ASR_P_LINK_KP], p[ASR_P_LINK_KI], p[ASR_P_LINK_KD], lim, lim, r1 - q, qd,
                       0.0, dt, &s[ASR_F_INTQ]),
                   lim);
}

/* One step of the joint with state record s; in = {q, qd, ref1, ref2, tau_ext}.
 * A link faster than link_vel_max is taken as a blow-up: past the explicit coupling's limit
 * (omega dt > 2) the deflection clamp keeps every torque finite while the link runs away, so
 * the non-finite check alone would never fire. */
static asr_status joint_step(const asr_model_def* model, int mode, const double* p, double* s,
                             const double in[5], double tff, const step_timing* tm) {
    double q = in[0], qd = in[1], r1 = in[2], r2 = in[3];
    int rc = 0;
    double tau_link;
    s[ASR_F_Q] = q;
    s[ASR_F_QD] = qd;
    s[ASR_F_REF1] = r1;
    s[ASR_F_REF2] = r2;
    s[ASR_F_TAU_EXT] = in[4];
    if (!(fabs(qd) <= p[ASR_P_LINK_VEL_MAX])) return ASR_ERR_DIVERGED;
    if (mode == ASR_MODE_LINK_TORQUE) {
        tau_link = r1;
    } else if (mode == ASR_MODE_LINK_PID) {
        tau_link = link_pid(p, s, q, qd, r1, tm->dt);
    } else {
        tau_link = compliant_step(model, mode, p, s, q, qd, r1, r2, tff, tm, &rc);
        if (rc) return callback_status(rc);
    }
    double tau_fq = motor_friction(&s[ASR_F_WQ], q, p[ASR_P_LINK_FRICTION], p[ASR_P_LINK_FRICTION_K]);
    tau_link -= tau_fq;
    s[ASR_F_TAU_FQ] = tau_fq;
    s[ASR_F_TAU_LINK] = tau_link;
    s[ASR_F_TAU_JOINT] = tau_link + in[4];
    return num_all_finite(s, ASR_NCHECKED) ? ASR_OK : ASR_ERR_NONFINITE;
}

/* Gather the parameters of joint j that differ per instance into p (the shared ones are set). */
static void gather_instance_params(const joint_params* jp, int i, double* p) {
    for (int v = 0; v < jp->nvarying; ++v) {
        int k = jp->varying[v];
        p[k] = jp->values[k][i];
    }
}

static void freeze(asr_batch* b, int i, int j, asr_status st, long long step_index) {
    b->status.code[i] = st;
    b->status.joint[i] = j;
    b->status.step[i] = step_index;
}

/* Joint-major within an instance is what the state layout wants, but parameters are per joint:
 * loop joints outside so the shared parameters are loaded once per joint and range. */
asr_status step_instances(asr_batch* b, int i0, int i1, const step_inputs* in,
                          long long step_index) {
    step_timing tm = {in->dt, (int)ceil(in->dt / b->max_substep), b->motor_scheme};
    asr_status first = ASR_OK;
    for (int j = 0; j < b->n_joint; ++j) {
        const joint_params* jp = &b->params[j];
        const asr_model_def* model = b->model[j];
        int mode = b->mode[j];
        double p[ASR_MAX_PARAM];
        gather_params(jp, i0, p);
        for (int i = i0; i < i1; ++i) {
            size_t x = (size_t)i * (size_t)b->n_joint + (size_t)j;
            if (b->status.code[i] != ASR_OK) continue;
            gather_instance_params(jp, i, p);
            const double* r = in->refs + i * in->stride_refs + 2 * j;
            double v[5] = {in->q[i * in->stride_q + j], in->qd[i * in->stride_qd + j], r[0], r[1],
                           in->tau_ext ? in->tau_ext[i * in->stride_ext + j] : 0.0};
            double tff = in->tau_ff ? in->tau_ff[i * in->stride_ff + j] : 0.0;
            int ok = num_all_finite(v, 5) && isfinite(tff);
            asr_status st = ok ? joint_step(model, mode, p, joint_state(b, x), v, tff, &tm)
                               : ASR_ERR_INPUT;
            if (st != ASR_OK) {
                freeze(b, i, j, st, step_index);
                if (first == ASR_OK) first = st;
            }
        }
    }
    /* a frozen instance applies no torque */
    for (int i = i0; i < i1; ++i) {
        if (b->status.code[i] == ASR_OK) continue;
        for (int j = 0; j < b->n_joint; ++j) {
            double* s = joint_state(b, (size_t)i * (size_t)b->n_joint + (size_t)j);
            s[ASR_F_TAU_JOINT] = 0.0;
            s[ASR_F_TAU_LINK] = 0.0;
        }
    }
    return first;
}
