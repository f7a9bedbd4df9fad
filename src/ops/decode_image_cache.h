/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image's decoded-image cache (decode_image_cache.c: cache_size, cache_type,
 * cache_threshold): decoded images keyed by record key, kept in host memory on a CPU pipeline and
 * in device memory on a GPU one. Setup makes every decision (lookup, then peek only where the cache
 * has no image, then the plan's hits and keeps); run_cpu, or the GPU stage
 * (decode_image_gpu_nvjpeg.c), does the copies. */
#ifndef SLUICE_OPS_DECODE_IMAGE_CACHE_H
#define SLUICE_OPS_DECODE_IMAGE_CACHE_H

#include "ops/decode_image.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__DECODE_IMAGE_CACHE_ARGS                                                                \
    {"cache_size",                                                                                 \
     SL_ARG_INT,                                                                                   \
     "0",                                                                                          \
     "MB of decoded images kept per op instance, keyed by record key (in device memory on a GPU "  \
     "pipeline, host memory on a CPU one), so later epochs skip decoding; 0 = off",                \
     0,                                                                                            \
     NULL},                                                                                        \
        {"cache_type",                                                                             \
         SL_ARG_STR,                                                                               \
         "\"\"",                                                                                   \
         "\"threshold\" (the default): keep every image of at least cache_threshold bytes until "  \
         "the cache is full; \"largest\": after one epoch, keep the largest images that fit",      \
         0,                                                                                        \
         NULL},                                                                                    \
        {"cache_threshold",                                                                        \
         SL_ARG_INT,                                                                               \
         "0",                                                                                      \
         "threshold cache: smallest decoded image (bytes) that is kept",                           \
         0,                                                                                        \
         NULL},                                                                                    \
        {"cache_debug",                                                                            \
         SL_ARG_BOOL,                                                                              \
         "False",                                                                                  \
         "log the cache's hits and misses per batch (sl_log_set_callback)",                        \
         0,                                                                                        \
         NULL},                                                                                    \
    {                                                                                              \
        "cache_batch_copy", SL_ARG_BOOL, "True",                                                   \
            "accepted; a GPU batch's hits are always copied in one launch", 0, NULL                \
    }

/* s->cache of a decoders.image with cache_size > 0. */
typedef struct sl__decode_image_cache {
    size_t cap, used, threshold;
    bool largest, debug, device, chosen;
    uint8_t *host; /* the arena on a CPU pipeline */
    void *dev;     /* the arena on a GPU, allocated in the GPU stage */
    int dev_id;
    struct sl__decode_image_cache_ent *ents;
    int n, ents_cap;
    int *slots; /* open addressing: entry index + 1, 0 empty */
    int nslots;
    int64_t hits, misses; /* atomic reads by sl__decode_image_cache_hits */
    /* per sample of the current batch (setup, then run_cpu on a CPU pipeline) */
    size_t *hit, *put; /* offset + 1, 0 none (CPU pipelines) */
    uint64_t *hash;    /* its key's hash */
    int *ent;          /* its key's entry + 1 as setup found it, 0 none */
    int *run;          /* the samples run_cpu still has work for (io->run_index) */
    int cap_batch;
} sl__decode_image_cache;

/* From decoders.image's cache arguments (none for decoders.image_random_crop, which has no
 * cache): s->cache, or NULL when cache_size is 0. */
sl_status sl__decode_image_cache_create(sl__decode_image_state *s, const sl__args *a,
                                        const sl__op_init *init, sl_err *err);
void sl__decode_image_cache_free(sl__decode_image_cache *c);
/* The per-sample arrays for a batch of n. */
sl_status sl__decode_image_cache_batch(sl__decode_image_cache *c, int n, sl_err *err);
/* setup's first step: finds every key of the batch (c->hash, c->ent). */
void sl__decode_image_cache_lookup(sl__decode_image_cache *c, const sl__op_io *io);
/* Then for sample i: when the cache holds its image, fills *info from the entry (no peek). */
bool sl__decode_image_cache_known(sl__decode_image_cache *c, const sl__op_io *io, int i,
                                  sl__decode_image_info *info);
/* The plan's cache step: decides every sample from its key and shape (io->out[0] is sized); hit
 * and put per sample, as offset + 1 in the arena (0 none). */
sl_status sl__decode_image_cache_plan(sl__decode_image_state *s, sl__op_io *io, size_t *hit,
                                      size_t *put, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
