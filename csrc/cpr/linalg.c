/* linalg.c - the dense linear algebra of the CPR solver (private, linalg.h): normal equations,
 * a damped Cholesky solve, Gauss-Jordan inversion, Broyden's update of a Jacobian and, by
 * Sherman-Morrison, of its inverse. Matrices are column-major. */
#include <math.h>
#include <string.h>

#include "linalg.h"
#include "core/asr_simd.h"

double la_norm(const double* v, int n) {
    double a = 0.0;
    for (int k = 0; k < n; ++k) a += v[k] * v[k];
    return sqrt(a);
}

/* ------------------------------------------------------------------ linear least squares */

/* Normal equations of min |J d + r|: G = J^T J (lower triangle, n x n column-major) and
 * g = -J^T r, with J m x n column-major; Jt (m x n) is scratch. Every entry is summed over the
 * rows in order, as a dot product would, but row by row (J transposed first) so that the inner
 * loops run along contiguous memory and vectorise without reassociating any sum. */
/* The cloned kernels are static and reached through plain wrappers: GCC exports a cloned
 * function's dispatcher whatever the symbol visibility, and these names are private. */
ASR_CLONED static void normal_eq(const double* restrict J, const double* restrict r, int m, int n,
                                 double* restrict G, double* restrict g, double* restrict Jt) {
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
int la_damped_solve(const double* G, const double* g, int n, double lambda, double* A, double* d) {
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

/* Broyden's rank-one update of J (m x n, column-major) after the step d changed r by y. */
void la_broyden(double* J, int m, int n, const double* d, const double* y, double* Jd) {
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
void la_newton_step(const double* H, const double* r, int n, double* d) {
    memset(d, 0, (size_t)n * sizeof(double));
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) d[i] -= H[(size_t)j * n + i] * r[j];
}

/* The Broyden update of J seen through its inverse (Sherman-Morrison): after the step d changed
 * r by y, H += (d - H y)(d^T H) / (d^T H y); Hy and dH are n scratch. Returns -1 when the
 * update is singular (then H must be recomputed). */
int la_broyden_inverse(double* H, int n, const double* d, const double* y, double* Hy, double* dH) {
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

void la_normal_eq(const double* restrict J, const double* restrict r, int m, int n,
                  double* restrict G, double* restrict g, double* restrict Jt) {
    normal_eq(J, r, m, n, G, g, Jt);
}

int la_invert(const double* restrict J, int n, double* restrict H, double* restrict A) {
    return invert(J, n, H, A);
}
