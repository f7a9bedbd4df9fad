/* SPDX-License-Identifier: Apache-2.0 */
/* Thread pool and queue: parallel-for covers every index once, errors come back (lowest index),
 * a side task runs on the caller's thread beside the workers, the caller's thread hooks run first
 * and last on each worker,
 * several callers share a pool, and a stress test of many producers and consumers with a close
 * while consumers are blocked; workers are named, and a pinned pool ties each worker to one CPU of
 * the process's set (distinct ones while there are enough). Run under ThreadSanitizer by
 * `make check`. */
#define _GNU_SOURCE /* pthread_getname_np, CPU_SET */
#include "check.h"
#include "core/pool.h"
#include "core/queue.h"
#include "sluice/reader.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    atomic_int *hits;
    int64_t fail_from; /* indices >= this fail */
} pf_ctx;

static sl_status pf_fn(void *ctx_, int64_t i, int worker, sl_err *err) {
    pf_ctx *c = ctx_;
    atomic_fetch_add(&c->hits[i], 1);
    if (i >= c->fail_from && i % 7 == 3)
        return sl_err_set(err, SL_EFORMAT, "record %lld is corrupt", (long long)i);
    return SL_OK;
}

static void test_parallel_for(int threads) {
    sl_err e;
    sl__pool *p;
    CHECK_OK(sl__pool_create(threads, &p, &e), &e);
    CHECK_EQ_INT(sl__pool_threads(p), threads);
    enum { N = 10000 };
    atomic_int *hits = calloc(N, sizeof *hits);
    pf_ctx c = {hits, N};
    CHECK_OK(sl__pool_parallel_for(p, N, pf_fn, &c, &e), &e);
    int once = 1;
    for (int i = 0; i < N; i++) once &= atomic_load(&hits[i]) == 1;
    CHECK(once);
    /* failures from 500 on: the error is always the lowest failing index, 500 (500 % 7 == 3) */
    memset(hits, 0, N * sizeof *hits);
    c.fail_from = 500;
    CHECK_FAILS(sl__pool_parallel_for(p, N, pf_fn, &c, &e), SL_EFORMAT, &e, "record 500 ");
    for (int i = 0; i <= 500; i++) once &= atomic_load(&hits[i]) == 1;
    CHECK(once); /* everything below the failure ran */
    CHECK_OK(sl__pool_parallel_for(p, 0, pf_fn, &c, &e), &e);
    free(hits);
    sl__pool_free(p);
}

typedef struct {
    sl__pool *pool;
    atomic_int *hits;
    sl_status st;
} caller_arg;

static void *caller_main(void *a_) {
    caller_arg *a = a_;
    pf_ctx c = {a->hits, 1 << 30};
    sl_err e;
    for (int r = 0; r < 20 && a->st == SL_OK; r++)
        a->st = sl__pool_parallel_for(a->pool, 1000, pf_fn, &c, &e);
    return NULL;
}

/* parallel_for_beside: the side task runs once, on the caller's thread, while the workers take
 * indices (it waits until one has run, so a side that ran before or after the job would hang
 * there and fail the check); every index runs once; its error comes before the indices' (round
 * 1, where index 3 fails too); with no indices it still runs (round 2). */
typedef struct {
    pthread_t caller;
    atomic_int *hits;
    int64_t n;
    int runs, on_caller, saw_work;
    bool fail;
} side_ctx;

static sl_status side_fn(void *ctx_, sl_err *err) {
    side_ctx *c = ctx_;
    c->runs++;
    c->on_caller = pthread_equal(pthread_self(), c->caller);
    for (long spin = 0; c->n > 0 && spin < 2000000000L && !c->saw_work; spin++)
        for (int64_t i = 0; i < c->n && !c->saw_work; i++) c->saw_work = atomic_load(&c->hits[i]);
    return c->fail ? sl_err_set(err, SL_ECUDA, "the side task failed") : SL_OK;
}

