/* SPDX-License-Identifier: Apache-2.0 */
/* The pipeline's checkpoints: a snapshot of every op's state (only readers have any: their
 * position) taken by the first stage before it produces batch k, which is what a checkpoint after
 * k batches holds; the ring of recent snapshots the stages fill and sl_pipeline_save reads; and
 * sl_pipeline_restore, whose bytes are checked and applied to the op instances at build. */
#include "graph/pipeline_checkpoint.h"

#include "graph/pipeline_int.h"

#include "core/bytes.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#define SNAP_MAGIC   0x53504c53u /* "SLPS" */
#define SNAP_VERSION 2u

sl_status sl__pipeline_checkpoint_snapshot(sl_pipeline *p, int64_t seq, void **bytes, size_t *size,
                                           sl_err *err) {
    sl__wbuf w = {0};
    uint32_t hdr[3] = {SNAP_MAGIC, SNAP_VERSION, (uint32_t)p->nops};
    sl__wbuf_put(&w, hdr, sizeof hdr);
    sl__wbuf_put(&w, &seq, sizeof seq);
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
        sl__wbuf_put(&w, &n64, sizeof n64);
        if (on) sl__wbuf_put(&w, ob, on);
        free(ob);
    }
    if (w.oom) {
        free(w.buf);
        return sl_err_set(err, SL_ENOMEM, "out of memory writing a pipeline snapshot");
    }
    *bytes = w.buf;
    *size = w.len;
    return SL_OK;
}

/* Keeps the snapshot taken before batch seq in the ring (which owns bytes from now on). */
void sl__pipeline_checkpoint_store(sl_pipeline *p, int64_t seq, void *bytes, size_t size) {
    pthread_mutex_lock(&p->snap_mu);
    int i = (int)(seq % p->nsnap);
    free(p->snap_bytes[i]);
    p->snap_bytes[i] = bytes;
    p->snap_size[i] = size;
    p->snap_seq[i] = seq;
    pthread_cond_broadcast(&p->snap_cv);
    pthread_mutex_unlock(&p->snap_mu);
}

/* The stage that takes snapshots has ended: wake anyone waiting for one that will never come. */
void sl__pipeline_checkpoint_end(sl_pipeline *p, const sl_err *why) {
    pthread_mutex_lock(&p->snap_mu);
    p->stopping = 1;
    if (why && why->status < 0) sl_err_copy(&p->stop_err, why);
    pthread_cond_broadcast(&p->snap_cv);
    pthread_mutex_unlock(&p->snap_mu);
}

sl_status sl_pipeline_save(sl_pipeline *p, void **bytes, size_t *size) {
    return sl__pipeline_checkpoint_save_at(p, p->built ? p->taken : 0, bytes, size);
}

sl_status sl__pipeline_checkpoint_save_at(sl_pipeline *p, int64_t want, void **bytes,
                                          size_t *size) {
    *bytes = NULL;
    *size = 0;
    if (!p->built) return sl__pipeline_fail(p, SL_ESTATE, "checkpoint before sl_pipeline_build");
    if (p->failed) return p->err.status;
    /* the first stage runs at most nslots batches ahead of the consumer's releases, and the ring
     * holds nslots + 2 snapshots: the last three batches taken are always still in it (an older
     * one could be overwritten while this waits for it) */
    if (want < p->taken - 2 || want > p->taken)
        return sl__pipeline_fail(p, SL_EINVAL, "no snapshot of batch %lld kept", (long long)want);
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
            st = sl__pipeline_fail(p, SL_ENOMEM, "out of memory copying a checkpoint");
        }
    } else if (p->stop_err.status < 0) { /* what stopped it, rather than that it stopped */
        st = sl__pipeline_fail(p, p->stop_err.status, "the pipeline stopped before batch %lld: %s",
                               (long long)want, p->stop_err.msg);
    } else {
        st = sl__pipeline_fail(p, SL_ESTATE, "the pipeline stopped before batch %lld",
                               (long long)want);
    }
    pthread_mutex_unlock(&p->snap_mu);
    return st;
}

sl_status sl_pipeline_restore(sl_pipeline *p, const void *bytes, size_t size) {
    if (p->built)
        return sl__pipeline_fail(p, SL_ESTATE, "restore must come before sl_pipeline_build");
    free(p->restore_bytes);
    p->restore_bytes = malloc(size ? size : 1);
    if (!p->restore_bytes) return sl__pipeline_fail(p, SL_ENOMEM, "out of memory");
    memcpy(p->restore_bytes, bytes, size);
    p->restore_size = size;
    return SL_OK;
}

sl_status sl__pipeline_checkpoint_apply(sl_pipeline *p) {
    if (!p->restore_bytes) return SL_OK;
    const unsigned char *b = p->restore_bytes, *end = b + p->restore_size;
    uint32_t hdr[3];
    int64_t seq;
    if (p->restore_size < sizeof hdr + sizeof seq)
        return sl__pipeline_fail(p, SL_EFORMAT, "pipeline checkpoint: truncated (%zu bytes)",
                                 p->restore_size);
    memcpy(hdr, b, sizeof hdr);
    b += sizeof hdr;
    if (hdr[0] != SNAP_MAGIC || hdr[1] != SNAP_VERSION)
        return sl__pipeline_fail(
            p, SL_EFORMAT, "pipeline checkpoint: not a sluice pipeline state (version %u)", hdr[1]);
    if ((int)hdr[2] != p->nops)
        return sl__pipeline_fail(p, SL_EINVAL,
                                 "pipeline checkpoint: %u operators, this pipeline has %d", hdr[2],
                                 p->nops);
    memcpy(&seq, b, sizeof seq);
    b += sizeof seq;
    /* the batch sequence number picks the snapshot ring's slot (seq % nsnap) and, times the batch
     * size, every sample's random stream: a negative or huge one would index out of the ring or
     * overflow */
    int64_t seq_max = INT64_MAX / 4 / (p->cfg.batch_size > 0 ? p->cfg.batch_size : 1);
    if (seq < 0 || seq > seq_max)
        return sl__pipeline_fail(
            p, SL_EFORMAT, "pipeline checkpoint: field seq: batch %lld out of range (0..%lld)",
            (long long)seq, (long long)seq_max);
    for (int k = 0; k < p->nops; k++) {
        sl__opinst *op = &p->ops[k];
        uint64_t n;
        if ((size_t)(end - b) < 8)
            return sl__pipeline_fail(p, SL_EFORMAT, "pipeline checkpoint: truncated at operator %s",
                                     op->name);
        memcpy(&n, b, 8);
        b += 8;
        if (n > (uint64_t)(end - b))
            return sl__pipeline_fail(p, SL_EFORMAT, "pipeline checkpoint: truncated in operator %s",
                                     op->name);
        if (n && !op->def->restore)
            return sl__pipeline_fail(
                p, SL_EINVAL, "pipeline checkpoint: %s has state but cannot restore it", op->name);
        if (n) SL_TRY(op->def->restore(op->state, b, (size_t)n, &p->err));
        b += n;
    }
    if (b != end)
        return sl__pipeline_fail(p, SL_EFORMAT, "pipeline checkpoint: %zu trailing bytes",
                                 (size_t)(end - b));
    p->next_seq = seq;
    p->taken = seq;
    p->released = seq;
    return SL_OK;
}
