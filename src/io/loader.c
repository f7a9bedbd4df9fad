/* SPDX-License-Identifier: Apache-2.0 */
/* The loader core (see loader.h): shard arithmetic, epoch rotation, the initial_fill shuffle window
 * of DALI's Loader::ReadOne, padding, per-epoch global permutations, and checkpoints of it all.
 *
 * Model: a *read* side streams records in shard order (epoch e reads shard vshard(e) = shard_id, or
 * (shard_id + e) % S when rotating; through perm_e with shuffle_after_epoch) into a ring of F
 * slots; a *consume* side returns, for stream positions [consumed, read), a random slot among those
 * that belong to the current epoch (the window shrinks at the epoch's end), exactly as DALI's
 * `shards_` deque of {start, end} windows does, with the deque reduced to the front window's end.
 */
#include "io/loader.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/perm.h"
#include "core/rng.h"

#include <stdlib.h>
#include <string.h>

/* the shuffle buffer's random stream (with the reader's seed) */
#define LOADER_STREAM 0x5eed10adULL

typedef struct sl__loader_pos {
    int64_t consumed, read; /* stream positions */
    int64_t cons_epoch;     /* epoch of the front window */
    int64_t cons_end;       /* stream position where it ends */
    int64_t read_epoch;     /* epoch the read side is in */
    int64_t read_left;      /* records left to read in it */
    int64_t read_list;      /* next position in the (permuted) record list */
    int64_t returned;       /* samples returned in the consume epoch (padding counts) */
    int64_t last;           /* last record returned, -1 before any */
} sl__loader_pos;

struct sl__loader {
    sl__loader_cfg cfg;
    int64_t fill;       /* F: ring slots */
    int64_t *ring;      /* F record indices */
    uint32_t *perm;     /* n entries with shuffle_after_epoch */
    int64_t perm_epoch; /* epoch perm holds, -1 none */
    sl__rng_philox rng;
    sl__loader_pos pos;
    /* global order */
    int64_t g;        /* G, the global batch */
    int64_t steps;    /* batches per epoch */
    int64_t step;     /* the batch being read (the next one before the first sample) */
    int64_t in_batch; /* samples of it read */
    bool started;     /* step's first sample has been read */
    sl__perm gperm;   /* the order of epoch gperm_epoch */
    int64_t gperm_epoch;
};

static int vshard(const sl__loader *l, int64_t epoch) {
    if (l->cfg.stick_to_shard) return l->cfg.shard_id;
    return (int)((l->cfg.shard_id + epoch) % l->cfg.num_shards);
}

static int64_t shard_size(const sl__loader *l, int s) {
    return sl__loader_shard_size(l->cfg.n, l->cfg.num_shards, s);
}

/* perm = a Fisher-Yates shuffle of [0, n) from the Philox stream (perm_seed, epoch) */
static void make_perm(sl__loader *l, int64_t epoch) {
    int64_t n = l->cfg.n;
    sl__rng_philox r;
    sl__rng_philox_init(&r, l->cfg.perm_seed, (uint64_t)epoch);
    for (int64_t i = 0; i < n; i++) l->perm[i] = (uint32_t)i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)sl__rng_philox_below(&r, (uint64_t)i + 1);
        uint32_t t = l->perm[i];
        l->perm[i] = l->perm[j];
        l->perm[j] = t;
    }
    l->perm_epoch = epoch;
}

static void start_read_epoch(sl__loader *l, int64_t epoch) {
    int s = vshard(l, epoch);
    l->pos.read_epoch = epoch;
    l->pos.read_list = sl__loader_shard_begin(l->cfg.n, l->cfg.num_shards, s);
    l->pos.read_left = shard_size(l, s);
    if (l->perm && l->perm_epoch != epoch) make_perm(l, epoch);
}

static int64_t read_one(sl__loader *l) {
    if (l->pos.read_left == 0) start_read_epoch(l, l->pos.read_epoch + 1);
    int64_t i = l->pos.read_list++;
    l->pos.read_left--;
    return l->perm ? (int64_t)l->perm[i] : i;
}