static void test_beside(int threads) {
    sl_err e;
    sl__pool *p;
    CHECK_OK(sl__pool_create(threads, &p, &e), &e);
    enum { N = 64 };
    atomic_int hits[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) atomic_init(&hits[i], 0);
        side_ctx sc = {pthread_self(), hits, round == 2 ? 0 : N, 0, 0, 0, round == 1};
        pf_ctx c = {hits, round == 1 ? 0 : N};
        sl_status st = sl__pool_parallel_for_beside(p, sc.n, pf_fn, &c, side_fn, &sc, &e);
        CHECK(sc.runs == 1 && sc.on_caller);
        if (round < 2) CHECK_MSG(sc.saw_work, "round %d: the side task saw no index run", round);
        for (int i = 0; i < sc.n && round == 0; i++) CHECK_EQ_INT(atomic_load(&hits[i]), 1);
        if (round == 1)
            CHECK_FAILS(st, SL_ECUDA, &e, "the side task failed"); /* not record 3's */
        else
            CHECK_OK(st, &e);
    }
    sl__pool_free(p);
}

static void test_shared_pool(void) {
    sl_err e;
    sl__pool *p;
    CHECK_OK(sl__pool_create(3, &p, &e), &e);
    pthread_t th[4];
    caller_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i].pool = p;
        args[i].hits = calloc(1000, sizeof(atomic_int));
        args[i].st = SL_OK;
        pthread_create(&th[i], NULL, caller_main, &args[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(args[i].st, SL_OK);
        int ok = 1;
        for (int j = 0; j < 1000; j++) ok &= atomic_load(&args[i].hits[j]) == 20;
        CHECK(ok);
        free(args[i].hits);
    }
    sl__pool_free(p);
}

enum { PRODUCERS = 6, CONSUMERS = 5, PER_PRODUCER = 20000 };

typedef struct {
    sl__queue *q;
    int id;
    atomic_llong *sum;
    atomic_int *count;
} qarg;

static void *producer(void *a_) {
    qarg *a = a_;
    for (int i = 1; i <= PER_PRODUCER; i++) {
        intptr_t v = (intptr_t)a->id * PER_PRODUCER + i;
        if (sl__queue_push(a->q, (void *)v) != SL_OK) break;
    }
    return NULL;
}

static void *consumer(void *a_) {
    qarg *a = a_;
    void *item;
    while (sl__queue_pop(a->q, &item) == SL_OK) {
        atomic_fetch_add(a->sum, (long long)(intptr_t)item);
        atomic_fetch_add(a->count, 1);
    }
    return NULL;
}

static void test_queue_stress(void) {
    sl_err e;
    sl__queue *q;
    CHECK_OK(sl__queue_create(16, &q, &e), &e);
    atomic_llong sum = 0;
    atomic_int count = 0;
    pthread_t pt[PRODUCERS], ct[CONSUMERS];
    qarg pa[PRODUCERS], ca[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        ca[i] = (qarg){q, i, &sum, &count};
        pthread_create(&ct[i], NULL, consumer, &ca[i]);
    }
    for (int i = 0; i < PRODUCERS; i++) {
        pa[i] = (qarg){q, i, &sum, &count};
        pthread_create(&pt[i], NULL, producer, &pa[i]);
    }
    for (int i = 0; i < PRODUCERS; i++) pthread_join(pt[i], NULL);
    sl__queue_close(q); /* consumers drain what is left, then see SL_EOF */
    for (int i = 0; i < CONSUMERS; i++) pthread_join(ct[i], NULL);
    long long n = (long long)PRODUCERS * PER_PRODUCER;
    CHECK_EQ_INT(atomic_load(&count), n);
    CHECK_EQ_INT(atomic_load(&sum), n * (n + 1) / 2);
    void *item;
    CHECK_EQ_INT(sl__queue_pop(q, &item), SL_EOF);
    CHECK_EQ_INT(sl__queue_push(q, item), SL_ECLOSED);
    sl__queue_free(q);
}

