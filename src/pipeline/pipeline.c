/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline: a graph of op instances built op by op (or by the text parser), validated at build,
 * then run by stage threads that fill recycled batch slots ahead of the consumer.
 *
 * Each batch goes through the ops in graph order: an op's setup (per-sample decisions, output
 * sizes) then its run_cpu for every sample on the thread pool. Batches flow free queue -> [read
 * stage ->] CPU stage [-> GPU stage] -> ready queue -> consumer -> free queue, so prefetch_cpu
 * batches are prepared while the consumer works, and every buffer is reused from batch to batch.
 * When CPU work follows the readers (a decoder, say), the readers run in a read stage of their own,
 * so that reading batch k + 1 overlaps the rest of batch k's CPU work: their outputs must stay
 * valid while later batches are read anyway, since the GPU stage runs behind the CPU stage. Errors
 * travel with their batch and come back, in order, from sl_pipeline_next. Before producing batch k
 * the first stage snapshots the state of every op (only readers have any: their position), which is
 * what a checkpoint after k batches holds. */
#include "pipeline/pipeline_int.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"
#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sl_pipeline_config_init(sl_pipeline_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->batch_size = 32;
    cfg->num_threads = 4;
    cfg->device = sl_cpu();
    cfg->seed = 0;
    cfg->prefetch_cpu = 2;
    cfg->prefetch_gpu = 2;
}

sl_status sl_pipeline_create(const sl_pipeline_config *cfg, sl_pipeline **out, sl_err *err) {
    *out = NULL;
    if (cfg->batch_size < 1)
        return sl_err_set(err, SL_EINVAL, "pipeline batch_size %d (must be >= 1)", cfg->batch_size);
    if (cfg->num_threads < 1 || cfg->num_threads > 1024)
        return sl_err_set(err, SL_EINVAL, "pipeline num_threads %d (1..1024)", cfg->num_threads);
    if (cfg->prefetch_cpu < 1 || cfg->prefetch_gpu < 1)
        return sl_err_set(err, SL_EINVAL, "prefetch depths %d/%d (must be >= 1)", cfg->prefetch_cpu,
                          cfg->prefetch_gpu);
    if (cfg->global_shards < 0 || cfg->global_shards > (1 << 20) ||
        (cfg->global_shards > 0 &&
         (cfg->global_shard < 0 || cfg->global_shard >= cfg->global_shards)))
        return sl_err_set(err, SL_EINVAL, "global order: shard %d of %d", cfg->global_shard,
                          cfg->global_shards);
    if (cfg->device.kind == SL_DEVICE_CUDA) {
        int n = sl__cuda_device_count();
        if (cfg->device.id < 0 || cfg->device.id >= n)
            return sl_err_set(err, SL_EINVAL, "CUDA device %d: %d device(s) available",
                              cfg->device.id, n);
    }
    sl_pipeline *p = sl__calloc(1, sizeof *p, err);
    if (!p) return SL_ENOMEM;
    p->cfg = *cfg;
    p->reader_op = -1;
    pthread_mutex_init(&p->snap_mu, NULL);
    pthread_cond_init(&p->snap_cv, NULL);
    pthread_mutex_init(&p->stats_mu, NULL);
    *out = p;
    return SL_OK;
}

const char *sl_pipeline_errmsg(const sl_pipeline *p) {
    return p ? p->err.msg : "";
}
sl_status sl_pipeline_status(const sl_pipeline *p) {
    return p->err.status;
}

/* Records an error in the pipeline's own error and returns it. */
static sl_status fail(sl_pipeline *p, sl_status st, const char *fmt, ...) SL_PRINTF(3, 4);
static sl_status fail(sl_pipeline *p, sl_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sl_err_setv(&p->err, st, fmt, ap);
    va_end(ap);
    return st;
}

sl_status sl_pipeline_add_source(sl_pipeline *p, const char *name, const sl_source *src) {
    if (p->built) return fail(p, SL_ESTATE, "sl_pipeline_add_source after sl_pipeline_build");
    size_t len = name ? strlen(name) : 0;
    if (len < 1 || len > 63)
        return fail(p, SL_EINVAL, "sl_pipeline_add_source: a source name has 1-63 characters");
    for (size_t i = 0; i < len; i++)
        if (name[i] <= ' ' || name[i] > '~' || name[i] == '"' || name[i] == '\'' || name[i] == '\\')
            return fail(p, SL_EINVAL,
                        "sl_pipeline_add_source: source name '%s': no spaces, quotes or "
                        "backslashes",
                        name);
    if (!src || !src->shape || !src->fill)
        return fail(p, SL_EINVAL, "sl_pipeline_add_source: source '%s' needs shape and fill", name);
    for (int i = 0; i < p->nsources; i++)
        if (!strcmp(p->sources[i].name, name))
            return fail(p, SL_EINVAL, "sl_pipeline_add_source: source '%s' is already registered",
                        name);
    struct sl__source_entry *grown =
        realloc(p->sources, (size_t)(p->nsources + 1) * sizeof *p->sources);
    if (!grown) return fail(p, SL_ENOMEM, "out of memory");
    p->sources = grown;
    memcpy(p->sources[p->nsources].name, name, len + 1);
    p->sources[p->nsources++].src = *src;
    return SL_OK;
}

/* sl__op_init's find_source */
static sl_status find_source(const void *ctx, const char *name, sl_source *out, sl_err *err) {
    const sl_pipeline *p = ctx;
    for (int i = 0; i < p->nsources; i++)
        if (!strcmp(p->sources[i].name, name)) {
            *out = p->sources[i].src;
            return SL_OK;
        }
    if (p->nsources == 0)
        return sl_err_set(err, SL_ENOENT,
                          "no source named '%s': none is registered (sl_pipeline_add_source)",
                          name);
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; i < p->nsources && used + 1 < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s'%s'", i ? ", " : "",
                                 p->sources[i].name);
    return sl_err_set(err, SL_ENOENT, "no source named '%s' (registered: %s)", name, list);
}

/* ---- builder ----------------------------------------------------------------------------------
 */

sl_pipeline_op *sl_pipeline_op_begin(sl_pipeline *p, const char *op_name) {
    if (p->built) {
        fail(p, SL_ESTATE, "ops cannot be added after sl_pipeline_build");
        return NULL;
    }
    const sl__op_def *def = sl__op_find(op_name);
    if (!def) {
        const char *s = sl__op_suggest(op_name);
        if (s)
            fail(p, SL_EINVAL, "unknown operator '%s'; did you mean '%s'?", op_name, s);
        else
            fail(p, SL_EINVAL, "unknown operator '%s' (sluice ops lists them)", op_name);
        return NULL;
    }
    sl_pipeline_op *op = sl__calloc(1, sizeof *op, &p->err);
    if (!op) return NULL;
    op->p = p;
    op->def = def;
    op->seed = -1;
    snprintf(op->name, sizeof op->name, "%s", def->name);
    return op;
}

static bool node_ok(const sl_pipeline *p, int node) {
    return node >= 0 && node < p->nnodes;
}

