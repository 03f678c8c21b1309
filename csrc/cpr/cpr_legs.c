/* cpr_legs.c - continuum parallel robots, the legs: the layout of the unknowns and residuals,
 * each leg's rod base from its unknowns and its tip constraint and plate wrench from the rod's
 * tip state, the residual of docs/cpr.md, and the forward-difference Jacobian whose structure
 * the solver (cpr.c) relies on.
 *
 * Unknowns x: per leg [n0 (3), m0 (3 or 2), q], then the plate [position, rotation vector].
 * Residuals: per leg the tip constraint reduced by its joint (6 rows, 5 with free twist), then
 * the plate equilibrium (6). The IGM holds the plate part of x fixed and the DGM holds every q,
 * so both are square for the usual robots and need no pose / joint error rows.
 *
 * Structure: a leg's unknown changes only that leg's tip state, so its Jacobian column costs ONE
 * rod integration and touches only the leg's rows and the equilibrium rows. A plate unknown
 * moves every attachment point and frame but no rod: its column re-evaluates the constraints
 * from the stored tip states, with no integration at all. The rod integrations of a Jacobian
 * (or of one residual) are independent and run ASR_ROD_LANES at a time (rod.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "asr_cpr.h"
#include "cpr_internal.h"
#include "rod.h"
#include "rot3.h"
#include "core/asr_threads.h"

enum {
    S = ASR_ROD_NSTATE,
    MAXW = 7,
    LANES = ASR_ROD_LANES
};

/* ------------------------------------------------------------------ layout */

int asr_cpr_nx(const asr_cpr* robot) {
    if (!robot || !robot->legs || robot->n_leg < 1) return -1;
    int n = 6;
    for (int i = 0; i < robot->n_leg; ++i) n += cpr_leg_nw(&robot->legs[i]) + 1;
    return n;
}

int asr_cpr_nres(const asr_cpr* robot) {
    if (!robot || !robot->legs || robot->n_leg < 1) return -1;
    int n = 6;
    for (int i = 0; i < robot->n_leg; ++i) n += cpr_leg_nr(&robot->legs[i]);
    return n;
}

/* ------------------------------------------------------------------ one leg */

/* Base state y0 (18) and rod length of a leg from its slice xl = [n0, m0, q] of x. */
static void leg_base(const asr_cpr_leg* leg, const double* xl, double* y0, double* L) {
    int nw = cpr_leg_nw(leg);
    double q = xl[nw], R0[9];
    memcpy(y0, leg->base_p, 3 * sizeof(double));
    *L = leg->L;
    if (leg->base_joint == ASR_CPR_BASE_REVOLUTE) {
        double w[3] = {q * leg->base_axis[0], q * leg->base_axis[1], q * leg->base_axis[2]}, Rq[9];
        r3_rot_exp(w, Rq);
        r3_mat_mul(Rq, leg->base_R, R0);
    } else {
        memcpy(R0, leg->base_R, sizeof R0);
        if (leg->base_joint == ASR_CPR_BASE_PRISMATIC)
            for (int k = 0; k < 3; ++k) y0[k] += q * leg->base_axis[k];
        else
            *L = q;
    }
    memcpy(y0 + 3, R0, sizeof R0);
    memcpy(y0 + 12, xl, 3 * sizeof(double));
    if (nw == 6) {
        memcpy(y0 + 15, xl + 3, 3 * sizeof(double));
    } else { /* free twist: no moment about the base tangent (3rd column of R0) */
        for (int k = 0; k < 3; ++k) y0[15 + k] = xl[3] * R0[3 * k] + xl[4] * R0[3 * k + 1];
    }
}

/* Tip constraint rows (cpr_leg_nr) of a leg and the wrench (6) its rod puts on the plate about the
 * plate origin P, from the rod tip state y (18) and the plate pose (P, Rp). */
