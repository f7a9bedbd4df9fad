/* SPDX-License-Identifier: Apache-2.0 */
/* sl_pipeline: a DALI-style data pipeline -- readers, decoders and operators on the CPU and GPU --
 * written as text in the syntax of DALI's Python pipelines, or built op by op in C.
 *
 * Built op by op (the seed's training pipeline for one of two shards):
 *
 *     sl_pipeline_config cfg;
 *     sl_pipeline_config_init(&cfg);          // batch 32, CPU, seed 0, prefetch 2/2, threads
 *                                             // chosen from the machine (SL_NUM_THREADS_AUTO)
 *     cfg.batch_size = 100;
 *     sl_pipeline *p;
 *     sl_err err;
 *     if (sl_pipeline_create(&cfg, &p, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
 *     int rd[2], img, lab;
 *     sl_pipeline_op *op = sl_pipeline_op_begin(p, "readers.caffe2");
 *     sl_pipeline_op_arg(op, "path", "\"data/training\"");   // values in pipeline syntax
 *     sl_pipeline_op_arg(op, "random_shuffle", "True");
 *     sl_pipeline_op_arg(op, "num_shards", "2");
 *     sl_pipeline_op_arg(op, "shard_id", "0");
 *     sl_pipeline_op_arg(op, "name", "\"mnist_caffe2_reader\"");
 *     sl_pipeline_op_end(op, rd, 2, NULL);                   // rd[0] = jpegs, rd[1] = labels
 *     op = sl_pipeline_op_begin(p, "decoders.image");
 *     sl_pipeline_op_input(op, rd[0]);
 *     sl_pipeline_op_device(op, "mixed");
 *     sl_pipeline_op_arg(op, "output_type", "types.GRAY");
 *     sl_pipeline_op_end(op, &img, 1, NULL);
 *     ... crop_mirror_normalize, reshape, one_hot likewise ...
 *     const char *names[2] = {"images", "labels"};
 *     int outs[2] = {img, lab};
 *     sl_pipeline_set_outputs(p, 2, outs, names);
 *     if (sl_pipeline_build(p)) { fprintf(stderr, "%s\n", sl_pipeline_errmsg(p)); ... }
 *     for (;;) {
 *         sl_batch *b;
 *         if (sl_pipeline_next(p, &b)) break;            // error: sl_pipeline_errmsg(p)
 *         sl_tensor images;
 *         sl_batch_tensor(b, 0, &images, NULL);          // (100, 784) float32, no copy
 *         ...
 *         sl_pipeline_release(p, b);                     // its buffers go back to the pipeline
 *     }
 *     sl_pipeline_free(p);
 *
 * From text: sl_pipeline_parse(p, text, "seed.py", ...) reads a DALI pipeline function (an
 * optional @decorator, a def line whose parameters are bound from outside, op-call assignments,
 * .gpu()/.cpu(), keyword arguments with numbers, strings, booleans, lists, dicts for **,
 * types.* constants and arithmetic on known names, helper functions, if/for and conditional
 * expressions on constants, and return) and makes the same calls (docs/pipelines.md). Errors
 * name line and column, with a caret.
 *
 * Execution: readers and CPU operators run per sample on a thread pool; the readers (when CPU work
 * follows them), the other CPU operators and the GPU operators run as stages in threads of their
 * own and overlap; prefetch_cpu/prefetch_gpu batches are kept ready;
 * buffers are recycled. Every random choice comes from the pipeline seed (or an op's `seed`) and
 * the sample's sequence number, so outputs do not depend on thread count or prefetch depth. On a
 * CPU device, "mixed" and "gpu" operators run on the CPU and .gpu() is a no-op, so one pipeline
 * text runs anywhere. The pipeline never ends: readers wrap around epoch after epoch (the iterator
 * counts epochs from the reader meta). */
#ifndef SLUICE_PIPELINE_H
#define SLUICE_PIPELINE_H

#include "sluice/reader.h" /* sl_reader_meta, sl_source */
#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_pipeline sl_pipeline;
typedef struct sl_pipeline_op sl_pipeline_op;
typedef struct sl_batch sl_batch;

