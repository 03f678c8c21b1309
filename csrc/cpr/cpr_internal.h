/* cpr_internal.h - what the CPR solver (cpr.c) and the legs' residuals and Jacobian
 * (cpr_legs.c) share; not part of the public API (the cpr_ prefix). */
#ifndef ASR_CPR_INTERNAL_H
#define ASR_CPR_INTERNAL_H

#include "asr_cpr.h"

/* Unknowns of a leg's wrench (n0, m0: 5 with free twist) and its tip constraint rows. */
static inline int cpr_leg_nw(const asr_cpr_leg* leg) { return leg->free_twist ? 5 : 6; }
static inline int cpr_leg_nr(const asr_cpr_leg* leg) { return leg->free_twist ? 5 : 6; }

/* A list of independent rod integrations (the legs at one x, or the Jacobian's columns), run in
 * packs of ASR_ROD_LANES, packs split over threads. */
typedef struct cpr_rod_tasks {
    int n, cap, n_grid;
    const asr_rod** rods; /* cap */
    double* L;            /* cap, m */
    double* y0;           /* cap x 18 base states */
    double* tips;         /* cap x 18 tip states (may point elsewhere for a run) */
    double** paths;       /* NULL, or n pointers to n_grid x 18 states */
} cpr_rod_tasks;

/* The solver's state at one iterate (cpr_solver_init). */
typedef struct cpr_solver {
    const asr_cpr* robot;
    int problem, n_grid, nx, nres, nact, threads;
    int *xoff, *roff;    /* per leg: start of its slice of x, of its rows */
    int* act;            /* nact: x index of each active unknown (Jacobian column) */
    double* x;           /* current iterate (nx) */
    double* r;           /* residual at x (nres) */
    double* tips;        /* n_leg x 18 tip states at x */
    double* weq;         /* n_leg x 6 plate wrenches at x */
    double* J;           /* nres x nact, column-major */
    double P[3], Rp[9];  /* plate pose at x */
    double** paths;      /* NULL, or n_leg pointers to n_grid x 18 centerline states */
    cpr_rod_tasks tasks; /* capacity: every leg column of the Jacobian, and n_leg */
} cpr_solver;

/* The plate pose (P, Rp) at x. */
void cpr_plate_pose(const cpr_solver* s, const double* x, double* P, double* Rp);

/* Tip constraint rows (cpr_leg_nr) of a leg and the wrench (6) its rod puts on the plate about
 * the plate origin P, from the rod tip state y (18) and the plate pose (P, Rp). */
void cpr_leg_tip(const asr_cpr_leg* leg, const double* y, const double* P, const double* Rp,
                 double* rows, double* w);

/* Equilibrium rows from the legs' plate wrenches. */
void cpr_equilibrium(const cpr_solver* s, const double* weq, double* r);

/* Residual at x into r, tips and weq (all legs integrated side by side). */
asr_status cpr_evaluate(cpr_solver* s, const double* x, double* r, double* tips, double* weq);

/* Jacobian columns of the leg unknowns at s->x (one rod integration each), and of the plate
 * unknowns (DGM: the constraints re-evaluated at the stored tips; scratch_r nres, scratch_w
 * n_leg x 6). */
asr_status cpr_jac_legs(cpr_solver* s);
void cpr_jac_plate(cpr_solver* s, double* scratch_r, double* scratch_w);

/* ASR_OK, or why the robot cannot be solved (NULL, no legs, a joint type out of range). */
asr_status cpr_check_robot(const asr_cpr* rb);

/* Set up the solver (legs' offsets, active unknowns, rod integration lists); 0, or -1 when out
 * of memory. cpr_solver_free releases it either way. */
int cpr_solver_init(cpr_solver* s, const asr_cpr* rb, int problem, int n_grid, int threads);
void cpr_solver_free(cpr_solver* s);

#endif
