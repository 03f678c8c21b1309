/* asr_threads.h - running a function over item ranges on native threads: the core's thread
 * runner, public to the parts built on the core (cpr runs its rod integrations and its solves
 * on it). Not part of the cffi cdef (asr.h does not include it): a C helper, not a Python API.
 *
 * Each thread owns a contiguous range of items; where everything a range computes depends only
 * on its items, results are bit-identical for any thread count. */
#ifndef ASR_API_THREADS_H
#define ASR_API_THREADS_H

#include "asr_status.h"

/* Below this many units of work (joint-steps) per thread, another thread costs more than it
 * saves. */
#define ASR_MIN_WORK_PER_THREAD 1024

/* Work on items [i0, i1); returns a status. */
typedef asr_status (*asr_range_fn)(void* ctx, int i0, int i1);

/* Threads worth using for n_items items of work_per_item units each, at most requested. */
int asr_thread_count(int requested, int n_items, int work_per_item);

/* Run fn over [0, n_items) split into n_threads contiguous ranges; returns the first non-OK
 * status in range order. A range whose thread cannot be started runs on the calling thread. */
asr_status asr_parallel_for(int n_threads, int n_items, asr_range_fn fn, void* ctx);

#endif
