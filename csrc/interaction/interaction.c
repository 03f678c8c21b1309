/* interaction.c - admittance and direct force control on a position interface ([Storiale2022]):
 * the finite state machine, the force/torque sensor, the two laws and damped least-squares
 * inverse kinematics, per instance and step (see asr_interaction.h for the scheme). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "asr_interaction.h"

/* ------------------------------------------------------------------ the FSM */

int asr_ic_transition(int s, int ev) {
    if (ev == ASR_EV_INIT) return ASR_FSM_STATIC;
    if (s == ASR_FSM_STATIC) {
        if (ev == ASR_EV_TRAJECTORY_RECEIVED) return ASR_FSM_TRAJECTORY;
        if (ev == ASR_EV_SETPOINT_RECEIVED) return ASR_FSM_JOINT;
    }
    if (s == ASR_FSM_TRAJECTORY && ev == ASR_EV_TRAJECTORY_COMPLETED) return ASR_FSM_STATIC;
    if (s == ASR_FSM_JOINT && ev == ASR_EV_SETPOINT_REACHED) return ASR_FSM_STATIC;
    return -1;
}

/* ------------------------------------------------------------------ small vector algebra */

/* y = R x and y = R^T x for a row-major 3x3 R. */
static void mat_vec(const double* R, const double* x, double* y) {
    for (int r = 0; r < 3; ++r) y[r] = R[3 * r] * x[0] + R[3 * r + 1] * x[1] + R[3 * r + 2] * x[2];
}

static void mat_t_vec(const double* R, const double* x, double* y) {
    for (int c = 0; c < 3; ++c) y[c] = R[c] * x[0] + R[3 + c] * x[1] + R[6 + c] * x[2];
}

/* World point -> base frame, base-frame offset -> world direction. */
static void world_to_base(const asr_interaction* ic, const double* p, double* x) {
    double d[3] = {p[0] - ic->base_pos[0], p[1] - ic->base_pos[1], p[2] - ic->base_pos[2]};
    mat_t_vec(ic->base_mat, d, x);
}

static void base_to_world(const asr_interaction* ic, const double* x, double* p) {
    mat_vec(ic->base_mat, x, p);
    for (int k = 0; k < 3; ++k) p[k] += ic->base_pos[k];
}

/* ------------------------------------------------------------------ admittance discretisation */

/* exp(F) of a 3x3 row-major F by scaling and squaring of its Taylor series. */
static void expm3(const double* F, double* E) {
    double norm = 0.0;
    for (int c = 0; c < 3; ++c) {
        double s = fabs(F[c]) + fabs(F[3 + c]) + fabs(F[6 + c]);
        if (s > norm) norm = s;
    }
    int squarings = 0;
    while (norm > 0.5 && squarings < 64) {
        norm *= 0.5;
        ++squarings;
    }
    double scale = ldexp(1.0, -squarings), term[9], next[9];
    for (int k = 0; k < 9; ++k) {
        E[k] = (k % 4 == 0) ? 1.0 : 0.0;
        term[k] = E[k];
    }
    for (int n = 1; n <= 20; ++n) { /* |F / 2^s| <= 0.5: 0.5^20 / 20! is far below 1 ulp */
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) {
                double acc = 0.0;
                for (int k = 0; k < 3; ++k) acc += term[3 * r + k] * F[3 * k + c] * scale;
                next[3 * r + c] = acc / n;
            }
        }
        for (int k = 0; k < 9; ++k) {
            term[k] = next[k];
            E[k] += term[k];
        }
    }
    for (int s = 0; s < squarings; ++s) {
        for (int r = 0; r < 3; ++r) {
            for (int c = 0; c < 3; ++c) {
                double acc = 0.0;
                for (int k = 0; k < 3; ++k) acc += E[3 * r + k] * E[3 * k + c];
                next[3 * r + c] = acc;
            }
        }
        memcpy(E, next, sizeof next);
    }
}

/* Per axis: x' = A x + b u with x = (z, zd), A = [0 1; -K_P/M -K_D/M], b = (0, 1/M); the
 * augmented exponential exp([A b; 0 0] dt) holds Phi and Gamma. */
