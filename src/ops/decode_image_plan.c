/* SPDX-License-Identifier: Apache-2.0 */
/* The image decoders' plan, setup's last step (decode_image.h): on a GPU pipeline, which samples
 * the hardware JPEG engines take (hw_decoder_load), which nvJPEG's other back end, which the CPU
 * pool and which the cache serves, with the per-batch state that carries it to the GPU stage; on a
 * CPU pipeline the cache's hits; on both, the order the pool decodes in, dearest first. */
#include "ops/decode_image.h"
#include "ops/decode_image_cache.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_NVJPEG
#include "ops/decode_image_nvjpeg.h"
#endif

/* A CPU pipeline's setup copies a batch's hits itself up to this many bytes; the rest are
 * copied by run_cpu on the pool. */
#define CACHE_INLINE_BYTES ((size_t)256 << 10)

/* The per-sample arrays of a batch state (sized for b->cap samples). */
static void free_batch_arrays(sl__decode_image_batch *b) {
    free(b->on_gpu);
    free(b->hw);
    free(b->roi);
    free(b->info);
    free(b->hit_off);
    free(b->put_off);
    free(b->run);
}

void sl__decode_image_free_batch(void *batch_state) {
    sl__decode_image_batch *b = batch_state;
    if (!b) return;
#ifdef SLUICE_HAVE_NVJPEG
    sl__nvjpeg_ahead_free(b->ahead);
#endif
    free(b->ajobs), free(b->aidx), free(b->adone);
    free_batch_arrays(b);
    sl__alloc_pinned_free(b->pinned);
    free(b);
}

/* What the hardware JPEG engines take (JPEG layouts they decode: baseline or extended Huffman,
 * gray or 4:4:4 / 4:2:2 / 4:4:0 / 4:2:0), as far as the header tells. */
static bool engine_fits(const sl__decode_image_info *inf) {
    if (inf->sof > 1) return false;
    if (inf->comps == 1) return true;
    sl__ycc_layout l;
    return sl__decode_image_ycc_layout(inf, &l) && l.hs <= 2 && l.vs <= 2;
}

/* ---- which images the engines take, and the order the pool decodes in ---------------------------
 * A window's CPU decode (jpeg_body, decode_image_cpu.c) entropy-decodes every row down to the
 * window's bottom and runs the IDCT, upsampling and colour conversion on the window only; the
 * engines always decode the whole image. Timed with libjpeg-turbo on the DALI_extra photos (300
 * random windows each), a window costs about 0.65 x (its bottom row / the height) + 0.35 x (its
 * area / the image's) of the whole image's decode, within 0.01-0.03. */
static double cpu_share(const sl__decode_image_info *inf, const sl__decode_image_roi *roi) {
    if (!roi || inf->format != SL__IMG_JPEG || inf->orientation != 1 || inf->out_h < 1 ||
        inf->out_w < 1)
        return 1.0; /* decoded whole */
    double h = (double)inf->out_h, w = (double)inf->out_w;
    return 0.65 * (double)(roi->y + roi->h) / h + 0.35 * (double)roi->h * (double)roi->w / (h * w);
}

typedef struct {
    double key;
    int i;
} rank_ent;

