/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image_random_crop: decodes a random area / aspect-ratio window of each image, as DALI's
 * fn.decoders.image_random_crop (random_area [0.08, 1], random_aspect_ratio [3/4, 4/3],
 * num_attempts 10; after that a centred crop with the ratio clamped into range). The window is
 * chosen in setup from Philox(seed, sample's global index) and the header's size; JPEGs are then
 * decoded with libjpeg's jpeg_crop_scanline / jpeg_skip_scanlines so the rest is not decoded.
 * Shares decoders.image's arguments and decoder (decode_image.c). */
#include "ops/crop_window.h"
#include "ops/decode_image.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema rc_args[] = {
    SL__DECODE_IMAGE_ARGS,
    SL__CROP_WINDOW_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct rc_state {
    sl__decode_image_state *dec;
    sl__crop_window_cfg win;
    uint64_t seed;
    sl__decode_image_roi *roi;
    int cap;
} rc_state;

static const char *const NAME = "decoders.image_random_crop";

static void rc_destroy(void *state) {
    rc_state *s = state;
    if (!s) return;
    sl__decode_image_destroy(s->dec);
    free(s->roi);
    free(s);
}

static sl_status rc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    rc_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = sl__decode_image_create(a, init, (void **)&s->dec, err);
    if (st == SL_OK) st = sl__crop_window_args(a, NAME, &s->win, err);
    s->seed = init->seed;
    if (st != SL_OK) {
        rc_destroy(s);
        return st;
    }
    s->dec->name = NAME;
    *out = s;
    return SL_OK;
}

static sl_status rc_setup(void *state, sl__op_io *io, sl_err *err) {
    rc_state *s = state;
    sl__decode_image_state *d = s->dec;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 1)
        return sl_err_set(err, SL_EINVAL, "%s: input must be encoded bytes (uint8, 1-D)", NAME);
    if (io->batch > s->cap) {
        sl__decode_image_info *ni = realloc(d->info, (size_t)io->batch * sizeof *ni);
        if (ni) d->info = ni, d->info_cap = io->batch;
        sl__decode_image_roi *nr = ni ? realloc(s->roi, (size_t)io->batch * sizeof *nr) : NULL;
        if (!nr) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->roi = nr;
        s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 3, io->device, err));
    int64_t *shapes = sl__malloc((size_t)io->batch * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    uint64_t seed = io->seed ? io->seed : s->seed;
    for (int i = 0; i < io->batch; i++) /* as decoders.image does: see its setup */
        sl__decode_image_prefetch(in->data[i], sl_tlist_sample_nbytes(in, i));
    for (int i = 0; i < io->batch; i++) {
        char why[256];
        sl__decode_image_info *inf = &d->info[i];
        sl_status st = sl__decode_image_peek(in->data[i], sl_tlist_sample_nbytes(in, i), d->type,
                                             d->orient, d->max_pixels, inf, why, sizeof why);
        if (st != SL_OK && !d->skip_bad) {
            free(shapes);
            return sl__op_fail(err, st, io, i, NAME, "%s", why);
        }
        if (st != SL_OK) {
            __atomic_fetch_add(&d->skipped, 1, __ATOMIC_RELAXED);
            memset(inf, 0, sizeof *inf);
            inf->c = d->type == SL__IMG_GRAY ? 1 : 3;
            memset(&s->roi[i], 0, sizeof s->roi[i]);
        } else {
            sl__crop_window w =
                sl__crop_window_draw(&s->win, seed, io->sample_base + i, inf->out_h, inf->out_w);
            s->roi[i] = (sl__decode_image_roi){w.y, w.x, w.h, w.w};
        }
        shapes[i * 3] = s->roi[i].h;
        shapes[i * 3 + 1] = s->roi[i].w;
        shapes[i * 3 + 2] = inf->c;
    }
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st == SL_OK) memcpy(out->layout, "HWC", 4);
    if (st == SL_OK) st = sl__decode_image_plan(d, io, s->roi, err);
    if (st == SL_OK && io->device.kind == SL_DEVICE_CUDA) { /* the GPU half reads its own copy */
        sl__decode_image_batch *b = *io->batch_state;
        memcpy(b->roi, s->roi, (size_t)io->batch * sizeof *b->roi);
    }
    return st;
}

static sl_status rc_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    rc_state *s = state;
    sl__decode_image_state *d = s->dec;
#ifdef SLUICE_HAVE_NVJPEG
    if (i < 0) return sl__decode_image_ahead(d, io, s->roi, err); /* the engines' job */
#endif
    const sl__decode_image_info *inf = &d->info[i];
    if (inf->format == 0) return SL_OK; /* skipped (nvJPEG's samples are never in the run) */
    const sl_tlist *in = io->in[0];
    char why[512];
    uint8_t *to = sl__decode_image_target(io, i);
    sl_status st =
        sl__decode_image_run(d->workers[worker], in->data[i], sl_tlist_sample_nbytes(in, i), inf,
                             d->type, &s->roi[i], d->fast_idct, to, why, sizeof why);
    if (st == SL_EFORMAT && d->skip_bad) {
        __atomic_fetch_add(&d->skipped, 1, __ATOMIC_RELAXED);
        memset(to, 0, sl_tlist_sample_nbytes(io->out[0], i));
        return SL_OK;
    }
    if (st != SL_OK) return sl__op_fail(err, st, io, i, NAME, "%s", why);
    __atomic_fetch_add(&d->decodes, 1, __ATOMIC_RELAXED);
    return SL_OK;
}

const sl__decode_image_roi *sl__image_random_crop_roi(void *state, int i) {
    return &((rc_state *)state)->roi[i];
}

#ifdef SLUICE_HAVE_NVJPEG
/* nvJPEG decodes whole images into scratch, then each window is cut out on the GPU */
static sl_status rc_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    return sl__decode_image_run_gpu(((rc_state *)state)->dec, io, true, err);
}
#endif

const sl__op_def sl__image_random_crop_op = {
    .name = "decoders.image_random_crop",
    .aliases = "image_decoder_random_crop|experimental.decoders.image_random_crop",
    .doc = "Decodes a random area/aspect-ratio window of each JPEG, PNG, BMP, PNM, TIFF or JPEG "
           "2000 (HWC uint8).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = rc_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_MIXED,
    .flags = SL_OPF_RANDOM | SL_OPF_DECODER,
    .create = rc_create,
    .setup = rc_setup,
    .run_cpu = rc_run_cpu,
#ifdef SLUICE_HAVE_NVJPEG
    .run_gpu = rc_run_gpu,
    .free_batch_state = sl__decode_image_free_batch,
#endif
    .destroy = rc_destroy,
};
