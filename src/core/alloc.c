/* SPDX-License-Identifier: Apache-2.0 */
/* Host, pinned and device memory. Device memory is served from per-device pools: freed blocks go to
 * a free list of their size class (powers of two from 256 bytes, 2 MiB multiples above 32 MiB) and
 * are handed out again, so steady-state batches cost no cudaMalloc. A CPU-only build includes no
 * CUDA header: pinned memory and pools answer SL_ENOTSUP there. */
#include "core/alloc.h"
#include "core/log.h"
#include "core/cuda.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

void *sl__malloc(size_t size, sl_err *err) {
    void *p = malloc(size ? size : 1);
    if (!p) sl_err_set(err, SL_ENOMEM, "out of memory allocating %zu bytes", size);
    return p;
}

void *sl__grow(void *items, int *cap, int need, size_t elem, int first, sl_err *err) {
    if (need <= *cap) return items;
    int c = *cap > 0 ? *cap : first;
    while (c < need) {
        if (c > INT_MAX / 2) {
            sl_err_set(err, SL_ENOMEM, "out of memory");
            return NULL;
        }
        c *= 2;
    }
    void *n = realloc(items, (size_t)c * elem);
    if (!n) {
        sl_err_set(err, SL_ENOMEM, "out of memory");
        return NULL;
    }
    *cap = c;
    return n;
}

void *sl__calloc(size_t n, size_t size, sl_err *err) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) sl_err_set(err, SL_ENOMEM, "out of memory allocating %zu x %zu bytes", n, size);
    return p;
}

void *sl__alloc_host(size_t size, size_t align, sl_err *err) {
    if (align < sizeof(void *)) align = sizeof(void *);
    size_t rounded = (size + align - 1) / align * align;
    if (rounded == 0) rounded = align;
    void *p = NULL;
    if (posix_memalign(&p, align, rounded) != 0 || !p) {
        sl_err_set(err, SL_ENOMEM, "out of memory allocating %zu bytes of host memory", size);
        return NULL;
    }
    return p;
}

void sl__alloc_host_free(void *p) {
    free(p);
}

void *sl__alloc_host_grow(void *p, size_t old_size, size_t new_size, sl_err *err) {
    void *q = sl__alloc_host(new_size, SL_ALIGN, err);
    if (!q) return NULL;
    if (p) {
        memcpy(q, p, old_size < new_size ? old_size : new_size);
        free(p);
    }
    return q;
}

#ifdef SLUICE_HAVE_CUDA

sl_status sl_cuda_init(const int *ids, int n, sl_err *err) {
    return n > 0 ? sl__cuda_init_devices(ids, n, err) : SL_OK;
}

bool sl__cuda_available(void) {
    return sl__cuda_device_count() > 0;
}

int sl__cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

