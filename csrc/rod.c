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

/* dy/ds at y. */
static void rod_deriv(const rod_consts* c, const double* y, double* dy) {
    const double* R = y + 3;
    const double* n = y + 12;
    double v[3], u[3];
    for (int k = 0; k < 3; ++k) {  /* R^T n and R^T m: columns of R dotted with n, m */
        double rn = R[k] * n[0] + R[3 + k] * n[1] + R[6 + k] * n[2];
        double rm = R[k] * y[15] + R[3 + k] * y[16] + R[6 + k] * y[17];
        v[k] = c->inv_kse[k] * rn;
        u[k] = c->inv_kbt[k] * rm + c->u0[k];
    }
    v[2] += 1.0;
    for (int i = 0; i < 3; ++i) {
        const double* Ri = R + 3 * i;
        dy[i] = Ri[0] * v[0] + Ri[1] * v[1] + Ri[2] * v[2];       /* p' = R v */
        dy[3 + 3 * i + 0] = Ri[1] * u[2] - Ri[2] * u[1];          /* R' = R hat(u) */
        dy[3 + 3 * i + 1] = Ri[2] * u[0] - Ri[0] * u[2];
        dy[3 + 3 * i + 2] = Ri[0] * u[1] - Ri[1] * u[0];
        dy[12 + i] = c->dn[i];
    }
    /* m' = -p' x n (no distributed moment) */
    dy[15] = -(dy[1] * n[2] - dy[2] * n[1]);
    dy[16] = -(dy[2] * n[0] - dy[0] * n[2]);
    dy[17] = -(dy[0] * n[1] - dy[1] * n[0]);
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
    double y[S], yt[S], k1[S], k2[S], k3[S], k4[S];
    for (int j = 0; j < S; ++j) y[j] = y0[j];
    if (path)
        for (int j = 0; j < S; ++j) path[j] = y[j];
    double h = L / (n_grid - 1);
    for (int step = 1; step < n_grid; ++step) {
        rod_deriv(&c, y, k1);
        for (int j = 0; j < S; ++j) yt[j] = y[j] + 0.5 * h * k1[j];
        rod_deriv(&c, yt, k2);
        for (int j = 0; j < S; ++j) yt[j] = y[j] + 0.5 * h * k2[j];
        rod_deriv(&c, yt, k3);
        for (int j = 0; j < S; ++j) yt[j] = y[j] + h * k3[j];
        rod_deriv(&c, yt, k4);
        for (int j = 0; j < S; ++j) y[j] += h / 6.0 * (k1[j] + 2.0 * (k2[j] + k3[j]) + k4[j]);
        if (path)
            for (int j = 0; j < S; ++j) path[step * S + j] = y[j];
    }
    for (int j = 0; j < S; ++j) {
        if (!isfinite(y[j])) return ASR_ERR_NONFINITE;
        y_tip[j] = y[j];
    }
    return ASR_OK;
}