static void reset(sl__loader *l) {
    memset(&l->pos, 0, sizeof l->pos);
    l->pos.last = -1;
    l->pos.cons_end = shard_size(l, vshard(l, 0));
    sl__rng_philox_init(&l->rng, l->cfg.seed, LOADER_STREAM);
    start_read_epoch(l, 0);
    for (int64_t k = 0; k < l->fill; k++) l->ring[k] = read_one(l);
    l->pos.read = l->fill;
}

/* ---- global order --------------------------------------------------------------------------- */

static sl_status create_global(const sl__loader_cfg *cfg, sl__loader **out, sl_err *err) {
    if (cfg->batch < 1) return sl_err_set(err, SL_EINVAL, "global order: batch %d", cfg->batch);
    if (cfg->n > INT64_MAX / 4 / ((int64_t)cfg->num_shards * cfg->batch))
        return sl_err_set(err, SL_EINVAL, "data set too large (%lld records)", (long long)cfg->n);
    const int64_t g = (int64_t)cfg->num_shards * cfg->batch;
    if (cfg->global_drop && cfg->n < g)
        return sl_err_set(err, SL_EINVAL,
                          "the global batch of %lld is larger than the data set (%lld records): "
                          "dropping the last batch leaves none",
                          (long long)g, (long long)cfg->n);
    const char *bad = cfg->shuffle_after_epoch ? "shuffle_after_epoch"
                      : cfg->pad_last_batch    ? "pad_last_batch"
                      : cfg->stick_to_shard    ? "stick_to_shard"
                                               : NULL;
    if (bad)
        return sl_err_set(err, SL_EINVAL,
                          "%s has no meaning in global order (every epoch is one order of all the "
                          "records; the iterator's last-batch policy fills or drops the last "
                          "batch)",
                          bad);
    sl__loader *l = sl__calloc(1, sizeof *l, err);
    if (!l) return SL_ENOMEM;
    l->cfg = *cfg;
    l->g = g;
    l->steps = cfg->global_drop ? cfg->n / g : (cfg->n + g - 1) / g;
    l->gperm_epoch = -1;
    *out = l;
    return SL_OK;
}

static int64_t next_global(sl__loader *l, bool is_new_batch) {
    if (is_new_batch) {
        if (l->started) l->step++;
        l->started = true;
        l->in_batch = 0;
    }
    int64_t epoch = l->step / l->steps, t = l->step % l->steps;
    int64_t q = t * l->g + (int64_t)l->cfg.shard_id * l->cfg.batch + l->in_batch++;
    if (q >= l->cfg.n) q %= l->cfg.n; /* the last batch, filled from the epoch's start */
    if (!l->cfg.random_shuffle) return q;
    if (l->gperm_epoch != epoch) {
        sl__perm_init(&l->gperm, (uint64_t)l->cfg.n, l->cfg.seed, (uint64_t)epoch);
        l->gperm_epoch = epoch;
    }
    return (int64_t)sl__perm_at(&l->gperm, (uint64_t)q);
}

/* A global-order checkpoint: the data set, the global batch and the order's key, and the next
 * batch -- nothing about the shard, so it resumes on any split of the same global batch. */
typedef struct global_blob {
    char magic[8];
    int64_t n, g;
    uint64_t seed;
    uint32_t flags, pad_;
    int64_t next_step;
} global_blob;

static uint32_t global_flags(const sl__loader_cfg *c) {
    return (uint32_t)c->random_shuffle | (uint32_t)c->global_drop << 1;
}

static sl_status save_global(const sl__loader *l, void **bytes, size_t *size, sl_err *err) {
    global_blob *b = sl__calloc(1, sizeof *b, err);
    if (!b) return SL_ENOMEM;
    memcpy(b->magic, "SLGLOB1", 8);
    b->n = l->cfg.n;
    b->g = l->g;
    b->seed = l->cfg.seed;
    b->flags = global_flags(&l->cfg);
    b->next_step = l->started ? l->step + 1 : l->step;
    *bytes = b;
    *size = sizeof *b;
    return SL_OK;
}

