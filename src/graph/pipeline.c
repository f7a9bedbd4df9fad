/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline's graph: creation, the sources fn.external_source reads, the builder that adds op
 * instances and nodes one op at a time (by C calls or the text parser) under DALI's device rules,
 * and sl_pipeline_build, which checks the graph, creates every op instance (pipeline_ops.c),
 * applies a checkpoint given before it (pipeline_checkpoint.c) and hands
 * the graph to the executor (pipeline_exec.c). Also the pipeline's own accessors and its teardown,
 * which frees what the executor and the checkpoints hold too. */
#include "graph/pipeline_int.h"

#include "graph/pipeline_checkpoint.h"
#include "graph/pipeline_exec.h"
#include "graph/pipeline_ops.h"
#include "ops/registry.h"

#include "operator/sequence.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/size.h"
#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"
#endif

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sl_pipeline_config_init(sl_pipeline_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->batch_size = 32;
    cfg->num_threads = SL_NUM_THREADS_AUTO;
    cfg->device = sl_cpu();
    cfg->seed = 0;
    cfg->prefetch_cpu = 2;
    cfg->prefetch_gpu = 2;
}

sl_status sl_pipeline_create(const sl_pipeline_config *cfg, sl_pipeline **out, sl_err *err) {
    *out = NULL;
    if (cfg->batch_size < 1)
        return sl_err_set(err, SL_EINVAL, "pipeline batch_size %d (must be >= 1)", cfg->batch_size);
    if (cfg->num_threads != SL_NUM_THREADS_AUTO &&
        (cfg->num_threads < 1 || cfg->num_threads > 1024))
        return sl_err_set(err, SL_EINVAL,
                          "pipeline num_threads %d (1..1024, or %d: chosen from the machine)",
                          cfg->num_threads, SL_NUM_THREADS_AUTO);
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
    if (cfg->num_threads == SL_NUM_THREADS_AUTO) /* the GPUs' pipelines share the CPUs */
        p->cfg.num_threads = sl_pipeline_default_threads(
            cfg->device.kind == SL_DEVICE_CUDA ? sl__cuda_device_count() : 1);
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

sl_status sl__pipeline_fail(sl_pipeline *p, sl_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sl_err_setv(&p->err, st, fmt, ap);
    va_end(ap);
    return st;
}

/* Registers src under name (what: the public call, for messages); functions are entries whose
 * shape is NULL and whose user is their sl_function (owned by the pipeline). */
static sl_status add_entry(sl_pipeline *p, const char *what, const char *name,
                           const sl_source *src) {
    if (p->built) return sl__pipeline_fail(p, SL_ESTATE, "%s after sl_pipeline_build", what);
    size_t len = name ? strlen(name) : 0;
    if (len < 1 || len > 63)
        return sl__pipeline_fail(p, SL_EINVAL, "%s: a name has 1-63 characters", what);
    for (size_t i = 0; i < len; i++)
        if (name[i] <= ' ' || name[i] > '~' || name[i] == '"' || name[i] == '\'' || name[i] == '\\')
            return sl__pipeline_fail(p, SL_EINVAL,
                                     "%s: name '%s': no spaces, quotes or "
                                     "backslashes",
                                     what, name);
    for (int i = 0; i < p->nsources; i++)
        if (!strcmp(p->sources[i].name, name))
            return sl__pipeline_fail(p, SL_EINVAL, "%s: '%s' is already registered", what, name);
    struct sl__source_entry *grown =
        realloc(p->sources, (size_t)(p->nsources + 1) * sizeof *p->sources);
    if (!grown) return sl__pipeline_fail(p, SL_ENOMEM, "out of memory");
    p->sources = grown;
    memcpy(p->sources[p->nsources].name, name, len + 1);
    p->sources[p->nsources++].src = *src;
    return SL_OK;
}

sl_status sl_pipeline_add_source(sl_pipeline *p, const char *name, const sl_source *src) {
    if (!src || !src->shape || !src->fill)
        return sl__pipeline_fail(p, SL_EINVAL,
                                 "sl_pipeline_add_source: source '%s' needs shape and fill",
                                 name ? name : "");
    return add_entry(p, "sl_pipeline_add_source", name, src);
}

sl_status sl_pipeline_add_function(sl_pipeline *p, const char *name, const sl_function *fn) {
    if (!fn || !fn->call)
        return sl__pipeline_fail(p, SL_EINVAL, "sl_pipeline_add_function: '%s' needs call",
                                 name ? name : "");
    sl_function *copy = malloc(sizeof *copy);
    if (!copy) return sl__pipeline_fail(p, SL_ENOMEM, "out of memory");
    *copy = *fn;
    sl_source entry;
    memset(&entry, 0, sizeof entry);
    entry.user = copy;
    sl_status st = add_entry(p, "sl_pipeline_add_function", name, &entry);
    if (st != SL_OK) free(copy);
    return st;
}

/* ---- builder --------------------------------------------------------------------------------- */

sl_pipeline_op *sl_pipeline_op_begin(sl_pipeline *p, const char *op_name) {
    if (p->built) {
        sl__pipeline_fail(p, SL_ESTATE, "ops cannot be added after sl_pipeline_build");
        return NULL;
    }
    const sl__op_def *def = sl__registry_find(op_name);
    if (!def) {
        const char *s = sl__registry_suggest(op_name);
        if (s)
            sl__pipeline_fail(p, SL_EINVAL, "unknown operator '%s'; did you mean '%s'?", op_name,
                              s);
        else
            sl__pipeline_fail(p, SL_EINVAL, "unknown operator '%s' (sluice ops lists them)",
                              op_name);
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
        return op->status = sl__pipeline_fail(op->p, SL_EINVAL,
                                              "%s: input %d is not a node of this pipeline",
                                              op->def->name, node);
    if (sl__pipeline_grow((void **)&op->inputs, &op->inputs_cap, op->ninputs + 1,
                          sizeof *op->inputs, &op->p->err))
        return op->status = op->p->err.status;
    op->inputs[op->ninputs++] = node;
    return SL_OK;
}

sl_status sl_pipeline_op_device(sl_pipeline_op *op, const char *device) {
    if (op->status) return op->status;
    if (strcmp(device, "cpu") && strcmp(device, "mixed") && strcmp(device, "gpu"))
        return op->status =
                   sl__pipeline_fail(op->p, SL_EINVAL, "%s: device \"%s\" (cpu, mixed or gpu)",
                                     op->def->name, device);
    snprintf(op->device, sizeof op->device, "%s", device);
    return SL_OK;
}

static sl_status arg_value(sl_pipeline_op *op, const char *name, sl__val *v_);

static sl_status add_arg(sl_pipeline_op *op, const char *name, sl__val *v) {
    int cap = op->args_cap;
    if (sl__pipeline_grow((void **)&op->argnames, &cap, op->nargs + 1, sizeof *op->argnames,
                          &op->p->err) ||
        sl__pipeline_grow((void **)&op->argvals, &op->args_cap, op->nargs + 1, sizeof *op->argvals,
                          &op->p->err)) {
        sl__val_free(v);
        return op->status = op->p->err.status;
    }
    op->argnames[op->nargs] = strdup(name);
    if (!op->argnames[op->nargs]) {
        sl__val_free(v);
        return op->status = sl__pipeline_fail(op->p, SL_ENOMEM, "out of memory");
    }
    op->argvals[op->nargs++] = *v;
    return SL_OK;
}

sl_status sl_pipeline_op_arg(sl_pipeline_op *op, const char *name, const char *value) {
    if (op->status) return op->status;
    sl__val v;
    sl_err e;
    if (!value)
        return op->status = sl__pipeline_fail(op->p, SL_EINVAL, "%s: argument %s: no value (NULL)",
                                              op->def->name, name);
    if (sl__val_parse(value, &v, &e) != SL_OK) /* a string is quoted: "\"CHW\"" */
        return op->status = sl__pipeline_fail(op->p, SL_EINVAL, "%s: argument %s: %s",
                                              op->def->name, name, e.msg);
    return arg_value(op, name, &v);
}

sl_status sl__pipeline_op_arg_val(sl_pipeline_op *op, const char *name, const sl__val *value) {
    if (op->status) return op->status;
    sl__val v;
    if (sl__val_copy(&v, value, &op->p->err) != SL_OK) return op->status = op->p->err.status;
    return arg_value(op, name, &v);
}

/* Takes the argument's value v (freed here, or kept by the op): device and name are the
 * pipeline's, seed also sets the instance's seed; the rest go to the op's schema at op_end. */
static sl_status arg_value(sl_pipeline_op *op, const char *name, sl__val *v_) {
    sl__val v = *v_;
    if (!strcmp(name, "device")) {
        sl_status st =
            v.kind == SL_VAL_STR
                ? sl_pipeline_op_device(op, v.s)
                : sl__pipeline_fail(op->p, SL_EINVAL, "%s: device must be a string", op->def->name);
        sl__val_free(&v);
        return op->status = st;
    }
    if (!strcmp(name, "name")) {
        if (v.kind != SL_VAL_STR) {
            sl__val_free(&v);
            return op->status = sl__pipeline_fail(op->p, SL_EINVAL, "%s: name must be a string",
                                                  op->def->name);
        }
        size_t len = strlen(v.s);
        if (len == 0 || len >= sizeof op->name) {
            sl__val_free(&v);
            return op->status =
                       sl__pipeline_fail(op->p, SL_EINVAL, "%s: name of %zu characters (1..%zu)",
                                         op->def->name, len, sizeof op->name - 1);
        }
        snprintf(op->name, sizeof op->name, "%s", v.s);
        op->named = true;
        sl__val_free(&v);
        return SL_OK;
    }
    if (!strcmp(name, "seed") && v.kind == SL_VAL_INT) {
        if (v.i < -1)
            return op->status = sl__pipeline_fail(
                       op->p, SL_EINVAL,
                       "%s: seed must be >= 0, or -1 for the pipeline's (got %lld)", op->def->name,
                       (long long)v.i); /* an int: nothing to free */
        op->seed = v.i;
    }
    return add_arg(op, name, &v);
}

sl_status sl_pipeline_op_arg_node(sl_pipeline_op *op, const char *name, int node) {
    if (op->status) return op->status;
    if (!node_ok(op->p, node))
        return op->status = sl__pipeline_fail(op->p, SL_EINVAL, "%s: argument %s: %d is not a node",
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
    free(op->argnames);
    free(op->argvals);
    free(op->inputs);
    free(op);
}

sl_status sl__pipeline_grow(void **arr, int *cap, int need, size_t elem, sl_err *err) {
    if (need <= *cap) return SL_OK;
    if (need > SL__GRAPH_MAX)
        return sl_err_set(err, SL_EINVAL,
                          "the pipeline's graph would pass %d entries (nodes, ops, an op's "
                          "inputs or arguments): each node is a sample list in every batch slot",
                          SL__GRAPH_MAX);
    int ncap = *cap ? *cap * 2 : 8;
    while (ncap < need) ncap *= 2;
    void *n = realloc(*arr, (size_t)ncap * elem);
    if (!n) return sl_err_set(err, SL_ENOMEM, "out of memory growing the pipeline graph");
    memset((char *)n + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
    *arr = n;
    *cap = ncap;
    return SL_OK;
}

static sl_status add_node(sl_pipeline *p, int op, int out, int src, bool gpu, int *id) {
    SL_TRY(sl__pipeline_grow((void **)&p->nodes, &p->nodes_cap, p->nnodes + 1, sizeof *p->nodes,
                             &p->err));
    /* an op's output is of the branch it runs in; a transfer's of its source's */
    int scope = src >= 0 ? p->nodes[src].scope : p->cur_scope;
    p->nodes[p->nnodes] = (sl__node){op, out, src, gpu, scope};
    *id = p->nnodes++;
    return SL_OK;
}

static bool cuda_pipeline(const sl_pipeline *p) {
    return p->cfg.device.kind == SL_DEVICE_CUDA;
}

/* Whether node n's shapes are known in the CPU stage: always on a CPU pipeline (every op runs
 * there, in graph order); on a CUDA pipeline when a mixed op made it (its setup runs in the CPU
 * stage; a gpu op's and a transfer's run in the GPU stage, after). */
static bool shapes_known_on_cpu(const sl_pipeline *p, int n) {
    if (!cuda_pipeline(p)) return true;
    while (p->nodes[n].op == SL__NODE_ALIAS) n = p->nodes[n].src;
    return p->nodes[n].op >= 0 && p->ops[p->nodes[n].op].placement == SL_OPDEV_MIXED;
}

/* The per-sample arguments' nodes into inst's arg inputs, each argument renumbered to its slot. */
static sl_status arg_inputs(sl_pipeline_op *op, sl__opinst *inst) {
    sl_pipeline *p = op->p;
    int cap = 0;
    for (int i = 0; i < op->nargs; i++) {
        if (op->argvals[i].kind != SL_VAL_NODE) continue;
        int node = op->argvals[i].node;
        if (p->nodes[node].gpu) {
            snprintf(p->failed_arg, sizeof p->failed_arg, "%s", op->argnames[i]);
            return sl__pipeline_fail(p, SL_EINVAL, "%s: argument %s must come from a CPU node",
                                     op->def->name, op->argnames[i]);
        }
        SL_TRY(sl__pipeline_grow((void **)&inst->arg_inputs, &cap, inst->narg_inputs + 1,
                                 sizeof *inst->arg_inputs, &p->err));
        inst->arg_inputs[inst->narg_inputs] = node;
        op->argvals[i].node = inst->narg_inputs++;
    }
    return SL_OK;
}

sl_status sl_pipeline_op_end(sl_pipeline_op *op, int *out_nodes, int max_out, int *count) {
    sl_pipeline *p = op->p;
    const sl__op_def *def = op->def;
    sl_status st = op->status;
    sl__opinst inst; /* what the op becomes */
    memset(&inst, 0, sizeof inst);
    if (count) *count = 0;
    p->failed_arg[0] = '\0';
    if (st) goto done;
    /* in a conditional branch: its inputs as the branch's samples (pipeline_cond.c) */
    if ((st = sl__pipeline_cond_inputs(p, op)) != SL_OK) goto done;

    /* device: as written, else gpu when an input is on the GPU (DALI's rule) */
    unsigned placement = SL_OPDEV_CPU;
    bool any_gpu = false;
    for (int i = 0; i < op->ninputs; i++) any_gpu |= p->nodes[op->inputs[i]].gpu;
    if (!strcmp(op->device, "mixed"))
        placement = SL_OPDEV_MIXED;
    else if (!strcmp(op->device, "gpu") || (!op->device[0] && any_gpu))
        placement = SL_OPDEV_GPU;
    /* a placement DALI has for the op, whatever this build and pipeline run: "mixed" where the
     * op has it; "gpu" except for readers (readers.numpy has one) and mixed-only ops (decoders) */
    bool dali_has = placement == SL_OPDEV_CPU ? (def->devices & SL_OPDEV_CPU) != 0
                    : placement == SL_OPDEV_MIXED
                        ? (def->devices & SL_OPDEV_MIXED) != 0
                        : (!(def->flags & SL_OPF_READER) || !strcmp(def->name, "readers.numpy")) &&
                              ((def->devices & SL_OPDEV_GPU) || !(def->devices & SL_OPDEV_MIXED));
    /* on a CPU pipeline mixed and gpu ops run on the CPU: they need a CPU implementation */
    bool supported =
        (def->devices & placement) ||
        (dali_has && !cuda_pipeline(p) && (def->devices & (SL_OPDEV_CPU | SL_OPDEV_MIXED)));
    /* an op DALI has on the GPU and sluice on the CPU alone, given no GPU data: it runs on the
     * CPU (a CUDA pipeline then copies its outputs over) and they count as GPU data */
    bool hosted = placement == SL_OPDEV_GPU && dali_has && !(def->devices & SL_OPDEV_GPU) &&
                  (def->devices & SL_OPDEV_CPU) && !any_gpu;
    if (hosted) placement = SL_OPDEV_CPU, supported = true;
    if (!supported) {
        bool cpu_only = placement == SL_OPDEV_GPU && (def->devices & SL_OPDEV_CPU);
        st = sl__pipeline_fail(p, SL_EINVAL, "%s cannot run on device \"%s\"%s", def->name,
                               placement == SL_OPDEV_GPU     ? "gpu"
                               : placement == SL_OPDEV_MIXED ? "mixed"
                                                             : "cpu",
                               !cpu_only ? ""
                               : def->flags & SL_OPF_READER
                                   ? ": it runs on the CPU only (as in DALI)"
                                   : ": it runs on the CPU only, so give it CPU inputs (x.cpu())");
        goto done;
    }
    for (int k = 0; op->named && k < p->nops; k++)
        if (!strcmp(p->ops[k].name, op->name)) {
            st = sl__pipeline_fail(p, SL_EINVAL,
                                   "%s: name \"%s\" is taken by another op of the pipeline (op %d, "
                                   "%s): names must be unique",
                                   def->name, op->name, k, p->ops[k].def->name);
            goto done;
        }
    if (op->ninputs < def->min_inputs || op->ninputs > def->max_inputs) {
        if (def->max_inputs == INT_MAX)
            st = sl__pipeline_fail(p, SL_EINVAL, "%s takes at least %d inputs, got %d", def->name,
                                   def->min_inputs, op->ninputs);
        else
            st = sl__pipeline_fail(p, SL_EINVAL, "%s takes %d..%d inputs, got %d", def->name,
                                   def->min_inputs, def->max_inputs, op->ninputs);
        goto done;
    }
    for (int i = 0; i < op->ninputs; i++) {
        bool gpu_in = p->nodes[op->inputs[i]].gpu;
        if (placement == SL_OPDEV_CPU && gpu_in && (def->flags & SL_OPF_SHAPES) &&
            shapes_known_on_cpu(p, op->inputs[i]))
            continue; /* (DALI's x.shape() of GPU data: the shapes are on the host) */
        if (placement != SL_OPDEV_GPU && gpu_in) {
            st = sl__pipeline_fail(p, SL_EINVAL,
                                   "%s (device \"%s\") cannot take input %d, which is on the GPU",
                                   def->name, placement == SL_OPDEV_MIXED ? "mixed" : "cpu", i);
            goto done;
        }
        if (placement == SL_OPDEV_GPU && !gpu_in) {
            st = sl__pipeline_fail(
                p, SL_EINVAL, "%s (device \"gpu\") takes GPU inputs: call .gpu() on input %d first",
                def->name, i);
            goto done;
        }
    }

    if ((st = arg_inputs(op, &inst)) != SL_OK) goto done;
    int bad;
    st = sl__args_build_at(def, op->nargs, (const char *const *)op->argnames, op->argvals,
                           &inst.args, &bad, &p->err);
    if (st) {
        if (bad >= 0) snprintf(p->failed_arg, sizeof p->failed_arg, "%s", op->argnames[bad]);
        /* the schema's messages start with the op's name; add the instance's when it differs */
        if (strcmp(op->name, def->name) != 0) sl_err_prefix(&p->err, "%s: ", op->name);
        goto done;
    }
    inst.args.num_inputs = op->ninputs;
    int nout = def->num_outputs ? def->num_outputs(&inst.args) : 1;
    if (nout < 0 || nout > SL__GRAPH_MAX / 2) {
        bool given = sl__args_given(&inst.args, "num_outputs");
        long long asked = given ? (long long)sl__args_int(&inst.args, "num_outputs") : nout;
        sl__args_free(&inst.args);
        st = sl__pipeline_fail(p, SL_EINVAL, "%s: %s%lld outputs (0..%d)", def->name,
                               given ? "num_outputs: " : "", asked, SL__GRAPH_MAX / 2);
        goto done;
    }
    if ((def->flags & SL_OPF_READER) && p->reader_op < 0) p->reader_op = p->nops;
    st = sl__pipeline_grow((void **)&p->ops, &p->ops_cap, p->nops + 1, sizeof *p->ops, &p->err);
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
    inst.inputs = op->inputs; /* the instance's now */
    op->inputs = NULL;
    inst.nout = nout;
    inst.first_node = p->nnodes;
    inst.scope = p->cur_scope;
    inst.seed = op->seed >= 0 ? (uint64_t)op->seed : sl__rng_mix(p->cfg.seed, (uint64_t)p->nops);
    bool moved = (mixed_on_cpu || hosted) && cuda_pipeline(p); /* made on the host, then copied */
    inst.moved = moved;
    p->ops[p->nops] = inst;
    for (int k = 0; k < nout && st == SL_OK; k++) {
        int id;
        st = add_node(p, p->nops, k, -1, (placement != SL_OPDEV_CPU || hosted) && !moved, &id);
        if (st == SL_OK && moved) st = add_node(p, SL__NODE_TRANSFER, 0, id, true, &id);
        if (st == SL_OK && k < max_out) out_nodes[k] = id;
    }
    p->nops++;
    if (count) *count = nout;
done:
    if (st != SL_OK) free(inst.arg_inputs);
    op_free(op);
    return st;
}

int sl_pipeline_last_op_output(const sl_pipeline *p, int k) {
    const sl__opinst *op = p->nops ? &p->ops[p->nops - 1] : NULL;
    if (!op || k < 0 || k >= op->nout) return -1;
    return op->first_node + (op->moved ? 2 * k + 1 : k); /* (a transfer follows each output) */
}

sl_status sl_pipeline_transfer(sl_pipeline *p, int node, sl_device_kind to, int *out_node) {
    if (!node_ok(p, node))
        return sl__pipeline_fail(p, SL_EINVAL, "transfer of %d: not a node", node);
    bool want_gpu = to == SL_DEVICE_CUDA;
    if (p->nodes[node].gpu == want_gpu) {
        *out_node = node; /* already there */
        return SL_OK;
    }
    if (!cuda_pipeline(p)) /* the data stays where it is; only its placement changes */
        return add_node(p, SL__NODE_ALIAS, 0, node, want_gpu, out_node);
    if (!want_gpu)
        return sl__pipeline_fail(p, SL_ENOTSUP, ".cpu() of GPU data is not supported yet");
    return add_node(p, SL__NODE_TRANSFER, 0, node, true, out_node);
}

sl_status sl_pipeline_set_outputs(sl_pipeline *p, int n, const int *nodes,
                                  const char *const *names) {
    if (p->built)
        return sl__pipeline_fail(p, SL_ESTATE, "outputs cannot be set after sl_pipeline_build");
    if (n < 1) return sl__pipeline_fail(p, SL_EINVAL, "%d pipeline outputs (at least 1)", n);
    for (int i = 0; i < n; i++) {
        if (!node_ok(p, nodes[i]))
            return sl__pipeline_fail(p, SL_EINVAL, "output %d: not a node", i);
        if (p->nodes[nodes[i]].scope != 0)
            return sl__pipeline_fail(p, SL_EINVAL,
                                     "output %d is data of a conditional branch (only some "
                                     "samples have it): merge it after the `if` first",
                                     i);
    }
    int *outs = sl__malloc((size_t)n * sizeof *outs, &p->err);
    char **nm = sl__calloc((size_t)n, sizeof *nm, &p->err);
    for (int i = 0; outs && nm && i < n; i++) {
        char dflt[24];
        snprintf(dflt, sizeof dflt, "out%d", i);
        if (!(nm[i] = strdup(names && names[i] ? names[i] : dflt))) break;
        outs[i] = nodes[i];
    }
    if (!outs || !nm || !nm[n - 1]) {
        for (int i = 0; nm && i < n; i++) free(nm[i]);
        free(nm);
        free(outs);
        return sl__pipeline_fail(p, SL_ENOMEM, "out of memory setting %d outputs", n);
    }
    for (int o = 0; o < p->nout; o++) free(p->output_names[o]);
    free(p->output_names);
    free(p->outputs);
    p->outputs = outs;
    p->output_names = nm;
    p->nout = n;
    return SL_OK;
}

sl_status sl_pipeline_build(sl_pipeline *p) {
    if (p->built) return sl__pipeline_fail(p, SL_ESTATE, "sl_pipeline_build called twice");
    if (p->nops == 0) return sl__pipeline_fail(p, SL_EINVAL, "the pipeline has no operators");
    if (p->cur_scope != 0)
        return sl__pipeline_fail(p, SL_EINVAL, "a conditional is still open (sl_pipeline_endif)");
    if (p->nout == 0)
        return sl__pipeline_fail(p, SL_EINVAL, "the pipeline has no outputs (set_outputs)");
    for (int n = 0; n < p->nnodes; n++) p->gpu_stage |= p->nodes[n].op == SL__NODE_TRANSFER;
    for (int k = 0; k < p->nops; k++) {
        const sl__opinst *op = &p->ops[k];
        p->gpu_stage |= op->on_gpu || op->split;
        /* an op whose setup does everything (reshape: views) runs anywhere */
        bool setup_only = !op->def->run_cpu && !op->def->run_gpu;
        if (op->on_gpu && !op->def->run_gpu && !setup_only)
            return sl__pipeline_fail(p, SL_ENOTSUP,
                                     "%s has no GPU implementation: place it on the CPU", op->name);
        if (!op->on_gpu && !op->split && !op->def->run_cpu && !setup_only)
            return sl__pipeline_fail(p, SL_ENOTSUP, "%s has no CPU implementation", op->name);
        if (!op->def->setup && setup_only)
            return sl__pipeline_fail(p, SL_EINVAL, "%s has nothing to run", op->name);
    }
#ifndef SLUICE_HAVE_CUDA
    SL_ASSERT(!p->gpu_stage); /* a CUDA pipeline cannot be created without CUDA */
#endif
    SL_TRY(sl__pipeline_resolve_batch_limit(p));
    SL_TRY(sl__pipeline_create_ops(p));
    p->stats.num_ops = p->nops < 32 ? p->nops : 32;
    SL_TRY(sl__pipeline_checkpoint_apply(p));
    SL_TRY(sl__pipeline_exec_start(p));
    p->built = true;
    return SL_OK;
}

void sl_pipeline_stop(sl_pipeline *p) {
    if (!p) return;
    p->stopped = true;
    if (p->free_q) sl__queue_close(p->free_q);
    if (p->read_q) sl__queue_close(p->read_q);
    if (p->mid_q) sl__queue_close(p->mid_q);
    if (p->ready_q) sl__queue_close(p->ready_q);
    if (p->read_thread_started) pthread_join(p->read_thread, NULL);
    if (p->cpu_thread_started) pthread_join(p->cpu_thread, NULL);
    if (p->gpu_thread_started) pthread_join(p->gpu_thread, NULL);
    p->read_thread_started = p->cpu_thread_started = p->gpu_thread_started = false;
    sl__pool_free(p->pool);
    p->pool = NULL;
}

void sl_pipeline_free(sl_pipeline *p) {
    if (!p) return;
    sl_pipeline_stop(p);
#ifdef SLUICE_HAVE_CUDA
    sl__cuda_stream_destroy(p->stream);
    sl__alloc_pinned_free(p->xfer_pinned);
#endif
    for (int k = 0; k < p->nops; k++) {
        if (p->ops[k].state && p->ops[k].def->destroy) p->ops[k].def->destroy(p->ops[k].state);
        free(p->ops[k].at_run);
        sl__args_free(&p->ops[k].args);
        free(p->ops[k].inputs);
        free(p->ops[k].arg_inputs);
    }
    for (int o = 0; o < p->nout; o++) free(p->output_names[o]);
    free(p->outputs);
    free(p->output_names);
    for (int s = 0; p->slots && s < p->nslots; s++) {
        sl_batch *b = &p->slots[s];
        for (int n = 0; b->nodes && n < p->nnodes; n++) sl_tlist_free(&b->nodes[n]);
        for (int o = 0; b->dense && o < p->nout; o++) sl_tlist_free(&b->dense[o]);
        for (int k = 0; b->op_state && k < p->nops; k++)
            if (b->op_state[k] && p->ops[k].def->free_batch_state)
                p->ops[k].def->free_batch_state(b->op_state[k]);
        free(b->op_state);
        for (int k = 0; b->frames && k < p->nops; k++) {
            sl__seq_free(b->frames[k]);
            free(b->frames[k]);
        }
        free(b->frames);
        for (int k = 0; b->infos && k < p->nops; k++) {
            for (int i = 0; b->infos[k] && i < p->cfg.batch_size; i++) free(b->infos[k][i]);
            free(b->infos[k]);
            if (b->info_cap) free(b->info_cap[k]);
        }
        free(b->infos);
        free(b->info_cap);
        free(b->node_info);
        free(b->dense);
        free(b->use_dense);
        for (int i = 0; b->keys && i < p->cfg.batch_size; i++) free(b->keys[i]);
        free(b->nodes);
        free(b->keys);
        free(b->key_cap);
        free(b->scope_n);
        free(b->scope_keys);
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
    free(p->scopes);
    free(p->splits);
    for (int i = 0; i < p->nsources; i++)
        if (!p->sources[i].src.shape) free(p->sources[i].src.user); /* a function's copy */
    free(p->sources);
    pthread_mutex_destroy(&p->snap_mu);
    pthread_cond_destroy(&p->snap_cv);
    pthread_mutex_destroy(&p->stats_mu);
    free(p);
}

/* ---- accessors ------------------------------------------------------------------------------- */

int sl_pipeline_num_outputs(const sl_pipeline *p) {
    return p->nout;
}
const char *sl_pipeline_output_name(const sl_pipeline *p, int i) {
    return i >= 0 && i < p->nout ? p->output_names[i] : NULL;
}
int sl_pipeline_batch_size(const sl_pipeline *p) {
    return p->cfg.batch_size;
}
int sl_pipeline_num_threads(const sl_pipeline *p) {
    return p->cfg.num_threads;
}
sl_device sl_pipeline_device(const sl_pipeline *p) {
    return p->cfg.device;
}

/* the most sl_pipeline_default_threads gives, a bound for many-core hosts: each worker keeps
 * decoders and scratch buffers of its own */
#define SL__MAX_DEFAULT_THREADS 64

int sl__pipeline_threads_for(int cpus, int pipelines) {
    int share = cpus / (pipelines > 1 ? pipelines : 1) - 1;
    return share < 1 ? 1 : share > SL__MAX_DEFAULT_THREADS ? SL__MAX_DEFAULT_THREADS : share;
}

int sl_pipeline_default_threads(int pipelines) {
    return sl__pipeline_threads_for(sl_cpu_count(), pipelines);
}

sl_status sl_pipeline_reader_meta(sl_pipeline *p, const char *name, sl_reader_meta *out) {
    if (!p->built) return sl__pipeline_fail(p, SL_ESTATE, "reader meta before sl_pipeline_build");
    for (int k = 0; k < p->nops; k++) {
        sl__opinst *op = &p->ops[k];
        if (!(op->def->flags & SL_OPF_READER) || !op->def->reader_meta) continue;
        if (name && *name && strcmp(op->name, name) != 0) continue;
        return op->def->reader_meta(op->state, out);
    }
    if (name && *name)
        return sl__pipeline_fail(p, SL_ENOENT, "no reader named \"%s\" in the pipeline", name);
    return sl__pipeline_fail(p, SL_ENOENT, "the pipeline has no reader");
}

int sl__pipeline_num_readers(const sl_pipeline *p) {
    int n = 0;
    for (int k = 0; k < p->nops; k++) n += (p->ops[k].def->flags & SL_OPF_READER) != 0;
    return n;
}

int sl_pipeline_num_readers(const sl_pipeline *p) {
    return sl__pipeline_num_readers(p);
}

const sl_err *sl__pipeline_err(const sl_pipeline *p) {
    return &p->err;
}

void sl__pipeline_set_err(sl_pipeline *p, const sl_err *err) {
    sl_err_copy(&p->err, err);
}

const char *sl__pipeline_failed_arg(const sl_pipeline *p) {
    return p->failed_arg[0] ? p->failed_arg : NULL;
}

int64_t sl__pipeline_taken(const sl_pipeline *p) {
    return p->taken;
}

int sl__pipeline_num_sources(const sl_pipeline *p) {
    return p->nsources;
}

const char *sl__pipeline_source_name(const sl_pipeline *p, int i) {
    return i >= 0 && i < p->nsources ? p->sources[i].name : NULL;
}

const char *sl_pipeline_reader_name(const sl_pipeline *p, int i) {
    for (int k = 0; k < p->nops; k++)
        if ((p->ops[k].def->flags & SL_OPF_READER) && i-- == 0) return p->ops[k].name;
    return NULL;
}