void *sl__alloc_pinned(size_t size, sl_err *err) {
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, size ? size : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        sl_err_set(err, SL_ENOMEM, "out of memory allocating %zu bytes of pinned host memory: %s",
                   size, cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

void sl__alloc_pinned_free(void *p) {
    if (p) cudaFreeHost(p);
}

/* ---- device pool ---------------------------------------------------------------------------- */

#define POOL_CLASSES  48
#define POOL_BIG      (32u << 20)
#define POOL_BIG_STEP (2u << 20)

typedef struct block {
    void *ptr;
    size_t size; /* class size */
    struct block *next;
} block;

struct sl__devpool {
    int device;
    pthread_mutex_t mu;
    block *free_small[POOL_CLASSES]; /* power-of-two classes */
    block *free_big;                 /* larger blocks, any size (first fit of exact class size) */
    block **live;                    /* open-addressing table of blocks in use */
    size_t live_cap, live_count;
    size_t in_use, cached;
};

static size_t class_size(size_t size, int *cls) {
    if (size <= POOL_BIG) {
        size_t s = 256;
        int c = 0;
        while (s < size) {
            s <<= 1;
            c++;
        }
        *cls = c;
        return s;
    }
    *cls = -1;
    return (size + POOL_BIG_STEP - 1) / POOL_BIG_STEP * POOL_BIG_STEP;
}

static size_t hash_ptr(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)(x & (cap - 1));
}

static int live_insert(sl__devpool *pl, block *b) {
    if ((pl->live_count + 1) * 2 > pl->live_cap) {
        size_t ncap = pl->live_cap ? pl->live_cap * 2 : 64;
        block **nt = calloc(ncap, sizeof *nt);
        if (!nt) return -1;
        for (size_t i = 0; i < pl->live_cap; i++) {
            if (!pl->live[i]) continue;
            size_t h = hash_ptr(pl->live[i]->ptr, ncap);
            while (nt[h]) h = (h + 1) & (ncap - 1);
            nt[h] = pl->live[i];
        }
        free(pl->live);
        pl->live = nt;
        pl->live_cap = ncap;
    }
    size_t h = hash_ptr(b->ptr, pl->live_cap);
    while (pl->live[h]) h = (h + 1) & (pl->live_cap - 1);
    pl->live[h] = b;
    pl->live_count++;
    return 0;
}

static block *live_remove(sl__devpool *pl, void *p) {
    if (!pl->live_cap) return NULL;
    size_t h = hash_ptr(p, pl->live_cap);
    while (pl->live[h]) {
        if (pl->live[h]->ptr == p) {
            block *b = pl->live[h];
            pl->live[h] = NULL;
            pl->live_count--;
            /* re-insert the rest of the cluster */
            size_t j = (h + 1) & (pl->live_cap - 1);
            while (pl->live[j]) {
                block *m = pl->live[j];
                pl->live[j] = NULL;
                size_t k = hash_ptr(m->ptr, pl->live_cap);
                while (pl->live[k]) k = (k + 1) & (pl->live_cap - 1);
                pl->live[k] = m;
                j = (j + 1) & (pl->live_cap - 1);
            }
            return b;
        }
        h = (h + 1) & (pl->live_cap - 1);
    }
    return NULL;
}

sl_status sl__devpool_create(int device, sl__devpool **out, sl_err *err) {
    int n = sl__cuda_device_count();
    if (device < 0 || device >= n)
        return sl_err_set(err, SL_EINVAL, "CUDA device %d does not exist (%d found)", device, n);
    sl__devpool *pl = sl__calloc(1, sizeof *pl, err);
    if (!pl) return SL_ENOMEM;
    pl->device = device;
    pthread_mutex_init(&pl->mu, NULL);
    *out = pl;
    return SL_OK;
}

void *sl__devpool_alloc(sl__devpool *pl, size_t size, sl_err *err) {
    int cls;
    size_t cs = class_size(size, &cls);
    pthread_mutex_lock(&pl->mu);
    block *b = NULL;
    if (cls >= 0 && cls < POOL_CLASSES && pl->free_small[cls]) {
        b = pl->free_small[cls];
        pl->free_small[cls] = b->next;
    } else if (cls < 0) {
        for (block **pp = &pl->free_big; *pp; pp = &(*pp)->next) {
            if ((*pp)->size == cs) {
                b = *pp;
                *pp = b->next;
                break;
            }
        }
    }
    if (b) {
        pl->cached -= b->size;
    } else {
        b = malloc(sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&pl->mu);
            sl_err_set(err, SL_ENOMEM, "out of memory allocating a pool record");
            return NULL;
        }
        int prev = 0;
        cudaGetDevice(&prev);
        cudaSetDevice(pl->device);
        cudaError_t e = cudaMalloc(&b->ptr, cs);
        if (e != cudaSuccess && pl->cached) {
            /* give the cache back and try once more */
            (void)cudaGetLastError();
            pthread_mutex_unlock(&pl->mu);
            sl__devpool_trim(pl);
            pthread_mutex_lock(&pl->mu);
            e = cudaMalloc(&b->ptr, cs);
        }
        cudaSetDevice(prev);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            free(b);
            pthread_mutex_unlock(&pl->mu);
            sl_err_set(err, SL_ENOMEM, "out of memory allocating %zu bytes on CUDA device %d: %s",
                       size, pl->device, cudaGetErrorString(e));
            return NULL;
        }
        b->size = cs;
    }
    if (live_insert(pl, b) != 0) {
        b->next = pl->free_big;
        pl->free_big = b;
        pl->cached += b->size;
        pthread_mutex_unlock(&pl->mu);
        sl_err_set(err, SL_ENOMEM, "out of memory growing the device pool table");
        return NULL;
    }
    pl->in_use += b->size;
    pthread_mutex_unlock(&pl->mu);
    return b->ptr;
}