static sl_status restore_global(sl__loader *l, const void *bytes, size_t size, sl_err *err) {
    global_blob b;
    if (size != sizeof b)
        return sl_err_set(err, SL_EFORMAT,
                          "reader checkpoint: %zu bytes, a global-order one has %zu", size,
                          sizeof b);
    memcpy(&b, bytes, sizeof b);
    if (memcmp(b.magic, "SLGLOB1", 8) != 0)
        return sl_err_set(err, SL_EINVAL,
                          "reader checkpoint: not of a reader in global order (it was written in "
                          "DALI's order, which resumes only on the same shards)");
    if (b.n != l->cfg.n || b.g != l->g || b.seed != l->cfg.seed || b.flags != global_flags(&l->cfg))
        return sl_err_set(
            err, SL_EINVAL,
            "reader checkpoint was saved by a reader of another data set, global "
            "batch, seed or shuffle (%lld records, global batch %lld; this one: %lld, "
            "%lld)",
            (long long)b.n, (long long)b.g, (long long)l->cfg.n, (long long)l->g);
    if (b.next_step < 0 || b.next_step > INT64_MAX / 4 / l->g)
        return sl_err_set(err, SL_EFORMAT, "reader checkpoint: batch %lld out of range",
                          (long long)b.next_step);
    l->step = b.next_step;
    l->started = false;
    l->in_batch = 0;
    return SL_OK;
}

sl_status sl__loader_create(const sl__loader_cfg *cfg, sl__loader **out, sl_err *err) {
    *out = NULL;
    if (cfg->num_shards < 1)
        return sl_err_set(err, SL_EINVAL, "num_shards must be >= 1 (got %d)", cfg->num_shards);
    if (cfg->shard_id < 0 || cfg->shard_id >= cfg->num_shards)
        return sl_err_set(err, SL_EINVAL, "shard_id %d is out of range for num_shards %d",
                          cfg->shard_id, cfg->num_shards);
    if (cfg->n < 1) return sl_err_set(err, SL_EINVAL, "the data set is empty");
    if (cfg->global_order) return create_global(cfg, out, err);
    if (cfg->n < cfg->num_shards)
        return sl_err_set(err, SL_EINVAL,
                          "num_shards %d is larger than the data set (%lld records)",
                          cfg->num_shards, (long long)cfg->n);
    if (cfg->n > INT64_MAX / cfg->num_shards)
        return sl_err_set(err, SL_EINVAL, "data set too large (%lld records)", (long long)cfg->n);
    if (cfg->shuffle_after_epoch && cfg->n > (int64_t)UINT32_MAX)
        return sl_err_set(err, SL_ENOTSUP, "shuffle_after_epoch supports up to 2^32 records");
    if (cfg->random_shuffle && cfg->initial_fill < 1)
        return sl_err_set(err, SL_EINVAL, "initial_fill must be >= 1 (got %d)", cfg->initial_fill);
    sl__loader *l = sl__calloc(1, sizeof *l, err);
    if (!l) return SL_ENOMEM;
    l->cfg = *cfg;
    l->fill = cfg->random_shuffle ? cfg->initial_fill : 1;
    l->perm_epoch = -1;
    l->ring = sl__malloc((size_t)l->fill * sizeof *l->ring, err);
    if (!l->ring) {
        sl__loader_free(l);
        return SL_ENOMEM;
    }
    if (cfg->shuffle_after_epoch) {
        l->perm = sl__malloc((size_t)cfg->n * sizeof *l->perm, err);
        if (!l->perm) {
            sl__loader_free(l);
            return SL_ENOMEM;
        }
    }
    reset(l);
    *out = l;
    return SL_OK;
}

