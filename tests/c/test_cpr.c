/* test_cpr.c - the continuum parallel robot solver (csrc/cpr/: cpr.c, cpr_legs.c, linalg.c) through
 * its public API (asr.h, "continuum parallel robots"), against facts that do not come from the
 * solver itself.
 *
 * - Till's continuum Stewart-Gough robot (docs/cpr.md; robots/cpr/stewart_till.toml), built here:
 *   the inverse problem at (0, 0, 0.4) from straight rods converges, and the rods integrated
 *   here with asr_rod_integrate from the solved base states end at the plate holes, tangent to
 *   the plate normal, with the plate in equilibrium (sum of the rods' tip wrenches ~0); the
 *   six lengths are equal (the hole pattern is symmetric under 120-degree turns and a mirror)
 *   and longer than the straight hole-to-hole distance; the reported residual norm is that of
 *   asr_cpr_residual at the returned x. Rod frames turned about their tangents (free twist,
 *   isotropic rods) give the same lengths and base forces.
 * - The direct problem from those lengths, started from a perturbed plate, returns the pose.
 * - Batches: warm chains and independent targets give bit-identical results on 1 and 2
 *   threads, an independent target equals a separate solve from the same start, the chain and
 *   the independent solves find the same roots, and a DGM batch of the lengths gives the poses
 *   back.
 * - asr_cpr_solve_warm: a carried Jacobian (the previous pose's, or a wrong one, with or
 *   without its inverse) and rod tips do not change the root; the carried tips are the rods
 *   integrated at the final x.
 * - Bad input: status codes, never a crash; an unreachable pose or too few iterations report
 *   converged 0 with a consistent residual norm.
 * - The planar 3RFR (robots/cpr/3rfr.toml), a least-squares system (fewer unknowns than
 *   equations): the inverse problem at (0.05, 0, 0) stays in its plane, meets the revolute
 *   joints (no moment about z at the tips), and the direct problem gives the pose back; at home
 *   the three joint angles are equal (3-fold symmetry).
 * - Eight straight free-twist legs: the DGM finds the closed-form pose (and the sanitizer build
 *   checks the solver's work space for a robot unlike Till's).
 *
 * Build: see tests/test_c_core.py (strict warnings; again under ASan + UBSan). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "asr.h"
#include "check.h"

enum { S = ASR_ROD_NSTATE, TILL_LEGS = 6, TILL_NX = 6 * 6 + 6, TILL_NRES = 6 * 5 + 6, GRID = 30,
       NPOSE = 8, RFR_LEGS = 3, RFR_NX = 3 * 7 + 6, RFR_NRES = 3 * 6 + 6 };

static const double PI = 3.14159265358979323846;

static int close_to(double a, double b, double rel, double abs_tol) {
    return fabs(a - b) <= abs_tol + rel * fabs(b);
}

static double norm_n(const double* v, int n) {
    double a = 0.0;
    for (int k = 0; k < n; ++k) a += v[k] * v[k];
    return sqrt(a);
}

static asr_cpr_options options(int n_grid, double tol, int max_iter, int threads) {
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
static void build_till(asr_cpr_leg* legs, asr_cpr* robot) {
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
static void till_guess(double L, double px, double py, double pz, double* x) {
    memset(x, 0, TILL_NX * sizeof(double));
    for (int i = 0; i < TILL_LEGS; ++i) x[6 * i + 5] = L;
    x[TILL_NX - 6] = px, x[TILL_NX - 5] = py, x[TILL_NX - 4] = pz;
}

/* The planar 3RFR of robots/cpr/3rfr.toml as asr/cpr.py builds it: base at radius 1 m,
 * direction d toward the centre, frame [z, d x z, d] (1st column world z), revolute about z. */