/* Exact zero-order-hold discretisation of the admittance law along the three task axes for a
 * step dt: per axis [z, zd](n+1) = Phi [z, zd](n) + Gamma f~(n), stored as Phi (4, row-major)
 * then Gamma (2): IC_ZOH_SIZE doubles. */
enum {
    IC_ZOH_SIZE = 18
};
static void ic_zoh(const asr_ic_config* cfg, double dt, double* coef) {
    for (int a = 0; a < 3; ++a) {
        double m = cfg->mass[a],
               F[9] = {
                   0.0, dt,  0.0, -cfg->stiffness[a] / m * dt, -cfg->damping[a] / m * dt, dt / m,
                   0.0, 0.0, 0.0};
        double E[9];
        expm3(F, E);
        double* c = coef + 6 * a;
        c[0] = E[0], c[1] = E[1], c[2] = E[3], c[3] = E[4], c[4] = E[2], c[5] = E[5];
    }
}

/* ------------------------------------------------------------------ the sensor */

/* splitmix64, then a standard normal by Box-Muller (one of the pair). */
static double uniform(unsigned long long* s) {
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1.0p-53; /* (0, 1) */
}

static double normal(unsigned long long* s) {
    double u1 = uniform(s), u2 = uniform(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* One sample of the engine's sensors into the filter; then f_e, tau_e from the filtered
 * reading without its bias, in the task frame. */
static void sample_sensor(const asr_interaction* ic, const asr_ic_config* cfg, asr_ic_state* st,
                          int i, double dt) {
    double raw[6];
    for (int k = 0; k < 3; ++k) {
        raw[k] = ic->sensor_force[i][k];
        raw[3 + k] = ic->sensor_torque[i][k];
    }
    for (int k = 0; k < 6; ++k) {
        double sd = k < 3 ? cfg->noise_force : cfg->noise_torque;
        if (sd > 0.0) raw[k] += sd * normal(&st->rng);
    }
    double period = cfg->sensor_period * dt;
    double alpha = cfg->cutoff > 0.0 ? -expm1(-6.283185307179586 * cfg->cutoff * period) : 1.0;
    for (int k = 0; k < 6; ++k) st->filtered[k] += alpha * (raw[k] - st->filtered[k]);
}

static void sensor_to_task(const asr_interaction* ic, asr_ic_state* st, int i) {
    double c[6], w[3];
    for (int k = 0; k < 6; ++k) c[k] = st->filtered[k] - st->bias[k];
    mat_vec(ic->sensor_mat[i], c, w);
    mat_t_vec(st->R_task, w, st->f_e);
    mat_vec(ic->sensor_mat[i], c + 3, w);
    mat_t_vec(st->R_task, w, st->tau_e);
}

/* ------------------------------------------------------------------ inverse kinematics */

/* Position and orientation error of the scratch data's site against (p, R) (world): e[0..2]
 * = p - p_site, e[3..5] = (1/2) sum over the axes of axis_site x axis_goal. */
static void pose_error(const asr_interaction* ic, int i, const double* p, const double* R,
                       double* e) {
    const double* ps = ic->ik_site_pos[i];
    const double* Rs = ic->ik_site_mat[i];
    for (int k = 0; k < 3; ++k) e[k] = p[k] - ps[k];
    e[3] = e[4] = e[5] = 0.0;
    if (!R) return;
    for (int c = 0; c < 3; ++c) {
        double a[3] = {Rs[c], Rs[3 + c], Rs[6 + c]}, g[3] = {R[c], R[3 + c], R[6 + c]};
        e[3] += 0.5 * (a[1] * g[2] - a[2] * g[1]);
        e[4] += 0.5 * (a[2] * g[0] - a[0] * g[2]);
        e[5] += 0.5 * (a[0] * g[1] - a[1] * g[0]);
    }
}

/* Solve the m x m symmetric positive definite A y = e in place (Cholesky; A's lower triangle
 * overwritten). Returns -1 when A is not numerically positive definite. */
static int cholesky_solve(double* A, double* y, int m) {
    for (int j = 0; j < m; ++j) {
        double d = A[j * m + j];
        for (int k = 0; k < j; ++k) d -= A[j * m + k] * A[j * m + k];
        if (!(d > 0.0)) return -1;
        d = sqrt(d);
        A[j * m + j] = d;
        for (int r = j + 1; r < m; ++r) {
            double s = A[r * m + j];
            for (int k = 0; k < j; ++k) s -= A[r * m + k] * A[j * m + k];
            A[r * m + j] = s / d;
        }
    }
    for (int r = 0; r < m; ++r) {
        for (int k = 0; k < r; ++k) y[r] -= A[r * m + k] * y[k];
        y[r] /= A[r * m + r];
    }
    for (int r = m - 1; r >= 0; --r) {
        for (int k = r + 1; k < m; ++k) y[r] -= A[k * m + r] * y[k];
        y[r] /= A[r * m + r];
    }
    return 0;
}

/* Doubles of scratch one thread needs for the inverse kinematics. */
static size_t ic_scratch_size(const asr_interaction* ic, int n_joint) {
    return (size_t)6 * (size_t)ic->nv + (size_t)6 * (size_t)n_joint;
}

static void scratch_forward(const asr_engine* e, const asr_interaction* ic, int i, int nj,
                            const double* q) {
    for (int j = 0; j < nj; ++j) ic->ik_qpos[i][e->qpos_adr[j]] = q[j];
    ic->kinematics(e->model[i], ic->ik_data[i]);
}

/* q (nj: the start in, the solution out) with the site at p and orientation R (world; R NULL:
 * position only). Returns 1 when converged within ic->ik_max_iter damped steps. */
static int ik_solve(const asr_engine* e, const asr_interaction* ic, int i, int nj, const double* p,
                    const double* R, double* q, double* scratch) {
    int m = R ? 6 : 3;
    double* jacp = scratch;
    double* jacr = jacp + 3 * ic->nv;
    double* J = jacr + 3 * ic->nv; /* m x nj */
    memcpy(ic->ik_qpos[i], e->qpos[i], (size_t)ic->nq * sizeof(double));
    for (int it = 0;; ++it) {
        double err[6], A[36];
        scratch_forward(e, ic, i, nj, q);
        pose_error(ic, i, p, R, err);
        double ep = sqrt(err[0] * err[0] + err[1] * err[1] + err[2] * err[2]);
        double eo = sqrt(err[3] * err[3] + err[4] * err[4] + err[5] * err[5]);
        if (!(ep == ep && eo == eo)) return 0;
        if (ep <= ic->ik_tol_pos && eo <= ic->ik_tol_rot) return 1;
        if (it == ic->ik_max_iter) return 0;
        ic->com_pos(e->model[i], ic->ik_data[i]);
        ic->jac_site(e->model[i], ic->ik_data[i], jacp, jacr, ic->site);
        for (int r = 0; r < m; ++r) {
            const double* row = r < 3 ? jacp + r * ic->nv : jacr + (r - 3) * ic->nv;
            for (int j = 0; j < nj; ++j) J[r * nj + j] = row[e->dof_adr[j]];
        }
        for (int r = 0; r < m; ++r) {
            for (int c = 0; c <= r; ++c) {
                double s = 0.0;
                for (int j = 0; j < nj; ++j) s += J[r * nj + j] * J[c * nj + j];
                A[r * m + c] = A[c * m + r] = s;
            }
            A[r * m + r] += ic->ik_damping * ic->ik_damping;
        }
        if (cholesky_solve(A, err, m) != 0) return 0;
        for (int j = 0; j < nj; ++j) {
            double s = 0.0;
            for (int r = 0; r < m; ++r) s += J[r * nj + j] * err[r];
            q[j] += s;
        }
    }
}

int asr_ic_solve_ik(const asr_batch* b, const asr_engine* e, const asr_interaction* ic, int i,
                    const double* x, const double* R, double* q) {
    if (!b || !e || !ic || !x || !q || i < 0 || i >= asr_batch_n_inst(b)) return -1;
    if (asr_ic_check(b, e, ic) != ASR_OK) return -1;
    double* scratch = (double*)malloc(ic_scratch_size(ic, asr_batch_n_joint(b)) * sizeof(double));
    if (!scratch) return -1;
    double p[3];
    base_to_world(ic, x, p);
    int ok = ik_solve(e, ic, i, asr_batch_n_joint(b), p, R, q, scratch);
    free(scratch);
    return ok;
}

/* ------------------------------------------------------------------ the laws */

/* The offset of x_c from x_d along the task axes after this step. */
static void admittance(const asr_ic_config* cfg, asr_ic_state* st, const double* coef,
                       const double* ftil, double* offset) {
    for (int a = 0; a < 3; ++a) {
        const double* c = coef + 6 * a;
        double z = c[0] * st->z[a] + c[1] * st->zd[a] + c[4] * ftil[a];
        double zd = c[2] * st->z[a] + c[3] * st->zd[a] + c[5] * ftil[a];
        if (fabs(z) > cfg->max_offset[a]) { /* at the bound: stop there */
            z = copysign(cfg->max_offset[a], z);
            zd = 0.0;
        }
        st->z[a] = z;
        st->zd[a] = zd;
        offset[a] = z;
    }
}

static void direct_force(const asr_ic_config* cfg, asr_ic_state* st, double dt, const double* ftil,
                         double* offset) {
    for (int a = 0; a < 3; ++a) {
        double integral = st->integral[a] + ftil[a] * dt;
        double u = cfg->force_kp[a] * ftil[a] + cfg->force_ki[a] * integral;
        if (fabs(u) > cfg->max_offset[a] && u * ftil[a] > 0.0) {
            integral = st->integral[a]; /* anti-windup: no integration further out */
            u = cfg->force_kp[a] * ftil[a] + cfg->force_ki[a] * integral;
        }
        st->integral[a] = integral;
        offset[a] = fabs(u) > cfg->max_offset[a] ? copysign(cfg->max_offset[a], u) : u;
    }
}

/* The control law and inverse kinematics: x_c and q_c from the references and f_e. */
static void control_law(const asr_engine* e, const asr_interaction* ic, const asr_ic_config* cfg,
                        asr_ic_state* st, int i, int nj, double dt, const double* coef,
                        double* scratch) {
    double ftil[3], offset[3], d[3], p[3], q[ASR_IC_MAX_JOINTS];
    for (int a = 0; a < 3; ++a) ftil[a] = st->f_d[a] - st->f_e[a];
    if (cfg->law == ASR_IC_ADMITTANCE) {
        admittance(cfg, st, coef, ftil, offset);
    } else {
        direct_force(cfg, st, dt, ftil, offset);
    }
    mat_vec(st->R_task, offset, p); /* task offset -> world direction -> base frame */
    mat_t_vec(ic->base_mat, p, d);
    for (int a = 0; a < 3; ++a) st->x_c[a] = st->x_d[a] + d[a];
    base_to_world(ic, st->x_c, p);
    memcpy(q, st->q_c, (size_t)nj * sizeof(double));
    st->ik_ok = ik_solve(e, ic, i, nj, p, ic->ik_orientation ? st->R_d : NULL, q, scratch);
    if (st->ik_ok) {
        memcpy(st->q_c, q, (size_t)nj * sizeof(double));
    } else {
        st->ik_fail += 1;
    }
}

/* ------------------------------------------------------------------ the FSM's states */

/* The static control law from the setpoint: references at its forward kinematics (a zero force
 * reference), the sensor bias removed ([Storiale2022] sec. 2.2.1). */
static void setpoint_reached(const asr_engine* e, const asr_interaction* ic,
                             const asr_ic_config* cfg, asr_ic_state* st, int i, int nj) {
    memcpy(ic->ik_qpos[i], e->qpos[i], (size_t)ic->nq * sizeof(double));
    scratch_forward(e, ic, i, nj, st->q_goal);
    world_to_base(ic, ic->ik_site_pos[i], st->x_d);
    memcpy(st->R_d, ic->ik_site_mat[i], sizeof st->R_d);
    if (cfg->task_frame_tool) memcpy(st->R_task, st->R_d, sizeof st->R_task);
    memcpy(st->x_c, st->x_d, sizeof st->x_c);
    memcpy(st->q_c, st->q_goal, (size_t)nj * sizeof(double));
    memcpy(st->bias, st->filtered, sizeof st->bias);
    for (int a = 0; a < 3; ++a) {
        st->z[a] = st->zd[a] = st->integral[a] = 0.0;
        st->f_d[a] = st->f_e[a] = st->tau_e[a] = 0.0;
    }
    st->fsm = asr_ic_transition(st->fsm, ASR_EV_SETPOINT_REACHED);
}

/* Independent joint control: the references move linearly from q_start to q_goal. */
static void joint_move(const asr_batch* b, const asr_engine* e, const asr_interaction* ic,
                       const asr_ic_config* cfg, asr_ic_state* st, int i, double dt) {
    int nj = asr_batch_n_joint(b);
    st->k += 1;
    double s = st->move_time > 0.0 ? (double)st->k * dt / st->move_time : 1.0;
    if (s > 1.0) s = 1.0;
    int reached = s >= 1.0;
    for (int j = 0; j < nj; ++j) {
        st->q_c[j] = st->q_start[j] + s * (st->q_goal[j] - st->q_start[j]);
        double q = e->qpos[i][e->qpos_adr[j]], qd = e->qvel[i][e->dof_adr[j]];
        if (!(fabs(q - st->q_goal[j]) <= cfg->setpoint_tol && fabs(qd) <= cfg->setpoint_vel_tol)) {
            reached = 0;
        }
    }
    memcpy(st->x_d, st->x_m, sizeof st->x_d);
    memcpy(st->x_c, st->x_m, sizeof st->x_c);
    if (reached) setpoint_reached(e, ic, cfg, st, i, nj);
}

/* Instance i's controller for one step, after the engine's step1: sensor, FSM, law, inverse
 * kinematics; writes the first reference of each actuated joint into refs (2 per joint). */
static void ic_control(const asr_batch* b, const asr_engine* e, const asr_interaction* ic, int i,
                       double dt, const double* coef, double* scratch, double* refs) {
    const asr_ic_config* cfg = &ic->config[i];
    asr_ic_state* st = &ic->state[i];
    int nj = asr_batch_n_joint(b);
    world_to_base(ic, ic->site_pos[i], st->x_m);
    if (--st->sample_timer <= 0) {
        sample_sensor(ic, cfg, st, i, dt);
        st->sample_timer = cfg->sensor_period;
    }
    sensor_to_task(ic, st, i);
    if (st->fsm == ASR_FSM_JOINT) {
        joint_move(b, e, ic, cfg, st, i, dt);
    } else {
        if (st->fsm == ASR_FSM_TRAJECTORY) {
            const double* s = ic->traj && ic->traj[i] ? ic->traj[i] + 6 * st->k : NULL;
            if (s && st->k < ic->traj_len[i]) {
                memcpy(st->x_d, s, 3 * sizeof(double));
                memcpy(st->f_d, s + 3, 3 * sizeof(double));
                st->k += 1;
            }
            if (!s || st->k >= ic->traj_len[i]) {
                st->fsm = asr_ic_transition(st->fsm, ASR_EV_TRAJECTORY_COMPLETED);
            }
        }
        control_law(e, ic, cfg, st, i, nj, dt, coef, scratch);
    }
    for (int j = 0; j < nj; ++j) refs[2 * j] = st->q_c[j];
}

/* ------------------------------------------------------------------ wrench and record */

static void ic_apply_wrench(const asr_interaction* ic, int i, int t) {
    const double* w = asr_series_at(ic->wrench, i, t);
    if (w && ic->wrench_body) memcpy(ic->wrench_body[i], w, 6 * sizeof(double));
}

static void ic_release_wrench(const asr_interaction* ic, int i) {
    if (ic->wrench.data && ic->wrench_body) memset(ic->wrench_body[i], 0, 6 * sizeof(double));
}

static void ic_record(const asr_interaction* ic, int i, int t, int nstep) {
    if (!ic->record) return;
    const asr_ic_state* st = &ic->state[i];
    double* r = ic->record + ((size_t)i * (size_t)nstep + (size_t)t) * ASR_IC_NREC;
    const double* parts[6] = {st->x_d, st->x_c, st->x_m, st->f_d, st->f_e, st->tau_e};
    for (int k = 0; k < 6; ++k) memcpy(r + 3 * k, parts[k], 3 * sizeof(double));
    r[18] = st->fsm;
    r[19] = st->ik_ok;
}

/* ------------------------------------------------------------------ set-up and checks */

static int finite_nonneg(const double* v, int n, int strict) {
    for (int k = 0; k < n; ++k) {
        if (!isfinite(v[k]) || v[k] < 0.0 || (strict && v[k] == 0.0)) return 0;
    }
    return 1;
}

static int config_valid(const asr_ic_config* c) {
    return (c->law == ASR_IC_ADMITTANCE || c->law == ASR_IC_DIRECT_FORCE) &&
           finite_nonneg(c->mass, 3, 1) && finite_nonneg(c->damping, 3, 1) &&
           finite_nonneg(c->stiffness, 3, 0) && finite_nonneg(c->force_kp, 3, 0) &&
           finite_nonneg(c->force_ki, 3, 0) && finite_nonneg(c->max_offset, 3, 1) &&
           c->sensor_period >= 1 && finite_nonneg(&c->cutoff, 1, 0) &&
           finite_nonneg(&c->noise_force, 1, 0) && finite_nonneg(&c->noise_torque, 1, 0) &&
           finite_nonneg(&c->setpoint_tol, 1, 1) && finite_nonneg(&c->setpoint_vel_tol, 1, 1);
}

asr_status asr_ic_check(const asr_batch* b, const asr_engine* e, const asr_interaction* ic) {
    if (!b || !e || !ic || !ic->kinematics || !ic->com_pos || !ic->jac_site || !ic->ik_data ||
        !ic->ik_qpos || !ic->ik_site_pos || !ic->ik_site_mat || !ic->site_pos || !ic->site_mat ||
        !ic->sensor_mat || !ic->sensor_force || !ic->sensor_torque || !ic->config || !ic->state ||
        !e->qpos || !e->qvel || !e->model || !e->qpos_adr || !e->dof_adr ||
        (ic->traj && !ic->traj_len) || (ic->wrench.data && !ic->wrench_body)) {
        return ASR_ERR_NULL;
    }
    if (asr_batch_n_joint(b) > ASR_IC_MAX_JOINTS || ic->nq < 1 || ic->nv < 1 || ic->site < 0 ||
        ic->ik_max_iter < 1 || !(ic->ik_tol_pos > 0.0) || !(ic->ik_tol_rot > 0.0) ||
        !(ic->ik_damping >= 0.0) || !isfinite(ic->ik_damping) || ic->wrench.stride_i < 0 ||
        ic->wrench.stride_t < 0) {
        return ASR_ERR_RANGE;
    }
    for (int j = 0; j < asr_batch_n_joint(b); ++j) {
        int mode = asr_batch_mode(b, j);
        if (mode != ASR_MODE_LINK_PID && mode != ASR_MODE_EQ_PRESET &&
            mode != ASR_MODE_EQ_PRESET_PID) {
            return ASR_ERR_RANGE;
        }
    }
    for (int i = 0; i < asr_batch_n_inst(b); ++i) {
        if (!ic->ik_data[i] || !ic->ik_qpos[i] || !ic->ik_site_pos[i] || !ic->ik_site_mat[i] ||
            !ic->site_pos[i] || !ic->site_mat[i] || !ic->sensor_mat[i] || !ic->sensor_force[i] ||
            !ic->sensor_torque[i] || (ic->wrench.data && !ic->wrench_body[i])) {
            return ASR_ERR_NULL;
        }
        if (!config_valid(&ic->config[i])) return ASR_ERR_RANGE;
        if (ic->traj && ic->traj[i] && ic->traj_len[i] < 0) return ASR_ERR_RANGE;
    }
    return ASR_OK;
}

asr_status asr_ic_init(const asr_batch* b, const asr_engine* e, const asr_interaction* ic, int i,
                       unsigned long long seed) {
    if (!b || i < 0 || i >= asr_batch_n_inst(b)) return ASR_ERR_RANGE;
    asr_status status = asr_ic_check(b, e, ic);
    if (status != ASR_OK) return status;
    asr_ic_state* st = &ic->state[i];
    memset(st, 0, sizeof *st);
    st->fsm = asr_ic_transition(ASR_FSM_STATIC, ASR_EV_INIT);
    st->ik_ok = 1;
    st->rng = seed;
    world_to_base(ic, ic->site_pos[i], st->x_m);
    memcpy(st->x_d, st->x_m, sizeof st->x_d);
    memcpy(st->x_c, st->x_m, sizeof st->x_c);
    memcpy(st->R_d, ic->site_mat[i], sizeof st->R_d);
    memcpy(st->R_task, ic->config[i].task_frame_tool ? st->R_d : ic->base_mat, sizeof st->R_task);
    for (int j = 0; j < asr_batch_n_joint(b); ++j) st->q_c[j] = e->qpos[i][e->qpos_adr[j]];
    for (int k = 0; k < 3; ++k) { /* at rest: the reading is the bias, as at a setpoint */
        st->filtered[k] = st->bias[k] = ic->sensor_force[i][k];
        st->filtered[3 + k] = st->bias[3 + k] = ic->sensor_torque[i][k];
    }
    return ASR_OK;
}

/* ------------------------------------------------------------------ the engine loop's hooks */

/* One thread's controller state over instances [i0, i1): what the hooks need, the ZOH
 * coefficients of each instance and the inverse kinematics' scratch. */
typedef struct ic_local {
    const asr_batch* b;
    const asr_engine* e;
    const asr_interaction* ic;
    double dt;
    int nstep, i0;
    double* coef;    /* (i1 - i0) x IC_ZOH_SIZE */
    double* scratch; /* ic_scratch_size */
} ic_local;

static asr_status hook_check(void* user, const asr_batch* b, const asr_engine* e) {
    return asr_ic_check(b, e, (const asr_interaction*)user);
}

static asr_status hook_begin(void* user, const asr_batch* b, const asr_engine* e, double dt,
                             int nstep, int i0, int i1, void** local) {
    const asr_interaction* ic = (const asr_interaction*)user;
    ic_local* lc = (ic_local*)malloc(sizeof *lc);
    double* coef = (double*)malloc((size_t)(i1 - i0) * IC_ZOH_SIZE * sizeof(double));
    double* scratch = (double*)malloc(ic_scratch_size(ic, asr_batch_n_joint(b)) * sizeof(double));
    if (!lc || !coef || !scratch) {
        free(lc);
        free(coef);
        free(scratch);
        return ASR_ERR_NOMEM;
    }
    *lc = (ic_local){b, e, ic, dt, nstep, i0, coef, scratch};
    for (int i = i0; i < i1; ++i) ic_zoh(&ic->config[i], dt, coef + (size_t)(i - i0) * IC_ZOH_SIZE);
    *local = lc;
    return ASR_OK;
}

static void hook_control(void* local, int i, int t, double* refs) {
    const ic_local* lc = (const ic_local*)local;
    (void)t;
    ic_control(lc->b, lc->e, lc->ic, i, lc->dt, lc->coef + (size_t)(i - lc->i0) * IC_ZOH_SIZE,
               lc->scratch, refs);
}

static void hook_wrench(void* local, int i, int t) {
    ic_apply_wrench(((const ic_local*)local)->ic, i, t);
}

static void hook_record(void* local, int i, int t) {
    const ic_local* lc = (const ic_local*)local;
    ic_record(lc->ic, i, t, lc->nstep);
}

static void hook_finish(void* local, int i) { ic_release_wrench(((const ic_local*)local)->ic, i); }

static void hook_end(void* local) {
    ic_local* lc = (ic_local*)local;
    free(lc->coef);
    free(lc->scratch);
    free(lc);
}

asr_status asr_ic_controller(const asr_interaction* ic, asr_controller* ctl) {
    if (!ic || !ctl) return ASR_ERR_NULL;
    *ctl = (asr_controller){(void*)ic,   hook_check,  hook_begin,  hook_control,
                            hook_wrench, hook_record, hook_finish, hook_end};
    return ASR_OK;
}

asr_status asr_batch_rollout_interaction(asr_batch* b, const asr_engine* engine,
                                         const asr_interaction* ic, int nstep, double dt,
                                         asr_series refs, asr_series tau_ext, asr_series tau_ff,
                                         int nrecord, const int* record_fields, double* record) {
    asr_controller ctl;
    asr_status st = asr_ic_controller(ic, &ctl);
    if (st != ASR_OK) return st;
    return asr_batch_rollout_controlled(b, engine, &ctl, nstep, dt, refs, tau_ext, tau_ff, nrecord,
                                        record_fields, record);
}
