/* SPDX-License-Identifier: Apache-2.0 */
/* The iterator's checkpoints: sl_iter_save and sl_iter_checkpoint write the bookkeeping (only the
 * devices' and shards' entries in use), every pipeline's snapshot (one for all in global order) and
 * the caller's extra bytes behind a CRC-checked header, in little-endian fields; at creation a
 * checkpoint is read back, checked against the run that resumes it (its policy, order and shape --
 * global order resumes on any split of the same global batch -- then every bookkeeping field), and
 * its pipeline states handed to the pipelines before they build. */
#include "sluice/iterator.h"

#include "core/bytes.h"
#include "core/file.h"
#include "core/log.h"
#include "iter/iter_int.h"
#include "graph/pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CK_MAGIC     0x4b434c53u /* "SLCK" */
#define CK_VERSION   2u
#define CK_HEADER    24         /* magic, version, crc, reserved (u32), payload (u64) */
#define CK_V1_GLOBAL 0x424f4c47 /* format 1: "GLOB" in the shape's seed_check: global order */
#define CK_V1_SHAPE  24         /* format 1: i32 n, S, B, policy, i64 seed_check */
#define CK_V1_BOOK   65824      /* format 1: the book as it was in memory, 4096 shards */
#define CK_V2_FIXED  56         /* format 2: the shape and the book's scalars */

/* Format 2, every field little-endian:
 *   header (24 bytes, outside the CRC): u32 magic "SLCK", u32 version 2, u32 CRC-32 of the
 *   payload, u32 reserved (0), u64 payload bytes;
 *   shape: i32 n (devices that wrote it), i32 S (shards), i32 B (per-device batch), i32 policy,
 *   u32 order (0: DALI's, 1: global);
 *   book: i64 counter, i64 size, i64 step, i32 epoch, u32 nids, u32 nshards, then nids i32
 *   shards_id, nshards i64 counter_per_gpu and nshards i64 shard_sizes: in DALI's order nids = n
 *   and nshards = S with a reader (0 without); in global order both are 0 (the shards are the
 *   resuming run's, and nothing carries over from one epoch to the next);
 *   u32 npipes, then npipes times a u64 length and a pipeline snapshot (pipeline_checkpoint.c): n
 *   in DALI's order; in global order 1, the snapshot every pipeline has (a position in the global
 *   order, the same for every shard), n only should they differ;
 *   u64 length and the caller's extra bytes.
 * Format 1, still read: the same header; the shape as i32 n, S, B, policy and i64 seed_check
 * ("GLOB" in global order); the book as it was in memory (i64 counter, size; i32 epoch and 4
 * bytes of padding; i64 step; 64 i32 shards_id; 4096 i64 counter_per_gpu; 4096 i64 shard_sizes);
 * n times a u64 length and a snapshot; u64 and the extra bytes. */

sl_status sl_iter_checkpoint(sl_iter *it, const char *path) {
    return sl_iter_checkpoint_with(it, path, NULL, 0);
}

