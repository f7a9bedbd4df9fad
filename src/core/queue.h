/* SPDX-License-Identifier: Apache-2.0 */
/* A bounded multi-producer multi-consumer queue of pointers with close/drain semantics: how the
 * pipeline's stages hand batches to each other. */
#ifndef SLUICE_CORE_QUEUE_H
#define SLUICE_CORE_QUEUE_H

#include "sluice/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__queue sl__queue;

sl_status sl__queue_create(int capacity, sl__queue **out, sl_err *err);
/* Blocks while full; SL_ECLOSED once the queue is closed (the item is not taken). */
sl_status sl__queue_push(sl__queue *q, void *item);
/* Blocks while empty and open; after close, returns the items left, then SL_EOF. */
sl_status sl__queue_pop(sl__queue *q, void **item);
/* As pop, but gives up after timeout_ms with SL_ETIMEOUT. */
sl_status sl__queue_pop_timeout(sl__queue *q, void **item, int timeout_ms);
/* Waits until an item can be popped or the queue is closed (SL_OK), at most timeout_ms (< 0: no
 * limit; then SL_ETIMEOUT); takes nothing. */
sl_status sl__queue_wait(sl__queue *q, int timeout_ms);
/* Non-blocking: SL_ETIMEOUT when it would block. */
sl_status sl__queue_try_push(sl__queue *q, void *item);
sl_status sl__queue_try_pop(sl__queue *q, void **item);
/* Wakes every waiter; pushes fail from now on, pops drain what is left. */
void sl__queue_close(sl__queue *q);
int sl__queue_size(sl__queue *q);
void sl__queue_free(sl__queue *q);

#ifdef __cplusplus
}
#endif
#endif
