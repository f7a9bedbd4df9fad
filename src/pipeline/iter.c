/* SPDX-License-Identifier: Apache-2.0 */
/* sl_iter: one pipeline per local device, global batches, and DALI's epoch bookkeeping.
 *
 * The bookkeeping follows DALI's base iterator (docs/dali.md 2.3-2.5) line for line: `counter`
 * counts samples per shard taken this epoch, `size` is the per-shard sample count of the epoch,
 * and on reset with FILL (not padded) the samples each shard's reader already read into the next
 * shard are carried over (counter_per_gpu), shard sizes roll with the shard rotation, and the next
 * epoch's size is recomputed -- which is why 3 devices give 304 batches in the first epoch and
 * fewer later. Checkpoints hold these counters plus every pipeline's snapshot, CRC-checked. */
#include "sluice/iterator.h"

#include "core/alloc.h"
#include "core/log.h"
#include "pipeline/pipeline_checkpoint.h"
#include "pipeline/pipeline_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#ifdef SLUICE_HAVE_DLPACK
#include <dlpack/dlpack.h>
#endif

#define MAX_SHARDS 4096
#define MAX_HELD   16 /* deepest prefetch_cpu */
/* batches out at once: prefetch_cpu + 1 when the caller releases them */
#define MAX_SLOTS  (MAX_HELD + 1)

typedef struct book {
    int64_t counter, size;
    int epoch;
    int64_t step;
    int shards_id[SL_MAX_DEVICES];
    int64_t counter_per_gpu[MAX_SHARDS];
    int64_t shard_sizes[MAX_SHARDS];
} book;

/* One slot of the iterator's pool: a batch from every pipeline while in use. Its global buffers
 * stay allocated from batch to batch (freed with the iterator). */
struct sl_iter_batch {
    sl_iter *it;
    sl_batch *b[SL_MAX_DEVICES];
    sl_tensor global[SL_MAX_OUTPUTS];
    bool global_ok[SL_MAX_OUTPUTS];
    bool in_use;   /* taken from the pipelines, not yet released */
    int64_t order; /* when it was taken: without caller_releases the oldest goes first */
    int valid[SL_MAX_DEVICES]; /* real samples per device (DALI's PARTIAL rule) */
};

struct sl_iter {
    sl_err err;
    int n; /* local devices = pipelines */
    sl_device devices[SL_MAX_DEVICES];
    sl_pipeline *pipes[SL_MAX_DEVICES];
    int B; /* per-device batch */
    int S; /* shards (global devices) */
    int nout;
    char names[SL_MAX_OUTPUTS][64];
    sl_layout_mode layout;
    sl_last_batch_policy policy;
    bool padded, auto_reset, stick, use_reader;
    bool global;   /* global order (sl_iter_config.global_order) */
    int64_t N;     /* epoch_size (reader) */
    book bk;       /* current */
    book bk_first; /* before the prepared first batch */
    bool first_pending, ever_consumed, ended;
    bool caller_releases;
    int max_held;  /* slots in use at most (sl_iter_max_held) */
    int held;      /* slots in use: handed out, or the prepared first batch */
    int64_t takes; /* batches taken so far (slot order) */
    sl_iter_batch slots[MAX_SLOTS];
    sl_iter_batch *first; /* the prepared first batch */
    void *extra;
    size_t extra_size;
    const void *resume_bytes; /* during creation: a checkpoint given in memory */
    size_t resume_size;
};

void sl_iter_config_init(sl_iter_config *c) {
    memset(c, 0, sizeof *c);
    c->filename = "<pipeline>";
    c->ndevices = 1;
    c->devices[0] = sl_cpu();
    c->batch_size = 200;
    c->num_threads = 4;
    c->prefetch_cpu = 2;
    c->prefetch_gpu = 2;
    c->num_outputs = -1;
    c->size = -1;
    c->last_batch_policy = -1;
    c->last_batch_padded = -1;
    c->prepare_first_batch = -1;
    c->auto_reset = -1;
    c->layout = -1;
    c->caller_releases = 0;
}

sl_status sl_iter_parse_devices(const char *spec, sl_iter_config *c, sl_err *err) {
    if (!strcmp(spec, "cpu")) {
        c->ndevices = 1;
        c->devices[0] = sl_cpu();
        return SL_OK;
    }
    if (!strncmp(spec, "cpu:", 4)) {
        char *end;
        long k = strtol(spec + 4, &end, 10);
        if (*end || k < 1 || k > SL_MAX_DEVICES)
            return sl_err_set(err, SL_EINVAL, "devices \"%s\": cpu:K with K in 1..%d", spec,
                              SL_MAX_DEVICES);
        c->ndevices = (int)k;
        for (int i = 0; i < k; i++) c->devices[i] = sl_cpu();
        return SL_OK;
    }
    int ngpu = sl__cuda_device_count();
    if (!strcmp(spec, "all")) {
        if (ngpu == 0) {
            c->ndevices = 1;
            c->devices[0] = sl_cpu();
            return SL_OK;
        }
        c->ndevices = ngpu < SL_MAX_DEVICES ? ngpu : SL_MAX_DEVICES;
        for (int i = 0; i < c->ndevices; i++) c->devices[i] = sl_cuda(i);
        return SL_OK;
    }
    c->ndevices = 0;
    for (const char *p = spec; *p;) {
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || id < 0 || c->ndevices == SL_MAX_DEVICES)
            return sl_err_set(err, SL_EINVAL,
                              "devices \"%s\": expected cpu, cpu:K, all or GPU ids like 0,1", spec);
        if (id >= ngpu)
            return sl_err_set(err, SL_EINVAL, "devices \"%s\": GPU %ld does not exist (%d found)",
                              spec, id, ngpu);
        c->devices[c->ndevices++] = sl_cuda((int)id);
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return sl_err_set(err, SL_EINVAL, "devices \"%s\": unexpected '%c'", spec, *end);
    }
    return c->ndevices ? SL_OK : sl_err_set(err, SL_EINVAL, "devices \"%s\": none", spec);
}

