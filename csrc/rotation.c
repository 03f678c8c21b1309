/* rotation.c - rotation vectors <-> rotation matrices for callers (the Python layer), with the
 * same formulas the CPR solver uses (rot3.h). */
#include <math.h>

#include "asr.h"
#include "rot3.h"

asr_status asr_rot_exp(const double* w, double* R) {
    if (!w || !R) return ASR_ERR_NULL;
    if (!isfinite(w[0]) || !isfinite(w[1]) || !isfinite(w[2])) return ASR_ERR_INPUT;
    rot_exp(w, R);
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
    cross(R, R + 3, c); /* det R = (row 0 x row 1) . row 2 */
    if (worst > tol || dot(c, R + 6) < 0.0) return ASR_ERR_RANGE;
    rot_log(R, w);
    return ASR_OK;
}
