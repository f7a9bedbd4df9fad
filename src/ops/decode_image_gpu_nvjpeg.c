/* SPDX-License-Identifier: Apache-2.0 */
/* The image decoders' GPU stage on a GPU pipeline, in nvJPEG builds only (decode_image.h): the
 * engines' share of a batch sent ahead from the CPU stage, then in the GPU stage the copies of the
 * CPU pool's samples from pinned memory, nvJPEG's decode of the rest (decode_image_nvjpeg.h), the
 * crop of whole images for the cropping decoder, the CPU fallback for what nvJPEG did not decode,
 * and the cache's device copies. */
#include "ops/decode_image.h"
#include "ops/decode_image_cache.h"
#include "ops/decode_image_nvjpeg.h"

#include "core/alloc.h"
#include "core/cuda.h"
#include "core/log.h"
#include "ops/cast.h"
#include "ops/crop_mirror_normalize.h"

#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h> /* JMSG_LENGTH_MAX */
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The GPU stage's CPU fallback: sample i, which nvJPEG did not decode, decoded with libjpeg-turbo
 * into its pinned slot and copied to its output. */
static sl_status cpu_fallback(sl__decode_image_state *s, sl__op_io *io, int i,
                              const sl__decode_image_roi *roi, sl_err *err) {
    sl__decode_image_batch *b = *io->batch_state;
    if (!s->gpu_worker) SL_TRY(sl__decode_image_worker_create(s->orient, &s->gpu_worker, err));
    if (!__atomic_exchange_n(&s->said_fallback, 1, __ATOMIC_RELAXED))
        sl__log(SL_LOG_INFO,
                "%s: nvJPEG did not decode record %s; it and any other image nvJPEG does not "
                "decode are decoded on the CPU",
                s->name, io->keys && io->keys[i] ? io->keys[i] : "?");
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    uint8_t *to = sl__decode_image_target(io, i);
    char why[JMSG_LENGTH_MAX + 64];
    sl_status st =
        sl__decode_image_run(s->gpu_worker, in->data[i], sl_tlist_sample_nbytes(in, i), &b->info[i],
                             s->type, roi, s->fast_idct, to, why, sizeof why);
    if (st != SL_OK) return sl__op_fail(err, st, io, i, s->name, "%s", why);
    return sl__cuda_memcpy(out->data[i], true, to, false, sl_tlist_sample_nbytes(out, i),
                           io->stream, err);
}

/* Cache hits (cache -> output) and the misses it keeps (output -> cache), one launch. */
static sl_status cache_copies(sl__decode_image_state *s, sl__op_io *io, sl_err *err) {
    sl__decode_image_cache *c = s->cache;
    sl__decode_image_batch *b = *io->batch_state;
    sl_tlist *out = io->out[0];
    int n = 0;
    for (int i = 0; i < io->batch; i++) n += (b->hit_off[i] || b->put_off[i]);
    if (n == 0) return SL_OK;
    if (!c->dev) {
        c->dev_id = io->device.id; /* freed into the same device's pool */
        sl__devpool *pool = sl__devpool_get(io->device.id, err);
        if (!pool || !(c->dev = sl__devpool_alloc(pool, c->cap, err)))
            return sl_err_set(err, err->status ? err->status : SL_ENOMEM,
                              "%s: cannot allocate the %zu-byte decoded-image cache on the GPU",
                              s->name, c->cap);
    }
    sl__cuda_cast_desc *d =
        sl__gpu_args_host(&s->copies, io->device.id, (size_t)n * sizeof *d, err);
    if (!d) return err->status;
    int64_t maxb = 0, k = 0;
    for (int i = 0; i < io->batch; i++) {
        size_t nb = sl_tlist_sample_nbytes(out, i);
        if (b->hit_off[i])
            d[k].in = (uint8_t *)c->dev + b->hit_off[i] - 1, d[k].out = out->data[i];
        else if (b->put_off[i])
            d[k].in = out->data[i], d[k].out = (uint8_t *)c->dev + b->put_off[i] - 1;
        else
            continue;
        d[k++].n = (int64_t)nb;
        if ((int64_t)nb > maxb) maxb = (int64_t)nb;
    }
    void *dd = NULL;
    SL_TRY(sl__gpu_args_send(&s->copies, (size_t)n * sizeof *d, io->stream, &dd, err));
    return sl__cuda_cast(dd, n, maxb, SL_DTYPE_U8, SL_DTYPE_U8, io->stream, err);
}

/* Sample i's nvJPEG job; false when its window must be cut from the whole image in device scratch
 * (a cropping decoder's image that does not go through planes: j->dst is then left NULL). */