static int by_key_desc(const void *a, const void *b) {
    const rank_ent *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Sorts the n samples listed in idx by their CPU decode's cost, dearest first, equal costs in
 * their order: the cost relative to a whole decode (whole: false), or in pixels (whole: true).
 * false, and idx as it was, when all costs are equal. */
static bool order_by_cost(sl__decode_image_state *s, int *idx, int n,
                          const sl__decode_image_roi *rois, bool whole) {
    rank_ent *r = s->rank;
    bool same = true;
    for (int k = 0; k < n; k++) {
        const sl__decode_image_info *inf = &s->info[idx[k]];
        double share = cpu_share(inf, rois ? &rois[idx[k]] : NULL);
        r[k].key = whole ? share * (double)inf->h * (double)inf->w : share;
        r[k].i = idx[k];
        same &= r[k].key == r[0].key;
    }
    if (same) return false;
    qsort(r, (size_t)n, sizeof *r, by_key_desc);
    for (int k = 0; k < n; k++) idx[k] = r[k].i;
    return true;
}

/* hw_decoder_load, on a GPU with JPEG engines (or before that is known): of the images bound for
 * nvJPEG, ceil(hw_load * n) of those the engines take stay there; the others are decoded on the
 * CPU pool in this stage, in parallel with the engines (libjpeg-turbo, like the small images).
 * The pool gets the windows cheapest to decode on the CPU relative to a whole decode (a small
 * window near the top costs the engines a whole image and the CPU a fraction of one); the
 * plain decoder's images all cost the same, so the engines take the first ones. Without engines
 * everything stays with nvJPEG's GPU/hybrid back end. idx: scratch for n samples. */
static void route_engines(sl__decode_image_state *s, int n, sl__decode_image_batch *b,
                          const sl__decode_image_roi *rois, int *idx) {
    if (__atomic_load_n(&s->engines, __ATOMIC_RELAXED) == 0) return;
    int fit = 0;
    for (int i = 0; i < n; i++) {
        if (b->on_gpu[i] != 1) continue;
        if (engine_fits(&b->info[i]))
            idx[fit++] = i;
        else
            b->on_gpu[i] = 0; /* the engines would refuse it: the CPU pool */
    }
    double load = s->hw_load < 0 ? 0 : s->hw_load > 1 ? 1 : s->hw_load;
    int quota = (int)ceil(load * (double)fit);
    order_by_cost(s, idx, fit, rois, false);
    for (int k = quota; k < fit; k++) b->on_gpu[idx[k]] = 0;
}

/* plan's scratch: s->rank and s->order for n samples. */
static sl_status plan_scratch(sl__decode_image_state *s, int n, sl_err *err) {
    if (n <= s->rank_cap) return SL_OK;
    free(s->rank), free(s->order);
    s->rank_cap = 0;
    s->rank = sl__calloc((size_t)n, sizeof(rank_ent), err);
    s->order = sl__calloc((size_t)n, sizeof *s->order, err);
    if (!s->rank || !s->order) return SL_ENOMEM;
    s->rank_cap = n;
    return SL_OK;
}

sl_status sl__decode_image_plan(sl__decode_image_state *s, sl__op_io *io,
                                const sl__decode_image_roi *rois, sl_err *err) {
    SL_TRY(plan_scratch(s, io->batch, err));
    if (io->device.kind != SL_DEVICE_CUDA) {
        sl__decode_image_cache *c = s->cache;
        if (!c) { /* every sample, the dearest first when they differ */
            for (int i = 0; i < io->batch; i++) s->order[i] = i;
            if (order_by_cost(s, s->order, io->batch, rois, true)) {
                io->run_index = s->order;
                io->run_count = io->batch;
            }
            return SL_OK;
        }
        SL_TRY(sl__decode_image_cache_plan(s, io, c->hit, c->put, err));
        /* hits are copies: made here, on the stage thread, up to CACHE_INLINE_BYTES a batch
         * (waking the pool costs more than that); what is left goes to run_cpu */
        const sl_tlist *out = io->out[0];
        size_t inl = 0;
        int n = 0;
        for (int i = 0; i < io->batch; i++) {
            if (s->info[i].format == 0) continue; /* skipped: nothing to do */
            size_t nb = sl_tlist_sample_nbytes(out, i);
            if (c->hit[i] && inl + nb <= CACHE_INLINE_BYTES) {
                memcpy(out->data[i], c->host + c->hit[i] - 1, nb);
                inl += nb;
                continue;
            }
            c->run[n++] = i;
        }
        order_by_cost(s, c->run, n, rois, true);
        io->run_index = c->run;
        io->run_count = n;
        return SL_OK;
    }
    sl__decode_image_batch *b = *io->batch_state;
    if (!b) {
        b = sl__calloc(1, sizeof *b, err);
        if (!b) return SL_ENOMEM;
        *io->batch_state = b;
    }
    if (io->batch > b->cap) {
        free_batch_arrays(b);
        b->cap = 0;
        size_t n = (size_t)io->batch;
        b->on_gpu = sl__calloc(n, 1, err);
        b->hw = sl__calloc(n * 2, sizeof *b->hw, err);
        b->roi = sl__calloc(n, sizeof *b->roi, err);
        b->info = sl__calloc(n, sizeof *b->info, err);
        b->hit_off = sl__calloc(n, sizeof *b->hit_off, err);
        b->put_off = sl__calloc(n, sizeof *b->put_off, err);
        b->run = sl__calloc(n, sizeof *b->run, err);
        if (!b->on_gpu || !b->hw || !b->roi || !b->info || !b->hit_off || !b->put_off || !b->run)
            return SL_ENOMEM;
        b->cap = io->batch;
    }
    const sl_tlist *out = io->out[0];
    size_t need = out->buf_used ? out->buf_used : 1;
    if (need > b->pinned_cap) {
        sl__alloc_pinned_free(b->pinned);
        b->pinned_cap = 0;
        b->pinned = sl__alloc_pinned(need, err);
        if (!b->pinned) return err->status;
        b->pinned_cap = need;
    }
    memcpy(b->info, s->info, (size_t)io->batch * sizeof *b->info);
    if (s->cache)
        SL_TRY(sl__decode_image_cache_plan(s, io, b->hit_off, b->put_off, err));
    else
        memset(b->hit_off, 0, (size_t)io->batch * sizeof *b->hit_off),
            memset(b->put_off, 0, (size_t)io->batch * sizeof *b->put_off);
    for (int i = 0; i < io->batch; i++) {
        const sl__decode_image_info *inf = &s->info[i];
        b->hw[2 * i] = inf->h, b->hw[2 * i + 1] = inf->w;
        bool gray = s->type == SL__IMG_GRAY;
        sl__ycc_layout l;
        /* a stream cut short stays on the CPU, where libjpeg reports it (nvJPEG pads it) */
        bool fits =
            inf->format == SL__IMG_JPEG && inf->complete && inf->orientation == 1 && !s->skip_bad &&
            (gray || ((s->type == SL__IMG_RGB || s->type == SL__IMG_BGR) && inf->comps == 3 &&
                      inf->ycbcr && sl__decode_image_ycc_layout(inf, &l)));
#ifdef SLUICE_HAVE_NVJPEG
        b->on_gpu[i] = b->hit_off[i] ? 2 : fits && inf->h * inf->w > s->cpu_max_pixels;
#else
        (void)fits;
        b->on_gpu[i] = 0;
#endif
    }
#ifdef SLUICE_HAVE_NVJPEG
    sl__nvjpeg *nvj = __atomic_load_n((sl__nvjpeg **)&s->nvjpeg, __ATOMIC_ACQUIRE);
    if (nvj && sl__nvjpeg_stalled(nvj)) { /* the engines stalled: the CPU pool takes their share */
        __atomic_store_n(&s->engines, 0, __ATOMIC_RELAXED);
        for (int i = 0; i < io->batch; i++)
            if (b->on_gpu[i] == 1) b->on_gpu[i] = 0;
    }
#endif
    route_engines(s, io->batch, b, rois, s->order);
    /* run_cpu decodes the CPU's share only: nvJPEG reads its samples' bytes from the input in the
     * GPU half (the batch slot keeps them until the batch is released, op.h), and cache hits are
     * copied there too */
    int m = 0;
    for (int i = 0; i < io->batch; i++)
        if (b->on_gpu[i] == 0 && s->info[i].format != 0) b->run[m++] = i;
    order_by_cost(s, b->run, m, rois, true); /* the dearest first: the batch's tail is shorter */
    b->an = 0;
#ifdef SLUICE_HAVE_NVJPEG
    /* once the GPU stage has made the decoder (its first batch) and it has engines: the engines'
     * share is started from this stage too (the batch job, run_cpu's sample -1, on the stage's
     * thread beside the pool: sl__decode_image_ahead), so that they work on this batch while the
     * GPU stage finishes the one before */
    bool engine_work = false;
    for (int i = 0; i < io->batch && !engine_work; i++) engine_work = b->on_gpu[i] == 1;
    io->batch_job = nvj && engine_work && sl__nvjpeg_has_engines(nvj);
#endif
    io->run_index = b->run;
    io->run_count = m;
    return SL_OK;
}

uint8_t *sl__decode_image_target(const sl__op_io *io, int i) {
    const sl_tlist *out = io->out[0];
    if (io->device.kind != SL_DEVICE_CUDA) return out->data[i];
    sl__decode_image_batch *b = *io->batch_state;
    return b->pinned + ((uint8_t *)out->data[i] - (uint8_t *)out->buf);
}