void cpr_leg_tip(const asr_cpr_leg* leg, const double* y, const double* P, const double* Rp,
                 double* rows, double* w) {
    const double *pL = y, *RL = y + 3, *nL = y + 12, *mL = y + 15;
    double a[3], ep[3], RJ[9], eo[3], M[9], arm[3], t[3];
    r3_mat_vec(Rp, leg->tip_p, a);
    for (int k = 0; k < 3; ++k) ep[k] = pL[k] - P[k] - a[k];
    r3_mat_mul(Rp, leg->tip_R, RJ);
    for (int i = 0; i < 3; ++i) /* M = RJ^T RL, orientation error vee(M - M^T) in joint frame */
        for (int j = 0; j < 3; ++j)
            M[3 * i + j] = RJ[i] * RL[j] + RJ[3 + i] * RL[3 + j] + RJ[6 + i] * RL[6 + j];
    eo[0] = M[7] - M[5];
    eo[1] = M[2] - M[6];
    eo[2] = M[3] - M[1];
    switch (leg->tip_joint) {
    case ASR_CPR_TIP_REVOLUTE: {
        double aw[3], aj[3], b1[3], b2[3];
        r3_mat_vec(Rp, leg->tip_axis, aw);
        for (int k = 0; k < 3; ++k) /* axis in the joint frame: tip_R^T axis */
            aj[k] = leg->tip_R[k] * leg->tip_axis[0] + leg->tip_R[3 + k] * leg->tip_axis[1] +
                    leg->tip_R[6 + k] * leg->tip_axis[2];
        r3_perp_basis(aj, b1, b2);
        memcpy(rows, ep, sizeof ep);
        rows[3] = r3_dot(eo, b1);
        rows[4] = r3_dot(eo, b2);
        rows[5] = r3_dot(mL, aw);
        break;
    }
    case ASR_CPR_TIP_PRISMATIC: {
        double aw[3], b1[3], b2[3];
        r3_mat_vec(Rp, leg->tip_axis, aw);
        r3_perp_basis(aw, b1, b2);
        rows[0] = r3_dot(ep, b1);
        rows[1] = r3_dot(ep, b2);
        rows[2] = r3_dot(nL, aw);
        memcpy(rows + 3, eo, sizeof eo);
        break;
    }
    case ASR_CPR_TIP_SPHERICAL:
        memcpy(rows, ep, sizeof ep);
        memcpy(rows + 3, mL, 3 * sizeof(double));
        break;
    default: /* fixed; free twist drops the twist about the tip tangent (joint z) */
        memcpy(rows, ep, sizeof ep);
        memcpy(rows + 3, eo, (leg->free_twist ? 2 : 3) * sizeof(double));
        break;
    }
    /* the rod pushes the plate with -nL, -mL at its tip pL */
    for (int k = 0; k < 3; ++k) arm[k] = pL[k] - P[k];
    r3_cross(arm, nL, t);
    for (int k = 0; k < 3; ++k) {
        w[k] = -nL[k];
        w[3 + k] = -mL[k] - t[k];
    }
}

/* ------------------------------------------------------------------ rod integrations */

static int tasks_init(cpr_rod_tasks* t, int cap, int n_grid) {
    memset(t, 0, sizeof *t);
    t->cap = cap;
    t->n_grid = n_grid;
    t->rods = (const asr_rod**)malloc((size_t)cap * sizeof(asr_rod*));
    t->L = (double*)malloc((size_t)cap * (1 + 2 * S) * sizeof(double));
    if (!t->rods || !t->L) return -1;
    t->y0 = t->L + cap;
    t->tips = t->y0 + (size_t)S * cap;
    return 0;
}

static void tasks_free(cpr_rod_tasks* t) {
    free(t->rods);
    free(t->L);
}

static asr_status tasks_range(void* ctx, int p0, int p1) {
    cpr_rod_tasks* t = (cpr_rod_tasks*)ctx;
    int a = p0 * LANES, b = p1 * LANES < t->n ? p1 * LANES : t->n;
    return rods_integrate(b - a, t->rods + a, t->L + a, t->y0 + (size_t)S * a, t->n_grid,
                          t->tips + (size_t)S * a, t->paths ? t->paths + a : NULL);
}

