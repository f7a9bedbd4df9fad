/* SPDX-License-Identifier: Apache-2.0 */
/* The thread pool (pool.h) on pthreads: callers post jobs (fn, n) to a list; each worker takes
 * indices one at a time from the oldest job that has any left, so several pipelines can share one
 * pool. A failing index records its error; indices above the lowest failure are skipped, indices
 * below it still run, and the caller gets the lowest failing index's error -- the same error for
 * any thread count. A pinned pool ties each worker to one CPU of those the process may run on,
 * taken round-robin from the last one down by every pinned pool of the process, so the
 * application's own threads keep the first CPUs and two pipelines' pools do not share CPUs while
 * there are enough. */
#define _GNU_SOURCE /* pthread_setname_np, CPU_SET */
#include "core/pool.h"

#include "core/alloc.h"
#include "core/log.h"
#include "sluice/reader.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct job {
    sl__pool_fn fn;
    void *ctx;
    int64_t n;
    int64_t next;    /* next index to hand out */
    int64_t done;    /* indices finished (or skipped) */
    int64_t fail_at; /* lowest failing index, n when none */
    sl_err fail_err;
    pthread_cond_t finished;
    struct job *link;
} job;

struct sl__pool {
    pthread_mutex_t mu;
    pthread_cond_t work;
    job *head, *tail; /* jobs with indices left to hand out */
    int nthreads;
    int stopping;
    pthread_t *threads;
};

typedef struct {
    sl__pool *pool;
    int id;
    bool pin;
} worker_arg;

/* Ties the calling thread to one allowed CPU, the next of the round-robin; best effort (a CPU set
 * that cannot be read or set leaves the thread where the system puts it). */
static void pin_self(void) {
#ifdef __linux__
    static atomic_uint next;
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int n = CPU_COUNT(&allowed);
    if (n < 2) return;
    int want = n - 1 - (int)(atomic_fetch_add(&next, 1u) % (unsigned)n), k = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && ++k == want) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            sched_setaffinity(0, sizeof one, &one);
            return;
        }
#endif
}

static void *worker_main(void *arg_) {
    worker_arg *arg = arg_;
    sl__pool *p = arg->pool;
    int id = arg->id;
    bool pin = arg->pin;
    free(arg);
    sl__thread_begin("sluice-pool");
    if (pin) pin_self();
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->stopping) pthread_cond_wait(&p->work, &p->mu);
        if (!p->head) break; /* stopping and no work */
        job *j = p->head;
        int64_t i = j->next++;
        if (j->next >= j->n) { /* all handed out: unlink */
            p->head = j->link;
            if (!p->head) p->tail = NULL;
        }
        if (i >= j->fail_at) { /* skip: a lower index already failed */
            if (++j->done == j->n) pthread_cond_signal(&j->finished);
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        sl_err e;
        e.status = SL_OK;
        e.msg[0] = '\0';
        sl_status st = j->fn(j->ctx, i, id, &e);
        pthread_mutex_lock(&p->mu);
        if (st < 0 && i < j->fail_at) {
            if (e.msg[0] == '\0')
                snprintf(e.msg, sizeof e.msg, "%s (index %lld)", sl_status_str(st), (long long)i);
            e.status = st;
            j->fail_at = i;
            j->fail_err = e;
        }
        if (++j->done == j->n) pthread_cond_signal(&j->finished);
    }
    pthread_mutex_unlock(&p->mu);
    sl__thread_end();
    return NULL;
}

static pthread_mutex_t hooks_mu = PTHREAD_MUTEX_INITIALIZER;
static sl_thread_hooks hooks;

void sl_set_thread_hooks(const sl_thread_hooks *h) {
    pthread_mutex_lock(&hooks_mu);
    if (h)
        hooks = *h;
    else
        memset(&hooks, 0, sizeof hooks);
    pthread_mutex_unlock(&hooks_mu);
}

static sl_thread_hooks current_hooks(void) {
    pthread_mutex_lock(&hooks_mu);
    sl_thread_hooks h = hooks;
    pthread_mutex_unlock(&hooks_mu);
    return h;
}

/* whether this thread ran a start hook: only such a thread runs the stop hook */
static _Thread_local bool hooked;

void sl__thread_begin(const char *name) {
#ifdef __linux__
    pthread_setname_np(pthread_self(), name);
#else
    (void)name;
#endif
    sl_thread_hooks h = current_hooks();
    if (h.start) h.start(h.user);
    hooked = h.start || h.stop;
}

void sl__thread_end(void) {
    if (!hooked) return;
    hooked = false;
    sl_thread_hooks h = current_hooks();
    if (h.stop) h.stop(h.user);
}

sl_status sl__pool_create(int threads, sl__pool **out, sl_err *err) {
    return sl__pool_create_pinned(threads, false, out, err);
}

sl_status sl__pool_create_pinned(int threads, bool pin, sl__pool **out, sl_err *err) {
    if (threads < 1) return sl_err_set(err, SL_EINVAL, "thread pool of %d threads", threads);
    sl__pool *p = sl__calloc(1, sizeof *p, err);
    if (!p) return SL_ENOMEM;
    p->threads = sl__calloc((size_t)threads, sizeof *p->threads, err);
    if (!p->threads) {
        free(p);
        return SL_ENOMEM;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    for (int i = 0; i < threads; i++) {
        worker_arg *a = malloc(sizeof *a);
        int rc = a ? 0 : ENOMEM;
        if (a) {
            a->pool = p;
            a->id = i;
            a->pin = pin;
            rc = pthread_create(&p->threads[i], NULL, worker_main, a);
            if (rc) free(a);
        }
        if (rc) {
            p->nthreads = i;
            sl__pool_free(p);
            return sl_err_set(err, SL_ENOMEM,
                              "cannot start worker thread %d of %d: out of memory or threads (%s)",
                              i, threads, strerror(rc));
        }
    }
    p->nthreads = threads;
    *out = p;
    return SL_OK;
}

int sl__pool_threads(const sl__pool *p) {
    return p->nthreads;
}

sl_status sl__pool_parallel_for(sl__pool *p, int64_t n, sl__pool_fn fn, void *ctx, sl_err *err) {
    return sl__pool_parallel_for_beside(p, n, fn, ctx, NULL, NULL, err);
}

sl_status sl__pool_parallel_for_beside(sl__pool *p, int64_t n, sl__pool_fn fn, void *ctx,
                                       sl__pool_side_fn side, void *side_ctx, sl_err *err) {
    sl_status side_st = SL_OK;
    sl_err side_err;
    side_err.status = SL_OK;
    side_err.msg[0] = '\0';
    if (n <= 0) {
        if (side) side_st = side(side_ctx, &side_err);
        return side_st < 0 ? sl_err_copy(err, &side_err) : SL_OK;
    }
    job j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.ctx = ctx;
    j.n = n;
    j.fail_at = n;
    pthread_cond_init(&j.finished, NULL);
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->link = &j;
    else
        p->head = &j;
    p->tail = &j;
    pthread_cond_broadcast(&p->work);
    if (side) { /* on this thread while the workers take the indices */
        pthread_mutex_unlock(&p->mu);
        side_st = side(side_ctx, &side_err);
        pthread_mutex_lock(&p->mu);
    }
    while (j.done < j.n) pthread_cond_wait(&j.finished, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&j.finished);
    if (side_st < 0) return sl_err_copy(err, &side_err);
    if (j.fail_at < n) return sl_err_copy(err, &j.fail_err);
    return SL_OK;
}

void sl__pool_free(sl__pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}
