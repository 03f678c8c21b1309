/* joint_kernel.h - one step of one joint for ASR_LANES instances at once: the seven operation
 * modes ([Mengacci2021] sec. 3.1), the PID controllers ([Mengacci2021] eq. 11, [Kamedula2016]
 * eq. 4 and 7) and the motor sub-steps (private).
 *
 * Included once per instruction set: joint.c builds it for the baseline, joint_avx2.c and
 * joint_avx512.c for those vector units (simd.h); each defines JOINT_KERNEL, the name of the
 * kernel it builds, and joint.c picks one when a batch is created (asr_batch.kernel). Every
 * build performs the same IEEE operations (lanes.h), so the pick changes the speed, never a bit.
 *
 * Timing convention (explicit coupling with the rigid-body engine): the link torque returned by a
 * step is evaluated from the link state given to the step and the motor state at its start; the
 * motors are then advanced over dt in sub-steps with the link angle extrapolated as q + qd t.
 * Motor fields therefore hold the state at the end of the step, torque fields the torque applied
 * over it.
 *
 * Lanes (lanes.h): instance l of a chunk is lane l of every value; each lane performs the IEEE
 * operations of the scalar formula in the same order, a branch on a lane's data is a select, so
 * an instance's result does not depend on its lane, its chunk, the thread or the instruction set.
 * Branches on what every lane shares (mode, model, scheme, sub-step count) stay branches. A
 * built-in model is evaluated by its lane formula (springs.h); a user model's callback is called
 * lane by lane, only for the lanes that step.
 *
 * s points at the joint's state (ASR_NFIELD lane vectors, indexed by asr_field); p at its
 * parameters (ASR_NCOMMON common ones, then the model's own). Motor m's fields are the motor-1
 * field plus m (the field enum interleaves nothing between a motor-1 and motor-2 pair). */
#ifndef JOINT_KERNEL
#error "define JOINT_KERNEL, the kernel's name, before including joint_kernel.h"
#endif

#include <math.h>

#include "batch.h"
#include "motor.h"

/* What every lane of a joint shares in a step. */
typedef struct joint_ctx {
    const asr_model_def* model;
    spring_kind kind;
    int mode;
    double dt, h; /* step and sub-step, s */
    int nsub;     /* motor sub-steps per step */
    int scheme;   /* asr_motor_scheme */
} joint_ctx;

/* A step's outcome per lane: 0 (ASR_OK) or the status that freezes the instance. */
typedef struct lane_outcome {
    lane_m code;
} lane_outcome;

/* The status of lanes m: st where not yet set. */
LANE_INLINE void set_code(lane_outcome* o, lane_m m, asr_status st) {
    lane_m fresh = m & (o->code == 0);
    o->code = (fresh & lane_mset(st)) | (~fresh & o->code);
}

/* ---------------------------------------------------------------- user models, lane by lane */

static void user_params(const lane_joint* J, const asr_model_def* m, int l, double* p) {
    for (int k = 0; k < m->nparam; ++k) p[k] = J->p[ASR_NCOMMON + k][l];
}

/* A user model's compliance callback for every lane in *live; the lanes it refuses leave *live,
 * their status goes into o. Vectors by pointer only: this function is not inlined, and no
 * vector crosses a call by value (lanes.h). */
static void user_elastic(const asr_model_def* m, const lane_joint* J, const lane_elastic_in* in,
                         lane_m* live, lane_elastic_out* out, lane_outcome* o) {
    lane_elastic_zero(out);
    for (int l = 0; l < ASR_LANES; ++l) {
        if (!(*live)[l]) continue;
        double p[ASR_MAX_PARAM];
        user_params(J, m, l, p);
#define LANE_IN_AT_(name, unit, doc) in->name[l],
        asr_elastic_in ei = {ASR_ELASTIC_INPUTS(LANE_IN_AT_)};
#undef LANE_IN_AT_
        asr_elastic_out eo;
        int rc = m->elastic(m->user, p, &ei, &eo);
        if (rc || !elastic_out_finite(&eo)) { /* even an output this mode leaves unused */
            (*live)[l] = 0;
            if (o->code[l] == 0) o->code[l] = rc ? callback_status(rc) : ASR_ERR_NONFINITE;
            continue;
        }
        lane_elastic_put(out, l, &eo);
    }
}

