/* SPDX-License-Identifier: Apache-2.0 */
/* sl_iter: one pipeline per local device, global batches, and DALI's epoch bookkeeping.
 *
 * The bookkeeping follows DALI's base iterator (docs/dali.md 2.3-2.5) line for line: `counter`
 * counts samples per shard taken this epoch, `size` is the per-shard sample count of the epoch,
 * and on reset with FILL (not padded) the samples each shard's reader already read into the next
 * shard are carried over (counter_per_gpu), shard sizes roll with the shard rotation, and the next
 * epoch's size is recomputed -- which is why 3 devices give 304 batches in the first epoch and
 * fewer later. Checkpoints hold these counters plus every pipeline's snapshot, CRC-checked
 * (iter_checkpoint.c); the batches' outputs, per device or as one global tensor, are read through
 * iter_output.c. */
#include "sluice/iterator.h"

#include "core/alloc.h"
#include "core/log.h"
#include "graph/pipeline.h"
#include "iter/iter_int.h"
#include "text/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *sl_iter_errmsg(const sl_iter *it) {
    return it ? it->err.msg : "";
}

static int64_t shard_size(int64_t N, int S, int i) {
    return (int64_t)((i + 1) * N / S) - (int64_t)(i * N / S);
}

/* ---- creation -------------------------------------------------------------------------------- */

static sl_status make_pipeline(sl_iter *it, const sl_iter_config *c, const sl_pipeline_decorator *d,
                               int dev, const void *restore, size_t restore_size, sl_err *err) {
    sl_pipeline_config pc;
    sl_pipeline_config_init(&pc);
    pc.batch_size = it->B;
    pc.num_threads = it->threads;
    pc.device = it->devices[dev];
    pc.seed = c->device_seeds ? c->device_seeds[dev] : c->seed;
    pc.prefetch_cpu = c->prefetch_cpu;
    pc.prefetch_gpu = c->prefetch_gpu;
    pc.stream_priority = c->stream_priority;
    int shard_id = c->shard_offset + dev, num_shards = it->S;
    if (it->global) {
        pc.global_shards = num_shards;
        pc.global_shard = shard_id;
        pc.global_drop = it->policy == SL_LAST_BATCH_DROP;
    }
    SL_TRY(sl_pipeline_create(&pc, &it->pipes[dev], err));
    sl_pipeline *p = it->pipes[dev];
    sl_status st;
    if (c->text && c->prepare) {
        st = c->prepare(p, shard_id, num_shards, c->build_user, err);
        if (st && err && !err->msg[0]) sl_err_copy(err, sl__pipeline_err(p));
        if (st) return st;
    }
    if (c->text) {
        /* num_shards/shard_id as numbers, over the user's binds of them only when the iterator
         * shards (a layout, or several devices) */
        bool user_shard = false, user_num = false;
        for (int i = 0; i < c->nbinds; i++) {
            user_shard |= !strcmp(c->binds[i].name, "shard_id");
            user_num |= !strcmp(c->binds[i].name, "num_shards");
        }
        bool ours = d->layout != SL_LAYOUT_NONE || it->n > 1;
        sl__parse_bindv vals[2];
        int nv = 0;
        if (!user_shard || ours)
            vals[nv++] = (sl__parse_bindv){"shard_id", {.kind = SL_VAL_INT, .i = shard_id}};
        if (!user_num || ours)
            vals[nv++] = (sl__parse_bindv){"num_shards", {.kind = SL_VAL_INT, .i = num_shards}};
        st = sl__parse_pipeline_vals(p, c->text, c->filename, c->function, c->nbinds, c->binds, nv,
                                     vals, err);
    } else {
        st = c->build(p, shard_id, num_shards, c->build_user, err);
        if (st && err && !err->msg[0]) sl_err_copy(err, sl__pipeline_err(p));
    }
    if (st) return st; /* parse errors point at the text already, the same for every shard */
    if (restore) st = sl_pipeline_restore(p, restore, restore_size);
    if (st == SL_OK) st = sl_pipeline_build(p);
    if (st && err && sl__pipeline_err(p)->status) sl_err_copy(err, sl__pipeline_err(p));
    if (st && num_shards > 1) sl_err_prefix(err, "shard %d of %d: ", shard_id, num_shards);
    return st;
}

