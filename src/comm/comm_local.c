/* SPDX-License-Identifier: Apache-2.0 */
/* The in-memory sl_comm backend: K ranks of one process, one thread each, meeting in a shared
 * group. A collective has three phases: every rank posts its buffer and arguments, all meet at a
 * barrier, then rank r reduces its own slice [r*n/K, (r+1)*n/K) of the elements -- summing the K
 * buffers in rank order (0, 1, ..., K-1) and writing the result into all K buffers -- and all meet
 * again before returning. Each element is read and written by one rank only, the work is spread
 * over the K threads, and the result is the same bits on every rank and in every run. The barrier
 * is a generation counter under a mutex (which also orders the buffer accesses for the memory
 * model). A rank that waits longer than timeout_ms, or an sl_comm_abort, breaks the group for good:
 * every waiting and later call fails (SL_ETIMEOUT for the one that timed out, SL_ECLOSED for the
 * others). */
#include "comm/comm_int.h"

#include "core/alloc.h"
#include "core/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct slot {
    void *buf;
    int64_t count; /* elements (allreduce) or bytes (broadcast) */
    int dtype, op, root, kind;
} slot;

enum { COLL_ALLREDUCE = 1, COLL_BROADCAST = 2 };

typedef struct group {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int size;
    int refs;
    int timeout_ms;
    int broken;   /* aborted or timed out: every call fails from now on */
    int arrived;  /* ranks waiting at the barrier */
    uint64_t gen; /* barrier generation */
    slot *slots;  /* size entries */
} group;

typedef struct local_comm {
    sl_comm base;
    group *g;
} local_comm;

static group *group_of(sl_comm *c) {
    return ((local_comm *)c)->g;
}

/* Waits until all ranks have arrived. Fails with SL_ECLOSED when the group is (or becomes) broken
 * and SL_ETIMEOUT (breaking it) when timeout_ms passes first. */