static asr_status tasks_run(cpr_rod_tasks* t, int threads) {
    int packs = (t->n + LANES - 1) / LANES;
    /* A pack of N = 40 takes ~9 us here, less than starting and joining a thread: a thread is
     * only worth it for about six such packs (n_grid * 4 units of ASR_MIN_WORK_PER_THREAD
     * each); a Jacobian of Till's robot at N = 200 does get two. */
    int nt = asr_thread_count(threads, packs, t->n_grid * 4);
    return asr_parallel_for(nt, packs, tasks_range, t);
}

void cpr_plate_pose(const cpr_solver* s, const double* x, double* P, double* Rp) {
    const double* xp = x + s->nx - 6;
    memcpy(P, xp, 3 * sizeof(double));
    r3_rot_exp(xp + 3, Rp);
}

/* Equilibrium rows from the legs' plate wrenches. */
void cpr_equilibrium(const cpr_solver* s, const double* weq, double* r) {
    const asr_cpr* rb = s->robot;
    double* e = r + s->nres - 6;
    for (int k = 0; k < 3; ++k) {
        e[k] = rb->plate_mass * rb->g[k] + rb->wrench[k];
        e[3 + k] = rb->wrench[3 + k];
    }
    for (int i = 0; i < rb->n_leg; ++i)
        for (int k = 0; k < 6; ++k) e[k] += weq[6 * i + k];
}

/* Residual at x into r, tips and weq (all legs integrated side by side). */
asr_status cpr_evaluate(cpr_solver* s, const double* x, double* r, double* tips, double* weq) {
    const asr_cpr* rb = s->robot;
    cpr_rod_tasks* t = &s->tasks;
    double* own_tips = t->tips;
    double P[3], Rp[9];
    for (int i = 0; i < rb->n_leg; ++i) {
        t->rods[i] = &rb->legs[i].rod;
        leg_base(&rb->legs[i], x + s->xoff[i], t->y0 + S * i, &t->L[i]);
    }
    t->n = rb->n_leg;
    t->tips = tips;
    t->paths = s->paths;
    asr_status st = tasks_run(t, s->threads);
    t->tips = own_tips;
    t->paths = NULL;
    if (st != ASR_OK) return st;
    cpr_plate_pose(s, x, P, Rp);
    for (int i = 0; i < rb->n_leg; ++i)
        cpr_leg_tip(&rb->legs[i], tips + S * i, P, Rp, r + s->roff[i], weq + 6 * i);
    cpr_equilibrium(s, weq, r);
    return ASR_OK;
}

/* Forward-difference step: about sqrt(eps) relative, with an absolute floor for zero unknowns. */
static double fd_step(double x) { return 1e-7 * (1.0 + fabs(x)); }

/* Jacobian columns of the leg unknowns: one rod integration each, all of them side by side.
 * The leg columns come first among the active unknowns, leg by leg (cpr_solver_init). */