const char *sl_iter_errmsg(const sl_iter *it) {
    return it ? it->err.msg : "";
}

static int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

static int64_t shard_size(int64_t N, int S, int i) {
    return (int64_t)((i + 1) * N / S) - (int64_t)(i * N / S);
}

/* ---- creation ----------------------------------------------------------------------------------
 */

static sl_status make_pipeline(sl_iter *it, const sl_iter_config *c, const sl_pipeline_decorator *d,
                               int dev, const void *restore, size_t restore_size, sl_err *err) {
    sl_pipeline_config pc;
    sl_pipeline_config_init(&pc);
    pc.batch_size = it->B;
    pc.num_threads = c->num_threads;
    pc.device = it->devices[dev];
    pc.seed = c->seed;
    pc.prefetch_cpu = c->prefetch_cpu;
    pc.prefetch_gpu = c->prefetch_gpu;
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
        if (st && err && !err->msg[0]) sl_err_copy(err, &p->err);
        if (st) return st;
    }
    if (c->text) {
        /* user binds first; num_shards/shard_id only where the user bound none */
        sl_pipeline_bind binds[80];
        char sid[24], ns[24];
        snprintf(sid, sizeof sid, "%d", shard_id);
        snprintf(ns, sizeof ns, "%d", num_shards);
        int nb = 0;
        bool user_shard = false, user_num = false;
        for (int i = 0; i < c->nbinds && nb < 78; i++) {
            binds[nb++] = c->binds[i];
            user_shard |= !strcmp(c->binds[i].name, "shard_id");
            user_num |= !strcmp(c->binds[i].name, "num_shards");
        }
        bool ours = d->layout != SL_LAYOUT_NONE || it->n > 1;
        if (!user_shard || ours) binds[nb++] = (sl_pipeline_bind){"shard_id", sid};
        if (!user_num || ours) binds[nb++] = (sl_pipeline_bind){"num_shards", ns};
        st = sl_pipeline_parse_function(p, c->text, c->filename, c->function, nb, binds, err);
    } else {
        st = c->build(p, shard_id, num_shards, c->build_user, err);
        if (st && err && !err->msg[0]) sl_err_copy(err, &p->err);
    }
    if (st) return st; /* parse errors point at the text already, the same for every shard */
    if (restore) st = sl_pipeline_restore(p, restore, restore_size);
    if (st == SL_OK) st = sl_pipeline_build(p);
    if (st && err && p->err.status) sl_err_copy(err, &p->err);
    if (st && num_shards > 1) sl_err_prefix(err, "shard %d of %d: ", shard_id, num_shards);
    return st;
}

static sl_status init_book(sl_iter *it, const sl_iter_config *c, const char *reader_name,
                           sl_err *err) {
    book *k = &it->bk;
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
            return sl_err_copy(err, &it->pipes[d]->err);
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
    if (m0.number_of_shards > MAX_SHARDS)
        return sl_err_set(err, SL_EINVAL, "%d shards (at most %d)", m0.number_of_shards,
                          MAX_SHARDS);
    if (c->last_batch_padded >= 0 || c->size >= 0)
        sl__log(SL_LOG_WARN, "size and last_batch_padded are taken from reader %s, not the config",
                reader_name ? reader_name : "");
    it->padded = m0.pad_last_batch; /* DALI overwrites last_batch_padded */
    it->stick = m0.stick_to_shard;
    it->N = m0.epoch_size;
    int S = it->S;
    if (it->global) { /* ceil(N / G) global batches an epoch, floor(N / G) under DROP */
        int64_t g = (int64_t)S * it->B;
        k->size = (it->policy == SL_LAST_BATCH_DROP ? it->N / g : ceil_div(it->N, g)) * it->B;
        return SL_OK;
    }
    for (int i = 0; i < S; i++) k->shard_sizes[i] = shard_size(it->N, S, i);
    if (it->policy == SL_LAST_BATCH_DROP)
        k->size = it->N / S;
    else if (it->padded)
        k->size = m0.epoch_size_padded / S;
    else
        k->size = ceil_div(ceil_div(it->N, S), it->B) * it->B;
    return SL_OK;
}

/* A checkpoint's bookkeeping, checked against the fresh one of the iterator it resumes (made by
 * init_book from the same pipelines): the CRC only says the bytes are as written, not that the
 * writer was honest, and these fields index arrays and bound loops. */
