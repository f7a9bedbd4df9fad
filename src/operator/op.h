/* SPDX-License-Identifier: Apache-2.0 */
// clang-format off: the table of calls below keeps its columns
/* The operator interface: one table entry per operator (docs/conventions.md, "One operator, two
 * devices").
 *
 * An sl__op_def names the operator as DALI does ("crop_mirror_normalize", "decoders.image",
 * "readers.caffe2"), lists its arguments (name, type, default, doc: DALI's), its input count and
 * devices, and gives the functions the executor calls, per batch, in this order:
 *
 *   setup(state, io)        on the CPU: every per-sample decision (crop windows, mirror flags,
 *                           random draws from io->seed and the sample's global index), output
 *                           dtypes and shapes; it sizes the outputs with sl_tlist_reset +
 *                           sl_tlist_alloc (buffers are recycled) or points them at input memory
 *                           (no-copy ops like reshape).
 *   run_cpu(state, io, i)   sample i, on a pool worker (worker = its index, for per-thread
 *                           scratch); NULL when setup did all the work; setup may also name the
 *                           only samples that need it (io->run_index).
 *   run_gpu(state, io)      the whole batch on io->stream, reading the same per-sample decisions.
 *
 * On a CUDA pipeline a gpu op's setup and run_gpu run in the GPU stage. A mixed op with a run_gpu
 * has both halves: setup and run_cpu (on the pool) in the CPU stage with io->device on the GPU,
 * then run_gpu in the GPU stage; what it needs between the two goes in *io->batch_state. A mixed
 * op without run_gpu runs on the CPU into pinned memory, copied to the GPU once per batch.
 * io->sample_base is batch index * batch size: random streams depend on the sample only.
 *
 * Outputs must stay valid until their batch is released: in the output lists' own buffers
 * (sl_tlist_alloc; each batch slot has its own, recycled) or in memory that outlives the pipeline
 * (a mapped record store) -- never in op state that the next batch reuses, since the CPU stage runs
 * ahead of the GPU stage and of the consumer.
 *
 * Readers (SL_OPF_READER) take no inputs; their setup reads the batch's records (or sizes the
 * outputs, for run_cpu to fill on the pool) and sets io->keys and io->source_info.
 * Errors name the record: ops use io->keys[i] in messages (see sl__op_fail). */
// clang-format on
#ifndef SLUICE_OPERATOR_OP_H
#define SLUICE_OPERATOR_OP_H

#include "sluice/reader.h"
#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- values (argument values as written in a pipeline, or built in C) ----------------------- */

typedef enum sl__val_kind {
    SL_VAL_NONE = 0, /* None / not given */
    SL_VAL_BOOL,
    SL_VAL_INT,
    SL_VAL_FLOAT,
    SL_VAL_STR,  /* "string" */
    SL_VAL_ENUM, /* types.GRAY -> "GRAY"; bare names too */
    SL_VAL_LIST,
    SL_VAL_NODE /* a per-sample argument input: the output of another op (mirror=coin) */
} sl__val_kind;

typedef struct sl__val {
    sl__val_kind kind;
    bool b;
    int64_t i;
    double f;
    char *s;               /* STR, ENUM */
    int n;                 /* LIST */
    struct sl__val *items; /* LIST */
    int node;              /* NODE: index into io->arg_in */
} sl__val;

void sl__val_free(sl__val *v);
sl_status sl__val_copy(sl__val *dst, const sl__val *src, sl_err *err);
/* Parses a literal: 1, -2.5, True, None, "text", 'text', [1, 2.0], types.FLOAT, GRAY. */
sl_status sl__val_parse(const char *text, sl__val *out, sl_err *err);
/* Writes the value in pipeline syntax into buf. */
const char *sl__val_format(const sl__val *v, char *buf, size_t size);

/* ---- argument schemas ----------------------------------------------------------------------- */

typedef enum sl__arg_type {
    SL_ARG_BOOL,
    SL_ARG_INT,
    SL_ARG_FLOAT,
    SL_ARG_STR,
    SL_ARG_DTYPE,   /* types.FLOAT, types.UINT8, ... -> sl_dtype */
    SL_ARG_ENUM,    /* a name from `choices` ("RGB|BGR|GRAY|YCbCr|ANY_DATA") */
    SL_ARG_INTS,    /* list of ints (a scalar is a list of one) */
    SL_ARG_FLOATS,  /* list of floats (a scalar is a list of one) */
    SL_ARG_STRS,    /* list of strings (a string is a list of one) */
    SL_ARG_FEATURES /* readers.tfrecord's features: a dict {name: tfrec.FixedLenFeature(...)},
                     * held as a list of [name, [kind, args...]] pairs (docs/readers.md) */
} sl__arg_type;