typedef struct sl_pipeline_config {
    int batch_size;  /* samples per batch, at most (this pipeline's share of a global batch) */
    int num_threads; /* CPU workers, 1..1024; SL_NUM_THREADS_AUTO (the default): chosen from the
                      * machine (below). DALI's default is 4 */
    sl_device
        device;    /* SL_DEVICE_CUDA: mixed/gpu ops run there; SL_DEVICE_CPU: everything on CPU */
    uint64_t seed; /* pipeline seed; per-op seeds derive from it (an op's `seed` argument wins) */
    int prefetch_cpu; /* batches the CPU stage may run ahead (DALI prefetch_queue_depth cpu_size) */
    int prefetch_gpu; /* batches the GPU stage may run ahead (gpu_size) */
    /* Global order (a sluice extension, docs/readers.md): global_shards > 0 makes this pipeline
     * shard global_shard of global_shards sharing one global batch of global_shards * batch_size:
     * its readers read their part of one order of the whole data set per epoch (the same whatever
     * the shard count), and every random op's sample streams are keyed by the sample's place in
     * the global batch. global_drop: epochs end before a partial last global batch (the
     * iterator's DROP). 0 (default): DALI's order, each reader on its own shard. */
    int global_shards, global_shard;
    int global_drop;
    /* The most bytes of host memory that the ops' outputs of one batch may take, checked before
     * each output is allocated: an op that asks for more fails the batch with SL_ENOMEM, naming
     * the op and the bytes asked, instead of running the machine out of memory. 0 (the default):
     * the environment variable SLUICE_MAX_BATCH_BYTES (bytes, or with a suffix K, M, G or T:
     * powers of 1024) where it is set, else half of the physical memory shared among the
     * pipeline's batch slots (2 * prefetch_cpu + 2), so that all of them at the limit fit. The
     * limit also bounds batch_size: a batch's per-sample bookkeeping must fit it too. */
    size_t max_batch_bytes;
    /* The CUDA priority of the streams the pipeline makes on its GPU (its GPU stage's, the
     * mixed decoder's): CUDA's convention, lower is more urgent, from the device's greatest
     * priority (on recent GPUs -5) to 0; DALI's default_cuda_stream_priority. A more urgent
     * stream's kernels are started first when the GPU is busy with other work (a model's
     * training step). 0 (the default, as DALI's): the normal priority. A value outside the
     * device's range fails sl_pipeline_build; unused by a CPU pipeline. */
    int stream_priority;
} sl_pipeline_config;

/* num_threads "choose for me" (sl_pipeline_config_init's default): sl_pipeline_create takes
 * sl_pipeline_default_threads(G) for a pipeline on a GPU, G the GPUs this process sees (one
 * pipeline each would share its CPUs), and sl_pipeline_default_threads(1) for a CPU pipeline.
 * sl_pipeline_num_threads says what it took; the iterator chooses for its pipelines by its own
 * device count (sluice/iterator.h). */
#define SL_NUM_THREADS_AUTO 0

void sl_pipeline_config_init(sl_pipeline_config *cfg);
/* The CPU threads for each of `pipelines` pipelines that run at once in this process when no
 * count is given: the CPUs the process may run on (sl_cpu_count) shared among them, less one
 * for the pipeline's stage threads and the application's own loop, at least 1 and at most 64:
 * max(1, min(64, sl_cpu_count() / pipelines - 1)) in integer division; pipelines < 1 counts as
 * 1. Read from the machine on every call (on 16 CPUs: 15 for one pipeline, 7 each for two). */
int sl_pipeline_default_threads(int pipelines);
sl_status sl_pipeline_create(const sl_pipeline_config *cfg, sl_pipeline **out, sl_err *err);
/* Stops the stage threads and frees everything; NULL is a no-op. */
void sl_pipeline_free(sl_pipeline *p);
/* Stops the stage threads (waiting for the batch each is working on) and frees nothing: batches
 * taken stay valid and may still be released; sl_pipeline_next then fails with SL_ESTATE. For a
 * binding that must end every thread now (at interpreter exit, say) while memory of the pipeline
 * is still in use. Again: a no-op; before build, nothing runs yet and the pipeline never will.
 * sl_pipeline_free after it as always. */
void sl_pipeline_stop(sl_pipeline *p);
/* The last error of this pipeline ("" when none). */
const char *sl_pipeline_errmsg(const sl_pipeline *p);
sl_status sl_pipeline_status(const sl_pipeline *p);

/* ---- building op by op (graph nodes are ints: one per op output) ---------------------------- */

/* Starts describing an op by DALI name ("readers.caffe2", "fn.decoders.image", ...); NULL on an
 * unknown name (see sl_pipeline_errmsg: it suggests the closest). */