static sl_status check_resumed(const sl_iter *it, const book *r, const char *path, sl_err *err) {
    const book *f = &it->bk;
    const int S = it->S;
    const int64_t B = it->B, per_step = it->use_reader ? B : (int64_t)it->n * B;
#define BAD(field, ...)                                                                            \
    sl_err_set(err, SL_EFORMAT, "checkpoint %s: field %s: " field, path, __VA_ARGS__)
    if (r->epoch < 0 || r->epoch == INT32_MAX)
        return BAD("epoch %d out of range", "epoch", r->epoch);
    if (it->global) { /* the shards are this run's (taken from it); the sizes are its own */
        for (int i = 0; i < MAX_SHARDS; i++)
            if (r->counter_per_gpu[i] || r->shard_sizes[i])
                return BAD("set for shard %d in global order", "counter_per_gpu/shard_sizes", i);
        if (r->size != f->size)
            return BAD("%lld (this iterator's epoch is %lld per device)", "size",
                       (long long)r->size, (long long)f->size);
    } else if (it->use_reader) {
        int64_t small = S ? it->N / S : 0, big = S ? ceil_div(it->N, S) : 0, sum = 0;
        for (int d = 0; d < SL_MAX_DEVICES; d++)
            if (d < it->n ? r->shards_id[d] < 0 || r->shards_id[d] >= S : r->shards_id[d] != 0)
                return BAD("%d for device %d (shards 0..%d)", "shards_id", r->shards_id[d], d,
                           S - 1);
        for (int i = 0; i < MAX_SHARDS; i++) {
            int64_t z = r->shard_sizes[i];
            if (i < S ? z != small && z != big : z != 0)
                return BAD("%lld for shard %d (the reader's shards hold %lld or %lld)",
                           "shard_sizes", (long long)z, i, (long long)small, (long long)big);
            sum += z;
        }
        if (sum != it->N)
            return BAD("%lld samples in all, the reader has %lld", "shard_sizes", (long long)sum,
                       (long long)it->N);
        /* samples a shard has read ahead into the next epoch: fewer than a batch past its size */
        for (int i = 0; i < MAX_SHARDS; i++) {
            int64_t c = r->counter_per_gpu[i];
            if (i < S ? c < -(big + B) || c > big + B : c != 0)
                return BAD("%lld for shard %d (|value| at most %lld)", "counter_per_gpu",
                           (long long)c, i, (long long)(big + B));
        }
        /* an epoch (FILL re-sized by reset) is at most a shard plus its read-ahead, in batches */
        int64_t most = (ceil_div(2 * big + B, B) + 1) * B;
        if (it->policy == SL_LAST_BATCH_DROP || it->padded ? r->size != f->size
                                                           : r->size < 0 || r->size > most)
            return BAD("%lld (this reader gives %lld)", "size", (long long)r->size,
                       (long long)f->size);
    } else {
        for (int d = 0; d < SL_MAX_DEVICES; d++)
            if (r->shards_id[d])
                return BAD("%d for device %d (no reader)", "shards_id", r->shards_id[d], d);
        for (int i = 0; i < MAX_SHARDS; i++)
            if (r->counter_per_gpu[i] || r->shard_sizes[i])
                return BAD("set for shard %d without a reader", "counter_per_gpu/shard_sizes", i);
        if (r->size != f->size)
            return BAD("%lld (this iterator's size is %lld)", "size", (long long)r->size,
                       (long long)f->size);
    }
    /* counter: samples served this epoch, at most one step past its size */
    int64_t cmax = r->size >= 0 ? r->size + per_step : INT64_MAX / 4;
    if (r->counter < 0 || r->counter > cmax)
        return BAD("%lld out of range (0..%lld)", "counter", (long long)r->counter,
                   (long long)cmax);
    int64_t smax = r->size >= 0 ? ceil_div(r->size, per_step) + 1 : INT64_MAX / 4;
    if (r->step < 0 || r->step > smax)
        return BAD("%lld out of range (0..%lld)", "step", (long long)r->step, (long long)smax);
#undef BAD
    return SL_OK;
}

static sl_status fetch(sl_iter *it, sl_iter_batch **out);
static sl_status read_checkpoint(sl_iter *it, const char *path, void **out_buf, size_t *out_size,
                                 const unsigned char **states, uint64_t *lens, sl_err *err);