enum {
    SL_ARGF_REQUIRED = 1u << 0,
    SL_ARGF_PER_SAMPLE = 1u << 1, /* may be the output of another op, one value per sample */
    SL_ARGF_PER_FRAME = 1u << 2,  /* (with PER_SAMPLE, on an SL_OPF_SEQUENCE op) may be given per
                                   * frame: a node whose layout starts with F (fn.per_frame), one
                                   * value per frame of the sample (operator/sequence.h) */
    SL_ARGF_ENUM_DTYPE = 1u << 3, /* (SL_ARG_DTYPE) may be INTERP_TYPE, the element type of
                                   * interpolation types (SL_DTYPE_INTERP); others refuse it */
};

typedef struct sl__arg_schema {
    const char *name;
    sl__arg_type type;
    const char *def; /* default in pipeline syntax ("1.0", "[0.0]", "\"CHW\"", "types.FLOAT"); NULL
                        = none */
    const char *doc;
    unsigned flags;
    const char *choices; /* SL_ARG_ENUM: "A|B|C" */
} sl__arg_schema;

/* choices ("A|B|C") has s */
bool sl__enum_choice_ok(const char *choices, const char *s);
/* DALI's code of an enum value name (INTERP_LINEAR: 1, as DALIInterpType), -1 for a name without
 * one; and the name of code among choices' kind of enum (NULL: none). An enum argument given per
 * sample, and an int argument given an enum constant (fn.constant's idata), take these codes. */
int sl__enum_code(const char *name);
const char *sl__enum_code_name(const char *choices, int code);

/* "float or list of float", ... (for messages and `sluice ops`) */
const char *sl__arg_type_name(sl__arg_type t);
/* The arguments every op accepts besides its schema's, handled by the pipeline (device, name, seed,
 * preserve, bytes_per_sample_hint): a table terminated by a NULL name, *count entries. */
const sl__arg_schema *sl__args_common(int *count);

/* Arguments of one op instance, checked against its schema: every schema entry has a value (the
 * user's, or the default), converted to the schema's type. With them, as DALI's OpSpec has it,
 * the number of inputs the instance is given, which the builder sets before it asks the op's
 * num_outputs (random_bbox_crop has a labels output only when it is given labels). */
typedef struct sl__args {
    const struct sl__op_def *op;
    int count;
    sl__val *vals;  /* parallel to op->args */
    bool *given;    /* set by the user */
    int num_inputs; /* the instance's inputs (set by the builder; 0 from sl__args_build) */
} sl__args;

/* Checks named values against op's schema (unknown names get a "did you mean" suggestion) and fills
 * in defaults. names/vals: n user-supplied arguments; device and name are taken by the caller. */
sl_status sl__args_build(const struct sl__op_def *op, int n, const char *const *names,
                         const sl__val *vals, sl__args *out, sl_err *err);
/* The same, and *bad = the index (0..n-1) of the given argument an error is about, or -1 when
 * it is about none of them (a required argument missing, no memory). */
sl_status sl__args_build_at(const struct sl__op_def *op, int n, const char *const *names,
                            const sl__val *vals, sl__args *out, int *bad, sl_err *err);
void sl__args_free(sl__args *a);
bool sl__args_given(const sl__args *a, const char *name);
int64_t sl__args_int(const sl__args *a, const char *name);
double sl__args_float(const sl__args *a, const char *name);
bool sl__args_bool(const sl__args *a, const char *name);
const char *sl__args_str(const sl__args *a, const char *name); /* STR and ENUM; NULL if None */
sl_dtype sl__args_dtype(const sl__args *a, const char *name);
/* List arguments: number of items, and the items through *out (valid while a lives). */
int sl__args_ints(const sl__args *a, const char *name, const int64_t **out);
int sl__args_floats(const sl__args *a, const char *name, const double **out);
int sl__args_strs(const sl__args *a, const char *name, const char *const **out);
/* Per-sample argument input index (into io->arg_in) when given as an op output, else -1. */
int sl__args_node(const sl__args *a, const char *name);
/* The op's schema has the argument (ops that share a create over several schemas). */
bool sl__args_has(const sl__args *a, const char *name);
const sl__val *sl__args_get(const sl__args *a, const char *name);

