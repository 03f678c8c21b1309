/* joint_avx2.c - the joint step kernel (joint_kernel.h) built for AVX2; joint.c
 * runs it on CPUs that have it. No FMA is used (-ffp-contract=off): the baseline's bits. */
#include "simd.h"

#if ASR_X86_KERNELS
#pragma GCC target("avx2")
#define JOINT_KERNEL chunk_step_avx2
#include "joint_kernel.h"
#else
typedef int joint_avx2_not_built; /* not x86-64 with GCC: ISO C needs a declaration */
#endif
