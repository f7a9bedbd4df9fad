/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image's decoded-image cache (decode_image_cache.h): DALI's decoder cache, per op
 * instance: decoded images keyed by record key, in host memory on a CPU pipeline and in device
 * memory on a GPU one, in one arena of cache_size MB that is filled front to back and never
 * evicted. "threshold" keeps every image of at least cache_threshold bytes until the arena is full.
 * "largest" (as DALI's) only notes sizes in the first epoch; when a key comes back it picks the
 * largest images that fit and keeps those from then on. Every decision is made in setup (it knows
 * the keys and shapes); a key is a hit from the batch after the one that stored it (the copy into
 * the cache has happened by then: the CPU stage runs batches in order, and on a GPU the copies are
 * ordered on the pipeline's stream). The index is open addressing over hashed keys. */
#include "ops/decode_image_cache.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_NVJPEG
#include "core/cuda.h"
#endif

typedef struct sl__decode_image_cache_ent {
    uint64_t hash;
    char small[24]; /* the key when it is shorter: one cache line less to fetch per lookup */
    char *key;      /* else the key (malloc'd); NULL when it is in small */
    int64_t shape[3];
    sl__decode_image_info info; /* the stored image's header facts: setup needs no peek */
    size_t enc_len;             /* its record's length: a record of another length under this
                                   key is another image (decoded, not served from here) */
    size_t bytes;
    size_t off;    /* in the arena; SIZE_MAX while not stored */
    int64_t batch; /* the batch that stored it */
    bool want;     /* largest: chosen to be kept */
} cache_ent;

/* FNV-1a, then a 64-bit finaliser (splitmix64's): FNV's low bits, which pick the slot, hardly
 * differ between keys like "00000001" and "00000257", and linear probing made long runs of them */
static uint64_t key_hash(const char *k) {
    uint64_t h = 1469598103934665603ull;
    for (; *k; k++) h = (h ^ (uint8_t)*k) * 1099511628211ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static cache_ent *cache_find(sl__decode_image_cache *c, const char *key, uint64_t h) {
    if (!c->nslots) return NULL;
    for (int m = c->nslots - 1, j = (int)(h & (uint64_t)m);; j = (j + 1) & m) {
        int e = c->slots[j];
        if (!e) return NULL;
        cache_ent *x = &c->ents[e - 1];
        if (x->hash == h && !strcmp(x->key ? x->key : x->small, key)) return x;
    }
}

static cache_ent *cache_add(sl__decode_image_cache *c, const char *key, uint64_t h) {
    if (2 * (c->n + 1) > c->nslots) { /* grow the table, keep the load under one half */
        int ns = c->nslots ? 2 * c->nslots : 1024;
        int *sl = calloc((size_t)ns, sizeof *sl);
        if (!sl) return NULL;
        for (int e = 0; e < c->n; e++)
            for (int j = (int)(c->ents[e].hash & (uint64_t)(ns - 1));; j = (j + 1) & (ns - 1))
                if (!sl[j]) {
                    sl[j] = e + 1;
                    break;
                }
        free(c->slots);
        c->slots = sl;
        c->nslots = ns;
    }
    if (c->n == c->ents_cap) {
        int nc = c->ents_cap ? 2 * c->ents_cap : 1024;
        cache_ent *ne = realloc(c->ents, (size_t)nc * sizeof *ne);
        if (!ne) return NULL;
        c->ents = ne;
        c->ents_cap = nc;
    }
    cache_ent *x = &c->ents[c->n];
    memset(x, 0, sizeof *x);
    size_t kn = strlen(key);
    if (kn < sizeof x->small)
        memcpy(x->small, key, kn + 1);
    else if (!(x->key = strdup(key)))
        return NULL;
    x->hash = h;
    x->off = SIZE_MAX;
    x->batch = -1;
    for (int j = (int)(h & (uint64_t)(c->nslots - 1));; j = (j + 1) & (c->nslots - 1))
        if (!c->slots[j]) {
            c->slots[j] = ++c->n;
            break;
        }
    return x;
}

void sl__decode_image_cache_free(sl__decode_image_cache *c) {
    if (!c) return;
    for (int e = 0; e < c->n; e++) free(c->ents[e].key);
    free(c->ents);
    free(c->slots);
    free(c->hit);
    free(c->put);
    free(c->hash);
    free(c->ent);
    free(c->run);
    sl__alloc_host_free(c->host);
#ifdef SLUICE_HAVE_NVJPEG
    if (c->dev) {
        sl_err e;
        sl__devpool *pool = sl__devpool_get(c->dev_id, &e);
        if (pool) sl__devpool_free(pool, c->dev);
    }
#endif
    free(c);
}

static int cmp_bytes_desc(const void *a, const void *b) {
    const cache_ent *x = *(cache_ent *const *)a, *y = *(cache_ent *const *)b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* largest: a key came back, so one epoch has been seen; keep the largest images that fit. */
static void cache_choose(sl__decode_image_cache *c) {
    c->chosen = true;
    cache_ent **v = malloc((size_t)(c->n ? c->n : 1) * sizeof *v);
    if (!v) return; /* nothing kept: the cache stays empty, outputs are the same */
    for (int e = 0; e < c->n; e++) v[e] = &c->ents[e];
    qsort(v, (size_t)c->n, sizeof *v, cmp_bytes_desc);
    size_t sum = 0;
    for (int e = 0; e < c->n; e++)
        if (sum + v[e]->bytes <= c->cap) v[e]->want = true, sum += v[e]->bytes;
    free(v);
}

/* Decides a sample of batch `batch` (its key's hash h, and its entry + 1 as setup found it, 0 when
 * it found none; the header facts info, its record's length enc_len): *hit = offset + 1 of its
 * stored image, or *put = offset + 1 where its decoded image is to be kept (both 0: decode, do not
 * keep). */
static sl_status cache_decide(sl__decode_image_cache *c, const char *key, uint64_t h, int ent,
                              const sl__decode_image_info *info, size_t enc_len,
                              const int64_t *shape, int64_t batch, size_t *hit, size_t *put,
                              sl_err *err) {
    *hit = *put = 0;
    size_t bytes = (size_t)(shape[0] * shape[1] * shape[2]);
    /* none found by setup: an earlier sample of this batch may have added the key since */
    cache_ent *x = ent ? &c->ents[ent - 1] : cache_find(c, key, h);
    if (x && x->off != SIZE_MAX) {
        if (x->batch < batch && x->enc_len == enc_len && x->shape[0] == shape[0] &&
            x->shape[1] == shape[1] && x->shape[2] == shape[2]) {
            *hit = x->off + 1;
            return SL_OK;
        }
        /* stored by this very batch (a key twice in it), or another record under the same key
         * (two stores with overlapping keys): decoded, not kept */
        return SL_OK;
    }
    if (c->largest && !c->chosen && x) cache_choose(c); /* a key is back: epoch 1 is over */
    bool keep;
    if (c->largest)
        keep = c->chosen && x && x->want;
    else
        keep = bytes >= c->threshold;
    if (keep && c->used + bytes > c->cap) keep = false;
    if (!x && (keep || (c->largest && !c->chosen))) {
        if (!(x = cache_add(c, key, h)))
            return sl_err_set(err, SL_ENOMEM, "decoders.image: out of memory for the cache index");
        x->bytes = bytes;
    }
    if (!keep) return SL_OK;
    if (!c->device && !c->host) {
        c->host = sl__alloc_host(c->cap, 64, err);
        if (!c->host) return err->status;
    }
    x->off = c->used;
    x->batch = batch;
    memcpy(x->shape, shape, sizeof x->shape);
    x->info = *info;
    x->enc_len = enc_len;
    c->used += (bytes + 15) & ~(size_t)15;
    if (c->used > c->cap) c->used = c->cap;
    *put = x->off + 1;
    return SL_OK;
}

/* The per-sample arrays for a batch of n. */
sl_status sl__decode_image_cache_batch(sl__decode_image_cache *c, int n, sl_err *err) {
    if (n <= c->cap_batch) return SL_OK;
    free(c->hit), free(c->put), free(c->hash), free(c->ent), free(c->run);
    c->cap_batch = 0;
    c->hit = sl__calloc((size_t)n, sizeof *c->hit, err);
    c->put = sl__calloc((size_t)n, sizeof *c->put, err);
    c->hash = sl__calloc((size_t)n, sizeof *c->hash, err);
    c->ent = sl__calloc((size_t)n, sizeof *c->ent, err);
    c->run = sl__calloc((size_t)n, sizeof *c->run, err);
    if (!c->hit || !c->put || !c->hash || !c->ent || !c->run) return SL_ENOMEM;
    c->cap_batch = n;
    return SL_OK;
}

/* setup's first step: finds every key of the batch (c->hash, c->ent). The index is far larger
 * than the CPU caches and each lookup would wait on its slot, then its entry: all slots are
 * fetched ahead first, then all entries, then they are read. */
void sl__decode_image_cache_lookup(sl__decode_image_cache *c, const sl__op_io *io) {
    int n = io->batch, m = c->nslots - 1;
    for (int i = 0; i < n; i++) {
        c->ent[i] = 0;
        c->hash[i] = io->keys && io->keys[i] ? key_hash(io->keys[i]) : 0;
        if (c->nslots) __builtin_prefetch(&c->slots[c->hash[i] & (uint64_t)m]);
    }
    if (!c->nslots || !io->keys) return;
    for (int i = 0; i < n; i++) {
        int e = c->slots[c->hash[i] & (uint64_t)m];
        if (e) __builtin_prefetch(&c->ents[e - 1]), __builtin_prefetch(&c->ents[e - 1].info);
    }
    for (int i = 0; i < n; i++) {
        if (!io->keys[i]) continue;
        cache_ent *x = cache_find(c, io->keys[i], c->hash[i]);
        c->ent[i] = x ? (int)(x - c->ents) + 1 : 0;
    }
}

/* Then for sample i: when the cache holds its image (stored by an earlier batch, from a record of
 * the same length), fills *info from the entry instead of peeking at the record's headers. */
bool sl__decode_image_cache_known(sl__decode_image_cache *c, const sl__op_io *io, int i,
                                  sl__decode_image_info *info) {
    if (!c->ent[i]) return false;
    const cache_ent *x = &c->ents[c->ent[i] - 1];
    if (x->off == SIZE_MAX || x->batch >= io->iteration ||
        x->enc_len != sl_tlist_sample_nbytes(io->in[0], i))
        return false;
    *info = x->info;
    return true;
}

/* setup's cache step: decides every sample from its key and shape (io->out[0] is sized). */
sl_status sl__decode_image_cache_plan(sl__decode_image_state *s, sl__op_io *io, size_t *hit,
                                      size_t *put, sl_err *err) {
    sl__decode_image_cache *c = s->cache;
    const sl_tlist *out = io->out[0];
    int nh = 0, np = 0;
    for (int i = 0; i < io->batch; i++) {
        hit[i] = put[i] = 0;
        if (!io->keys || !io->keys[i] || s->info[i].format == 0) continue;
        SL_TRY(cache_decide(c, io->keys[i], c->hash[i], c->ent[i], &s->info[i],
                            sl_tlist_sample_nbytes(io->in[0], i), sl_tlist_shape(out, i),
                            io->iteration, &hit[i], &put[i], err));
        nh += hit[i] != 0;
        np += put[i] != 0;
    }
    __atomic_fetch_add(&c->hits, nh, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->misses, io->batch - nh, __ATOMIC_RELAXED);
    if (c->debug)
        sl__log(SL_LOG_INFO, "%s cache: batch %lld: %d hits, %d misses, %d kept (%zu of %zu bytes)",
                s->name, (long long)io->iteration, nh, io->batch - nh, np, c->used, c->cap);
    return SL_OK;
}

sl_status sl__decode_image_cache_create(sl__decode_image_state *s, const sl__args *a,
                                        const sl__op_init *init, sl_err *err) {
    bool has = false;
    for (const sl__arg_schema *x = a->op->args; x->name && !has; x++)
        has = !strcmp(x->name, "cache_size");
    if (!has) return SL_OK; /* decoders.image_random_crop has no cache */
    int64_t mb = sl__args_int(a, "cache_size");
    const char *type = sl__args_str(a, "cache_type");
    int64_t thr = sl__args_int(a, "cache_threshold");
    if (mb < 0 || thr < 0)
        return sl_err_set(err, SL_EINVAL, "%s: cache_size and cache_threshold must be >= 0",
                          s->name);
    bool largest = type && !strcmp(type, "largest");
    if (type && type[0] && !largest && strcmp(type, "threshold"))
        return sl_err_set(err, SL_EINVAL,
                          "%s: cache_type must be \"threshold\" or \"largest\", not \"%s\"",
                          s->name, type);
    if (mb == 0) return SL_OK; /* off, as in DALI */
    sl__decode_image_cache *c = sl__calloc(1, sizeof *c, err);
    if (!c) return SL_ENOMEM;
    c->cap = (size_t)mb << 20;
    c->threshold = (size_t)thr;
    c->largest = largest;
    c->debug = sl__args_bool(a, "cache_debug");
    c->dev_id = init->device.id;
#ifdef SLUICE_HAVE_NVJPEG /* split: the GPU half keeps the images in device memory */
    c->device = init->device.kind == SL_DEVICE_CUDA;
#endif
    s->cache = c;
    return SL_OK;
}

int64_t sl__decode_image_cache_hits(void *state) {
    sl__decode_image_cache *c = ((sl__decode_image_state *)state)->cache;
    return c ? __atomic_load_n(&c->hits, __ATOMIC_RELAXED) : 0;
}
