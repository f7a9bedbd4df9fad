/* SPDX-License-Identifier: Apache-2.0 */
/* sl_iter: global batches over a mesh of devices, with DALI's data_iterator semantics.
 *
 * The iterator builds one pipeline per local device from the same pipeline text (binding num_shards
 * and shard_id for each), divides the global batch size by the device count (integer division, as
 * DALI: a remainder is dropped and a warning logged), and each step takes one batch from every
 * pipeline. Epochs are counted from the reader meta exactly as DALI's iterator does (len, size,
 * FILL/DROP/PARTIAL, padded shards, read-ahead carried from epoch to epoch).
 *
 * Layouts: SHARDED -- each output is one global (devices*B, ...) tensor whose rows are split across
 * devices; STACKED -- (devices, B, ...) for pmap-style code. Either way each device's shard is a
 * zero-copy view on its device (sl_iter_shard), and may be exported as DLPack. A batch stays valid
 * until sl_iter_next is called prefetch_cpu more times (or the iterator is freed) -- or, with
 * caller_releases, until the caller gives it back (sl_iter_release), which suits consumers that
 * hand the memory out and learn late when it is free (a Python binding's DLPack capsules).
 *
 *     sl_iter_config c;
 *     sl_iter_config_init(&c);
 *     c.text = pipeline_text;                      // with @data_iterator(...) supplying the rest
 *     c.binds = binds; c.nbinds = 3;               // data_path, image_size, num_classes
 *     c.batch_size = 200;                          // global
 *     sl_iter_parse_devices("cpu:2", &c, &err);    // or "all", "0,1", "cpu"
 *     sl_iter *it;
 *     if (sl_iter_create(&c, &it, &err)) ...
 *     for (int epoch = 0; epoch < 5; epoch++, sl_iter_reset(it)) {
 *         const sl_iter_batch *b;
 *         while (sl_iter_next(it, &b) == SL_OK) {
 *             sl_tensor x;
 *             sl_iter_shard(b, 0, dev, &x);       // (B, 784) f32 of device dev
 *         }
 *     }
 *     sl_iter_free(it); */
#ifndef SLUICE_ITERATOR_H
#define SLUICE_ITERATOR_H

#include "sluice/pipeline.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_MAX_DEVICES 64

typedef struct sl_iter sl_iter;
typedef struct sl_iter_batch sl_iter_batch;