/* A user model's reference map (eq, preset) -> (th1, th2) in place, for every lane in *live;
 * the lanes it refuses leave *live. */
static void user_refmap(const asr_model_def* m, const lane_joint* J, lane_m* live, lane_d* th1,
                        lane_d* th2, lane_outcome* o) {
    for (int l = 0; l < ASR_LANES; ++l) {
        if (!(*live)[l]) continue;
        double p[ASR_MAX_PARAM], t1 = 0.0, t2 = 0.0;
        user_params(J, m, l, p);
        int rc = m->refmap(m->user, p, (*th1)[l], (*th2)[l], &t1, &t2);
        if (rc || !isfinite(t1) || !isfinite(t2)) {
            (*live)[l] = 0;
            if (o->code[l] == 0) o->code[l] = rc ? callback_status(rc) : ASR_ERR_NONFINITE;
            t1 = t2 = 0.0; /* a frozen lane's state stays finite */
        }
        (*th1)[l] = t1;
        (*th2)[l] = t2;
    }
}

/* ---------------------------------------------------------------- model evaluation */

/* The joint's compliance model at link angle q; lanes it fails on leave `live`. */
LANE_INLINE void elastic_at(const joint_ctx* c, const lane_joint* J, const lane_d* s, lane_d q,
                            lane_d qd, lane_m* live, lane_elastic_out* out, lane_outcome* o) {
    lane_elastic_in in = {q, qd, s[ASR_F_TH1], s[ASR_F_TH2], s[ASR_F_TH1D], s[ASR_F_TH2D]};
    if (c->kind == SPRING_USER) {
        user_elastic(c->model, J, &in, live, out, o);
        return;
    }
    lane_m failed = lane_spring(c->kind, J->p + ASR_NCOMMON, &in, out) & *live;
    set_code(o, failed, ASR_ERR_RANGE);
    *live &= ~failed;
}

/* Targets of the step: mapped in modes 3 and 6, as given otherwise. */
LANE_INLINE void step_targets(const joint_ctx* c, const lane_joint* J, lane_d r1, lane_d r2,
                              lane_m* live, lane_d target[2], lane_outcome* o) {
    target[0] = r1;
    target[1] = r2;
    if (c->mode == ASR_MODE_EQ_PRESET || c->mode == ASR_MODE_EQ_PRESET_PID) {
        if (c->kind == SPRING_USER) {
            user_refmap(c->model, J, live, &target[0], &target[1], o);
        } else {
            lane_m failed =
                lane_refmap(c->kind, J->p + ASR_NCOMMON, r1, r2, &target[0], &target[1]) & *live;
            set_code(o, failed, ASR_ERR_RANGE);
            *live &= ~failed;
        }
    }
    if (c->model->nmotor == 1 && !c->model->kinematic_th2) target[1] = lane_set(0.0);
}

/* ---------------------------------------------------------------- controllers and drive */

/* PID with the derivative on the measured velocity v, the integral bounded by |ki I| <= i_max and
 * frozen while the output saturates in the direction of the error (conditional integration).
 * The integral is updated in the lanes of `tick` only. */
LANE_INLINE lane_d pid(lane_d kp, lane_d ki, lane_d kd, lane_d i_max, lane_d u_max, lane_d e,
                       lane_d v, lane_d ff, lane_d dt, lane_d* integral, lane_m tick,
                       int proportional_only) {
    if (proportional_only) return kp * e - kd * v + ff; /* ki == 0 in every lane */
    lane_m no_integral = ki == 0.0;                     /* no integral action: nothing to wind up */
    lane_d i_lim = lane_sel(ki > 0.0, i_max / ki, lane_set(0.0));
    lane_d i_new = lane_sat(*integral + e * dt, i_lim);
    lane_d u = kp * e + ki * i_new - kd * v + ff;
    lane_m winding = (lane_abs(u) > u_max) & (e * u > 0.0);
    lane_d i_kept = lane_sel(winding, *integral, i_new);
    lane_d out = kp * e + ki * i_kept - kd * v + ff;
    *integral = lane_sel(tick & ~no_integral, i_kept, *integral);
    return lane_sel(no_integral, kp * e - kd * v + ff, out);
}