static sl_status init_book(sl_iter *it, const sl_iter_config *c, const char *reader_name,
                           sl_err *err) {
    sl__iter_book *k = &it->bk;
    memset(k, 0, sizeof *k);
    if (!it->use_reader) {
        k->size = c->size; /* -1: no end */
        return SL_OK;
    }
    sl_reader_meta m0;
    memset(&m0, 0, sizeof m0);
    for (int d = 0; d < it->n; d++) {
        sl_reader_meta m;
        if (sl_pipeline_reader_meta(it->pipes[d], reader_name, &m) != SL_OK)
            return sl_err_copy(err, sl__pipeline_err(it->pipes[d]));
        if (d == 0) m0 = m;
        if (m.epoch_size != m0.epoch_size || m.number_of_shards != m0.number_of_shards ||
            m.pad_last_batch != m0.pad_last_batch || m.stick_to_shard != m0.stick_to_shard)
            return sl_err_set(err, SL_EINVAL, "reader %s differs between devices 0 and %d",
                              reader_name ? reader_name : "", d);
        k->shards_id[d] = m.shard_id;
    }
    if (m0.number_of_shards != it->S)
        return sl_err_set(err, SL_EINVAL,
                          "reader %s has num_shards=%d but the iterator has %d devices (bind "
                          "num_shards/shard_id as def parameters)",
                          reader_name ? reader_name : "", m0.number_of_shards, it->S);
    if (m0.number_of_shards > SL__ITER_MAX_SHARDS)
        return sl_err_set(err, SL_EINVAL, "%d shards (at most %d)", m0.number_of_shards,
                          SL__ITER_MAX_SHARDS);
    if (c->last_batch_padded >= 0 || c->size >= 0)
        sl__log(SL_LOG_WARN, "size and last_batch_padded are taken from reader %s, not the config",
                reader_name ? reader_name : "");
    it->padded = m0.pad_last_batch; /* DALI overwrites last_batch_padded */
    it->stick = m0.stick_to_shard;
    it->N = m0.epoch_size;
    int S = it->S;
    if (it->global) { /* ceil(N / G) global batches an epoch, floor(N / G) under DROP */
        int64_t g = (int64_t)S * it->B;
        k->size =
            (it->policy == SL_LAST_BATCH_DROP ? it->N / g : sl__iter_ceil_div(it->N, g)) * it->B;
        return SL_OK;
    }
    for (int i = 0; i < S; i++) k->shard_sizes[i] = shard_size(it->N, S, i);
    if (it->policy == SL_LAST_BATCH_DROP)
        k->size = it->N / S;
    else if (it->padded)
        k->size = m0.epoch_size_padded / S;
    else
        k->size = sl__iter_ceil_div(sl__iter_ceil_div(it->N, S), it->B) * it->B;
    return SL_OK;
}

static sl_status fetch(sl_iter *it, sl_iter_batch **out);

/* The config's own checks, before anything is made. */
static sl_status check_config(const sl_iter_config *c, sl_err *err) {
    if ((!c->text) == (!c->build))
        return sl_err_set(err, SL_EINVAL, "iterator: give a pipeline text or a build function");
    if (c->ndevices < 1 || c->ndevices > SL_MAX_DEVICES)
        return sl_err_set(err, SL_EINVAL, "iterator: %d devices", c->ndevices);
    if (c->prefetch_cpu < 1 || c->prefetch_cpu > SL__ITER_MAX_HELD)
        return sl_err_set(err, SL_EINVAL, "iterator: prefetch depth %d (1..%d)", c->prefetch_cpu,
                          SL__ITER_MAX_HELD);
    if (c->caller_releases != 0 && c->caller_releases != 1)
        return sl_err_set(err, SL_EINVAL, "iterator: caller_releases %d (0 or 1)",
                          c->caller_releases);
    if (c->nbinds < 0 || (c->nbinds > 0 && !c->binds))
        return sl_err_set(err, SL_EINVAL, "iterator: %d binds%s", c->nbinds,
                          c->nbinds > 0 ? " and no array of them" : " (0 or more)");
    for (int i = 0; i < c->nbinds; i++)
        if (!c->binds[i].name || !c->binds[i].name[0])
            return sl_err_set(err, SL_EINVAL, "iterator: bind %d has no name", i);
    return SL_OK;
}