static void build_3rfr(asr_cpr_leg* legs, asr_cpr* robot) {
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

static void rotz(double q, double* R) {
    double c = cos(q), s = sin(q);
    const double Rz[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    memcpy(R, Rz, sizeof Rz);
}

static void mat_mul3(const double* A, const double* B, double* C) {
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            C[3 * i + j] = 0.0;
            for (int k = 0; k < 3; ++k) C[3 * i + j] += A[3 * i + k] * B[3 * k + j];
        }
}

/* Rotation matrix of a rotation vector (Rodrigues, written out here). */
static void rodrigues(const double* w, double* R) {
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
static asr_status leg_tip_state(const asr_cpr* robot, const double* x, int i, int n_grid,
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
    double pos;                 /* max |tip - (P + Rp tip_p)|, m */
    double tangent;             /* max |tip tangent direction - plate (Rp tip_R) tangent| */
    double force, moment;       /* |sum of tip wrenches on the plate| */
    double nmax;                /* max |n| at the rod tips, N */
    int ok;                     /* every rod integrated */
} leg_errors;

/* Integrate every rod of x here and compare with the plate pose x holds: tip positions and
 * tangents, and the plate equilibrium (no gravity or external wrench in these robots). */
static leg_errors plate_check(const asr_cpr* robot, const double* x, int nx, int n_grid,
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
        for (int k = 0; k < 3; ++k) a[k] = P[k] + Rp[3 * k] * l->tip_p[0] + Rp[3 * k + 1] * l->tip_p[1] + Rp[3 * k + 2] * l->tip_p[2];
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
        double t[3] = {arm[1] * n[2] - arm[2] * n[1], arm[2] * n[0] - arm[0] * n[2], arm[0] * n[1] - arm[1] * n[0]};
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
static double residual_norm_at(const asr_cpr* robot, const double* x, int n_grid) {
    double r[64];
    int nres = asr_cpr_nres(robot);
    if (nres < 1 || nres > 64 || asr_cpr_residual(robot, x, n_grid, r, NULL) != ASR_OK) return NAN;
    return norm_n(r, nres);
}

static int all_finite(const double* v, int n) {
    for (int k = 0; k < n; ++k)
        if (!isfinite(v[k])) return 0;
    return 1;
}

/* ------------------------------------------------------------------ Till's robot */

static double till_x[TILL_NX];  /* the IGM at (0, 0, 0.4), set by test_till_igm */
static int till_ok;

static void test_till_sizes(void) {
    asr_cpr_leg legs[TILL_LEGS];
    asr_cpr robot;
    build_till(legs, &robot);
    CHECK(asr_cpr_nx(&robot) == TILL_NX);
    CHECK(asr_cpr_nres(&robot) == TILL_NRES);
    CHECK(asr_cpr_nact(&robot, ASR_CPR_IGM) == TILL_NX - 6);
    CHECK(asr_cpr_nact(&robot, ASR_CPR_DGM) == TILL_NX - TILL_LEGS);
}

static void test_till_igm(void) {
    asr_cpr_leg legs[TILL_LEGS];
    asr_cpr robot;
    build_till(legs, &robot);
    asr_cpr_options opt = options(GRID, 1e-10, 100, 1);
    asr_cpr_report rep = {-1, -1, NAN};
    double x[TILL_NX], tips[TILL_LEGS * S];
    till_guess(0.4, 0.0, 0.0, 0.4, x);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &opt, &rep), ASR_OK);
    CHECK(rep.converged == 1);
    CHECK(rep.residual_norm < opt.tol);
    CHECK(rep.iterations >= 1 && rep.iterations <= opt.max_iter);
    printf("till IGM: %d iterations, residual %.3g\n", rep.iterations, rep.residual_norm);
    /* the IGM keeps the plate part of x */
    const double plate[6] = {0, 0, 0.4, 0, 0, 0};
    CHECK(memcmp(x + TILL_NX - 6, plate, sizeof plate) == 0);
    /* the reported norm is the residual's at the returned x */
    CHECK(close_to(residual_norm_at(&robot, x, GRID), rep.residual_norm, 1e-6, 1e-15));

    leg_errors e = plate_check(&robot, x, TILL_NX, GRID, tips);
    printf("till IGM: tip position error %.3g m, tangent %.3g, plate force %.3g N, moment %.3g "
           "N m (rod force scale %.3g N)\n", e.pos, e.tangent, e.force, e.moment, e.nmax);
    CHECK(e.ok);
    CHECK(e.nmax > 1e-3); /* the rods are loaded: the plate holes are turned from the base's */
    CHECK(e.pos < 1e-9);
    CHECK(e.tangent < 1e-9);
    CHECK(e.force < 1e-8 * e.nmax);
    CHECK(e.moment < 1e-8 * e.nmax * 0.087);
    /* no twisting moment at the base (free twist): m0 has no z component by construction, and
     * the rods are straight along z in the base hole */
    double minL = INFINITY, maxL = 0.0;
    for (int i = 0; i < TILL_LEGS; ++i) {
        minL = fmin(minL, x[6 * i + 5]);
        maxL = fmax(maxL, x[6 * i + 5]);
    }
    printf("till IGM: lengths %.12f .. %.12f m\n", minL, maxL);
    CHECK(maxL - minL <= 1e-9 * maxL);
    /* straight hole-to-hole distance: chord of 40 degrees at 0.087 m, 0.4 m up */
    double chord = 2.0 * 0.087 * sin(20.0 * PI / 180.0), straight = sqrt(chord * chord + 0.16);
    CHECK(minL > straight - 1e-6);
    CHECK(maxL < straight + 0.05);
    /* the mirror pair (legs 0 and 1: base -10/+10, plate -50/+50) has mirrored base forces */
    CHECK(close_to(x[0], x[6], 1e-7, 1e-12) && close_to(x[1], -x[7], 1e-7, 1e-12) &&
          close_to(x[2], x[8], 1e-7, 1e-12));
    memcpy(till_x, x, sizeof x);
    till_ok = rep.converged;

    /* report NULL is allowed: the same solve, the same x */
    double x2[TILL_NX];
    till_guess(0.4, 0.0, 0.0, 0.4, x2);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x2, &opt, NULL), ASR_OK);
    CHECK(memcmp(x2, x, sizeof x) == 0);
}

