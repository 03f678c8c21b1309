/* joint.c - the joint step's chunks: instances loaded into lanes and stored back, the step
 * kernel built for the baseline instruction set, and the choice of kernel per batch.
 *
 * The step itself is joint_kernel.h, built here for the baseline (every x86-64; SSE2) and, on
 * GCC for x86-64, in joint_avx2.c and joint_avx512.c for those vector units, where a select is
 * one blend and a clamp a max and a min (lanes.h). A batch takes the widest kernel the CPU runs;
 * the environment variable ASR_SIMD (baseline, avx2 or avx512) caps it, for tests and
 * benchmarks. Every kernel gives the same bits. */
#include <stdlib.h>
#include <string.h>

#define JOINT_KERNEL chunk_step_baseline
#include "joint_kernel.h"
#include "asr_simd.h"
#include "simd.h"

/* ---------------------------------------------------------------- chunks */

asr_status chunk_alloc(const asr_batch* b, lane_chunk* ch) {
    size_t bytes = (size_t)b->n_joint * sizeof(lane_joint); /* a multiple of the alignment */
    ch->J = (lane_joint*)aligned_alloc(_Alignof(lane_joint), bytes);
    ch->i0 = ch->n = ch->nsub = 0;
    memset(ch->inst, 0, sizeof ch->inst);
    ch->dt = ch->max_substep = ch->h = 0.0;
    return ch->J ? ASR_OK : ASR_ERR_NOMEM;
}

void chunk_free(lane_chunk* ch) {
    free(ch->J);
    ch->J = NULL;
}

/* Joint j's parameters of the chunk's instances into J->p (the shared ones broadcast). */
static void load_params(const asr_batch* b, const lane_chunk* ch, int j, lane_joint* J) {
    const joint_params* jp = &b->params[j];
    for (int k = 0; k < jp->nparam; ++k) {
        for (int l = 0; l < ASR_LANES; ++l) J->p[k][l] = param_at(jp, k, chunk_instance(ch, l));
    }
    const lane_d* p = J->p;
    J->z_motor = p[ASR_P_FRICTION] / p[ASR_P_FRICTION_K];
    J->z_edge_motor = motor_band_edge(J->z_motor);
    J->z_link = p[ASR_P_LINK_FRICTION] / p[ASR_P_LINK_FRICTION_K];
    J->torque_drive = lane_all(p[ASR_P_DRIVE] == 0.0);
    J->no_integral = lane_all(p[ASR_P_KI] == 0.0);
}

void chunk_load(const asr_batch* b, lane_chunk* ch) {
    for (int j = 0; j < b->n_joint; ++j) load_params(b, ch, j, &ch->J[j]);
    chunk_load_state(b, ch);
}