/* The text's decorator settings into *d; with no text (or no decorator), none of them. */
static sl_status read_decorator(const sl_iter_config *c, sl_pipeline_decorator *d, sl_err *err) {
    memset(d, 0, sizeof *d);
    d->size = -1;
    d->batch_size = d->num_threads = -1;
    d->seed = -1;
    d->prefetch_queue_depth = d->device_id = -1;
    d->prepare_first_batch = true;
    if (!c->text && c->function && c->function[0])
        return sl_err_set(err, SL_EINVAL,
                          "iterator: function '%s' names a function of a pipeline text, and there "
                          "is no text",
                          c->function);
    if (c->text)
        SL_TRY(sl_pipeline_text_function_decorator(c->text, c->filename, c->function, d, err));
    return SL_OK;
}

/* An iterator with nothing in it yet but its slots' export counts; NULL when out of memory. */
static sl_iter *iter_alloc(sl_err *err) {
    sl_iter *it = sl__calloc(1, sizeof *it, err);
    if (!it) return NULL;
    it->exports = sl__calloc(1, sizeof *it->exports, err);
    if (!it->exports) {
        free(it);
        return NULL;
    }
    atomic_init(&it->exports->refs, 1);
    for (int h = 0; h < SL__ITER_MAX_SLOTS; h++) {
        it->slots[h].index = h;
        atomic_init(&it->exports->count[h], 0);
    }
    return it;
}

/* What the iterator's creation still needs of the settings once they are settled. */
typedef struct settled {
    bool prepare;            /* prepare_first_batch */
    const char *reader_name; /* NULL: none */
    int64_t size;            /* -1: none */
} settled;

/* Each setting from the config where it gives one, else from the decorator: the layout, the
 * last-batch policy, the reader, the shards this process has and the per-device batch. */
static sl_status settle(sl_iter *it, const sl_iter_config *c, const sl_pipeline_decorator *d,
                        settled *s, sl_err *err) {
    it->n = c->ndevices;
    /* chosen once, for all: every local pipeline runs at once on the process's CPUs */
    it->threads =
        c->num_threads == SL_NUM_THREADS_AUTO ? sl_pipeline_default_threads(it->n) : c->num_threads;
    memcpy(it->devices, c->devices, sizeof it->devices);
    it->layout = c->layout >= 0 ? (sl_layout_mode)c->layout : d->layout;
    if (it->layout == SL_LAYOUT_NONE && it->n > 1) it->layout = SL_LAYOUT_SHARDED;
    it->policy = c->last_batch_policy >= 0 ? (sl_last_batch_policy)c->last_batch_policy
                                           : d->last_batch_policy;
    it->auto_reset = c->auto_reset >= 0 ? c->auto_reset : d->auto_reset;
    it->padded = c->last_batch_padded >= 0 ? c->last_batch_padded : d->last_batch_padded;
    s->prepare = c->prepare_first_batch >= 0 ? c->prepare_first_batch : d->prepare_first_batch;
    s->reader_name = c->reader_name ? c->reader_name : d->reader_name[0] ? d->reader_name : NULL;
    s->size = c->size >= 0 ? c->size : d->size;
    it->use_reader = s->reader_name != NULL;
    it->global = c->global_order == 1;
    for (int dev = 1; it->global && c->device_seeds && dev < it->n; dev++)
        if (c->device_seeds[dev] != c->device_seeds[0])
            return sl_err_set(err, SL_EINVAL,
                              "iterator: global order with pipelines of different seeds (%llu on "
                              "device 0, %llu on device %d): its permutation is one for all",
                              (unsigned long long)c->device_seeds[0],
                              (unsigned long long)c->device_seeds[dev], dev);
    /* the pipelines have 2 * prefetch_cpu + 1 slots (one more with a read stage): with
     * prefetch_cpu + 1 held by the caller they still have prefetch_cpu to run ahead with */
    it->caller_releases = c->caller_releases == 1;
    it->max_held = c->prefetch_cpu + (it->caller_releases ? 1 : 0);
    SL_ASSERT(it->max_held <= SL__ITER_MAX_SLOTS);
    it->S = c->total_shards > 0 ? c->total_shards : it->n;
    if (c->shard_offset < 0 || c->shard_offset + it->n > it->S)
        return sl_err_set(err, SL_EINVAL, "iterator: shards %d..%d of %d", c->shard_offset,
                          c->shard_offset + it->n - 1, it->S);
    if (it->policy == SL_LAST_BATCH_PARTIAL)
        sl__log(SL_LOG_INFO, "last_batch_policy PARTIAL: the last batch keeps its padding "
                             "samples; use sl_iter_size to know how many are real");
    it->B = it->layout == SL_LAYOUT_NONE ? c->batch_size : c->batch_size / it->S;
    if (it->B < 1)
        return sl_err_set(err, SL_EINVAL, "iterator: global batch %d over %d devices",
                          c->batch_size, it->S);
    if (it->layout != SL_LAYOUT_NONE && c->batch_size % it->S)
        sl__log(SL_LOG_WARN,
                "global batch %d over %d devices: %d per device, %d samples per step dropped "
                "(integer division, as DALI)",
                c->batch_size, it->S, it->B, c->batch_size - it->B * it->S);
    return SL_OK;
}

