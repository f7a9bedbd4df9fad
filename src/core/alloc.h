/* SPDX-License-Identifier: Apache-2.0 */
/* Memory: aligned host blocks, pinned (page-locked) host blocks for fast transfers, and a
 * per-device pool of CUDA memory that recycles blocks by size class instead of calling cudaMalloc
 * per batch. Every failure is SL_ENOMEM (or SL_ECUDA / SL_ENOTSUP) with the size in the message. */
#ifndef SLUICE_CORE_ALLOC_H
#define SLUICE_CORE_ALLOC_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_ALIGN 64

/* Aligned host memory (align a power of two >= sizeof(void*)); size 0 gives a valid unique block.
 */
void *sl__alloc_host(size_t size, size_t align, sl_err *err);
void sl__alloc_host_free(void *p);
/* Like realloc for blocks from sl__alloc_host; keeps the first min(old, new) bytes. */
void *sl__alloc_host_grow(void *p, size_t old_size, size_t new_size, sl_err *err);

/* Makes room for need items of elem bytes in items (a malloc'd array of *cap, or NULL with *cap
 * 0): doubles the capacity, from first, until need fit. Returns the array, moved perhaps, or NULL
 * with SL_ENOMEM in err (items is then left as it was). */
void *sl__grow(void *items, int *cap, int need, size_t elem, int first, sl_err *err);

/* Plain malloc/calloc that record SL_ENOMEM with the size on failure. */
void *sl__malloc(size_t size, sl_err *err);
void *sl__calloc(size_t n, size_t size, sl_err *err);

/* true when this build has CUDA and at least one device answers. */
bool sl__cuda_available(void);
int sl__cuda_device_count(void);

/* Page-locked host memory (CUDA builds); SL_ENOTSUP without CUDA. */
void *sl__alloc_pinned(size_t size, sl_err *err);
void sl__alloc_pinned_free(void *p);

/* Device memory on CUDA device `device`; from the device's pool. */
typedef struct sl__devpool sl__devpool;
sl_status sl__devpool_create(int device, sl__devpool **out, sl_err *err);
void *sl__devpool_alloc(sl__devpool *pool, size_t size, sl_err *err);
void sl__devpool_free(sl__devpool *pool, void *p);
/* Returns cached free blocks to the driver. */
void sl__devpool_trim(sl__devpool *pool);
size_t sl__devpool_bytes_in_use(const sl__devpool *pool);
size_t sl__devpool_bytes_cached(const sl__devpool *pool);
void sl__devpool_destroy(sl__devpool *pool);
/* The process-wide pool of a device, created on first use (thread-safe). */
sl__devpool *sl__devpool_get(int device, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