int64_t sl__loader_next(sl__loader *l, bool is_new_batch, bool *padded) {
    sl__loader_pos *p = &l->pos;
    if (padded) *padded = false;
    if (l->cfg.global_order) return next_global(l, is_new_batch);
    if (p->consumed == p->cons_end) { /* this epoch's window is drained */
        int64_t per_shard = (l->cfg.n + l->cfg.num_shards - 1) / l->cfg.num_shards;
        if (l->cfg.pad_last_batch && (p->returned < per_shard || !is_new_batch)) {
            p->returned++;
            if (padded) *padded = true;
            return p->last;
        }
        p->cons_epoch++;
        p->cons_end += shard_size(l, vshard(l, p->cons_epoch));
        p->returned = 0;
    }
    int64_t avail = SL_MIN(p->read, p->cons_end) - p->consumed;
    int64_t k = l->cfg.random_shuffle ? (int64_t)sl__rng_philox_below(&l->rng, (uint64_t)avail) : 0;
    int64_t a = p->consumed % l->fill, b = (p->consumed + k) % l->fill;
    int64_t rec = l->ring[b];
    l->ring[b] = l->ring[a];
    l->ring[p->read % l->fill] = read_one(l); /* read % fill == a: the slot just freed */
    p->read++;
    p->consumed++;
    p->returned++;
    p->last = rec;
    return rec;
}

int64_t sl__loader_epoch(const sl__loader *l) {
    if (l->cfg.global_order) return l->step / l->steps;
    return l->pos.cons_epoch;
}

void sl__loader_meta(const sl__loader *l, sl_reader_meta *meta) {
    int64_t n = l->cfg.n, s = l->cfg.num_shards;
    meta->epoch_size = n;
    meta->epoch_size_padded = l->cfg.pad_last_batch ? (n + s - 1) / s * s : n;
    meta->number_of_shards = l->cfg.num_shards;
    meta->shard_id = l->cfg.shard_id;
    meta->pad_last_batch = l->cfg.pad_last_batch;
    meta->stick_to_shard = l->cfg.stick_to_shard;
}

/* checkpoint blob: header, position, RNG, ring */
typedef struct sl__loader_blob {
    char magic[8];
    int64_t n, fill;
    int32_t num_shards, shard_id;
    uint32_t flags;
    uint32_t pad_;
    uint64_t seed, perm_seed;
    sl__loader_pos pos;
    sl__rng_philox rng;
} sl__loader_blob;

static uint32_t cfg_flags(const sl__loader_cfg *c) {
    return (uint32_t)c->random_shuffle | (uint32_t)c->stick_to_shard << 1 |
           (uint32_t)c->pad_last_batch << 2 | (uint32_t)c->shuffle_after_epoch << 3;
}

static void fill_header(const sl__loader *l, sl__loader_blob *h) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, "SLLOAD1", 8);
    h->n = l->cfg.n;
    h->fill = l->fill;
    h->num_shards = l->cfg.num_shards;
    h->shard_id = l->cfg.shard_id;
    h->flags = cfg_flags(&l->cfg);
    h->seed = l->cfg.seed;
    h->perm_seed = l->cfg.perm_seed;
}

sl_status sl__loader_save(const sl__loader *l, void **bytes, size_t *size, sl_err *err) {
    if (l->cfg.global_order) return save_global(l, bytes, size, err);
    size_t n = sizeof(sl__loader_blob) + (size_t)l->fill * sizeof(int64_t);
    unsigned char *b = sl__malloc(n, err);
    if (!b) return SL_ENOMEM;
    sl__loader_blob h;
    fill_header(l, &h);
    h.pos = l->pos;
    h.rng = l->rng;
    memcpy(b, &h, sizeof h);
    memcpy(b + sizeof h, l->ring, (size_t)l->fill * sizeof(int64_t));
    *bytes = b;
    *size = n;
    return SL_OK;
}

/* Records of epochs [0, e) in the stream (e at most INT64_MAX / 4 / n, so no overflow). */
static int64_t stream_before(const sl__loader *l, int64_t e) {
    if (l->cfg.stick_to_shard) return e * shard_size(l, l->cfg.shard_id);
    int S = l->cfg.num_shards;
    int64_t t = e / S * l->cfg.n; /* S epochs in a row read every shard once */
    for (int64_t k = 0; k < e % S; k++) t += shard_size(l, (int)((l->cfg.shard_id + k) % S));
    return t;
}