/* Drive torque from a controller output u: torque drive saturates at tau_max; the voltage drive
 * goes through the PWM dead zone and saturation, its back-EMF is returned as extra damping.
 * *gain is d(torque)/du, 0 where saturated or in the dead zone. */
LANE_INLINE lane_d drive_torque(const lane_joint* J, lane_d u, lane_d* gain, lane_d* c_bemf) {
    const lane_d* p = J->p;
    *gain = lane_one_if(lane_abs(u) < p[ASR_P_TAU_MAX]);
    *c_bemf = lane_set(0.0);
    lane_d tau = lane_sat(u, p[ASR_P_TAU_MAX]);
    if (J->torque_drive) return tau; /* no lane needs the voltage drive's divisions */
    lane_m torque_drive = p[ASR_P_DRIVE] == 0.0;
    lane_d kr = p[ASR_P_KT] / p[ASR_P_R];
    lane_d gain_v;
    lane_d v = motor_drive_voltage(u, p[ASR_P_DEAD_ZONE], p[ASR_P_V_SUPPLY], &gain_v);
    *gain = lane_sel(torque_drive, *gain, gain_v * kr);
    *c_bemf = lane_sel(torque_drive, *c_bemf, kr * p[ASR_P_KB]);
    return lane_sel(torque_drive, tau, kr * v);
}

/* ---------------------------------------------------------------- motors */

/* What the mechanism does to one motor: load torque, its local stiffness and damping, and the
 * rate at which the link's motion changes it (the spring acts on the deflection th - q: the
 * whole local stiffness is taken to act on it, so the rate is k qd). */
typedef struct motor_load {
    lane_d load, k, c, rate;
} motor_load;

/* One sub-step of motor m toward target (a torque in mode 4, a position in modes 5-6), under
 * the mechanism's load ld; the controller runs in the lanes of `tick`. */
LANE_INLINE void motor_substep(const joint_ctx* c, const lane_joint* J, lane_d* s, int m,
                               lane_m tick, lane_d target, lane_d ff, const motor_load* ld) {
    const lane_d* p = J->p;
    int position_loop = c->mode != ASR_MODE_MOTOR_TORQUE;
    lane_m continuous = p[ASR_P_CTRL_PERIOD] == 0.0;
    lane_d* th = &s[ASR_F_TH1 + m];
    lane_d* v = &s[ASR_F_TH1D + m];
    lane_d* cmd = &s[ASR_F_CMD1 + m];
    lane_d u = target;
    if (position_loop) {
        lane_d u_max = lane_sel(p[ASR_P_DRIVE] == 0.0, p[ASR_P_TAU_MAX], lane_set(1.0));
        lane_d dt_ctrl = lane_sel(continuous, lane_set(c->h), p[ASR_P_CTRL_PERIOD]);
        u = pid(p[ASR_P_KP], p[ASR_P_KI], p[ASR_P_KD], p[ASR_P_I_MAX], u_max, target - *th, *v, ff,
                dt_ctrl, &s[ASR_F_INT1 + m], tick, J->no_integral);
    }
    *cmd = lane_sel(tick, u, *cmd);
    lane_d gain, c_bemf;
    lane_d tau = drive_torque(J, *cmd, &gain, &c_bemf);
    /* a controller evaluated every sub-step is part of the implicit linearisation */
    lane_d implicit = position_loop ? lane_sel(continuous, gain, lane_set(0.0)) : lane_set(0.0);
    motor_step ms = {
        .J = p[ASR_P_MOTOR_J],
        .F = tau + ld->load - (p[ASR_P_MOTOR_D] + c_bemf) * *v,
        .k = implicit * p[ASR_P_KP] + ld->k,
        .c = p[ASR_P_MOTOR_D] + c_bemf + implicit * p[ASR_P_KD] + ld->c,
        .r = ld->rate,
        .vel_max = p[ASR_P_VEL_MAX],
        .pos_min = p[ASR_P_POS_MIN],
        .pos_max = p[ASR_P_POS_MAX],
        .tau_fs = p[ASR_P_FRICTION],
        .K = p[ASR_P_FRICTION_K],
        .z = J->z_motor,
        .z_edge = J->z_edge_motor,
        .scheme = c->scheme,
    };
    lane_d tau_f = motor_advance(th, v, &s[ASR_F_W1 + m], c->h, &ms);
    s[ASR_F_TAU_M1 + m] = tau;
    s[ASR_F_TAU_F1 + m] = tau_f;
}