sl_status sl_iter_create(const sl_iter_config *c, sl_iter **out, sl_err *err) {
    *out = NULL;
    if ((!c->text) == (!c->build))
        return sl_err_set(err, SL_EINVAL, "iterator: give a pipeline text or a build function");
    if (c->ndevices < 1 || c->ndevices > SL_MAX_DEVICES)
        return sl_err_set(err, SL_EINVAL, "iterator: %d devices", c->ndevices);
    if (c->prefetch_cpu < 1 || c->prefetch_cpu > MAX_HELD)
        return sl_err_set(err, SL_EINVAL, "iterator: prefetch depth %d (1..%d)", c->prefetch_cpu,
                          MAX_HELD);
    if (c->caller_releases != 0 && c->caller_releases != 1)
        return sl_err_set(err, SL_EINVAL, "iterator: caller_releases %d (0 or 1)",
                          c->caller_releases);
    sl_pipeline_decorator d;
    memset(&d, 0, sizeof d);
    d.size = -1;
    d.batch_size = d.num_threads = -1;
    d.seed = -1;
    d.prefetch_queue_depth = d.device_id = -1;
    d.prepare_first_batch = true;
    if (!c->text && c->function && c->function[0])
        return sl_err_set(err, SL_EINVAL,
                          "iterator: function '%s' names a function of a pipeline text, and there "
                          "is no text",
                          c->function);
    if (c->text)
        SL_TRY(sl_pipeline_text_function_decorator(c->text, c->filename, c->function, &d, err));

    sl_iter *it = sl__calloc(1, sizeof *it, err);
    if (!it) return SL_ENOMEM;
    sl_status st = SL_OK;
    it->n = c->ndevices;
    memcpy(it->devices, c->devices, sizeof it->devices);
    it->layout = c->layout >= 0 ? (sl_layout_mode)c->layout : d.layout;
    if (it->layout == SL_LAYOUT_NONE && it->n > 1) it->layout = SL_LAYOUT_SHARDED;
    it->policy = c->last_batch_policy >= 0 ? (sl_last_batch_policy)c->last_batch_policy
                                           : d.last_batch_policy;
    it->auto_reset = c->auto_reset >= 0 ? c->auto_reset : d.auto_reset;
    it->padded = c->last_batch_padded >= 0 ? c->last_batch_padded : d.last_batch_padded;
    bool prepare = c->prepare_first_batch >= 0 ? c->prepare_first_batch : d.prepare_first_batch;
    const char *reader_name = c->reader_name     ? c->reader_name
                              : d.reader_name[0] ? d.reader_name
                                                 : NULL;
    int64_t size = c->size >= 0 ? c->size : d.size;
    it->use_reader = reader_name != NULL;
    it->global = c->global_order == 1;
    /* the pipelines have 2 * prefetch_cpu + 1 slots (one more with a read stage): with
     * prefetch_cpu + 1 held by the caller they still have prefetch_cpu to run ahead with */
    it->caller_releases = c->caller_releases == 1;
    it->max_held = c->prefetch_cpu + (it->caller_releases ? 1 : 0);
    SL_ASSERT(it->max_held <= MAX_SLOTS);
    it->S = c->total_shards > 0 ? c->total_shards : it->n;
    if (c->shard_offset < 0 || c->shard_offset + it->n > it->S) {
        st = sl_err_set(err, SL_EINVAL, "iterator: shards %d..%d of %d", c->shard_offset,
                        c->shard_offset + it->n - 1, it->S);
        goto fail;
    }
    if (it->policy == SL_LAST_BATCH_PARTIAL)
        sl__log(SL_LOG_INFO, "last_batch_policy PARTIAL: the last batch keeps its padding "
                             "samples; use sl_iter_size to know how many are real");
    it->B = it->layout == SL_LAYOUT_NONE ? c->batch_size : c->batch_size / it->S;
    if (it->B < 1) {
        st = sl_err_set(err, SL_EINVAL, "iterator: global batch %d over %d devices", c->batch_size,
                        it->S);
        goto fail;
    }
    if (it->layout != SL_LAYOUT_NONE && c->batch_size % it->S)
        sl__log(SL_LOG_WARN,
                "global batch %d over %d devices: %d per device, %d samples per step dropped "
                "(integer division, as DALI)",
                c->batch_size, it->S, it->B, c->batch_size - it->B * it->S);

    /* resume: read the checkpoint first (it carries the pipelines' states) */
    void *ck = NULL;
    size_t ck_size = 0;
    const unsigned char *pipe_state[SL_MAX_DEVICES] = {0};
    uint64_t pipe_len[SL_MAX_DEVICES] = {0};
    it->resume_bytes = c->resume_bytes;
    it->resume_size = c->resume_size;
    bool resuming = c->resume || c->resume_bytes;
    if (resuming) {
        st = read_checkpoint(it, c->resume ? c->resume : "(in memory)", &ck, &ck_size, pipe_state,
                             pipe_len, err);
        it->resume_bytes = NULL;
        if (st) goto fail;
    }
    for (int dev = 0; dev < it->n && st == SL_OK; dev++)
        st = make_pipeline(it, c, &d, dev, pipe_state[dev], (size_t)pipe_len[dev], err);
    book resumed = it->bk;
    /* sluice extension: with neither reader_name nor size, a pipeline with one reader has its
     * epochs counted from that reader (DALI's iterator would never end an epoch) */
    if (st == SL_OK && !it->use_reader && size < 0 && sl__pipeline_num_readers(it->pipes[0]) == 1)
        it->use_reader = true;
    if (st == SL_OK && it->global && !it->use_reader)
        st = sl_err_set(err, SL_EINVAL,
                        "global order needs the reader whose records make the epoch: name it "
                        "(reader_name)");
    if (st == SL_OK) st = init_book(it, c, reader_name, err);
    if (st == SL_OK && !it->use_reader) it->bk.size = size;
    if (resuming) {
        if (st == SL_OK)
            st = check_resumed(it, &resumed, c->resume ? c->resume : "(in memory)", err);
        if (st == SL_OK) {
            book fresh = it->bk;
            it->bk = resumed;
            if (it->global) memcpy(it->bk.shards_id, fresh.shards_id, sizeof fresh.shards_id);
        }
        free(ck);
    }
    if (st) goto fail;

    /* outputs */
    int np = sl_pipeline_num_outputs(it->pipes[0]);
    int nmap = c->num_outputs >= 0 ? c->num_outputs : d.num_outputs;
    if (nmap > 0 && nmap != np) {
        st = sl_err_set(err, SL_EINVAL, "output_map has %d names, the pipeline returns %d", nmap,
                        np);
        goto fail;
    }
    it->nout = np;
    for (int i = 0; i < np; i++)
        snprintf(it->names[i], sizeof it->names[i], "%s",
                 nmap > 0 ? (c->num_outputs >= 0 ? c->output_map[i] : d.output_map[i])
                          : sl_pipeline_output_name(it->pipes[0], i));

    if (prepare) {
        it->bk_first = it->bk;
        st = fetch(it, &it->first);
        if (st == SL_EOF) {
            st = sl_err_set(err, SL_EINVAL,
                            "It seems that there is no data in the pipeline (epoch size 0)");
            goto fail;
        }
        if (st) {
            sl_err_copy(err, &it->err);
            goto fail;
        }
        it->first_pending = true;
    }
    *out = it;
    return SL_OK;
fail:
    sl_iter_free(it);
    return st;
}