/* The blob's position and ring against the invariants next() keeps (the stream positions agree
 * with the epochs and what is left of them, every record index is in range), so that a damaged or
 * forged checkpoint is refused instead of indexing outside the ring, the permutation or the
 * store. */
static sl_status check_pos(const sl__loader *l, const sl__loader_pos *p, const unsigned char *ring,
                           sl_err *err) {
    const int64_t n = l->cfg.n, max_epoch = INT64_MAX / 4 / n;
    bool ok = p->cons_epoch >= 0 && p->cons_epoch < max_epoch && p->read_epoch >= p->cons_epoch &&
              p->read_epoch < max_epoch && p->returned >= 0 && p->returned <= INT64_MAX / 4 &&
              p->last >= -1 && p->last < n;
    if (ok) {
        int s = vshard(l, p->read_epoch);
        int64_t begin = sl__loader_shard_begin(n, l->cfg.num_shards, s), size = shard_size(l, s);
        int64_t cons_start = stream_before(l, p->cons_epoch);
        ok = p->read_left >= 0 && p->read_left <= size &&
             p->read_list == begin + (size - p->read_left) &&
             p->read == stream_before(l, p->read_epoch) + size - p->read_left &&
             p->cons_end == stream_before(l, p->cons_epoch + 1) && p->consumed >= cons_start &&
             p->consumed <= p->cons_end && p->read - p->consumed == l->fill;
    }
    for (int64_t k = 0; ok && k < l->fill; k++) {
        int64_t r;
        memcpy(&r, ring + (size_t)k * sizeof r, sizeof r);
        ok = r >= 0 && r < n;
    }
    if (!ok)
        return sl_err_set(err, SL_EFORMAT,
                          "reader checkpoint: damaged position (record or stream position out of "
                          "range for %lld records)",
                          (long long)n);
    return SL_OK;
}

sl_status sl__loader_restore(sl__loader *l, const void *bytes, size_t size, sl_err *err) {
    if (l->cfg.global_order) return restore_global(l, bytes, size, err);
    sl__loader_blob h, want;
    if (size != sizeof h + (size_t)l->fill * sizeof(int64_t))
        return sl_err_set(err, SL_EFORMAT, "reader checkpoint: %zu bytes, expected %zu", size,
                          sizeof h + (size_t)l->fill * sizeof(int64_t));
    memcpy(&h, bytes, sizeof h);
    fill_header(l, &want);
    if (memcmp(h.magic, want.magic, 8) != 0)
        return sl_err_set(err, SL_EFORMAT, "reader checkpoint: not a loader state");
    if (h.n != want.n || h.fill != want.fill || h.num_shards != want.num_shards ||
        h.shard_id != want.shard_id || h.flags != want.flags || h.seed != want.seed ||
        h.perm_seed != want.perm_seed)
        return sl_err_set(err, SL_EINVAL,
                          "reader checkpoint was saved by a differently configured reader "
                          "(%lld records, shard %d/%d)",
                          (long long)h.n, h.shard_id, h.num_shards);
    SL_TRY(check_pos(l, &h.pos, (const unsigned char *)bytes + sizeof h, err));
    if (!sl__rng_philox_valid(&h.rng, l->cfg.seed, LOADER_STREAM))
        return sl_err_set(err, SL_EFORMAT,
                          "reader checkpoint: damaged random state (not the shuffle stream of "
                          "seed %llu)",
                          (unsigned long long)l->cfg.seed);
    l->pos = h.pos;
    l->rng = h.rng;
    memcpy(l->ring, (const unsigned char *)bytes + sizeof h, (size_t)l->fill * sizeof(int64_t));
    if (l->perm && l->perm_epoch != l->pos.read_epoch) make_perm(l, l->pos.read_epoch);
    return SL_OK;
}

void sl__loader_free(sl__loader *l) {
    if (!l) return;
    free(l->ring);
    free(l->perm);
    free(l);
}
