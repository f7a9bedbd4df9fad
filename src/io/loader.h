/* SPDX-License-Identifier: Apache-2.0 */
/* The loader core shared by every record format (DALI's Loader, docs/dali.md 3.2-3.4): it
 * turns a data set of N records into the stream of record indices one reader instance delivers,
 * sample by sample: shard i of S is [floor(i*N/S), floor((i+1)*N/S)); each epoch reads the next
 * shard unless stick_to_shard; random_shuffle picks at random (Philox, from the op seed) within a
 * window of initial_fill upcoming records of the current epoch; shuffle_after_epoch reads the data
 * set through a seeded global permutation per epoch (the same on every shard); pad_last_batch
 * repeats the last sample until the shard has given ceil(N/S) samples and the batch is complete.
 * The loader knows only indices; stores (LMDB, IDX, folders, or a test's array) map them to bytes.
 * In global order (cfg.global_order) none of that applies: batches are slices of one permutation
 * of the whole data set per epoch (see the config).
 */
#ifndef SLUICE_IO_LOADER_H
#define SLUICE_IO_LOADER_H

#include "sluice/reader.h"
#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__loader_cfg {
    int64_t n;           /* records in the whole data set (all paths) */
    int num_shards;      /* S >= 1, S <= n */
    int shard_id;        /* < S */
    bool random_shuffle; /* window shuffle */
    int initial_fill;    /* window size when shuffling (DALI default 1024) */
    bool stick_to_shard;
    bool pad_last_batch;
    bool shuffle_after_epoch; /* global permutation per epoch (seeded by perm_seed and the epoch) */
    uint64_t seed;            /* window picks */
    uint64_t perm_seed;       /* must be equal on every shard */
    /* Global order (a sluice extension; see docs/readers.md): epoch e is the permutation of all
     * n records keyed by (seed, e) (the identity without random_shuffle), and global batch t is
     * its positions [t*G, t*G + G), G = num_shards * batch; this shard reads the batch-sized part
     * at shard_id * batch. The order depends on G, not on how many shards share it. An epoch is
     * ceil(n / G) batches, the last one filled from the epoch's start; with global_drop,
     * floor(n / G). The window, padding, stick_to_shard and shuffle_after_epoch do not apply.
     * seed must be equal on every shard. */
    bool global_order;
    int batch;        /* samples per batch of this shard (global_order only) */
    bool global_drop; /* whole batches only */
} sl__loader_cfg;

typedef struct sl__loader sl__loader;

/* First record of shard id of s over n: floor(id*n/s). */
static inline int64_t sl__loader_shard_begin(int64_t n, int s, int id) {
    return n * id / s; /* create checks n*s fits */
}
static inline int64_t sl__loader_shard_size(int64_t n, int s, int id) {
    return sl__loader_shard_begin(n, s, id + 1) - sl__loader_shard_begin(n, s, id);
}

/* Checks the configuration (messages name no path: callers prefix it). */
sl_status sl__loader_create(const sl__loader_cfg *cfg, sl__loader **out, sl_err *err);
/* The next record index; is_new_batch: this is sample 0 of a batch (padding ends only there).
 * *padded (may be NULL) tells a padding repeat of the previous sample. */
int64_t sl__loader_next(sl__loader *l, bool is_new_batch, bool *padded);
/* Epochs completed by the consumer so far (the epoch of the next sample, once it starts). */
int64_t sl__loader_epoch(const sl__loader *l);
void sl__loader_meta(const sl__loader *l, sl_reader_meta *meta);
/* Checkpoint: position, window contents and RNG state; restore yields exactly the continuation.
 * restore checks that the blob came from a loader of the same configuration. */
sl_status sl__loader_save(const sl__loader *l, void **bytes, size_t *size, sl_err *err);
sl_status sl__loader_restore(sl__loader *l, const void *bytes, size_t size, sl_err *err);
void sl__loader_free(sl__loader *l);

#ifdef __cplusplus
}
#endif
#endif