/* Modes 4-6: advance the motors over dt in nsub sub-steps; el holds the model at the start. */
LANE_INLINE void advance_motors(const joint_ctx* c, const lane_joint* J, lane_d* s, lane_d q,
                                lane_d qd, const lane_d target[2], const lane_d ff[2],
                                lane_elastic_out* el, lane_m* live, lane_outcome* o) {
    const lane_d* p = J->p;
    double h = c->h;
    lane_d period = p[ASR_P_CTRL_PERIOD];
    lane_m held = period > 0.0;
    for (int k = 0; k < c->nsub; ++k) {
        if (k > 0) elastic_at(c, J, s, q + qd * (k * h), qd, live, el, o);
        lane_m tick = (period == 0.0) | (s[ASR_F_CTRL_TIMER] <= 1e-9 * h);
        motor_load l1 = {el->load1, el->kload1, el->cload1, el->kload1 * qd};
        motor_substep(c, J, s, 0, tick, target[0], ff[0], &l1);
        if (c->model->nmotor == 2) {
            motor_load l2 = {el->load2, el->kload2, el->cload2, el->kload2 * qd};
            motor_substep(c, J, s, 1, tick, target[1], ff[1], &l2);
        }
        lane_d next = s[ASR_F_CTRL_TIMER] + period;
        lane_d timer =
            lane_sel(tick, lane_sel(next > 0.0, next, lane_set(0.0)), s[ASR_F_CTRL_TIMER]);
        s[ASR_F_CTRL_TIMER] = lane_sel(held, timer - h, s[ASR_F_CTRL_TIMER]);
    }
}

LANE_INLINE void store_elastic(lane_d* s, const lane_elastic_out* el) {
    s[ASR_F_STIFFNESS] = el->stiffness;
    s[ASR_F_TAU_EL1] = el->tau1;
    s[ASR_F_TAU_EL2] = el->tau2;
    s[ASR_F_DEFL1] = el->defl1;
    s[ASR_F_DEFL2] = el->defl2;
    s[ASR_F_CLAMPED] = el->clamped;
    s[ASR_F_CLAMP_STEPS] += lane_one_if(el->clamped > 0.0);
}

/* Compliant modes 2-6: returns the elastic link torque. */
LANE_INLINE lane_d compliant_step(const joint_ctx* c, const lane_joint* J, lane_d* s,
                                  const lane_step_in* in, lane_m* live, lane_outcome* o) {
    const asr_model_def* model = c->model;
    lane_d target[2];
    lane_elastic_out el;
    step_targets(c, J, in->r1, in->r2, live, target, o);
    if (c->mode <= ASR_MODE_EQ_PRESET) { /* motors as ideal position sources */
        s[ASR_F_TH1D] = (target[0] - s[ASR_F_TH1]) / c->dt;
        s[ASR_F_TH2D] = (target[1] - s[ASR_F_TH2]) / c->dt;
        s[ASR_F_TH1] = target[0];
        s[ASR_F_TH2] = target[1];
    } else if (model->nmotor < 2) { /* th2: kinematic stiffness input, or unused */
        s[ASR_F_TH2D] = (target[1] - s[ASR_F_TH2]) / c->dt;
        s[ASR_F_TH2] = target[1];
    }
    elastic_at(c, J, s, in->q, in->qd, live, &el, o);
    store_elastic(s, &el);
    lane_d tau = el.tau1 + el.tau2;
    if (c->mode >= ASR_MODE_MOTOR_TORQUE) {
        lane_d ff[2] = {lane_set(0.0), lane_set(0.0)};
        if (model->nmotor == 1 && c->mode != ASR_MODE_MOTOR_TORQUE) {
            /* [Kamedula2016] eq. 4: th_d = q_d + g(q_d)/K, tau_m = g(q_d) + PD; a spring without
             * stiffness (AwAS-II at pivot 0) cannot deliver it by deflection: no offset */
            target[0] += lane_sel(el.kload1 > 0.0, in->tff / el.kload1, lane_set(0.0));
            ff[0] = in->tff;
        }
        advance_motors(c, J, s, in->q, in->qd, target, ff, &el, live, o);
    }
    return tau;
}

