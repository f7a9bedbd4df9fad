/* SPDX-License-Identifier: Apache-2.0 */
/* Internal structure of an iterator (sl_iter): its pipelines, DALI's epoch bookkeeping and the
 * slots of global batches, shared by the iterator (iter.c), its checkpoints (iter_checkpoint.c)
 * and its outputs (iter_output.c). */
#ifndef SLUICE_PIPELINE_ITER_INT_H
#define SLUICE_PIPELINE_ITER_INT_H

#include "sluice/iterator.h"
#include "sluice/pipeline.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define SL__ITER_MAX_SHARDS 4096
#define SL__ITER_MAX_HELD   16 /* deepest prefetch_cpu */
/* batches out at once: prefetch_cpu + 1 when the caller releases them */
#define SL__ITER_MAX_SLOTS  (SL__ITER_MAX_HELD + 1)

/* A checkpoint holds the scalars and only the entries in use: n shard ids and S of each array in
 * DALI's order, none in global order (iter_checkpoint.c). */
typedef struct sl__iter_book {
    int64_t counter, size;
    int epoch;
    int64_t step;
    int shards_id[SL_MAX_DEVICES];
    int64_t counter_per_gpu[SL__ITER_MAX_SHARDS];
    int64_t shard_sizes[SL__ITER_MAX_SHARDS];
} sl__iter_book;

/* The live DLPack exports of each slot, counted down by their deleters from any thread. Shared by
 * the iterator and every export (refs), so a deleter called after sl_iter_free is still safe: the
 * last of them frees it. */
typedef struct sl__iter_exports {
    atomic_int refs;
    atomic_int count[SL__ITER_MAX_SLOTS];
} sl__iter_exports;

/* Drops one reference (the iterator's, or an export's); the last frees the counts. */
static inline void sl__iter_exports_drop(sl__iter_exports *e) {
    if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) free(e);
}

/* One slot of the iterator's pool: a batch from every pipeline while in use. Its global buffers
 * stay allocated from batch to batch (freed with the iterator). A slot given back while DLPack
 * exports of it live (released) goes back to the pipelines only once their deleters have run;
 * the iterator's own calls sweep. */
struct sl_iter_batch {
    sl_iter *it;
    sl_batch *b[SL_MAX_DEVICES];
    sl_tensor *global; /* per output (nout, allocated once the outputs are known) */
    bool *global_ok;
    bool in_use;   /* taken from the pipelines, not yet back with them */
    bool released; /* given back by the caller (or by rotation) while exports lived */
    int index;     /* in it->slots, and in it->exports->count */
    int64_t order; /* when it was taken: without caller_releases the oldest goes first */
    int valid[SL_MAX_DEVICES]; /* real samples per device (DALI's PARTIAL rule) */
};

struct sl_iter {
    sl_err err;
    int n; /* local devices = pipelines */
    sl_device devices[SL_MAX_DEVICES];
    sl_pipeline *pipes[SL_MAX_DEVICES];
    int B;       /* per-device batch */
    int threads; /* each pipeline's CPU workers */
    int S;       /* shards (global devices) */
    int nout;
    char **names; /* nout */
    sl_layout_mode layout;
    sl_last_batch_policy policy;
    bool padded, auto_reset, stick, use_reader;
    bool global;            /* global order (sl_iter_config.global_order) */
    int64_t N;              /* epoch_size (reader) */
    sl__iter_book bk;       /* current */
    sl__iter_book bk_first; /* before the prepared first batch */
    bool first_pending, ever_consumed, ended;
    bool eof_pending; /* resumed at the end of an epoch: the next call reports it */
    bool caller_releases;
    int max_held;  /* slots in use at most (sl_iter_max_held) */
    int held;      /* slots in use: handed out, or the prepared first batch */
    int64_t takes; /* batches taken so far (slot order) */
    sl_iter_batch slots[SL__ITER_MAX_SLOTS];
    sl__iter_exports *exports;
    sl_iter_batch *first; /* the prepared first batch */
    void *extra;
    size_t extra_size;
    const void *resume_bytes; /* during creation: a checkpoint given in memory */
    size_t resume_size;
};

static inline int64_t sl__iter_ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

/* Reads the checkpoint at path (or the one given in memory: it->resume_bytes; path then names its
 * origin), checks it against the iterator and loads its bookkeeping (it->bk) and extra bytes; the
 * buffer comes back in *out_buf, with device d's pipeline state at states[d], lens[d] bytes. */
sl_status sl__iter_checkpoint_read(sl_iter *it, const char *path, void **out_buf, size_t *out_size,
                                   const unsigned char **states, uint64_t *lens, sl_err *err);
/* Checks a resumed checkpoint's bookkeeping r against the fresh one (it->bk, from init_book). */
sl_status sl__iter_checkpoint_check(const sl_iter *it, const sl__iter_book *r, const char *path,
                                    sl_err *err);

#endif