sl_pipeline_op *sl_pipeline_op_begin(sl_pipeline *p, const char *op_name);
sl_status sl_pipeline_op_input(sl_pipeline_op *op, int node);
/* "cpu", "mixed" or "gpu"; default: gpu if any input is on the GPU, else cpu (as DALI). */
sl_status sl_pipeline_op_device(sl_pipeline_op *op, const char *device);
/* A keyword argument, as written in a pipeline: "255.0", "[0.485, 0.456]", "types.FLOAT",
 * "\"CHW\"", "True"; text that is not a literal ("[1, 2") is an SL_EINVAL naming the op and the
 * argument (a string is quoted, in ' or "; within it \\, \' and \" stand for \, ' and ").
 * `name` and `device` are accepted here too. readers.tfrecord's features (a dict in pipeline
 * text) is given as the list of [name, feature] pairs that the dict stands for, each feature a
 * list [tfrec.FixedLenFeature, shape, dtype, default_value] or [tfrec.VarLenFeature,
 * (partial_shape,) dtype, default_value]:
 * "[[\"image/encoded\", [tfrec.FixedLenFeature, [], tfrec.string, \"\"]],
 *   [\"image/class/label\", [tfrec.FixedLenFeature, [1], tfrec.int64, -1]]]". */
sl_status sl_pipeline_op_arg(sl_pipeline_op *op, const char *name, const char *value);
/* A per-sample argument taken from another op's output (mirror=coin). */
sl_status sl_pipeline_op_arg_node(sl_pipeline_op *op, const char *name, int node);
/* Checks the arguments against the op's schema and adds it; writes its output nodes (up to max_out)
 * and how many outputs it has to *count (may be NULL). The op handle is freed either way. */
sl_status sl_pipeline_op_end(sl_pipeline_op *op, int *out_nodes, int max_out, int *count);
/* The node of output k of the op added last (for the outputs past max_out), -1 if it has none. */
int sl_pipeline_last_op_output(const sl_pipeline *p, int k);
/* .gpu() / .cpu(): a node holding node's data on the other side; on a CPU pipeline the node itself.
 */
sl_status sl_pipeline_transfer(sl_pipeline *p, int node, sl_device_kind to, int *out_node);
/* What the pipeline returns, in order, with names (NULL: "out0", "out1", ...). */
sl_status sl_pipeline_set_outputs(sl_pipeline *p, int n, const int *nodes,
                                  const char *const *names);
/* Validates the graph (arguments, devices, dtypes/layouts between ops), opens every store, creates
 * the op instances and starts producing batches. */
sl_status sl_pipeline_build(sl_pipeline *p);

/* ---- conditionals (DALI's `if` on per-sample predicates, enable_conditionals=True) ----------
 *
 * sl_pipeline_if(p, pred) opens a conditional on pred (an op output: one bool per sample): the
 * ops added until sl_pipeline_else run on the samples whose predicate is true only, as a smaller
 * batch; those added from sl_pipeline_else to sl_pipeline_endif on the others. A node from
 * outside that an op of a branch takes is split for it (the `_conditional.split` op, added once
 * per node and branch); an op without inputs in a branch (a random op) runs on the branch's
 * samples. Conditionals nest. After sl_pipeline_endif, sl_pipeline_merge(p, pred, t, f, &out)
 * puts a value back together in sample order (the `_conditional.merge` op): t from the true
 * branch (or from outside it), f from the false one (a CPU side goes to the GPU when the other
 * is there). A node of a branch is usable only inside it and its nested branches: elsewhere, and
 * as a pipeline output, it is an SL_EINVAL naming it. Readers and external sources cannot be in
 * a branch. Random ops in a branch draw per sample of the branch's batch. */
sl_status sl_pipeline_if(sl_pipeline *p, int predicate);
sl_status sl_pipeline_else(sl_pipeline *p);
sl_status sl_pipeline_endif(sl_pipeline *p);
sl_status sl_pipeline_merge(sl_pipeline *p, int predicate, int true_node, int false_node,
                            int *out_node);

/* ---- fn.external_source and fn.python_function: the caller's code (sl_source, sl_function:
 * sluice/reader.h) ------------------------------------------------------------------------------
 */

/* Registers a function under `name`, as sl_pipeline_add_source does a source (the names share
 * one namespace): fn.python_function(..., function=name) then runs it. fn is copied; user must
 * stay valid until the pipeline is freed. */
sl_status sl_pipeline_add_function(sl_pipeline *p, const char *name, const sl_function *fn);

