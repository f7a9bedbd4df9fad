/* SPDX-License-Identifier: Apache-2.0 */
/* The iterator's checkpoints: sl_iter_save and sl_iter_checkpoint write the bookkeeping, every
 * pipeline's snapshot and the caller's extra bytes behind a CRC-checked header; at creation a
 * checkpoint is read back, checked against the run that resumes it (its policy, order and shape --
 * global order resumes on any split of the same global batch -- then every bookkeeping field), and
 * its pipeline states handed to the pipelines before they build. */
#include "sluice/iterator.h"

#include "core/log.h"
#include "pipeline/iter_int.h"
#include "pipeline/pipeline_checkpoint.h"
#include "pipeline/pipeline_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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
    const sl__iter_book *k = it->first_pending ? &it->bk_first : &it->bk;
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
    sl_status st = sl_file_write(path, bytes, len, &it->err);
    free(bytes);
    return st;
}

sl_status sl_file_write(const char *path, const void *buf, size_t len, sl_err *err) {
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

sl_status sl__iter_checkpoint_read(sl_iter *it, const char *path, void **out_buf, size_t *out_size,
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
    if ((size_t)(end - p) < sizeof sh + sizeof(sl__iter_book)) {
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
    memcpy(&it->bk, p, sizeof(sl__iter_book));
    p += sizeof(sl__iter_book);
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
