/* rotation.c - rotation vectors <-> rotation matrices for callers (the Python layer), with the
 * same formulas the CPR solver uses (rot3.h). */
#include <math.h>

#include "asr_cpr.h"
#include "rot3.h"

/* Rodrigues' formula from the unit axis, for angles past 1e8 rad: r3_rot_exp's (1 - cos)/|w|^2
 * turns subnormal near 1e154 rad and |w|^2 overflows beyond. ASR_ERR_RANGE when the angle |w|
 * itself overflows. */
static asr_status rot_exp_huge(const double* w, double* R) {
    double m = fmax(fabs(w[0]), fmax(fabs(w[1]), fabs(w[2])));
    double u[3] = {w[0] / m, w[1] / m, w[2] / m}, n = sqrt(r3_dot(u, u)), th = m * n;
    if (!isfinite(th)) return ASR_ERR_RANGE;
    double s = sin(th), c1 = 1.0 - cos(th);
    for (int k = 0; k < 3; ++k) u[k] /= n;
    double K[9] = {0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0}, K2[9];
    r3_mat_mul(K, K, K2);
    for (int k = 0; k < 9; ++k) R[k] = (k % 4 == 0) + s * K[k] + c1 * K2[k];
    return ASR_OK;
}

asr_status asr_rot_exp(const double* w, double* R) {
    if (!w || !R) return ASR_ERR_NULL;
    if (!isfinite(w[0]) || !isfinite(w[1]) || !isfinite(w[2])) return ASR_ERR_INPUT;
    if (!(r3_dot(w, w) <= 1e16)) return rot_exp_huge(w, R);
    r3_rot_exp(w, R);
    return ASR_OK;
}

asr_status asr_rot_log(const double* R, double tol, double* w) {
    if (!R || !w) return ASR_ERR_NULL;
    for (int k = 0; k < 9; ++k)
        if (!isfinite(R[k])) return ASR_ERR_INPUT;
    if (!(tol >= 0.0)) return ASR_ERR_RANGE;
    double worst = 0.0; /* max |R^T R - I| */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            double g = R[i] * R[j] + R[3 + i] * R[3 + j] + R[6 + i] * R[6 + j] - (i == j);
            worst = fmax(worst, fabs(g));
        }
    double c[3];
    r3_cross(R, R + 3, c); /* det R = (row 0 x row 1) . row 2 */
    if (worst > tol || r3_dot(c, R + 6) < 0.0) return ASR_ERR_RANGE;
    r3_rot_log(R, w);
    return ASR_OK;
}