static void test_till_dgm(void) {
    asr_cpr_leg legs[TILL_LEGS];
    asr_cpr robot;
    build_till(legs, &robot);
    asr_cpr_options opt = options(GRID, 1e-10, 100, 1);
    asr_cpr_report rep = {-1, -1, NAN};
    double x[TILL_NX], tips[TILL_LEGS * S];
    memcpy(x, till_x, sizeof x);
    const double start[6] = {0.003, -0.002, 0.405, 0.01, -0.02, 0.015};
    memcpy(x + TILL_NX - 6, start, sizeof start);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_DGM, x, &opt, &rep), ASR_OK);
    CHECK(rep.converged == 1 && rep.residual_norm < opt.tol);
    CHECK(rep.iterations >= 1 && rep.iterations <= opt.max_iter);
    printf("till DGM: %d iterations, residual %.3g, pose error %.3g m, %.3g rad\n", rep.iterations,
           rep.residual_norm, fmax(fmax(fabs(x[TILL_NX - 6]), fabs(x[TILL_NX - 5])), fabs(x[TILL_NX - 4] - 0.4)),
           norm_n(x + TILL_NX - 3, 3));
    CHECK(fabs(x[TILL_NX - 6]) < 1e-9 && fabs(x[TILL_NX - 5]) < 1e-9 && fabs(x[TILL_NX - 4] - 0.4) < 1e-9);
    CHECK(norm_n(x + TILL_NX - 3, 3) < 1e-9);
    /* the DGM keeps every q */
    int same_q = 1;
    for (int i = 0; i < TILL_LEGS; ++i) same_q &= memcmp(&x[6 * i + 5], &till_x[6 * i + 5], sizeof(double)) == 0;
    CHECK(same_q);
    leg_errors e = plate_check(&robot, x, TILL_NX, GRID, tips);
    CHECK(e.ok && e.pos < 1e-9 && e.force < 1e-8 * e.nmax);
}

/* Free twist and isotropic rods: turning each rod's base and tip frames about its tangent
 * changes nothing physical, so the lengths stay those of identity frames (m0 is then along
 * other base-frame columns: this checks that they are columns, as asr.h says). */
static void test_till_turned_frames(void) {
    asr_cpr_leg legs[TILL_LEGS];
    asr_cpr robot;
    build_till(legs, &robot);
    for (int i = 0; i < TILL_LEGS; ++i) {
        rotz(0.5 * (i + 1), legs[i].base_R);
        rotz(-0.3 * i - 0.2, legs[i].tip_R);
    }
    asr_cpr_options opt = options(GRID, 1e-10, 100, 1);
    asr_cpr_report rep = {-1, -1, NAN};
    double x[TILL_NX], tips[TILL_LEGS * S];
    till_guess(0.4, 0.0, 0.0, 0.4, x);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &opt, &rep), ASR_OK);
    CHECK(rep.converged == 1);
    double dl = 0.0, dn = 0.0;
    for (int i = 0; i < TILL_LEGS; ++i) {
        dl = fmax(dl, fabs(x[6 * i + 5] - till_x[6 * i + 5]));
        for (int k = 0; k < 3; ++k) dn = fmax(dn, fabs(x[6 * i + k] - till_x[6 * i + k]));
    }
    leg_errors e = plate_check(&robot, x, TILL_NX, GRID, tips);
    printf("till turned frames: %d iterations, lengths differ by %.3g m, base forces by %.3g N\n",
           rep.iterations, dl, dn);
    CHECK(dl < 1e-9);
    CHECK(dn < 1e-8 * e.nmax);
    CHECK(e.ok && e.pos < 1e-9 && e.tangent < 1e-9 && e.force < 1e-8 * e.nmax);
}

/* NPOSE targets moving by 1 mm in y and z from (0, 0, 0.4). */
static void till_poses(double* targets) {
    memset(targets, 0, NPOSE * 6 * sizeof(double));
    for (int k = 0; k < NPOSE; ++k) {
        targets[6 * k + 1] = 0.001 * k;
        targets[6 * k + 2] = 0.4 + 0.001 * k;
    }
}

