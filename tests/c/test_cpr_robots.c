/* test_cpr_robots.c - the continuum parallel robot solver (csrc/cpr/) through its public API
 * (asr.h, "continuum parallel robots"), against facts that do not come from the solver itself.
 *
 * - Unreachable poses (the 3RFR, Till's robot upside down) report converged 0 with a consistent
 *   residual norm, never a crash.
 * - The planar 3RFR (robots/cpr/3rfr.toml), a least-squares system (fewer unknowns than
 *   equations): the inverse problem at (0.05, 0, 0) stays in its plane, meets the revolute
 *   joints (no moment about z at the tips), and the direct problem gives the pose back; at home
 *   the three joint angles are equal (3-fold symmetry).
 * - Eight straight free-twist legs: the DGM finds the closed-form pose (and the sanitizer build
 *   checks the solver's work space for a robot unlike Till's).
 *
 * Build: see tests/test_c_core.py (strict warnings; again under ASan + UBSan). */
#include "cpr_robots.h"

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
           "tip moment z %.3g, plate force %.3g N (scale %.3g)\n",
           rep.iterations, rep.residual_norm, x[6], x[13], x[20], zmax, mz, e.force, e.nmax);
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
           rep.iterations, rep.residual_norm, xd[RFR_NX - 6] - 0.05, xd[RFR_NX - 5], xd[RFR_NX - 4],
           norm_n(xd + RFR_NX - 3, 3));
    CHECK(rep.converged == 1);
    CHECK(fabs(xd[RFR_NX - 6] - 0.05) < 1e-9 && fabs(xd[RFR_NX - 5]) < 1e-9 &&
          fabs(xd[RFR_NX - 4]) < 1e-9);
    CHECK(norm_n(xd + RFR_NX - 3, 3) < 1e-9);
}

/* Eight free-twist legs on one circle, base and plate holes at the same angles: with every
 * length 0.4 m the rods stand straight and the plate sits at (0, 0, 0.4), unrotated (closed
 * form). The DGM from a displaced plate must find it; with more legs than Till's six its
 * work space has other proportions (5 unknowns per leg + 6 < 6 per leg), which the sanitizer
 * build checks for out-of-bounds use. */
static void test_eight_legs_dgm(void) {
    enum {
        NL = 8,
        NX = NL * 6 + 6
    };
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

/* ------------------------------------------------------------------ main */

int main(void) {
    test_unreachable();
    test_3rfr();
    test_eight_legs_dgm();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
