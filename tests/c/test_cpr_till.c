/* test_cpr_till.c - the continuum parallel robot solver (csrc/cpr/: cpr.c, cpr_legs.c,
 * linalg.c) through its public API (asr.h, "continuum parallel robots"), against facts that do not come from the
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
 *
 * Build: see tests/test_c_core.py (strict warnings; again under ASan + UBSan). */
#include "cpr_robots.h"

/* ------------------------------------------------------------------ Till's robot */

static double till_x[TILL_NX]; /* the IGM at (0, 0, 0.4), set by test_till_igm */
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
           "N m (rod force scale %.3g N)\n",
           e.pos, e.tangent, e.force, e.moment, e.nmax);
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
           rep.residual_norm,
           fmax(fmax(fabs(x[TILL_NX - 6]), fabs(x[TILL_NX - 5])), fabs(x[TILL_NX - 4] - 0.4)),
           norm_n(x + TILL_NX - 3, 3));
    CHECK(fabs(x[TILL_NX - 6]) < 1e-9 && fabs(x[TILL_NX - 5]) < 1e-9 &&
          fabs(x[TILL_NX - 4] - 0.4) < 1e-9);
    CHECK(norm_n(x + TILL_NX - 3, 3) < 1e-9);
    /* the DGM keeps every q */
    int same_q = 1;
    for (int i = 0; i < TILL_LEGS; ++i)
        same_q &= memcmp(&x[6 * i + 5], &till_x[6 * i + 5], sizeof(double)) == 0;
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
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 1, &opt1, xs1, r1),
             ASR_OK);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 1, &opt2, xs2, r2),
             ASR_OK);
    CHECK(memcmp(xs1, xs2, sizeof xs1) == 0);
    int conv = 1, iters = 0, pose_kept = 1;
    double worst_res = 0.0, worst_eq = 0.0;
    for (int k = 0; k < NPOSE; ++k) {
        conv &= r1[k].converged == 1 && r1[k].residual_norm < opt1.tol && r2[k].converged == 1;
        conv &= r1[k].iterations == r2[k].iterations;
        iters += r1[k].iterations;
        worst_res = fmax(worst_res, r1[k].residual_norm);
        pose_kept &= memcmp(xs1 + (size_t)k * TILL_NX + TILL_NX - 6, targets + 6 * k,
                            6 * sizeof(double)) == 0;
        double tips[TILL_LEGS * S];
        leg_errors e = plate_check(&robot, xs1 + (size_t)k * TILL_NX, TILL_NX, GRID, tips);
        /* tip positions (m) and the plate's force and moment relative to the rods' forces
         * (these poses are not symmetric: no term of the equilibrium vanishes by symmetry) */
        worst_eq = fmax(worst_eq, fmax(e.pos, fmax(e.force / e.nmax, e.moment / (0.087 * e.nmax))));
        worst_eq = fmax(worst_eq, e.tangent);
    }
    printf("till batch (warm): %d iterations over %d poses, worst residual %.3g, worst tip/eq "
           "error %.3g\n",
           iters, NPOSE, worst_res, worst_eq);
    CHECK(conv);
    CHECK(pose_kept);
    CHECK(worst_eq < 1e-8);
    /* a mm step changes the lengths (the chain did move) */
    CHECK(fabs(xs1[(size_t)(NPOSE - 1) * TILL_NX + 5] - xs1[5]) > 1e-3);

    /* independent targets: thread count, separate solves, and the chain's roots */
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 0, &opt1, xc1, c1),
             ASR_OK);
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, NPOSE, targets, x0, 0, &opt2, xc2, c2),
             ASR_OK);
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
            root_diff = fmax(root_diff, fabs(xc1[(size_t)k * TILL_NX + 6 * i + 5] -
                                             xs1[(size_t)k * TILL_NX + 6 * i + 5]));
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
        for (int i = 0; i < TILL_LEGS; ++i)
            q[TILL_LEGS * k + i] = xs1[(size_t)k * TILL_NX + 6 * i + 5];
    memcpy(xd0, till_x, sizeof xd0);
    xd0[TILL_NX - 5] = -0.002, xd0[TILL_NX - 1] = 0.01;
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_DGM, NPOSE, q, xd0, 1, &opt1, xd, rd), ASR_OK);
    double pose_err = 0.0;
    int conv_d = 1, q_kept = 1;
    for (int k = 0; k < NPOSE; ++k) {
        conv_d &= rd[k].converged == 1;
        for (int j = 0; j < 6; ++j)
            pose_err = fmax(pose_err,
                            fabs(xd[(size_t)k * TILL_NX + TILL_NX - 6 + j] - targets[6 * k + j]));
        for (int i = 0; i < TILL_LEGS; ++i)
            q_kept &= xd[(size_t)k * TILL_NX + 6 * i + 5] == q[TILL_LEGS * k + i];
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
    enum {
        NA = TILL_NX - 6,
        CARRY = TILL_NRES * NA + NA * NA + TILL_LEGS * S
    };
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
    for (int k = 0; k < TILL_LEGS * S; ++k)
        tip_diff = fmax(tip_diff, fabs(mine[k] - tips[k]) / (1.0 + fabs(mine[k])));
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
        CHECK_ST(asr_cpr_solve(&robot, pos % 3 ? ASR_CPR_IGM : ASR_CPR_DGM, y, &opt, &rep),
                 ASR_ERR_INPUT);
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
    CHECK_ST(asr_cpr_solve_batch(&bad, ASR_CPR_IGM, 1, x + TILL_NX - 6, x, 0, &opt, y, &rep),
             ASR_ERR_MODEL);
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
    CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, NULL, 0, &opt, xs, reps),
             ASR_ERR_NULL);
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
        CHECK_ST(asr_cpr_solve_batch(&robot, ASR_CPR_IGM, 3, t3, x, warm, &opt, xs, reps),
                 ASR_ERR_INPUT);
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
/* ------------------------------------------------------------------ main */

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
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
