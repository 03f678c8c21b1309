/* test_core_fuzz.c - a plain C test of asr's public C API (asr.h), no framework: a
 * deterministic random-input fuzz loop (own xorshift PRNG) over the compliance models, batches and
 * rollouts; every status in the enum, every output of an ASR_OK call finite unless an input or a
 * parameter was not. The iteration count is the first argument (default 20000). Prints
 * "N passed, M failed" and returns non-zero on failure.
 *
 * Build (see tests/test_c_core.py): gcc -std=c11 -Wall -Wextra -Wpedantic -Wmissing-prototypes
 * -Werror -ffp-contract=off -Icsrc, csrc/ sources plus this file, -lm -lpthread. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_check.h"

/* A named class of fuzz failure: counted, the first one described. */
typedef struct fuzz_class {
    const char* name;
    long count;
    char first[512];
} fuzz_class;

static void fuzz_fail(fuzz_class* c, const char* detail) {
    if (c->count++ == 0) snprintf(c->first, sizeof c->first, "%s", detail);
}

static void fuzz_report(const fuzz_class* c) {
    if (c->count) {
        fprintf(stderr, "fuzz: %ld x %s; first: %s\n", c->count, c->name, c->first);
    }
    check_(c->count == 0, c->name, __FILE__, __LINE__);
}

