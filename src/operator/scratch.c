/* SPDX-License-Identifier: Apache-2.0 */
/* Per-worker host scratch for ops' CPU runs (op.h). */
#include "operator/op.h"

#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

sl_status sl__worker_scratch_init(sl__worker_scratch *w, int workers, sl_err *err) {
    memset(w, 0, sizeof *w);
    if (workers < 1) workers = 1;
    w->buf = sl__calloc((size_t)workers, sizeof *w->buf, err);
    w->size = w->buf ? sl__calloc((size_t)workers, sizeof *w->size, err) : NULL;
    if (!w->size) {
        free(w->buf);
        w->buf = NULL;
        return SL_ENOMEM;
    }
    w->workers = workers;
    return SL_OK;
}

void *sl__worker_scratch_get(sl__worker_scratch *w, int worker, size_t n) {
    if (n <= w->size[worker]) return w->buf[worker];
    free(w->buf[worker]);
    w->buf[worker] = malloc(n);
    w->size[worker] = w->buf[worker] ? n : 0;
    return w->buf[worker];
}

void sl__worker_scratch_free(sl__worker_scratch *w) {
    for (int i = 0; w->buf && i < w->workers; i++) free(w->buf[i]);
    free(w->buf);
    free(w->size);
    memset(w, 0, sizeof *w);
}
