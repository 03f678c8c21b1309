/* simd.h - the core's joint step built for the vector units the machine has (private; the
 * cloning macro the other parts use is asr_simd.h). */
#ifndef ASR_SIMD_H
#define ASR_SIMD_H

/* The joint step is built once per instruction set (joint_kernel.h) where GCC targets x86-64,
 * and joint.c picks a build at run time (__builtin_cpu_supports): a plain function pointer, so
 * it works where ifuncs do not (musl, ThreadSanitizer). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ASR_X86_KERNELS 1
#else
#define ASR_X86_KERNELS 0
#endif

#endif
