/* test_lanes_avx2.c - test_lanes.c built for AVX2, where lanes.h's selects are blends, its
 * clamps max and min, its mask tests movmsk: the code the AVX2 and AVX-512 step kernels inline
 * (csrc/core/joint_avx2.c, csrc/core/joint_avx512.c). */
#pragma GCC target("avx2")
#include "test_lanes.c"