static void *blocked_pop(void *a_) {
    qarg *a = a_;
    void *item;
    sl_status st = sl__queue_pop(a->q, &item);
    atomic_store(a->count, st == SL_EOF ? 1 : -1);
    return NULL;
}

static void *blocked_push(void *a_) {
    qarg *a = a_;
    sl_status st = sl__queue_push(a->q, (void *)1);
    atomic_store(a->count, st == SL_ECLOSED ? 1 : -1);
    return NULL;
}

static void test_close_while_blocked(void) {
    sl_err e;
    sl__queue *q;
    CHECK_OK(sl__queue_create(1, &q, &e), &e);
    atomic_int r1 = 0, r2 = 0;
    qarg a1 = {q, 0, NULL, &r1};
    pthread_t t1;
    pthread_create(&t1, NULL, blocked_pop, &a1); /* blocks: empty */
    void *item;
    CHECK_EQ_INT(sl__queue_pop_timeout(q, &item, 20), SL_ETIMEOUT);
    sl__queue_close(q);
    pthread_join(t1, NULL);
    CHECK_EQ_INT(atomic_load(&r1), 1);
    sl__queue_free(q);

    CHECK_OK(sl__queue_create(1, &q, &e), &e);
    CHECK_OK(sl__queue_push(q, (void *)7), NULL);
    CHECK_EQ_INT(sl__queue_try_push(q, (void *)8), SL_ETIMEOUT);
    qarg a2 = {q, 0, NULL, &r2};
    pthread_t t2;
    pthread_create(&t2, NULL, blocked_push, &a2); /* blocks: full */
    sl__queue_close(q);
    pthread_join(t2, NULL);
    CHECK_EQ_INT(atomic_load(&r2), 1);
    CHECK_EQ_INT(sl__queue_pop(q, &item), SL_OK); /* drain after close */
    CHECK(item == (void *)7);
    CHECK_EQ_INT(sl__queue_try_pop(q, &item), SL_EOF);
    sl__queue_free(q);
}

#ifdef __linux__
enum { MAXW = 64 };
typedef struct {
    int cpus[MAXW];    /* per worker: its CPU when it may run on exactly one, else -1 */
    int allowed[MAXW]; /* per worker: how many CPUs it may run on */
    int named[MAXW];   /* per worker: named sluice-pool */
    atomic_int seen[MAXW];
} where_ctx;

static sl_status where_fn(void *ctx_, int64_t i, int worker, sl_err *err) {
    (void)i, (void)err;
    where_ctx *c = ctx_;
    if (atomic_exchange(&c->seen[worker], 1)) return SL_OK;
    cpu_set_t set;
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    c->named[worker] = strcmp(name, "sluice-pool") == 0;
    c->allowed[worker] = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    c->cpus[worker] = -1;
    for (int k = 0; c->allowed[worker] == 1 && k < CPU_SETSIZE; k++)
        if (CPU_ISSET(k, &set)) c->cpus[worker] = k;
    /* stay a while, so that every worker takes some of the indices */
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    return SL_OK;
}

static void test_pinned(bool pin) {
    cpu_set_t mine;
    CHECK(sched_getaffinity(0, sizeof mine, &mine) == 0);
    int ncpu = CPU_COUNT(&mine);
    int threads = ncpu < 2 ? 2 : ncpu > 8 ? 8 : ncpu;
    sl_err e;
    sl__pool *p;
    CHECK_OK(sl__pool_create_pinned(threads, pin, &p, &e), &e);
    where_ctx *c = calloc(1, sizeof *c);
    CHECK_OK(sl__pool_parallel_for(p, 64 * threads, where_fn, c, &e), &e);
    int distinct = 1;
    for (int w = 0; w < threads; w++) {
        if (!atomic_load(&c->seen[w])) continue; /* took no index: nothing seen */
        CHECK(c->named[w]);
        if (!pin || ncpu < 2) {
            CHECK_EQ_INT(c->allowed[w], ncpu); /* left where the system puts it */
            continue;
        }
        CHECK_EQ_INT(c->allowed[w], 1);
        CHECK(c->cpus[w] >= 0 && CPU_ISSET(c->cpus[w], &mine));
        for (int v = 0; v < w; v++)
            if (atomic_load(&c->seen[v]) && c->cpus[v] == c->cpus[w]) distinct = 0;
    }
    CHECK(distinct); /* threads <= ncpu: one CPU each */
    /* the caller is never pinned */
    cpu_set_t after;
    CHECK(sched_getaffinity(0, sizeof after, &after) == 0);
    CHECK_EQ_INT(CPU_COUNT(&after), ncpu);
    free(c);
    sl__pool_free(p);
}
#endif