sl_status sl_iter_save(sl_iter *it, const void *extra, size_t extra_size, void **out,
                       size_t *out_size) {
    *out = NULL;
    *out_size = 0;
    const sl__iter_book *k = it->first_pending ? &it->bk_first : &it->bk;
    void *ps[SL_MAX_DEVICES] = {0};
    size_t pn[SL_MAX_DEVICES] = {0};
    sl_status st = SL_OK;
    for (int d = 0; d < it->n && !st; d++) {
        sl_pipeline *p = it->pipes[d];
        st = sl__pipeline_checkpoint_save_at(p, sl__pipeline_taken(p) - (it->first_pending ? 1 : 0),
                                             &ps[d], &pn[d]);
        if (st) sl_err_copy(&it->err, sl__pipeline_err(p));
    }
    int npipes = it->n;
    if (!st && it->global) {
        npipes = 1;
        for (int d = 1; d < it->n; d++)
            if (pn[d] != pn[0] || memcmp(ps[d], ps[0], pn[0]) != 0) npipes = it->n;
    }
    const int nids = it->global ? 0 : it->n;
    const int nshards = !it->global && it->use_reader ? it->S : 0;
    sl__wbuf w = {0};
    if (!st) {
        unsigned char header[CK_HEADER] = {0};
        sl__wbuf_put(&w, header, sizeof header);
        sl__wbuf_put32(&w, (uint32_t)it->n);
        sl__wbuf_put32(&w, (uint32_t)it->S);
        sl__wbuf_put32(&w, (uint32_t)it->B);
        sl__wbuf_put32(&w, (uint32_t)it->policy);
        sl__wbuf_put32(&w, it->global ? 1 : 0);
        sl__wbuf_put64(&w, (uint64_t)k->counter);
        sl__wbuf_put64(&w, (uint64_t)k->size);
        sl__wbuf_put64(&w, (uint64_t)k->step);
        sl__wbuf_put32(&w, (uint32_t)k->epoch);
        sl__wbuf_put32(&w, (uint32_t)nids);
        sl__wbuf_put32(&w, (uint32_t)nshards);
        for (int d = 0; d < nids; d++) sl__wbuf_put32(&w, (uint32_t)k->shards_id[d]);
        for (int i = 0; i < nshards; i++) sl__wbuf_put64(&w, (uint64_t)k->counter_per_gpu[i]);
        for (int i = 0; i < nshards; i++) sl__wbuf_put64(&w, (uint64_t)k->shard_sizes[i]);
        sl__wbuf_put32(&w, (uint32_t)npipes);
        for (int d = 0; d < npipes; d++) {
            sl__wbuf_put64(&w, pn[d]);
            sl__wbuf_put(&w, ps[d], pn[d]);
        }
        sl__wbuf_put64(&w, extra ? extra_size : 0);
        if (extra) sl__wbuf_put(&w, extra, extra_size);
        if (w.oom) {
            free(w.buf);
            st = sl_err_set(&it->err, SL_ENOMEM, "out of memory writing a checkpoint");
        }
    }
    for (int d = 0; d < it->n; d++) free(ps[d]);
    if (st) return st;
    sl__put_u32(w.buf, CK_MAGIC);
    sl__put_u32(w.buf + 4, CK_VERSION);
    sl__put_u32(w.buf + 8, sl__crc32(w.buf + CK_HEADER, w.len - CK_HEADER));
    sl__put_u32(w.buf + 12, 0);
    sl__put_u64(w.buf + 16, w.len - CK_HEADER);
    *out = w.buf;
    *out_size = w.len;
    return SL_OK;
}

sl_status sl_iter_checkpoint_with(sl_iter *it, const char *path, const void *extra,
                                  size_t extra_size) {
    void *bytes;
    size_t len;
    SL_TRY(sl_iter_save(it, extra, extra_size, &bytes, &len));
    sl_status st = sl_file_write(path, bytes, len, &it->err);
    free(bytes);
    return st;
}

sl_status sl_file_write(const char *path, const void *buf, size_t len, sl_err *err) {
    return sl__file_write_whole(path, "checkpoint", buf, len, err);
}

/* The file at path, looked at before it is read: a regular file (a FIFO would block, a directory
 * reads as any size) whose header is a checkpoint's and whose size is the one it gives. */
