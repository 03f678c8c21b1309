/* test_linalg.c - the dense linear algebra of the CPR solver (csrc/cpr/linalg.c, linalg.h) against
 * its definitions: H J = I for the Gauss-Jordan inverse, the normal equations summed as plain
 * dot products, the damped Cholesky solve, Newton's step, Broyden's secant condition and the
 * Sherman-Morrison update agreeing with the inverse of the updated Jacobian. Sizes run past the
 * vector widths (1 to 17) so that every clone's loop tails are exercised. Matrices are
 * column-major, as in linalg.h. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cpr/linalg.h"

enum {
    NMAX = 17,
    MMAX = 23
};

static const int SIZES[] = {1, 2, 3, 5, 8, 9, 16, 17};
#define N_SIZES ((int)(sizeof SIZES / sizeof SIZES[0]))

static unsigned long long lcg_state = 12345;

/* Deterministic values in [-1, 1). */
static double uniform(void) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / 4503599627370496.0 - 1.0;
}

/* A well-conditioned n x n matrix: random entries plus n on the diagonal. */
static void well_conditioned(int n, double* J) {
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) J[(size_t)j * n + i] = uniform() + (i == j ? n : 0.0);
}

/* max |A B - I| for n x n A, B. */
static double product_error(int n, const double* A, const double* B) {
    double worst = 0.0;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            double t = 0.0;
            for (int k = 0; k < n; ++k) t += A[(size_t)k * n + i] * B[(size_t)j * n + k];
            worst = fmax(worst, fabs(t - (i == j)));
        }
    return worst;
}

static void test_norm(void) {
    double v[3] = {3.0, 4.0, 12.0};
    CHECK(la_norm(v, 2) == 5.0);
    CHECK(la_norm(v, 3) == 13.0);
    CHECK(la_norm(v, 0) == 0.0);
}

static void test_invert(void) {
    double J[NMAX * NMAX], H[NMAX * NMAX], A[NMAX * NMAX];
    for (int s = 0; s < N_SIZES; ++s) {
        int n = SIZES[s];
        well_conditioned(n, J);
        CHECK(la_invert(J, n, H, A) == 0);
        CHECK(product_error(n, J, H) < 1e-13);
        CHECK(product_error(n, H, J) < 1e-13);
    }
    /* a permutation needs the pivoting and is inverted exactly (it is its own inverse) */
    double P[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0}, PT[9] = {0, 1, 0, 0, 0, 1, 1, 0, 0};
    CHECK(la_invert(P, 3, H, A) == 0);
    CHECK(memcmp(H, PT, sizeof PT) == 0);
    /* singular and non-finite matrices are refused */
    double Z[4] = {0, 0, 0, 0}, S[4] = {1, 2, 2, 4}, N[4] = {1, 0, 0, NAN};
    CHECK(la_invert(Z, 2, H, A) == -1);
    CHECK(la_invert(S, 2, H, A) == -1);
    CHECK(la_invert(N, 2, H, A) == -1);
}

static void test_normal_eq(void) {
    double J[MMAX * NMAX], r[MMAX], G[NMAX * NMAX], g[NMAX], Jt[MMAX * NMAX];
    for (int s = 0; s < N_SIZES; ++s) {
        int n = SIZES[s], m = n + 6;
        for (int k = 0; k < m * n; ++k) J[k] = uniform();
        for (int k = 0; k < m; ++k) r[k] = uniform();
        la_normal_eq(J, r, m, n, G, g, Jt);
        int same = 1; /* every entry a dot product summed over the rows in order: bit for bit */
        for (int j = 0; j < n; ++j) {
            double t = 0.0;
            for (int k = 0; k < m; ++k) t -= J[(size_t)j * m + k] * r[k];
            same &= g[j] == t;
            for (int i = j; i < n; ++i) {
                double a = 0.0;
                for (int k = 0; k < m; ++k) a += J[(size_t)i * m + k] * J[(size_t)j * m + k];
                same &= G[(size_t)j * n + i] == a;
            }
        }
        CHECK(same);
    }
}

