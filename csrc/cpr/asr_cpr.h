/* asr_cpr.h - continuum parallel robots: Cosserat rods, the CPR solver
 * (asr_cpr_*) and rotation vectors (asr_rot_exp, asr_rot_log).
 * Part of the public C API: included by asr.h, whose conventions (naming, SI units, layouts,
 * no system includes: this is also the cffi cdef) apply here.
 */
#ifndef ASR_API_CPR_H
#define ASR_API_CPR_H

#include "core/asr_status.h"

/* ------------------------------------------------------------------ continuum parallel robots */

/* A Cosserat rod (static, Till's convention; docs/cpr.md). State y (ASR_ROD_NSTATE
 * doubles) along the arc length: p (3, m), R (9, row-major, rod frame -> world), n (3, N),
 * m (3, N m); n and m are the internal force and moment in the world frame, exerted by the
 * material beyond s on the material before it. Circular cross-section of radius r. */
enum {
    ASR_ROD_NSTATE = 18
};

typedef struct asr_rod {
    double E, G;     /* Young's and shear moduli, Pa, > 0 */
    double r;        /* cross-section radius, m, > 0 */
    double rho;      /* density, kg/m^3, >= 0 (weight rho*A*g per metre) */
    double g[3];     /* gravity, m/s^2, world */
    double u0[3];    /* precurvature, 1/m, rod frame (0: straight) */
    double f_ext[3]; /* distributed external force, N/m, world */
} asr_rod;

/* Integrate a rod of length L (m, > 0) from its base state y0 (18) with fixed-step RK4 over
 * n_grid >= 2 points (n_grid - 1 steps). y_tip (18) receives the state at s = L; path, if not
 * NULL, receives all n_grid states (n_grid x 18). No allocation. */
asr_status asr_rod_integrate(const asr_rod* rod, double L, const double* y0, int n_grid,
                             double* y_tip, double* path);

/* Base joint of a leg (actuated; its value q is the leg's joint value). */
typedef enum asr_cpr_base {
    ASR_CPR_BASE_REVOLUTE = 0,  /* q: angle about base_axis, rad; the rod frame turns with it */
    ASR_CPR_BASE_PRISMATIC = 1, /* q: displacement along base_axis, m */
    ASR_CPR_BASE_EXTENSIBLE = 2 /* q: the rod length, m (fed through the base) */
} asr_cpr_base;

/* Joint between a rod tip and the plate ([Gotelli2022], Table 1). */
typedef enum asr_cpr_tip {
    ASR_CPR_TIP_FIXED = 0,     /* clamped: position and orientation */
    ASR_CPR_TIP_REVOLUTE = 1,  /* free rotation about tip_axis, zero moment about it */
    ASR_CPR_TIP_PRISMATIC = 2, /* free translation along tip_axis, zero force along it */
    ASR_CPR_TIP_SPHERICAL = 3  /* position only, zero moment */
} asr_cpr_tip;

typedef struct asr_cpr_leg {
    asr_rod rod;
    double L;            /* rod length, m (ignored for extensible legs: L = q) */
    int base_joint;      /* asr_cpr_base */
    double base_p[3];    /* base joint origin, m, world */
    double base_R[9];    /* rod base frame at q = 0 (row-major; 3rd column = tangent) */
    double base_axis[3]; /* unit joint axis, world (revolute, prismatic) */
    int free_twist;      /* 1: the rod may twist in its base hole: no moment about its
                                 * base tangent, tip twist free (isotropic straight rods, fixed
                                 * tip only); the leg then has 5 base wrench unknowns */
    int tip_joint;       /* asr_cpr_tip */
    double tip_p[3];     /* attachment point, m, plate frame */
    double tip_R[9];     /* clamped rod tip frame, plate frame (row-major) */
    double tip_axis[3];  /* unit joint axis, plate frame (revolute, prismatic) */
} asr_cpr_leg;

typedef struct asr_cpr {
    int n_leg;
    const asr_cpr_leg* legs; /* n_leg legs */
    double plate_mass;       /* kg, centre of mass at the plate origin */
    double g[3];             /* gravity on the plate, m/s^2, world */
    double wrench[6];        /* external force (N) and moment (N m) at the plate origin, world */
} asr_cpr;

typedef enum asr_cpr_problem {
    ASR_CPR_IGM = 0, /* plate pose given (in x), find the joint values */
    ASR_CPR_DGM = 1  /* joint values given (in x), find the plate pose */
} asr_cpr_problem;

typedef struct asr_cpr_options {
    int n_grid;   /* rod grid points, >= 2 */
    double tol;   /* converged when the residual 2-norm is below this, > 0 */
    int max_iter; /* Levenberg-Marquardt iterations, >= 1 */
    int threads;  /* threads over legs within a Jacobian, >= 1 */
} asr_cpr_options;