static void test_till_batch(void) {
    asr_cpr_leg legs[TILL_LEGS];
    asr_cpr robot;
    build_till(legs, &robot);
    double targets[NPOSE * 6], x0[TILL_NX];
    static double xs1[NPOSE * TILL_NX], xs2[NPOSE * TILL_NX], xc1[NPOSE * TILL_NX],
        xc2[NPOSE * TILL_NX], xd[NPOSE * TILL_NX];
    asr_cpr_report r1[NPOSE], r2[NPOSE], c1[NPOSE], c2[NPOSE], rd[NPOSE];
    till_poses(targets);
    memcpy(x0, till_x, sizeof x0);
    asr_cpr_options opt1 = options(GRID, 1e-10, 100, 1), opt2 = options(GRID, 1e-10, 100, 2);

    /* warm chain */
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 1, &opt1, xs1, r1), ASR_OK);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 1, &opt2, xs2, r2), ASR_OK);
    CHECK(memcmp(xs1, xs2, sizeof xs1) == 0);
    int conv = 1, iters = 0, pose_kept = 1;
    double worst_res = 0.0, worst_eq = 0.0;
    for (int k = 0; k < NPOSE; ++k) {
        conv &= r1[k].converged == 1 && r1[k].residual_norm < opt1.tol && r2[k].converged == 1;
        conv &= r1[k].iterations == r2[k].iterations;
        iters += r1[k].iterations;
        worst_res = fmax(worst_res, r1[k].residual_norm);
        pose_kept &= memcmp(xs1 + (size_t)k * TILL_NX + TILL_NX - 6, targets + 6 * k, 6 * sizeof(double)) == 0;
        double tips[TILL_LEGS * S];
        leg_errors e = plate_check(&robot, xs1 + (size_t)k * TILL_NX, TILL_NX, GRID, tips);
        /* tip positions (m) and the plate's force and moment relative to the rods' forces
         * (these poses are not symmetric: no term of the equilibrium vanishes by symmetry) */
        worst_eq = fmax(worst_eq, fmax(e.pos, fmax(e.force / e.nmax, e.moment / (0.087 * e.nmax))));
        worst_eq = fmax(worst_eq, e.tangent);
    }
    printf("till batch (warm): %d iterations over %d poses, worst residual %.3g, worst tip/eq "
           "error %.3g\n", iters, NPOSE, worst_res, worst_eq);
    CHECK(conv);
    CHECK(pose_kept);
    CHECK(worst_eq < 1e-8);
    /* a mm step changes the lengths (the chain did move) */
    CHECK(fabs(xs1[(size_t)(NPOSE - 1) * TILL_NX + 5] - xs1[5]) > 1e-3);

    /* independent targets: thread count, separate solves, and the chain's roots */
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 0, &opt1, xc1, c1), ASR_OK);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 0, &opt2, xc2, c2), ASR_OK);
    CHECK(memcmp(xc1, xc2, sizeof xc1) == 0);
    int same_as_single = 1, conv0 = 1;
    double root_diff = 0.0;
    for (int k = 0; k < NPOSE; ++k) {
        double x[TILL_NX];
        asr_cpr_report rep;
        memcpy(x, x0, sizeof x);
        memcpy(x + TILL_NX - 6, targets + 6 * k, 6 * sizeof(double));
        CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &opt1, &rep), ASR_OK);
        same_as_single &= memcmp(x, xc1 + (size_t)k * TILL_NX, sizeof x) == 0;
        same_as_single &= rep.iterations == c1[k].iterations && rep.converged == c1[k].converged;
        conv0 &= c1[k].converged == 1 && c2[k].converged == 1;
        for (int i = 0; i < TILL_LEGS; ++i)
            root_diff = fmax(root_diff, fabs(xc1[(size_t)k * TILL_NX + 6 * i + 5] - xs1[(size_t)k * TILL_NX + 6 * i + 5]));
    }
    printf("till batch: warm vs cold lengths differ by %.3g m at most\n", root_diff);
    CHECK(same_as_single);
    CHECK(conv0);
    CHECK(root_diff < 1e-9);
    /* pose 0 of the batch is the IGM at (0, 0, 0.4) */
    double d0 = 0.0;
    for (int i = 0; i < TILL_LEGS; ++i) d0 = fmax(d0, fabs(xs1[6 * i + 5] - till_x[6 * i + 5]));
    CHECK(d0 < 1e-9);

    /* DGM batch of the lengths, a warm chain from the first IGM (and a perturbed plate) */
    double q[NPOSE * TILL_LEGS], xd0[TILL_NX];
    for (int k = 0; k < NPOSE; ++k)
        for (int i = 0; i < TILL_LEGS; ++i) q[TILL_LEGS * k + i] = xs1[(size_t)k * TILL_NX + 6 * i + 5];
    memcpy(xd0, till_x, sizeof xd0);
    xd0[TILL_NX - 5] = -0.002, xd0[TILL_NX - 1] = 0.01;
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_DGM, NPOSE, q, xd0, 1, &opt1, xd, rd), ASR_OK);
    double pose_err = 0.0;
    int conv_d = 1, q_kept = 1;
    for (int k = 0; k < NPOSE; ++k) {
        conv_d &= rd[k].converged == 1;
        for (int j = 0; j < 6; ++j)
            pose_err = fmax(pose_err, fabs(xd[(size_t)k * TILL_NX + TILL_NX - 6 + j] - targets[6 * k + j]));
        for (int i = 0; i < TILL_LEGS; ++i) q_kept &= xd[(size_t)k * TILL_NX + 6 * i + 5] == q[TILL_LEGS * k + i];
    }
    printf("till DGM batch: pose error %.3g\n", pose_err);
    CHECK(conv_d);
    CHECK(q_kept);
    CHECK(pose_err < 1e-9);
}