/* Makes a pipeline per device, restored from the checkpoint when resuming, and the epoch's
 * bookkeeping (the checkpoint's, checked against a fresh one). */
static sl_status open_pipelines(sl_iter *it, const sl_iter_config *c,
                                const sl_pipeline_decorator *d, const settled *s, bool resuming,
                                sl_err *err) {
    sl_status st = SL_OK;
    /* resume: read the checkpoint first (it carries the pipelines' states) */
    void *ck = NULL;
    size_t ck_size = 0;
    const unsigned char *pipe_state[SL_MAX_DEVICES] = {0};
    uint64_t pipe_len[SL_MAX_DEVICES] = {0};
    it->resume_bytes = c->resume_bytes;
    it->resume_size = c->resume_size;
    if (resuming) {
        st = sl__iter_checkpoint_read(it, c->resume ? c->resume : "(in memory)", &ck, &ck_size,
                                      pipe_state, pipe_len, err);
        it->resume_bytes = NULL;
        if (st) return st;
    }
    for (int dev = 0; dev < it->n && st == SL_OK; dev++)
        st = make_pipeline(it, c, d, dev, pipe_state[dev], (size_t)pipe_len[dev], err);
    sl__iter_book resumed = it->bk;
    /* sluice extension: with neither reader_name nor size, a pipeline with one reader has its
     * epochs counted from that reader (DALI's iterator would never end an epoch) */
    if (st == SL_OK && !it->use_reader && s->size < 0 && sl_pipeline_num_readers(it->pipes[0]) == 1)
        it->use_reader = true;
    if (st == SL_OK && it->global && !it->use_reader)
        st = sl_err_set(err, SL_EINVAL,
                        "global order needs the reader whose records make the epoch: name it "
                        "(reader_name)");
    if (st == SL_OK) st = init_book(it, c, s->reader_name, err);
    if (st == SL_OK && !it->use_reader) it->bk.size = s->size;
    if (resuming) {
        if (st == SL_OK)
            st =
                sl__iter_checkpoint_check(it, &resumed, c->resume ? c->resume : "(in memory)", err);
        if (st == SL_OK) {
            sl__iter_book fresh = it->bk;
            it->bk = resumed;
            if (it->global) memcpy(it->bk.shards_id, fresh.shards_id, sizeof fresh.shards_id);
        }
        free(ck);
    }
    return st;
}

/* The outputs' names: output_map (the config's, else the decorator's), else the pipeline's. */
static sl_status name_outputs(sl_iter *it, const sl_iter_config *c, const sl_pipeline_decorator *d,
                              sl_err *err) {
    int np = sl_pipeline_num_outputs(it->pipes[0]);
    int nmap = c->num_outputs >= 0 ? c->num_outputs : d->num_outputs;
    if (nmap > 0 && nmap != np)
        return sl_err_set(err, SL_EINVAL, "output_map has %d names, the pipeline returns %d", nmap,
                          np);
    if (nmap > 0 && c->num_outputs >= 0 && !c->output_map)
        return sl_err_set(err, SL_EINVAL, "num_outputs %d, but no output_map", nmap);
    if (!(it->names = sl__calloc((size_t)np, sizeof *it->names, err))) return SL_ENOMEM;
    for (int h = 0; h < SL__ITER_MAX_SLOTS; h++) {
        sl_iter_batch *b = &it->slots[h];
        b->global = sl__calloc((size_t)np, sizeof *b->global, err);
        b->global_ok = sl__calloc((size_t)np, sizeof *b->global_ok, err);
        if (!b->global || !b->global_ok) return SL_ENOMEM;
    }
    it->nout = np;
    for (int i = 0; i < np; i++) {
        const char *name = nmap > 0 ? (c->num_outputs >= 0 ? c->output_map[i] : d->output_map[i])
                                    : sl_pipeline_output_name(it->pipes[0], i);
        if (!name) return sl_err_set(err, SL_EINVAL, "output_map: name %d is NULL", i);
        if (!(it->names[i] = strdup(name))) return sl_err_set(err, SL_ENOMEM, "out of memory");
    }
    return SL_OK;
}

