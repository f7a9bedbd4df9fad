/* SPDX-License-Identifier: Apache-2.0 */
/* Internal structure of a pipeline: the graph (op instances and nodes) the builder and the parser
 * make (pipeline.c), the executor state (batch slots, stage threads, queues: pipeline_exec.c) and
 * the checkpoint state (the snapshot ring, the bytes to restore: pipeline_checkpoint.c). */
#ifndef SLUICE_PIPELINE_PIPELINE_INT_H
#define SLUICE_PIPELINE_PIPELINE_INT_H

#include "sluice/pipeline.h"

#include "graph/pipeline.h"

#include "core/pool.h"
#include "core/queue.h"
#include "operator/op.h"

#include <pthread.h>

/* A graph node: one op output, a transfer (a copy of src to the GPU, on CUDA pipelines), or an
 * alias (src's data seen as GPU data: .gpu() on a CPU pipeline). `gpu` is DALI's placement, which
 * decides the device rules; only transfers move data. */
#define SL__NODE_TRANSFER (-1)
#define SL__NODE_ALIAS    (-2)
typedef struct sl__node {
    int op;    /* producing op instance, or SL__NODE_TRANSFER / SL__NODE_ALIAS */
    int out;   /* output index of that op */
    int src;   /* transfers and aliases: the node they stand for */
    bool gpu;  /* placed on the GPU (DALI's rules) */
    int scope; /* the conditional branch whose samples it holds: 0 the whole batch */
} sl__node;

/* A conditional branch (pipeline_cond.c): the samples of scope `parent` whose predicate (a node
 * of the parent scope) is `branch`. Scope 0 is the whole batch. */
typedef struct sl__scope {
    int parent, pred;
    bool branch;
} sl__scope;

typedef struct sl__opinst {
    const sl__op_def *def;
    char name[64];
    unsigned placement; /* SL_OPDEV_CPU, _MIXED or _GPU as written */
    bool on_gpu;        /* a gpu op of a CUDA pipeline: setup and run_gpu in the GPU stage */
    bool split;         /* a mixed op with a GPU run on a CUDA pipeline: setup and run_cpu in the
                         * CPU stage (outputs already on the device), then run_gpu in the GPU
                         * stage -- e.g. small images decoded on the CPU, large ones by nvJPEG */
    bool moved;         /* runs in the CPU stage, and a transfer to the GPU follows each output: a
                         * mixed op without a GPU run, or a gpu op that sluice runs on the CPU */
    /* its input nodes and per-sample argument nodes (arrays it owns) */
    int ninputs, *inputs;
    int narg_inputs, *arg_inputs;
    /* output k is node first_node + k, or first_node + 2k + 1 where a transfer follows each
     * output (sl_pipeline_last_op_output) */
    int nout, first_node;
    int scope; /* the branch it runs in (its batch: that branch's samples) */
    sl__args args;
    void *state;
    sl_err *at_run; /* create's error, which each batch gives at this op (sl__op_at_run) */
    uint64_t seed;
    double seconds;
    int64_t pool_jobs, pool_samples; /* batches whose run_cpu ran (pool or inline); samples */
    /* light: the op's whole batch costs less than waking the pool, so run_cpu runs on the stage's
     * own thread (run_op): pool_s, the last pool run's seconds; probe, batches until the pool's
     * time is compared with an inline run again */
    bool light;
    double pool_s;
    int probe;
} sl__opinst;

/* The node op's output k is (its transfer, where it is moved, is the node after it). */
static inline int sl__opinst_out_node(const sl__opinst *op, int k) {
    return op->first_node + (op->moved ? 2 * k : k);
}

struct sl_pipeline_op {
    sl_pipeline *p;
    const sl__op_def *def;
    char name[64];
    char device[8];
    int ninputs, inputs_cap, *inputs;
    int nargs, args_cap;
    char **argnames;
    sl__val *argvals;
    int64_t seed; /* -1: derive */
    bool named;   /* given a name (which no other op of the pipeline may have) */
    sl_status status;
};

struct sl_batch {
    const struct sl_pipeline *pipe;
    int slot;
    int64_t seq;
    int size;
    sl_tlist *nodes;         /* one sample list per node */
    sl_tlist *dense;         /* per output: a packed copy when the node's samples are scattered */
    void **op_state;         /* per op: what an op keeps for this batch between its stages */
    struct sl__seq **frames; /* per op: its batch of frames, when it took sequences (made when
                              * first needed; operator/sequence.h) */
    bool *use_dense;         /* per output: whether this batch's output is the packed copy */
    char **keys;             /* per-sample keys (copied from the reader) */
    /* per conditional scope (pipeline_cond.c): its sample count and, for scope s > 0, its
     * samples' keys at scope_keys[s * batch_size + i] (scope 0: keys) */
    int *scope_n;
    const char **scope_keys;
    size_t *key_cap;
    /* DALI's source_info: per node, its samples' (NULL: none), pointing into infos (per op: the
     * copy of what a reader's setup gave, batch_size strings of info_cap bytes each) or at the
     * first input's of the op that made it (pipeline_exec.c) */
    const char *const **node_info;
    char ***infos;
    size_t **info_cap;
    sl_mem_budget mem; /* host bytes of this batch's op outputs, against max_batch_bytes */
    sl_status status;
    sl_err err;
};

