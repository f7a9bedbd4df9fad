/* SPDX-License-Identifier: Apache-2.0 */
/* A fixed thread pool with a parallel-for over samples. Errors raised in a worker come back to the
 * caller: a parallel-for reports the error of the lowest failing index, so the outcome does not
 * depend on the thread count or on scheduling. */
#ifndef SLUICE_CORE_POOL_H
#define SLUICE_CORE_POOL_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__pool sl__pool;

/* fn runs once per index i in [0, n); worker is the running thread's index in [0, threads). */
typedef sl_status (*sl__pool_fn)(void *ctx, int64_t i, int worker, sl_err *err);

/* threads >= 1 worker threads; the caller of parallel_for waits and does not run tasks itself, so
 * worker indices can key per-thread scratch state. Several callers may use one pool at once. */
sl_status sl__pool_create(int threads, sl__pool **out, sl_err *err);
/* The same; with pin, each worker is tied to one CPU (pool.c says which), as DALI's mixed decoder
 * does with affine=True: no worker migrates, and the caller's threads keep the first CPUs. */
sl_status sl__pool_create_pinned(int threads, bool pin, sl__pool **out, sl_err *err);
int sl__pool_threads(const sl__pool *p);
sl_status sl__pool_parallel_for(sl__pool *p, int64_t n, sl__pool_fn fn, void *ctx, sl_err *err);
/* The same, and side(side_ctx) run once on the calling thread meanwhile (NULL: none), so a task
 * that mostly waits (the hardware JPEG engines) takes no worker. Its error comes first. */
typedef sl_status (*sl__pool_side_fn)(void *ctx, sl_err *err);
sl_status sl__pool_parallel_for_beside(sl__pool *p, int64_t n, sl__pool_fn fn, void *ctx,
                                       sl__pool_side_fn side, void *side_ctx, sl_err *err);
void sl__pool_free(sl__pool *p);

/* Every thread the library starts calls sl__thread_begin first and sl__thread_end last (the
 * caller's sl_thread_hooks). begin also names the thread (at most 15 characters; shown by top -H,
 * perf, gdb) where the system can: sluice-pool, sluice-read, sluice-cpu, sluice-gpu, ... */
void sl__thread_begin(const char *name);
void sl__thread_end(void);

#ifdef __cplusplus
}
#endif
#endif