/* prepare_first_batch: the first batch, taken now. */
static sl_status prepare_first(sl_iter *it, bool resuming, sl_err *err) {
    it->bk_first = it->bk;
    sl_status st = fetch(it, &it->first);
    if (st == SL_EOF && resuming) {
        /* the checkpoint was written after an epoch's last batch: the first call reports the
         * epoch's end, as the next call of the run that wrote it would have */
        it->first = NULL;
        it->eof_pending = true;
        st = SL_OK;
    } else if (st == SL_EOF) {
        return sl_err_set(err, SL_EINVAL,
                          "It seems that there is no data in the pipeline (epoch size 0)");
    }
    if (st) {
        sl_err_copy(err, &it->err);
        return st;
    }
    it->first_pending = it->first != NULL;
    return SL_OK;
}

sl_status sl_iter_create(const sl_iter_config *c, sl_iter **out, sl_err *err) {
    *out = NULL;
    SL_TRY(check_config(c, err));
    sl_pipeline_decorator d;
    memset(&d, 0, sizeof d);
    sl_status st = read_decorator(c, &d, err);
    sl_iter *it = st == SL_OK ? iter_alloc(err) : NULL;
    if (!it) {
        sl_pipeline_decorator_clear(&d);
        return st ? st : SL_ENOMEM;
    }
    settled s;
    bool resuming = c->resume || c->resume_bytes;
    st = settle(it, c, &d, &s, err);
    if (st == SL_OK) st = open_pipelines(it, c, &d, &s, resuming, err);
    if (st == SL_OK) st = name_outputs(it, c, &d, err);
    sl_pipeline_decorator_clear(&d);
    if (st == SL_OK && s.prepare) st = prepare_first(it, resuming, err);
    if (st) {
        sl_iter_free(it);
        return st;
    }
    *out = it;
    return SL_OK;
}

/* Gives slot b's batches back to the pipelines (at once, whatever its exports). */
static void return_slot(sl_iter *it, sl_iter_batch *b) {
    for (int d = 0; d < it->n; d++)
        if (b->b[d]) {
            sl_pipeline_release(it->pipes[d], b->b[d]);
            b->b[d] = NULL;
        }
    if (b->in_use) it->held--;
    b->in_use = false;
    b->released = false;
}

/* Slot b's DLPack exports whose deleter has not run. */
static int exported(const sl_iter *it, const sl_iter_batch *b) {
    return atomic_load_explicit(&it->exports->count[b->index], memory_order_acquire);
}

/* The caller is done with slot b: back to the pipelines now, or, while DLPack exports of it
 * live, when the last one is deleted (sweep). */
static void give_back(sl_iter *it, sl_iter_batch *b) {
    if (exported(it, b) > 0)
        b->released = true;
    else
        return_slot(it, b);
}

/* Returns the released slots whose exports are all gone. */
static void sweep(sl_iter *it) {
    for (int h = 0; h < SL__ITER_MAX_SLOTS; h++) {
        sl_iter_batch *b = &it->slots[h];
        if (b->in_use && b->released && exported(it, b) == 0) return_slot(it, b);
    }
}

int sl_iter_held(sl_iter *it) {
    sweep(it);
    return it->held;
}

int sl_iter_exports(const sl_iter *it) {
    int n = 0;
    for (int h = 0; h < SL__ITER_MAX_SLOTS; h++) n += exported(it, &it->slots[h]);
    return n;
}

void sl_iter_free(sl_iter *it) {
    if (!it) return;
    for (int h = 0; h < SL__ITER_MAX_SLOTS; h++) {
        sl_iter_batch *b = &it->slots[h];
        return_slot(it, b);
        for (int o = 0; b->global && o < it->nout; o++) sl_tensor_free(&b->global[o]);
        free(b->global);
        free(b->global_ok);
    }
    for (int o = 0; it->names && o < it->nout; o++) free(it->names[o]);
    free(it->names);
    for (int d = 0; d < it->n; d++) sl_pipeline_free(it->pipes[d]);
    sl__iter_exports_drop(it->exports);
    free(it->extra);
    free(it);
}

/* ---- stepping -------------------------------------------------------------------------------- */

