/* SPDX-License-Identifier: Apache-2.0 */
/* Pinned staging of per-batch parameters for the ops' CUDA runs, and device scratch blocks (see
 * gpu_args.h). Growth waits for the stream before it frees the old blocks, so a copy or kernel
 * still reading them never sees freed memory. */
#include "operator/gpu_args.h"

#include "core/alloc.h"
#include "core/log.h"

#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"

void *sl__gpu_args_host(sl__gpu_args *g, int device, size_t n, sl_err *err) {
    if (n == 0) n = 1;
    if (g->host && n <= g->cap && g->device == device) return g->host;
    size_t cap = g->cap ? g->cap : 4096;
    while (cap < n) cap *= 2;
    sl__devpool *pool = sl__devpool_get(device, err);
    if (!pool) return NULL;
    void *h = sl__alloc_pinned(cap, err);
    if (!h) return NULL;
    void *d = sl__devpool_alloc(pool, cap, err);
    if (!d) {
        sl__alloc_pinned_free(h);
        return NULL;
    }
    sl__gpu_args_free(g);
    g->host = h;
    g->dev = d;
    g->cap = cap;
    g->device = device;
    return h;
}

sl_status sl__gpu_args_send(sl__gpu_args *g, size_t n, void *stream, void **dev, sl_err *err) {
    if (!g->host || n > g->cap)
        return sl_err_set(err, SL_EINVAL, "gpu args: %zu bytes staged in a %zu-byte block", n,
                          g->cap);
    if (n) SL_TRY(sl__cuda_memcpy(g->dev, true, g->host, false, n, stream, err));
    *dev = g->dev;
    return SL_OK;
}

void sl__gpu_args_free(sl__gpu_args *g) {
    if (g->host) sl__alloc_pinned_free(g->host);
    if (g->dev) {
        sl__devpool *pool = sl__devpool_get(g->device, NULL);
        if (pool) sl__devpool_free(pool, g->dev);
    }
    memset(g, 0, sizeof *g);
}

void *sl__gpu_scratch_get(sl__gpu_scratch *s, int device, size_t n, void *stream, sl_err *err) {
    if (n == 0) n = 1;
    if (s->dev && n <= s->cap && s->device == device) return s->dev;
    if (s->dev && stream && sl__cuda_stream_sync(stream, err) != SL_OK) return NULL;
    sl__gpu_scratch_free(s);
    sl__devpool *pool = sl__devpool_get(device, err);
    if (!pool) return NULL;
    size_t cap = 1u << 16;
    while (cap < n) cap *= 2;
    s->dev = sl__devpool_alloc(pool, cap, err);
    if (!s->dev) return NULL;
    s->cap = cap;
    s->device = device;
    return s->dev;
}

void sl__gpu_scratch_free(sl__gpu_scratch *s) {
    if (s->dev) {
        sl__devpool *pool = sl__devpool_get(s->device, NULL);
        if (pool) sl__devpool_free(pool, s->dev);
    }
    memset(s, 0, sizeof *s);
}

#else

void *sl__gpu_args_host(sl__gpu_args *g, int device, size_t n, sl_err *err) {
    (void)g, (void)device;
    sl_err_set(err, SL_ENOTSUP, "gpu args (%zu bytes): this build of sluice has no CUDA", n);
    return NULL;
}

sl_status sl__gpu_args_send(sl__gpu_args *g, size_t n, void *stream, void **dev, sl_err *err) {
    (void)g, (void)n, (void)stream, (void)dev;
    return sl_err_set(err, SL_ENOTSUP, "gpu args: this build of sluice has no CUDA");
}

void sl__gpu_args_free(sl__gpu_args *g) {
    memset(g, 0, sizeof *g);
}

void *sl__gpu_scratch_get(sl__gpu_scratch *s, int device, size_t n, void *stream, sl_err *err) {
    (void)s, (void)device, (void)stream;
    sl_err_set(err, SL_ENOTSUP, "device scratch (%zu bytes): this build of sluice has no CUDA", n);
    return NULL;
}

void sl__gpu_scratch_free(sl__gpu_scratch *s) {
    memset(s, 0, sizeof *s);
}

#endif
