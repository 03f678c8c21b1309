/* rod.c - static Cosserat rod (Till's convention, docs/cpr.md): fixed-step RK4 of the state
 * y = [p (3), R (9 row-major), n (3), m (3)] over the arc length.
 *
 * The solver needs many independent integrations of the same size (a Jacobian column each), so
 * rods are integrated ASR_ROD_LANES at a time, one per lane of GCC's portable vector type. With
 * -ffp-contract=off each lane performs the IEEE operations of the scalar formula in the same
 * order, so the vector width and the instruction set (core/asr_simd.h) never change a result. */
#include <math.h>
#include <string.h>

#include "rod.h"
#include "core/asr_simd.h"

enum {
    S = ASR_ROD_NSTATE,
    W = ASR_ROD_LANES
};

typedef double lanes __attribute__((vector_size(W * sizeof(double))));

/* Constants of a pack of rods, lane by lane. */
typedef struct pack_consts {
    lanes inv_kse[3]; /* 1 / (G A, G A, E A) */
    lanes inv_kbt[3]; /* 1 / (E I, E I, G J) */
    lanes u0[3];
    lanes dn[3]; /* n' = -(rho A g + f_ext), constant along the rod */
    lanes h;     /* step, L / (n_grid - 1) */
} pack_consts;

static void set_lane_consts(pack_consts* c, int l, const asr_rod* rod, double h) {
    const double pi = 3.14159265358979323846;
    double A = pi * rod->r * rod->r, I = pi * rod->r * rod->r * rod->r * rod->r / 4.0;
    c->inv_kse[0][l] = c->inv_kse[1][l] = 1.0 / (rod->G * A);
    c->inv_kse[2][l] = 1.0 / (rod->E * A);
    c->inv_kbt[0][l] = c->inv_kbt[1][l] = 1.0 / (rod->E * I);
    c->inv_kbt[2][l] = 1.0 / (rod->G * 2.0 * I);
    for (int k = 0; k < 3; ++k) {
        c->u0[k][l] = rod->u0[k];
        c->dn[k][l] = -(rod->rho * A * rod->g[k] + rod->f_ext[k]);
    }
    c->h[l] = h;
}