asr_status cpr_jac_legs(cpr_solver* s) {
    const asr_cpr* rb = s->robot;
    cpr_rod_tasks* t = &s->tasks;
    int c = 0;
    for (int i = 0; i < rb->n_leg; ++i) {
        const asr_cpr_leg* leg = &rb->legs[i];
        int nw = cpr_leg_nw(leg), nu = nw + (s->problem == ASR_CPR_IGM);
        for (int j = 0; j < nu; ++j, ++c) {
            double xl[MAXW];
            memcpy(xl, s->x + s->xoff[i], (size_t)(nw + 1) * sizeof(double));
            xl[j] += fd_step(xl[j]);
            t->rods[c] = &leg->rod;
            leg_base(leg, xl, t->y0 + S * c, &t->L[c]);
        }
    }
    t->n = c;
    asr_status st = tasks_run(t, s->threads);
    if (st != ASR_OK) return st;
    c = 0;
    for (int i = 0; i < rb->n_leg; ++i) {
        const asr_cpr_leg* leg = &rb->legs[i];
        int nw = cpr_leg_nw(leg), nr = cpr_leg_nr(leg), nu = nw + (s->problem == ASR_CPR_IGM);
        for (int j = 0; j < nu; ++j, ++c) {
            double rows[6], w[6], h = fd_step(s->x[s->xoff[i] + j]);
            cpr_leg_tip(leg, t->tips + S * c, s->P, s->Rp, rows, w);
            double* Jc = s->J + (size_t)c * s->nres;
            memset(Jc, 0, (size_t)s->nres * sizeof(double));
            for (int k = 0; k < nr; ++k) Jc[s->roff[i] + k] = (rows[k] - s->r[s->roff[i] + k]) / h;
            for (int k = 0; k < 6; ++k) Jc[s->nres - 6 + k] = (w[k] - s->weq[6 * i + k]) / h;
        }
    }
    return ASR_OK;
}

/* Jacobian columns of the plate unknowns (DGM): constraints re-evaluated at the stored tips. */
void cpr_jac_plate(cpr_solver* s, double* scratch_r, double* scratch_w) {
    int n_leg = s->robot->n_leg, px = s->nx - 6;
    for (int j = 0; j < 6; ++j) {
        double xp[6], P[3], Rp[9];
        memcpy(xp, s->x + px, sizeof xp);
        double h = fd_step(xp[j]);
        xp[j] += h;
        memcpy(P, xp, sizeof P);
        r3_rot_exp(xp + 3, Rp);
        for (int i = 0; i < n_leg; ++i)
            cpr_leg_tip(&s->robot->legs[i], s->tips + S * i, P, Rp, scratch_r + s->roff[i],
                        scratch_w + 6 * i);
        cpr_equilibrium(s, scratch_w, scratch_r);
        int col = -1;
        for (int c = 0; c < s->nact; ++c)
            if (s->act[c] == px + j) {
                col = c;
                break;
            }
        double* Jc = s->J + (size_t)col * s->nres;
        for (int k = 0; k < s->nres; ++k) Jc[k] = (scratch_r[k] - s->r[k]) / h;
    }
}

asr_status cpr_check_robot(const asr_cpr* rb) {
    if (!rb || !rb->legs) return ASR_ERR_NULL;
    if (rb->n_leg < 1) return ASR_ERR_RANGE;
    for (int i = 0; i < rb->n_leg; ++i) {
        const asr_cpr_leg* l = &rb->legs[i];
        if (l->base_joint < 0 || l->base_joint > 2 || l->tip_joint < 0 || l->tip_joint > 3)
            return ASR_ERR_MODEL;
        if (l->free_twist && l->tip_joint != ASR_CPR_TIP_FIXED) return ASR_ERR_MODEL;
    }
    return ASR_OK;
}

/* Set up the solver (legs' offsets, active unknowns, rod integration lists); 0, or -1 when out
 * of memory. cpr_solver_free releases it either way. */
int cpr_solver_init(cpr_solver* s, const asr_cpr* rb, int problem, int n_grid, int threads) {
    int n_leg = rb->n_leg;
    memset(s, 0, sizeof *s);
    s->robot = rb;
    s->problem = problem;
    s->n_grid = n_grid;
    s->threads = threads;
    s->nx = asr_cpr_nx(rb);
    s->nres = asr_cpr_nres(rb);
    int* mem = (int*)malloc(((size_t)2 * n_leg + (size_t)s->nx) * sizeof(int));
    if (!mem || tasks_init(&s->tasks, s->nx + n_leg, n_grid) != 0) {
        free(mem);
        return -1;
    }
    s->xoff = mem;
    s->roff = mem + n_leg;
    s->act = mem + 2 * n_leg;
    int xo = 0, ro = 0, na = 0;
    for (int i = 0; i < n_leg; ++i) {
        int nw = cpr_leg_nw(&rb->legs[i]);
        s->xoff[i] = xo;
        s->roff[i] = ro;
        for (int j = 0; j < nw; ++j) s->act[na++] = xo + j;
        if (problem == ASR_CPR_IGM) s->act[na++] = xo + nw;
        xo += nw + 1;
        ro += cpr_leg_nr(&rb->legs[i]);
    }
    if (problem == ASR_CPR_DGM)
        for (int j = 0; j < 6; ++j) s->act[na++] = xo + j;
    s->nact = na;
    return 0;
}