typedef struct asr_cpr_report {
    int converged;        /* 1 when the residual norm reached tol */
    int iterations;       /* Levenberg-Marquardt steps (forward-difference or Broyden J) */
    double residual_norm; /* 2-norm of the residual at the returned x */
} asr_cpr_report;

/* Length of the unknown vector x: per leg [n0 (3), m0 (3, or 2 with free_twist: components
 * along the base frame's 1st and 2nd columns), q (1)], then the plate [position (3, m),
 * rotation vector (3, rad)]. n0, m0 in N and N m, world. */
int asr_cpr_nx(const asr_cpr* robot);

/* Solve in place from the guess x (warm start): the IGM keeps the plate part of x fixed, the DGM
 * keeps every q fixed. x receives the last iterate even when it did not converge. */
asr_status asr_cpr_solve(const asr_cpr* robot, int problem, double* x, const asr_cpr_options* opt,
                         asr_cpr_report* report);

/* What a solve hands on to the next solve of a warm-started sequence, in one buffer of
 * asr_cpr_carry_size(robot, problem) doubles: the last Jacobian J (asr_cpr_nres x asr_cpr_nact,
 * column-major), then its inverse when the system is square (nact x nact, column-major), then
 * the rods' tip states at x (n_leg x 18, row per leg). Flags say which parts hold values. */
enum {
    ASR_CPR_CARRY_J = 1,
    ASR_CPR_CARRY_INV = 2,
    ASR_CPR_CARRY_TIPS = 4
};
int asr_cpr_carry_size(const asr_cpr* robot, int problem);

/* asr_cpr_solve with a carry buffer (see asr_cpr_carry_size). On input *flags says which parts
 * hold the previous solve's values: J and its inverse start the iteration (they are refreshed
 * when they stop helping; the answer never depends on them); tips must be the rods integrated
 * with opt->n_grid at x's leg unknowns, as in an IGM sequence, which only moves the plate, so the
 * first residual needs no rod integration. On output *flags says which parts hold this solve's
 * values. carry NULL: as asr_cpr_solve. */
asr_status asr_cpr_solve_warm(const asr_cpr* robot, int problem, double* x,
                              const asr_cpr_options* opt, asr_cpr_report* report, double* carry,
                              int* flags);

/* Number of unknowns the solver changes: asr_cpr_nx - 6 (IGM) or asr_cpr_nx - n_leg (DGM). */
int asr_cpr_nact(const asr_cpr* robot, int problem);

/* Solve `problem` at n targets: IGM targets are plate poses (n x 6: position, m, and rotation
 * vector, rad), DGM targets joint values (n x n_leg: rad, m or rod lengths). warm 0: every
 * target starts from x0 (nx) and they are independent, so opt->threads threads take whole
 * targets. warm 1: target k > 0 starts from the solution of target k-1, with its carry (see
 * asr_cpr_solve_warm; tips for the IGM only), a chain whose threads share each solve's rod
 * integrations. Results never depend on the thread count. xs (n x nx) receives each final
 * iterate, reports the n reports. Returns the first error status in target order;
 * non-convergence is not an error (see the reports). After an error, targets that were never
 * attempted report converged 0, iterations 0, residual_norm inf (with warm 0 and threads, which
 * ones depends on how the targets were split). */
asr_status asr_cpr_solve_batch(const asr_cpr* robot, int problem, int n, const double* targets,
                               const double* x0, int warm, const asr_cpr_options* opt, double* xs,
                               asr_cpr_report* reports);

/* The named quantities of n solver vectors xs (n x nx): joint values q (n x n_leg: rad, m or
 * rod lengths), plate position (n x 3, m), plate rotation (n x 9, row-major, plate -> world) and
 * base wrenches (n x n_leg x 6: n0, N, and m0, N m, world). Any output may be NULL. */
asr_status asr_cpr_unpack(const asr_cpr* robot, int n, const double* xs, double* q,
                          double* position, double* rotation, double* base_wrenches);

/* Rotation matrix R (9, row-major) of the rotation vector w (3, rad); any finite w whose
 * length |w| is finite (ASR_ERR_RANGE when |w| overflows, ASR_ERR_INPUT for NaN or inf). */
asr_status asr_rot_exp(const double* w, double* R);

/* Rotation vector w (3, rad, angle in [0, pi]) of the rotation matrix R (9, row-major);
 * ASR_ERR_RANGE when R is not a rotation: max |R^T R - I| > tol, or det R < 0. */
asr_status asr_rot_log(const double* R, double tol, double* w);

/* Residual vector at x (length asr_cpr_nres(robot)) and rod centerlines (n_leg x n_grid x 3,
 * may be NULL). */
int asr_cpr_nres(const asr_cpr* robot);
asr_status asr_cpr_residual(const asr_cpr* robot, const double* x, int n_grid, double* res,
                            double* centerlines);

#endif
