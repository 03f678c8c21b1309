/* asr_simd.h - building hot loops for the vector units the machine has: a build macro of the
 * core, public to the parts built on it (cpr clones its rod integration and its dense linear
 * algebra with it). Not part of the cffi cdef (asr.h does not include it). */
#ifndef ASR_API_SIMD_H
#define ASR_API_SIMD_H

#include <limits.h> /* defines __GLIBC__ where glibc is the C library */

/* On x86-64 Linux with GCC and glibc, a function marked ASR_CLONED is compiled for AVX-512,
 * AVX2 and the baseline, and the loader picks one per machine (an ifunc; musl has none);
 * elsewhere it is the baseline build.
 * No FMA is enabled (and -ffp-contract=off is set), so every clone rounds exactly like the
 * baseline: the choice changes the speed, never a result.
 * Not under ThreadSanitizer: it instruments the ifunc resolver, which the loader runs before the
 * sanitizer's runtime is set up (a crash at start-up). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) &&       \
    defined(__GLIBC__) && !defined(__SANITIZE_THREAD__)
#define ASR_CLONED __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ASR_CLONED
#endif

#endif