/* ---- the operator table entry --------------------------------------------------------------- */

enum {
    SL_OPDEV_CPU = 1u << 0,
    SL_OPDEV_MIXED = 1u << 1, /* CPU inputs, GPU outputs (decoders) */
    SL_OPDEV_GPU = 1u << 2,
};

enum {
    SL_OPF_READER = 1u << 0,   /* no inputs; produces records; has reader meta */
    SL_OPF_RANDOM = 1u << 1,   /* draws random numbers: takes a seed */
    SL_OPF_NOCOPY = 1u << 2,   /* outputs are views of inputs */
    SL_OPF_DECODER = 1u << 3,  /* a decoder (decoders.*): its time is the stats' decode_s */
    SL_OPF_SPLIT = 1u << 4,    /* _conditional.split: its outputs are the samples of the two
                                * branches of a conditional (the executor sizes their batches) */
    SL_OPF_MERGE = 1u << 5,    /* _conditional.merge: a branch's two parts back in sample order */
    SL_OPF_SHAPES = 1u << 6,   /* reads only its inputs' shapes: a CPU instance may take GPU data */
    SL_OPF_SEQUENCE = 1u << 7, /* takes sequences frame by frame: an input whose layout starts
                                * with F, or an argument given per frame, runs it once per frame
                                * (operator/sequence.h); its SL_ARGF_PER_FRAME arguments may be
                                * per frame */
    SL_OPF_ARG_FRAMES = 1u << 8, /* (with SEQUENCE) per-frame arguments alone may make the frames,
                                  * the inputs then repeated per frame (transforms.*, as DALI's);
                                  * without it, as DALI's other ops, an op given a per-frame
                                  * argument needs a sequence input */
    SL_OPF_INFO = 1u << 9,       /* gives its outputs' source info: its setup points io->source_info
                                  * at an array it owns (valid until its next setup), made from its
                                  * inputs' (io->in_info), which the executor copies as a reader's */
};

/* What an op instance learns when it is created. */
typedef struct sl__op_init {
    const char *name; /* instance name (the `name=` argument, else the op name) */
    sl_device device; /* where its outputs live */
    int batch_size;   /* max samples per batch (a batch may have fewer: sl__op_io.batch) */
    int threads;      /* pool workers: per-thread scratch slots */
    uint64_t seed; /* this instance's seed (its `seed` argument, or derived from the pipeline's) */
    /* the pipeline's global order (sl_pipeline_config): its shards (0: DALI's per-shard order),
     * this pipeline's shard, and whether a last partial global batch is dropped */
    int global_shards, global_shard;
    bool global_drop;
    int stream_priority; /* the CUDA priority of streams the op makes (sl_pipeline_config) */
    /* the pipeline's registered sources (fn.external_source): *out = the one named name, else an
     * error that lists those registered */
    sl_status (*find_source)(const void *ctx, const char *name, sl_source *out, sl_err *err);
    const void *source_ctx;
    /* set through sl__op_at_run (NULL: nobody asks) */
    bool *at_run;
} sl__op_init;

/* For create, returning an error about a value that DALI checks only when its op runs (one of an
 * argument it takes per sample, given as a literal): the pipeline still builds, and each batch
 * fails at this op with the error, as DALI's run() raises it. Returns st. */
static inline sl_status sl__op_at_run(const sl__op_init *init, sl_status st) {
    if (st != SL_OK && init && init->at_run) *init->at_run = true;
    return st;
}