void cpr_solver_free(cpr_solver* s) {
    free(s->xoff);
    tasks_free(&s->tasks);
}

asr_status asr_cpr_residual(const asr_cpr* robot, const double* x, int n_grid, double* res,
                            double* centerlines) {
    asr_status st = cpr_check_robot(robot);
    if (st != ASR_OK) return st;
    if (!x || !res) return ASR_ERR_NULL;
    if (n_grid < 2) return ASR_ERR_RANGE;
    int n_leg = robot->n_leg;
    cpr_solver s;
    double* buf =
        (double*)malloc(((size_t)(S + 6) * n_leg + (size_t)n_leg * n_grid * S) * sizeof(double));
    double** paths = (double**)malloc((size_t)n_leg * sizeof(double*));
    if (cpr_solver_init(&s, robot, ASR_CPR_IGM, n_grid, 1) != 0 || !buf || !paths) {
        cpr_solver_free(&s), free(buf), free(paths);
        return ASR_ERR_NOMEM;
    }
    double* states = buf + (size_t)(S + 6) * n_leg; /* n_leg x n_grid x 18 */
    for (int i = 0; i < n_leg; ++i) paths[i] = states + (size_t)i * n_grid * S;
    s.paths = centerlines ? paths : NULL;
    st = cpr_evaluate(&s, x, res, buf, buf + (size_t)S * n_leg);
    if (st == ASR_OK && centerlines)
        for (int i = 0; i < n_leg * n_grid; ++i)
            memcpy(centerlines + 3 * i, states + (size_t)S * i, 3 * sizeof(double));
    cpr_solver_free(&s), free(buf), free(paths);
    return st;
}

int asr_cpr_nact(const asr_cpr* robot, int problem) {
    int nx = asr_cpr_nx(robot);
    if (nx < 0) return -1;
    return problem == ASR_CPR_DGM ? nx - robot->n_leg : nx - 6;
}

asr_status asr_cpr_unpack(const asr_cpr* robot, int n, const double* xs, double* q,
                          double* position, double* rotation, double* base_wrenches) {
    asr_status st = cpr_check_robot(robot);
    if (st != ASR_OK) return st;
    if (!xs) return ASR_ERR_NULL;
    if (n < 0) return ASR_ERR_RANGE;
    int nx = asr_cpr_nx(robot), n_leg = robot->n_leg;
    for (int k = 0; k < n; ++k) {
        const double* x = xs + (size_t)k * nx;
        for (int i = 0, xo = 0; i < n_leg; ++i) {
            const asr_cpr_leg* leg = &robot->legs[i];
            double y0[S], L;
            int nw = cpr_leg_nw(leg);
            if (q) q[(size_t)k * n_leg + i] = x[xo + nw];
            if (base_wrenches) { /* the base state holds n0, m0 in the world frame */
                leg_base(leg, x + xo, y0, &L);
                memcpy(base_wrenches + ((size_t)k * n_leg + i) * 6, y0 + 12, 6 * sizeof(double));
            }
            xo += nw + 1;
        }
        if (position) memcpy(position + 3 * (size_t)k, x + nx - 6, 3 * sizeof(double));
        if (rotation) r3_rot_exp(x + nx - 3, rotation + 9 * (size_t)k);
    }
    return ASR_OK;
}