typedef struct sl_iter_config {
    /* the pipeline: text (with an optional decorator) ... */
    const char *text;
    const char *filename; /* for error messages */
    int nbinds;
    const sl_pipeline_bind *binds;
    /* the text's pipeline function (NULL: the decorated one, else the only one no other calls;
     * sl_pipeline_parse_function) */
    const char *function;
    /* ... or a function that builds it op by op into p (text NULL) */
    sl_status (*build)(sl_pipeline *p, int shard_id, int num_shards, void *user, sl_err *err);
    /* with text: called for each pipeline once it is made, before its text is parsed -- to
     * register the sources its fn.external_source ops use (sl_pipeline_add_source), one per shard
     * if they differ; NULL: nothing to do */
    sl_status (*prepare)(sl_pipeline *p, int shard_id, int num_shards, void *user, sl_err *err);
    void *build_user; /* build's or prepare's user */

    int ndevices; /* local devices: one pipeline each */
    sl_device devices[SL_MAX_DEVICES];
    int batch_size;  /* global batch */
    int num_threads; /* per pipeline, 1..1024; SL_NUM_THREADS_AUTO (the default, DALI's is 4):
                      * sl_pipeline_default_threads(ndevices), the local pipelines sharing the
                      * process's CPUs (sl_pipeline_num_threads of sl_iter_pipeline says it) */
    uint64_t seed;
    int prefetch_cpu, prefetch_gpu;
    /* multi-process: this process's first global shard and the global shard count (0: local) */
    int shard_offset, total_shards;

    /* iterator settings; -1 / NULL / "" mean "from the decorator, else DALI's default" */
    int num_outputs;
    const char *const *output_map; /* num_outputs names */
    const char *reader_name;
    int64_t size;
    int last_batch_policy;                                  /* sl_last_batch_policy or -1 */
    int last_batch_padded, prepare_first_batch, auto_reset; /* 0/1 or -1 */
    int layout;                                             /* sl_layout_mode or -1 */
    /* checkpoint to resume from: a file written by sl_iter_checkpoint, or bytes from sl_iter_save
     * (e.g. one rank's part of a multi-process checkpoint; with both, the bytes are read and
     * resume only names them in messages); NULL when starting afresh */
    const char *resume;
    const void *resume_bytes;
    size_t resume_size;
    /* 0 (default): the iterator releases each batch itself, prefetch_cpu sl_iter_next calls after
     * it handed it out. 1: it never does; the caller gives every batch back with sl_iter_release
     * and may hold up to sl_iter_max_held (prefetch_cpu + 1) at once. */
    int caller_releases;
    /* 1: global order (a sluice extension, docs/iterator.md): global batch t is records
     * [t*G, t*G + G) of one permutation of the whole data set per epoch, split in order over all
     * devices of all processes, so what a step sees does not depend on the device or process
     * count; its checkpoints resume on any device count with the same global batch. Needs a
     * reader (it counts the epoch: ceil(N / G) batches, floor under DROP). 0 (default): DALI's
     * sharding, each device reading its own shard. */
    int global_order;
    /* NULL (default): every pipeline gets `seed`. Else ndevices seeds, one per local pipeline in
     * device order, as DALI's pipelines each have their own (a binding given pipelines with
     * different seeds); they must be equal in global order, whose permutation is one for all. */
    const uint64_t *device_seeds;
    /* every pipeline's sl_pipeline_config.stream_priority (CUDA's, lower is more urgent; 0 the
     * default) */
    int stream_priority;
} sl_iter_config;

void sl_iter_config_init(sl_iter_config *c);
/* "cpu" (1 CPU device), "cpu:K", "all" (every GPU, else the CPU), "0,1,3" (GPU ids). */
sl_status sl_iter_parse_devices(const char *spec, sl_iter_config *c, sl_err *err);

/* The settings a pipeline's decorator (@pipeline_def(batch_size=..., device_id=...)) may carry
 * and a caller may give over it -- a command line's flags, a program's arguments -- resolved in
 * one place for every caller (`sluice run`, `sluice train`, the Python package). Each is given
 * (the flag was typed) or not; one given wins over the decorator's, which wins over the default.
 * The job's processes (mpirun) are part of it: shards are global, numbered process by process. */
typedef struct sl_iter_settings {
    const char *devices;         /* "cpu", "cpu:K", "all", GPU ids "0,1"; NULL: not given */
    const char *default_devices; /* where neither gives them (NULL: "cpu") */
    int batch_size;              /* the global batch over every device of every process; -1 */
    int num_threads;             /* per pipeline, SL_NUM_THREADS_AUTO or 1..1024; -1 */
    int prefetch;                /* prefetch_queue_depth, 1..; -1 */
    bool seed_given;
    uint64_t seed;
    int rank, nranks;           /* this process of the job's (0 of 1 without mpirun) */
    int local_rank, local_size; /* ... and of this node's */
} sl_iter_settings;

/* A given setting that overrode the decorator's (bits of what the calls below report, so that a
 * caller can say so in its own words). */
#define SL_SETTING_DEVICES    1u
#define SL_SETTING_BATCH_SIZE 2u
#define SL_SETTING_THREADS    4u
#define SL_SETTING_SEED       8u
#define SL_SETTING_PREFETCH   16u

