/* SPDX-License-Identifier: Apache-2.0 */
/* Where a pipeline's samples come from: sl_reader_meta, what a reader reports about its data set
 * and shard (DALI's reader meta), and sl_source and sl_function, the caller's code behind
 * fn.external_source and fn.python_function (and sl_thread_hooks, for that code's runtime). The
 * record loader and the operators, below the pipeline, fill and call them, so they have a header of
 * their own; sluice/pipeline.h includes it (sl_pipeline_reader_meta, sl_pipeline_add_source). */
#ifndef SLUICE_READER_H
#define SLUICE_READER_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a reader reports about its data set and shard (DALI's reader meta). */
typedef struct sl_reader_meta {
    int64_t epoch_size;        /* N, the whole data set */
    int64_t epoch_size_padded; /* ceil(N/S)*S with pad_last_batch, else N */
    int number_of_shards;
    int shard_id;
    bool pad_last_batch;
    bool stick_to_shard;
} sl_reader_meta;

/* ---- fn.external_source: samples made by the caller's code --------------------------------------
 *
 * A source is two functions the pipeline calls for every sample of every batch (and an optional
 * third, `count`, that makes a batch shorter than the pipeline's batch_size): `shape` says what
 * the sample is (in the CPU stage, one sample after another, in order), then `fill` writes it
 * straight into the batch (on the pool's workers, several samples at once: it must be
 * thread-safe). A source that is a function of sl_source_info alone gives the same batches
 * whatever the thread count or prefetch depth, and resumes exactly from a checkpoint. It has no
 * end: with the iterator, give `size` (as DALI wants for external_source without a reader). */
typedef struct sl_source_info {
    int64_t iteration; /* the batch's index since the pipeline started (sl_batch_index) */
    int idx_in_batch;  /* 0 .. the batch's size - 1 */
    int64_t sample;    /* iteration * batch_size + idx_in_batch (batch_size: the maximum) */
    int output;        /* which of the op's outputs (num_outputs=N asks for 0 .. N-1) */
} sl_source_info;

typedef struct sl_source {
    /* The sample's dtype and shape (ndim 0 .. SL_MAX_DIMS; shape has SL_MAX_DIMS slots). Every
     * sample of one output must have the same dtype and ndim; extents may differ. */
    sl_status (*shape)(void *user, const sl_source_info *info, sl_dtype *dtype, int *ndim,
                       int64_t *shape, sl_err *err);
    /* Writes the sample's nbytes (dense, C order, as shape described) to dst. */
    sl_status (*fill)(void *user, const sl_source_info *info, void *dst, size_t nbytes,
                      sl_err *err);
    void *user;
    /* Optional (NULL: every batch is full): how many samples batch `iteration` has, *n in
     * 0 .. max (the pipeline's batch_size, DALI's max_batch_size). Asked once per batch, before
     * any of its samples' shapes, on the stage thread that starts the batch. That count is the
     * batch's size for every op of the pipeline (DALI's variable batch size): the other external
     * sources of the pipeline must give as many (one without `count` gives max), and a
     * pipeline with a reader only full batches; either is an error naming the sources. */
    sl_status (*count)(void *user, int64_t iteration, int max, int *n, sl_err *err);
    /* Optional (NULL: every sample is filled). The sample's bytes in the source's own memory
     * (dense, C order, as shape described), for the batch to point at instead of a copy; *data
     * NULL to have it filled after all. It is asked in the CPU stage, after every sample's shape;
     * when it gives memory for every sample of an output, that output is those views, else the
     * output is filled. What it gave for a batch must stay valid and unchanged until release. */
    sl_status (*view)(void *user, const sl_source_info *info, const void **data, sl_err *err);
    /* With view: batch `iteration` no longer reads the source's memory (its slot went to a later
     * batch, which the consumer's release of it allows, or the pipeline was freed). Called once
     * per batch that asked view. */
    void (*release)(void *user, int64_t iteration);
    /* Optional (NULL: the op's `layout` argument, or none). The layout of batch `iteration`'s
     * output `output` (DALI's feed_input(..., layout=)): up to SL_LAYOUT_MAX letters into
     * layout (which has SL_LAYOUT_MAX + 1 bytes), "" for none. Asked in the CPU stage after the
     * output's sample shapes, for a batch of at least one sample. As in DALI, "" takes the op's
     * `layout` argument, and a layout that differs from it is an error naming the source and
     * batch; without the argument, once a batch gave a layout every later one must give it. */
    sl_status (*layout)(void *user, int64_t iteration, int output, char *layout, sl_err *err);
    /* With view and release: what view gives is copied into the batch (by the pool's workers,
     * fill not called for it) instead of pointed at, as DALI's external_source copies unless
     * no_copy; a sample view gives no memory for is filled. release then comes as soon as every
     * sample of the batch is written, on the worker that wrote the last (or, if the batch
     * failed, when its slot is set up again or freed); the source may then reuse the memory.
     * For a source whose fill takes a lock every sample contends for (a language runtime's),
     * this copies in parallel without it. */
    bool copy_views;
} sl_source;

/* One batch through a registered function (fn.python_function): every sample's inputs, and the
 * outputs the function describes. */
typedef struct sl_function_io {
    int64_t iteration; /* the batch's index since the pipeline started */
    int batch, num_inputs, num_outputs;
    /* batch * num_inputs views: sample i's input k at [i * num_inputs + k]; host memory, or
     * the GPU's when the op runs there (device="gpu": its stream already waited for) */
    const sl_tensor *inputs;
    /* batch * num_outputs, zeroed: the function sets each one's data, dtype, ndim and shape
     * (dense, C order, memory it keeps valid until its next call: host memory, or on a GPU op
     * the op's GPU's, with `device` set and its work complete); the samples of one output
     * share dtype and ndim */
    sl_tensor *outputs;
} sl_function_io;

typedef struct sl_function {
    /* Called once per batch, on the pipeline's CPU stage (a GPU op's: its GPU stage), with that
     * batch's inputs. */
    sl_status (*call)(void *user, sl_function_io *io, sl_err *err);
    void *user;
} sl_function;

/* The caller's code for every thread the library starts: start(user) first, before the thread
 * runs anything else, and stop(user) last, on that thread. For a language runtime whose callbacks
 * (sl_source, sl_function) need state per thread: sluice's Python package makes a thread's
 * interpreter state once, in start, instead of at every callback, and ends it in stop. Threads
 * started before the hooks were set call neither. stop is read when a thread ends: clearing the
 * hooks (NULL) keeps threads that end afterwards from calling it, as a runtime that is shutting
 * down needs. Set them once, from one thread, before the pipelines whose threads should call
 * them are made; either function may be NULL. */
typedef struct sl_thread_hooks {
    void (*start)(void *user);
    void (*stop)(void *user);
    void *user;
} sl_thread_hooks;

/* hooks is copied; NULL clears them. */
void sl_set_thread_hooks(const sl_thread_hooks *hooks);

#ifdef __cplusplus
}
#endif
#endif