/* Four values at p, unaligned, as one vector. */
static inline lane_d load4(const double* p) {
    lane_d v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* A 4 x 4 transpose: rows a, b, c, d (four fields of lanes 0-3, or one field's lanes) into the
 * columns r0..r3. Data movement only: no value changes. */
#define TRANSPOSE4(a, b, c, d, r0, r1, r2, r3)                                                     \
    do {                                                                                           \
        const lane_m lo_ = {0, 4, 2, 6}, hi_ = {1, 5, 3, 7}, first_ = {0, 1, 4, 5},                \
                     last_ = {2, 3, 6, 7};                                                         \
        lane_d t0_ = __builtin_shuffle(a, b, lo_), t1_ = __builtin_shuffle(a, b, hi_);             \
        lane_d t2_ = __builtin_shuffle(c, d, lo_), t3_ = __builtin_shuffle(c, d, hi_);             \
        r0 = __builtin_shuffle(t0_, t2_, first_);                                                  \
        r1 = __builtin_shuffle(t1_, t3_, first_);                                                  \
        r2 = __builtin_shuffle(t0_, t2_, last_);                                                   \
        r3 = __builtin_shuffle(t1_, t3_, last_);                                                   \
    } while (0)

_Static_assert(ASR_NFIELD % 4 == 0, "the records move four fields at a time");
_Static_assert(ASR_LANES == 4, "the transposes are written for four lanes");

/* The records move into and out of the lanes four fields at a time, transposed in vector
 * registers, by static functions cloned per vector unit (ASR_CLONED; a cloned function with
 * external linkage would export its resolver from the library). */
ASR_CLONED static void load_state(const asr_batch* b, lane_chunk* ch) {
    size_t nj = (size_t)b->n_joint;
    for (int j = 0; j < b->n_joint; ++j) {
        lane_joint* J = &ch->J[j];
        if (ch->n == 1) { /* one instance in every lane: one broadcast per field */
            const double* rec = joint_state(b, (size_t)ch->i0 * nj + (size_t)j);
            for (int k = 0; k < ASR_NFIELD; ++k) J->s[k] = lane_set(rec[k]);
            continue;
        }
        const double* r0 = joint_state(b, (size_t)chunk_instance(ch, 0) * nj + (size_t)j);
        const double* r1 = joint_state(b, (size_t)chunk_instance(ch, 1) * nj + (size_t)j);
        const double* r2 = joint_state(b, (size_t)chunk_instance(ch, 2) * nj + (size_t)j);
        const double* r3 = joint_state(b, (size_t)chunk_instance(ch, 3) * nj + (size_t)j);
        for (int k = 0; k < ASR_NFIELD; k += 4) {
            TRANSPOSE4(load4(r0 + k), load4(r1 + k), load4(r2 + k), load4(r3 + k), J->s[k],
                       J->s[k + 1], J->s[k + 2], J->s[k + 3]);
        }
    }
    for (int l = 0; l < ASR_LANES; ++l) {
        /* a padding lane steps as the instance it repeats (its result is never stored) */
        ch->live[l] = b->status.code[chunk_instance(ch, l)] == ASR_OK ? -1 : 0;
    }
}

void chunk_load_state(const asr_batch* b, lane_chunk* ch) { load_state(b, ch); }

ASR_CLONED static void store(asr_batch* b, const lane_chunk* ch) {
    size_t nj = (size_t)b->n_joint;
    for (int j = 0; j < b->n_joint; ++j) {
        const lane_joint* J = &ch->J[j];
        double* rec[ASR_LANES];
        for (int l = 0; l < ch->n; ++l) {
            rec[l] = joint_state(b, (size_t)(ch->i0 + l) * nj + (size_t)j);
        }
        for (int k = 0; k < ASR_NFIELD; k += 4) {
            lane_d c[ASR_LANES];
            TRANSPOSE4(J->s[k], J->s[k + 1], J->s[k + 2], J->s[k + 3], c[0], c[1], c[2], c[3]);
            switch (ch->n) { /* the lanes in use, stored */
            case 4:
                memcpy(rec[3] + k, &c[3], sizeof c[3]);
                /* fall through */
            case 3:
                memcpy(rec[2] + k, &c[2], sizeof c[2]);
                /* fall through */
            case 2:
                memcpy(rec[1] + k, &c[1], sizeof c[1]);
                /* fall through */
            default:
                memcpy(rec[0] + k, &c[0], sizeof c[0]);
            }
        }
    }
}

void chunk_store(asr_batch* b, const lane_chunk* ch) { store(b, ch); }

/* ---------------------------------------------------------------- kernels */

#define SIMD_NAME_(id, name) name,
static const char* const simd_names[ASR_NSIMD] = {ASR_SIMD_KERNELS(SIMD_NAME_)};
#undef SIMD_NAME_

const char* asr_simd_name(int k) { return (k >= 0 && k < ASR_NSIMD) ? simd_names[k] : NULL; }

/* The kernels this build has, indexed by asr_simd_kernel (narrowest first). */
static const chunk_kernel kernels[] = {
    [ASR_SIMD_BASELINE] = chunk_step_baseline,
#if ASR_X86_KERNELS
    [ASR_SIMD_AVX2] = chunk_step_avx2,
    [ASR_SIMD_AVX512] = chunk_step_avx512,
#endif
};

enum {
    NKERNEL = (int)(sizeof kernels / sizeof kernels[0])
};

/* Whether this CPU runs kernel k. */
static int kernel_supported(int k) {
#if ASR_X86_KERNELS /* libgcc's constructor has read the CPU's features by now */
    if (k == ASR_SIMD_AVX2) return __builtin_cpu_supports("avx2");
    if (k == ASR_SIMD_AVX512) {
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq");
    }
#endif
    return k == ASR_SIMD_BASELINE;
}

void chunk_pick_kernel(asr_batch* b) {
    const char* cap = getenv("ASR_SIMD"); /* an unknown name caps nothing */
    int k = NKERNEL - 1;
    for (int c = 0; cap && c < NKERNEL; ++c) {
        if (strcmp(simd_names[c], cap) == 0) k = c;
    }
    while (k > 0 && !kernel_supported(k)) --k;
    b->kernel = kernels[k];
    b->kernel_name = simd_names[k];
}

asr_status chunk_step(asr_batch* b, lane_chunk* ch, const step_inputs* in, long long step_index) {
    return b->kernel(b, ch, in, step_index);
}

asr_status step_instances(asr_batch* b, int i0, int i1, const step_inputs* in,
                          long long step_index) {
    lane_chunk ch;
    if (chunk_alloc(b, &ch) != ASR_OK) return ASR_ERR_NOMEM;
    asr_status first = ASR_OK;
    for (int i = i0; i < i1; i += ASR_LANES) {
        chunk_at(&ch, i, i1);
        chunk_load(b, &ch);
        asr_status st = chunk_step(b, &ch, in, step_index);
        chunk_store(b, &ch);
        if (first == ASR_OK) first = st;
    }
    chunk_free(&ch);
    return first;
}