static bool make_job(const sl__decode_image_state *s, const sl__op_io *io,
                     const sl__decode_image_batch *b, int i, const sl__decode_image_roi *rois,
                     sl__nvjpeg_job *j) {
    const sl_tlist *in = io->in[0];
    memset(j, 0, sizeof *j);
    j->data = in->data[i]; /* pageable host memory, valid until the batch is released */
    j->len = sl_tlist_sample_nbytes(in, i);
    j->w = b->hw[2 * i + 1];
    if (s->type != SL__IMG_GRAY && !sl__decode_image_ycc_layout(&b->info[i], &j->ycc))
        j->ycc.w = 0;           /* setup only sends layouts it handles; nvJPEG's RGB if not */
    if (rois && j->ycc.w > 0) { /* the planes' kernel writes the window itself */
        j->y0 = (int32_t)rois[i].y, j->x0 = (int32_t)rois[i].x;
        j->out_h = (int32_t)rois[i].h, j->out_w = (int32_t)rois[i].w;
    } else if (rois) {
        return false;
    }
    j->dst = io->out[0]->data[i];
    return true;
}

sl_status sl__decode_image_ahead(sl__decode_image_state *s, sl__op_io *io,
                                 const sl__decode_image_roi *rois, sl_err *err) {
    sl__decode_image_batch *b = *io->batch_state;
    sl__nvjpeg *nvj = __atomic_load_n((sl__nvjpeg **)&s->nvjpeg, __ATOMIC_ACQUIRE);
    if (!nvj) return SL_OK; /* (plan only asks once it is made) */
    if (io->batch > b->acap) {
        free(b->ajobs), free(b->aidx), free(b->adone);
        b->acap = 0;
        b->ajobs = sl__calloc((size_t)io->batch, sizeof *b->ajobs, err);
        b->aidx = sl__calloc((size_t)io->batch, sizeof *b->aidx, err);
        b->adone = sl__calloc((size_t)io->batch, 1, err);
        if (!b->ajobs || !b->aidx || !b->adone) return SL_ENOMEM;
        b->acap = io->batch;
    }
    int k = 0;
    for (int i = 0; i < io->batch; i++)
        if (b->on_gpu[i] == 1 && make_job(s, io, b, i, rois, &b->ajobs[k])) b->aidx[k++] = i;
    if (k == 0) return SL_OK;
    sl_status st = sl__nvjpeg_ahead_run(nvj, &b->ahead, k, b->ajobs, s->type, b->adone, err);
    if (st != SL_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return sl__op_fail(err, st, io, b->aidx[0], s->name, "nvJPEG: %s", msg);
    }
    b->an = k;
    for (int a = 0; a < k; a++)
        if (b->adone[a]) b->on_gpu[b->aidx[a]] = 3; /* the GPU stage only finishes it */
    return SL_OK;
}

