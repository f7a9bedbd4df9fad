/* SPDX-License-Identifier: Apache-2.0 */
/* Per-batch parameters of an op's CUDA run: the run fills a pinned host block (descriptors,
 * per-sample pointers, filter taps) and sends it to the device in one copy on the op's stream. The
 * blocks grow as needed and are reused from batch to batch; that is safe because the GPU stage
 * waits for its stream at the end of every batch. Plain C, no CUDA header: CPU-only builds compile
 * it too (every call then answers SL_ENOTSUP and free is a no-op). Also a plain device scratch
 * block (resize's intermediate rows) with the same lifetime rules. */
#ifndef SLUICE_OPERATOR_GPU_ARGS_H
#define SLUICE_OPERATOR_GPU_ARGS_H

#include "sluice/status.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__gpu_args {
    void *host; /* pinned */
    void *dev;  /* from the device's pool */
    size_t cap; /* bytes in each */
    int device;
} sl__gpu_args;

/* A pinned block of at least n bytes for the caller to fill (valid until the next call). */
void *sl__gpu_args_host(sl__gpu_args *g, int device, size_t n, sl_err *err);
/* Copies the first n bytes of the host block to the device block on stream; *dev = the device
 * block. */
sl_status sl__gpu_args_send(sl__gpu_args *g, size_t n, void *stream, void **dev, sl_err *err);
void sl__gpu_args_free(sl__gpu_args *g);

/* n rounded up to 8 bytes: where the next item of a params block may start. */
static inline size_t sl__gpu_args_align(size_t n) {
    return (n + 7) & ~(size_t)7;
}

typedef struct sl__gpu_scratch {
    void *dev;
    size_t cap;
    int device;
} sl__gpu_scratch;

/* A device block of at least n bytes; the previous contents are not kept. */
void *sl__gpu_scratch_get(sl__gpu_scratch *s, int device, size_t n, void *stream, sl_err *err);
void sl__gpu_scratch_free(sl__gpu_scratch *s);

#ifdef __cplusplus
}
#endif
#endif
