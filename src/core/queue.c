/* SPDX-License-Identifier: Apache-2.0 */
/* The bounded queue (queue.h) on a pthread mutex and two condition variables. */
#include "core/queue.h"

#include "core/alloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct sl__queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    void **items;
    int cap, head, count;
    int closed;
};

sl_status sl__queue_create(int capacity, sl__queue **out, sl_err *err) {
    if (capacity < 1) return sl_err_set(err, SL_EINVAL, "queue capacity %d", capacity);
    sl__queue *q = sl__calloc(1, sizeof *q, err);
    if (!q) return SL_ENOMEM;
    q->items = sl__calloc((size_t)capacity, sizeof *q->items, err);
    if (!q->items) {
        free(q);
        return SL_ENOMEM;
    }
    q->cap = capacity;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    *out = q;
    return SL_OK;
}

static void put(sl__queue *q, void *item) {
    q->items[(q->head + q->count) % q->cap] = item;
    q->count++;
    pthread_cond_signal(&q->not_empty);
}

static void *take(sl__queue *q) {
    void *item = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    pthread_cond_signal(&q->not_full);
    return item;
}

sl_status sl__queue_push(sl__queue *q, void *item) {
    pthread_mutex_lock(&q->mu);
    while (q->count == q->cap && !q->closed) pthread_cond_wait(&q->not_full, &q->mu);
    sl_status st = SL_ECLOSED;
    if (!q->closed) {
        put(q, item);
        st = SL_OK;
    }
    pthread_mutex_unlock(&q->mu);
    return st;
}

sl_status sl__queue_try_push(sl__queue *q, void *item) {
    pthread_mutex_lock(&q->mu);
    sl_status st = q->closed ? SL_ECLOSED : q->count == q->cap ? SL_ETIMEOUT : SL_OK;
    if (st == SL_OK) put(q, item);
    pthread_mutex_unlock(&q->mu);
    return st;
}

sl_status sl__queue_pop(sl__queue *q, void **item) {
    return sl__queue_pop_timeout(q, item, -1);
}

/* Under q->mu: waits while q is empty and open, at most timeout_ms (< 0: no limit); SL_ETIMEOUT
 * when the time ran out first. */
static sl_status wait_items(sl__queue *q, int timeout_ms) {
    struct timespec deadline;
    if (timeout_ms >= 0) {
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000L;
        }
    }
    while (q->count == 0 && !q->closed) {
        if (timeout_ms < 0)
            pthread_cond_wait(&q->not_empty, &q->mu);
        else if (pthread_cond_timedwait(&q->not_empty, &q->mu, &deadline) == ETIMEDOUT)
            return q->count > 0 || q->closed ? SL_OK : SL_ETIMEOUT;
    }
    return SL_OK;
}

sl_status sl__queue_pop_timeout(sl__queue *q, void **item, int timeout_ms) {
    pthread_mutex_lock(&q->mu);
    sl_status st = wait_items(q, timeout_ms);
    if (q->count > 0)
        *item = take(q), st = SL_OK;
    else if (st == SL_OK)
        st = SL_EOF; /* closed and drained */
    pthread_mutex_unlock(&q->mu);
    return st;
}

sl_status sl__queue_wait(sl__queue *q, int timeout_ms) {
    pthread_mutex_lock(&q->mu);
    sl_status st = wait_items(q, timeout_ms);
    pthread_mutex_unlock(&q->mu);
    return st;
}

sl_status sl__queue_try_pop(sl__queue *q, void **item) {
    return sl__queue_pop_timeout(q, item, 0);
}

void sl__queue_close(sl__queue *q) {
    pthread_mutex_lock(&q->mu);
    q->closed = 1;
    pthread_cond_broadcast(&q->not_empty);
    pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
}

int sl__queue_size(sl__queue *q) {
    pthread_mutex_lock(&q->mu);
    int n = q->count;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void sl__queue_free(sl__queue *q) {
    if (!q) return;
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
    pthread_mutex_destroy(&q->mu);
    free(q->items);
    free(q);
}
