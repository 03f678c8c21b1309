/* cpr.c - continuum parallel robots: residuals of docs/cpr.md and a Levenberg-Marquardt solver whose
 * forward-difference Jacobian follows the problem's structure.
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
 * (or of one residual) are independent and run ASR_ROD_LANES at a time (rod.h).
 *
 * Steps: a square system takes Newton's step from the inverse Jacobian, kept up to date by
 * Sherman-Morrison with each Broyden update (O(n^2) per step); Levenberg-Marquardt on the normal
 * equations (Nielsen's damping rule) takes over when that step fails, and for least-squares
 * systems. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "asr.h"
#include "rod.h"
#include "rot3.h"
#include "simd.h"
#include "threads.h"

enum { S = ASR_ROD_NSTATE, MAXW = 7, LANES = ASR_ROD_LANES };

/* ------------------------------------------------------------------ layout */

static int leg_nw(const asr_cpr_leg* leg) { return leg->free_twist ? 5 : 6; }
static int leg_nr(const asr_cpr_leg* leg) { return leg->free_twist ? 5 : 6; }

int asr_cpr_nx(const asr_cpr* robot) {
    if (!robot || !robot->legs || robot->n_leg < 1) return -1;
    int n = 6;
    for (int i = 0; i < robot->n_leg; ++i) n += leg_nw(&robot->legs[i]) + 1;
    return n;
}

int asr_cpr_nres(const asr_cpr* robot) {
    if (!robot || !robot->legs || robot->n_leg < 1) return -1;
    int n = 6;
    for (int i = 0; i < robot->n_leg; ++i) n += leg_nr(&robot->legs[i]);
    return n;
}

/* ------------------------------------------------------------------ one leg */

