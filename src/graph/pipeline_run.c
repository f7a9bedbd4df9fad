/* SPDX-License-Identifier: Apache-2.0 */
/* An op's run_cpu over a batch, for the CPU stage (pipeline_exec.c): its samples on the thread
 * pool, or on the stage's own thread while the whole batch is lighter than waking the pool. */
#include "graph/pipeline_run.h"

#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
    const sl__opinst *op;
    sl__op_io *io;
} run_ctx;

static sl_status run_sample(void *ctx_, int64_t i, int worker, sl_err *err) {
    run_ctx *c = ctx_;
    int s = c->io->run_index ? c->io->run_index[i] : (int)i;
    return c->op->def->run_cpu(c->op->state, c->io, s, worker, err);
}

/* setup's batch_job: run_cpu's sample -1, on the stage's thread beside the pool's samples */
static sl_status run_batch_job(void *ctx_, sl_err *err) {
    run_ctx *c = ctx_;
    return c->op->def->run_cpu(c->op->state, c->io, -1, -1, err);
}

/* An op's batch of n samples on the stage's own thread, in order, as worker 0 (this op runs no
 * pool job meanwhile, so worker 0's scratch is free): the error of the lowest failing sample, as
 * the pool gives. */
static sl_status run_inline(run_ctx *c, int64_t n, sl_err *err) {
    for (int64_t i = 0; i < n; i++) {
        sl_status st = run_sample(c, i, 0, err);
        if (st < 0) {
            if (err->msg[0] == '\0')
                sl_err_set(err, st, "%s (index %lld)", sl_status_str(st), (long long)i);
            return st;
        }
    }
    return SL_OK;
}

/* Inline where the whole batch is lighter than waking the pool (a batch of scalars: the more
 * threads, the dearer the wake-up). An op starts on the pool; a pool run under LIGHT_PROBE_S sends
 * the next batches inline while that is faster than the pool was, with one on the pool every
 * LIGHT_RECHECK batches. Same samples either way. */
enum { LIGHT_RECHECK = 64 };
#define LIGHT_PROBE_S 200e-6
sl_status sl__run_cpu_batch(sl__pool *pool, sl__opinst *op, sl__op_io *io, int64_t n, sl_err *err) {
    run_ctx ctx = {op, io}, *c = &ctx;
    if (io->batch_job)
        return sl__pool_parallel_for_beside(pool, n, run_sample, c, run_batch_job, c, err);
    double t0 = now_s();
    if (op->light) {
        sl_status st = run_inline(c, n, err);
        if (now_s() - t0 > op->pool_s) /* slower than the pool was: back to it for a while */
            op->light = false, op->probe = LIGHT_RECHECK;
        else if (--op->probe <= 0) /* the next batch on the pool, to see */
            op->light = false;
        return st;
    }
    sl_status st = sl__pool_parallel_for_beside(pool, n, run_sample, c, NULL, NULL, err);
    op->pool_s = now_s() - t0;
    if (op->probe > 0)
        op->probe--;
    else if (op->pool_s < LIGHT_PROBE_S)
        op->light = true, op->probe = LIGHT_RECHECK;
    return st;
}
