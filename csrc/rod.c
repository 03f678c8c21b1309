/* rod.c - static Cosserat rod (Till's convention, cpr.md): fixed-step RK4 of the state
 * y = [p (3), R (9 row-major), n (3), m (3)] over the arc length. Straight loops, no allocation:
 * this is the inner loop of every robot solve. */
#include <math.h>

#include "asr.h"

/* Constants of one rod, computed once per integration. */
typedef struct rod_consts {
    double inv_kse[3];          /* 1 / (G A, G A, E A) */
    double inv_kbt[3];          /* 1 / (E I, E I, G J) */
    double u0[3];
    double dn[3];               /* n' = -(rho A g + f_ext), constant along the rod */
} rod_consts;

static void rod_consts_init(const asr_rod* rod, rod_consts* c) {
    const double pi = 3.14159265358979323846;
    double A = pi * rod->r * rod->r, I = pi * rod->r * rod->r * rod->r * rod->r / 4.0;
    c->inv_kse[0] = c->inv_kse[1] = 1.0 / (rod->G * A);
    c->inv_kse[2] = 1.0 / (rod->E * A);
    c->inv_kbt[0] = c->inv_kbt[1] = 1.0 / (rod->E * I);
    c->inv_kbt[2] = 1.0 / (rod->G * 2.0 * I);
    for (int k = 0; k < 3; ++k) {
        c->u0[k] = rod->u0[k];
        c->dn[k] = -(rod->rho * A * rod->g[k] + rod->f_ext[k]);
    }
}

/* dy/ds at y, written out in scalars so that the whole RK4 step stays in registers. */
static inline void rod_deriv(const rod_consts* c, const double* restrict y, double* restrict dy) {
    const double R0 = y[3], R1 = y[4], R2 = y[5], R3 = y[6], R4 = y[7], R5 = y[8], R6 = y[9],
                 R7 = y[10], R8 = y[11];
    const double n0 = y[12], n1 = y[13], n2 = y[14], m0 = y[15], m1 = y[16], m2 = y[17];
    /* v = Kse^-1 R^T n + e3, u = Kbt^-1 R^T m + u0 */
    const double v0 = c->inv_kse[0] * (R0 * n0 + R3 * n1 + R6 * n2);
    const double v1 = c->inv_kse[1] * (R1 * n0 + R4 * n1 + R7 * n2);
    const double v2 = c->inv_kse[2] * (R2 * n0 + R5 * n1 + R8 * n2) + 1.0;
    const double u0 = c->inv_kbt[0] * (R0 * m0 + R3 * m1 + R6 * m2) + c->u0[0];
    const double u1 = c->inv_kbt[1] * (R1 * m0 + R4 * m1 + R7 * m2) + c->u0[1];
    const double u2 = c->inv_kbt[2] * (R2 * m0 + R5 * m1 + R8 * m2) + c->u0[2];
    /* p' = R v */
    const double p0 = R0 * v0 + R1 * v1 + R2 * v2;
    const double p1 = R3 * v0 + R4 * v1 + R5 * v2;
    const double p2 = R6 * v0 + R7 * v1 + R8 * v2;
    dy[0] = p0;
    dy[1] = p1;
    dy[2] = p2;
    /* R' = R hat(u) */
    dy[3] = R1 * u2 - R2 * u1;
    dy[4] = R2 * u0 - R0 * u2;
    dy[5] = R0 * u1 - R1 * u0;
    dy[6] = R4 * u2 - R5 * u1;
    dy[7] = R5 * u0 - R3 * u2;
    dy[8] = R3 * u1 - R4 * u0;
    dy[9] = R7 * u2 - R8 * u1;
    dy[10] = R8 * u0 - R6 * u2;
    dy[11] = R6 * u1 - R7 * u0;
    /* n' constant; m' = -p' x n (no distributed moment) */
    dy[12] = c->dn[0];
    dy[13] = c->dn[1];
    dy[14] = c->dn[2];
    dy[15] = -(p1 * n2 - p2 * n1);
    dy[16] = -(p2 * n0 - p0 * n2);
    dy[17] = -(p0 * n1 - p1 * n0);
}

asr_status asr_rod_integrate(const asr_rod* rod, double L, const double* y0, int n_grid,
                             double* y_tip, double* path) {
    if (!rod || !y0 || !y_tip) return ASR_ERR_NULL;
    if (n_grid < 2 || !(L > 0.0) || !isfinite(L) || !(rod->E > 0.0) || !(rod->G > 0.0) ||
        !(rod->r > 0.0))
        return ASR_ERR_RANGE;
    enum { S = ASR_ROD_NSTATE };
    rod_consts c;
    rod_consts_init(rod, &c);
    double y[S], yt[S], k[S], acc[S];
    for (int j = 0; j < S; ++j) y[j] = y0[j];
    if (path)
        for (int j = 0; j < S; ++j) path[j] = y[j];
    const double h = L / (n_grid - 1), h2 = 0.5 * h, h6 = h / 6.0, h3 = h / 3.0;
    for (int step = 1; step < n_grid; ++step) {
        /* RK4 with the weighted sum of the slopes accumulated as they come (no k1..k4) */
        rod_deriv(&c, y, k);
        for (int j = 0; j < S; ++j) {
            acc[j] = y[j] + h6 * k[j];
            yt[j] = y[j] + h2 * k[j];
        }
        rod_deriv(&c, yt, k);
        for (int j = 0; j < S; ++j) {
            acc[j] += h3 * k[j];
            yt[j] = y[j] + h2 * k[j];
        }
        rod_deriv(&c, yt, k);
        for (int j = 0; j < S; ++j) {
            acc[j] += h3 * k[j];
            yt[j] = y[j] + h * k[j];
        }
        rod_deriv(&c, yt, k);
        for (int j = 0; j < S; ++j) y[j] = acc[j] + h6 * k[j];
        if (path)
            for (int j = 0; j < S; ++j) path[step * S + j] = y[j];
    }
    for (int j = 0; j < S; ++j) {
        if (!isfinite(y[j])) return ASR_ERR_NONFINITE;
        y_tip[j] = y[j];
    }
    return ASR_OK;
}