/* An sl_iter_settings with nothing given, for one process. */
void sl_iter_settings_init(sl_iter_settings *s);
/* c's devices and shards: s->devices, else the decorator's device_id (N: GPU N; None: the CPU;
 * an error is prefixed "<c->filename>: device_id=N: "), else s->default_devices. "all" in a job
 * of several processes on GPUs means one GPU per process, the one of its local rank (when the
 * decorator names no device_id, or "all" was given). Then this process's shards: shard_offset =
 * rank * devices, total_shards = nranks * devices. d: the decorator (NULL: none). *overridden
 * gets SL_SETTING_DEVICES when s->devices overrode a device_id (may be NULL). */
sl_status sl_iter_settle_devices(sl_iter_config *c, const sl_pipeline_decorator *d,
                                 const sl_iter_settings *s, unsigned *overridden, sl_err *err);
/* After the devices and shards: the global batch (the decorator's batch_size is per pipeline, as
 * in DALI: times the shards, unless one pipeline runs without a layout), the threads (left at
 * SL_NUM_THREADS_AUTO: chosen from the machine for the pipelines of this node's processes,
 * sl_pipeline_default_threads(local_size * devices)), the seed and the prefetch depth, each s's
 * when given, else the decorator's, else c's as it is. *overridden gets a bit for each given
 * setting that overrode one of the decorator's. SL_EINVAL when the decorator's batch over the
 * shards passes INT_MAX. */
sl_status sl_iter_settle(sl_iter_config *c, const sl_pipeline_decorator *d,
                         const sl_iter_settings *s, unsigned *overridden, sl_err *err);
/* The batch each pipeline of c gets (a global batch over the shards; all of it for one
 * pipeline without a layout). */
int sl_iter_config_device_batch(const sl_iter_config *c, const sl_pipeline_decorator *d);

sl_status sl_iter_create(const sl_iter_config *c, sl_iter **out, sl_err *err);
void sl_iter_free(sl_iter *it);
/* Stops the pipelines' threads and frees nothing (sl_pipeline_stop on each): batches taken, and
 * their exports, stay valid and may still be released; sl_iter_next then fails. */
void sl_iter_stop(sl_iter *it);
const char *sl_iter_errmsg(const sl_iter *it);

/* The next global batch; SL_EOF at the end of the epoch (then sl_iter_reset starts the next one;
 * with auto_reset the iterator resets itself before returning SL_EOF). */
sl_status sl_iter_next(sl_iter *it, const sl_iter_batch **out);
/* Waits at most timeout_ms (< 0: no limit) until every pipeline has its next batch ready (or an
 * error to give): SL_OK, else SL_ETIMEOUT. sl_iter_next then seldom waits (a step that drops or
 * skips batches may take more than one from a pipeline). For waiting in slices between signals. */
sl_status sl_iter_wait(sl_iter *it, int timeout_ms);
/* Starts the next epoch; a reset in the middle of an epoch is ignored (with a warning), as DALI. */
void sl_iter_reset(sl_iter *it);
/* With caller_releases: gives a batch taken by sl_iter_next back (in any order, once each); its
 * views and DLPack exports must not be used after. A no-op for NULL. (Without caller_releases it
 * gives the batch back early; a batch not held is ignored with a warning.) Like every call on one
 * iterator, not concurrently with another call on it; a binding may serialise them with a lock
 * that sl_iter_next holds while it waits for data: it never waits for a release. */
void sl_iter_release(sl_iter *it, const sl_iter_batch *b);
/* How many batches the caller may hold at once: with caller_releases, taking one more than this
 * is an SL_ESTATE error naming the count (nothing is taken: release one and call again);
 * otherwise the prefetch depth (a batch stays valid until sl_iter_next is called that many more
 * times). */
int sl_iter_max_held(const sl_iter *it);

/* DALI's len(iterator) and iterator.size for the current epoch. */
int64_t sl_iter_len(const sl_iter *it);
int64_t sl_iter_size(const sl_iter *it);
int sl_iter_epoch(const sl_iter *it);    /* epochs completed (resets) */
int64_t sl_iter_step(const sl_iter *it); /* batches taken in this epoch */
int sl_iter_num_devices(const sl_iter *it);
int sl_iter_device_batch(const sl_iter *it); /* B: samples per device per step */
int sl_iter_num_outputs(const sl_iter *it);
const char *sl_iter_output_name(const sl_iter *it, int i);
sl_layout_mode sl_iter_layout(const sl_iter *it);
sl_pipeline *sl_iter_pipeline(sl_iter *it, int device);