/* Gives slot b's batches back to the pipelines. */
static void give_back(sl_iter *it, sl_iter_batch *b) {
    for (int d = 0; d < it->n; d++)
        if (b->b[d]) {
            sl_pipeline_release(it->pipes[d], b->b[d]);
            b->b[d] = NULL;
        }
    if (b->in_use) it->held--;
    b->in_use = false;
}

void sl_iter_free(sl_iter *it) {
    if (!it) return;
    for (int h = 0; h < MAX_SLOTS; h++) {
        sl_iter_batch *b = &it->slots[h];
        give_back(it, b);
        for (int o = 0; o < SL_MAX_OUTPUTS; o++) sl_tensor_free(&b->global[o]);
    }
    for (int d = 0; d < it->n; d++) sl_pipeline_free(it->pipes[d]);
    free(it->extra);
    free(it);
}

/* ---- stepping ----------------------------------------------------------------------------------
 */

/* Takes one batch from every pipeline into a free slot. Without caller_releases the oldest batch
 * goes back first when max_held are out; with it, the caller must have given one back (checked
 * before anything is taken, so a refused call changes nothing). */
static sl_status take(sl_iter *it, sl_iter_batch **out) {
    if (it->held >= it->max_held) {
        if (it->caller_releases)
            return sl_err_set(&it->err, SL_ESTATE,
                              "%d batches are held: release one (sl_iter_release) before taking "
                              "another",
                              it->held);
        sl_iter_batch *oldest = NULL;
        for (int h = 0; h < MAX_SLOTS; h++)
            if (it->slots[h].in_use && (!oldest || it->slots[h].order < oldest->order))
                oldest = &it->slots[h];
        give_back(it, oldest);
    }
    sl_iter_batch *b = NULL;
    for (int h = 0; h < MAX_SLOTS && !b; h++)
        if (!it->slots[h].in_use) b = &it->slots[h];
    SL_ASSERT(b);
    memset(b->global_ok, 0, sizeof b->global_ok);
    b->it = it;
    b->in_use = true;
    b->order = it->takes++;
    it->held++;
    for (int d = 0; d < it->n; d++) {
        sl_status st = sl_pipeline_next(it->pipes[d], &b->b[d]);
        if (st) {
            sl_err_copy(&it->err, &it->pipes[d]->err);
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
    book *k = &it->bk;
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
    const book *k = &it->bk;
    for (int d = 0; d < it->n; d++) b->valid[d] = it->B;
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

static sl_status fetch(sl_iter *it, sl_iter_batch **out) {
    if (it->ended) return SL_EOF;
    if (it->bk.size >= 0 && it->bk.counter >= it->bk.size && it->bk.size > 0) return end_epoch(it);
    if (it->bk.size == 0) return end_epoch(it);
    SL_TRY(take(it, out));
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

void sl_iter_release(sl_iter *it, const sl_iter_batch *cb) {
    if (!cb) return;
    uintptr_t at = (uintptr_t)cb, lo = (uintptr_t)it->slots;
    bool ours = at >= lo && at < (uintptr_t)(it->slots + MAX_SLOTS) && (at - lo) % sizeof *cb == 0;
    sl_iter_batch *b = ours ? &it->slots[(at - lo) / sizeof *cb] : NULL;
    if (!b || !b->in_use || b == it->first) {
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
    book *k = &it->bk;
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
            k->size = ceil_div(mx, it->B) * it->B;
            if (k->size == 0) {
                memset(k->counter_per_gpu, 0, (size_t)S * sizeof(int64_t));
                k->counter = 0;
                int64_t last = k->shard_sizes[S - 1];
                memmove(k->shard_sizes + 1, k->shard_sizes, (size_t)(S - 1) * sizeof(int64_t));
                k->shard_sizes[0] = last;
                mx = 0;
                for (int i = 0; i < S; i++) mx = SL_MAX(mx, k->shard_sizes[i]);
                k->size = ceil_div(mx, it->B) * it->B;
            }
        }
    }
    k->epoch++;
    k->step = 0;
    it->ended = false;
}

int64_t sl_iter_size(const sl_iter *it) {
    return it->bk.size;
}
int64_t sl_iter_len(const sl_iter *it) {
    const book *k = &it->bk;
    if (k->size < 0) return -1;
    if (it->use_reader)
        return it->policy != SL_LAST_BATCH_DROP ? ceil_div(k->size, it->B) : k->size / it->B;
    return ceil_div(k->size, (int64_t)it->n * it->B);
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

/* ---- outputs -----------------------------------------------------------------------------------
 */

sl_status sl_iter_shard(const sl_iter_batch *b, int output, int dev, sl_tensor *out, sl_err *err) {
    if (dev < 0 || dev >= b->it->n)
        return sl_err_set(err, SL_EINVAL, "device %d of %d", dev, b->it->n);
    if (output < 0 || output >= b->it->nout)
        return sl_err_set(err, SL_EINVAL, "output %d of %d", output, b->it->nout);
    return sl_batch_tensor(b->b[dev], output, out, err);
}

const sl_tlist *sl_iter_shard_list(const sl_iter_batch *b, int output, int dev) {
    if (dev < 0 || dev >= b->it->n || output < 0 || output >= b->it->nout) return NULL;
    return sl_batch_output(b->b[dev], output);
}

sl_status sl_iter_global_shape(const sl_iter_batch *b, int output, int *ndim, int64_t *shape,
                               sl_err *err) {
    sl_tensor s;
    SL_TRY(sl_iter_shard(b, output, 0, &s, err));
    const sl_iter *it = b->it;
    if (it->layout == SL_LAYOUT_STACKED) {
        if (s.ndim + 1 > SL_MAX_DIMS) return sl_err_set(err, SL_EINVAL, "too many dims");
        shape[0] = it->n;
        memcpy(shape + 1, s.shape, (size_t)s.ndim * sizeof *shape);
        *ndim = s.ndim + 1;
    } else {
        memcpy(shape, s.shape, (size_t)s.ndim * sizeof *shape);
        shape[0] *= it->n;
        *ndim = s.ndim;
    }
    return SL_OK;
}

sl_status sl_iter_global(const sl_iter_batch *cb, int output, sl_tensor *out, sl_err *err) {
    sl_iter_batch *b = (sl_iter_batch *)cb;
    const sl_iter *it = b->it;
    if (output < 0 || output >= it->nout)
        return sl_err_set(err, SL_EINVAL, "output %d of %d", output, it->nout);
    if (b->global_ok[output]) {
        *out = b->global[output];
        out->alloc = NULL;
        return SL_OK;
    }
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    SL_TRY(sl_iter_global_shape(b, output, &ndim, shape, err));
    sl_tensor s0;
    SL_TRY(sl_iter_shard(b, output, 0, &s0, err));
    sl_tensor *g = &b->global[output];
    bool fits = g->alloc && g->dtype == s0.dtype && g->ndim == ndim &&
                !memcmp(g->shape, shape, (size_t)ndim * sizeof *shape);
    if (!fits) {
        sl_tensor_free(g);
        SL_TRY(sl_tensor_alloc(g, s0.dtype, sl_cpu(), ndim, shape, NULL, err));
    }
    size_t off = 0;
    for (int d = 0; d < it->n; d++) {
        sl_tensor s;
        SL_TRY(sl_iter_shard(b, output, d, &s, err));
        if (s.dtype != s0.dtype || s.ndim != s0.ndim ||
            memcmp(s.shape, s0.shape, (size_t)s.ndim * 8))
            return sl_err_set(err, SL_EINVAL, "output %s: device %d's shard differs in shape",
                              it->names[output], d);
        sl_tensor dst;
        sl_tensor_wrap(&dst, (char *)g->data + off, s.dtype, sl_cpu(), s.ndim, s.shape, NULL);
        SL_TRY(sl_tensor_copy(&dst, &s, NULL, err));
        off += sl_tensor_nbytes(&s);
    }
    b->global_ok[output] = true;
    *out = *g;
    out->alloc = NULL;
    return SL_OK;
}

#ifdef SLUICE_HAVE_DLPACK
static void dl_deleter(DLManagedTensor *m) {
    free(m->dl_tensor.shape);
    free(m);
}
#endif

sl_status sl_iter_dlpack(const sl_iter_batch *b, int output, int dev, void **managed, sl_err *err) {
    *managed = NULL;
#ifdef SLUICE_HAVE_DLPACK
    sl_tensor s;
    SL_TRY(sl_iter_shard(b, output, dev, &s, err));
    DLManagedTensor *m = sl__calloc(1, sizeof *m, err);
    if (!m) return SL_ENOMEM;
    m->dl_tensor.shape = sl__calloc((size_t)(2 * SL_MAX_DIMS), sizeof(int64_t), err);
    if (!m->dl_tensor.shape) {
        free(m);
        return SL_ENOMEM;
    }
    m->dl_tensor.strides = m->dl_tensor.shape + SL_MAX_DIMS;
    m->dl_tensor.data = s.data;
    m->dl_tensor.ndim = s.ndim;
    size_t esz = sl_dtype_size(s.dtype);
    for (int i = 0; i < s.ndim; i++) {
        m->dl_tensor.shape[i] = s.shape[i];
        m->dl_tensor.strides[i] = s.strides[i] / (int64_t)esz; /* DLPack strides are in elements */
    }
    m->dl_tensor.device.device_type = s.device.kind == SL_DEVICE_CUDA ? kDLCUDA : kDLCPU;
    m->dl_tensor.device.device_id = s.device.id;
    DLDataType t = {kDLUInt, 8, 1};
    switch (s.dtype) {
    case SL_DTYPE_U8:
        t = (DLDataType){kDLUInt, 8, 1};
        break;
    case SL_DTYPE_I8:
        t = (DLDataType){kDLInt, 8, 1};
        break;
    case SL_DTYPE_U16:
        t = (DLDataType){kDLUInt, 16, 1};
        break;
    case SL_DTYPE_I16:
        t = (DLDataType){kDLInt, 16, 1};
        break;
    case SL_DTYPE_I32:
        t = (DLDataType){kDLInt, 32, 1};
        break;
    case SL_DTYPE_I64:
        t = (DLDataType){kDLInt, 64, 1};
        break;
    case SL_DTYPE_F16:
        t = (DLDataType){kDLFloat, 16, 1};
        break;
    case SL_DTYPE_BF16:
        t = (DLDataType){kDLBfloat, 16, 1};
        break;
    case SL_DTYPE_F32:
        t = (DLDataType){kDLFloat, 32, 1};
        break;
    case SL_DTYPE_F64:
        t = (DLDataType){kDLFloat, 64, 1};
        break;
    case SL_DTYPE_BOOL:
        t = (DLDataType){kDLUInt, 8, 1};
        break; /* DLPack < 0.8 has no bool */
    case SL_DTYPE_COUNT:
        break;
    }
    m->dl_tensor.dtype = t;
    m->deleter = dl_deleter;
    *managed = m;
    return SL_OK;
#else
    (void)b, (void)output, (void)dev;
    return sl_err_set(err, SL_ENOTSUP, "this build of sluice has no DLPack (dlpack/dlpack.h)");
#endif
}

/* ---- checkpoints ------------------------------------------------------------------------------
 */

#define CK_MAGIC   0x4b434c53u /* "SLCK" */
#define CK_VERSION 1u
#define CK_GLOBAL  0x424f4c47 /* "GLOB" in ck_shape.seed_check: written in global order */

typedef struct {
    uint32_t magic, version, crc, pad;
    uint64_t payload;
} ck_header;

typedef struct {
    int32_t n, S, B, policy;
    int64_t seed_check;
} ck_shape;

static sl_status append(unsigned char **buf, size_t *len, size_t *cap, const void *data, size_t n) {
    if (*len + n > *cap) {
        size_t nc = *cap ? *cap * 2 : 4096;
        while (nc < *len + n) nc *= 2;
        unsigned char *nb = realloc(*buf, nc);
        if (!nb) return SL_ENOMEM;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    return SL_OK;
}

sl_status sl_iter_checkpoint(sl_iter *it, const char *path) {
    return sl_iter_checkpoint_with(it, path, NULL, 0);
}

sl_status sl_iter_save(sl_iter *it, const void *extra, size_t extra_size, void **out,
                       size_t *out_size) {
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    sl_status st = SL_OK;
    ck_header h = {CK_MAGIC, CK_VERSION, 0, 0, 0};
    ck_shape sh = {it->n, it->S, it->B, (int32_t)it->policy, it->global ? CK_GLOBAL : 0};
    const book *k = it->first_pending ? &it->bk_first : &it->bk;
    st = append(&buf, &len, &cap, &h, sizeof h);
    if (!st) st = append(&buf, &len, &cap, &sh, sizeof sh);
    if (!st) st = append(&buf, &len, &cap, k, sizeof *k);
    for (int d = 0; d < it->n && !st; d++) {
        void *ps = NULL;
        size_t pn = 0;
        sl_pipeline *p = it->pipes[d];
        st = sl__pipeline_checkpoint_save_at(p, p->taken - (it->first_pending ? 1 : 0), &ps, &pn);
        if (st) {
            sl_err_copy(&it->err, &p->err);
            free(buf);
            return st;
        }
        uint64_t n64 = pn;
        st = append(&buf, &len, &cap, &n64, sizeof n64);
        if (!st) st = append(&buf, &len, &cap, ps, pn);
        free(ps);
    }
    uint64_t e64 = extra ? extra_size : 0;
    if (!st) st = append(&buf, &len, &cap, &e64, sizeof e64);
    if (!st && e64) st = append(&buf, &len, &cap, extra, extra_size);
    if (st) {
        free(buf);
        return sl_err_set(&it->err, SL_ENOMEM, "out of memory writing a checkpoint");
    }
    ck_header *hp = (ck_header *)buf;
    hp->payload = len - sizeof h;
    hp->crc = (uint32_t)crc32(0L, buf + sizeof h, (uInt)(len - sizeof h));
    *out = buf;
    *out_size = len;
    return SL_OK;
}

sl_status sl_iter_checkpoint_with(sl_iter *it, const char *path, const void *extra,
                                  size_t extra_size) {
    void *bytes;
    size_t len;
    SL_TRY(sl_iter_save(it, extra, extra_size, &bytes, &len));
    sl_status st = sl__iter_write_file(path, bytes, len, &it->err);
    free(bytes);
    return st;
}

sl_status sl__iter_write_file(const char *path, const void *buf, size_t len, sl_err *err) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        return sl_err_set(err, SL_EIO, "checkpoint %s: %s", tmp, strerror(errno));
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, (const char *)buf + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    if (off < len || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return sl_err_set(err, SL_EIO, "checkpoint %s: write failed: %s", tmp, strerror(e));
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return sl_err_set(err, SL_EIO, "checkpoint %s: rename failed: %s", path, strerror(e));
    }
    return SL_OK;
}

static sl_status read_checkpoint(sl_iter *it, const char *path, void **out_buf, size_t *out_size,
                                 const unsigned char **states, uint64_t *lens, sl_err *err) {
    unsigned char *buf;
    size_t len;
    if (it->resume_bytes) { /* given in memory (the label names its origin) */
        len = it->resume_size;
        buf = malloc(len ? len : 1);
        if (!buf) return sl_err_set(err, SL_ENOMEM, "out of memory reading a checkpoint");
        memcpy(buf, it->resume_bytes, len);
    } else {
        FILE *f = fopen(path, "rb");
        if (!f) return sl_err_set(err, SL_EIO, "checkpoint %s: %s", path, strerror(errno));
        fseek(f, 0, SEEK_END);
        long fl = ftell(f);
        fseek(f, 0, SEEK_SET);
        buf = fl > 0 ? malloc((size_t)fl) : NULL;
        if (!buf || fread(buf, 1, (size_t)fl, f) != (size_t)fl) {
            fclose(f);
            free(buf);
            return sl_err_set(err, SL_EFORMAT, "checkpoint %s: empty or unreadable", path);
        }
        fclose(f);
        len = (size_t)fl;
    }
    ck_header h;
    sl_status st = SL_EFORMAT;
    if (len < sizeof h) {
        sl_err_set(err, st, "checkpoint %s: truncated (%zu bytes)", path, len);
        goto bad;
    }
    memcpy(&h, buf, sizeof h);
    if (h.magic != CK_MAGIC) {
        sl_err_set(err, st, "checkpoint %s: not a sluice checkpoint", path);
        goto bad;
    }
    if (h.version != CK_VERSION) {
        sl_err_set(err, st, "checkpoint %s: version %u (this sluice reads %u)", path, h.version,
                   CK_VERSION);
        goto bad;
    }
    if (h.payload != len - sizeof h) {
        sl_err_set(err, st, "checkpoint %s: truncated (%zu of %llu bytes)", path, len - sizeof h,
                   (unsigned long long)h.payload);
        goto bad;
    }
    if ((uint32_t)crc32(0L, buf + sizeof h, (uInt)(len - sizeof h)) != h.crc) {
        st = SL_ECHECKSUM;
        sl_err_set(err, st, "checkpoint %s: checksum mismatch (the file was altered or damaged)",
                   path);
        goto bad;
    }
    const unsigned char *p = buf + sizeof h, *end = buf + len;
    ck_shape sh;
    if ((size_t)(end - p) < sizeof sh + sizeof(book)) {
        sl_err_set(err, st, "checkpoint %s: truncated", path);
        goto bad;
    }
    memcpy(&sh, p, sizeof sh);
    p += sizeof sh;
    if (sh.policy != (int32_t)it->policy) {
        st = SL_EINVAL;
        sl_err_set(err, st, "checkpoint %s: field policy: last_batch_policy %d, this run has %d",
                   path, sh.policy, (int)it->policy);
        goto bad;
    }
    if ((sh.seed_check == CK_GLOBAL) != it->global) {
        st = SL_EINVAL;
        sl_err_set(err, st, "checkpoint %s was written in %s order; this run is in %s order", path,
                   sh.seed_check == CK_GLOBAL ? "global" : "DALI's",
                   it->global ? "global" : "DALI's");
        goto bad;
    }
    /* global order resumes on any split of the same global batch: the pipelines' states are
     * positions in it, the same for every shard */
    bool elastic = it->global && sh.n >= 1 && sh.n <= SL_MAX_DEVICES && sh.S >= sh.n && sh.B >= 1 &&
                   (int64_t)sh.S * sh.B == (int64_t)it->S * it->B;
    if (!elastic && (sh.n != it->n || sh.S != it->S || sh.B != it->B)) {
        st = SL_EINVAL;
        sl_err_set(err, st,
                   "checkpoint %s was written by %d devices of %d shards at batch %d; this run has "
                   "%d devices of %d shards at batch %d%s",
                   path, sh.n, sh.S, sh.B, it->n, it->S, it->B,
                   it->global ? " (global order resumes on another device count only with the "
                                "same global batch)"
                              : " (DALI's order resumes only on the same shards; global order "
                                "resumes on any)");
        goto bad;
    }
    memcpy(&it->bk, p, sizeof(book));
    p += sizeof(book);
    if (it->global) { /* a device's samples this epoch and per epoch: steps times its batch */
        const int64_t most = INT64_MAX / 4 / it->B;
        int64_t *f[2] = {&it->bk.counter, &it->bk.size};
        for (int i = 0; i < 2; i++) {
            if (*f[i] < 0 || *f[i] % sh.B || *f[i] / sh.B > most) {
                sl_err_set(err, st, "checkpoint %s: field %s: %lld is not a count of batches of %d",
                           path, i ? "size" : "counter", (long long)*f[i], sh.B);
                goto bad;
            }
            *f[i] = *f[i] / sh.B * it->B;
        }
    }
    int written = elastic ? sh.n : it->n;
    for (int d = 0; d < written; d++) {
        if ((size_t)(end - p) < 8) goto trunc;
        memcpy(&lens[d], p, 8);
        p += 8;
        if (lens[d] > (uint64_t)(end - p)) goto trunc;
        states[d] = p;
        p += lens[d];
    }
    for (int d = written; d < it->n; d++) { /* elastic: every shard starts from the same place */
        states[d] = states[0];
        lens[d] = lens[0];
    }
    uint64_t e64;
    if ((size_t)(end - p) < 8) goto trunc;
    memcpy(&e64, p, 8);
    p += 8;
    if (e64 != (uint64_t)(end - p)) goto trunc;
    if (e64) {
        it->extra = malloc((size_t)e64);
        if (!it->extra) {
            st = sl_err_set(err, SL_ENOMEM, "out of memory");
            goto bad;
        }
        memcpy(it->extra, p, (size_t)e64);
        it->extra_size = (size_t)e64;
    }
    *out_buf = buf;
    *out_size = len;
    return SL_OK;
trunc:
    sl_err_set(err, st, "checkpoint %s: truncated", path);
bad:
    free(buf);
    return st;
}

const void *sl_iter_resumed_extra(const sl_iter *it, size_t *size) {
    *size = it->extra_size;
    return it->extra;
}
