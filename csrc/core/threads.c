/* threads.c - split instances over native threads. Each thread owns a contiguous instance range
 * and everything it computes depends only on its instances, so results are bit-identical for
 * any thread count. Threads are started per call (a step or a whole rollout), never per step of
 * a rollout. */
#include <pthread.h>
#include <stdlib.h>

#include "asr_threads.h"

typedef struct worker {
    pthread_t thread;
    asr_range_fn fn;
    void* ctx;
    int i0, i1;
    asr_status result;
    int started;
} worker;

static void* run_worker(void* arg) {
    worker* w = (worker*)arg;
    w->result = w->fn(w->ctx, w->i0, w->i1);
    return NULL;
}

int asr_thread_count(int requested, int n_items, int work_per_item) {
    long long work = (long long)n_items * work_per_item;
    long long useful = work / ASR_MIN_WORK_PER_THREAD;
    int n = requested;
    if (useful < n) n = (int)(useful > 1 ? useful : 1);
    if (n > n_items) n = n_items > 0 ? n_items : 1;
    return n;
}

asr_status asr_parallel_for(int n_threads, int n_items, asr_range_fn fn, void* ctx) {
    if (n_threads <= 1 || n_items <= 1) return fn(ctx, 0, n_items);
    worker* w = (worker*)calloc((size_t)n_threads, sizeof(worker));
    if (!w) return fn(ctx, 0, n_items); /* no memory for bookkeeping: run on this thread */
    for (int t = 0; t < n_threads; ++t) {
        w[t].fn = fn;
        w[t].ctx = ctx;
        w[t].i0 = (int)((long long)n_items * t / n_threads);
        w[t].i1 = (int)((long long)n_items * (t + 1) / n_threads);
        /* range 0 runs on the calling thread, and so does any range whose thread won't start */
        w[t].started = t > 0 && pthread_create(&w[t].thread, NULL, run_worker, &w[t]) == 0;
    }
    for (int t = 0; t < n_threads; ++t) {
        if (!w[t].started) w[t].result = fn(ctx, w[t].i0, w[t].i1);
    }
    asr_status st = ASR_OK;
    for (int t = 0; t < n_threads; ++t) {
        if (w[t].started) pthread_join(w[t].thread, NULL);
        if (st == ASR_OK) st = w[t].result;
    }
    free(w);
    return st;
}