static void test_till_carry(void) {
    asr_cpr_leg legs[TILL_LEGS];
    asr_cpr robot;
    build_till(legs, &robot);
    asr_cpr_options opt = options(GRID, 1e-10, 100, 1);
    enum { NA = TILL_NX - 6, CARRY = TILL_NRES * NA + NA * NA + TILL_LEGS * S };
    static double carry[CARRY];
    double* J = carry;
    double* H = carry + TILL_NRES * NA;
    double* tips = H + NA * NA;
    double xa[TILL_NX], xb[TILL_NX], xr[TILL_NX], xw[TILL_NX];
    asr_cpr_report ra, rb, rr, rw;
    int flags = 0;
    CHECK(asr_cpr_carry_size(&robot, ASR_CPR_IGM) == CARRY);
    CHECK(asr_cpr_carry_size(NULL, ASR_CPR_IGM) < 0);

    /* pose A from the first IGM's x, carrying J, its inverse and the tips out */
    memcpy(xa, till_x, sizeof xa);
    xa[TILL_NX - 5] = 0.002, xa[TILL_NX - 4] = 0.402;
    CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_IGM, xa, &opt, &ra, carry, &flags), ASR_OK);
    CHECK(ra.converged == 1);
    CHECK((flags & ASR_CPR_CARRY_TIPS) != 0);
    printf("till carry: pose A %d iterations, flags %d\n", ra.iterations, flags);
    /* the carried tips are the rods at the final x */
    double mine[TILL_LEGS * S], tip_diff = 0.0;
    leg_errors e = plate_check(&robot, xa, TILL_NX, GRID, mine);
    CHECK(e.ok);
    for (int k = 0; k < TILL_LEGS * S; ++k) tip_diff = fmax(tip_diff, fabs(mine[k] - tips[k]) / (1.0 + fabs(mine[k])));
    CHECK(tip_diff < 1e-12);

    /* pose B with the carried J (from A) and tips, against a plain solve */
    CHECK((flags & ASR_CPR_CARRY_J) != 0);
    memcpy(xb, xa, sizeof xb);
    xb[TILL_NX - 5] = 0.003, xb[TILL_NX - 4] = 0.403;
    memcpy(xr, xb, sizeof xr);
    memcpy(xw, xb, sizeof xw);
    CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_IGM, xb, &opt, &rb, carry, &flags), ASR_OK);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, xr, &opt, &rr), ASR_OK);
    CHECK(rb.converged == 1 && rr.converged == 1);
    double dl = 0.0;
    for (int i = 0; i < TILL_LEGS; ++i) dl = fmax(dl, fabs(xb[6 * i + 5] - xr[6 * i + 5]));
    printf("till carry: pose B %d iterations carried, %d plain; lengths differ by %.3g m\n",
           rb.iterations, rr.iterations, dl);
    CHECK(dl < 1e-9);
    CHECK(rb.iterations <= rr.iterations + 2);
    /* carry NULL: as asr_cpr_solve, bit for bit */
    double xn[TILL_NX];
    memcpy(xn, xw, sizeof xn);
    CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_IGM, xn, &opt, &rw, NULL, NULL), ASR_OK);
    CHECK(memcmp(xn, xr, sizeof xn) == 0);

    /* a wrong Jacobian (identity), then a wrong inverse too, claimed valid: the same root */
    for (int pass = 0; pass < 2; ++pass) {
        memset(carry, 0, sizeof carry);
        for (int k = 0; k < NA; ++k) J[(size_t)k * TILL_NRES + k] = H[(size_t)k * NA + k] = 1.0;
        flags = pass ? ASR_CPR_CARRY_J | ASR_CPR_CARRY_INV : ASR_CPR_CARRY_J;
        memcpy(xn, xw, sizeof xn);
        CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_IGM, xn, &opt, &rw, carry, &flags), ASR_OK);
        CHECK(rw.converged == 1);
        dl = 0.0;
        for (int i = 0; i < TILL_LEGS; ++i) dl = fmax(dl, fabs(xn[6 * i + 5] - xr[6 * i + 5]));
        printf("till carry: wrong J%s, %d iterations, lengths differ by %.3g m\n",
               pass ? " and inverse" : "", rw.iterations, dl);
        CHECK(dl < 1e-9);
    }
}

/* ------------------------------------------------------------------ bad input */

