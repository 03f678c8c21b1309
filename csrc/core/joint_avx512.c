/* joint_avx512.c - the joint step kernel (joint_kernel.h) built for AVX-512 (F, VL, DQ); joint.c
 * runs it on CPUs that have it. No FMA is used (-ffp-contract=off): the baseline's bits. */
#include "simd.h"

#if ASR_X86_KERNELS
#pragma GCC target("avx512f,avx512vl,avx512dq")
#define JOINT_KERNEL chunk_step_avx512
#include "joint_kernel.h"
#else
typedef int joint_avx512_not_built; /* not x86-64 with GCC: ISO C needs a declaration */
#endif