/* Registers src under `name` (1-63 characters), before sl_pipeline_parse / sl_pipeline_build:
 * fn.external_source(source=name) then takes its samples from it. In pipeline text the name may
 * be written bare (source=my_source), quoted, or bound to a def parameter. The functions and user
 * must stay valid until the pipeline is freed. A name used twice is an SL_EINVAL. */
sl_status sl_pipeline_add_source(sl_pipeline *p, const char *name, const sl_source *src);

/* ---- pipeline text -------------------------------------------------------------------------- */

/* Settings a @data_iterator(...) / @pipeline_def(...) decorator line carries. */
typedef enum sl_layout_mode {
    SL_LAYOUT_NONE = 0, /* one pipeline: its batch as is */
    SL_LAYOUT_SHARDED,  /* sharding=...: one global tensor, rows split across devices */
    SL_LAYOUT_STACKED   /* devices=...: (devices, batch/devices, ...) */
} sl_layout_mode;

typedef enum sl_last_batch_policy {
    SL_LAST_BATCH_FILL = 0,
    SL_LAST_BATCH_DROP = 1,
    SL_LAST_BATCH_PARTIAL = 2
} sl_last_batch_policy;

typedef struct sl_pipeline_decorator {
    bool present;
    char func_name[64];
    int num_outputs;      /* output_map entries */
    char **output_map;    /* the names (the struct's own: sl_pipeline_decorator_clear frees them) */
    char reader_name[64]; /* "" when not given */
    int64_t size;         /* -1 when not given */
    sl_layout_mode layout;
    sl_last_batch_policy last_batch_policy;
    bool last_batch_padded, prepare_first_batch, auto_reset;
    int num_params; /* the def line's parameters */
    char params[16][64];
    /* pipeline settings written as plain literals (batch_size=200); -1 when not given */
    int batch_size, num_threads;
    int64_t seed;
    /* prefetch_queue_depth=N (an int; -1 when not given) and device_id=N: a GPU id, -1 when not
     * given, SL_DECORATOR_DEVICE_NONE for device_id=None (DALI's CPU-only pipeline) */
    int prefetch_queue_depth, device_id;
} sl_pipeline_decorator;

#define SL_DECORATOR_DEVICE_NONE (-2)

/* A bound name: a def parameter or any free name the text uses (value in pipeline syntax; a value
 * that does not read as a literal is taken as a string, so data_path=data/training works). */
typedef struct sl_pipeline_bind {
    const char *name;
    const char *value;
} sl_pipeline_bind;

/* Which function of a text is the pipeline: the one with a @pipeline_def / @data_iterator
 * decorator; else the only top-level function no other function (or the module's code) calls;
 * else an error listing the candidates. A text whose top-level code returns is itself the
 * pipeline (its functions are helpers). The *_function forms below name it instead (NULL or "":
 * choose as above; a name the text does not define is an error listing its functions). */

/* Frees what a decorator read from a text holds (its output_map); the struct may be read into
 * again. A zeroed struct has nothing to free. */
void sl_pipeline_decorator_clear(sl_pipeline_decorator *d);
/* Reads the text and the pipeline function's decorator and def line, running nothing. *out is
 * the caller's to clear (sl_pipeline_decorator_clear), whatever the outcome. */
sl_status sl_pipeline_text_decorator(const char *text, const char *filename,
                                     sl_pipeline_decorator *out, sl_err *err);
sl_status sl_pipeline_text_function_decorator(const char *text, const char *filename,
                                              const char *function, sl_pipeline_decorator *out,
                                              sl_err *err);
/* Builds the text's graph into p (before sl_pipeline_build). Outputs: output_map names when the
 * decorator has them, else the names on the return line. */
sl_status sl_pipeline_parse(sl_pipeline *p, const char *text, const char *filename, int nbind,
                            const sl_pipeline_bind *binds, sl_err *err);
sl_status sl_pipeline_parse_function(sl_pipeline *p, const char *text, const char *filename,
                                     const char *function, int nbind, const sl_pipeline_bind *binds,
                                     sl_err *err);

/* ---- running -------------------------------------------------------------------------------- */

/* The next batch, in order; blocks until it is ready. An error raised while producing a batch
 * (a corrupt record, say) comes back here, naming the record and op; the pipeline then stays
 * failed and can only be freed. */