static void test_bad_input(void) {
    asr_cpr_leg legs[TILL_LEGS], bad_legs[TILL_LEGS];
    asr_cpr robot, bad;
    build_till(legs, &robot);
    asr_cpr_options opt = options(GRID, 1e-10, 100, 1), o;
    asr_cpr_report rep;
    double x[TILL_NX], y[TILL_NX];
    static double carry[TILL_NRES * (TILL_NX - 6) * 2 + TILL_LEGS * S];
    int flags = 0;
    memcpy(x, till_x, sizeof x);

    CHECK(asr_cpr_nx(NULL) < 0 && asr_cpr_nres(NULL) < 0 && asr_cpr_nact(NULL, ASR_CPR_IGM) < 0);
    CHECK_ST(asr_cpr_solve(NULL, ASR_CPR_IGM, x, &opt, &rep), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, NULL, &opt, &rep), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, NULL, &rep), ASR_ERR_NULL);
    bad = robot;
    bad.legs = NULL;
    CHECK_ST(asr_cpr_solve(&bad, ASR_CPR_IGM, x, &opt, &rep), ASR_ERR_NULL);
    CHECK(asr_cpr_nx(&bad) < 0);
    bad = robot;
    bad.n_leg = 0;
    CHECK_ST(asr_cpr_solve(&bad, ASR_CPR_IGM, x, &opt, &rep), ASR_ERR_RANGE);
    o = opt, o.n_grid = 1;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &o, &rep), ASR_ERR_RANGE);
    o = opt, o.tol = 0.0;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &o, &rep), ASR_ERR_RANGE);
    o = opt, o.tol = -1.0;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &o, &rep), ASR_ERR_RANGE);
    o = opt, o.tol = NAN;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &o, &rep), ASR_ERR_RANGE);
    o = opt, o.max_iter = 0;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &o, &rep), ASR_ERR_RANGE);
    o = opt, o.threads = 0;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &o, &rep), ASR_ERR_RANGE);
    CHECK_ST(asr_cpr_solve(&robot, 2, x, &opt, &rep), ASR_ERR_RANGE);
    CHECK_ST(asr_cpr_solve(&robot, -1, x, &opt, &rep), ASR_ERR_RANGE);
    /* non-finite x, anywhere: an input error, x untouched */
    for (int pos = 0; pos < TILL_NX; pos += 7) {
        memcpy(y, x, sizeof y);
        y[pos] = pos % 2 ? INFINITY : NAN;
        CHECK_ST(asr_cpr_solve(&robot, pos % 3 ? ASR_CPR_IGM : ASR_CPR_DGM, y, &opt, &rep), ASR_ERR_INPUT);
        CHECK(memcmp(y, x, (size_t)pos * sizeof(double)) == 0);
    }
    /* bad joint enums, free twist on a non-fixed tip */
    memcpy(bad_legs, legs, sizeof legs);
    bad = robot;
    bad.legs = bad_legs;
    bad_legs[3].base_joint = 3;
    CHECK_ST(asr_cpr_solve(&bad, ASR_CPR_IGM, x, &opt, &rep), ASR_ERR_MODEL);
    bad_legs[3].base_joint = -1;
    CHECK_ST(asr_cpr_solve(&bad, ASR_CPR_IGM, x, &opt, &rep), ASR_ERR_MODEL);
    bad_legs[3] = legs[3];
    bad_legs[5].tip_joint = 4;
    CHECK_ST(asr_cpr_solve(&bad, ASR_CPR_DGM, x, &opt, &rep), ASR_ERR_MODEL);
    bad_legs[5].tip_joint = ASR_CPR_TIP_SPHERICAL; /* free_twist still 1 */
    CHECK_ST(asr_cpr_solve(&bad, ASR_CPR_IGM, x, &opt, &rep), ASR_ERR_MODEL);
    CHECK_ST(asr_cpr_solve_batch(&bad, ASR_CPR_IGM, 1, x + TILL_NX - 6, x, 0, &opt, y, &rep), ASR_ERR_MODEL);
    bad_legs[5].tip_joint = ASR_CPR_TIP_REVOLUTE;
    CHECK_ST(asr_cpr_residual(&bad, x, GRID, y, NULL), ASR_ERR_MODEL);
    /* seven legs: more IGM unknowns than equations */
    asr_cpr_leg seven[7];
    memcpy(seven, legs, sizeof legs);
    seven[6] = legs[0];
    seven[6].base_p[0] = 0.0;
    bad = robot;
    bad.legs = seven;
    bad.n_leg = 7;
    double x7[7 * 6 + 6];
    memset(x7, 0, sizeof x7);
    for (int i = 0; i < 7; ++i) x7[6 * i + 5] = 0.4;
    x7[7 * 6 + 2] = 0.4;
    CHECK(asr_cpr_nact(&bad, ASR_CPR_IGM) > asr_cpr_nres(&bad));
    CHECK_ST(asr_cpr_solve(&bad, ASR_CPR_IGM, x7, &opt, &rep), ASR_ERR_MODEL);

    /* carried buffers without their flags */
    CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_IGM, x, &opt, &rep, carry, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_DGM, x, &opt, &rep, carry, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_warm(NULL, ASR_CPR_IGM, x, &opt, &rep, carry, &flags), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_warm(&robot, 5, x, &opt, &rep, carry, &flags), ASR_ERR_RANGE);
    CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_IGM, x, NULL, &rep, carry, &flags), ASR_ERR_NULL);
    o = opt, o.n_grid = 0;
    CHECK_ST(asr_cpr_solve_warm(&robot, ASR_CPR_IGM, x, &o, &rep, carry, &flags), ASR_ERR_RANGE);
    CHECK(flags == 0); /* an argument error leaves the flags */
    CHECK(memcmp(x, till_x, sizeof x) == 0);

    /* residual */
    CHECK_ST(asr_cpr_residual(NULL, x, GRID, y, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_residual(&robot, NULL, GRID, y, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_residual(&robot, x, GRID, NULL, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_residual(&robot, x, 1, y, NULL), ASR_ERR_RANGE);

    /* batch arguments */
    double targets[NPOSE * 6], xs[3 * TILL_NX];
    asr_cpr_report reps[3];
    till_poses(targets); /* the first 3 of the NPOSE poses */
    double t3[3 * 6];
    memcpy(t3, targets, sizeof t3);
    CHECK_ST(asr_cpr_solve_batch(NULL, ASR_CPR_IGM, 3, t3, x, 0, &opt, xs, reps), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, NULL, x, 0, &opt, xs, reps), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, NULL, 0, &opt, xs, reps), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, x, 0, &opt, NULL, reps), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, x, 0, &opt, xs, NULL), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, x, 0, NULL, xs, reps), ASR_ERR_NULL);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, -1, t3, x, 0, &opt, xs, reps), ASR_ERR_RANGE);
    CHECK_ST(asr_cpr_solve_batch(&robot, 7, 3, t3, x, 0, &opt, xs, reps), ASR_ERR_RANGE);
    o = opt, o.threads = 0;
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, x, 1, &o, xs, reps), ASR_ERR_RANGE);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 0, t3, x, 1, &opt, xs, reps), ASR_OK);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 0, t3, x, 0, &opt, xs, reps), ASR_OK);

    /* a NaN target (the 2nd of 3): an input error; the 1st is solved, the NaN one and (one
     * thread, in order) the 3rd report never attempted, never converged */
    t3[6 + 1] = NAN;
    for (int warm = 0; warm <= 1; ++warm) {
        for (int k = 0; k < 3; ++k) reps[k].converged = -1;
        CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, x, warm, &opt, xs, reps), ASR_ERR_INPUT);
        CHECK(reps[0].converged == 1);
        CHECK(reps[1].converged == 0 && reps[1].iterations == 0 && isinf(reps[1].residual_norm));
        CHECK(reps[2].converged == 0 && reps[2].iterations == 0 && isinf(reps[2].residual_norm));
    }
    /* two threads: the first error still comes back, the NaN target never converges */
    o = opt, o.threads = 2;
    for (int k = 0; k < 3; ++k) reps[k].converged = -1;
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, x, 0, &o, xs, reps), ASR_ERR_INPUT);
    CHECK(reps[0].converged == 1 && reps[1].converged == 0);
    CHECK(reps[2].converged == 0 || reps[2].converged == 1);
    /* a NaN joint value in a DGM batch */
    double qd[2 * TILL_LEGS];
    for (int i = 0; i < TILL_LEGS; ++i) qd[i] = qd[TILL_LEGS + i] = till_x[6 * i + 5];
    qd[TILL_LEGS + 2] = NAN;
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_DGM, 2, qd, x, 1, &opt, xs, reps), ASR_ERR_INPUT);
    CHECK(reps[0].converged == 1 && reps[1].converged == 0);

    /* too few iterations: not converged, with a consistent report */
    till_guess(0.4, 0.0, 0.0, 0.4, y);
    o = opt, o.max_iter = 1;
    rep.converged = -1, rep.iterations = -1, rep.residual_norm = NAN;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, y, &o, &rep), ASR_OK);
    CHECK(rep.converged == 0 && rep.iterations == 1);
    CHECK(rep.residual_norm >= o.tol && isfinite(rep.residual_norm));
    CHECK(close_to(residual_norm_at(&robot, y, GRID), rep.residual_norm, 1e-6, 1e-15));
    CHECK(all_finite(y, TILL_NX));
}