/* The lanes where every checked field is finite (x - x is 0 for finite x, else NaN); four
 * independent sums keep the dependent-add chain short. */
LANE_INLINE lane_m all_finite(const lane_d* s) {
    lane_d a0 = lane_set(0.0), a1 = a0, a2 = a0, a3 = a0;
    int k = 0;
    for (; k + 4 <= ASR_NCHECKED; k += 4) {
        a0 += s[k] - s[k];
        a1 += s[k + 1] - s[k + 1];
        a2 += s[k + 2] - s[k + 2];
        a3 += s[k + 3] - s[k + 3];
    }
    for (; k < ASR_NCHECKED; ++k) a0 += s[k] - s[k];
    return (a0 + a1) + (a2 + a3) == 0.0;
}

/* One step of joint J on the state lanes s, in place, for the lanes of *live (the others compute
 * too, on whatever they hold); the lanes the model refuses leave *live. */
LANE_INLINE void joint_compute(const joint_ctx* c, const lane_joint* J, lane_d* s,
                               const lane_step_in* in, lane_m* live, lane_outcome* o) {
    const lane_d* p = J->p;
    s[ASR_F_Q] = in->q;
    s[ASR_F_QD] = in->qd;
    s[ASR_F_REF1] = in->r1;
    s[ASR_F_REF2] = in->r2;
    s[ASR_F_TAU_EXT] = in->ext;
    lane_d tau_link;
    if (c->mode == ASR_MODE_LINK_TORQUE) {
        tau_link = in->r1;
    } else if (c->mode == ASR_MODE_LINK_PID) {
        lane_d lim = p[ASR_P_LINK_TAU_MAX];
        tau_link = lane_sat(pid(p[ASR_P_LINK_KP], p[ASR_P_LINK_KI], p[ASR_P_LINK_KD], lim, lim,
                                in->r1 - in->q, in->qd, lane_set(0.0), lane_set(c->dt),
                                &s[ASR_F_INTQ], lane_mask(1), 0),
                            lim);
    } else {
        tau_link = compliant_step(c, J, s, in, live, o);
    }
    lane_d tau_fq = motor_friction(&s[ASR_F_WQ], in->q, J->z_link, p[ASR_P_LINK_FRICTION_K]);
    tau_link -= tau_fq;
    s[ASR_F_TAU_FQ] = tau_fq;
    s[ASR_F_TAU_LINK] = tau_link;
    s[ASR_F_TAU_JOINT] = tau_link + in->ext;
    set_code(o, *live & ~all_finite(s), ASR_ERR_NONFINITE);
}

/* One step of joint J in the lanes of *alive; *code receives each lane's status. A link faster
 * than link_vel_max is taken as a blow-up: past the explicit coupling's limit (omega dt > 2) the
 * deflection clamp keeps every torque finite while the link runs away, so the non-finite check
 * alone would never fire. A diverged lane keeps its state but for the copied inputs; a lane its
 * model refuses is frozen with the state its step left (meaningless past the refusal), so that
 * the result does not depend on whether its neighbours stepped. When every lane steps, the step
 * runs in place. */
LANE_INLINE void joint_lanes(const joint_ctx* c, lane_joint* J, const lane_step_in* in,
                             const lane_m* alive, lane_m* code) {
    lane_outcome o = {lane_mask(0)};
    lane_m live = *alive & (lane_abs(in->qd) <= J->p[ASR_P_LINK_VEL_MAX]);
    set_code(&o, *alive & ~live, ASR_ERR_DIVERGED);
    if (lane_all(live)) {
        joint_compute(c, J, J->s, in, &live, &o);
    } else {
        lane_d s[ASR_NFIELD];
        for (int k = 0; k < ASR_NFIELD; ++k) s[k] = J->s[k];
        lane_m stepped = live;
        joint_compute(c, J, s, in, &live, &o);
        for (int k = 0; k < ASR_NFIELD; ++k) J->s[k] = lane_sel(stepped, s[k], J->s[k]);
        const lane_d copies[5] = {in->q, in->qd, in->r1, in->r2, in->ext};
        const int copied[5] = {ASR_F_Q, ASR_F_QD, ASR_F_REF1, ASR_F_REF2, ASR_F_TAU_EXT};
        for (int k = 0; k < 5; ++k) {
            J->s[copied[k]] = lane_sel(*alive, copies[k], J->s[copied[k]]);
        }
    }
    *code = o.code & *alive;
}