/* Takes one batch from every pipeline into a free slot. Without caller_releases the oldest batch
 * goes back first when max_held are out; with it, the caller must have given one back (checked
 * before anything is taken, so a refused call changes nothing). */
static sl_status take(sl_iter *it, sl_iter_batch **out) {
    sweep(it);
    int nreleased = 0; /* given back, out only through DLPack exports */
    for (int h = 0; h < SL__ITER_MAX_SLOTS; h++) nreleased += it->slots[h].released;
    /* rotation passes over exported batches; they count against the pipelines' own limit */
    int limit = it->max_held;
    if (!it->caller_releases) {
        while (it->held - nreleased >= it->max_held) {
            sl_iter_batch *oldest = NULL;
            for (int h = 0; h < SL__ITER_MAX_SLOTS; h++)
                if (it->slots[h].in_use && !it->slots[h].released &&
                    (!oldest || it->slots[h].order < oldest->order))
                    oldest = &it->slots[h];
            give_back(it, oldest);
            nreleased += oldest->released;
        }
        limit = SL__ITER_MAX_SLOTS;
        for (int d = 0; d < it->n; d++) limit = SL_MIN(limit, sl_pipeline_max_held(it->pipes[d]));
    }
    if (it->held >= limit) {
        if (nreleased)
            return sl_err_set(&it->err, SL_ESTATE,
                              "%d batches are held, %d of them only by DLPack exports not yet "
                              "deleted: free those arrays (or release a batch) before taking "
                              "another",
                              it->held, nreleased);
        return sl_err_set(&it->err, SL_ESTATE,
                          "%d batches are held: release one (sl_iter_release) before taking "
                          "another",
                          it->held);
    }
    sl_iter_batch *b = NULL;
    for (int h = 0; h < SL__ITER_MAX_SLOTS && !b; h++)
        if (!it->slots[h].in_use) b = &it->slots[h];
    SL_ASSERT(b);
    memset(b->global_ok, 0, (size_t)it->nout * sizeof *b->global_ok);
    b->it = it;
    b->in_use = true;
    b->order = it->takes++;
    it->held++;
    for (int d = 0; d < it->n; d++) {
        sl_status st = sl_pipeline_next(it->pipes[d], &b->b[d]);
        if (st) {
            sl_err_copy(&it->err, sl__pipeline_err(it->pipes[d]));
            if (it->n > 1) sl_err_prefix(&it->err, "device %d: ", d);
            give_back(it, b);
            return st;
        }
    }
    *out = b;
    return SL_OK;
}

/* DALI's _advance_and_check_drop_last: true when the batch just taken ends the epoch (DROP). */
static bool advance(sl_iter *it) {
    sl__iter_book *k = &it->bk;
    if (it->global) { /* the epoch's length has the policy in it already */
        k->counter += it->B;
        return false;
    }
    if (it->use_reader) {
        k->counter += it->B;
        if (it->policy == SL_LAST_BATCH_DROP)
            for (int i = 0; i < it->S; i++)
                if (k->counter_per_gpu[i] + k->counter > k->shard_sizes[i]) return true;
        return false;
    }
    k->counter += (int64_t)it->n * it->B;
    return it->policy == SL_LAST_BATCH_DROP && k->size > 0 && k->counter > k->size;
}

static sl_status end_epoch(sl_iter *it) {
    it->ended = true;
    if (it->auto_reset) sl_iter_reset(it);
    return SL_EOF;
}

/* How many samples of each device's part of the batch just taken are real, as DALI's PARTIAL
 * policy trims them: with a reader, B - (counter - the initial size of the shard the device reads
 * now); without, the first (size - samples before this batch) samples in device order. Every
 * sample is real under FILL and DROP. */
static void set_valid(const sl_iter *it, sl_iter_batch *b) {
    const sl__iter_book *k = &it->bk;
    for (int d = 0; d < it->n; d++) b->valid[d] = sl_batch_size(b->b[d]);
    if (it->policy != SL_LAST_BATCH_PARTIAL || k->size <= 0) return;
    if (it->global) { /* the global positions past N of the last batch are fill */
        int64_t t = k->counter / it->B - 1, g = (int64_t)it->S * it->B;
        for (int d = 0; d < it->n; d++) {
            int64_t left = it->N - t * g - (int64_t)k->shards_id[d] * it->B;
            b->valid[d] = (int)SL_MAX(0, SL_MIN((int64_t)it->B, left));
        }
        return;
    }
    if (it->use_reader) {
        for (int d = 0; d < it->n; d++) {
            int64_t left = it->B - (k->counter - shard_size(it->N, it->S, k->shards_id[d]));
            b->valid[d] = (int)SL_MAX(0, SL_MIN((int64_t)it->B, left));
        }
        return;
    }
    int64_t left = k->size - (k->counter - (int64_t)it->n * it->B);
    for (int d = 0; d < it->n; d++, left -= it->B)
        b->valid[d] = (int)SL_MAX(0, SL_MIN((int64_t)it->B, left));
}

