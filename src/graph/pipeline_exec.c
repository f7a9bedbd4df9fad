/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline's executor: stage threads that run a built graph's ops on recycled batch slots
 * ahead of the consumer, the queues between them, and the batches they hand out.
 *
 * Each batch goes through the ops in graph order: an op's setup (per-sample decisions, output
 * sizes) then its run_cpu for every sample on the thread pool. Batches flow free queue -> [read
 * stage ->] CPU stage [-> GPU stage] -> ready queue -> consumer -> free queue, so prefetch_cpu
 * batches are prepared while the consumer works, and every buffer is reused from batch to batch.
 * When CPU work follows the readers (a decoder, say), the readers run in a read stage of their own,
 * so that reading batch k + 1 overlaps the rest of batch k's CPU work: their outputs must stay
 * valid while later batches are read anyway, since the GPU stage runs behind the CPU stage. Errors
 * travel with their batch and come back, in order, from sl_pipeline_next. Before producing batch k
 * the first stage snapshots the state of every op into the ring of pipeline_checkpoint.c. */
#include "graph/pipeline_exec.h"

#include "graph/pipeline_checkpoint.h"
#include "graph/pipeline_run.h"
#include "graph/pipeline_int.h"

#include "operator/sequence.h"

#include "core/alloc.h"
#include "core/log.h"
#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"
#endif