/* Base state y0 (18) and rod length of a leg from its slice xl = [n0, m0, q] of x. */
static void leg_base(const asr_cpr_leg* leg, const double* xl, double* y0, double* L) {
    int nw = leg_nw(leg);
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

/* Tip constraint rows (leg_nr) of a leg and the wrench (6) its rod puts on the plate about the
 * plate origin P, from the rod tip state y (18) and the plate pose (P, Rp). */
static void leg_tip(const asr_cpr_leg* leg, const double* y, const double* P, const double* Rp,
                    double* rows, double* w) {
    const double *pL = y, *RL = y + 3, *nL = y + 12, *mL = y + 15;
    double a[3], ep[3], RJ[9], eo[3], M[9], arm[3], t[3];
    r3_mat_vec(Rp, leg->tip_p, a);
    for (int k = 0; k < 3; ++k) ep[k] = pL[k] - P[k] - a[k];
    r3_mat_mul(Rp, leg->tip_R, RJ);
    for (int i = 0; i < 3; ++i) /* M = RJ^T RL, orientation error vee(M - M^T) in joint frame */
        for (int j = 0; j < 3; ++j) M[3 * i + j] = RJ[i] * RL[j] + RJ[3 + i] * RL[3 + j] + RJ[6 + i] * RL[6 + j];
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

/* A list of independent rod integrations (the legs at one x, or the Jacobian's columns), run in
 * packs of ASR_ROD_LANES, packs split over threads. */
typedef struct rod_tasks {
    int n, cap, n_grid;
    const asr_rod** rods;       /* cap */
    double* L;                  /* cap, m */
    double* y0;                 /* cap x 18 base states */
    double* tips;               /* cap x 18 tip states (may point elsewhere for a run) */
    double** paths;             /* NULL, or n pointers to n_grid x 18 states */
} rod_tasks;

static int tasks_init(rod_tasks* t, int cap, int n_grid) {
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

static void tasks_free(rod_tasks* t) {
    free(t->rods);
    free(t->L);
}

static asr_status tasks_range(void* ctx, int p0, int p1) {
    rod_tasks* t = (rod_tasks*)ctx;
    int a = p0 * LANES, b = p1 * LANES < t->n ? p1 * LANES : t->n;
    return asr_rods_integrate(b - a, t->rods + a, t->L + a, t->y0 + (size_t)S * a, t->n_grid,
                              t->tips + (size_t)S * a, t->paths ? t->paths + a : NULL);
}

static asr_status tasks_run(rod_tasks* t, int threads) {
    int packs = (t->n + LANES - 1) / LANES;
    /* A pack of N = 40 takes ~9 us here, less than starting and joining a thread: a thread is
     * only worth it for about six such packs (n_grid * 4 units of ASR_MIN_WORK_PER_THREAD
     * each); a Jacobian of Till's robot at N = 200 does get two. */
    int nt = asr_thread_count(threads, packs, t->n_grid * 4);
    return asr_parallel_for(nt, packs, tasks_range, t);
}

/* ------------------------------------------------------------------ solver state */

typedef struct solver {
    const asr_cpr* robot;
    int problem, n_grid, nx, nres, nact, threads;
    int *xoff, *roff;           /* per leg: start of its slice of x, of its rows */
    int* act;                   /* nact: x index of each active unknown (Jacobian column) */
    double* x;                  /* current iterate (nx) */
    double* r;                  /* residual at x (nres) */
    double* tips;               /* n_leg x 18 tip states at x */
    double* weq;                /* n_leg x 6 plate wrenches at x */
    double* J;                  /* nres x nact, column-major */
    double P[3], Rp[9];         /* plate pose at x */
    double** paths;             /* NULL, or n_leg pointers to n_grid x 18 centerline states */
    rod_tasks tasks;            /* capacity: every leg column of the Jacobian, and n_leg */
} solver;

static void plate_pose(const solver* s, const double* x, double* P, double* Rp) {
    const double* xp = x + s->nx - 6;
    memcpy(P, xp, 3 * sizeof(double));
    r3_rot_exp(xp + 3, Rp);
}

/* Equilibrium rows from the legs' plate wrenches. */
static void equilibrium(const solver* s, const double* weq, double* r) {
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
static asr_status evaluate(solver* s, const double* x, double* r, double* tips, double* weq) {
    const asr_cpr* rb = s->robot;
    rod_tasks* t = &s->tasks;
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
    plate_pose(s, x, P, Rp);
    for (int i = 0; i < rb->n_leg; ++i)
        leg_tip(&rb->legs[i], tips + S * i, P, Rp, r + s->roff[i], weq + 6 * i);
    equilibrium(s, weq, r);
    return ASR_OK;
}

static double norm(const double* v, int n) {
    double a = 0.0;
    for (int k = 0; k < n; ++k) a += v[k] * v[k];
    return sqrt(a);
}

/* Forward-difference step: about sqrt(eps) relative, with an absolute floor for zero unknowns. */
static double fd_step(double x) { return 1e-7 * (1.0 + fabs(x)); }

/* Jacobian columns of the leg unknowns: one rod integration each, all of them side by side.
 * The leg columns come first among the active unknowns, leg by leg (solver_init). */
static asr_status jac_legs(solver* s) {
    const asr_cpr* rb = s->robot;
    rod_tasks* t = &s->tasks;
    int c = 0;
    for (int i = 0; i < rb->n_leg; ++i) {
        const asr_cpr_leg* leg = &rb->legs[i];
        int nw = leg_nw(leg), nu = nw + (s->problem == ASR_CPR_IGM);
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
        int nw = leg_nw(leg), nr = leg_nr(leg), nu = nw + (s->problem == ASR_CPR_IGM);
        for (int j = 0; j < nu; ++j, ++c) {
            double rows[6], w[6], h = fd_step(s->x[s->xoff[i] + j]);
            leg_tip(leg, t->tips + S * c, s->P, s->Rp, rows, w);
            double* Jc = s->J + (size_t)c * s->nres;
            memset(Jc, 0, (size_t)s->nres * sizeof(double));
            for (int k = 0; k < nr; ++k) Jc[s->roff[i] + k] = (rows[k] - s->r[s->roff[i] + k]) / h;
            for (int k = 0; k < 6; ++k) Jc[s->nres - 6 + k] = (w[k] - s->weq[6 * i + k]) / h;
        }
    }
    return ASR_OK;
}

/* Jacobian columns of the plate unknowns (DGM): constraints re-evaluated at the stored tips. */
static void jac_plate(solver* s, double* scratch_r, double* scratch_w) {
    int n_leg = s->robot->n_leg, px = s->nx - 6;
    for (int j = 0; j < 6; ++j) {
        double xp[6], P[3], Rp[9];
        memcpy(xp, s->x + px, sizeof xp);
        double h = fd_step(xp[j]);
        xp[j] += h;
        memcpy(P, xp, sizeof P);
        r3_rot_exp(xp + 3, Rp);
        for (int i = 0; i < n_leg; ++i)
            leg_tip(&s->robot->legs[i], s->tips + S * i, P, Rp, scratch_r + s->roff[i], scratch_w + 6 * i);
        equilibrium(s, scratch_w, scratch_r);
        int col = -1;
        for (int c = 0; c < s->nact; ++c)
            if (s->act[c] == px + j) { col = c; break; }
        double* Jc = s->J + (size_t)col * s->nres;
        for (int k = 0; k < s->nres; ++k) Jc[k] = (scratch_r[k] - s->r[k]) / h;
    }
}

/* ------------------------------------------------------------------ linear least squares */

/* Normal equations of min |J d + r|: G = J^T J (lower triangle, n x n column-major) and
 * g = -J^T r, with J m x n column-major; Jt (m x n) is scratch. Every entry is summed over the
 * rows in order, as a dot product would, but row by row (J transposed first) so that the inner
 * loops run along contiguous memory and vectorise without reassociating any sum. */
ASR_CLONED static void normal_eq(const double* restrict J, const double* restrict r, int m,
                                 int n, double* restrict G, double* restrict g,
                                 double* restrict Jt) {
    for (int j = 0; j < n; ++j)
        for (int k = 0; k < m; ++k) Jt[(size_t)k * n + j] = J[(size_t)j * m + k];
    memset(G, 0, (size_t)n * n * sizeof(double));
    memset(g, 0, (size_t)n * sizeof(double));
    for (int k = 0; k < m; ++k) {
        const double* restrict row = Jt + (size_t)k * n;
        for (int j = 0; j < n; ++j) {
            double* restrict Gj = G + (size_t)j * n;
            const double rj = row[j];
            for (int i = j; i < n; ++i) Gj[i] += row[i] * rj;
            g[j] -= rj * r[k];
        }
    }
}

/* Solve (G + lambda diag(G)) d = g by Cholesky (G's lower triangle, column-major n x n; A is
 * n x n scratch). Returns 0, or -1 when the damped matrix is not numerically positive definite. */
static int damped_solve(const double* G, const double* g, int n, double lambda, double* A,
                        double* d) {
    for (int j = 0; j < n; ++j) {
        for (int i = j; i < n; ++i) A[(size_t)j * n + i] = G[(size_t)j * n + i];
        double gjj = G[(size_t)j * n + j];
        A[(size_t)j * n + j] = gjj + lambda * gjj + 1e-300;
    }
    for (int j = 0; j < n; ++j) { /* left-looking Cholesky, L in A's lower triangle */
        double* aj = A + (size_t)j * n;
        for (int k = 0; k < j; ++k) {
            const double* ak = A + (size_t)k * n;
            double l = ak[j];
            for (int i = j; i < n; ++i) aj[i] -= l * ak[i];
        }
        if (!(aj[j] > 0.0) || !isfinite(aj[j])) return -1;
        double piv = sqrt(aj[j]);
        aj[j] = piv;
        double inv = 1.0 / piv;
        for (int i = j + 1; i < n; ++i) aj[i] *= inv;
    }
    for (int i = 0; i < n; ++i) { /* L z = g */
        double t = g[i];
        for (int k = 0; k < i; ++k) t -= A[(size_t)k * n + i] * d[k];
        d[i] = t / A[(size_t)i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) { /* L^T d = z */
        const double* ai = A + (size_t)i * n;
        double t = d[i];
        for (int k = i + 1; k < n; ++k) t -= ai[k] * d[k];
        d[i] = t / ai[i];
    }
    return 0;
}

/* ------------------------------------------------------------------ Levenberg-Marquardt */

static asr_status check_options(const asr_cpr_options* o) {
    if (!o) return ASR_ERR_NULL;
    if (o->n_grid < 2 || !(o->tol > 0.0) || o->max_iter < 1 || o->threads < 1) return ASR_ERR_RANGE;
    return ASR_OK;
}

static asr_status check_robot(const asr_cpr* rb) {
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

/* Broyden's rank-one update of J (m x n, column-major) after the step d changed r by y. */
static void broyden(double* J, int m, int n, const double* d, const double* y, double* Jd) {
    double dd = 0.0;
    for (int j = 0; j < n; ++j) dd += d[j] * d[j];
    if (!(dd > 0.0)) return;
    for (int i = 0; i < m; ++i) Jd[i] = -y[i];
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) Jd[i] += J[(size_t)j * m + i] * d[j];
    for (int j = 0; j < n; ++j) {
        double c = d[j] / dd;
        for (int i = 0; i < m; ++i) J[(size_t)j * m + i] -= Jd[i] * c;
    }
}

/* H = J^-1 for a square J (n x n, column-major) by Gauss-Jordan elimination with partial
 * pivoting; A (n x n) is scratch. Column-major J read as row-major is J^T, and the inverse of
 * J^T read back column-major is J^-1, so the row operations run along contiguous memory.
 * Returns 0, or -1 when J is numerically singular. */
ASR_CLONED static int invert(const double* restrict J, int n, double* restrict H,
                             double* restrict A) {
    memcpy(A, J, (size_t)n * n * sizeof(double));
    memset(H, 0, (size_t)n * n * sizeof(double));
    for (int i = 0; i < n; ++i) H[(size_t)i * n + i] = 1.0;
    for (int k = 0; k < n; ++k) {
        int p = k;
        for (int i = k + 1; i < n; ++i)
            if (fabs(A[(size_t)i * n + k]) > fabs(A[(size_t)p * n + k])) p = i;
        double piv = A[(size_t)p * n + k];
        if (!(fabs(piv) > 0.0) || !isfinite(piv)) return -1;
        double* restrict ak = A + (size_t)k * n;
        double* restrict hk = H + (size_t)k * n;
        if (p != k)
            for (int j = 0; j < n; ++j) {
                double t = ak[j];
                ak[j] = A[(size_t)p * n + j], A[(size_t)p * n + j] = t;
                t = hk[j];
                hk[j] = H[(size_t)p * n + j], H[(size_t)p * n + j] = t;
            }
        double inv = 1.0 / piv;
        for (int j = 0; j < n; ++j) ak[j] *= inv, hk[j] *= inv;
        for (int i = 0; i < n; ++i) {
            double f = A[(size_t)i * n + k];
            if (i == k || f == 0.0) continue;
            double* restrict ai = A + (size_t)i * n;
            double* restrict hi = H + (size_t)i * n;
            for (int j = 0; j < n; ++j) ai[j] -= f * ak[j];
            for (int j = 0; j < n; ++j) hi[j] -= f * hk[j];
        }
    }
    for (int i = 0; i < n * n; ++i)
        if (!isfinite(H[i])) return -1;
    return 0;
}

/* d = -H r (H n x n column-major). */
static void newton_step(const double* H, const double* r, int n, double* d) {
    memset(d, 0, (size_t)n * sizeof(double));
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) d[i] -= H[(size_t)j * n + i] * r[j];
}

/* The Broyden update of J seen through its inverse (Sherman-Morrison): after the step d changed
 * r by y, H += (d - H y)(d^T H) / (d^T H y); Hy and dH are n scratch. Returns -1 when the
 * update is singular (then H must be recomputed). */
static int broyden_inverse(double* H, int n, const double* d, const double* y, double* Hy,
                           double* dH) {
    memset(Hy, 0, (size_t)n * sizeof(double));
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) Hy[i] += H[(size_t)j * n + i] * y[j];
    double den = 0.0, dn = 0.0, hn = 0.0;
    for (int i = 0; i < n; ++i) den += d[i] * Hy[i], dn += d[i] * d[i], hn += Hy[i] * Hy[i];
    if (!(fabs(den) > 1e-12 * sqrt(dn * hn))) return -1;
    for (int j = 0; j < n; ++j) {
        double t = 0.0;
        for (int i = 0; i < n; ++i) t += d[i] * H[(size_t)j * n + i];
        dH[j] = t / den;
    }
    for (int i = 0; i < n; ++i) Hy[i] = d[i] - Hy[i];
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) H[(size_t)j * n + i] += Hy[i] * dH[j];
    return 0;
}

/* What a solve may take from the previous one and hand to the next (each pointer NULL: not
 * carried; each flag says whether its buffer holds a valid value). */
typedef struct lm_carry {
    double* J;                  /* m x n Jacobian */
    int* have_J;
    double* H;                  /* n x n its inverse (square systems) */
    int* have_H;
    double* tips;               /* n_leg x 18 rod tips at x's leg unknowns */
    int* have_tips;
} lm_carry;

/* Work space of one solve. */
typedef struct lm_work {
    int m, n, square, have_H;
    double *r_try, *y, *Jd, *tips_try, *weq_try, *scratch_r, *scratch_w, *x_try;
    double *H, *G, *g, *A, *d;
} lm_work;

/* One block for the whole work space (and the Jacobian unless carried); NULL when out of
 * memory. */
static double* lm_alloc(solver* s, lm_work* w, const lm_carry* c) {
    int n_leg = s->robot->n_leg, m = s->nres, n = s->nact;
    /* 6 residual-sized, 2 tip sets, 3 plate-wrench sets, x_try, J and A, H and G, d */
    size_t need = (size_t)m * 6 + ((size_t)S * 2 + 6 * 3) * n_leg + (size_t)s->nx +
                  (size_t)m * n * 2 + (size_t)n * n * 2 + (size_t)n;
    double* mem = (double*)malloc(need * sizeof(double));
    if (!mem) return NULL;
    double* p = mem;
    w->m = m, w->n = n, w->square = m == n, w->have_H = 0;
    s->r = p, p += m;
    w->r_try = p, p += m;
    w->y = p, p += m;
    w->Jd = p, p += m;
    w->scratch_r = p, p += m;
    w->g = p, p += m;
    s->tips = p, p += (size_t)S * n_leg;
    w->tips_try = p, p += (size_t)S * n_leg;
    s->weq = p, p += 6 * (size_t)n_leg;
    w->weq_try = p, p += 6 * (size_t)n_leg;
    w->scratch_w = p, p += 6 * (size_t)n_leg;
    w->x_try = p, p += s->nx;
    s->J = (c && c->J) ? c->J : p;
    p += (size_t)m * n;
    w->A = p, p += (size_t)m * n; /* m >= n: also J^T for the normal equations */
    w->H = (c && c->H) ? c->H : p;
    p += (size_t)n * n;
    w->G = p, p += (size_t)n * n;
    w->d = p;
    return mem;
}

/* Evaluate x + d (d on the active unknowns) and keep it when it lowers |r| (*rn): 1 if kept. */
static int try_step(solver* s, lm_work* w, double* rn) {
    memcpy(w->x_try, s->x, (size_t)s->nx * sizeof(double));
    for (int j = 0; j < s->nact; ++j) w->x_try[s->act[j]] += w->d[j];
    asr_status se = evaluate(s, w->x_try, w->r_try, w->tips_try, w->weq_try);
    double rt = se == ASR_OK ? norm(w->r_try, w->m) : INFINITY;
    if (!(rt < *rn)) return 0;
    *rn = rt;
    for (int k = 0; k < w->m; ++k) w->y[k] = w->r_try[k] - s->r[k];
    memcpy(s->x, w->x_try, (size_t)s->nx * sizeof(double));
    memcpy(s->r, w->r_try, (size_t)w->m * sizeof(double));
    memcpy(s->tips, w->tips_try, (size_t)S * s->robot->n_leg * sizeof(double));
    memcpy(s->weq, w->weq_try, 6 * (size_t)s->robot->n_leg * sizeof(double));
    return 1;
}

/* A fresh forward-difference Jacobian at x (and its inverse for a square system). */
static asr_status fresh_jacobian(solver* s, lm_work* w) {
    plate_pose(s, s->x, s->P, s->Rp);
    asr_status st = jac_legs(s);
    if (st != ASR_OK) return st;
    if (s->problem == ASR_CPR_DGM) jac_plate(s, w->scratch_r, w->scratch_w);
    w->have_H = w->square && invert(s->J, w->n, w->H, w->A) == 0;
    return ASR_OK;
}

/* Damped steps (G + lambda diag G) d = -J^T r, lambda raised until one lowers |r| (*rn); an
 * updated (not fresh) J gets one try only. Nielsen's rule moves lambda by the gain ratio rho
 * (actual over predicted decrease of |r|^2): down by up to 3 after a good step, up by a
 * doubling factor nu after each failure. Returns 1 if a step was kept. */
static int lm_steps(solver* s, lm_work* w, int fresh, double* lambda, double* nu, double* rn) {
    normal_eq(s->J, s->r, w->m, w->n, w->G, w->g, w->A);
    while (*lambda < 1e12) {
        if (damped_solve(w->G, w->g, w->n, *lambda, w->A, w->d) != 0) {
            *lambda = *lambda * *nu + 1e-12;
            *nu *= 2.0;
            continue;
        }
        double rn0 = *rn, pred = 0.0; /* predicted decrease of |r|^2: d^T (g + lambda D d) */
        for (int j = 0; j < w->n; ++j)
            pred += w->d[j] * (w->g[j] + *lambda * w->G[(size_t)j * w->n + j] * w->d[j]);
        if (try_step(s, w, rn)) {
            double rho = pred > 0.0 ? (rn0 * rn0 - *rn * *rn) / pred : 1.0, t = 2.0 * rho - 1.0;
            *lambda = fmax(*lambda * fmax(1.0 / 3.0, 1.0 - t * t * t), 1e-12);
            *nu = 2.0;
            return 1;
        }
        if (!fresh) return 0; /* an updated J that fails: recompute it before raising lambda */
        *lambda *= *nu;
        *nu *= 2.0;
    }
    return 0;
}

/* Below this damping LM's step is Newton's to round-off; a square system then takes
 * -J^-1 r from the carried inverse (O(n^2)) instead of forming and factoring J^T J (O(n^3)). */
#define LAMBDA_NEWTON 1e-9

/* Levenberg-Marquardt with a lazily refreshed Jacobian: a forward-difference Jacobian costs a
 * rod integration per leg unknown, a trial step only one per leg, so after an accepted step J
 * (and its inverse) gets a Broyden update instead, and is recomputed only when a step with an
 * updated J fails or leaves more than 70 % of the residual norm. The answer never depends on J:
 * convergence is judged on the exact residual. */
static asr_status lm_solve(solver* s, const asr_cpr_options* opt, asr_cpr_report* rep,
                           const lm_carry* c) {
    const asr_cpr* rb = s->robot;
    int n_leg = rb->n_leg;
    lm_work w;
    double* mem = lm_alloc(s, &w, c);
    if (!mem) return ASR_ERR_NOMEM;
    int fresh_local = 0, *have_J = (c && c->J) ? c->have_J : &fresh_local;
    if (*have_J && w.square) /* a carried J: its carried inverse, or a new one */
        w.have_H = (c->H && *c->have_H) || invert(s->J, w.n, w.H, w.A) == 0;

    asr_status st = ASR_OK;
    if (c && c->tips && *c->have_tips) { /* the rods at x are known: only the plate is new */
        memcpy(s->tips, c->tips, (size_t)S * n_leg * sizeof(double));
        plate_pose(s, s->x, s->P, s->Rp);
        for (int i = 0; i < n_leg; ++i)
            leg_tip(&rb->legs[i], s->tips + S * i, s->P, s->Rp, s->r + s->roff[i], s->weq + 6 * i);
        equilibrium(s, s->weq, s->r);
    } else {
        st = evaluate(s, s->x, s->r, s->tips, s->weq);
    }
    double rn = st == ASR_OK ? norm(s->r, w.m) : INFINITY;
    double lambda = LAMBDA_NEWTON, nu = 2.0;
    int it = 0;
    while (st == ASR_OK && rn >= opt->tol && it < opt->max_iter) {
        ++it;
        int fresh = !*have_J;
        if (fresh) {
            st = fresh_jacobian(s, &w);
            if (st != ASR_OK) break;
            *have_J = 1;
        }
        double rn_old = rn;
        int improved = 0, newton = w.have_H && lambda <= LAMBDA_NEWTON;
        if (newton) {
            newton_step(w.H, s->r, w.n, w.d);
            improved = try_step(s, &w, &rn);
            if (!improved && fresh) { /* LM's first try would be the same step */
                lambda *= nu;
                nu *= 2.0;
            }
        }
        if (newton && improved) lambda = fmax(lambda * 0.1, 1e-12);
        if (!improved && (fresh || !newton)) improved = lm_steps(s, &w, fresh, &lambda, &nu, &rn);
        if (!improved && fresh) break; /* stuck: a local minimum of |r| that is not a root */
        /* stale: recompute next time. Even an exact Newton step gains only a factor ~3 on the
         * first step of a warm-started pose (the rods are strongly nonlinear), so a factor 10
         * would refresh J at nearly every pose; a step that keeps 70 % of |r| is too slow. */
        if (!improved || rn > 0.7 * rn_old) {
            *have_J = 0;
        } else if (rn >= opt->tol) {
            broyden(s->J, w.m, w.n, w.d, w.y, w.Jd);
            if (w.have_H) w.have_H = broyden_inverse(w.H, w.n, w.d, w.y, w.Jd, w.g) == 0;
        }
    }
    if (c && c->H) *c->have_H = *have_J && w.have_H;
    if (c && c->tips) {
        *c->have_tips = st == ASR_OK;
        if (st == ASR_OK) memcpy(c->tips, s->tips, (size_t)S * n_leg * sizeof(double));
    }
    if (rep) {
        rep->converged = st == ASR_OK && rn < opt->tol;
        rep->iterations = it;
        rep->residual_norm = rn;
    }
    free(mem);
    return st;
}

/* Set up the solver (legs' offsets, active unknowns, rod integration lists); 0, or -1 when out
 * of memory. solver_free releases it either way. */
static int solver_init(solver* s, const asr_cpr* rb, int problem, int n_grid, int threads) {
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
        int nw = leg_nw(&rb->legs[i]);
        s->xoff[i] = xo;
        s->roff[i] = ro;
        for (int j = 0; j < nw; ++j) s->act[na++] = xo + j;
        if (problem == ASR_CPR_IGM) s->act[na++] = xo + nw;
        xo += nw + 1;
        ro += leg_nr(&rb->legs[i]);
    }
    if (problem == ASR_CPR_DGM)
        for (int j = 0; j < 6; ++j) s->act[na++] = xo + j;
    s->nact = na;
    return 0;
}

static void solver_free(solver* s) {
    free(s->xoff);
    tasks_free(&s->tasks);
}

/* One solve of x in place, carrying what c holds (NULL: nothing). */
static asr_status solve_with(const asr_cpr* robot, int problem, double* x,
                             const asr_cpr_options* opt, asr_cpr_report* report,
                             const lm_carry* c) {
    asr_status st = check_robot(robot);
    if (st == ASR_OK) st = check_options(opt);
    if (st != ASR_OK) return st;
    if (!x) return ASR_ERR_NULL;
    if (problem != ASR_CPR_IGM && problem != ASR_CPR_DGM) return ASR_ERR_RANGE;
    for (int k = 0, nx = asr_cpr_nx(robot); k < nx; ++k)
        if (!isfinite(x[k])) return ASR_ERR_INPUT;
    solver s;
    if (solver_init(&s, robot, problem, opt->n_grid, opt->threads) != 0) {
        solver_free(&s);
        return ASR_ERR_NOMEM;
    }
    if (s.nact > s.nres) { /* fewer equations than unknowns: not a well-posed model */
        solver_free(&s);
        return ASR_ERR_MODEL;
    }
    s.x = x;
    st = lm_solve(&s, opt, report, c);
    solver_free(&s);
    return st;
}

int asr_cpr_carry_size(const asr_cpr* robot, int problem) {
    int m = asr_cpr_nres(robot), n = asr_cpr_nact(robot, problem);
    if (m < 0 || n < 0) return -1;
    return m * n + n * n + S * robot->n_leg;
}

asr_status asr_cpr_solve_warm(const asr_cpr* robot, int problem, double* x,
                              const asr_cpr_options* opt, asr_cpr_report* report, double* carry,
                              int* flags) {
    if (!carry) return solve_with(robot, problem, x, opt, report, NULL);
    if (!flags) return ASR_ERR_NULL;
    asr_status st = check_robot(robot);
    if (st != ASR_OK) return st;
    if (problem != ASR_CPR_IGM && problem != ASR_CPR_DGM) return ASR_ERR_RANGE;
    int m = asr_cpr_nres(robot), n = asr_cpr_nact(robot, problem);
    int have_J = (*flags & ASR_CPR_CARRY_J) != 0;
    int have_H = have_J && (*flags & ASR_CPR_CARRY_INV) != 0;
    int have_tips = (*flags & ASR_CPR_CARRY_TIPS) != 0;
    lm_carry c = {carry, &have_J, carry + (size_t)m * n, &have_H,
                  carry + (size_t)m * n + (size_t)n * n, &have_tips};
    st = solve_with(robot, problem, x, opt, report, &c);
    if (st == ASR_OK || st == ASR_ERR_NONFINITE) /* the solve ran: its carry is what it says */
        *flags = (have_J ? ASR_CPR_CARRY_J : 0) | (have_H ? ASR_CPR_CARRY_INV : 0) |
                 (have_tips ? ASR_CPR_CARRY_TIPS : 0);
    return st;
}

asr_status asr_cpr_solve(const asr_cpr* robot, int problem, double* x,
                         const asr_cpr_options* opt, asr_cpr_report* report) {
    return solve_with(robot, problem, x, opt, report, NULL);
}

/* One target of a batch: x = the start point with the target written into it. */
static void set_target(const asr_cpr* rb, int problem, const double* target, double* x) {
    int nx = asr_cpr_nx(rb);
    if (problem == ASR_CPR_IGM) {
        memcpy(x + nx - 6, target, 6 * sizeof(double));
        return;
    }
    for (int i = 0, xo = 0; i < rb->n_leg; ++i) { /* q is the last unknown of each leg */
        xo += leg_nw(&rb->legs[i]) + 1;
        x[xo - 1] = target[i];
    }
}

typedef struct batch_job {
    const asr_cpr* robot;
    int problem, nx, width, n;
    const double* targets;
    const double* x0;
    asr_cpr_options opt;        /* threads 1: the batch's threads take whole targets */
    double* xs;
    asr_cpr_report* reports;
} batch_job;

/* Independent targets [k0, k1), each from x0. */
static asr_status solve_range(void* ctx, int k0, int k1) {
    batch_job* b = (batch_job*)ctx;
    for (int k = k0; k < k1; ++k) {
        double* x = b->xs + (size_t)k * b->nx;
        memcpy(x, b->x0, (size_t)b->nx * sizeof(double));
        set_target(b->robot, b->problem, b->targets + (size_t)k * b->width, x);
        asr_status st = asr_cpr_solve(b->robot, b->problem, x, &b->opt, b->reports + k);
        if (st != ASR_OK) return st;
    }
    return ASR_OK;
}

/* A warm-started chain: each target from the previous solution, carrying the Jacobian and (IGM:
 * the leg unknowns a target starts from are those the previous one ended with) the rod tips. */
static asr_status solve_chain(const batch_job* b, const asr_cpr_options* opt) {
    double* carry = (double*)malloc((size_t)asr_cpr_carry_size(b->robot, b->problem) * sizeof(double));
    if (!carry) return ASR_ERR_NOMEM;
    int flags = 0, keep = b->problem == ASR_CPR_IGM ? ~0 : ~ASR_CPR_CARRY_TIPS;
    asr_status st = ASR_OK;
    for (int k = 0; k < b->n && st == ASR_OK; ++k) {
        double* x = b->xs + (size_t)k * b->nx;
        memcpy(x, k ? x - b->nx : b->x0, (size_t)b->nx * sizeof(double));
        set_target(b->robot, b->problem, b->targets + (size_t)k * b->width, x);
        flags &= keep; /* the DGM moves the legs' q: the rods must be integrated again */
        st = asr_cpr_solve_warm(b->robot, b->problem, x, opt, b->reports + k, carry, &flags);
    }
    free(carry);
    return st;
}

asr_status asr_cpr_solve_batch(const asr_cpr* robot, int problem, int n, const double* targets,
                               const double* x0, int warm, const asr_cpr_options* opt,
                               double* xs, asr_cpr_report* reports) {
    asr_status st = check_robot(robot);
    if (st == ASR_OK) st = check_options(opt);
    if (st != ASR_OK) return st;
    if (!targets || !x0 || !xs || !reports) return ASR_ERR_NULL;
    if (n < 0 || (problem != ASR_CPR_IGM && problem != ASR_CPR_DGM)) return ASR_ERR_RANGE;
    batch_job b = {robot, problem, asr_cpr_nx(robot), problem == ASR_CPR_IGM ? 6 : robot->n_leg,
                   n, targets, x0, *opt, xs, reports};
    for (int k = 0; k < n; ++k) { /* what a target never attempted (after an error) reports */
        reports[k].converged = 0;
        reports[k].iterations = 0;
        reports[k].residual_norm = INFINITY;
    }
    if (warm) return solve_chain(&b, opt);
    b.opt.threads = 1;
    return asr_parallel_for(opt->threads < n ? opt->threads : (n > 0 ? n : 1), n, solve_range, &b);
}

asr_status asr_cpr_residual(const asr_cpr* robot, const double* x, int n_grid, double* res,
                            double* centerlines) {
    asr_status st = check_robot(robot);
    if (st != ASR_OK) return st;
    if (!x || !res) return ASR_ERR_NULL;
    if (n_grid < 2) return ASR_ERR_RANGE;
    int n_leg = robot->n_leg;
    solver s;
    double* buf = (double*)malloc(((size_t)(S + 6) * n_leg + (size_t)n_leg * n_grid * S) * sizeof(double));
    double** paths = (double**)malloc((size_t)n_leg * sizeof(double*));
    if (solver_init(&s, robot, ASR_CPR_IGM, n_grid, 1) != 0 || !buf || !paths) {
        solver_free(&s), free(buf), free(paths);
        return ASR_ERR_NOMEM;
    }
    double* states = buf + (size_t)(S + 6) * n_leg; /* n_leg x n_grid x 18 */
    for (int i = 0; i < n_leg; ++i) paths[i] = states + (size_t)i * n_grid * S;
    s.paths = centerlines ? paths : NULL;
    st = evaluate(&s, x, res, buf, buf + (size_t)S * n_leg);
    if (st == ASR_OK && centerlines)
        for (int i = 0; i < n_leg * n_grid; ++i) memcpy(centerlines + 3 * i, states + (size_t)S * i, 3 * sizeof(double));
    solver_free(&s), free(buf), free(paths);
    return st;
}

int asr_cpr_nact(const asr_cpr* robot, int problem) {
    int nx = asr_cpr_nx(robot);
    if (nx < 0) return -1;
    return problem == ASR_CPR_DGM ? nx - robot->n_leg : nx - 6;
}

asr_status asr_cpr_unpack(const asr_cpr* robot, int n, const double* xs, double* q,
                          double* position, double* rotation, double* base_wrenches) {
    asr_status st = check_robot(robot);
    if (st != ASR_OK) return st;
    if (!xs) return ASR_ERR_NULL;
    if (n < 0) return ASR_ERR_RANGE;
    int nx = asr_cpr_nx(robot), n_leg = robot->n_leg;
    for (int k = 0; k < n; ++k) {
        const double* x = xs + (size_t)k * nx;
        for (int i = 0, xo = 0; i < n_leg; ++i) {
            const asr_cpr_leg* leg = &robot->legs[i];
            double y0[S], L;
            int nw = leg_nw(leg);
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
