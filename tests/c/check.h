/* check.h - the tiny test harness of the C tests: CHECK / CHECK_ST count passes and failures;
 * close_to compares within a tolerance; each program prints "N passed, M failed" at the end
 * (parsed by tests/test_c_core.py). */
#ifndef ASR_TEST_CHECK_H
#define ASR_TEST_CHECK_H

#include <math.h>
#include <stdio.h>

static long n_pass, n_fail;

static void check_(int ok, const char* what, const char* file, int line) {
    if (ok) {
        ++n_pass;
        return;
    }
    ++n_fail;
    if (n_fail <= 200) fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
}

#define CHECK(cond) check_((cond) != 0, #cond, __FILE__, __LINE__)
#define CHECK_ST(call, expected)                                                                   \
    do {                                                                                           \
        int st_ = (int)(call);                                                                     \
        int ex_ = (int)(expected);                                                                 \
        if (st_ != ex_) {                                                                          \
            fprintf(stderr, "%s:%d: status %d, expected %d: %s\n", __FILE__, __LINE__, st_, ex_,   \
                    #call);                                                                        \
        }                                                                                          \
        check_(st_ == ex_, #call, __FILE__, __LINE__);                                             \
    } while (0)

/* |a - b| within abs_tol + rel |b|. */
static inline int close_to(double a, double b, double rel, double abs_tol) {
    return fabs(a - b) <= abs_tol + rel * fabs(b);
}

#endif
