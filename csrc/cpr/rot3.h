/* rot3.h - 3-D vectors and rotations (row-major 3x3), inlined into the solvers (private: the r3_
 * prefix). */
#ifndef ASR_ROT3_H
#define ASR_ROT3_H

#include <math.h>

static inline void r3_mat_mul(const double* A, const double* B, double* C) { /* C = A B */
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

static inline void r3_mat_vec(const double* A, const double* v, double* w) { /* w = A v */
    for (int i = 0; i < 3; ++i) w[i] = A[3 * i] * v[0] + A[3 * i + 1] * v[1] + A[3 * i + 2] * v[2];
}

static inline void r3_cross(const double* a, const double* b, double* c) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

static inline double r3_dot(const double* a, const double* b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Rotation by angle |w| about w/|w| (Rodrigues). */
static inline void r3_rot_exp(const double* w, double* R) {
    double th = sqrt(r3_dot(w, w));
    double a = th > 1e-12 ? sin(th) / th : 1.0 - th * th / 6.0;
    double b = th > 1e-6 ? (1.0 - cos(th)) / (th * th) : 0.5 - th * th / 24.0;
    double K[9] = {0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0}, K2[9];
    r3_mat_mul(K, K, K2);
    for (int k = 0; k < 9; ++k) R[k] = (k % 4 == 0) + a * K[k] + b * K2[k];
}

/* Rotation vector (angle in [0, pi]) of the rotation R = cos th I + sin th [a] + (1 - cos th) a a^T.
 * The angle comes from atan2(|v|/2, (tr R - 1)/2) with v = vee(R - R^T) = 2 sin(th) a, accurate
 * at every angle. Near pi, where v vanishes, the axis is the largest column of the symmetric part
 * minus cos th I, (1 - cos th) a a^T, its sign taken from v while v still has one. */
static inline void r3_rot_log(const double* R, double* w) {
    const double pi = 3.14159265358979323846;
    double v[3] = {R[7] - R[5], R[2] - R[6], R[3] - R[1]};
    double s2 = sqrt(r3_dot(v, v)), c = 0.5 * (R[0] + R[4] + R[8] - 1.0), th = atan2(0.5 * s2, c);
    if (th < pi - 1e-3) {
        /* th / (2 sin th), with sin th = s2 / 2; its series below 1e-4 rad */
        double f = th > 1e-4 ? th / s2 : 0.5 + th * th / 12.0;
        for (int k = 0; k < 3; ++k) w[k] = f * v[k];
        return;
    }
    int j = R[0] >= R[4] && R[0] >= R[8] ? 0 : (R[4] >= R[8] ? 1 : 2);
    double a[3];
    for (int k = 0; k < 3; ++k) a[k] = 0.5 * (R[3 * k + j] + R[3 * j + k]) - (k == j) * c;
    double na = sqrt(r3_dot(a, a)), sign = r3_dot(a, v) < 0.0 ? -1.0 : 1.0;
    for (int k = 0; k < 3; ++k) w[k] = sign * th * a[k] / na;
}

/* Two unit vectors completing the unit a to an orthonormal basis. */
static inline void r3_perp_basis(const double* a, double* b1, double* b2) {
    double e[3] = {0, 0, 0};
    e[fabs(a[0]) < 0.6 ? 0 : (fabs(a[1]) < 0.6 ? 1 : 2)] = 1.0;
    r3_cross(a, e, b1);
    double nb = sqrt(r3_dot(b1, b1));
    for (int k = 0; k < 3; ++k) b1[k] /= nb;
    r3_cross(a, b1, b2);
}

#endif