static void test_damped_solve(void) {
    double J[MMAX * NMAX], r[MMAX], G[NMAX * NMAX], g[NMAX], A[MMAX * NMAX], d[NMAX];
    const double lambdas[] = {0.0, 1e-3, 10.0};
    for (int s = 0; s < N_SIZES; ++s) {
        int n = SIZES[s], m = n + 6;
        for (int k = 0; k < m * n; ++k) J[k] = uniform();
        for (int k = 0; k < m; ++k) r[k] = uniform();
        la_normal_eq(J, r, m, n, G, g, A);
        for (int l = 0; l < 3; ++l) {
            double lambda = lambdas[l], worst = 0.0;
            CHECK(la_damped_solve(G, g, n, lambda, A, d) == 0);
            for (int i = 0; i < n; ++i) { /* (G + lambda diag G) d - g, G from its lower half */
                double t = lambda * G[(size_t)i * n + i] * d[i] - g[i];
                for (int k = 0; k < n; ++k)
                    t += (k <= i ? G[(size_t)k * n + i] : G[(size_t)i * n + k]) * d[k];
                worst = fmax(worst, fabs(t));
            }
            CHECK(worst < 1e-12);
        }
    }
    /* not positive definite, and not finite: refused */
    double Gn[4] = {-1.0, 0.0, 0.0, 1.0}, Gi[4] = {INFINITY, 0.0, 0.0, 1.0}, g2[2] = {1, 1};
    CHECK(la_damped_solve(Gn, g2, 2, 0.0, A, d) == -1);
    CHECK(la_damped_solve(Gi, g2, 2, 0.0, A, d) == -1);
}

static void test_newton_and_broyden(void) {
    double J[NMAX * NMAX], J0[NMAX * NMAX], H[NMAX * NMAX], H2[NMAX * NMAX], A[NMAX * NMAX];
    double r[NMAX], d[NMAX], y[NMAX], Jd[NMAX], Hy[NMAX], dH[NMAX];
    for (int s = 0; s < N_SIZES; ++s) {
        int n = SIZES[s];
        well_conditioned(n, J);
        for (int k = 0; k < n; ++k) r[k] = uniform();
        CHECK(la_invert(J, n, H, A) == 0);
        la_newton_step(H, r, n, d); /* J d = -r */
        double worst = 0.0;
        for (int i = 0; i < n; ++i) {
            double t = r[i];
            for (int k = 0; k < n; ++k) t += J[(size_t)k * n + i] * d[k];
            worst = fmax(worst, fabs(t));
        }
        CHECK(worst < 1e-13);

        /* Broyden: the updated J maps the step d onto the change y (secant condition) */
        for (int k = 0; k < n; ++k) d[k] = uniform(), y[k] = uniform();
        memcpy(J0, J, (size_t)n * n * sizeof(double));
        la_broyden(J, n, n, d, y, Jd);
        worst = 0.0;
        for (int i = 0; i < n; ++i) {
            double t = -y[i];
            for (int k = 0; k < n; ++k) t += J[(size_t)k * n + i] * d[k];
            worst = fmax(worst, fabs(t));
        }
        CHECK(worst < 1e-12);

        /* Sherman-Morrison: the updated inverse is the inverse of the updated J */
        if (la_broyden_inverse(H, n, d, y, Hy, dH) == 0) {
            CHECK(la_invert(J, n, H2, A) == 0);
            worst = 0.0;
            for (int k = 0; k < n * n; ++k) worst = fmax(worst, fabs(H[k] - H2[k]));
            CHECK(worst < 1e-9);
            CHECK(product_error(n, J, H) < 1e-9);
        } else {
            CHECK(product_error(n, J0, H) < 1e-13); /* refused: H is left for a recompute */
        }
    }
    /* a zero step leaves J as it is */
    double J2[4] = {1, 2, 3, 4}, z[2] = {0, 0}, y2[2] = {1, 1}, Jd2[2];
    la_broyden(J2, 2, 2, z, y2, Jd2);
    CHECK(J2[0] == 1 && J2[1] == 2 && J2[2] == 3 && J2[3] == 4);
    /* d^T H y = 0: the update is singular and refused */
    double I2[4] = {1, 0, 0, 1}, dx[2] = {1, 0}, yy[2] = {0, 1}, h1[2], h2[2];
    CHECK(la_broyden_inverse(I2, 2, dx, yy, h1, h2) == -1);
}

int main(void) {
    test_norm();
    test_invert();
    test_normal_eq();
    test_damped_solve();
    test_newton_and_broyden();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