static sl_status group_wait(group *g, int rank, const char *what, sl_err *err) {
    sl_status st = SL_OK;
    pthread_mutex_lock(&g->mu);
    if (g->broken) {
        pthread_mutex_unlock(&g->mu);
        return sl_err_set(err, SL_ECLOSED, "%s (rank %d of %d): the group was aborted", what, rank,
                          g->size);
    }
    uint64_t my_gen = g->gen;
    if (++g->arrived == g->size) {
        g->arrived = 0;
        g->gen++;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        return SL_OK;
    }
    struct timespec deadline;
    if (g->timeout_ms > 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += g->timeout_ms / 1000;
        deadline.tv_nsec += (long)(g->timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    while (g->gen == my_gen && !g->broken) {
        if (g->timeout_ms > 0) {
            int rc = pthread_cond_timedwait(&g->cv, &g->mu, &deadline);
            if (rc == ETIMEDOUT && g->gen == my_gen && !g->broken) {
                g->broken = 1;
                pthread_cond_broadcast(&g->cv);
                int arrived = g->arrived;
                pthread_mutex_unlock(&g->mu);
                return sl_err_set(err, SL_ETIMEOUT,
                                  "%s (rank %d of %d): only %d ranks arrived within %d ms", what,
                                  rank, g->size, arrived, g->timeout_ms);
            }
        } else {
            pthread_cond_wait(&g->cv, &g->mu);
        }
    }
    if (g->gen == my_gen) /* broken while waiting */
        st = sl_err_set(err, SL_ECLOSED, "%s (rank %d of %d): the group was aborted", what, rank,
                        g->size);
    pthread_mutex_unlock(&g->mu);
    return st;
}

static void post(group *g, int rank, const slot *s) {
    pthread_mutex_lock(&g->mu);
    g->slots[rank] = *s;
    pthread_mutex_unlock(&g->mu);
}

/* After the first barrier: the slots are stable until the second. Every rank sees the same slots,
 * so all agree on whether the call is consistent. */
static sl_status check_slots(const group *g, int rank, const char *what, sl_err *err) {
    const slot *s0 = &g->slots[0];
    for (int k = 1; k < g->size; k++) {
        const slot *s = &g->slots[k];
        if (s->kind != s0->kind || s->count != s0->count || s->dtype != s0->dtype ||
            s->op != s0->op || s->root != s0->root)
            return sl_err_set(err, SL_EINVAL,
                              "%s (rank %d): ranks disagree: rank 0 passed count %lld dtype %s op "
                              "%d root %d, rank %d passed count %lld dtype %s op %d root %d%s",
                              what, rank, (long long)s0->count, sl_dtype_name((sl_dtype)s0->dtype),
                              s0->op, s0->root, k, (long long)s->count,
                              sl_dtype_name((sl_dtype)s->dtype), s->op, s->root,
                              s->kind != s0->kind ? " (different collectives)" : "");
    }
    return SL_OK;
}

#define REDUCE_FLOAT(T)                                                                            \
    do {                                                                                           \
        for (int64_t i = lo; i < hi; i++) {                                                        \
            T s = ((const T *)g->slots[0].buf)[i];                                                 \
            for (int k = 1; k < K; k++) s += ((const T *)g->slots[k].buf)[i];                      \
            if (avg) s = s / (T)K;                                                                 \
            for (int k = 0; k < K; k++) ((T *)g->slots[k].buf)[i] = s;                             \
        }                                                                                          \
    } while (0)

/* Integers sum with wrap-around (unsigned arithmetic), never undefined behaviour. */
#define REDUCE_INT(T, U)                                                                           \
    do {                                                                                           \
        for (int64_t i = lo; i < hi; i++) {                                                        \
            U s = (U)((const T *)g->slots[0].buf)[i];                                              \
            for (int k = 1; k < K; k++) s += (U)((const T *)g->slots[k].buf)[i];                   \
            for (int k = 0; k < K; k++) memcpy((T *)g->slots[k].buf + i, &s, sizeof s);            \
        }                                                                                          \
    } while (0)

/* Reduces elements [lo, hi) of every buffer, in rank order. */
static void reduce_range(group *g, int64_t lo, int64_t hi) {
    const int K = g->size;
    const int avg = g->slots[0].op == SL_REDUCE_AVG;
    switch ((sl_dtype)g->slots[0].dtype) {
    case SL_DTYPE_F32:
        REDUCE_FLOAT(float);
        break;
    case SL_DTYPE_F64:
        REDUCE_FLOAT(double);
        break;
    case SL_DTYPE_I32:
        REDUCE_INT(int32_t, uint32_t);
        break;
    case SL_DTYPE_I64:
        REDUCE_INT(int64_t, uint64_t);
        break;
    default:
        SL_ASSERT(0 && "dtype checked by sl_comm_allreduce");
    }
}

/* Rank r's share of n elements: [r*n/K, (r+1)*n/K), rounded to multiples of 16 for whole cache
 * lines. */
static void share(int64_t n, int r, int K, int64_t *lo, int64_t *hi) {
    int64_t blocks = (n + 15) / 16;
    *lo = SL_MIN(n, blocks * r / K * 16);
    *hi = SL_MIN(n, blocks * (r + 1) / K * 16);
}

static sl_status local_allreduce(sl_comm *c, void *buf, int64_t count, sl_dtype dtype,
                                 sl_reduce_op op, void *stream, sl_err *err) {
    group *g = group_of(c);
    if (g->size == 1) { /* sum and average of one buffer are the buffer */
        pthread_mutex_lock(&g->mu);
        int broken = g->broken;
        pthread_mutex_unlock(&g->mu);
        return broken ? sl_err_set(err, SL_ECLOSED, "allreduce: the group was aborted") : SL_OK;
    }
    slot s = {buf, count, (int)dtype, (int)op, 0, COLL_ALLREDUCE};
    post(g, c->rank, &s);
    SL_TRY(group_wait(g, c->rank, "allreduce", err));
    sl_status st = check_slots(g, c->rank, "allreduce", err);
    if (st == SL_OK) {
        int64_t lo, hi;
        share(count, c->rank, g->size, &lo, &hi);
        reduce_range(g, lo, hi);
    }
    sl_err second;
    sl_status st2 = group_wait(g, c->rank, "allreduce", st == SL_OK ? err : &second);
    return st != SL_OK ? st : st2;
}

static sl_status local_broadcast(sl_comm *c, void *buf, size_t nbytes, int root, void *stream,
                                 sl_err *err) {
    group *g = group_of(c);
    if (g->size == 1) return SL_OK;
    slot s = {buf, (int64_t)nbytes, 0, 0, root, COLL_BROADCAST};
    post(g, c->rank, &s);
    SL_TRY(group_wait(g, c->rank, "broadcast", err));
    sl_status st = check_slots(g, c->rank, "broadcast", err);
    if (st == SL_OK && c->rank != root && nbytes > 0 && buf != g->slots[root].buf)
        memcpy(buf, g->slots[root].buf, nbytes);
    sl_err second;
    sl_status st2 = group_wait(g, c->rank, "broadcast", st == SL_OK ? err : &second);
    return st != SL_OK ? st : st2;
}

static sl_status local_barrier(sl_comm *c, sl_err *err) {
    return group_wait(group_of(c), c->rank, "barrier", err);
}

static void local_abort(sl_comm *c) {
    group *g = group_of(c);
    pthread_mutex_lock(&g->mu);
    g->broken = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void group_release(group *g) {
    pthread_mutex_lock(&g->mu);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&g->mu);
    if (!last) return;
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g->slots);
    free(g);
}

static void local_free(sl_comm *c) {
    group_release(group_of(c));
    free(c);
}

static const sl__comm_ops local_ops = {local_allreduce, local_broadcast, local_barrier, local_abort,
                                       local_free};

sl_status sl__comm_local_create(const sl_comm_config *cfg, sl_comm **comms, sl_err *err) {
    const int K = cfg->size;
    group *g = sl__calloc(1, sizeof *g, err);
    if (!g) return SL_ENOMEM;
    g->slots = sl__calloc((size_t)K, sizeof *g->slots, err);
    if (!g->slots) {
        free(g);
        return SL_ENOMEM;
    }
    g->size = K;
    g->timeout_ms = cfg->timeout_ms;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    for (int r = 0; r < K; r++) {
        local_comm *lc = sl__calloc(1, sizeof *lc, err);
        if (!lc) {
            for (int k = 0; k < r; k++) {
                free(comms[k]);
                comms[k] = NULL;
            }
            pthread_cond_destroy(&g->cv);
            pthread_mutex_destroy(&g->mu);
            free(g->slots);
            free(g);
            return SL_ENOMEM;
        }
        lc->base.ops = &local_ops;
        lc->base.kind = SL_COMM_LOCAL;
        lc->base.rank = r;
        lc->base.size = K;
        lc->base.impl = g;
        lc->g = g;
        comms[r] = &lc->base;
    }
    g->refs = K;
    return SL_OK;
}
