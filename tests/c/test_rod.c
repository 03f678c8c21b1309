/* test_rod.c - the rod packs of csrc/cpr/rod.c (rods integrated side by side, one per SIMD lane).
 *
 * - Each rod of a mixed pack (different materials, loads, lengths, base states, and a partial
 *   last pack) ends bit for bit where the same rod integrated alone ends: lanes never mix.
 * - Against an independent textbook RK4 written here (k1..k4, own derivative with matrix
 *   products in loops) to 1e-12: the packs integrate the right equations.
 * - Paths, NULL paths per rod, and the error statuses (NULL rod, bad length, overflow).
 *
 * Build: see tests/test_c_core.py (strict warnings; again under ASan + UBSan). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "asr.h"
#include "check.h"
#include "cpr/rod.h"

enum {
    S = ASR_ROD_NSTATE,
    NROD = 2 * ASR_ROD_LANES + 3,
    NGRID = 25
};

/* Textbook derivative of docs/cpr.md: v = Kse^-1 R^T n + e3, u = Kbt^-1 R^T m + u0, p' = R v,
 * R' = R hat(u), n' = -(rho A g + f), m' = -p' x n. */
static void ref_deriv(const asr_rod* rod, const double* y, double* dy) {
    const double pi = 3.14159265358979323846;
    double A = pi * rod->r * rod->r, I = pi * pow(rod->r, 4) / 4.0;
    double kse[3] = {rod->G * A, rod->G * A, rod->E * A},
           kbt[3] = {rod->E * I, rod->E * I, rod->G * 2 * I};
    const double *R = y + 3, *n = y + 12, *m = y + 15;
    double v[3], u[3], hu[9];
    for (int i = 0; i < 3; ++i) {
        double rn = 0, rm = 0;
        for (int k = 0; k < 3; ++k) {
            rn += R[3 * k + i] * n[k];
            rm += R[3 * k + i] * m[k];
        }
        v[i] = rn / kse[i] + (i == 2);
        u[i] = rm / kbt[i] + rod->u0[i];
    }
    double hat[9] = {0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0};
    for (int i = 0; i < 3; ++i) {
        dy[i] = 0;
        for (int k = 0; k < 3; ++k) dy[i] += R[3 * i + k] * v[k];
        for (int j = 0; j < 3; ++j) {
            hu[3 * i + j] = 0;
            for (int k = 0; k < 3; ++k) hu[3 * i + j] += R[3 * i + k] * hat[3 * k + j];
        }
        dy[12 + i] = -(rod->rho * A * rod->g[i] + rod->f_ext[i]);
    }
    memcpy(dy + 3, hu, sizeof hu);
    dy[15] = -(dy[1] * n[2] - dy[2] * n[1]);
    dy[16] = -(dy[2] * n[0] - dy[0] * n[2]);
    dy[17] = -(dy[0] * n[1] - dy[1] * n[0]);
}

static void ref_rk4(const asr_rod* rod, double L, const double* y0, int n_grid, double* tip) {
    double y[S], k1[S], k2[S], k3[S], k4[S], t[S], h = L / (n_grid - 1);
    memcpy(y, y0, sizeof y);
    for (int step = 1; step < n_grid; ++step) {
        ref_deriv(rod, y, k1);
        for (int j = 0; j < S; ++j) t[j] = y[j] + h / 2 * k1[j];
        ref_deriv(rod, t, k2);
        for (int j = 0; j < S; ++j) t[j] = y[j] + h / 2 * k2[j];
        ref_deriv(rod, t, k3);
        for (int j = 0; j < S; ++j) t[j] = y[j] + h * k3[j];
        ref_deriv(rod, t, k4);
        for (int j = 0; j < S; ++j) y[j] += h / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]);
    }
    memcpy(tip, y, sizeof y);
}

/* A rod and base state that differ from rod to rod in every input (rotated base frames,
 * forces and moments of a few newtons, gravity, precurvature, distributed force). */