sl_status sl_pipeline_op_input(sl_pipeline_op *op, int node) {
    if (op->status) return op->status;
    if (!node_ok(op->p, node))
        return op->status = fail(op->p, SL_EINVAL, "%s: input %d is not a node of this pipeline",
                                 op->def->name, node);
    if (op->ninputs == SL__MAX_OP_INPUTS)
        return op->status = fail(op->p, SL_EINVAL, "%s: too many inputs", op->def->name);
    op->inputs[op->ninputs++] = node;
    return SL_OK;
}

sl_status sl_pipeline_op_device(sl_pipeline_op *op, const char *device) {
    if (op->status) return op->status;
    if (strcmp(device, "cpu") && strcmp(device, "mixed") && strcmp(device, "gpu"))
        return op->status = fail(op->p, SL_EINVAL, "%s: device \"%s\" (cpu, mixed or gpu)",
                                 op->def->name, device);
    snprintf(op->device, sizeof op->device, "%s", device);
    return SL_OK;
}

static sl_status add_arg(sl_pipeline_op *op, const char *name, sl__val *v) {
    if (op->nargs == (int)SL_ARRAY_LEN(op->argnames)) {
        sl__val_free(v);
        return op->status = fail(op->p, SL_EINVAL, "%s: too many arguments", op->def->name);
    }
    op->argnames[op->nargs] = strdup(name);
    if (!op->argnames[op->nargs]) {
        sl__val_free(v);
        return op->status = fail(op->p, SL_ENOMEM, "out of memory");
    }
    op->argvals[op->nargs++] = *v;
    return SL_OK;
}

sl_status sl_pipeline_op_arg(sl_pipeline_op *op, const char *name, const char *value) {
    if (op->status) return op->status;
    sl__val v;
    sl_err e;
    if (sl__val_parse(value, &v, &e) != SL_OK) {
        /* not a literal: a plain string */
        memset(&v, 0, sizeof v);
        v.kind = SL_VAL_STR;
        v.s = strdup(value);
        if (!v.s) return op->status = fail(op->p, SL_ENOMEM, "out of memory");
    }
    if (!strcmp(name, "device")) {
        sl_status st = v.kind == SL_VAL_STR
                           ? sl_pipeline_op_device(op, v.s)
                           : fail(op->p, SL_EINVAL, "%s: device must be a string", op->def->name);
        sl__val_free(&v);
        return op->status = st;
    }
    if (!strcmp(name, "name")) {
        if (v.kind != SL_VAL_STR) {
            sl__val_free(&v);
            return op->status = fail(op->p, SL_EINVAL, "%s: name must be a string", op->def->name);
        }
        snprintf(op->name, sizeof op->name, "%s", v.s);
        sl__val_free(&v);
        return SL_OK;
    }
    if (!strcmp(name, "seed") && v.kind == SL_VAL_INT) op->seed = v.i;
    return add_arg(op, name, &v);
}

sl_status sl_pipeline_op_arg_node(sl_pipeline_op *op, const char *name, int node) {
    if (op->status) return op->status;
    if (!node_ok(op->p, node))
        return op->status = fail(op->p, SL_EINVAL, "%s: argument %s: %d is not a node",
                                 op->def->name, name, node);
    sl__val v;
    memset(&v, 0, sizeof v);
    v.kind = SL_VAL_NODE;
    v.node = node; /* a node id for now; renumbered to an arg-input index in op_end */
    return add_arg(op, name, &v);
}

static void op_free(sl_pipeline_op *op) {
    for (int i = 0; i < op->nargs; i++) {
        free(op->argnames[i]);
        sl__val_free(&op->argvals[i]);
    }
    free(op);
}

