/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image_slice and decoders.image_crop (DALI's): decoders.image that decodes only a
 * window of each image. image_slice takes the window as slice does (anchor and shape inputs, or
 * start / end / shape arguments, on axis_names "WH" by default; slice_window.h, so both ops cut
 * the same windows); image_crop as crop does (crop or crop_h / crop_w, crop_pos_x / crop_pos_y,
 * rounding; per sample where crop has them). The window must lie inside the decoded image (its
 * orientation applied): one that leaves it fails, naming the sample. The windows are chosen in
 * setup from the headers, then JPEGs are decoded with libjpeg's jpeg_crop_scanline /
 * jpeg_skip_scanlines as decoders.image_random_crop does (the rest is not decoded), with its
 * decoder and its nvJPEG path (decode_image.c, image_random_crop.c). */
#include "ops/decode_image.h"
#include "ops/slice_window.h"
#include "operator/argin.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema slice_args[] = {
    SL__DECODE_IMAGE_ARGS,
    {"axes", SL_ARG_INTS, "[1, 0]", "dimensions the window's coordinates apply to", 0, NULL},
    {"axis_names", SL_ARG_STR, "\"WH\"",
     "layout names of the dimensions the coordinates apply to (wins over axes)", 0, NULL},
    {"normalized_anchor", SL_ARG_BOOL, "True", "the anchor input is a fraction of the extent", 0,
     NULL},
    {"normalized_shape", SL_ARG_BOOL, "True", "the shape input is a fraction of the extent", 0,
     NULL},
    {"start", SL_ARG_FLOATS, "None", "window start, absolute", SL_ARGF_PER_SAMPLE, NULL},
    {"rel_start", SL_ARG_FLOATS, "None", "window start, a fraction of the extent",
     SL_ARGF_PER_SAMPLE, NULL},
    {"end", SL_ARG_FLOATS, "None", "window end (exclusive), absolute", SL_ARGF_PER_SAMPLE, NULL},
    {"rel_end", SL_ARG_FLOATS, "None", "window end, a fraction of the extent", SL_ARGF_PER_SAMPLE,
     NULL},
    {"shape", SL_ARG_FLOATS, "None", "window shape, absolute", SL_ARGF_PER_SAMPLE, NULL},
    {"rel_shape", SL_ARG_FLOATS, "None", "window shape, a fraction of the extent",
     SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema crop_args[] = {
    SL__DECODE_IMAGE_ARGS,
    {"crop", SL_ARG_FLOATS, "None", "crop window (crop_h, crop_w); exclusive with crop_h/crop_w", 0,
     NULL},
    {"crop_h", SL_ARG_FLOAT, "0.0", "crop height (0 = whole height)", SL_ARGF_PER_SAMPLE, NULL},
    {"crop_w", SL_ARG_FLOAT, "0.0", "crop width (0 = whole width)", SL_ARGF_PER_SAMPLE, NULL},
    {"crop_d", SL_ARG_FLOAT, "0.0", "crop depth (volumes; must be 0)", 0, NULL},
    {"crop_pos_x", SL_ARG_FLOAT, "0.5", "normalised horizontal anchor in [0, 1]",
     SL_ARGF_PER_SAMPLE, NULL},
    {"crop_pos_y", SL_ARG_FLOAT, "0.5", "normalised vertical anchor in [0, 1]", SL_ARGF_PER_SAMPLE,
     NULL},
    {"crop_pos_z", SL_ARG_FLOAT, "0.5", "volumes; unused", 0, NULL},
    {"rounding", SL_ARG_ENUM, "\"round\"", "anchor rounding: round or truncate", 0,
     "round|truncate"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct roi_state {
    const char *name;
    bool slice;
    sl__decode_image_state *dec;
    void *win; /* image_slice: slice's window state */
    /* image_crop */
    double crop_h, crop_w, pos_x, pos_y;
    int node_ch, node_cw, node_px, node_py;
    bool truncate;
    sl__decode_image_roi *roi;
    int cap;
} roi_state;

static void roi_destroy(void *state) {
    roi_state *s = state;
    if (!s) return;
    sl__decode_image_destroy(s->dec);
    sl__slice_window_destroy(s->win);
    free(s->roi);
    free(s);
}

static sl_status roi_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err,
                            bool slice) {
    roi_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->slice = slice;
    s->name = slice ? "decoders.image_slice" : "decoders.image_crop";
    sl_status st = sl__decode_image_create(a, init, (void **)&s->dec, err);
    if (st == SL_OK) s->dec->name = s->name;
    if (st == SL_OK && slice) st = sl__slice_window_create(a, s->name, &s->win, err);
    if (st == SL_OK && !slice) {
        const double *cr;
        int nc = sl__args_get(a, "crop")->kind == SL_VAL_NONE ? 0 : sl__args_floats(a, "crop", &cr);
        if (nc && nc != 2)
            st = sl_err_set(err, SL_EINVAL, "%s: crop wants (crop_h, crop_w), got %d values",
                            s->name, nc);
        else if (nc && (sl__args_given(a, "crop_h") || sl__args_given(a, "crop_w")))
            st = sl_err_set(err, SL_EINVAL, "%s: crop and crop_h/crop_w are exclusive", s->name);
        else if (nc)
            s->crop_h = cr[0], s->crop_w = cr[1];
        else
            s->crop_h = sl__args_float(a, "crop_h"), s->crop_w = sl__args_float(a, "crop_w");
        if (st == SL_OK && sl__args_float(a, "crop_d") != 0)
            st = sl_err_set(err, SL_ENOTSUP, "%s: crop_d (volumes) is not supported", s->name);
        s->node_ch = nc ? -1 : sl__args_node(a, "crop_h");
        s->node_cw = nc ? -1 : sl__args_node(a, "crop_w");
        s->node_px = sl__args_node(a, "crop_pos_x");
        s->node_py = sl__args_node(a, "crop_pos_y");
        s->pos_x = sl__args_float(a, "crop_pos_x");
        s->pos_y = sl__args_float(a, "crop_pos_y");
        s->truncate = !strcmp(sl__args_str(a, "rounding"), "truncate");
    }
    if (st != SL_OK) {
        roi_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status slice_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return roi_create(a, i, o, e, true);
}
static sl_status crop_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return roi_create(a, i, o, e, false);
}

static double per_sample(const sl__op_io *io, int node, int i, double v) {
    if (node >= 0) sl__argin_values(io, node, i, &v, 1);
    return v;
}

/* sample i's window over an h x w x c image */
static sl_status window(roi_state *s, const sl__op_io *io, int i, int64_t h, int64_t w, int64_t c,
                        sl__decode_image_roi *r, sl_err *err) {
    int64_t y0, x0, wh, ww;
    if (s->slice) {
        int64_t shape[3] = {h, w, c}, anchor[3], ext[3];
        SL_TRY(sl__slice_window_sample(s->win, io, i, shape, 3, "HWC", anchor, ext, err));
        if (anchor[2] != 0 || ext[2] != c)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name, "the window cuts the channels");
        y0 = anchor[0], x0 = anchor[1], wh = ext[0], ww = ext[1];
    } else {
        double ch = per_sample(io, s->node_ch, i, s->crop_h);
        double cw = per_sample(io, s->node_cw, i, s->crop_w);
        double px = per_sample(io, s->node_px, i, s->pos_x);
        double py = per_sample(io, s->node_py, i, s->pos_y);
        if (!(ch >= 0 && ch <= 1e9 && cw >= 0 && cw <= 1e9))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "crop_h/crop_w (%g, %g): crop sizes from 0 to 1e9", ch, cw);
        if (!(px >= 0 && px <= 1 && py >= 0 && py <= 1))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name, "crop_pos (%g, %g) outside [0, 1]",
                               px, py);
        wh = ch > 0 ? (int64_t)llround(ch) : h;
        ww = cw > 0 ? (int64_t)llround(cw) : w;
        if (wh < 1) wh = 1;
        if (ww < 1) ww = 1;
        double vy = py * (double)(h - wh), vx = px * (double)(w - ww);
        y0 = s->truncate ? (int64_t)trunc(vy) : (int64_t)llroundf((float)vy);
        x0 = s->truncate ? (int64_t)trunc(vx) : (int64_t)llroundf((float)vx);
    }
    if (y0 < 0 || x0 < 0 || wh < 0 || ww < 0 || y0 + wh > h || x0 + ww > w)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "the window (%lld, %lld) + (%lld, %lld) leaves the %lld x %lld image",
                           (long long)y0, (long long)x0, (long long)wh, (long long)ww, (long long)h,
                           (long long)w);
    *r = (sl__decode_image_roi){y0, x0, wh, ww};
    return SL_OK;
}