/* One batch through one op instance. */
typedef struct sl__op_io {
    int batch; /* samples in this batch */
    int num_inputs;
    sl_tlist *const *in;
    int num_arg_inputs;
    sl_tlist *const *arg_in; /* per-sample argument inputs, see sl__args_node */
    int num_outputs;
    sl_tlist *const *out;
    const char *const *keys; /* per-sample record keys (readers set them) */
    const char *source;      /* where the keys' records come from (the reader's path), or NULL */
    uint64_t seed;           /* the instance's seed */
    int64_t sample_base;     /* global sequence number of sample 0 (RNG stream = base + i) */
    int64_t iteration;       /* batches this instance has run */
    /* per-sample source info (DALI's source_info: where each sample came from, "" for none):
     * a reader's setup sets it for its outputs (valid until its next setup); for any other op
     * it is its first input's (NULL: none), which the executor passes on to its outputs */
    const char *const *source_info;
    /* (SL_OPF_INFO ops) per input, its samples' source info, or NULL for none */
    const char *const *const *in_info;
    sl_device device;
    void *stream;       /* cudaStream_t for run_gpu */
    void **batch_state; /* this op's slot for this batch: data its setup/run_cpu leave for
                         * its run_gpu (the CPU stage runs ahead, so op state is not it);
                         * the op allocates it, free_batch_state frees it at the end */
    /* setup may narrow run_cpu to the samples that have work left (a decoder whose images all
     * came from its cache): run_index NULL (the default) runs every sample; else the run_count
     * samples it lists (memory the op owns, valid until run_cpu is done; run_count 0: the pool
     * is not woken at all). run_cpu must still be correct for any sample. The pool hands the
     * list out in order, so an op lists its dearest samples first (a batch then does not wait
     * on a long one started last). */
    const int *run_index;
    int run_count;
    /* setup may also ask for one batch-wide job (the mixed decoder's hardware engines): run_cpu
     * is then called once with sample -1 and worker -1, on the stage's own thread, while the pool
     * runs the samples. */
    bool batch_job;
    /* when an SL_OPF_SEQUENCE op runs on the frames of sequences (operator/sequence.h): the
     * frame counts of the num_sequences sequences, whose frames are this batch's samples in
     * order; NULL otherwise (an op that gives every frame of a sequence one output shape, as
     * rotate does, reads them) */
    const int64_t *seq_frames;
    int num_sequences;
} sl__op_io;

typedef struct sl__op_def {
    const char *name; /* DALI's name: "decoders.image", "crop_mirror_normalize", "readers.caffe2" */
    /* DALI's other names for it, '|'-separated ("image_decoder" for decoders.image, the
     * experimental.* name of an op since promoted), or NULL: the table finds it by each */
    const char *aliases;
    const char *doc;
    int min_inputs, max_inputs;
    const sl__arg_schema *args; /* terminated by an entry with name NULL */
    unsigned devices;           /* SL_OPDEV_*: where it can run */
    unsigned flags;             /* SL_OPF_* */
    /* outputs for these arguments (and args->num_inputs); NULL means 1 */
    int (*num_outputs)(const sl__args *args);
    sl_status (*create)(const sl__args *args, const sl__op_init *init, void **state, sl_err *err);
    sl_status (*setup)(void *state, sl__op_io *io, sl_err *err);
    sl_status (*run_cpu)(void *state, sl__op_io *io, int sample, int worker, sl_err *err);
    sl_status (*run_gpu)(void *state, sl__op_io *io, sl_err *err);
    void (*destroy)(void *state);
    void (*free_batch_state)(void *batch_state);
    /* ops that decide how many samples a batch has (fn.external_source): *n = the samples of
     * batch `iteration`, 0 .. max (the pipeline's batch_size); asked before any op of the batch
     * runs. NULL: the op takes the batch it is given. */
    sl_status (*count)(void *state, int64_t iteration, int max, int *n, sl_err *err);
    /* readers */
    sl_status (*reader_meta)(void *state, sl_reader_meta *meta);
    /* checkpoints: the state that decides future outputs (reader position, RNG counters) */
    sl_status (*save)(void *state, void **bytes, size_t *size, sl_err *err); /* malloc'd */
    sl_status (*restore)(void *state, const void *bytes, size_t size, sl_err *err);
} sl__op_def;

/* Edit distance, for "did you mean" suggestions. */
int sl__op_distance(const char *a, const char *b);

/* Records an error about sample i of a batch, naming the op and the record's key. */
sl_status sl__op_fail(sl_err *err, sl_status st, const sl__op_io *io, int i, const char *opname,
                      const char *fmt, ...) SL_PRINTF(6, 7);

/* Host scratch for run_cpu, one block per pool worker, grown as samples need (scratch.c). */
typedef struct sl__worker_scratch {
    int workers;
    void **buf;
    size_t *size;
} sl__worker_scratch;
sl_status sl__worker_scratch_init(sl__worker_scratch *w, int workers, sl_err *err);
/* Worker's block of at least n bytes (previous contents not kept), or NULL when out of memory. */
void *sl__worker_scratch_get(sl__worker_scratch *w, int worker, size_t n);
void sl__worker_scratch_free(sl__worker_scratch *w);

#ifdef __cplusplus
}
#endif
#endif