/* ---------------------------------------------------------------- PRNG (xorshift64) */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double unit(void) { return (double)(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

static int below(int n) { return (int)(next_u64() % (uint64_t)n); }

static const double specials[] = {
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    1e-300,
    -1e-300,
    4.9406564584124654e-324,
    2.2250738585072014e-308,
    1e300,
    -1e300,
    1.7976931348623157e308,
    -1.7976931348623157e308,
    1e10,
    -1e10,
    0.05,
    0.8,
    3.14159,
    1e5,
};
#define NSPECIAL ((int)(sizeof specials / sizeof specials[0]))

/* Any double: specials, NaN, +-inf, raw bit patterns (NaN payloads, denormals, huge), uniform. */
static double any_double(void) {
    switch (below(10)) {
    case 0:
        return specials[below(NSPECIAL)];
    case 1:
        return NAN;
    case 2:
        return below(2) ? HUGE_VAL : -HUGE_VAL;
    case 3: {
        uint64_t u = next_u64();
        double d;
        memcpy(&d, &u, sizeof d);
        return d;
    }
    case 4:
        return (unit() - 0.5) * 2e6;
    default:
        return (unit() - 0.5) * 4.0;
    }
}

/* Mostly a modest value, sometimes anything. */
static double mostly_small(double scale) {
    return below(8) ? (unit() - 0.5) * 2.0 * scale : any_double();
}

/* A parameter value: mostly its default or a valid-looking multiple, sometimes anything. */
static double any_param(const asr_param_spec* spec, double def) {
    switch (below(6)) {
    case 0:
    case 1:
        return def;
    case 2:
    case 3: {
        double v = (isfinite(def) && def != 0.0 ? def : 1.0) * pow(10.0, (unit() - 0.5) * 6.0);
        return asr_param_valid(spec, v) ? v : def;
    }
    default:
        return any_double();
    }
}

static const asr_param_spec* joint_param_spec(const asr_model_def* m, int k) {
    return k < ASR_NCOMMON ? asr_common_param_spec(k) : &m->params[k - ASR_NCOMMON];
}

/* ---------------------------------------------------------------- fuzz */

enum {
    FZ_N = 3,
    FZ_MAXP = 64
};

static void test_fuzz(long iterations) {
    fuzz_class bad_status = {"status code outside the asr_status enum", 0, ""};
    /* non-finite outputs of an ASR_OK evaluation, by cause: a non-finite input, a parameter
     * outside its spec's range, or neither (overflow inside the model) */
    fuzz_class comp_nonfinite[3] = {
        {"asr_compliance_eval returned ASR_OK with non-finite outputs for a non-finite input "
         "(expected ASR_ERR_INPUT)",
         0, ""},
        {"asr_compliance_eval returned ASR_OK with non-finite outputs for an out-of-range "
         "parameter (expected ASR_ERR_RANGE)",
         0, ""},
        {"asr_compliance_eval returned ASR_OK with non-finite outputs for finite inputs and "
         "valid parameters (expected ASR_ERR_NONFINITE)",
         0, ""}};
    fuzz_class map_nonfinite[3] = {
        {"asr_reference_map_eval returned ASR_OK with non-finite outputs for a non-finite "
         "input (expected ASR_ERR_INPUT)",
         0, ""},
        {"asr_reference_map_eval returned ASR_OK with non-finite outputs for an out-of-range "
         "parameter (expected ASR_ERR_RANGE)",
         0, ""},
        {"asr_reference_map_eval returned ASR_OK with non-finite outputs for finite inputs and "
         "valid parameters (expected ASR_ERR_NONFINITE)",
         0, ""}};
    fuzz_class set_bad_index = {"asr_batch_set_param: bad_index wrong", 0, ""};
    fuzz_class set_roundtrip = {"asr_batch_set_param/get_param do not round-trip", 0, ""};
    fuzz_class input_false = {
        "an instance frozen with ASR_ERR_INPUT although all its inputs were finite", 0, ""};
    fuzz_class running_nonfinite = {"a running instance (status 0) has a non-finite state field", 0,
                                    ""};
    fuzz_class frozen_torque = {"a frozen instance applies torque", 0, ""};
    fuzz_class rollout_nonfinite = {"rollout recorded a non-finite tau_joint of a running "
                                    "instance",
                                    0, ""};
    char msg[512];

    /* one joint of every built-in model, in a mode with motors where it has them */
    enum {
        NJ = 7
    };
    const asr_model_def* defs[NJ];
    int modes[NJ] = {1, 5, 6, 3, 4, 6, 6};
    for (int m = 0; m < NJ; ++m) defs[m] = asr_model_get(m);
    tbatch t;
    CHECK_ST(tb_create(&t, FZ_N, NJ, defs, modes), ASR_OK);
    if (!t.b) return;
    const size_t per = (size_t)FZ_N * NJ;

    for (long it = 0; it < iterations; ++it) {
        /* ---- compliance and reference map of a random model */
        int mi = below(asr_model_count());
        const asr_model_def* m = asr_model_get(mi);
        int npt = 1 + below(3);
        int np = m->nparam;
        double params[3 * 8];
        for (int r = 0; r < npt; ++r) {
            for (int k = 0; k < np; ++k)
                params[r * np + k] = any_param(&m->params[k], m->params[k].def);
        }
        int pstride = below(2) ? np : 0;
        int params_valid[3];
        for (int p = 0; p < npt; ++p) {
            params_valid[p] = 1;
            for (int k = 0; k < np; ++k) {
                double v = params[(pstride ? p : 0) * np + k];
                params_valid[p] &= asr_param_valid(&m->params[k], v);
            }
        }
        asr_elastic_in in[3];
        asr_elastic_out out[3];
        int inputs_finite[3];
        for (int p = 0; p < npt; ++p) {
            in[p].q = mostly_small(1.0);
            in[p].qd = mostly_small(5.0);
            in[p].th1 = mostly_small(1.0);
            in[p].th2 = (mi == 3) ? (below(4) ? unit() * 0.04 : any_double()) : mostly_small(1.0);
            in[p].th1d = mostly_small(5.0);
            in[p].th2d = mostly_small(5.0);
            inputs_finite[p] = isfinite(in[p].q) && isfinite(in[p].qd) && isfinite(in[p].th1) &&
                               isfinite(in[p].th2) && isfinite(in[p].th1d) && isfinite(in[p].th2d);
        }
        int st = asr_compliance_eval(m, below(50) ? npt : -1, np ? params : NULL,
                                     below(50) ? pstride : -1, in, out);
        if (!valid_status(st)) {
            snprintf(msg, sizeof msg, "compliance %s -> %d", m->name, st);
            fuzz_fail(&bad_status, msg);
        }
        if (st == ASR_OK) {
            for (int p = 0; p < npt; ++p) {
                if (elastic_out_finite(&out[p])) continue;
                snprintf(msg, sizeof msg,
                         "%s q=%g qd=%g th1=%g th2=%g th1d=%g th2d=%g p0=%g p1=%g -> tau1=%g "
                         "stiffness=%g",
                         m->name, in[p].q, in[p].qd, in[p].th1, in[p].th2, in[p].th1d, in[p].th2d,
                         np > 0 ? params[(pstride ? p * np : 0)] : 0.0,
                         np > 1 ? params[(pstride ? p * np : 0) + 1] : 0.0, out[p].tau1,
                         out[p].stiffness);
                fuzz_fail(&comp_nonfinite[!inputs_finite[p] ? 0 : (!params_valid[p] ? 1 : 2)], msg);
                break;
            }
        }
        double eq[3], pre[3], t1[3], t2[3];
        for (int p = 0; p < npt; ++p) {
            eq[p] = mostly_small(2.0);
            pre[p] = (mi == 3) ? (below(4) ? unit() * 0.04 : any_double()) : mostly_small(1.0);
        }
        st = asr_reference_map_eval(m, npt, np ? params : NULL, pstride, eq, pre, t1, t2);
        if (!valid_status(st)) {
            snprintf(msg, sizeof msg, "reference map %s -> %d", m->name, st);
            fuzz_fail(&bad_status, msg);
        }
        for (int p = 0; st == ASR_OK && p < npt; ++p) {
            if (isfinite(t1[p]) && isfinite(t2[p])) continue;
            snprintf(msg, sizeof msg, "%s eq=%g preset=%g p0=%g -> th1=%g th2=%g", m->name, eq[p],
                     pre[p], np > 0 ? params[(pstride ? p : 0) * np] : 0.0, t1[p], t2[p]);
            int finite_in = isfinite(eq[p]) && isfinite(pre[p]);
            fuzz_fail(&map_nonfinite[!finite_in ? 0 : (!params_valid[p] ? 1 : 2)], msg);
            break;
        }

        /* ---- batch: random parameter */
        {
            int j = below(12) ? below(NJ) : below(NJ + 4) - 2;
            int nparam = (j >= 0 && j < NJ) ? asr_batch_nparam(t.b, j) : -1;
            int k = below(12) ? below(nparam > 0 ? nparam : 1) : below(80) - 8;
            int count = below(2) ? 1 : (below(8) ? FZ_N : below(6) - 1);
            double vals[FZ_N + 4];
            const asr_param_spec* spec =
                (nparam > 0 && k >= 0 && k < nparam) ? joint_param_spec(defs[j], k) : NULL;
            double def =
                !spec ? 0.0 : (k < ASR_NCOMMON ? asr_common_param_default(defs[j], k) : spec->def);
            for (int c = 0; c < FZ_N + 4; ++c) {
                vals[c] = spec ? any_param(spec, def) : any_double();
            }
            /* the motor position limits must also stay ordered (pos_min < pos_max) */
            int is_limit = spec && (k == ASR_P_POS_MIN || k == ASR_P_POS_MAX);
            double other[FZ_N];
            if (is_limit) {
                asr_batch_get_param(t.b, j, k == ASR_P_POS_MIN ? ASR_P_POS_MAX : ASR_P_POS_MIN,
                                    other);
            }
            int bad = -99;
            st = asr_batch_set_param(t.b, j, k, vals, count, &bad);
            if (!valid_status(st)) {
                snprintf(msg, sizeof msg, "set_param j=%d k=%d count=%d -> %d", j, k, count, st);
                fuzz_fail(&bad_status, msg);
            }
            if (spec && (count == 1 || count == FZ_N)) {
                int first_bad = -1;
                for (int c = 0; c < count && first_bad < 0; ++c) {
                    if (!asr_param_valid(spec, vals[c])) first_bad = c;
                }
                for (int i = 0; is_limit && first_bad < 0 && i < FZ_N; ++i) {
                    double v = vals[count == 1 ? 0 : i];
                    int ordered = k == ASR_P_POS_MIN ? v < other[i] : other[i] < v;
                    if (!ordered) first_bad = count == 1 ? 0 : i;
                }
                int wrong = (first_bad >= 0) != (st == ASR_ERR_RANGE) ||
                            (first_bad >= 0 && bad != first_bad);
                if (wrong) {
                    snprintf(msg, sizeof msg, "j=%d k=%d count=%d st=%d bad=%d expected %d", j, k,
                             count, st, bad, first_bad);
                    fuzz_fail(&set_bad_index, msg);
                }
                if (st == ASR_OK) {
                    double got[FZ_N];
                    asr_batch_get_param(t.b, j, k, got);
                    for (int i = 0; i < FZ_N; ++i) {
                        double want = vals[count == 1 ? 0 : i];
                        if (memcmp(&got[i], &want, sizeof want) != 0) {
                            snprintf(msg, sizeof msg, "j=%d k=%d i=%d got %g want %g", j, k, i,
                                     got[i], want);
                            fuzz_fail(&set_roundtrip, msg);
                            break;
                        }
                    }
                }
            }
        }
        if (below(20) == 0) {
            st = asr_batch_set_mode(t.b, below(NJ + 2) - 1, below(9) - 1);
            if (!valid_status(st)) fuzz_fail(&bad_status, "set_mode");
        }
        if (below(40) == 0) {
            double h = below(2) ? any_double() : 1e-3;
            st = asr_batch_set_max_substep(t.b, h);
            if (!valid_status(st)) fuzz_fail(&bad_status, "set_max_substep");
            if (st == ASR_OK && !(h >= 1e-4)) asr_batch_set_max_substep(t.b, 1e-3); /* time */
        }
        if (below(30) == 0) {
            double q0[FZ_N * NJ], r0[2 * FZ_N * NJ];
            for (size_t x = 0; x < per; ++x) {
                q0[x] = below(50) ? mostly_small(1.0) : any_double();
                r0[2 * x] = mostly_small(1.0);
                r0[2 * x + 1] = unit() * 0.04;
            }
            st = asr_batch_reset(t.b, below(4) ? q0 : NULL, below(2) ? r0 : NULL);
            if (!valid_status(st)) fuzz_fail(&bad_status, "reset");
        }

        /* ---- batch: one step with random inputs */
        double q[FZ_N * NJ], qd[FZ_N * NJ], refs[2 * FZ_N * NJ], ext[FZ_N * NJ], ff[FZ_N * NJ];
        for (size_t x = 0; x < per; ++x) {
            q[x] = below(30) ? mostly_small(1.0) : any_double();
            qd[x] = below(30) ? mostly_small(3.0) : any_double();
            refs[2 * x] = below(30) ? mostly_small(1.0) : any_double();
            refs[2 * x + 1] = below(30) ? unit() * 0.04 : any_double();
            ext[x] = below(30) ? mostly_small(1.0) : any_double();
            ff[x] = below(4) ? 0.0 : (below(30) ? mostly_small(1.0) : any_double());
        }
        double dt = below(16) ? 1e-5 + unit() * 0.01 : any_double();
        /* a long but valid dt only costs time (up to 1e6 sub-steps): cap it, keep the huge
         * values that must be rejected */
        if (isfinite(dt) && dt > 0.05 && dt < 1e290) dt = 0.05;
        int use_ext = below(2), use_ff = below(2);
        int code_before[FZ_N];
        memcpy(code_before, t.code, sizeof code_before);
        st = below(8)
                 ? asr_batch_step(t.b, dt, q, qd, refs, use_ext ? ext : NULL, use_ff ? ff : NULL)
                 : asr_batch_rollout(t.b, below(3), dt, S(q, NJ, 0), S(qd, NJ, 0),
                                     S(refs, 2 * NJ, 0), S(use_ext ? ext : NULL, NJ, 0), 0, NULL,
                                     NULL);
        if (!valid_status(st)) {
            snprintf(msg, sizeof msg, "step -> %d", st);
            fuzz_fail(&bad_status, msg);
        }
        for (int i = 0; i < FZ_N; ++i) {
            if (!valid_status(t.code[i])) fuzz_fail(&bad_status, "status.code");
            if (t.code[i] == ASR_ERR_INPUT && code_before[i] == ASR_OK) {
                int j = t.joint[i];
                size_t x = (size_t)i * NJ + (size_t)(j >= 0 ? j : 0);
                int fin = isfinite(q[x]) && isfinite(qd[x]) && isfinite(refs[2 * x]) &&
                          isfinite(refs[2 * x + 1]) && (!use_ext || isfinite(ext[x])) &&
                          (!use_ff || isfinite(ff[x]));
                if (fin) {
                    snprintf(msg, sizeof msg,
                             "joint %d: q=%g qd=%g ref1=%g ref2=%g tau_ext=%g tau_ff=%g", j, q[x],
                             qd[x], refs[2 * x], refs[2 * x + 1], use_ext ? ext[x] : 0.0,
                             use_ff ? ff[x] : 0.0);
                    fuzz_fail(&input_false, msg);
                }
            }
            for (int j = 0; j < NJ; ++j) {
                if (t.code[i] != ASR_OK) {
                    if (*field(&t, i, j, ASR_F_TAU_JOINT) != 0.0 ||
                        *field(&t, i, j, ASR_F_TAU_LINK) != 0.0) {
                        fuzz_fail(&frozen_torque, asr_model_get(j)->name);
                    }
                    continue;
                }
                for (int k = 0; k < ASR_NFIELD; ++k) {
                    double v = *field(&t, i, j, k);
                    if (isfinite(v)) continue;
                    snprintf(msg, sizeof msg, "model %s mode %d field %s = %g", defs[j]->name,
                             modes[j], asr_state_field_name(k), v);
                    fuzz_fail(&running_nonfinite, msg);
                    break;
                }
            }
        }
        if (below(50) == 0) {
            int rf[2] = {ASR_F_TAU_JOINT, ASR_F_TH1};
            double rec[3 * 2 * FZ_N * NJ];
            st = asr_batch_rollout(t.b, 3, 1e-3, S(q, NJ, 0), S(qd, NJ, 0), S(refs, 2 * NJ, 0),
                                   S(NULL, 0, 0), 2, rf, rec);
            if (!valid_status(st)) fuzz_fail(&bad_status, "rollout");
            if (st == ASR_OK) {
                for (int i = 0; i < FZ_N; ++i) {
                    if (t.code[i] != ASR_OK) continue;
                    for (int s = 0; s < 3; ++s) {
                        for (int j = 0; j < NJ; ++j) {
                            double v = rec[((size_t)i * 3 + (size_t)s) * NJ + (size_t)j];
                            if (!isfinite(v)) fuzz_fail(&rollout_nonfinite, defs[j]->name);
                        }
                    }
                }
            }
        }
        if (it % 25 == 0) { /* revive frozen instances, and sometimes the default parameters */
            asr_batch_reset(t.b, NULL, NULL);
            if (it % 500 == 0) {
                tb_free(&t);
                CHECK_ST(tb_create(&t, FZ_N, NJ, defs, modes), ASR_OK);
                if (!t.b) return;
            }
        }
    }
    tb_free(&t);
    fuzz_report(&bad_status);
    for (int c = 0; c < 3; ++c) fuzz_report(&comp_nonfinite[c]);
    for (int c = 0; c < 3; ++c) fuzz_report(&map_nonfinite[c]);
    fuzz_report(&set_bad_index);
    fuzz_report(&set_roundtrip);
    fuzz_report(&input_false);
    fuzz_report(&running_nonfinite);
    fuzz_report(&frozen_torque);
    fuzz_report(&rollout_nonfinite);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char** argv) {
    long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    test_fuzz(iterations);
    printf("%ld passed, %ld failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