/* Device dev's part of output i: (B, ...) on that device, no copy. */
sl_status sl_iter_shard(const sl_iter_batch *b, int output, int dev, sl_tensor *out, sl_err *err);
/* Device dev's part of output i as a sample list (for samples of different shapes). */
const sl_tlist *sl_iter_shard_list(const sl_iter_batch *b, int output, int dev);
/* The whole output as one host tensor: (devices*B, ...) sharded or (devices, B, ...) stacked.
 * CPU devices only; assembled (copied) into a buffer the iterator owns, valid like the batch. */
sl_status sl_iter_global(const sl_iter_batch *b, int output, sl_tensor *out, sl_err *err);
/* Global shape of output i for the iterator's layout. */
sl_status sl_iter_global_shape(const sl_iter_batch *b, int output, int *ndim, int64_t *shape,
                               sl_err *err);
const char *sl_iter_key(const sl_iter_batch *b, int dev, int sample);
int sl_iter_batch_devices(const sl_iter_batch *b);
/* How many of device dev's samples in this batch are real: B, except in the last batch of an
 * epoch under SL_LAST_BATCH_PARTIAL, where the rest are padding (DALI's PyTorch iterator trims
 * them: with a reader, each device by its own shard; without, the first sl_iter_size samples). */
int sl_iter_batch_valid(const sl_iter_batch *b, int dev);

/* DLPack: a DLManagedTensor* (returned as void* so this header needs no dlpack.h) for device dev's
 * shard of output i, (B, ...), or with SL_DLPACK_STACKED (1, B, ...): that device's slice of a
 * stacked (devices, B, ...) array. The export keeps the batch's memory: once the batch is given
 * back (sl_iter_release, or rotation without caller_releases), its buffers return to the
 * pipelines only after every export's deleter has run. The deleter may be called from any thread
 * and at any time, after sl_iter_free too (it only counts down); the iterator takes the slot back
 * at its next call. The data must not be used after sl_iter_free, which frees it whatever its
 * exports (sl_iter_exports says how many live). SL_ENOTSUP in a build without dlpack.h. */
#define SL_DLPACK_STACKED 1
sl_status sl_iter_dlpack(const sl_iter_batch *b, int output, int dev, int flags, void **managed,
                         sl_err *err);
/* Batches out of the pool: held by the caller, or given back while exports of them live. */
int sl_iter_held(sl_iter *it);
/* DLPack exports of this iterator's batches whose deleter has not run yet. */
int sl_iter_exports(const sl_iter *it);

/* Writes reader positions, RNG states and iterator counters (after the batches taken so far) to
 * path: written to path.tmp, synced, then renamed, with a CRC-32. */
sl_status sl_iter_checkpoint(sl_iter *it, const char *path);
/* The checkpoint as bytes (malloc'd; what sl_iter_checkpoint writes), with extra bytes a caller
 * stores in it (the trainer's model) when extra is not NULL. */
sl_status sl_iter_save(sl_iter *it, const void *extra, size_t extra_size, void **bytes,
                       size_t *size);
/* The same, written to path atomically. */
sl_status sl_iter_checkpoint_with(sl_iter *it, const char *path, const void *extra,
                                  size_t extra_size);
/* Writes size bytes to path as the calls above write a checkpoint: to path.tmp, synced, renamed
 * over path and the folder synced, so that a crash leaves the old file or the new one, never half
 * of one, and a checkpoint written stays written. For
 * callers that assemble checkpoint files of their own (one file for a job of many processes). */
sl_status sl_file_write(const char *path, const void *bytes, size_t size, sl_err *err);
/* The extra bytes of the checkpoint the iterator resumed from (NULL, 0 when none). */
const void *sl_iter_resumed_extra(const sl_iter *it, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