static void make_rod(int k, asr_rod* rod, double* L, double* y0) {
    double c = cos(0.3 * k), s = sin(0.3 * k);
    memset(rod, 0, sizeof *rod);
    rod->E = 200e9 * (1 + 0.05 * k);
    rod->G = rod->E / 2.6;
    rod->r = 1e-3 * (1 + 0.1 * (k % 4));
    rod->rho = (k % 2) ? 8000.0 : 0.0;
    rod->g[2] = -9.81;
    rod->u0[0] = (k % 3) * 0.5;
    rod->f_ext[1] = 0.2 * (k % 5);
    *L = 0.3 + 0.05 * k;
    double R[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    memset(y0, 0, S * sizeof(double));
    y0[0] = 0.1 * k;
    memcpy(y0 + 3, R, sizeof R);
    y0[12] = 0.5 * sin(k), y0[13] = -0.3, y0[14] = 1.0 + 0.1 * k;
    y0[15] = 0.01 * k, y0[16] = -0.02, y0[17] = 0.005 * (k % 3);
}

static void test_packs_match_single_rods_and_the_textbook(void) {
    asr_rod rods[NROD];
    const asr_rod* ptr[NROD];
    double L[NROD], y0[NROD * S], tips[NROD * S], alone[S], ref[S];
    for (int k = 0; k < NROD; ++k) {
        make_rod(k, &rods[k], &L[k], y0 + S * k);
        ptr[k] = &rods[k];
    }
    CHECK_ST(rods_integrate(NROD, ptr, L, y0, NGRID, tips, NULL), ASR_OK);
    for (int k = 0; k < NROD; ++k) {
        CHECK_ST(asr_rod_integrate(&rods[k], L[k], y0 + S * k, NGRID, alone, NULL), ASR_OK);
        CHECK(memcmp(alone, tips + S * k, sizeof alone) == 0);
        ref_rk4(&rods[k], L[k], y0 + S * k, NGRID, ref);
        double worst = 0.0, scale = 0.0;
        for (int j = 0; j < S; ++j) {
            worst = fmax(worst, fabs(ref[j] - tips[S * k + j]));
            scale = fmax(scale, fabs(ref[j]));
        }
        CHECK(worst <= 1e-12 * scale);
        CHECK(fabs(tips[S * k + 2] - y0[S * k + 2]) > 0.1); /* the rod did go somewhere */
    }
}

static void test_paths(void) {
    asr_rod rods[3];
    const asr_rod* ptr[3];
    double L[3], y0[3 * S], tips[3 * S], path1[NGRID * S], single[NGRID * S], tip[S];
    for (int k = 0; k < 3; ++k) {
        make_rod(k + 4, &rods[k], &L[k], y0 + S * k);
        ptr[k] = &rods[k];
    }
    double* paths[3] = {NULL, path1, NULL};
    CHECK_ST(rods_integrate(3, ptr, L, y0, NGRID, tips, paths), ASR_OK);
    CHECK_ST(asr_rod_integrate(&rods[1], L[1], y0 + S, NGRID, tip, single), ASR_OK);
    CHECK(memcmp(path1, single, sizeof single) == 0);
    CHECK(memcmp(path1, y0 + S, S * sizeof(double)) == 0);
    CHECK(memcmp(path1 + (NGRID - 1) * S, tips + S, S * sizeof(double)) == 0);
}

static void test_errors(void) {
    asr_rod rods[2];
    const asr_rod* ptr[2] = {&rods[0], &rods[1]};
    double L[2], y0[2 * S], tips[2 * S];
    make_rod(1, &rods[0], &L[0], y0);
    make_rod(2, &rods[1], &L[1], y0 + S);
    CHECK_ST(rods_integrate(2, NULL, L, y0, NGRID, tips, NULL), ASR_ERR_NULL);
    CHECK_ST(rods_integrate(2, ptr, L, y0, 1, tips, NULL), ASR_ERR_RANGE);
    CHECK_ST(rods_integrate(-1, ptr, L, y0, NGRID, tips, NULL), ASR_ERR_RANGE);
    CHECK_ST(rods_integrate(0, ptr, L, y0, NGRID, tips, NULL), ASR_OK);
    const asr_rod* with_null[2] = {&rods[0], NULL};
    CHECK_ST(rods_integrate(2, with_null, L, y0, NGRID, tips, NULL), ASR_ERR_NULL);
    double bad_L[2] = {L[0], -1.0};
    CHECK_ST(rods_integrate(2, ptr, bad_L, y0, NGRID, tips, NULL), ASR_ERR_RANGE);
    bad_L[1] = NAN;
    CHECK_ST(rods_integrate(2, ptr, bad_L, y0, NGRID, tips, NULL), ASR_ERR_RANGE);
    /* a huge moment on rod 1 overflows; rod 0, in the same pack, is still right */
    double alone[S];
    y0[S + 16] = 1e300;
    CHECK_ST(rods_integrate(2, ptr, L, y0, NGRID, tips, NULL), ASR_ERR_NONFINITE);
    CHECK_ST(asr_rod_integrate(&rods[0], L[0], y0, NGRID, alone, NULL), ASR_OK);
    CHECK(memcmp(alone, tips, sizeof alone) == 0);
}

int main(void) {
    test_packs_match_single_rods_and_the_textbook();
    test_paths();
    test_errors();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