static sl_status grow(void **arr, int *cap, int need, size_t elem, sl_err *err) {
    if (need <= *cap) return SL_OK;
    int ncap = *cap ? *cap * 2 : 16;
    while (ncap < need) ncap *= 2;
    void *n = realloc(*arr, (size_t)ncap * elem);
    if (!n) return sl_err_set(err, SL_ENOMEM, "out of memory growing the pipeline graph");
    memset((char *)n + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
    *arr = n;
    *cap = ncap;
    return SL_OK;
}

static sl_status add_node(sl_pipeline *p, int op, int out, int src, bool gpu, int *id) {
    SL_TRY(grow((void **)&p->nodes, &p->nodes_cap, p->nnodes + 1, sizeof *p->nodes, &p->err));
    p->nodes[p->nnodes] = (sl__node){op, out, src, gpu};
    *id = p->nnodes++;
    return SL_OK;
}

static bool cuda_pipeline(const sl_pipeline *p) {
    return p->cfg.device.kind == SL_DEVICE_CUDA;
}

sl_status sl_pipeline_op_end(sl_pipeline_op *op, int *out_nodes, int max_out, int *count) {
    sl_pipeline *p = op->p;
    const sl__op_def *def = op->def;
    sl_status st = op->status;
    if (count) *count = 0;
    if (st) goto done;

    /* device: as written, else gpu when an input is on the GPU (DALI's rule) */
    unsigned placement = SL_OPDEV_CPU;
    bool any_gpu = false;
    for (int i = 0; i < op->ninputs; i++) any_gpu |= p->nodes[op->inputs[i]].gpu;
    if (!strcmp(op->device, "mixed"))
        placement = SL_OPDEV_MIXED;
    else if (!strcmp(op->device, "gpu") || (!op->device[0] && any_gpu))
        placement = SL_OPDEV_GPU;
    /* on a CPU pipeline mixed and gpu ops run on the CPU: they need a CPU implementation */
    bool supported = (def->devices & placement) ||
                     (!cuda_pipeline(p) && (def->devices & (SL_OPDEV_CPU | SL_OPDEV_MIXED)));
    if (!supported) {
        bool cpu_only = placement == SL_OPDEV_GPU && (def->devices & SL_OPDEV_CPU);
        st = fail(p, SL_EINVAL, "%s cannot run on device \"%s\"%s", def->name,
                  placement == SL_OPDEV_GPU     ? "gpu"
                  : placement == SL_OPDEV_MIXED ? "mixed"
                                                : "cpu",
                  cpu_only ? ": it runs on the CPU only, so give it CPU inputs (x.cpu())" : "");
        goto done;
    }
    if (op->ninputs < def->min_inputs || op->ninputs > def->max_inputs) {
        st = fail(p, SL_EINVAL, "%s takes %d..%d inputs, got %d", def->name, def->min_inputs,
                  def->max_inputs, op->ninputs);
        goto done;
    }
    for (int i = 0; i < op->ninputs; i++) {
        bool gpu_in = p->nodes[op->inputs[i]].gpu;
        if (placement != SL_OPDEV_GPU && gpu_in) {
            st = fail(p, SL_EINVAL, "%s (device \"%s\") cannot take input %d, which is on the GPU",
                      def->name, placement == SL_OPDEV_MIXED ? "mixed" : "cpu", i);
            goto done;
        }
        if (placement == SL_OPDEV_GPU && !gpu_in) {
            st = fail(p, SL_EINVAL,
                      "%s (device \"gpu\") takes GPU inputs: call .gpu() on input %d first",
                      def->name, i);
            goto done;
        }
    }

    /* per-sample argument inputs: renumber node ids to arg-input slots */
    sl__opinst inst;
    memset(&inst, 0, sizeof inst);
    for (int i = 0; i < op->nargs; i++) {
        if (op->argvals[i].kind != SL_VAL_NODE) continue;
        int node = op->argvals[i].node;
        if (p->nodes[node].gpu) {
            st = fail(p, SL_EINVAL, "%s: argument %s must come from a CPU node", def->name,
                      op->argnames[i]);
            goto done;
        }
        if (inst.narg_inputs == SL__MAX_OP_INPUTS) {
            st = fail(p, SL_EINVAL, "%s: too many per-sample arguments", def->name);
            goto done;
        }
        inst.arg_inputs[inst.narg_inputs] = node;
        op->argvals[i].node = inst.narg_inputs++;
    }
    st = sl__args_build(def, op->nargs, (const char *const *)op->argnames, op->argvals, &inst.args,
                        &p->err);
    if (st) {
        /* the schema's messages start with the op's name; add the instance's when it differs */
        if (strcmp(op->name, def->name) != 0) sl_err_prefix(&p->err, "%s: ", op->name);
        goto done;
    }
    int nout = def->num_outputs ? def->num_outputs(&inst.args) : 1;
    if (nout < 0 || nout > SL__MAX_OP_OUTPUTS) {
        sl__args_free(&inst.args);
        st = fail(p, SL_EINVAL, "%s: %d outputs", def->name, nout);
        goto done;
    }
    if ((def->flags & SL_OPF_READER) && p->reader_op < 0) p->reader_op = p->nops;
    st = grow((void **)&p->ops, &p->ops_cap, p->nops + 1, sizeof *p->ops, &p->err);
    if (st) {
        sl__args_free(&inst.args);
        goto done;
    }
    inst.def = def;
    snprintf(inst.name, sizeof inst.name, "%s", op->name);
    inst.placement = placement;
    /* on a CUDA pipeline gpu ops run in the GPU stage, and so do mixed ops with a GPU run (nvJPEG);
     * a mixed op without one decodes on the CPU stage into pinned memory and its outputs are
     * copied to the GPU once per batch (transfer nodes, below) */
    bool mixed_on_cpu = placement == SL_OPDEV_MIXED && !def->run_gpu;
    inst.on_gpu = cuda_pipeline(p) && placement == SL_OPDEV_GPU;
    inst.split = cuda_pipeline(p) && placement == SL_OPDEV_MIXED && def->run_gpu;
    inst.ninputs = op->ninputs;
    memcpy(inst.inputs, op->inputs, sizeof inst.inputs);
    inst.nout = nout;
    inst.first_node = p->nnodes;
    inst.seed = op->seed >= 0 ? (uint64_t)op->seed : sl__rng_mix(p->cfg.seed, (uint64_t)p->nops);
    p->ops[p->nops] = inst;
    for (int k = 0; k < nout && st == SL_OK; k++) {
        int id;
        bool moved = mixed_on_cpu && cuda_pipeline(p); /* decoded on the host, then copied */
        st = add_node(p, p->nops, k, -1, placement != SL_OPDEV_CPU && !moved, &id);
        if (st == SL_OK && moved) st = add_node(p, SL__NODE_TRANSFER, 0, id, true, &id);
        if (st == SL_OK && k < max_out) out_nodes[k] = id;
    }
    p->nops++;
    if (count) *count = nout;
done:
    op_free(op);
    return st;
}

sl_status sl_pipeline_transfer(sl_pipeline *p, int node, sl_device_kind to, int *out_node) {
    if (!node_ok(p, node)) return fail(p, SL_EINVAL, "transfer of %d: not a node", node);
    bool want_gpu = to == SL_DEVICE_CUDA;
    if (p->nodes[node].gpu == want_gpu) {
        *out_node = node; /* already there */
        return SL_OK;
    }
    if (!cuda_pipeline(p)) /* the data stays where it is; only its placement changes */
        return add_node(p, SL__NODE_ALIAS, 0, node, want_gpu, out_node);
    if (!want_gpu) return fail(p, SL_ENOTSUP, ".cpu() of GPU data is not supported yet");
    return add_node(p, SL__NODE_TRANSFER, 0, node, true, out_node);
}

sl_status sl_pipeline_set_outputs(sl_pipeline *p, int n, const int *nodes,
                                  const char *const *names) {
    if (n < 1 || n > SL_MAX_OUTPUTS)
        return fail(p, SL_EINVAL, "%d pipeline outputs (1..%d)", n, SL_MAX_OUTPUTS);
    for (int i = 0; i < n; i++) {
        if (!node_ok(p, nodes[i])) return fail(p, SL_EINVAL, "output %d: not a node", i);
        p->outputs[i] = nodes[i];
        if (names && names[i])
            snprintf(p->output_names[i], sizeof p->output_names[i], "%s", names[i]);
        else
            snprintf(p->output_names[i], sizeof p->output_names[i], "out%d", i);
    }
    p->nout = n;
    return SL_OK;
}

/* ---- executor ----------------------------------------------------------------------------------
 */

/* The sample list holding node id's data in batch b (aliases resolved). */
static sl_tlist *node_list(const sl_pipeline *p, sl_batch *b, int id) {
    while (p->nodes[id].op == SL__NODE_ALIAS) id = p->nodes[id].src;
    return &b->nodes[id];
}

typedef struct {
    const sl__opinst *op;
    sl__op_io *io;
} run_ctx;

static sl_status run_sample(void *ctx_, int64_t i, int worker, sl_err *err) {
    run_ctx *c = ctx_;
    int s = c->io->run_index ? c->io->run_index[i] : (int)i;
    return c->op->def->run_cpu(c->op->state, c->io, s, worker, err);
}

/* setup's batch_job: run_cpu's sample -1, on the stage's thread beside the pool's samples */
static sl_status run_batch_job(void *ctx_, sl_err *err) {
    run_ctx *c = ctx_;
    return c->op->def->run_cpu(c->op->state, c->io, -1, -1, err);
}

static sl_status copy_keys(sl_batch *b, const char *const *keys, sl_err *err) {
    for (int i = 0; i < b->size; i++) {
        const char *k = keys && keys[i] ? keys[i] : "";
        size_t n = strlen(k) + 1;
        if (n > b->key_cap[i]) {
            char *nk = realloc(b->keys[i], n < 32 ? 32 : n);
            if (!nk) return sl_err_set(err, SL_ENOMEM, "out of memory copying record keys");
            b->keys[i] = nk;
            b->key_cap[i] = n < 32 ? 32 : n;
        }
        memcpy(b->keys[i], k, n);
    }
    return SL_OK;
}

/* Where the pipeline's records come from, for messages about one of them: the first reader's
 * store, folder or file list as given, or NULL. */
static const char *reader_source(const sl_pipeline *p) {
    if (p->reader_op < 0) return NULL;
    const sl__args *a = &p->ops[p->reader_op].args;
    static const char *const names[] = {"path", "file_root", "file_list", "files"};
    for (size_t i = 0; i < SL_ARRAY_LEN(names); i++) {
        if (!sl__args_given(a, names[i])) continue;
        const sl__val *v = sl__args_get(a, names[i]);
        if (v->kind == SL_VAL_STR) return v->s;
        if (v->kind == SL_VAL_LIST && v->n > 0 && v->items[0].kind == SL_VAL_STR)
            return v->items[0].s;
    }
    return NULL;
}

/* Runs op k on batch b. In the CPU stage (gpu_half false): its setup, then its per-sample run on
 * the pool. In the GPU stage (gpu_half true): a gpu op's setup then its run_gpu, or a split op's
 * run_gpu alone, on the stage's stream. */
static sl_status run_op(sl_pipeline *p, int k, sl_batch *b, bool gpu_half, sl_err *err) {
    sl__opinst *op = &p->ops[k];
    sl_tlist *in[SL__MAX_OP_INPUTS], *arg_in[SL__MAX_OP_INPUTS], *out[SL__MAX_OP_OUTPUTS];
    for (int i = 0; i < op->ninputs; i++) in[i] = node_list(p, b, op->inputs[i]);
    for (int i = 0; i < op->narg_inputs; i++) arg_in[i] = node_list(p, b, op->arg_inputs[i]);
    for (int i = 0; i < op->nout; i++) out[i] = &b->nodes[op->first_node + i];
    sl__op_io io;
    memset(&io, 0, sizeof io);
    io.batch = b->size;
    io.num_inputs = op->ninputs;
    io.in = in;
    io.num_arg_inputs = op->narg_inputs;
    io.arg_in = arg_in;
    io.num_outputs = op->nout;
    io.out = out;
    io.keys = (const char *const *)b->keys;
    io.source = k == p->reader_op ? NULL : reader_source(p);
    io.seed = op->seed;
    /* a sample's random streams: its place in this pipeline's batches, or in the global batches
     * it shares */
    io.sample_base = p->cfg.global_shards > 0
                         ? (b->seq * p->cfg.global_shards + p->cfg.global_shard) * p->cfg.batch_size
                         : b->seq * p->cfg.batch_size;
    io.iteration = b->seq;
    bool dev = op->on_gpu || op->split;
    io.device = dev ? p->cfg.device : sl_cpu();
    io.stream = dev ? p->stream : NULL;
    io.batch_state = &b->op_state[k];
    double t0 = now_s();
    sl_status st = SL_OK;
    if (gpu_half) {
        if (op->on_gpu && op->def->setup) st = op->def->setup(op->state, &io, err);
        if (st == SL_OK && op->def->run_gpu) st = op->def->run_gpu(op->state, &io, err);
    } else {
        if (op->def->setup) st = op->def->setup(op->state, &io, err);
        if (st == SL_OK && k == p->reader_op) st = copy_keys(b, io.keys, err);
        io.keys = (const char *const *)b->keys;
        int n = io.run_index ? io.run_count : b->size; /* setup may leave samples out */
        if (st == SL_OK && op->def->run_cpu && (n > 0 || io.batch_job)) {
            run_ctx c = {op, &io};
            st = sl__pool_parallel_for_beside(p->pool, n, run_sample, &c,
                                              io.batch_job ? run_batch_job : NULL, &c, err);
            pthread_mutex_lock(&p->stats_mu);
            op->pool_jobs++;
            op->pool_samples += n;
            pthread_mutex_unlock(&p->stats_mu);
        }
    }
    if (st == SL_OK) {
        for (int i = 0; i < op->nout; i++)
            if (out[i]->count != b->size)
                st = sl_err_set(err, SL_EINVAL, "%s: output %d has %d samples, batch is %d",
                                op->name, i, out[i]->count, b->size);
    }
    if (st < 0 && !strstr(err->msg, op->name) && !strstr(err->msg, op->def->name))
        sl_err_prefix(err, "%s: ", op->name);
    pthread_mutex_lock(&p->stats_mu);
    op->seconds += now_s() - t0;
    pthread_mutex_unlock(&p->stats_mu);
    return st < 0 ? st : SL_OK;
}

/* DALI's MakeContiguous for pipeline outputs: an output whose samples share one shape but lie
 * apart (views into a record store, repeated padding samples) is packed into one buffer, so every
 * such output is a dense (batch, ...) tensor. Samples of different shapes stay a list. */
static bool back_to_back(const sl_tlist *l) {
    size_t n = l->count ? sl_tlist_sample_nbytes(l, 0) : 0;
    for (int i = 1; i < l->count; i++)
        if ((char *)l->data[i] != (char *)l->data[0] + (size_t)i * n) return false;
    return true;
}

#ifdef SLUICE_HAVE_CUDA
/* The distance between consecutive samples when it is one (and positive), else 0. */
static size_t even_stride(const sl_tlist *l) {
    ptrdiff_t s = l->count > 1 ? (char *)l->data[1] - (char *)l->data[0] : 0;
    for (int i = 2; i < l->count && s > 0; i++)
        if ((char *)l->data[i] - (char *)l->data[i - 1] != s) s = 0;
    return s > 0 ? (size_t)s : 0;
}
#endif

static sl_status pack_outputs(sl_pipeline *p, sl_batch *b, bool on_device, sl_err *err) {
    for (int o = 0; o < p->nout; o++) {
        sl_tlist *l = node_list(p, b, p->outputs[o]);
        if ((l->device.kind == SL_DEVICE_CUDA) != on_device) continue;
        b->use_dense[o] = false;
        if (l->count < 2 || !sl_tlist_uniform(l) || back_to_back(l)) continue;
        sl_tlist *d = &b->dense[o];
        SL_TRY(sl_tlist_reset(d, l->count, l->dtype, l->ndim, l->device, err));
        memcpy(d->layout, l->layout, sizeof d->layout);
        SL_TRY(sl_tlist_alloc(d, l->shapes, err));
#ifdef SLUICE_HAVE_CUDA
        /* device samples evenly apart (64-byte aligned one-hot rows): one pitched copy */
        size_t n0 = sl_tlist_sample_nbytes(l, 0), stride = even_stride(l);
        if (on_device && stride >= n0) {
            SL_TRY(sl__cuda_memcpy2d(d->data[0], true, n0, l->data[0], true, stride, n0,
                                     (size_t)l->count, p->stream, err));
            b->use_dense[o] = true;
            continue;
        }
#endif
        for (int i = 0; i < l->count; i++) {
            size_t n = sl_tlist_sample_nbytes(l, i);
            if (!on_device) {
                memcpy(d->data[i], l->data[i], n);
                continue;
            }
#ifdef SLUICE_HAVE_CUDA
            SL_TRY(sl__cuda_memcpy(d->data[i], true, l->data[i], true, n, p->stream, err));
#endif
        }
        b->use_dense[o] = true;
    }
    return SL_OK;
}

static void store_snapshot(sl_pipeline *p, int64_t seq, void *bytes, size_t size) {
    pthread_mutex_lock(&p->snap_mu);
    int i = (int)(seq % p->nsnap);
    free(p->snap_bytes[i]);
    p->snap_bytes[i] = bytes;
    p->snap_size[i] = size;
    p->snap_seq[i] = seq;
    pthread_cond_broadcast(&p->snap_cv);
    pthread_mutex_unlock(&p->snap_mu);
}

/* Runs the CPU parts of ops [k0, k1) on batch b. The part that starts a batch takes its snapshot
 * first; the part that ends it packs its outputs. */
static sl_status produce(sl_pipeline *p, sl_batch *b, int k0, int k1) {
    double t0 = now_s();
    sl_status st = SL_OK;
    if (k0 == 0) {
        b->status = SL_OK;
        sl_err_clear(&b->err);
        b->size = p->cfg.batch_size;
        void *snap = NULL;
        size_t snap_size = 0;
        st = sl__pipeline_snapshot(p, b->seq, &snap, &snap_size, &b->err);
        if (st) return b->status = st;
        store_snapshot(p, b->seq, snap, snap_size);
    }
    for (int k = k0; k < k1 && st == SL_OK; k++)
        if (!p->ops[k].on_gpu) st = run_op(p, k, b, false, &b->err);
    if (st == SL_OK && k1 == p->nops) st = pack_outputs(p, b, false, &b->err);
    pthread_mutex_lock(&p->stats_mu);
    p->stats.batches += k1 == p->nops;
    p->stats.cpu_stage_s += now_s() - t0;
    for (int k = 0; k < p->nops && k < (int)SL_ARRAY_LEN(p->stats.ops); k++) {
        p->stats.ops[k].seconds = p->ops[k].seconds;
        p->stats.ops[k].pool_jobs = p->ops[k].pool_jobs;
        p->stats.ops[k].pool_samples = p->ops[k].pool_samples;
    }
    pthread_mutex_unlock(&p->stats_mu);
    return b->status = st;
}

/* The stage that takes snapshots has ended: wake anyone waiting for one that will never come. */
static void end_snapshots(sl_pipeline *p) {
    pthread_mutex_lock(&p->snap_mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->snap_cv);
    pthread_mutex_unlock(&p->snap_mu);
}

/* The read stage (only when read_ops > 0): numbers the batches and runs the readers. */
static void *read_stage(void *arg) {
    sl_pipeline *p = arg;
    for (;;) {
        void *item;
        if (sl__queue_pop(p->free_q, &item) != SL_OK) break;
        sl_batch *b = item;
        b->seq = p->next_seq++;
        sl_status st = produce(p, b, 0, p->read_ops);
        if (sl__queue_push(p->read_q, b) != SL_OK) break;
        if (st < 0) break; /* the error travels with its batch; the stage stops */
    }
    end_snapshots(p);
    return NULL;
}

/* The CPU stage: the CPU ops after the read stage's, or all of them when there is none. */
static void *cpu_stage(void *arg) {
    sl_pipeline *p = arg;
    for (;;) {
        void *item;
        sl_status st;
        if (sl__queue_pop(p->read_ops ? p->read_q : p->free_q, &item) != SL_OK) break;
        sl_batch *b = item;
        if (p->read_ops) {
            st = b->status < 0 ? b->status : produce(p, b, p->read_ops, p->nops);
        } else {
            b->seq = p->next_seq++;
            st = produce(p, b, 0, p->nops);
        }
        if (sl__queue_push(p->gpu_stage ? p->mid_q : p->ready_q, b) != SL_OK) break;
        if (st < 0) break; /* the error travels with its batch; the stage stops */
    }
    if (!p->read_ops) end_snapshots(p);
    return NULL;
}

#ifdef SLUICE_HAVE_CUDA
/* Copies transfer node id's source (host, pinned when it came from the pool) to the device: one
 * copy for the whole batch (samples outside the source's own buffer are gathered first). */
static sl_status transfer(sl_pipeline *p, int id, sl_batch *b, sl_err *err) {
    sl_tlist *src = node_list(p, b, p->nodes[id].src), *dst = &b->nodes[id];
    SL_TRY(sl_tlist_reset(dst, src->count, src->dtype, src->ndim, p->cfg.device, err));
    memcpy(dst->layout, src->layout, sizeof dst->layout);
    SL_TRY(sl_tlist_alloc(dst, src->shapes, err));
    bool same = src->buf != NULL;
    for (int i = 0; i < src->count && same; i++)
        same = (char *)src->data[i] - (char *)src->buf == (char *)dst->data[i] - (char *)dst->buf;
    if (same)
        return sl__cuda_memcpy(dst->buf, true, src->buf, false, dst->buf_used, p->stream, err);
    /* samples elsewhere (views into the record store: labels): gathered on the host into a pinned
     * block laid out as dst's buffer, then one copy. The block is free again once the batch's
     * stream work is done, which gpu_produce waits for; growing waits for it first. */
    size_t need = (dst->buf_used + 63) & ~(size_t)63;
    if (p->xfer_used + need > p->xfer_cap) {
        SL_TRY(sl__cuda_stream_sync(p->stream, err)); /* earlier copies from the block are done */
        p->xfer_used = 0;
        if (need > p->xfer_cap) {
            sl__alloc_pinned_free(p->xfer_pinned);
            p->xfer_cap = 0;
            size_t cap = need < 65536 ? 65536 : 2 * need;
            p->xfer_pinned = sl__alloc_pinned(cap, err);
            if (!p->xfer_pinned) return err->status;
            p->xfer_cap = cap;
        }
    }
    char *h = (char *)p->xfer_pinned + p->xfer_used;
    p->xfer_used += need;
    for (int i = 0; i < src->count; i++)
        memcpy(h + ((char *)dst->data[i] - (char *)dst->buf), src->data[i],
               sl_tlist_sample_nbytes(src, i));
    return sl__cuda_memcpy(dst->buf, true, h, false, dst->buf_used, p->stream, err);
}

static sl_status gpu_produce(sl_pipeline *p, sl_batch *b) {
    sl_status st = SL_OK;
    double t0 = now_s();
    p->xfer_used = 0; /* the last batch's stream work is done */
    for (int n = 0; n < p->nnodes && st == SL_OK; n++)
        if (p->nodes[n].op == SL__NODE_TRANSFER) st = transfer(p, n, b, &b->err);
    for (int k = 0; k < p->nops && st == SL_OK; k++)
        if (p->ops[k].on_gpu || p->ops[k].split) st = run_op(p, k, b, true, &b->err);
    if (st == SL_OK) st = pack_outputs(p, b, true, &b->err);
    if (st == SL_OK) st = sl__cuda_stream_sync(p->stream, &b->err);
    pthread_mutex_lock(&p->stats_mu);
    p->stats.gpu_s += now_s() - t0;
    pthread_mutex_unlock(&p->stats_mu);
    return b->status = st;
}

static void *gpu_stage(void *arg) {
    sl_pipeline *p = arg;
    sl_err e;
    sl__cuda_set_device(p->cfg.device.id, &e);
    for (;;) {
        void *item;
        if (sl__queue_pop(p->mid_q, &item) != SL_OK) break;
        sl_batch *b = item;
        sl_status st = b->status < 0 ? b->status : gpu_produce(p, b);
        if (sl__queue_push(p->ready_q, b) != SL_OK) break;
        if (st < 0) break;
    }
    return NULL;
}
#endif

static sl_status alloc_slots(sl_pipeline *p) {
    /* prefetch_cpu batches in preparation, up to prefetch_cpu held by the consumer, one in hand,
     * and one more for a read stage */
    p->nslots = 2 * p->cfg.prefetch_cpu + 1 + (p->read_ops > 0);
    p->slots = sl__calloc((size_t)p->nslots, sizeof *p->slots, &p->err);
    if (!p->slots) return SL_ENOMEM;
    int bs = p->cfg.batch_size;
    for (int s = 0; s < p->nslots; s++) {
        sl_batch *b = &p->slots[s];
        b->pipe = p;
        b->slot = s;
        b->nodes = sl__calloc((size_t)p->nnodes, sizeof *b->nodes, &p->err);
        b->dense = sl__calloc((size_t)p->nout, sizeof *b->dense, &p->err);
        b->use_dense = sl__calloc((size_t)p->nout, sizeof *b->use_dense, &p->err);
        b->op_state = sl__calloc((size_t)p->nops, sizeof *b->op_state, &p->err);
        if (!b->dense || !b->use_dense || !b->op_state) return SL_ENOMEM;
        b->keys = sl__calloc((size_t)bs, sizeof *b->keys, &p->err);
        b->key_cap = sl__calloc((size_t)bs, sizeof *b->key_cap, &p->err);
        if (!b->nodes || !b->keys || !b->key_cap) return SL_ENOMEM;
    }
    p->nsnap = p->nslots + 2;
    p->snap_seq = sl__calloc((size_t)p->nsnap, sizeof *p->snap_seq, &p->err);
    p->snap_bytes = sl__calloc((size_t)p->nsnap, sizeof *p->snap_bytes, &p->err);
    p->snap_size = sl__calloc((size_t)p->nsnap, sizeof *p->snap_size, &p->err);
    if (!p->snap_seq || !p->snap_bytes || !p->snap_size) return SL_ENOMEM;
    for (int i = 0; i < p->nsnap; i++) p->snap_seq[i] = -1;
    SL_TRY(sl__queue_create(p->nslots, &p->free_q, &p->err));
    SL_TRY(sl__queue_create(p->nslots, &p->ready_q, &p->err));
    if (p->read_ops) SL_TRY(sl__queue_create(p->cfg.prefetch_cpu, &p->read_q, &p->err));
    if (p->gpu_stage) {
        SL_TRY(sl__queue_create(p->cfg.prefetch_gpu, &p->mid_q, &p->err));
        /* host sources of transfers are page-locked, so the copy is one DMA per batch */
        for (int s = 0; s < p->nslots; s++)
            for (int n = 0; n < p->nnodes; n++)
                if (p->nodes[n].op == SL__NODE_TRANSFER)
                    node_list(p, &p->slots[s], p->nodes[n].src)->pinned = true;
    }
    for (int s = 0; s < p->nslots; s++) SL_TRY(sl__queue_push(p->free_q, &p->slots[s]));
    return SL_OK;
}

static sl_status apply_restore(sl_pipeline *p);

/* How many leading ops a read stage runs: through the last reader or op with state to checkpoint
 * (so that one thread takes every snapshot), when CPU work follows them; 0 for no read stage. */
static int read_stage_ops(const sl_pipeline *p) {
    int last = -1;
    for (int k = 0; k < p->nops; k++)
        if ((p->ops[k].def->flags & SL_OPF_READER) || p->ops[k].def->save) last = k;
    if (last < 0) return 0;
    for (int k = last + 1; k < p->nops; k++) {
        const sl__opinst *op = &p->ops[k];
        if (!op->on_gpu && (op->def->run_cpu || op->def->setup)) return last + 1;
    }
    return 0;
}

sl_status sl_pipeline_build(sl_pipeline *p) {
    if (p->built) return fail(p, SL_ESTATE, "sl_pipeline_build called twice");
    if (p->nops == 0) return fail(p, SL_EINVAL, "the pipeline has no operators");
    if (p->nout == 0) return fail(p, SL_EINVAL, "the pipeline has no outputs (set_outputs)");
    for (int n = 0; n < p->nnodes; n++) p->gpu_stage |= p->nodes[n].op == SL__NODE_TRANSFER;
    for (int k = 0; k < p->nops; k++) {
        const sl__opinst *op = &p->ops[k];
        p->gpu_stage |= op->on_gpu || op->split;
        /* an op whose setup does everything (reshape: views) runs anywhere */
        bool setup_only = !op->def->run_cpu && !op->def->run_gpu;
        if (op->on_gpu && !op->def->run_gpu && !setup_only)
            return fail(p, SL_ENOTSUP, "%s has no GPU implementation: place it on the CPU",
                        op->name);
        if (!op->on_gpu && !op->split && !op->def->run_cpu && !setup_only)
            return fail(p, SL_ENOTSUP, "%s has no CPU implementation", op->name);
        if (!op->def->setup && setup_only)
            return fail(p, SL_EINVAL, "%s has nothing to run", op->name);
    }
#ifndef SLUICE_HAVE_CUDA
    SL_ASSERT(!p->gpu_stage); /* a CUDA pipeline cannot be created without CUDA */
#endif
    /* create the op instances: opens every store, checks every argument */
    for (int k = 0; k < p->nops; k++) {
        sl__opinst *op = &p->ops[k];
        sl__op_init init;
        memset(&init, 0, sizeof init);
        init.name = op->name;
        init.device = sl_cpu();
        init.batch_size = p->cfg.batch_size;
        init.threads = p->cfg.num_threads;
        init.seed = op->seed;
        init.global_shards = p->cfg.global_shards;
        init.global_shard = p->cfg.global_shard;
        init.global_drop = p->cfg.global_drop != 0;
        init.find_source = find_source;
        init.source_ctx = p;
        sl_status st =
            op->def->create ? op->def->create(&op->args, &init, &op->state, &p->err) : SL_OK;
        if (st) {
            if (!strstr(p->err.msg, op->name)) sl_err_prefix(&p->err, "%s: ", op->name);
            return st;
        }
        snprintf(p->stats.ops[k < 32 ? k : 31].name, sizeof p->stats.ops[0].name, "%s", op->name);
    }
    p->stats.num_ops = p->nops < 32 ? p->nops : 32;
    p->read_ops = read_stage_ops(p);
    SL_TRY(apply_restore(p));
    SL_TRY(sl__pool_create(p->cfg.num_threads, &p->pool, &p->err));
    SL_TRY(alloc_slots(p));
#ifdef SLUICE_HAVE_CUDA
    if (p->gpu_stage) {
        SL_TRY(sl__cuda_stream_create(p->cfg.device.id, &p->stream, &p->err));
        if (pthread_create(&p->gpu_thread, NULL, gpu_stage, p) != 0)
            return fail(p, SL_ENOMEM, "cannot start the pipeline's GPU stage thread");
        p->gpu_thread_started = true;
    }
#endif
    if (pthread_create(&p->cpu_thread, NULL, cpu_stage, p) != 0)
        return fail(p, SL_ENOMEM, "cannot start the pipeline's CPU stage thread");
    p->cpu_thread_started = true;
    if (p->read_ops) {
        if (pthread_create(&p->read_thread, NULL, read_stage, p) != 0)
            return fail(p, SL_ENOMEM, "cannot start the pipeline's read stage thread");
        p->read_thread_started = true;
    }
    p->built = true;
    return SL_OK;
}

sl_status sl_pipeline_next(sl_pipeline *p, sl_batch **out) {
    *out = NULL;
    if (!p->built) return fail(p, SL_ESTATE, "sl_pipeline_next before sl_pipeline_build");
    if (p->failed) return p->err.status;
    if (p->taken - p->released >= p->nslots)
        return fail(p, SL_ESTATE, "%d batches are held: release one before taking another",
                    p->nslots);
    void *item;
    double t0 = now_s();
    sl_status st = sl__queue_pop(p->ready_q, &item);
    pthread_mutex_lock(&p->stats_mu);
    p->stats.wait_s += now_s() - t0;
    pthread_mutex_unlock(&p->stats_mu);
    if (st != SL_OK) return fail(p, SL_ESTATE, "the pipeline has stopped");
    sl_batch *b = item;
    if (b->status < 0) {
        p->failed = true;
        sl_err_copy(&p->err, &b->err);
        sl__queue_push(p->free_q, b);
        return p->err.status;
    }
    p->taken++;
    *out = b;
    return SL_OK;
}

void sl_pipeline_release(sl_pipeline *p, sl_batch *b) {
    if (!b) return;
    p->released++;
    sl__queue_push(p->free_q, b);
}

int sl_pipeline_max_held(const sl_pipeline *p) {
    return p->built ? p->nslots : 0;
}

void sl_pipeline_free(sl_pipeline *p) {
    if (!p) return;
    if (p->free_q) sl__queue_close(p->free_q);
    if (p->read_q) sl__queue_close(p->read_q);
    if (p->mid_q) sl__queue_close(p->mid_q);
    if (p->ready_q) sl__queue_close(p->ready_q);
    if (p->read_thread_started) pthread_join(p->read_thread, NULL);
    if (p->cpu_thread_started) pthread_join(p->cpu_thread, NULL);
    if (p->gpu_thread_started) pthread_join(p->gpu_thread, NULL);
#ifdef SLUICE_HAVE_CUDA
    sl__cuda_stream_destroy(p->stream);
    sl__alloc_pinned_free(p->xfer_pinned);
#endif
    sl__pool_free(p->pool);
    for (int k = 0; k < p->nops; k++) {
        if (p->ops[k].state && p->ops[k].def->destroy) p->ops[k].def->destroy(p->ops[k].state);
        sl__args_free(&p->ops[k].args);
    }
    for (int s = 0; p->slots && s < p->nslots; s++) {
        sl_batch *b = &p->slots[s];
        for (int n = 0; b->nodes && n < p->nnodes; n++) sl_tlist_free(&b->nodes[n]);
        for (int o = 0; b->dense && o < p->nout; o++) sl_tlist_free(&b->dense[o]);
        for (int k = 0; b->op_state && k < p->nops; k++)
            if (b->op_state[k] && p->ops[k].def->free_batch_state)
                p->ops[k].def->free_batch_state(b->op_state[k]);
        free(b->op_state);
        free(b->dense);
        free(b->use_dense);
        for (int i = 0; b->keys && i < p->cfg.batch_size; i++) free(b->keys[i]);
        free(b->nodes);
        free(b->keys);
        free(b->key_cap);
    }
    for (int i = 0; p->snap_bytes && i < p->nsnap; i++) free(p->snap_bytes[i]);
    free(p->snap_bytes);
    free(p->snap_size);
    free(p->snap_seq);
    free(p->restore_bytes);
    free(p->slots);
    sl__queue_free(p->free_q);
    sl__queue_free(p->read_q);
    sl__queue_free(p->mid_q);
    sl__queue_free(p->ready_q);
    free(p->ops);
    free(p->nodes);
    free(p->sources);
    pthread_mutex_destroy(&p->snap_mu);
    pthread_cond_destroy(&p->snap_cv);
    pthread_mutex_destroy(&p->stats_mu);
    free(p);
}

/* ---- accessors
 * ----------------------------------------------------------------------------------- */

int sl_pipeline_num_outputs(const sl_pipeline *p) {
    return p->nout;
}
const char *sl_pipeline_output_name(const sl_pipeline *p, int i) {
    return i >= 0 && i < p->nout ? p->output_names[i] : NULL;
}
int sl_pipeline_batch_size(const sl_pipeline *p) {
    return p->cfg.batch_size;
}
sl_device sl_pipeline_device(const sl_pipeline *p) {
    return p->cfg.device;
}

int sl_batch_size(const sl_batch *b) {
    return b->size;
}
int64_t sl_batch_index(const sl_batch *b) {
    return b->seq;
}
const char *sl_batch_key(const sl_batch *b, int i) {
    return i >= 0 && i < b->size && b->keys[i] ? b->keys[i] : "";
}

const sl_tlist *sl_batch_output(const sl_batch *b, int i) {
    if (i < 0 || i >= b->pipe->nout) return NULL;
    return b->use_dense[i] ? &b->dense[i] : node_list(b->pipe, (sl_batch *)b, b->pipe->outputs[i]);
}

sl_status sl_batch_tensor(const sl_batch *b, int i, sl_tensor *out, sl_err *err) {
    const sl_tlist *l = sl_batch_output(b, i);
    if (!l) return sl_err_set(err, SL_EINVAL, "batch has no output %d", i);
    sl_status st = sl_tlist_as_tensor(l, out, err);
    if (st) sl_err_prefix(err, "output %s: ", b->pipe->output_names[i]);
    return st;
}

sl_status sl_pipeline_reader_meta(sl_pipeline *p, const char *name, sl_reader_meta *out) {
    if (!p->built) return fail(p, SL_ESTATE, "reader meta before sl_pipeline_build");
    for (int k = 0; k < p->nops; k++) {
        sl__opinst *op = &p->ops[k];
        if (!(op->def->flags & SL_OPF_READER) || !op->def->reader_meta) continue;
        if (name && *name && strcmp(op->name, name) != 0) continue;
        return op->def->reader_meta(op->state, out);
    }
    if (name && *name) return fail(p, SL_ENOENT, "no reader named \"%s\" in the pipeline", name);
    return fail(p, SL_ENOENT, "the pipeline has no reader");
}

int sl__pipeline_num_readers(const sl_pipeline *p) {
    int n = 0;
    for (int k = 0; k < p->nops; k++) n += (p->ops[k].def->flags & SL_OPF_READER) != 0;
    return n;
}

int sl_pipeline_num_readers(const sl_pipeline *p) {
    return sl__pipeline_num_readers(p);
}

const char *sl_pipeline_reader_name(const sl_pipeline *p, int i) {
    for (int k = 0; k < p->nops; k++)
        if ((p->ops[k].def->flags & SL_OPF_READER) && i-- == 0) return p->ops[k].name;
    return NULL;
}

void sl_pipeline_get_stats(const sl_pipeline *p, sl_pipeline_stats *out) {
    pthread_mutex_lock((pthread_mutex_t *)&p->stats_mu);
    *out = p->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&p->stats_mu);
    out->reader_s = out->cpu_ops_s = out->decode_s = out->gpu_s = 0;
    for (int k = 0; k < out->num_ops; k++) {
        const sl__opinst *op = &p->ops[k];
        double t = out->ops[k].seconds;
        if (op->def->flags & SL_OPF_READER)
            out->reader_s += t;
        else if (!strncmp(op->def->name, "decoders.", 9))
            out->decode_s += t;
        else if (op->on_gpu || op->split)
            out->gpu_s += t;
        else
            out->cpu_ops_s += t;
    }
}

