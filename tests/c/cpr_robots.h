/* cpr_robots.h - the C tests of the continuum parallel robot solver (test_cpr_*.c): Till's
 * continuum Stewart-Gough robot and the planar 3RFR built here, and checks of a solution by rods
 * integrated independently of the solver (asr_rod_integrate). */
#ifndef ASR_TEST_CPR_ROBOTS_H
#define ASR_TEST_CPR_ROBOTS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "asr.h"
#include "check.h"

enum {
    S = ASR_ROD_NSTATE,
    TILL_LEGS = 6,
    TILL_NX = 6 * 6 + 6,
    TILL_NRES = 6 * 5 + 6,
    GRID = 30,
    NPOSE = 8,
    RFR_LEGS = 3,
    RFR_NX = 3 * 7 + 6,
    RFR_NRES = 3 * 6 + 6
};

static const double PI = 3.14159265358979323846;

static inline double norm_n(const double* v, int n) {
    double a = 0.0;
    for (int k = 0; k < n; ++k) a += v[k] * v[k];
    return sqrt(a);
}

static inline asr_cpr_options options(int n_grid, double tol, int max_iter, int threads) {
    asr_cpr_options o;
    o.n_grid = n_grid;
    o.tol = tol;
    o.max_iter = max_iter;
    o.threads = threads;
    return o;
}

/* ------------------------------------------------------------------ robots */

/* Till's robot: extensible rods, free twist in the base, clamped in the plate; rod frames with
 * tangent +z (identity: 1st column x, 2nd y, 3rd z). */
static inline void build_till(asr_cpr_leg* legs, asr_cpr* robot) {
    static const double base_deg[6] = {-10, 10, 110, 130, 230, 250};
    static const double tip_deg[6] = {-50, 50, 70, 170, 190, 290};
    const double E = 207e9, rad = 0.087;
    memset(legs, 0, TILL_LEGS * sizeof *legs);
    for (int i = 0; i < TILL_LEGS; ++i) {
        asr_cpr_leg* l = &legs[i];
        l->rod.E = E;
        l->rod.G = E / (2.0 * 1.305);
        l->rod.r = 0.65e-3;
        l->rod.rho = 0.0;
        l->L = 0.0;
        l->base_joint = ASR_CPR_BASE_EXTENSIBLE;
        double a = base_deg[i] * PI / 180.0, b = tip_deg[i] * PI / 180.0;
        l->base_p[0] = rad * cos(a), l->base_p[1] = rad * sin(a);
        l->base_R[0] = l->base_R[4] = l->base_R[8] = 1.0;
        l->base_axis[2] = 1.0;
        l->free_twist = 1;
        l->tip_joint = ASR_CPR_TIP_FIXED;
        l->tip_p[0] = rad * cos(b), l->tip_p[1] = rad * sin(b);
        l->tip_R[0] = l->tip_R[4] = l->tip_R[8] = 1.0;
        l->tip_axis[2] = 1.0;
    }
    memset(robot, 0, sizeof *robot);
    robot->n_leg = TILL_LEGS;
    robot->legs = legs;
}

/* Straight-rod guess: zero base wrenches, every length L, plate at (px, py, pz), no rotation. */
static inline void till_guess(double L, double px, double py, double pz, double* x) {
    memset(x, 0, TILL_NX * sizeof(double));
    for (int i = 0; i < TILL_LEGS; ++i) x[6 * i + 5] = L;
    x[TILL_NX - 6] = px, x[TILL_NX - 5] = py, x[TILL_NX - 4] = pz;
}

/* The planar 3RFR of robots/cpr/3rfr.toml as asr/cpr.py builds it: base at radius 1 m,
 * direction d toward the centre, frame [z, d x z, d] (1st column world z), revolute about z. */
static inline void build_3rfr(asr_cpr_leg* legs, asr_cpr* robot) {
    static const double deg[3] = {90, -30, 210};
    memset(legs, 0, RFR_LEGS * sizeof *legs);
    for (int i = 0; i < RFR_LEGS; ++i) {
        asr_cpr_leg* l = &legs[i];
        double a = deg[i] * PI / 180.0, c = cos(a), s = sin(a);
        double e1[3] = {0, 0, 1}, e2[3] = {-s, c, 0}, e3[3] = {-c, -s, 0};
        l->rod.E = 200e9;
        l->rod.G = 80e9;
        l->rod.r = 1e-3;
        l->L = 1.0;
        l->base_joint = ASR_CPR_BASE_REVOLUTE;
        l->base_p[0] = c, l->base_p[1] = s;
        for (int k = 0; k < 3; ++k) {
            l->base_R[3 * k] = l->tip_R[3 * k] = e1[k];
            l->base_R[3 * k + 1] = l->tip_R[3 * k + 1] = e2[k];
            l->base_R[3 * k + 2] = l->tip_R[3 * k + 2] = e3[k];
        }
        l->base_axis[2] = 1.0;
        l->free_twist = 0;
        l->tip_joint = ASR_CPR_TIP_REVOLUTE;
        l->tip_p[0] = 0.3 * c, l->tip_p[1] = 0.3 * s;
        l->tip_axis[2] = 1.0;
    }
    memset(robot, 0, sizeof *robot);
    robot->n_leg = RFR_LEGS;
    robot->legs = legs;
}

/* ------------------------------------------------------------------ independent rod checks */

static inline void rotz(double q, double* R) {
    double c = cos(q), s = sin(q);
    const double Rz[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    memcpy(R, Rz, sizeof Rz);
}

static inline void mat_mul3(const double* A, const double* B, double* C) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            C[3 * i + j] = 0.0;
            for (int k = 0; k < 3; ++k) C[3 * i + j] += A[3 * i + k] * B[3 * k + j];
        }
}