sl_status sl__decode_image_run_gpu(sl__decode_image_state *s, sl__op_io *io, bool crop,
                                   sl_err *err) {
    sl__decode_image_batch *b = *io->batch_state;
    const sl__decode_image_roi *rois = crop ? b->roi : NULL;
    sl_tlist *out = io->out[0];
    int n = io->batch, ngpu = 0;
    /* CPU-decoded samples: one copy per run of consecutive ones */
    for (int i = 0; i < n;) {
        if (b->on_gpu[i]) {
            ngpu += b->on_gpu[i] == 1;
            i++;
            continue;
        }
        int j = i;
        while (j + 1 < n && !b->on_gpu[j + 1]) j++;
        size_t a = (size_t)((uint8_t *)out->data[i] - (uint8_t *)out->buf);
        size_t z = (size_t)((uint8_t *)out->data[j] - (uint8_t *)out->buf) +
                   sl_tlist_sample_nbytes(out, j);
        if (z > a)
            SL_TRY(sl__cuda_memcpy((uint8_t *)out->buf + a, true, b->pinned + a, false, z - a,
                                   io->stream, err));
        i = j + 1;
    }
    int ahead = 0; /* the engines' images decoded ahead: their planes are finished here */
    for (int a = 0; a < b->an; a++) ahead += b->adone[a];
    if (ahead) {
        SL_TRY(sl__nvjpeg_ahead_finish(s->nvjpeg, b->ahead, b->an, b->ajobs, s->type, io->stream,
                                       err));
        __atomic_fetch_add(&s->decodes, ahead, __ATOMIC_RELAXED);
    }
    if (ngpu == 0) return s->cache ? cache_copies(s, io, err) : SL_OK;
    int first = 0;
    while (b->on_gpu[first] != 1) first++;
    if (!s->nvjpeg) {
        sl__nvjpeg *nvj = NULL;
        sl_status st = sl__nvjpeg_create(&nvj, s->name, s->stream_priority, err);
        if (st != SL_OK) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return sl__op_fail(err, st, io, first, s->name, "%s", msg);
        }
        __atomic_store_n(&s->engines, sl__nvjpeg_has_engines(nvj) ? 1 : 0, __ATOMIC_RELAXED);
        /* the engines take at most ceil(hw_decoder_load x batch) images of a batch */
        int most = (int)ceil(s->hw_load * s->batch_size);
        if (s->prealloc_w > 0 && s->prealloc_h > 0 && most > 0)
            sl__nvjpeg_preallocate(nvj, most, s->prealloc_w, s->prealloc_h,
                                   s->type == SL__IMG_GRAY);
        __atomic_store_n((sl__nvjpeg **)&s->nvjpeg, nvj, __ATOMIC_RELEASE); /* plan reads it */
    }
    sl__nvjpeg_job *jobs = sl__calloc((size_t)ngpu, sizeof *jobs, err);
    int *idx = sl__malloc((size_t)ngpu * sizeof *idx, err);
    char *failed = sl__malloc((size_t)ngpu, err);
    sl_status st = jobs && idx && failed ? SL_OK : SL_ENOMEM;
    int c = s->type == SL__IMG_GRAY ? 1 : 3;
    size_t full = 0; /* bytes of whole images to crop from (cropping decoder, not via planes) */
    for (int i = 0, k = 0; i < n && st == SL_OK; i++) {
        if (b->on_gpu[i] != 1) continue;
        sl__nvjpeg_job *j = &jobs[k];
        idx[k++] = i;
        if (make_job(s, io, b, i, rois, j)) continue;
        j->dst = (uint8_t *)(uintptr_t)full; /* an offset in the scratch block, set below */
        full += ((size_t)(b->hw[2 * i] * b->hw[2 * i + 1] * c) + 255) & ~(size_t)255;
    }
    uint8_t *scratch = NULL;
    if (st == SL_OK && full) {
        scratch = sl__gpu_scratch_get(&s->full, io->device.id, full, io->stream, err);
        if (!scratch) st = err->status;
        for (int k = 0; k < ngpu && st == SL_OK; k++)
            if (jobs[k].out_w == 0) jobs[k].dst = scratch + (uintptr_t)jobs[k].dst;
    }
    int hw = 0;
    if (st == SL_OK) {
        st = sl__nvjpeg_decode(s->nvjpeg, ngpu, jobs, s->type, io->stream, &hw, failed, err);
        if (st != SL_OK) { /* not about one image (out of memory): name the batch's first */
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            st = sl__op_fail(err, st, io, first, s->name, "nvJPEG: %s", msg);
        }
    }
    int ncrop = 0;
    for (int k = 0; k < ngpu && st == SL_OK; k++) ncrop += rois && !failed[k] && !jobs[k].out_w;
    if (st == SL_OK && ncrop) { /* crop whole images: cmn's kernel as an exact uint8 copy */
        sl__cuda_cmn_desc *d =
            sl__gpu_args_host(&s->crop, io->device.id, (size_t)ncrop * sizeof *d, err);
        if (!d) st = err->status;
        int64_t maxpix = 0, m = 0;
        for (int k = 0; k < ngpu && st == SL_OK; k++) {
            if (failed[k] || jobs[k].out_w) continue; /* the CPU / the planes' kernel wrote it */
            int i = idx[k];
            sl__cmn_sample *p = &d[m].p;
            memset(p, 0, sizeof *p);
            p->in_h = b->hw[2 * i], p->in_w = b->hw[2 * i + 1], p->in_c = c;
            p->anchor_y = rois[i].y, p->anchor_x = rois[i].x;
            p->out_h = rois[i].h, p->out_w = rois[i].w, p->out_c = c;
            sl__cmn_sample_hwc(p);
            for (int ch = 0; ch < c; ch++) p->inv_std[ch] = 1.0f;
            d[m].in = jobs[k].dst;
            d[m].out = out->data[i];
            if (p->out_h * p->out_w > maxpix) maxpix = p->out_h * p->out_w;
            m++;
        }
        void *dd = NULL;
        if (st == SL_OK)
            st = sl__gpu_args_send(&s->crop, (size_t)m * sizeof *d, io->stream, &dd, err);
        if (st == SL_OK)
            st = sl__cuda_cmn(dd, (int)m, maxpix, SL_DTYPE_U8, SL_DTYPE_U8, io->stream, err);
    }
    /* what nvJPEG did not decode: on the CPU into the pinned slot, then copied (after the crop
     * kernel on the stream, so nothing overwrites it) */
    for (int k = 0; k < ngpu && st == SL_OK; k++)
        if (failed[k]) st = cpu_fallback(s, io, idx[k], rois ? &rois[idx[k]] : NULL, err);
    if (st == SL_OK) __atomic_fetch_add(&s->decodes, ngpu, __ATOMIC_RELAXED);
    if (st == SL_OK && s->cache) st = cache_copies(s, io, err);
    if (st == SL_ENOMEM && !err->msg[0]) sl_err_set(err, st, "%s: out of memory", s->name);
    free(jobs);
    free(idx);
    free(failed);
    return st;
}