void sl__devpool_free(sl__devpool *pl, void *p) {
    if (!p) return;
    pthread_mutex_lock(&pl->mu);
    block *b = live_remove(pl, p);
    SL_ASSERT(b != NULL); /* freeing memory this pool did not hand out */
    int cls;
    class_size(b->size, &cls);
    if (cls >= 0 && cls < POOL_CLASSES) {
        b->next = pl->free_small[cls];
        pl->free_small[cls] = b;
    } else {
        b->next = pl->free_big;
        pl->free_big = b;
    }
    pl->in_use -= b->size;
    pl->cached += b->size;
    pthread_mutex_unlock(&pl->mu);
}

static void free_chain(block *b) {
    while (b) {
        block *n = b->next;
        cudaFree(b->ptr);
        free(b);
        b = n;
    }
}

void sl__devpool_trim(sl__devpool *pl) {
    pthread_mutex_lock(&pl->mu);
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(pl->device);
    for (int i = 0; i < POOL_CLASSES; i++) {
        free_chain(pl->free_small[i]);
        pl->free_small[i] = NULL;
    }
    free_chain(pl->free_big);
    pl->free_big = NULL;
    pl->cached = 0;
    cudaSetDevice(prev);
    pthread_mutex_unlock(&pl->mu);
}

size_t sl__devpool_bytes_in_use(const sl__devpool *pl) {
    return pl->in_use;
}
size_t sl__devpool_bytes_cached(const sl__devpool *pl) {
    return pl->cached;
}

void sl__devpool_destroy(sl__devpool *pl) {
    if (!pl) return;
    sl__devpool_trim(pl);
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(pl->device);
    for (size_t i = 0; i < pl->live_cap; i++) {
        if (pl->live[i]) {
            cudaFree(pl->live[i]->ptr);
            free(pl->live[i]);
        }
    }
    cudaSetDevice(prev);
    free(pl->live);
    pthread_mutex_destroy(&pl->mu);
    free(pl);
}

#define MAX_POOLS 64
static sl__devpool *pools[MAX_POOLS];
static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;

sl__devpool *sl__devpool_get(int device, sl_err *err) {
    if (device < 0 || device >= MAX_POOLS) {
        sl_err_set(err, SL_EINVAL, "CUDA device %d out of range", device);
        return NULL;
    }
    pthread_mutex_lock(&pools_mu);
    if (!pools[device] && sl__devpool_create(device, &pools[device], err) != SL_OK)
        pools[device] = NULL;
    sl__devpool *p = pools[device];
    pthread_mutex_unlock(&pools_mu);
    return p;
}

#else /* no CUDA */

sl_status sl_cuda_init(const int *ids, int n, sl_err *err) {
    (void)ids;
    return n > 0 ? sl_err_set(err, SL_ENOTSUP, "GPUs need a CUDA build of sluice") : SL_OK;
}

bool sl__cuda_available(void) {
    return false;
}
int sl__cuda_device_count(void) {
    return 0;
}

void *sl__alloc_pinned(size_t size, sl_err *err) {
    sl_err_set(err, SL_ENOTSUP, "pinned memory (%zu bytes) needs a CUDA build", size);
    return NULL;
}
void sl__alloc_pinned_free(void *p) {
    (void)p;
}

sl_status sl__devpool_create(int device, sl__devpool **out, sl_err *err) {
    *out = NULL;
    return sl_err_set(err, SL_ENOTSUP, "CUDA device %d: this build of sluice has no CUDA", device);
}
void *sl__devpool_alloc(sl__devpool *pool, size_t size, sl_err *err) {
    sl_err_set(err, SL_ENOTSUP, "device memory (%zu bytes): this build has no CUDA", size);
    return NULL;
}
void sl__devpool_free(sl__devpool *pool, void *p) {
    (void)pool, (void)p;
}
void sl__devpool_trim(sl__devpool *pool) {
    (void)pool;
}
size_t sl__devpool_bytes_in_use(const sl__devpool *pool) {
    return 0;
}
size_t sl__devpool_bytes_cached(const sl__devpool *pool) {
    return 0;
}
void sl__devpool_destroy(sl__devpool *pool) {
    (void)pool;
}
sl__devpool *sl__devpool_get(int device, sl_err *err) {
    sl_err_set(err, SL_ENOTSUP, "CUDA device %d: this build of sluice has no CUDA", device);
    return NULL;
}

#endif