static sl_status roi_setup(void *state, sl__op_io *io, sl_err *err) {
    roi_state *s = state;
    sl__decode_image_state *d = s->dec;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 1)
        return sl_err_set(err, SL_EINVAL, "%s: input must be encoded bytes (uint8, 1-D)", s->name);
    if (s->slice) SL_TRY(sl__slice_window_check(s->win, io, err));
    for (int j = 1; j < io->num_inputs; j++)
        if (io->in[j]->device.kind != SL_DEVICE_CPU)
            return sl_err_set(err, SL_EINVAL, "%s: the %s input must be on the CPU", s->name,
                              j == 1 ? "anchor" : "shape");
    if (io->batch > s->cap) {
        sl__decode_image_info *ni = realloc(d->info, (size_t)io->batch * sizeof *ni);
        if (ni) d->info = ni, d->info_cap = io->batch;
        sl__decode_image_roi *nr = ni ? realloc(s->roi, (size_t)io->batch * sizeof *nr) : NULL;
        if (!nr) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->roi = nr;
        s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, 3, io->device, err));
    int64_t *shapes = sl__malloc((size_t)(io->batch ? io->batch : 1) * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++)
        sl__decode_image_prefetch(in->data[i], sl_tlist_sample_nbytes(in, i));
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        char why[256];
        sl__decode_image_info *inf = &d->info[i];
        st = sl__decode_image_peek(in->data[i], sl_tlist_sample_nbytes(in, i), d->type, d->orient,
                                   d->max_pixels, inf, why, sizeof why);
        if (st != SL_OK && !d->skip_bad) {
            st = sl__op_fail(err, st, io, i, s->name, "%s", why);
            break;
        }
        if (st != SL_OK) {
            st = SL_OK;
            __atomic_fetch_add(&d->skipped, 1, __ATOMIC_RELAXED);
            memset(inf, 0, sizeof *inf);
            inf->c = d->type == SL__IMG_GRAY ? 1 : 3;
            memset(&s->roi[i], 0, sizeof s->roi[i]);
        } else {
            st = window(s, io, i, inf->out_h, inf->out_w, inf->c, &s->roi[i], err);
        }
        shapes[i * 3] = s->roi[i].h;
        shapes[i * 3 + 1] = s->roi[i].w;
        shapes[i * 3 + 2] = inf->c;
    }
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st == SL_OK) memcpy(out->layout, "HWC", 4);
    if (st == SL_OK) st = sl__decode_image_plan(d, io, s->roi, err);
    if (st == SL_OK && io->device.kind == SL_DEVICE_CUDA) { /* the GPU half reads its own copy */
        sl__decode_image_batch *b = *io->batch_state;
        memcpy(b->roi, s->roi, (size_t)io->batch * sizeof *b->roi);
    }
    return st;
}