/* dy/ds at y, written out so that a whole RK4 stage stays in registers. */
static inline __attribute__((always_inline)) void
rod_deriv(const pack_consts* c, const lanes* restrict y, lanes* restrict dy) {
    const lanes R0 = y[3], R1 = y[4], R2 = y[5], R3 = y[6], R4 = y[7], R5 = y[8], R6 = y[9],
                R7 = y[10], R8 = y[11];
    const lanes n0 = y[12], n1 = y[13], n2 = y[14], m0 = y[15], m1 = y[16], m2 = y[17];
    /* v = Kse^-1 R^T n + e3, u = Kbt^-1 R^T m + u0 */
    const lanes v0 = c->inv_kse[0] * (R0 * n0 + R3 * n1 + R6 * n2);
    const lanes v1 = c->inv_kse[1] * (R1 * n0 + R4 * n1 + R7 * n2);
    const lanes v2 = c->inv_kse[2] * (R2 * n0 + R5 * n1 + R8 * n2) + 1.0;
    const lanes u0 = c->inv_kbt[0] * (R0 * m0 + R3 * m1 + R6 * m2) + c->u0[0];
    const lanes u1 = c->inv_kbt[1] * (R1 * m0 + R4 * m1 + R7 * m2) + c->u0[1];
    const lanes u2 = c->inv_kbt[2] * (R2 * m0 + R5 * m1 + R8 * m2) + c->u0[2];
    /* p' = R v */
    const lanes p0 = R0 * v0 + R1 * v1 + R2 * v2;
    const lanes p1 = R3 * v0 + R4 * v1 + R5 * v2;
    const lanes p2 = R6 * v0 + R7 * v1 + R8 * v2;
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

/* Store the pack's state at grid point `step` into the paths that want it. */
static void store_paths(const lanes* y, int step, double* const* path) {
    for (int l = 0; l < W; ++l)
        if (path[l])
            for (int j = 0; j < S; ++j) path[l][step * S + j] = y[j][l];
}

/* RK4 over n_grid - 1 steps of the pack y (S lanes vectors), in place. */
ASR_CLONED static void rk4_pack(const pack_consts* c, lanes* y, int n_grid, double* const* path) {
    lanes yt[S], k[S], acc[S];
    const lanes h = c->h, h2 = 0.5 * h, h6 = h / 6.0, h3 = h / 3.0;
    if (path) store_paths(y, 0, path);
    for (int step = 1; step < n_grid; ++step) {
        /* the weighted sum of the slopes is accumulated as they come (no k1..k4) */
        rod_deriv(c, y, k);
        for (int j = 0; j < S; ++j) {
            acc[j] = y[j] + h6 * k[j];
            yt[j] = y[j] + h2 * k[j];
        }
        rod_deriv(c, yt, k);
        for (int j = 0; j < S; ++j) {
            acc[j] += h3 * k[j];
            yt[j] = y[j] + h2 * k[j];
        }
        rod_deriv(c, yt, k);
        for (int j = 0; j < S; ++j) {
            acc[j] += h3 * k[j];
            yt[j] = y[j] + h * k[j];
        }
        rod_deriv(c, yt, k);
        for (int j = 0; j < S; ++j) y[j] = acc[j] + h6 * k[j];
        if (path) store_paths(y, step, path);
    }
}

static int rod_ok(const asr_rod* rod, double L) {
    return rod && L > 0.0 && isfinite(L) && rod->E > 0.0 && rod->G > 0.0 && rod->r > 0.0;
}

/* One pack of n <= W rods; the unused lanes repeat the first rod. */
static asr_status integrate_pack(int n, const asr_rod* const* rods, const double* L,
                                 const double* y0, int n_grid, double* tips, double* const* paths) {
    pack_consts c;
    lanes y[S];
    double* path[W];
    for (int l = 0; l < W; ++l) {
        int k = l < n ? l : 0;
        set_lane_consts(&c, l, rods[k], L[k] / (n_grid - 1));
        for (int j = 0; j < S; ++j) y[j][l] = y0[S * k + j];
        path[l] = (paths && l < n) ? paths[l] : NULL;
    }
    rk4_pack(&c, y, n_grid, paths ? path : NULL);
    asr_status st = ASR_OK;
    for (int l = 0; l < n; ++l)
        for (int j = 0; j < S; ++j) {
            if (!isfinite(y[j][l])) st = ASR_ERR_NONFINITE;
            tips[S * l + j] = y[j][l];
        }
    return st;
}

asr_status rods_integrate(int n, const asr_rod* const* rods, const double* L, const double* y0,
                          int n_grid, double* tips, double* const* paths) {
    if (!rods || !L || !y0 || !tips) return ASR_ERR_NULL;
    if (n < 0 || n_grid < 2) return ASR_ERR_RANGE;
    for (int k = 0; k < n; ++k)
        if (!rod_ok(rods[k], L[k])) return rods[k] ? ASR_ERR_RANGE : ASR_ERR_NULL;
    asr_status st = ASR_OK;
    for (int b = 0; b < n; b += W) {
        int nb = n - b < W ? n - b : W;
        asr_status sb = integrate_pack(nb, rods + b, L + b, y0 + (size_t)S * b, n_grid,
                                       tips + (size_t)S * b, paths ? paths + b : NULL);
        if (st == ASR_OK) st = sb;
    }
    return st;
}

asr_status asr_rod_integrate(const asr_rod* rod, double L, const double* y0, int n_grid,
                             double* y_tip, double* path) {
    if (!rod) return ASR_ERR_NULL; /* the rest is checked by rods_integrate */
    return rods_integrate(1, &rod, &L, y0, n_grid, y_tip, path ? &path : NULL);
}
