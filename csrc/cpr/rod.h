/* rod.h - integrating many Cosserat rods at once, one per SIMD lane (private). */
#ifndef ASR_ROD_H
#define ASR_ROD_H

#include "asr_cpr.h"

/* Rods integrated side by side: a pack of this many costs about one scalar integration on
 * AVX-512, two on AVX2. */
#define ASR_ROD_LANES 8

/* Integrate n rods: rod k (rods[k], length L[k] m) from its base state y0 + 18 k into
 * tips + 18 k, and, when paths and paths[k] are not NULL, its n_grid states into paths[k]
 * (n_grid x 18). Every rod gets exactly the operations of a scalar RK4, so its result does not
 * depend on the other rods of its pack or on the instruction set chosen at run time. Returns
 * ASR_ERR_RANGE for a rod or length out of range, ASR_ERR_NONFINITE when a tip is not finite. */
asr_status rods_integrate(int n, const asr_rod* const* rods, const double* L, const double* y0,
                          int n_grid, double* tips, double* const* paths);

#endif