/* An unreachable pose: never reported as converged with a NaN or large residual. */
static void check_unreachable(const asr_cpr* robot, double* x, int nx, const char* what) {
    asr_cpr_options opt = options(GRID, 1e-10, 60, 1);
    asr_cpr_report rep = {-1, -1, NAN};
    int st = asr_cpr_solve(robot, ASR_CPR_IGM, x, &opt, &rep);
    printf("unreachable %s: status %d, converged %d, %d iterations, residual %.3g\n", what, st,
           rep.converged, rep.iterations, rep.residual_norm);
    CHECK(st == ASR_OK || st == ASR_ERR_NONFINITE || st == ASR_ERR_RANGE);
    if (st == ASR_OK) {
        CHECK(rep.converged == 0);
        CHECK(!isnan(rep.residual_norm) && rep.residual_norm >= opt.tol);
        CHECK(rep.iterations >= 0 && rep.iterations <= opt.max_iter);
        CHECK(all_finite(x, nx));
    } else {
        CHECK(rep.converged != 1);
    }
}

static void test_unreachable(void) {
    asr_cpr_leg legs[RFR_LEGS > TILL_LEGS ? RFR_LEGS : TILL_LEGS];
    asr_cpr robot;
    double x[TILL_NX > RFR_NX ? TILL_NX : RFR_NX];
    /* 3RFR: 1 m rods from a 1 m base circle cannot put the plate 5 m away */
    build_3rfr(legs, &robot);
    memset(x, 0, sizeof x);
    x[RFR_NX - 6] = 5.0;
    check_unreachable(&robot, x, RFR_NX, "3rfr at x = 5 m");
    /* Till's robot turned upside down: plate 1 m below the base, rotated by pi about x */
    build_till(legs, &robot);
    till_guess(0.4, 0.0, 0.0, -1.0, x);
    x[TILL_NX - 3] = PI;
    check_unreachable(&robot, x, TILL_NX, "till flipped below the base");
}

/* ------------------------------------------------------------------ planar 3RFR */

static void test_3rfr(void) {
    asr_cpr_leg legs[RFR_LEGS];
    asr_cpr robot;
    build_3rfr(legs, &robot);
    CHECK(asr_cpr_nx(&robot) == RFR_NX);
    CHECK(asr_cpr_nres(&robot) == RFR_NRES);
    CHECK(asr_cpr_nact(&robot, ASR_CPR_IGM) == RFR_NX - 6);
    CHECK(asr_cpr_nact(&robot, ASR_CPR_IGM) < asr_cpr_nres(&robot)); /* least squares */
    asr_cpr_options opt = options(GRID, 1e-10, 100, 1);
    asr_cpr_report rep = {-1, -1, NAN};
    double x[RFR_NX], tips[RFR_LEGS * S];

    /* home: C3-symmetric, the three joint angles equal */
    memset(x, 0, sizeof x);
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &opt, &rep), ASR_OK);
    CHECK(rep.converged == 1 && rep.residual_norm < opt.tol);
    printf("3rfr IGM home: %d iterations, residual %.3g, q = %.12f %.12f %.12f\n", rep.iterations,
           rep.residual_norm, x[6], x[13], x[20]);
    CHECK(close_to(x[13], x[6], 1e-8, 1e-10) && close_to(x[20], x[6], 1e-8, 1e-10));
    CHECK(fabs(x[6]) > 1e-3); /* the rods had to bend: 1 m rods between radii 1 and 0.3 */

    /* the pose of the brief, from zero wrenches and joints */
    memset(x, 0, sizeof x);
    x[RFR_NX - 6] = 0.05;
    rep.converged = -1;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_IGM, x, &opt, &rep), ASR_OK);
    CHECK(rep.converged == 1 && rep.residual_norm < opt.tol);
    CHECK(rep.iterations >= 1 && rep.iterations <= opt.max_iter);
    CHECK(close_to(residual_norm_at(&robot, x, GRID), rep.residual_norm, 1e-6, 1e-15));
    leg_errors e = plate_check(&robot, x, RFR_NX, GRID, tips);
    double zmax = 0.0, mz = 0.0, tz = 0.0;
    for (int i = 0; i < RFR_LEGS; ++i) {
        zmax = fmax(zmax, fabs(tips[S * i + 2]));
        tz = fmax(tz, fabs(tips[S * i + 3 + 8])); /* tangent's z component */
        mz = fmax(mz, fabs(tips[S * i + 17]));    /* moment about the joint axis z */
    }
    printf("3rfr IGM (0.05, 0, 0): %d iterations, residual %.3g, q = %.9f %.9f %.9f; tip z %.3g, "
           "tip moment z %.3g, plate force %.3g N (scale %.3g)\n", rep.iterations,
           rep.residual_norm, x[6], x[13], x[20], zmax, mz, e.force, e.nmax);
    CHECK(e.ok);
    CHECK(zmax < 1e-9);
    CHECK(tz < 1e-9);
    CHECK(e.pos < 1e-9);
    CHECK(mz < 1e-9 * (1.0 + e.nmax));
    CHECK(e.force < 1e-8 * e.nmax && e.moment < 1e-8 * e.nmax);
    /* whole centerlines in the plane */
    double cl[RFR_LEGS * GRID * 3], res[RFR_NRES], clz = 0.0;
    CHECK_ST(asr_cpr_residual(&robot, x, GRID, res, cl), ASR_OK);
    for (int k = 0; k < RFR_LEGS * GRID; ++k) clz = fmax(clz, fabs(cl[3 * k + 2]));
    CHECK(clz < 1e-9);
    CHECK(memcmp(cl + 3 * (GRID - 1), tips, 3 * sizeof(double)) == 0 ||
          fabs(cl[3 * (GRID - 1)] - tips[0]) < 1e-12);

    /* the direct problem from those joint angles, from a perturbed plate */
    double xd[RFR_NX];
    memcpy(xd, x, sizeof xd);
    xd[RFR_NX - 6] = 0.045, xd[RFR_NX - 5] = 0.004, xd[RFR_NX - 1] = 0.01;
    rep.converged = -1;
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_DGM, xd, &opt, &rep), ASR_OK);
    printf("3rfr DGM: %d iterations, residual %.3g, pose (%.3g, %.3g, %.3g) rot %.3g\n",
           rep.iterations, rep.residual_norm, xd[RFR_NX - 6] - 0.05, xd[RFR_NX - 5],
           xd[RFR_NX - 4], norm_n(xd + RFR_NX - 3, 3));
    CHECK(rep.converged == 1);
    CHECK(fabs(xd[RFR_NX - 6] - 0.05) < 1e-9 && fabs(xd[RFR_NX - 5]) < 1e-9 && fabs(xd[RFR_NX - 4]) < 1e-9);
    CHECK(norm_n(xd + RFR_NX - 3, 3) < 1e-9);
}