#include "core/size.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The sample list holding node id's data in batch b (aliases resolved). */
static sl_tlist *node_list(const sl_pipeline *p, sl_batch *b, int id) {
    while (p->nodes[id].op == SL__NODE_ALIAS) id = p->nodes[id].src;
    return &b->nodes[id];
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

/* Node id's per-sample source info in batch b, or NULL: an alias's or a transfer's is that of the
 * node it copies (set_info sets only ops' outputs). */
static const char *const *node_info(const sl_pipeline *p, const sl_batch *b, int id) {
    while (p->nodes[id].op == SL__NODE_ALIAS || p->nodes[id].op == SL__NODE_TRANSFER)
        id = p->nodes[id].src;
    return b->node_info[id];
}

/* After op k ran on batch b: its outputs' source info. A reader's (n samples) is copied into the
 * batch; SL_OPF_INFO ops make their own (copied the same way); other ops pass on their first
 * input's, except the conditional splits and merges, whose samples are not their input's in
 * order. */
static sl_status set_info(sl_pipeline *p, int k, sl_batch *b, const char *const *info, int n,
                          sl_err *err) {
    const sl__opinst *op = &p->ops[k];
    const char *const *to = NULL;
    if (op->def->flags & (SL_OPF_READER | SL_OPF_INFO) && info) {
        if (!b->infos[k] &&
            (!(b->infos[k] = sl__calloc((size_t)p->cfg.batch_size, sizeof *b->infos[k], err)) ||
             !(b->info_cap[k] =
                   sl__calloc((size_t)p->cfg.batch_size, sizeof *b->info_cap[k], err))))
            return SL_ENOMEM;
        for (int i = 0; i < n && i < p->cfg.batch_size; i++) {
            size_t len = strlen(info[i] ? info[i] : "") + 1;
            if (len > b->info_cap[k][i]) {
                char *s = realloc(b->infos[k][i], len < 64 ? 64 : len);
                if (!s) return sl_err_set(err, SL_ENOMEM, "out of memory copying source info");
                b->infos[k][i] = s;
                b->info_cap[k][i] = len < 64 ? 64 : len;
            }
            memcpy(b->infos[k][i], info[i] ? info[i] : "", len);
        }
        to = (const char *const *)b->infos[k];
    } else if (!(op->def->flags & (SL_OPF_READER | SL_OPF_SPLIT | SL_OPF_MERGE))) {
        to = info;
    }
    for (int i = 0; i < op->nout; i++) b->node_info[sl__opinst_out_node(op, i)] = to;
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

/* A sample's random streams: its place in this pipeline's batches, or in the global batches it
 * shares. Batches are batch_size apart whatever their own size, so that a sample's streams do not
 * depend on how many samples its batch has. */
static int64_t sample_base(const sl_pipeline *p, const sl_batch *b) {
    return p->cfg.global_shards > 0
               ? (b->seq * p->cfg.global_shards + p->cfg.global_shard) * p->cfg.batch_size
               : b->seq * p->cfg.batch_size;
}

/* An op that decides batch sizes, for messages: its name and source ("external_source (source
 * 'a')"). */
static const char *count_op(const sl__opinst *op, char *buf, size_t size) {
    const sl__val *v =
        sl__args_given(&op->args, "source") ? sl__args_get(&op->args, "source") : NULL;
    if (v && v->kind == SL_VAL_STR)
        snprintf(buf, size, "%s (source '%s')", op->name, v->s);
    else
        snprintf(buf, size, "%s", op->name);
    return buf;
}

/* DALI's variable batch size: batch b's size is what its external sources say (each op with a
 * count hook), at most batch_size; they must agree, and readers give only full batches. */
static sl_status batch_count(sl_pipeline *p, sl_batch *b, sl_err *err) {
    int max = p->cfg.batch_size, n = max, from = -1;
    int64_t it = sample_base(p, b) / max; /* as sl_source_info.iteration */
    for (int k = 0; k < p->nops; k++) {
        const sl__opinst *op = &p->ops[k];
        if (!op->def->count) continue;
        int m = -1;
        sl_status st = op->def->count(op->state, it, max, &m, err);
        if (st < 0) {
            if (!strstr(err->msg, op->name)) sl_err_prefix(err, "%s: ", op->name);
            return st;
        }
        SL_ASSERT(m >= 0 && m <= max);
        if (from < 0) {
            n = m;
            from = k;
        } else if (m != n) {
            char a[160], c[160];
            return sl_err_set(err, SL_EINVAL,
                              "batch %lld: %s gives %d samples but %s gives %d: the external "
                              "sources of one batch must give as many",
                              (long long)it, count_op(&p->ops[from], a, sizeof a), n,
                              count_op(op, c, sizeof c), m);
        }
    }
    if (from >= 0 && n != max && p->reader_op >= 0) {
        char a[160];
        return sl_err_set(err, SL_EINVAL,
                          "batch %lld: %s gives %d samples, but the reader %s gives full batches "
                          "of %d (batch_size)",
                          (long long)it, count_op(&p->ops[from], a, sizeof a), n,
                          p->ops[p->reader_op].name, max);
    }
    b->size = n;
    b->scope_n[0] = n;
    return SL_OK;
}

/* Runs op k on batch b. In the CPU stage (gpu_half false): its setup, then its per-sample run on
 * the pool. In the GPU stage (gpu_half true): a gpu op's setup then its run_gpu, or a split op's
 * run_gpu alone, on the stage's stream. */
static sl_status run_op(sl_pipeline *p, int k, sl_batch *b, bool gpu_half, sl_err *err) {
    sl__opinst *op = &p->ops[k];
    if (op->at_run) return sl_err_copy(err, op->at_run); /* create's, which DALI gives here */
    /* the op's lists: inputs, per-sample arguments, outputs (on the heap past a few dozen; not
     * kept in the op, whose two halves may run at once on different batches) */
    sl_tlist *few[32], **lists = few;
    size_t nl = (size_t)op->ninputs + (size_t)op->narg_inputs + (size_t)op->nout;
    if (nl > SL_ARRAY_LEN(few) && !(lists = sl__malloc(nl * sizeof *lists, err)))
        return sl_err_prefix(err, "%s: ", op->name);
    sl_tlist **in = lists, **arg_in = lists + op->ninputs, **out = arg_in + op->narg_inputs;
    for (int i = 0; i < op->ninputs; i++) in[i] = node_list(p, b, op->inputs[i]);
    for (int i = 0; i < op->narg_inputs; i++) arg_in[i] = node_list(p, b, op->arg_inputs[i]);
    for (int i = 0; i < op->nout; i++) out[i] = &b->nodes[sl__opinst_out_node(op, i)];
    sl__op_io io;
    memset(&io, 0, sizeof io);
    io.batch = b->scope_n[op->scope]; /* its branch's samples (pipeline_cond.c) */
    io.num_inputs = op->ninputs;
    io.in = in;
    io.num_arg_inputs = op->narg_inputs;
    io.arg_in = arg_in;
    io.num_outputs = op->nout;
    io.out = out;
    const char *const *keys = op->scope
                                  ? b->scope_keys + (size_t)op->scope * (size_t)p->cfg.batch_size
                                  : (const char *const *)b->keys;
    io.keys = keys;
    io.source_info = op->ninputs > 0 ? node_info(p, b, op->inputs[0]) : NULL;
    const char *const *in_info[16];
    if (op->def->flags & SL_OPF_INFO) {
        for (int i = 0; i < op->ninputs && i < 16; i++) in_info[i] = node_info(p, b, op->inputs[i]);
        io.in_info = in_info;
    }
    io.source = k == p->reader_op ? NULL : reader_source(p);
    io.seed = op->seed;
    io.sample_base = sample_base(p, b);
    io.iteration = b->seq;
    bool dev = op->on_gpu || op->split;
    io.device = dev ? p->cfg.device : sl_cpu();
    io.stream = dev ? p->stream : NULL;
    io.batch_state = &b->op_state[k];
    double t0 = now_s();
    sl_status st = SL_OK;
    /* an op that takes sequences runs on their frames (operator/sequence.h) */
    sl__op_io *rio = &io;
    bool expand = false;
    if (!gpu_half || op->on_gpu)
        st = sl__seq_check(op->def, &op->args, op->name, &io, &expand, err);
    if (st == SL_OK && expand) {
        if (!b->frames[k] && !(b->frames[k] = sl__calloc(1, sizeof *b->frames[k], err)))
            st = SL_ENOMEM;
        if (st == SL_OK) st = sl__seq_expand(b->frames[k], op->def, &op->args, op->name, &io, err);
        if (st == SL_OK) rio = &b->frames[k]->io;
    }
    if (st == SL_OK && gpu_half) {
        if (op->on_gpu && op->def->setup) st = op->def->setup(op->state, rio, err);
        if (st == SL_OK && op->def->run_gpu) st = op->def->run_gpu(op->state, rio, err);
    } else if (st == SL_OK) {
        if (op->def->setup) st = op->def->setup(op->state, rio, err);
        if (st == SL_OK && k == p->reader_op) st = copy_keys(b, io.keys, err);
        io.keys = k == p->reader_op ? (const char *const *)b->keys : keys;
        int n = rio->run_index ? rio->run_count : rio->batch; /* setup may leave samples out */
        if (st == SL_OK && op->def->run_cpu && (n > 0 || rio->batch_job)) {
            st = sl__run_cpu_batch(p->pool, op, rio, n, err);
            pthread_mutex_lock(&p->stats_mu);
            op->pool_jobs++;
            op->pool_samples += n;
            pthread_mutex_unlock(&p->stats_mu);
        }
    }
    if (st == SL_OK && rio != &io) st = sl__seq_fold(b->frames[k], op->name, &io, err);
    if (st == SL_OK) st = set_info(p, k, b, io.source_info, io.batch, err);
    if (st == SL_OK) {
        for (int i = 0; i < op->nout; i++) {
            int want = b->scope_n[p->nodes[sl__opinst_out_node(op, i)].scope];
            if (out[i]->count != want)
                st = sl_err_set(err, SL_EINVAL, "%s: output %d has %d samples, batch is %d",
                                op->name, i, out[i]->count, want);
        }
    }
    if (st < 0 && !strstr(err->msg, op->name) && !strstr(err->msg, op->def->name))
        sl_err_prefix(err, "%s: ", op->name);
    pthread_mutex_lock(&p->stats_mu);
    op->seconds += now_s() - t0;
    pthread_mutex_unlock(&p->stats_mu);
    if (lists != few) free(lists);
    return st < 0 ? st : SL_OK;
}

/* DALI's MakeContiguous for pipeline outputs: an output whose samples share one shape but lie
 * apart (views into a record store, repeated padding samples) is packed into one buffer, so every
 * such output is a dense (batch, ...) tensor. Samples of different shapes stay a list. */
static bool back_to_back(const sl_tlist *l) {
    size_t n = l->count ? sl_tlist_sample_nbytes(l, 0) : 0;
    for (int i = 1; i < l->count; i++)
        /* as addresses: samples of no bytes may have no memory, and NULL + 0 is undefined */
        if ((uintptr_t)l->data[i] != (uintptr_t)l->data[0] + (size_t)i * n) return false;
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
        if (sl_tlist_alloc(d, l->shapes, err) != SL_OK)
            return sl_err_prefix(err, "output %d (%s), packing its samples: ", o,
                                 p->output_names[o]);
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

/* Runs the CPU parts of ops [k0, k1) on batch b. The part that starts a batch takes its snapshot
 * first; the part that ends it packs its outputs. */
static sl_status produce(sl_pipeline *p, sl_batch *b, int k0, int k1) {
    double t0 = now_s();
    sl_status st = SL_OK;
    if (k0 == 0) {
        b->status = SL_OK;
        sl_err_clear(&b->err);
        b->size = p->cfg.batch_size;
        b->scope_n[0] = b->size;
        b->mem.used = 0;
        void *snap = NULL;
        size_t snap_size = 0;
        st = sl__pipeline_checkpoint_snapshot(p, b->seq, &snap, &snap_size, &b->err);
        if (st) return b->status = st;
        sl__pipeline_checkpoint_store(p, b->seq, snap, snap_size);
        st = batch_count(p, b, &b->err);
    }
    for (int k = k0; k < k1 && st == SL_OK; k++) {
        /* a split sizes its branches here, for their ops in either stage */
        if (p->ops[k].def->flags & SL_OPF_SPLIT) sl__pipeline_cond_scopes(p, b, k);
        if (!p->ops[k].on_gpu) st = run_op(p, k, b, false, &b->err);
    }
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

/* The read stage (only when read_ops > 0): numbers the batches and runs the readers. */
static void *read_stage(void *arg) {
    sl_pipeline *p = arg;
    sl__thread_begin("sluice-read");
    sl_err why;
    sl_err_clear(&why);
    for (;;) {
        void *item;
        if (sl__queue_pop(p->free_q, &item) != SL_OK) break;
        sl_batch *b = item;
        b->seq = p->next_seq++;
        sl_status st = produce(p, b, 0, p->read_ops);
        if (st < 0) sl_err_copy(&why, &b->err); /* b is the consumer's once pushed */
        if (sl__queue_push(p->read_q, b) != SL_OK) break;
        if (st < 0) break; /* the error travels with its batch; the stage stops */
    }
    sl__pipeline_checkpoint_end(p, &why);
    sl__thread_end();
    return NULL;
}

/* The CPU stage: the CPU ops after the read stage's, or all of them when there is none. */
static void *cpu_stage(void *arg) {
    sl_pipeline *p = arg;
    sl__thread_begin("sluice-cpu");
    sl_err why;
    sl_err_clear(&why);
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
        if (st < 0) sl_err_copy(&why, &b->err);
        if (sl__queue_push(p->gpu_stage ? p->mid_q : p->ready_q, b) != SL_OK) break;
        if (st < 0) break; /* the error travels with its batch; the stage stops */
    }
    if (!p->read_ops) sl__pipeline_checkpoint_end(p, &why);
    sl__thread_end();
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
    sl__thread_begin("sluice-gpu");
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
    sl__thread_end();
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
        b->frames = sl__calloc((size_t)p->nops, sizeof *b->frames, &p->err);
        if (!b->dense || !b->use_dense || !b->op_state || !b->frames) return SL_ENOMEM;
        b->node_info = sl__calloc((size_t)p->nnodes, sizeof *b->node_info, &p->err);
        b->infos = sl__calloc((size_t)p->nops, sizeof *b->infos, &p->err);
        b->info_cap = sl__calloc((size_t)p->nops, sizeof *b->info_cap, &p->err);
        if (!b->node_info || !b->infos || !b->info_cap) return SL_ENOMEM;
        b->keys = sl__calloc((size_t)bs, sizeof *b->keys, &p->err);
        b->key_cap = sl__calloc((size_t)bs, sizeof *b->key_cap, &p->err);
        if (!b->nodes || !b->keys || !b->key_cap) return SL_ENOMEM;
        int ns = p->nscopes ? p->nscopes : 1;
        b->scope_n = sl__calloc((size_t)ns, sizeof *b->scope_n, &p->err);
        b->scope_keys = sl__calloc((size_t)ns * (size_t)bs, sizeof *b->scope_keys, &p->err);
        if (!b->scope_n || !b->scope_keys) return SL_ENOMEM;
        b->mem.limit = p->batch_limit;
        for (int n = 0; n < p->nnodes; n++) b->nodes[n].budget = &b->mem;
        for (int o = 0; o < p->nout; o++) b->dense[o].budget = &b->mem;
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

/* DALI's mixed decoders tie their own pool's threads to CPUs (affine=True, the default); here the
 * mixed decoders' CPU work runs on the pipeline's pool, so a CUDA pipeline with such a decoder
 * pins that pool. A CPU pipeline runs mixed ops as cpu ops, which DALI never pins. */
static bool pool_pinned(const sl_pipeline *p) {
    if (p->cfg.device.kind != SL_DEVICE_CUDA) return false;
    for (int k = 0; k < p->nops; k++) {
        const sl__opinst *op = &p->ops[k];
        if (op->placement == SL_OPDEV_MIXED && sl__args_has(&op->args, "affine") &&
            sl__args_bool(&op->args, "affine"))
            return true;
    }
    return false;
}

sl_status sl__pipeline_exec_start(sl_pipeline *p) {
    int e;
    p->read_ops = read_stage_ops(p);
    SL_TRY(sl__pool_create_pinned(p->cfg.num_threads, pool_pinned(p), &p->pool, &p->err));
    SL_TRY(alloc_slots(p));
#ifdef SLUICE_HAVE_CUDA
    if (p->gpu_stage) {
        SL_TRY(
            sl__cuda_stream_create(p->cfg.device.id, p->cfg.stream_priority, &p->stream, &p->err));
        if ((e = pthread_create(&p->gpu_thread, NULL, gpu_stage, p)) != 0)
            return sl__pipeline_fail(
                p, SL_ENOMEM,
                "cannot start the pipeline's GPU stage thread: out of memory or threads (%s)",
                strerror(e));
        p->gpu_thread_started = true;
    }
#endif
    if ((e = pthread_create(&p->cpu_thread, NULL, cpu_stage, p)) != 0)
        return sl__pipeline_fail(
            p, SL_ENOMEM,
            "cannot start the pipeline's CPU stage thread: out of memory or threads (%s)",
            strerror(e));
    p->cpu_thread_started = true;
    if (p->read_ops) {
        if ((e = pthread_create(&p->read_thread, NULL, read_stage, p)) != 0)
            return sl__pipeline_fail(
                p, SL_ENOMEM,
                "cannot start the pipeline's read stage thread: out of memory or threads (%s)",
                strerror(e));
        p->read_thread_started = true;
    }
    return SL_OK;
}

sl_status sl_pipeline_next(sl_pipeline *p, sl_batch **out) {
    *out = NULL;
    if (!p->built)
        return sl__pipeline_fail(p, SL_ESTATE, "sl_pipeline_next before sl_pipeline_build");
    if (p->failed) return p->err.status;
    if (p->stopped) return sl__pipeline_fail(p, SL_ESTATE, "the pipeline was stopped");
    if (p->taken - p->released >= p->nslots)
        return sl__pipeline_fail(
            p, SL_ESTATE, "%d batches are held: release one before taking another", p->nslots);
    void *item;
    double t0 = now_s();
    sl_status st = sl__queue_pop(p->ready_q, &item);
    pthread_mutex_lock(&p->stats_mu);
    p->stats.wait_s += now_s() - t0;
    pthread_mutex_unlock(&p->stats_mu);
    if (st != SL_OK) return sl__pipeline_fail(p, SL_ESTATE, "the pipeline has stopped");
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

sl_status sl_pipeline_wait(sl_pipeline *p, int timeout_ms) {
    /* sl_pipeline_next returns at once when it has an error to give */
    if (!p->built || p->failed || p->stopped || p->taken - p->released >= p->nslots) return SL_OK;
    return sl__queue_wait(p->ready_q, timeout_ms);
}

void sl_pipeline_release(sl_pipeline *p, sl_batch *b) {
    if (!b) return;
    p->released++;
    sl__queue_push(p->free_q, b);
}

int sl_pipeline_max_held(const sl_pipeline *p) {
    return p->built ? p->nslots : 0;
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

const char *sl_batch_source_info(const sl_batch *b, int output, int i) {
    if (output < 0 || output >= b->pipe->nout || i < 0 || i >= b->size) return "";
    const char *const *info = node_info(b->pipe, b, b->pipe->outputs[output]);
    const sl_tlist *l = sl_batch_output(b, output);
    return info && l && i < l->count && info[i] ? info[i] : "";
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
        else if (op->def->flags & SL_OPF_DECODER)
            out->decode_s += t;
        else if (op->on_gpu || op->split)
            out->gpu_s += t;
        else
            out->cpu_ops_s += t;
    }
}

/* SLUICE_MAX_BATCH_BYTES: digits, optionally followed by K, M, G or T (powers of 1024). */
static bool parse_bytes(const char *v, size_t *out) {
    size_t n = 0;
    const char *c = v;
    if (*c < '0' || *c > '9') return false;
    for (; *c >= '0' && *c <= '9'; c++)
        if (sl__size_mul(n, 10, &n) || sl__size_add(n, (size_t)(*c - '0'), &n)) return false;
    const char *units = "KMGT";
    const char *u = *c ? strchr(units, *c) : NULL;
    if (*c && (!u || c[1])) return false;
    for (int i = u ? (int)(u - units) + 1 : 0; i > 0; i--)
        if (sl__size_mul(n, 1024, &n)) return false;
    if (n == 0) return false;
    *out = n;
    return true;
}

/* max_batch_bytes as sluice/pipeline.h says, and the batch's bookkeeping checked against it:
 * per sample its key (up to 512 bytes, in the reader and copied into the batch) and, in every
 * sample list (one per node and per output), its shape and pointer, whatever the data. */
sl_status sl__pipeline_resolve_batch_limit(sl_pipeline *p) {
    size_t limit = p->cfg.max_batch_bytes;
    const char *v = getenv("SLUICE_MAX_BATCH_BYTES");
    if (limit == 0 && v && *v) {
        if (!parse_bytes(v, &limit))
            return sl__pipeline_fail(p, SL_EINVAL,
                                     "SLUICE_MAX_BATCH_BYTES=\"%s\": not a byte count (digits, "
                                     "optionally followed by K, M, G or T)",
                                     v);
    }
    if (limit == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        size_t phys;
        if (pages <= 0 || page <= 0 || sl__size_mul((size_t)pages, (size_t)page, &phys))
            phys = SL__SIZE_LIMIT;
        limit = phys / 2 / (2 * (size_t)p->cfg.prefetch_cpu + 2);
    }
    size_t per_sample = 2 * 512 + sizeof(char *) + sizeof(size_t),
           lists = (size_t)p->nnodes + p->nout, book;
    if (sl__size_mul(lists, SL_MAX_DIMS * sizeof(int64_t) + sizeof(void *), &lists) ||
        sl__size_add(per_sample, lists, &per_sample) ||
        sl__size_mul(per_sample, (size_t)p->cfg.batch_size, &book) || book > limit)
        return sl__pipeline_fail(p, SL_ENOMEM,
                                 "batch_size %d: the bookkeeping of one batch alone (%zu bytes a "
                                 "sample) passes the limit of %zu bytes per batch "
                                 "(max_batch_bytes, SLUICE_MAX_BATCH_BYTES)",
                                 p->cfg.batch_size, per_sample, limit);
    p->batch_limit = limit;
    return SL_OK;
}