static sl_status read_checked(const char *path, unsigned char **out, size_t *out_len, sl_err *err) {
    int fd;
    uint64_t fsize;
    SL_TRY(sl__file_open_regular(path, "checkpoint", &fd, &fsize, err));
    unsigned char head[CK_HEADER];
    sl_status st = SL_OK;
    if (fsize < CK_HEADER || pread(fd, head, CK_HEADER, 0) != CK_HEADER) {
        st = sl_err_set(err, SL_EFORMAT, "checkpoint %s: truncated (%llu bytes)", path,
                        (unsigned long long)fsize);
    } else if (sl__get_u32(head) != CK_MAGIC) {
        st = sl_err_set(err, SL_EFORMAT, "checkpoint %s: not a sluice checkpoint", path);
    } else if (sl__get_u64(head + 16) != fsize - CK_HEADER) {
        st = sl_err_set(err, SL_EFORMAT, "checkpoint %s: truncated (%llu of %llu bytes)", path,
                        (unsigned long long)fsize - CK_HEADER,
                        (unsigned long long)sl__get_u64(head + 16));
    }
    size_t len = (size_t)fsize;
    unsigned char *buf = NULL;
    if (st == SL_OK && !(buf = malloc(len)))
        st = sl_err_set(err, SL_ENOMEM, "checkpoint %s: out of memory for %zu bytes", path, len);
    if (st == SL_OK) st = sl__file_pread_full(fd, buf, len, 0, "checkpoint", path, err);
    close(fd);
    if (st != SL_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    *out_len = len;
    return SL_OK;
}

/* A checkpoint being read: where it is named from, the bytes after its header still to read, and
 * what it has said so far. */
typedef struct ck_reader {
    const char *path;
    const unsigned char *p, *end;
    uint32_t version;
    size_t fixed;       /* bytes of the shape and counters */
    int32_t sn, sS, sB; /* devices, shards and per-device batch of the run that wrote it */
    uint32_t npipes;    /* pipeline states it holds */
} ck_reader;

/* The header: magic, format, reserved field, payload length and checksum. */
static sl_status check_header(const unsigned char *buf, size_t len, ck_reader *r, sl_err *err) {
    const sl_status st = SL_EFORMAT;
    const char *path = r->path;
    if (len < CK_HEADER)
        return sl_err_set(err, st, "checkpoint %s: truncated (%zu bytes)", path, len);
    const uint32_t version = sl__get_u32(buf + 4), reserved = sl__get_u32(buf + 12);
    const uint64_t payload = sl__get_u64(buf + 16);
    if (sl__get_u32(buf) != CK_MAGIC)
        return sl_err_set(err, st, "checkpoint %s: not a sluice checkpoint", path);
    if (version != 1 && version != CK_VERSION)
        return sl_err_set(
            err, st, "checkpoint %s: format %u, %s (this sluice reads formats 1 and %u)", path,
            version, version > CK_VERSION ? "written by a newer sluice" : "unknown", CK_VERSION);
    if (reserved != 0)
        return sl_err_set(err, st, "checkpoint %s: header field reserved: %u (0 expected)", path,
                          reserved);
    if (payload != len - CK_HEADER)
        return sl_err_set(err, st, "checkpoint %s: truncated (%zu of %llu bytes)", path,
                          len - CK_HEADER, (unsigned long long)payload);
    if (sl__crc32(buf + CK_HEADER, len - CK_HEADER) != sl__get_u32(buf + 8))
        return sl_err_set(err, SL_ECHECKSUM,
                          "checkpoint %s: checksum mismatch (the file was altered or damaged)",
                          path);
    r->version = version;
    r->p = buf + CK_HEADER;
    r->end = buf + len;
    return SL_OK;
}

/* The shape of the run that wrote it (devices, shards, batch, policy, order), checked against
 * this run's. */
static sl_status read_shape(const sl_iter *it, ck_reader *r, sl_err *err) {
    const sl_status st = SL_EFORMAT;
    const char *path = r->path;
    const unsigned char *p = r->p;
    r->fixed = r->version == 1 ? CK_V1_SHAPE + CK_V1_BOOK : CK_V2_FIXED;
    if ((size_t)(r->end - p) < r->fixed)
        return sl_err_set(err, st,
                          "checkpoint %s: truncated (the shape and counters need %zu bytes, %zu "
                          "are left)",
                          path, r->fixed, (size_t)(r->end - p));
    const int32_t sn = (int32_t)sl__get_u32(p), sS = (int32_t)sl__get_u32(p + 4),
                  sB = (int32_t)sl__get_u32(p + 8), spolicy = (int32_t)sl__get_u32(p + 12);
    bool sglobal;
    if (r->version == 1) {
        sglobal = sl__get_u64(p + 16) == CK_V1_GLOBAL;
    } else {
        uint32_t order = sl__get_u32(p + 16);
        if (order > 1)
            return sl_err_set(err, st, "checkpoint %s: field order: %u (0: DALI's, 1: global)",
                              path, order);
        sglobal = order == 1;
    }
    if (spolicy != (int32_t)it->policy)
        return sl_err_set(err, SL_EINVAL,
                          "checkpoint %s: field policy: last_batch_policy %d, this run has %d",
                          path, spolicy, (int)it->policy);
    if (sglobal != it->global)
        return sl_err_set(err, SL_EINVAL,
                          "checkpoint %s was written in %s order; this run is in %s order", path,
                          sglobal ? "global" : "DALI's", it->global ? "global" : "DALI's");
    /* global order resumes on any split of the same global batch: the pipelines' states are
     * positions in it, the same for every shard */
    bool elastic = it->global && sn >= 1 && sn <= SL_MAX_DEVICES && sS >= sn && sB >= 1 &&
                   (int64_t)sS * sB == (int64_t)it->S * it->B;
    if (!elastic && (sn != it->n || sS != it->S || sB != it->B))
        return sl_err_set(
            err, SL_EINVAL,
            "checkpoint %s was written by %d devices of %d shards at batch %d; this run has "
            "%d devices of %d shards at batch %d%s",
            path, sn, sS, sB, it->n, it->S, it->B,
            it->global ? " (global order resumes on another device count only with the "
                         "same global batch)"
                       : " (DALI's order resumes only on the same shards; global order "
                         "resumes on any)");
    /* from here sn is 1..SL_MAX_DEVICES, and in DALI's order the shape is this run's */
    r->sn = sn;
    r->sS = sS;
    r->sB = sB;
    r->npipes = (uint32_t)sn;
    return SL_OK;
}

/* Format 1's counters: fixed arrays of every slot. */
static void read_book_v1(sl_iter *it, ck_reader *r) {
    sl__iter_book *k = &it->bk;
    const unsigned char *b = r->p + CK_V1_SHAPE;
    k->counter = (int64_t)sl__get_u64(b);
    k->size = (int64_t)sl__get_u64(b + 8);
    k->epoch = (int32_t)sl__get_u32(b + 16);
    k->step = (int64_t)sl__get_u64(b + 24);
    for (int d = 0; d < SL_MAX_DEVICES; d++) k->shards_id[d] = (int32_t)sl__get_u32(b + 32 + 4 * d);
    for (int i = 0; i < SL__ITER_MAX_SHARDS; i++) {
        k->counter_per_gpu[i] = (int64_t)sl__get_u64(b + 288 + 8 * i);
        k->shard_sizes[i] = (int64_t)sl__get_u64(b + 288 + 8 * SL__ITER_MAX_SHARDS + 8 * i);
    }
    r->p += r->fixed;
}

/* Format 2's counters: the scalars, then only the entries in use, then the pipeline states'
 * count. */
static sl_status read_book_v2(sl_iter *it, ck_reader *r, sl_err *err) {
    const sl_status st = SL_EFORMAT;
    const char *path = r->path;
    const int32_t sn = r->sn, sS = r->sS;
    sl__iter_book *k = &it->bk;
    const unsigned char *b = r->p + 20, *end = r->end;
    k->counter = (int64_t)sl__get_u64(b);
    k->size = (int64_t)sl__get_u64(b + 8);
    k->step = (int64_t)sl__get_u64(b + 16);
    k->epoch = (int32_t)sl__get_u32(b + 24);
    const uint32_t nids = sl__get_u32(b + 28), nshards = sl__get_u32(b + 32);
    const unsigned char *p = r->p + r->fixed;
    const uint32_t want_ids = it->global ? 0 : (uint32_t)sn;
    if (nids != want_ids) {
        if (it->global)
            return sl_err_set(err, st,
                              "checkpoint %s: field nids: %u shard ids (global order writes "
                              "none)",
                              path, nids);
        return sl_err_set(err, st,
                          "checkpoint %s: field nids: %u shard ids (the %d devices that wrote it "
                          "have %d)",
                          path, nids, sn, sn);
    }
    if (it->global ? nshards != 0
                   : nshards != 0 && (nshards != (uint32_t)sS || sS > SL__ITER_MAX_SHARDS)) {
        if (it->global)
            return sl_err_set(err, st,
                              "checkpoint %s: field nshards: %u shards' counters (global "
                              "order writes none)",
                              path, nshards);
        return sl_err_set(err, st,
                          "checkpoint %s: field nshards: %u shards' counters (DALI's order writes "
                          "one per shard, %d, or none without a reader)",
                          path, nshards, sS);
    }
    if ((size_t)(end - p) < 4 * (size_t)nids)
        return sl_err_set(err, st, "checkpoint %s: truncated in field shards_id (%u entries)", path,
                          nids);
    for (uint32_t d = 0; d < nids; d++, p += 4) k->shards_id[d] = (int32_t)sl__get_u32(p);
    if ((size_t)(end - p) < 16 * (size_t)nshards)
        return sl_err_set(err, st,
                          "checkpoint %s: truncated in fields counter_per_gpu/shard_sizes (%u "
                          "entries each)",
                          path, nshards);
    for (uint32_t i = 0; i < nshards; i++) k->counter_per_gpu[i] = (int64_t)sl__get_u64(p + 8 * i);
    p += 8 * (size_t)nshards;
    for (uint32_t i = 0; i < nshards; i++) k->shard_sizes[i] = (int64_t)sl__get_u64(p + 8 * i);
    p += 8 * (size_t)nshards;
    if ((size_t)(end - p) < 4)
        return sl_err_set(err, st, "checkpoint %s: truncated in field npipes", path);
    const uint32_t npipes = sl__get_u32(p);
    p += 4;
    if (npipes != (uint32_t)sn && !(it->global && npipes == 1))
        return sl_err_set(err, st,
                          "checkpoint %s: field npipes: %u pipeline states (one per device of the "
                          "%d that wrote it%s)",
                          path, npipes, sn, it->global ? ", or one shared in global order" : "");
    r->npipes = npipes;
    r->p = p;
    return SL_OK;
}

/* Global order: a device's samples this epoch and per epoch, written as steps times the writer's
 * batch, become steps times this run's. */
static sl_status rescale_global(sl_iter *it, const ck_reader *r, sl_err *err) {
    const int64_t most = INT64_MAX / 4 / it->B;
    int64_t *f[2] = {&it->bk.counter, &it->bk.size};
    for (int i = 0; i < 2; i++) {
        if (*f[i] < 0 || *f[i] % r->sB || *f[i] / r->sB > most)
            return sl_err_set(err, SL_EFORMAT,
                              "checkpoint %s: field %s: %lld is not a count of batches of %d",
                              r->path, i ? "size" : "counter", (long long)*f[i], r->sB);
        *f[i] = *f[i] / r->sB * it->B;
    }
    return SL_OK;
}

/* The pipeline states (states[d], lens[d] bytes, for every device of this run) and the extra
 * bytes, which end the file. */
static sl_status read_states(sl_iter *it, ck_reader *r, const unsigned char **states,
                             uint64_t *lens, sl_err *err) {
    const sl_status st = SL_EFORMAT;
    const char *path = r->path;
    const unsigned char *p = r->p, *end = r->end;
    for (uint32_t d = 0; d < r->npipes; d++) {
        if ((size_t)(end - p) < 8)
            return sl_err_set(
                err, st, "checkpoint %s: truncated in the length of pipeline state %u", path, d);
        lens[d] = sl__get_u64(p);
        p += 8;
        if (lens[d] > (uint64_t)(end - p))
            return sl_err_set(
                err, st, "checkpoint %s: truncated: pipeline state %u has %llu bytes, %zu are left",
                path, d, (unsigned long long)lens[d], (size_t)(end - p));
        states[d] = p;
        p += lens[d];
    }
    /* one state for all (global order), or elastic: every shard starts from the same place */
    for (int d = (int)r->npipes; d < it->n; d++) {
        states[d] = states[0];
        lens[d] = lens[0];
    }
    if ((size_t)(end - p) < 8)
        return sl_err_set(err, st, "checkpoint %s: truncated in the length of the extra bytes",
                          path);
    uint64_t e64 = sl__get_u64(p);
    p += 8;
    if (e64 != (uint64_t)(end - p))
        return sl_err_set(err, st,
                          "checkpoint %s: field extra: %llu bytes, the file has %zu after it%s",
                          path, (unsigned long long)e64, (size_t)(end - p),
                          e64 > (uint64_t)(end - p) ? " (truncated)" : "");
    if (e64) {
        it->extra = malloc((size_t)e64);
        if (!it->extra) return sl_err_set(err, SL_ENOMEM, "out of memory");
        memcpy(it->extra, p, (size_t)e64);
        it->extra_size = (size_t)e64;
    }
    return SL_OK;
}

sl_status sl__iter_checkpoint_read(sl_iter *it, const char *path, void **out_buf, size_t *out_size,
                                   const unsigned char **states, uint64_t *lens, sl_err *err) {
    unsigned char *buf = NULL;
    size_t len = 0;
    if (it->resume_bytes) { /* given in memory (the label names its origin) */
        len = it->resume_size;
        buf = malloc(len ? len : 1);
        if (!buf) return sl_err_set(err, SL_ENOMEM, "out of memory reading a checkpoint");
        memcpy(buf, it->resume_bytes, len);
    } else {
        SL_TRY(read_checked(path, &buf, &len, err));
    }
    ck_reader r = {.path = path};
    sl_status st = check_header(buf, len, &r, err);
    if (st == SL_OK) st = read_shape(it, &r, err);
    if (st == SL_OK) {
        memset(&it->bk, 0, sizeof it->bk);
        if (r.version == 1)
            read_book_v1(it, &r);
        else
            st = read_book_v2(it, &r, err);
    }
    if (st == SL_OK && it->global) st = rescale_global(it, &r, err);
    if (st == SL_OK) st = read_states(it, &r, states, lens, err);
    if (st) {
        free(buf);
        return st;
    }
    *out_buf = buf;
    *out_size = len;
    return SL_OK;
}

/* A checkpoint's bookkeeping, checked against the fresh one of the iterator it resumes (made by
 * init_book from the same pipelines): the CRC only says the bytes are as written, not that the
 * writer was honest, and these fields index arrays and bound loops. */
sl_status sl__iter_checkpoint_check(const sl_iter *it, const sl__iter_book *r, const char *path,
                                    sl_err *err) {
    const sl__iter_book *f = &it->bk;
    const int S = it->S;
    const int64_t B = it->B, per_step = it->use_reader ? B : (int64_t)it->n * B;
#define BAD(field, ...)                                                                            \
    sl_err_set(err, SL_EFORMAT, "checkpoint %s: field %s: " field, path, __VA_ARGS__)
    if (r->epoch < 0 || r->epoch == INT32_MAX)
        return BAD("epoch %d out of range", "epoch", r->epoch);
    if (it->global) { /* the shards are this run's (taken from it); the sizes are its own */
        for (int i = 0; i < SL__ITER_MAX_SHARDS; i++)
            if (r->counter_per_gpu[i] || r->shard_sizes[i])
                return BAD("set for shard %d in global order", "counter_per_gpu/shard_sizes", i);
        if (r->size != f->size)
            return BAD("%lld (this iterator's epoch is %lld per device)", "size",
                       (long long)r->size, (long long)f->size);
    } else if (it->use_reader) {
        int64_t small = S ? it->N / S : 0, big = S ? sl__iter_ceil_div(it->N, S) : 0, sum = 0;
        for (int d = 0; d < SL_MAX_DEVICES; d++)
            if (d < it->n ? r->shards_id[d] < 0 || r->shards_id[d] >= S : r->shards_id[d] != 0)
                return BAD("%d for device %d (shards 0..%d)", "shards_id", r->shards_id[d], d,
                           S - 1);
        for (int i = 0; i < SL__ITER_MAX_SHARDS; i++) {
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
        for (int i = 0; i < SL__ITER_MAX_SHARDS; i++) {
            int64_t c = r->counter_per_gpu[i];
            if (i < S ? c < -(big + B) || c > big + B : c != 0)
                return BAD("%lld for shard %d (|value| at most %lld)", "counter_per_gpu",
                           (long long)c, i, (long long)(big + B));
        }
        /* an epoch (FILL re-sized by reset) is at most a shard plus its read-ahead, in batches */
        int64_t most = (sl__iter_ceil_div(2 * big + B, B) + 1) * B;
        if (it->policy == SL_LAST_BATCH_DROP || it->padded ? r->size != f->size
                                                           : r->size < 0 || r->size > most)
            return BAD("%lld (this reader gives %lld)", "size", (long long)r->size,
                       (long long)f->size);
    } else {
        for (int d = 0; d < SL_MAX_DEVICES; d++)
            if (r->shards_id[d])
                return BAD("%d for device %d (no reader)", "shards_id", r->shards_id[d], d);
        for (int i = 0; i < SL__ITER_MAX_SHARDS; i++)
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
    int64_t smax = r->size >= 0 ? sl__iter_ceil_div(r->size, per_step) + 1 : INT64_MAX / 4;
    if (r->step < 0 || r->step > smax)
        return BAD("%lld out of range (0..%lld)", "step", (long long)r->step, (long long)smax);
#undef BAD
    return SL_OK;
}

const void *sl_iter_resumed_extra(const sl_iter *it, size_t *size) {
    *size = it->extra_size;
    return it->extra;
}