/* DALI's variable batch size (external sources that give fewer samples than batch_size): a short
 * batch is passed on as it is, each device's part as long as its pipeline's batch, except where
 * the iterator counts samples -- a reader, an explicit size (DALI's iterators refuse it there
 * too) or global order. */
static sl_status check_short(sl_iter *it, const sl_iter_batch *b) {
    const char *why = it->use_reader     ? "a reader (reader_name)"
                      : it->global       ? "global order"
                      : it->bk.size >= 0 ? "an explicit size"
                                         : NULL;
    for (int d = 0; d < it->n && why; d++) {
        int n = sl_batch_size(b->b[d]);
        if (n != it->B)
            return sl_err_set(&it->err, SL_EINVAL,
                              "device %d: a batch of %d samples, but batch_size is %d: variable "
                              "batch size is not supported by the iterator with %s",
                              d, n, it->B, why);
    }
    return SL_OK;
}

static sl_status fetch(sl_iter *it, sl_iter_batch **out) {
    if (it->ended) return SL_EOF;
    if (it->bk.size >= 0 && it->bk.counter >= it->bk.size && it->bk.size > 0) return end_epoch(it);
    if (it->bk.size == 0) return end_epoch(it);
    SL_TRY(take(it, out));
    sl_status st = check_short(it, *out);
    if (st != SL_OK) {
        give_back(it, *out);
        *out = NULL;
        return st;
    }
    if (advance(it)) { /* the dropped batch is discarded */
        give_back(it, *out);
        *out = NULL;
        return end_epoch(it);
    }
    it->bk.step++;
    set_valid(it, *out);
    return SL_OK;
}

sl_status sl_iter_next(sl_iter *it, const sl_iter_batch **out) {
    *out = NULL;
    it->ever_consumed = true;
    if (it->eof_pending) {
        it->eof_pending = false;
        return SL_EOF;
    }
    if (it->first_pending) { /* taken at creation: held already */
        it->first_pending = false;
        *out = it->first;
        it->first = NULL;
        return SL_OK;
    }
    sl_iter_batch *b;
    sl_status st = fetch(it, &b);
    if (st == SL_OK) *out = b;
    return st;
}

sl_status sl_iter_wait(sl_iter *it, int timeout_ms) {
    if (it->eof_pending || it->first_pending || it->ended) return SL_OK;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int d = 0; d < it->n; d++) {
        int left = timeout_ms;
        if (timeout_ms >= 0) {
            struct timespec t;
            clock_gettime(CLOCK_MONOTONIC, &t);
            int64_t spent =
                (int64_t)(t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
            left = spent >= timeout_ms ? 0 : timeout_ms - (int)spent;
        }
        SL_TRY(sl_pipeline_wait(it->pipes[d], left));
    }
    return SL_OK;
}

void sl_iter_stop(sl_iter *it) {
    for (int d = 0; d < it->n; d++) sl_pipeline_stop(it->pipes[d]);
}

void sl_iter_release(sl_iter *it, const sl_iter_batch *cb) {
    if (!cb) return;
    uintptr_t at = (uintptr_t)cb, lo = (uintptr_t)it->slots;
    bool ours =
        at >= lo && at < (uintptr_t)(it->slots + SL__ITER_MAX_SLOTS) && (at - lo) % sizeof *cb == 0;
    sl_iter_batch *b = ours ? &it->slots[(at - lo) / sizeof *cb] : NULL;
    if (!b || !b->in_use || b->released || b == it->first) {
        sl__log(SL_LOG_WARN, "sl_iter_release: %s (ignored)",
                !b ? "not a batch of this iterator" : "the batch is not held (released twice?)");
        return;
    }
    give_back(it, b);
}

int sl_iter_max_held(const sl_iter *it) {
    return it->max_held;
}

