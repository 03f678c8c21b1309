/* test_lanes.c - the lane arithmetic of the actuator step (csrc/core/lanes.h): the core's own
 * exponential against a long-double reference (the accuracy its comment states), its special
 * values, and lane independence (a value's result does not depend on its lane or neighbours);
 * the selects, clamps and signs against their scalar definitions (internal.h). Built as it is
 * (portable vector code) and for AVX2 (test_lanes_avx2.c: blends, max/min, movmsk). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/internal.h"
#include "core/lanes.h"

static unsigned long long lcg_state = 2026;

/* Deterministic values in [lo, hi). */
static double uniform(double lo, double hi) {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * ((double)(lcg_state >> 11) / 9007199254740992.0);
}

/* |got - ref| in units of the last place of the double nearest ref (long double throughout: a
 * quotient rounded to double would lose the fraction near the subnormal range). */
static long double ulp_error(double got, long double ref) {
    double r = (double)ref;
    long double ulp = (long double)nextafter(fabs(r), INFINITY) - (long double)fabs(r);
    return fabsl((long double)got - ref) / ulp;
}

/* Largest error over n random arguments in [lo, hi), four lanes at a time. */
static long double exp_max_error(double lo, double hi, int n) {
    long double worst = 0.0L;
    for (int k = 0; k < n; k += ASR_LANES) {
        lane_d x;
        for (int l = 0; l < ASR_LANES; ++l) x[l] = uniform(lo, hi);
        lane_d y = lane_exp(x);
        for (int l = 0; l < ASR_LANES; ++l) {
            long double e = ulp_error(y[l], expl((long double)x[l]));
            if (e > worst) worst = e;
        }
    }
    return worst;
}

static void test_exp_accuracy(void) {
    static const double ranges[][2] = {
        {-8.0, 8.0}, {-0.5, 0.5}, {-708.0, -700.0}, {-708.0, 709.0}, {700.0, 709.0}};
    for (int r = 0; r < 5; ++r) {
        long double e = exp_max_error(ranges[r][0], ranges[r][1], 400000);
        printf("exp on [%g, %g]: max error %.3Lf ulp\n", ranges[r][0], ranges[r][1], e);
        CHECK(e <= 0.85L); /* lanes.h states at most 1 ulp; measured about 0.81 */
    }
}

static void test_exp_special_values(void) {
    CHECK(lane_exp1(0.0) == 1.0);
    CHECK(lane_exp1(-0.0) == 1.0);
    CHECK(lane_exp1(709.78) < DBL_MAX && lane_exp1(709.78) > 1e308);
    CHECK(isinf(lane_exp1(709.79)) && lane_exp1(709.79) > 0.0);
    CHECK(isinf(lane_exp1(1e300)) && isinf(lane_exp1(INFINITY)));
    CHECK(lane_exp1(-746.0) == 0.0 && lane_exp1(-INFINITY) == 0.0 && lane_exp1(-1e300) == 0.0);
    CHECK(lane_exp1(-745.0) > 0.0); /* the smallest subnormal */
    CHECK(isnan(lane_exp1(NAN)));
    CHECK(ulp_error(lane_exp1(1.0), expl(1.0L)) <= 0.85L);
    /* monotone across the reduction's interval boundaries */
    for (int k = -20; k <= 20; ++k) {
        double x = k * 0.34657359027997264; /* multiples of ln2 / 2 */
        CHECK(lane_exp1(nextafter(x, -INFINITY)) <= lane_exp1(x));
        CHECK(lane_exp1(x) <= lane_exp1(nextafter(x, INFINITY)));
    }
}

/* A value's result is the same in every lane, whatever its neighbours (NaN, inf, huge). */
static void test_lane_independence(void) {
    const double odd[] = {NAN, INFINITY, -INFINITY, 1e308, -1e308, 0.0};
    for (int k = 0; k < 200; ++k) {
        double x = uniform(-30.0, 30.0);
        double ref = lane_exp1(x);
        for (int l = 0; l < ASR_LANES; ++l) {
            lane_d v;
            for (int m = 0; m < ASR_LANES; ++m) v[m] = odd[(k + m) % 6];
            v[l] = x;
            CHECK(lane_exp(v)[l] == ref);
        }
    }
}

/* Selects, clamps and signs lane by lane equal the scalar helpers, NaN and signed zeros too. */
static void test_select_clamp_sign(void) {
    const double vals[] = {-2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, NAN, INFINITY, -INFINITY};
    const int n = (int)(sizeof vals / sizeof vals[0]);
    for (int a = 0; a < n; ++a) {
        lane_d x = lane_set(vals[a]);
        double c = num_clamp(vals[a], -1.0, 1.0), s = num_sign(vals[a]);
        double lc = lane_clamp(x, lane_set(-1.0), lane_set(1.0))[0], ls = lane_sign(x)[0];
        CHECK(memcmp(&c, &lc, sizeof c) == 0 || (isnan(c) && isnan(lc)));
        CHECK(memcmp(&s, &ls, sizeof s) == 0);
        double ab = fabs(vals[a]), lab = lane_abs(x)[0];
        CHECK(memcmp(&ab, &lab, sizeof ab) == 0 || (isnan(ab) && isnan(lab)));
        lane_m m = x > 0.5;
        CHECK(lane_sel(m, lane_set(1.0), lane_set(2.0))[0] == (vals[a] > 0.5 ? 1.0 : 2.0));
        /* bounds that are signed zeros: max/min must keep x's zero, as the compares do */
        static const double bounds[][2] = {{-0.0, 0.0}, {0.0, 0.0}, {-0.0, -0.0}, {-1.0, -0.0}};
        for (int k = 0; k < 4; ++k) {
            double cz = num_clamp(vals[a], bounds[k][0], bounds[k][1]);
            double lz = lane_clamp(x, lane_set(bounds[k][0]), lane_set(bounds[k][1]))[0];
            CHECK(memcmp(&cz, &lz, sizeof cz) == 0 || (isnan(cz) && isnan(lz)));
        }
    }
    CHECK(lane_any(lane_mask(1)) && !lane_any(lane_mask(0)));
    CHECK(lane_all(lane_mask(1)) && !lane_all(lane_mask(0)));
    /* one lane set, the others not: each lane is seen, and selects pick per lane */
    for (int l = 0; l < ASR_LANES; ++l) {
        lane_m one = lane_mask(0);
        one[l] = -1;
        CHECK(lane_any(one) && !lane_all(one) && lane_all(~(one & lane_mask(0))));
        lane_d v = lane_sel(one, lane_set(1.0), lane_set(2.0));
        for (int m = 0; m < ASR_LANES; ++m) CHECK(v[m] == (m == l ? 1.0 : 2.0));
        lane_d lo = lane_set(-1.0), hi = lane_set(1.0);
        lo[l] = 0.5;
        hi[l] = 0.75;
        lane_d c = lane_clamp(lane_set(0.0), lo, hi);
        for (int m = 0; m < ASR_LANES; ++m) CHECK(c[m] == (m == l ? 0.5 : 0.0));
    }
}

int main(void) {
#ifdef __AVX2__ /* built for AVX2 (test_lanes_avx2.c) */
    if (!__builtin_cpu_supports("avx2")) {
        printf("this CPU has no AVX2: the AVX2 build of the lane tests cannot run\n");
        return 1;
    }
#endif
    test_exp_accuracy();
    test_exp_special_values();
    test_lane_independence();
    test_select_clamp_sign();
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail != 0;
}