/* Eight free-twist legs on one circle, base and plate holes at the same angles: with every
 * length 0.4 m the rods stand straight and the plate sits at (0, 0, 0.4), unrotated (closed
 * form). The DGM from a displaced plate must find it; with more legs than Till's six its
 * work space has other proportions (5 unknowns per leg + 6 < 6 per leg), which the sanitizer
 * build checks for out-of-bounds use. */
static void test_eight_legs_dgm(void) {
    enum { NL = 8, NX = NL * 6 + 6 };
    asr_cpr_leg legs[NL];
    asr_cpr robot;
    memset(legs, 0, sizeof legs);
    for (int i = 0; i < NL; ++i) {
        asr_cpr_leg* l = &legs[i];
        double a = 2.0 * PI * i / NL;
        l->rod.E = 207e9;
        l->rod.G = 207e9 / 2.61;
        l->rod.r = 0.65e-3;
        l->base_joint = ASR_CPR_BASE_EXTENSIBLE;
        l->base_p[0] = l->tip_p[0] = 0.087 * cos(a);
        l->base_p[1] = l->tip_p[1] = 0.087 * sin(a);
        l->base_R[0] = l->base_R[4] = l->base_R[8] = 1.0;
        l->tip_R[0] = l->tip_R[4] = l->tip_R[8] = 1.0;
        l->base_axis[2] = l->tip_axis[2] = 1.0;
        l->free_twist = 1;
        l->tip_joint = ASR_CPR_TIP_FIXED;
    }
    memset(&robot, 0, sizeof robot);
    robot.n_leg = NL;
    robot.legs = legs;
    CHECK(asr_cpr_nx(&robot) == NX);
    CHECK(asr_cpr_nact(&robot, ASR_CPR_DGM) == asr_cpr_nres(&robot)); /* square: 46 */
    double x[NX];
    memset(x, 0, sizeof x);
    for (int i = 0; i < NL; ++i) x[6 * i + 5] = 0.4;
    x[NX - 6] = 0.01, x[NX - 5] = -0.005, x[NX - 4] = 0.41, x[NX - 1] = 0.02;
    asr_cpr_options opt = options(GRID, 1e-10, 100, 1);
    asr_cpr_report rep = {-1, -1, NAN};
    CHECK_ST(asr_cpr_solve(&robot, ASR_CPR_DGM, x, &opt, &rep), ASR_OK);
    CHECK(rep.converged == 1 && rep.residual_norm < opt.tol);
    double pose_err = fabs(x[NX - 6]) + fabs(x[NX - 5]) + fabs(x[NX - 4] - 0.4);
    double rot_err = fabs(x[NX - 3]) + fabs(x[NX - 2]) + fabs(x[NX - 1]);
    CHECK(pose_err < 1e-9 && rot_err < 1e-9);
}

int main(void) {
    test_till_sizes();
    test_till_igm();
    if (till_ok) { /* the rest starts from this solution */
        test_till_turned_frames();
        test_till_dgm();
        test_till_batch();
        test_till_carry();
        test_bad_input();
    }
    test_unreachable();
    test_3rfr();
    test_eight_legs_dgm();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