/* sl_thread_hooks: start runs on each library thread before anything else, stop last on the same
 * thread; threads started before the hooks were set call neither, and clearing them keeps
 * threads that end afterwards from calling stop. */
static atomic_int starts, stops, bad;
static _Thread_local int started_here;

static void on_start(void *user) {
    if (user != &starts) atomic_fetch_add(&bad, 1);
    started_here = 1;
    atomic_fetch_add(&starts, 1);
}

static void on_stop(void *user) {
    if (user != &starts || !started_here) atomic_fetch_add(&bad, 1);
    started_here = 0;
    atomic_fetch_add(&stops, 1);
}

/* Each of a pool's n workers takes one of n indices and waits for the others: when it returns,
 * every worker is running. */
typedef struct {
    atomic_int arrived;
    int n, want_started;
} all_ctx;

static sl_status all_fn(void *ctx_, int64_t i, int worker, sl_err *err) {
    (void)i, (void)worker, (void)err;
    all_ctx *c = ctx_;
    if (started_here != c->want_started) atomic_fetch_add(&bad, 1);
    atomic_fetch_add(&c->arrived, 1);
    while (atomic_load(&c->arrived) < c->n) sched_yield();
    return SL_OK;
}

static void run_all(sl__pool *p, int n, int want_started) {
    sl_err e;
    all_ctx c = {0, n, want_started};
    CHECK_OK(sl__pool_parallel_for(p, n, all_fn, &c, &e), &e);
}

static void test_thread_hooks(void) {
    sl_err e;
    sl__pool *p;
    sl_thread_hooks h = {on_start, on_stop, &starts};
    sl_set_thread_hooks(&h);
    CHECK_OK(sl__pool_create(4, &p, &e), &e);
    run_all(p, 4, 1);
    sl__pool_free(p);
    CHECK_EQ_INT(atomic_load(&starts), 4);
    CHECK_EQ_INT(atomic_load(&stops), 4);
    /* cleared while the threads run: they started, and end without stop */
    CHECK_OK(sl__pool_create(3, &p, &e), &e);
    run_all(p, 3, 1);
    sl_set_thread_hooks(NULL);
    sl__pool_free(p);
    CHECK_EQ_INT(atomic_load(&starts), 7);
    CHECK_EQ_INT(atomic_load(&stops), 4);
    /* set while the threads run: they call neither */
    CHECK_OK(sl__pool_create(2, &p, &e), &e);
    run_all(p, 2, 0);
    sl_set_thread_hooks(&h);
    sl__pool_free(p);
    sl_set_thread_hooks(NULL);
    CHECK_EQ_INT(atomic_load(&starts), 7);
    CHECK_EQ_INT(atomic_load(&stops), 4);
    CHECK_EQ_INT(atomic_load(&bad), 0);
}

int main(void) {
#ifdef __linux__
    test_pinned(false);
    test_pinned(true);
#endif
    test_beside(1);
    test_beside(4);
    test_parallel_for(1);
    test_parallel_for(4);
    test_shared_pool();
    test_queue_stress();
    test_close_while_blocked();
    test_thread_hooks();
    sl_err e;
    sl__pool *p;
    CHECK_FAILS(sl__pool_create(0, &p, &e), SL_EINVAL, &e, "0 threads");
    return check_done();
}