void sl_iter_reset(sl_iter *it) {
    sl__iter_book *k = &it->bk;
    if (!(k->size < 0 || k->counter >= k->size || it->ended)) {
        sl__log(SL_LOG_WARN, "iterator reset in the middle of an epoch is ignored (as DALI)");
        return;
    }
    if (it->global) { /* every epoch is one whole order: nothing carries over */
        k->counter = 0;
    } else if (it->policy == SL_LAST_BATCH_FILL && !it->padded) {
        if (it->use_reader) {
            int64_t mn = k->counter_per_gpu[0];
            for (int i = 1; i < it->S; i++) mn = SL_MIN(mn, k->counter_per_gpu[i]);
            k->counter -= mn;
            for (int i = 0; i < it->S; i++) k->counter_per_gpu[i] += k->counter - k->shard_sizes[i];
            mn = k->counter_per_gpu[0];
            for (int i = 1; i < it->S; i++) mn = SL_MIN(mn, k->counter_per_gpu[i]);
            k->counter = mn;
        } else if (k->size > 0) {
            k->counter %= k->size;
        }
    } else {
        k->counter = 0;
    }
    if (it->use_reader && !it->global) {
        if (!it->stick)
            for (int d = 0; d < it->n; d++) k->shards_id[d] = (k->shards_id[d] + 1) % it->S;
        if (it->policy == SL_LAST_BATCH_FILL && !it->padded) {
            int S = it->S;
            if (!it->stick) { /* np.roll(shard_sizes, 1) */
                int64_t last = k->shard_sizes[S - 1];
                memmove(k->shard_sizes + 1, k->shard_sizes, (size_t)(S - 1) * sizeof(int64_t));
                k->shard_sizes[0] = last;
            }
            int64_t mx = 0;
            for (int i = 0; i < S; i++) mx = SL_MAX(mx, k->shard_sizes[i] - k->counter_per_gpu[i]);
            k->size = sl__iter_ceil_div(mx, it->B) * it->B;
            if (k->size == 0) {
                memset(k->counter_per_gpu, 0, (size_t)S * sizeof(int64_t));
                k->counter = 0;
                int64_t last = k->shard_sizes[S - 1];
                memmove(k->shard_sizes + 1, k->shard_sizes, (size_t)(S - 1) * sizeof(int64_t));
                k->shard_sizes[0] = last;
                mx = 0;
                for (int i = 0; i < S; i++) mx = SL_MAX(mx, k->shard_sizes[i]);
                k->size = sl__iter_ceil_div(mx, it->B) * it->B;
            }
        }
    }
    k->epoch++;
    k->step = 0;
    it->ended = false;
    it->eof_pending = false;
}

int64_t sl_iter_size(const sl_iter *it) {
    return it->bk.size;
}
int64_t sl_iter_len(const sl_iter *it) {
    const sl__iter_book *k = &it->bk;
    if (k->size < 0) return -1;
    if (it->use_reader)
        return it->policy != SL_LAST_BATCH_DROP ? sl__iter_ceil_div(k->size, it->B)
                                                : k->size / it->B;
    return sl__iter_ceil_div(k->size, (int64_t)it->n * it->B);
}
int sl_iter_epoch(const sl_iter *it) {
    return it->bk.epoch;
}
int64_t sl_iter_step(const sl_iter *it) {
    return it->bk.step - (it->first_pending ? 1 : 0);
}
int sl_iter_num_devices(const sl_iter *it) {
    return it->n;
}
int sl_iter_device_batch(const sl_iter *it) {
    return it->B;
}
int sl_iter_num_outputs(const sl_iter *it) {
    return it->nout;
}
const char *sl_iter_output_name(const sl_iter *it, int i) {
    return i >= 0 && i < it->nout ? it->names[i] : NULL;
}
sl_layout_mode sl_iter_layout(const sl_iter *it) {
    return it->layout;
}
sl_pipeline *sl_iter_pipeline(sl_iter *it, int device) {
    return device >= 0 && device < it->n ? it->pipes[device] : NULL;
}
int sl_iter_batch_valid(const sl_iter_batch *b, int dev) {
    return dev >= 0 && dev < b->it->n ? b->valid[dev] : 0;
}

int sl_iter_batch_devices(const sl_iter_batch *b) {
    return b->it->n;
}
const char *sl_iter_key(const sl_iter_batch *b, int dev, int sample) {
    return dev >= 0 && dev < b->it->n ? sl_batch_key(b->b[dev], sample) : "";
}