/* ---- checkpoints
 * ---------------------------------------------------------------------------------- */

#define SNAP_MAGIC   0x53504c53u /* "SLPS" */
#define SNAP_VERSION 2u

typedef struct {
    unsigned char *buf;
    size_t len, cap;
    sl_status st;
} wbuf;

static void put(wbuf *w, const void *data, size_t n) {
    if (w->st) return;
    if (w->len + n > w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 256;
        while (ncap < w->len + n) ncap *= 2;
        unsigned char *nb = realloc(w->buf, ncap);
        if (!nb) {
            w->st = SL_ENOMEM;
            return;
        }
        w->buf = nb;
        w->cap = ncap;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
}

sl_status sl__pipeline_snapshot(sl_pipeline *p, int64_t seq, void **bytes, size_t *size,
                                sl_err *err) {
    wbuf w = {0};
    uint32_t hdr[3] = {SNAP_MAGIC, SNAP_VERSION, (uint32_t)p->nops};
    put(&w, hdr, sizeof hdr);
    put(&w, &seq, sizeof seq);
    for (int k = 0; k < p->nops; k++) {
        sl__opinst *op = &p->ops[k];
        void *ob = NULL;
        size_t on = 0;
        if (op->def->save) {
            sl_status st = op->def->save(op->state, &ob, &on, err);
            if (st) {
                free(w.buf);
                return st;
            }
        }
        uint64_t n64 = on;
        put(&w, &n64, sizeof n64);
        if (on) put(&w, ob, on);
        free(ob);
    }
    if (w.st) {
        free(w.buf);
        return sl_err_set(err, SL_ENOMEM, "out of memory writing a pipeline snapshot");
    }
    *bytes = w.buf;
    *size = w.len;
    return SL_OK;
}

sl_status sl_pipeline_save(sl_pipeline *p, void **bytes, size_t *size) {
    return sl__pipeline_save_at(p, p->built ? p->taken : 0, bytes, size);
}

sl_status sl__pipeline_save_at(sl_pipeline *p, int64_t want, void **bytes, size_t *size) {
    *bytes = NULL;
    *size = 0;
    if (!p->built) return fail(p, SL_ESTATE, "checkpoint before sl_pipeline_build");
    if (p->failed) return p->err.status;
    /* the first stage runs at most nslots batches ahead of the consumer's releases, and the ring
     * holds nslots + 2 snapshots: the last three batches taken are always still in it (an older
     * one could be overwritten while this waits for it) */
    if (want < p->taken - 2 || want > p->taken)
        return fail(p, SL_EINVAL, "no snapshot of batch %lld kept", (long long)want);
    pthread_mutex_lock(&p->snap_mu);
    int i = (int)(want % p->nsnap);
    while (p->snap_seq[i] != want && !p->stopping) pthread_cond_wait(&p->snap_cv, &p->snap_mu);
    sl_status st = SL_OK;
    if (p->snap_seq[i] == want) {
        *bytes = malloc(p->snap_size[i]);
        if (*bytes) {
            memcpy(*bytes, p->snap_bytes[i], p->snap_size[i]);
            *size = p->snap_size[i];
        } else {
            st = fail(p, SL_ENOMEM, "out of memory copying a checkpoint");
        }
    } else {
        st = fail(p, SL_ESTATE, "the pipeline stopped before batch %lld", (long long)want);
    }
    pthread_mutex_unlock(&p->snap_mu);
    return st;
}

sl_status sl_pipeline_restore(sl_pipeline *p, const void *bytes, size_t size) {
    if (p->built) return fail(p, SL_ESTATE, "restore must come before sl_pipeline_build");
    free(p->restore_bytes);
    p->restore_bytes = malloc(size ? size : 1);
    if (!p->restore_bytes) return fail(p, SL_ENOMEM, "out of memory");
    memcpy(p->restore_bytes, bytes, size);
    p->restore_size = size;
    return SL_OK;
}

static sl_status apply_restore(sl_pipeline *p) {
    if (!p->restore_bytes) return SL_OK;
    const unsigned char *b = p->restore_bytes, *end = b + p->restore_size;
    uint32_t hdr[3];
    int64_t seq;
    if (p->restore_size < sizeof hdr + sizeof seq)
        return fail(p, SL_EFORMAT, "pipeline checkpoint: truncated (%zu bytes)", p->restore_size);
    memcpy(hdr, b, sizeof hdr);
    b += sizeof hdr;
    if (hdr[0] != SNAP_MAGIC || hdr[1] != SNAP_VERSION)
        return fail(p, SL_EFORMAT, "pipeline checkpoint: not a sluice pipeline state (version %u)",
                    hdr[1]);
    if ((int)hdr[2] != p->nops)
        return fail(p, SL_EINVAL, "pipeline checkpoint: %u operators, this pipeline has %d", hdr[2],
                    p->nops);
    memcpy(&seq, b, sizeof seq);
    b += sizeof seq;
    /* the batch sequence number picks the snapshot ring's slot (seq % nsnap) and, times the batch
     * size, every sample's random stream: a negative or huge one would index out of the ring or
     * overflow */
    int64_t seq_max = INT64_MAX / 4 / (p->cfg.batch_size > 0 ? p->cfg.batch_size : 1);
    if (seq < 0 || seq > seq_max)
        return fail(p, SL_EFORMAT,
                    "pipeline checkpoint: field seq: batch %lld out of range (0..%lld)",
                    (long long)seq, (long long)seq_max);
    for (int k = 0; k < p->nops; k++) {
        sl__opinst *op = &p->ops[k];
        uint64_t n;
        if ((size_t)(end - b) < 8)
            return fail(p, SL_EFORMAT, "pipeline checkpoint: truncated at operator %s", op->name);
        memcpy(&n, b, 8);
        b += 8;
        if (n > (uint64_t)(end - b))
            return fail(p, SL_EFORMAT, "pipeline checkpoint: truncated in operator %s", op->name);
        if (n && !op->def->restore)
            return fail(p, SL_EINVAL, "pipeline checkpoint: %s has state but cannot restore it",
                        op->name);
        if (n) SL_TRY(op->def->restore(op->state, b, (size_t)n, &p->err));
        b += n;
    }
    if (b != end)
        return fail(p, SL_EFORMAT, "pipeline checkpoint: %zu trailing bytes", (size_t)(end - b));
    p->next_seq = seq;
    p->taken = seq;
    p->released = seq;
    return SL_OK;
}