/* Rotation matrix of a rotation vector (Rodrigues, written out here). */
static inline void rodrigues(const double* w, double* R) {
    double th = norm_n(w, 3);
    for (int k = 0; k < 9; ++k) R[k] = (k % 4 == 0);
    if (th == 0.0) return;
    double k_[3] = {w[0] / th, w[1] / th, w[2] / th};
    double K[9] = {0, -k_[2], k_[1], k_[2], 0, -k_[0], -k_[1], k_[0], 0}, K2[9];
    mat_mul3(K, K, K2);
    for (int k = 0; k < 9; ++k) R[k] += sin(th) * K[k] + (1.0 - cos(th)) * K2[k];
}

/* Rod tip state of leg i at x (layout of asr.h), integrated here from its base state. Revolute
 * and extensible bases only (the robots of this file). */
static inline asr_status leg_tip_state(const asr_cpr* robot, const double* x, int i, int n_grid,
                                       double* tip) {
    int off = 0;
    for (int k = 0; k < i; ++k) off += (robot->legs[k].free_twist ? 5 : 6) + 1;
    const asr_cpr_leg* l = &robot->legs[i];
    const double* xl = x + off;
    int nw = l->free_twist ? 5 : 6;
    double y0[S], R0[9], L = l->L, q = xl[nw];
    memcpy(R0, l->base_R, sizeof R0);
    if (l->base_joint == ASR_CPR_BASE_REVOLUTE) { /* axis z for the 3RFR */
        double Rz[9];
        rotz(q, Rz);
        mat_mul3(Rz, l->base_R, R0);
    } else if (l->base_joint == ASR_CPR_BASE_EXTENSIBLE) {
        L = q;
    }
    memcpy(y0, l->base_p, 3 * sizeof(double));
    memcpy(y0 + 3, R0, sizeof R0);
    memcpy(y0 + 12, xl, 3 * sizeof(double));
    for (int k = 0; k < 3; ++k)
        y0[15 + k] = nw == 6 ? xl[3 + k] : xl[3] * R0[3 * k] + xl[4] * R0[3 * k + 1];
    return asr_rod_integrate(&l->rod, L, y0, n_grid, tip, NULL);
}

typedef struct leg_errors {
    double pos;           /* max |tip - (P + Rp tip_p)|, m */
    double tangent;       /* max |tip tangent direction - plate (Rp tip_R) tangent| */
    double force, moment; /* |sum of tip wrenches on the plate| */
    double nmax;          /* max |n| at the rod tips, N */
    int ok;               /* every rod integrated */
} leg_errors;

/* Integrate every rod of x here and compare with the plate pose x holds: tip positions and
 * tangents, and the plate equilibrium (no gravity or external wrench in these robots). */
static inline leg_errors plate_check(const asr_cpr* robot, const double* x, int nx, int n_grid,
                                     double* tips) {
    leg_errors e = {0, 0, 0, 0, 0, 1};
    const double* P = x + nx - 6;
    double Rp[9], F[3] = {0, 0, 0}, M[3] = {0, 0, 0};
    rodrigues(x + nx - 3, Rp);
    for (int i = 0; i < robot->n_leg; ++i) {
        const asr_cpr_leg* l = &robot->legs[i];
        double* y = tips + S * i;
        if (leg_tip_state(robot, x, i, n_grid, y) != ASR_OK) e.ok = 0;
        double a[3], RJ[9];
        for (int k = 0; k < 3; ++k)
            a[k] = P[k] + Rp[3 * k] * l->tip_p[0] + Rp[3 * k + 1] * l->tip_p[1] +
                   Rp[3 * k + 2] * l->tip_p[2];
        mat_mul3(Rp, l->tip_R, RJ);
        /* RK4 does not keep R orthonormal (|tangent| - 1 ~ 5e-10 at 30 points): compare the
         * tangent's direction */
        double tn = sqrt(y[5] * y[5] + y[8] * y[8] + y[11] * y[11]);
        for (int k = 0; k < 3; ++k) {
            e.pos = fmax(e.pos, fabs(y[k] - a[k]));
            e.tangent = fmax(e.tangent, fabs(y[3 + 3 * k + 2] / tn - RJ[3 * k + 2]));
        }
        const double *p = y, *n = y + 12, *m = y + 15;
        double arm[3] = {p[0] - P[0], p[1] - P[1], p[2] - P[2]};
        double t[3] = {arm[1] * n[2] - arm[2] * n[1], arm[2] * n[0] - arm[0] * n[2],
                       arm[0] * n[1] - arm[1] * n[0]};
        for (int k = 0; k < 3; ++k) {
            F[k] -= n[k];
            M[k] -= m[k] + t[k];
        }
        e.nmax = fmax(e.nmax, norm_n(n, 3));
    }
    e.force = norm_n(F, 3);
    e.moment = norm_n(M, 3);
    return e;
}

/* |residual| at x from asr_cpr_residual (NAN on error). */
static inline double residual_norm_at(const asr_cpr* robot, const double* x, int n_grid) {
    double r[64];
    int nres = asr_cpr_nres(robot);
    if (nres < 1 || nres > 64 || asr_cpr_residual(robot, x, n_grid, r, NULL) != ASR_OK) return NAN;
    return norm_n(r, nres);
}

static inline int all_finite(const double* v, int n) {
    for (int k = 0; k < n; ++k)
        if (!isfinite(v[k])) return 0;
    return 1;
}
#endif
