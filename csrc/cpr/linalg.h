/* linalg.h - the dense linear algebra of the CPR solver (linalg.c); private (the la_ prefix).
 * Matrices are column-major. */
#ifndef ASR_LINALG_H
#define ASR_LINALG_H

/* Euclidean norm of v (n), summed in order. */
double la_norm(const double* v, int n);

/* Normal equations of min |J d + r|: G = J^T J (lower triangle, n x n) and g = -J^T r, with J
 * m x n; Jt (m x n) is scratch. */
void la_normal_eq(const double* restrict J, const double* restrict r, int m, int n,
                  double* restrict G, double* restrict g, double* restrict Jt);

/* Solve (G + lambda diag(G)) d = g by Cholesky (G's lower triangle; A n x n scratch). Returns 0,
 * or -1 when the damped matrix is not numerically positive definite. */
int la_damped_solve(const double* G, const double* g, int n, double lambda, double* A, double* d);

/* Broyden's rank-one update of J (m x n) after the step d changed r by y; Jd (m) is scratch. */
void la_broyden(double* J, int m, int n, const double* d, const double* y, double* Jd);

/* H = J^-1 for a square J (n x n); A (n x n) is scratch. Returns 0, or -1 when J is numerically
 * singular. */
int la_invert(const double* restrict J, int n, double* restrict H, double* restrict A);

/* d = -H r (H n x n). */
void la_newton_step(const double* H, const double* r, int n, double* d);

/* The Broyden update seen through the inverse H (Sherman-Morrison); Hy and dH are n scratch.
 * Returns -1 when the update is singular (then H must be recomputed). */
int la_broyden_inverse(double* H, int n, const double* d, const double* y, double* Hy, double* dH);

#endif