static sl_status roi_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    roi_state *s = state;
    sl__decode_image_state *d = s->dec;
#ifdef SLUICE_HAVE_NVJPEG
    if (i < 0) return sl__decode_image_ahead(d, io, s->roi, err); /* the engines' job */
#endif
    const sl__decode_image_info *inf = &d->info[i];
    if (inf->format == 0) return SL_OK; /* skipped */
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
    if (st != SL_OK) return sl__op_fail(err, st, io, i, s->name, "%s", why);
    __atomic_fetch_add(&d->decodes, 1, __ATOMIC_RELAXED);
    return SL_OK;
}

#ifdef SLUICE_HAVE_NVJPEG
static sl_status roi_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    return sl__decode_image_run_gpu(((roi_state *)state)->dec, io, true, err);
}
#define ROI_GPU .run_gpu = roi_run_gpu, .free_batch_state = sl__decode_image_free_batch
#else
#define ROI_GPU .run_gpu = NULL
#endif

const sl__op_def sl__image_slice_op = {
    .name = "decoders.image_slice",
    .aliases = "image_decoder_slice|experimental.decoders.image_slice",
    .doc = "Decodes a window of each JPEG, PNG, BMP, PNM, TIFF or JPEG 2000, given as slice takes "
           "it (HWC uint8).",
    .min_inputs = 1,
    .max_inputs = 3,
    .args = slice_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_MIXED,
    .flags = SL_OPF_DECODER,
    .create = slice_create,
    .setup = roi_setup,
    .run_cpu = roi_run_cpu,
    ROI_GPU,
    .destroy = roi_destroy,
};

const sl__op_def sl__image_crop_op = {
    .name = "decoders.image_crop",
    .aliases = "image_decoder_crop|experimental.decoders.image_crop",
    .doc = "Decodes a window of each JPEG, PNG, BMP, PNM, TIFF or JPEG 2000, given as crop takes "
           "it (HWC uint8).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = crop_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_MIXED,
    .flags = SL_OPF_DECODER,
    .create = crop_create,
    .setup = roi_setup,
    .run_cpu = roi_run_cpu,
    ROI_GPU,
    .destroy = roi_destroy,
};
