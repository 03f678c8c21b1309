/* threads.h - running a function over instance ranges on native threads (private). */
#ifndef ASR_THREADS_H
#define ASR_THREADS_H

#include "asr_status.h"

/* Below this many joint-steps per thread, another thread costs more than it saves. */
#define ASR_MIN_WORK_PER_THREAD 1024

/* Work on items [i0, i1); returns a status. */
typedef asr_status (*range_fn)(void* ctx, int i0, int i1);

/* Threads worth using for n_items items of work_per_item units each, at most requested. */
int thread_count(int requested, int n_items, int work_per_item);

/* Run fn over [0, n_items) split into n_threads contiguous ranges; returns the first non-OK
 * status in range order. A range whose thread cannot be started runs on the calling thread. */
asr_status parallel_for(int n_threads, int n_items, range_fn fn, void* ctx);

#endif