sl_status sl_pipeline_next(sl_pipeline *p, sl_batch **out);
/* Waits at most timeout_ms (< 0: no limit) until sl_pipeline_next would return without waiting:
 * SL_OK then (its batch is ready, or it has an error to give), else SL_ETIMEOUT. Lets a binding
 * wait in short slices and handle signals (Ctrl-C) between them. */
sl_status sl_pipeline_wait(sl_pipeline *p, int timeout_ms);
/* Gives a batch's buffers back (in any order). The consumer may hold up to sl_pipeline_max_held
 * batches; taking one more is an SL_ESTATE error. Holding up to prefetch_cpu + 1 leaves the stages
 * slots for prefetch_cpu batches ahead; each one held beyond that is one fewer prepared. */
void sl_pipeline_release(sl_pipeline *p, sl_batch *b);
/* How many batches the consumer may hold at once (taking one more is an SL_ESTATE error); valid
 * after sl_pipeline_build: its batch slots, 2 * prefetch_cpu + 1, one more when the readers have
 * a stage of their own (CPU work after them). */
int sl_pipeline_max_held(const sl_pipeline *p);

int sl_pipeline_num_outputs(const sl_pipeline *p);
const char *sl_pipeline_output_name(const sl_pipeline *p, int i);
/* The most samples a batch has (DALI's max_batch_size): the config's batch_size. */
int sl_pipeline_batch_size(const sl_pipeline *p);
/* Its CPU worker count: the config's, or the one chosen for SL_NUM_THREADS_AUTO. */
int sl_pipeline_num_threads(const sl_pipeline *p);
sl_device sl_pipeline_device(const sl_pipeline *p);

/* The samples of this batch: the pipeline's batch_size, or fewer where its external sources gave
 * fewer (sl_source.count, sluice/reader.h); every output has this many. */
int sl_batch_size(const sl_batch *b);
int64_t sl_batch_index(const sl_batch *b); /* 0, 1, 2, ... since the pipeline started */
const sl_tlist *sl_batch_output(const sl_batch *b, int i);
/* A dense (batch, ...) view of output i when every sample has one shape. */
sl_status sl_batch_tensor(const sl_batch *b, int i, sl_tensor *out, sl_err *err);
/* The record key of sample i (from the pipeline's reader). */
const char *sl_batch_key(const sl_batch *b, int i);
/* Sample i's source info in output `output` (DALI's source_info: where it came from, as its
 * reader says: a file's path for readers.file, numpy and coco, "FILE at index OFFSET" for
 * readers.tfrecord, the manifest's audio file for readers.nemo; ops pass on their first input's):
 * "" where there is none, or for an output or sample out of range. Valid until the release. */
const char *sl_batch_source_info(const sl_batch *b, int output, int i);

/* Reader meta of the reader named `name` (its `name=` argument), or the only reader when NULL. */
/* The pipeline's readers, in graph order, by their names (NULL for i out of range). */
int sl_pipeline_num_readers(const sl_pipeline *p);
const char *sl_pipeline_reader_name(const sl_pipeline *p, int i);
sl_status sl_pipeline_reader_meta(sl_pipeline *p, const char *name, sl_reader_meta *out);

/* Time spent per stage, for `sluice run`. */
typedef struct sl_pipeline_stats {
    int64_t batches;
    double reader_s, cpu_ops_s, decode_s, gpu_s, wait_s; /* seconds, summed over batches */
    double cpu_stage_s; /* the CPU stage's wall time producing batches: its ops, plus the
                         * executor's own work (snapshots, packing outputs); with a read stage,
                         * the two threads' times summed */
    int num_ops;
    struct {
        char name[64];
        double seconds;
        int64_t pool_jobs;    /* batches whose per-sample work ran (on the thread pool, or on
                                 the stage's thread when lighter than waking the pool) */
        int64_t pool_samples; /* samples run (an op's setup may leave some out) */
    } ops[32];
} sl_pipeline_stats;
void sl_pipeline_get_stats(const sl_pipeline *p, sl_pipeline_stats *out);

/* Checkpoint of the state that decides every batch after the last one taken (reader positions,
 * RNG counters): malloc'd bytes. sl_pipeline_restore goes between building the graph (ops or text)
 * and sl_pipeline_build, with the same text and configuration; the pipeline then continues exactly
 * where the saved one stood. */
sl_status sl_pipeline_save(sl_pipeline *p, void **bytes, size_t *size);
sl_status sl_pipeline_restore(sl_pipeline *p, const void *bytes, size_t size);

#ifdef __cplusplus
}
#endif
#endif