/* A series' values for the chunk's instances: lane l reads base[inst_l * stride]; a series the
 * same for every instance (stride 0) is one load, an absent one (NULL) zero. */
LANE_INLINE lane_d load_series(const lane_chunk* ch, const double* base, long long stride) {
    if (!base) return lane_set(0.0);
    if (stride == 0) return lane_set(base[0]);
    return (lane_d){base[ch->inst[0] * stride], base[ch->inst[1] * stride],
                    base[ch->inst[2] * stride], base[ch->inst[3] * stride]};
}

/* Joint j's inputs for the chunk's instances; *finite receives the lanes whose are all finite. */
LANE_INLINE void load_inputs(const lane_chunk* ch, const step_inputs* in, int j, lane_step_in* x,
                             lane_m* finite) {
    x->q = load_series(ch, in->q + j, in->stride_q);
    x->qd = load_series(ch, in->qd + j, in->stride_qd);
    x->r1 = load_series(ch, in->refs + 2 * j, in->stride_refs);
    x->r2 = load_series(ch, in->refs + 2 * j + 1, in->stride_refs);
    x->ext = load_series(ch, in->tau_ext ? in->tau_ext + j : NULL, in->stride_ext);
    x->tff = load_series(ch, in->tau_ff ? in->tau_ff + j : NULL, in->stride_ff);
    lane_d acc = (x->q - x->q) + (x->qd - x->qd) + (x->r1 - x->r1) + (x->r2 - x->r2) +
                 (x->ext - x->ext) + (x->tff - x->tff);
    *finite = acc == 0.0;
}

static void freeze(asr_batch* b, int i, int j, asr_status st, long long step_index) {
    b->status.code[i] = st;
    b->status.joint[i] = j;
    b->status.step[i] = step_index;
}

asr_status JOINT_KERNEL(asr_batch* b, lane_chunk* ch, const step_inputs* in, long long step_index);

/* One step of the chunk's instances (chunk_kernel, batch.h). Joints in order: an instance frozen
 * at joint j skips the later ones. */
asr_status JOINT_KERNEL(asr_batch* b, lane_chunk* ch, const step_inputs* in, long long step_index) {
    if (in->dt != ch->dt || b->max_substep != ch->max_substep) { /* once per run, not step */
        ch->dt = in->dt;
        ch->max_substep = b->max_substep;
        ch->nsub = (int)ceil(in->dt / b->max_substep);
        ch->h = in->dt / ch->nsub;
    }
    joint_ctx c = {.dt = ch->dt, .h = ch->h, .nsub = ch->nsub, .scheme = b->motor_scheme};
    asr_status first = ASR_OK;
    for (int j = 0; j < b->n_joint; ++j) {
        c.model = b->model[j];
        c.kind = b->kind[j];
        c.mode = b->mode[j];
        lane_step_in x;
        lane_m finite, code, alive;
        load_inputs(ch, in, j, &x, &finite);
        alive = ch->live & finite;
        joint_lanes(&c, &ch->J[j], &x, &alive, &code);
        lane_m frozen = ch->live & ~(finite & (code == 0));
        if (!lane_any(frozen)) continue;
        for (int l = 0; l < ch->n; ++l) {
            if (!frozen[l]) continue;
            asr_status st = finite[l] ? (asr_status)code[l] : ASR_ERR_INPUT;
            freeze(b, ch->i0 + l, j, st, step_index);
            if (first == ASR_OK) first = st;
        }
        ch->live &= ~frozen;
    }
    if (lane_all(ch->live)) return first;
    /* a frozen instance applies no torque */
    for (int j = 0; j < b->n_joint; ++j) {
        lane_d* s = ch->J[j].s;
        s[ASR_F_TAU_JOINT] = lane_sel(ch->live, s[ASR_F_TAU_JOINT], lane_set(0.0));
        s[ASR_F_TAU_LINK] = lane_sel(ch->live, s[ASR_F_TAU_LINK], lane_set(0.0));
    }
    return first;
}