struct sl_pipeline {
    sl_pipeline_config cfg;
    size_t batch_limit; /* max_batch_bytes as resolved at build (sluice/pipeline.h) */
    sl_err err;
    char failed_arg[64]; /* the argument the last sl_pipeline_op_end failure is about, or "" */
    bool built, failed;
    bool stopped; /* sl_pipeline_stop: the stages have ended, the memory stays */

    /* graph */
    int nops, ops_cap;
    sl__opinst *ops;
    int nnodes, nodes_cap;
    sl__node *nodes;
    int nout;
    int *outputs;        /* nout nodes */
    char **output_names; /* nout names */
    int reader_op;       /* the first reader (keys come from it), -1 if none */
    /* conditionals (pipeline_cond.c): the scopes, the one ops are added to now, and the splits
     * made (node brought into scope -> out) */
    int nscopes, scopes_cap, cur_scope;
    sl__scope *scopes;
    int nsplits, splits_cap;
    struct sl__split_entry {
        int node, scope, out;
    } * splits;

    /* executor */
    sl__pool *pool;
    int nslots;
    sl_batch *slots;
    /* read: read stage -> CPU stage; mid: CPU stage -> GPU stage */
    sl__queue *free_q, *read_q, *mid_q, *ready_q;
    pthread_t read_thread, cpu_thread, gpu_thread;
    bool read_thread_started, cpu_thread_started, gpu_thread_started;
    int read_ops;      /* > 0: ops [0, read_ops) (the readers) run in a read stage of their own */
    bool gpu_stage;    /* a CUDA pipeline with transfers or GPU ops */
    void *stream;      /* the GPU stage's cudaStream_t */
    void *xfer_pinned; /* GPU stage: pinned block gathering scattered host samples for one copy */
    size_t xfer_cap, xfer_used; /* used: by this batch's transfers so far */
    int stopping;               /* the stage taking snapshots has ended (under snap_mu) */
    sl_err stop_err;            /* the error it ended with; status SL_OK for none */
    int64_t next_seq;           /* next batch the first stage produces */
    int64_t taken;              /* batches handed to the consumer */
    int64_t released;           /* batches given back */

    /* checkpoints: snapshot of op state before batch seq, in a ring */
    pthread_mutex_t snap_mu;
    pthread_cond_t snap_cv;
    int nsnap;
    int64_t *snap_seq;
    void **snap_bytes;
    size_t *snap_size;
    void *restore_bytes;
    size_t restore_size;

    /* stats */
    pthread_mutex_t stats_mu;
    sl_pipeline_stats stats;

    /* fn.external_source's sources (sl_pipeline_add_source) */
    int nsources;
    struct sl__source_entry {
        char name[64];
        sl_source src;
    } * sources;
};

/* The most nodes, ops, an op's inputs or arguments, a graph has: ids are ints, and every node
 * is a sample list in every batch slot (a graph past this is a runaway program, not a pipeline). */
#define SL__GRAPH_MAX (1 << 24)
/* *arr (*cap elements of elem bytes) grown, new elements zeroed, to hold need. */
sl_status sl__pipeline_grow(void **arr, int *cap, int need, size_t elem, sl_err *err);

/* Records an error in the pipeline's own error and returns it. */
sl_status sl__pipeline_fail(sl_pipeline *p, sl_status st, const char *fmt, ...) SL_PRINTF(3, 4);

/* pipeline_cond.c. Scope 0 (the whole batch) is in p->scopes once a conditional is opened. */
/* *out: node as the samples of scope `target` (node itself, or its split), adding the splits it
 * takes; an SL_EINVAL naming what (an op's input, say) when node's branch is not target or one
 * of target's enclosing ones. */
sl_status sl__pipeline_cond_bring(sl_pipeline *p, int node, int target, const char *what, int *out);
/* An op being added (sl_pipeline_op_end): its inputs and per-sample arguments brought into the
 * scope open now; a reader or external source refused inside a branch. */
sl_status sl__pipeline_cond_inputs(sl_pipeline *p, sl_pipeline_op *op);
/* Batch b, at split op k in the CPU stage: the sample counts and keys of the scopes of its
 * outputs, from its predicate. */
void sl__pipeline_cond_scopes(sl_pipeline *p, sl_batch *b, int k);

#endif
