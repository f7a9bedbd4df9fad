/* SPDX-License-Identifier: Apache-2.0 */
/* resize: separable resampling of (H, W, C) HWC images, as DALI's fn.resize (volumes, DHWC and
 * CDHW, in resize_volume.c): output size from
 * resize_x / resize_y (one alone keeps the aspect ratio), resize_shorter, resize_longer or size;
 * interp_type INTERP_NN, INTERP_LINEAR (default), INTERP_CUBIC (Keys, a = -0.5), INTERP_TRIANGULAR,
 * INTERP_GAUSSIAN (sigma 0.5 px, cut at 1.5), INTERP_LANCZOS3 (sinc(x) sinc(x/3), |x| < 3);
 * antialias (default on) widens the filter by the scale when shrinking, as PIL and DALI do. Pixel
 * centres are aligned ((o + 0.5) * in / out - 0.5). roi_start / roi_end (absolute, or relative
 * with roi_relative) resample a window of the input instead of all of it, its sides fractional if
 * need be, reversed (end before start) to flip that axis; the filter reads the pixels around the
 * window where they exist (clamped at the image's edges). random_resized_crop (DALI's
 * fn.random_resized_crop) is the same op with the window drawn per sample as
 * decoders.image_random_crop draws it (crop_window.h) and `size` the output; resize_crop_mirror
 * (resize_crop_mirror.c) is resize computing only a crop's pixels, mirrored or not. setup fixes
 * every window and output size; run_cpu does a horizontal pass over the rows the window's filter
 * reads into float scratch, then a vertical pass, rounding and saturating to dtype. */
#include "ops/crop_window.h"
#include "ops/resize_int.h"
#include "operator/dtype_conv.h"
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/resize.h"
#endif

static const sl__arg_schema resize_args[] = {
    RESIZE_SIZE_ARGS,
    RESIZE_FILTER_ARGS,
    RESIZE_ROI_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema rrc_args[] = {
    {"size", SL_ARG_FLOATS, NULL, "output (height, width), or one length for both",
     SL_ARGF_REQUIRED, NULL},
    SL__CROP_WINDOW_ARGS,
    RESIZE_FILTER_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

void sl__resize_destroy(void *state) {
    resize_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    sl__gpu_scratch_free(&s->gpu_tmp);
    sl__worker_scratch_free(&s->scratch);
    free(s->out_hw);
    free(s->roi);
    free(s->filters);
    free(s->vol_out);
    free(s->vol_roi);
    sl__rcm_free(s->rcm);
    free(s);
}

static int filter_of(const char *f) {
    return !strcmp(f, "INTERP_NN")           ? F_NN
           : !strcmp(f, "INTERP_CUBIC")      ? F_CUBIC
           : !strcmp(f, "INTERP_TRIANGULAR") ? F_TRI
           : !strcmp(f, "INTERP_GAUSSIAN")   ? F_GAUSS
           : !strcmp(f, "INTERP_LANCZOS3")   ? F_LANCZOS
                                             : F_LINEAR;
}

/* resize's max_size and subpixel_scale */
static sl_status limits(resize_state *s, const sl__args *a, sl_err *err) {
    s->subpixel = sl__args_bool(a, "subpixel_scale");
    if (sl__args_given(a, "image_type")) {
        const char *it = sl__args_str(a, "image_type");
        s->want_c = !strcmp(it, "GRAY") ? 1 : !strcmp(it, "ANY_DATA") ? 0 : 3;
    }
    s->keep_aspect = s->mode == MODE_NOT_LARGER || s->mode == MODE_NOT_SMALLER || s->shorter > 0 ||
                     s->node_shorter >= 0 || s->longer > 0 || s->node_longer >= 0;
    if (sl__args_get(a, "max_size")->kind == SL_VAL_NONE) return SL_OK;
    const double *v;
    int k = sl__args_floats(a, "max_size", &v);
    if (k < 1 || k > 3)
        return sl_err_set(err, SL_EINVAL,
                          "%s: max_size wants [h, w], [d, h, w] or one limit for all", s->name);
    s->nmax = k;
    for (int d = 0; d < k; d++) {
        s->max_size[d] = v[d];
        if (!(s->max_size[d] >= 0 && s->max_size[d] <= 1e7))
            return sl_err_set(err, SL_EINVAL, "%s: max_size = %g: a size from 0 (none) to 1e7",
                              s->name, s->max_size[d]);
    }
    return SL_OK;
}

sl_status sl__resize_create_as(const sl__args *a, const sl__op_init *init, int kind, void **out,
                               sl_err *err) {
    resize_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    bool random = kind == SL__RESIZE_RRC;
    s->random = random;
    s->name = random                        ? "random_resized_crop"
              : kind == SL__RESIZE_RCM      ? "resize_crop_mirror"
              : kind == SL__RESIZE_RCM_FAST ? "fast_resize_crop_mirror"
                                            : "resize";
    s->seed = init->seed;
    sl_status st = SL_OK;
    if (random) {
        const double *v;
        int k = sl__args_floats(a, "size", &v);
        if (k < 1 || k > 2 || !(v[0] >= 1 && v[0] <= 1e7) || !(v[k - 1] >= 1 && v[k - 1] <= 1e7))
            st = sl_err_set(err, SL_EINVAL,
                            "%s: size wants (height, width) or one length, from 1 to 1e7", s->name);
        else
            s->has_size = true, s->size[0] = v[0], s->size[1] = v[k - 1];
        if (st == SL_OK) st = sl__crop_window_args(a, s->name, &s->win, err);
    } else {
        s->node_rx = sl__args_node(a, "resize_x");
        s->node_ry = sl__args_node(a, "resize_y");
        s->node_rz = sl__args_node(a, "resize_z");
        s->node_shorter = sl__args_node(a, "resize_shorter");
        s->node_longer = sl__args_node(a, "resize_longer");
        s->node_size = sl__args_node(a, "size");
        s->rx = s->node_rx < 0 ? sl__args_float(a, "resize_x") : 0;
        s->ry = s->node_ry < 0 ? sl__args_float(a, "resize_y") : 0;
        s->rz = s->node_rz < 0 ? sl__args_float(a, "resize_z") : 0;
        s->shorter = s->node_shorter < 0 ? sl__args_float(a, "resize_shorter") : 0;
        s->longer = s->node_longer < 0 ? sl__args_float(a, "resize_longer") : 0;
        const char *m = sl__args_str(a, "mode");
        s->mode = !strcmp(m, "stretch")       ? MODE_STRETCH
                  : !strcmp(m, "not_larger")  ? MODE_NOT_LARGER
                  : !strcmp(m, "not_smaller") ? MODE_NOT_SMALLER
                                              : MODE_DEFAULT;
        if (s->node_size >= 0) {
            s->has_size = true;
        } else if (sl__args_get(a, "size")->kind != SL_VAL_NONE) {
            const double *v;
            int k = sl__args_floats(a, "size", &v);
            if (k < 1 || k > 3)
                st = sl_err_set(err, SL_EINVAL,
                                "%s: size wants (height, width), (depth, height, width) or one "
                                "length",
                                s->name);
            else
                s->has_size = true, s->nsize = k;
            for (int d = 0; d < 3 && st == SL_OK; d++) s->size[d] = v[k == 1 ? 0 : d < k ? d : 0];
            if (k == 2) s->size[2] = 0;
        }
        double sizes[8] = {s->rx,     s->ry,      s->rz,      s->shorter,
                           s->longer, s->size[0], s->size[1], s->size[2]};
        static const char *const size_args[8] = {"resize_x",       "resize_y",      "resize_z",
                                                 "resize_shorter", "resize_longer", "size[0]",
                                                 "size[1]",        "size[2]"};
        for (int k = 0; k < 8 && st == SL_OK; k++)
            if (!(sizes[k] >= 0 && sizes[k] <= 1e7)) /* (also NaN) */
                st = sl_err_set(err, SL_EINVAL, "%s: %s = %g: an output size from 0 to 1e7",
                                s->name, size_args[k], sizes[k]);
        int given = (s->rx > 0 || s->ry > 0 || s->rz > 0 || s->node_rx >= 0 || s->node_ry >= 0 ||
                     s->node_rz >= 0) +
                    (s->shorter > 0 || s->node_shorter >= 0) +
                    (s->longer > 0 || s->node_longer >= 0) + s->has_size;
        if (st == SL_OK && given != 1)
            st = sl_err_set(
                err, SL_EINVAL,
                "%s: give one of resize_x/resize_y/resize_z, resize_shorter, resize_longer, size",
                s->name);
        bool rs = sl__args_get(a, "roi_start")->kind != SL_VAL_NONE,
             re = sl__args_get(a, "roi_end")->kind != SL_VAL_NONE;
        s->roi_rel = sl__args_bool(a, "roi_relative");
        s->has_roi = rs || re;
        s->roi_start[0] = s->roi_start[1] = 0;
        s->roi_end[0] = s->roi_end[1] = s->roi_rel ? 1 : -1; /* -1: the input's size */
        const double *v;
        s->roi_start[2] = 0, s->roi_end[2] = s->roi_end[0];
        s->nroi = 0;
        static const char *const roi_args[2] = {"roi_start", "roi_end"};
        double *roi_dst[2] = {s->roi_start, s->roi_end};
        for (int e = 0; e < 2 && st == SL_OK; e++) {
            if (!(e ? re : rs)) continue;
            int k = sl__args_floats(a, roi_args[e], &v);
            if ((k != 2 && k != 3) || (s->nroi && k != s->nroi))
                st = sl_err_set(err, SL_EINVAL,
                                "%s: %s wants [y, x], or [z, y, x] of a volume (as the other "
                                "end)",
                                s->name, roi_args[e]);
            s->nroi = k;
            for (int d = 0; d < k && st == SL_OK; d++) roi_dst[e][d] = v[d];
        }
        if (st == SL_OK) st = limits(s, a, err);
        if (st == SL_OK && (kind == SL__RESIZE_RCM || kind == SL__RESIZE_RCM_FAST))
            st = sl__rcm_create(a, s, err);
    }
    s->args = a;
    s->antialias = sl__args_bool(a, "antialias");
    if (st == SL_OK && sl__args_int(a, "minibatch_size") < 1)
        st = sl_err_set(err, SL_EINVAL, "%s: minibatch_size = %lld: a positive count", s->name,
                        (long long)sl__args_int(a, "minibatch_size"));
    if (st == SL_OK && sl__args_int(a, "temp_buffer_hint") < 0)
        st = sl_err_set(err, SL_EINVAL, "%s: temp_buffer_hint = %lld: a byte count", s->name,
                        (long long)sl__args_int(a, "temp_buffer_hint"));
    s->has_dtype = sl__args_get(a, "dtype")->kind != SL_VAL_NONE;
    if (s->has_dtype) s->dtype = sl__args_dtype(a, "dtype");
    if (st == SL_OK) st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st != SL_OK) {
        sl__resize_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status resize_create(const sl__args *a, const sl__op_init *init, void **out,
                               sl_err *err) {
    return sl__resize_create_as(a, init, SL__RESIZE_PLAIN, out, err);
}

static sl_status rrc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    return sl__resize_create_as(a, init, SL__RESIZE_RRC, out, err);
}

/* sample i's (min_filter, mag_filter), each an op output or a literal (as DALI's, interp_type's
 * where not given) */
sl_status sl__resize_sample_filters(resize_state *s, const sl__op_io *io, int i, sl_err *err) {
    const sl__args *a = s->args;
    const char *interp, *f;
    SL_TRY(sl__args_sample_enum(a, io, s->name, "interp_type", i, &interp, err));
    static const char *const which[2] = {"min_filter", "mag_filter"};
    for (int k = 0; k < 2; k++) {
        f = NULL;
        if (sl__args_given(a, which[k]))
            SL_TRY(sl__args_sample_enum(a, io, s->name, which[k], i, &f, err));
        s->filters[2 * i + k] = filter_of(f ? f : interp);
    }
    return SL_OK;
}

static int64_t rnd(double v) {
    return v < 1 ? 1 : (int64_t)llround(v);
}

/* The sizes asked for sample i: (height, width) targets, 0 where an extent is not given, and
 * whether they came from resize_shorter/resize_longer (the aspect ratio is then always kept). */
static sl_status targets(const resize_state *s, const sl__op_io *io, int i, double h, double w,
                         double *ty, double *tx, sl_err *err) {
    double rx = s->rx, ry = s->ry, shorter = s->shorter, longer = s->longer;
    double size[2] = {s->size[0], s->size[1]};
    double v[2];
    const int nodes[4] = {s->node_rx, s->node_ry, s->node_shorter, s->node_longer};
    double *dst[4] = {&rx, &ry, &shorter, &longer};
    static const char *const names[4] = {"resize_x", "resize_y", "resize_shorter", "resize_longer"};
    for (int k = 0; k < 4; k++) {
        if (nodes[k] < 0) continue;
        if (sl__argin_values(io, nodes[k], i, v, 2) != 1)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "%s: the per-sample value must be one number on the CPU", names[k]);
        *dst[k] = v[0];
    }
    if (s->node_size >= 0) {
        int n = sl__argin_values(io, s->node_size, i, v, 2);
        if (n != 1 && n != 2)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "size: the per-sample value must be (height, width) or one length, "
                               "on the CPU (got %d values)",
                               n);
        size[0] = v[0], size[1] = v[n - 1];
    }
    double check[6] = {rx, ry, shorter, longer, size[0], size[1]};
    for (int k = 0; k < 6; k++)
        if (!(check[k] >= 0 && check[k] <= 1e7)) /* (also NaN) */
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "an output size of %g: sizes are from 0 to 1e7", check[k]);
    *ty = *tx = 0;
    if (s->has_size)
        *ty = size[0], *tx = size[1];
    else if (rx > 0 || ry > 0)
        *ty = ry, *tx = rx;
    else if (shorter > 0)
        (h <= w ? (*ty = shorter) : (*tx = shorter));
    else if (longer > 0)
        (h >= w ? (*ty = longer) : (*tx = longer));
    if (!(*ty > 0) && !(*tx > 0))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name, "every output size asked is 0");
    return SL_OK;
}

/* The output size of an h x w window for targets (ty, tx), 0 = not given, under s->mode and
 * max_size: exact in f (h, w), rounded in o. */
static void out_size(const resize_state *s, double h, double w, double ty, double tx, double *f,
                     int64_t *o) {
    if (ty > 0 && tx > 0 && (s->mode == MODE_NOT_LARGER || s->mode == MODE_NOT_SMALLER)) {
        double sy = ty / h, sx = tx / w;
        double sc = s->mode == MODE_NOT_LARGER ? (sy < sx ? sy : sx) : (sy > sx ? sy : sx);
        f[0] = h * sc, f[1] = w * sc;
    } else if (ty > 0 && tx > 0) {
        f[0] = ty, f[1] = tx;
    } else if (s->mode == MODE_STRETCH) { /* the missing extent is kept */
        f[0] = ty > 0 ? ty : h, f[1] = tx > 0 ? tx : w;
    } else if (ty > 0) {
        f[0] = ty, f[1] = ty * w / h;
    } else {
        f[1] = tx, f[0] = tx * h / w;
    }
    const double in[2] = {h, w}, mx[2] = {s->max_size[0], s->max_size[s->nmax == 2 ? 1 : 0]};
    if (s->keep_aspect) { /* the one scale, lowered to keep every extent within its limit */
        double sc = f[0] / h;
        for (int d = 0; d < 2; d++)
            if (mx[d] > 0 && mx[d] / in[d] < sc) sc = mx[d] / in[d];
        f[0] = h * sc, f[1] = w * sc;
    } else {
        for (int d = 0; d < 2; d++)
            if (mx[d] > 0 && f[d] > mx[d]) f[d] = mx[d];
    }
    o[0] = rnd(f[0]), o[1] = rnd(f[1]);
}

/* subpixel_scale: the window r (y0, x0, h, w) scaled about its centre by the rounding of the
 * output size, so that the output's scale is the one asked for, as DALI does. */
static void subpixel_window(double *r, const double *f, const int64_t *o) {
    for (int d = 0; d < 2; d++) {
        if ((double)o[d] == f[d]) continue;
        double adj = (double)o[d] / f[d];
        adj = adj > 10 ? 10 : adj;
        double centre = r[d] + r[2 + d] * 0.5;
        r[2 + d] *= adj;
        r[d] = centre - r[2 + d] * 0.5;
    }
}

/* sample i's input window (y0, x0, h, w) in an H x W image */
static sl_status window(resize_state *s, const sl__op_io *io, int i, int64_t H, int64_t W,
                        double *r, sl_err *err) {
    if (s->random) {
        uint64_t seed = io->seed ? io->seed : s->seed;
        sl__crop_window w = sl__crop_window_draw(&s->win, seed, io->sample_base + i, H, W);
        r[0] = (double)w.y, r[1] = (double)w.x, r[2] = (double)w.h, r[3] = (double)w.w;
        return SL_OK;
    }
    double ext[2] = {(double)H, (double)W};
    for (int d = 0; d < 2; d++) {
        double a = s->roi_start[d], b = s->roi_end[d] < 0 ? ext[d] : s->roi_end[d];
        if (s->roi_rel) a *= ext[d], b *= ext[d];
        if (!(fabs(a) <= 1e7 && fabs(b) <= 1e7)) /* (also NaN) */
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "the window's %s runs from %g to %g: keep it within 1e7 pixels",
                               d ? "width" : "height", a, b);
        if (b == a)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "the window's %s runs from %g to %g: an empty window (roi_end "
                               "below roi_start flips the axis)",
                               d ? "width" : "height", a, b);
        r[d] = a, r[2 + d] = b - a;
    }
    return SL_OK;
}

/* The batch's geometry (s->hpos, s->clast). resize: HWC (or 3-d without a layout). As DALI's
 * random_resized_crop and resize_crop_mirror: HWC, CHW, FHWC, FCHW, CFHW (any layout with H, W
 * adjacent and C last or absent): every dim before H is a plane cut by the sample's one window. */
static sl_status geometry(resize_state *s, const sl__op_io *io, sl_err *err) {
    const sl_tlist *in = io->in[0];
    s->hpos = 0, s->clast = true;
    if (in->ndim == 3 && (!in->layout[0] || !strcmp(in->layout, "HWC"))) return SL_OK;
    const char *h = (s->random || s->rcm) && in->layout[0] ? strchr(in->layout, 'H') : NULL;
    if (h && h[1] == 'W' && (!h[2] || (h[2] == 'C' && !h[3])) && !strchr(h + 1, 'H') &&
        (int)strlen(in->layout) == in->ndim) {
        if (io->device.kind != SL_DEVICE_CPU)
            return sl_err_set(err, SL_EINVAL,
                              "%s: on the GPU the input must be HWC (\"%s\" runs on the CPU)",
                              s->name, in->layout);
        s->hpos = (int)(h - in->layout), s->clast = h[2] == 'C';
        return SL_OK;
    }
    return sl_err_set(err, SL_EINVAL, "%s: input must be HWC%s, not \"%s\" (%d dims)", s->name,
                      s->random || s->rcm ? ", CHW, FHWC, FCHW or CFHW" : "", in->layout, in->ndim);
}

/* sample i's planes, height, width and channels */
static void planes(const resize_state *s, const sl_tlist *in, int i, int64_t *P, int64_t *H,
                   int64_t *W, int64_t *C) {
    const int64_t *sh = sl_tlist_shape(in, i);
    *P = 1;
    for (int d = 0; d < s->hpos; d++) *P *= sh[d];
    *H = sh[s->hpos], *W = sh[s->hpos + 1], *C = s->clast ? sh[s->hpos + 2] : 1;
}

sl_status sl__resize_grow(resize_state *s, int batch, sl_err *err) {
    if (batch <= s->cap) return SL_OK;
    int64_t *n = realloc(s->out_hw, (size_t)batch * 2 * sizeof *n);
    if (n) s->out_hw = n;
    double *r = n ? realloc(s->roi, (size_t)batch * 4 * sizeof *r) : NULL;
    if (r) s->roi = r;
    int *f = r ? realloc(s->filters, (size_t)batch * 2 * sizeof *f) : NULL;
    if (f) s->filters = f;
    int64_t *vo = f ? realloc(s->vol_out, (size_t)batch * 3 * sizeof *vo) : NULL;
    if (vo) s->vol_out = vo;
    double *vr = vo ? realloc(s->vol_roi, (size_t)batch * 6 * sizeof *vr) : NULL;
    if (vr) s->vol_roi = vr;
    if (!vr) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
    s->cap = batch;
    return SL_OK;
}

/* resize's arguments that only a volume takes, refused for images */
static sl_status images_only(const resize_state *s, const sl_tlist *in, sl_err *err) {
    const char *what = s->rz > 0 || s->node_rz >= 0 ? "resize_z"
                       : s->nsize == 3              ? "size of 3 values"
                       : s->nroi == 3               ? "roi_start/roi_end of 3 values"
                       : s->nmax == 3               ? "max_size of 3 values"
                                                    : NULL;
    if (!what) return SL_OK;
    return sl_err_set(err, SL_EINVAL,
                      "%s: %s is for volumes (DHWC, CDHW), not images of layout \"%s\" (%d dims)",
                      s->name, what, in->layout, in->ndim);
}

sl_status sl__resize_setup(void *state, sl__op_io *io, sl_err *err) {
    resize_state *s = state;
    const sl_tlist *in = io->in[0];
    s->vol = !s->random && sl__resize_is_volume(in);
    if (s->vol && s->rcm)
        return sl_err_set(err, SL_EINVAL,
                          "%s: takes HWC images (sequences frame by frame), not "
                          "volumes of layout \"%s\"",
                          s->name, in->layout);
    if (s->vol) return sl__resize_volume_setup(s, io, err);
    if (!s->random) SL_TRY(images_only(s, in, err));
    SL_TRY(geometry(s, io, err));
    int nd = in->ndim;
    SL_TRY(sl__resize_grow(s, io->batch, err));
    int64_t *shapes = sl__malloc((size_t)io->batch * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        int64_t P, H, W, C;
        planes(s, in, i, &P, &H, &W, &C);
        double *r = s->roi + 4 * i;
        sl_status st = H < 1 || W < 1 ? sl__op_fail(err, SL_EINVAL, io, i, s->name, "empty image")
                       : s->want_c && s->clast && C != s->want_c
                           ? sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                         "image_type wants %d channel%s, the image has %lld",
                                         s->want_c, s->want_c == 1 ? "" : "s", (long long)C)
                           : window(s, io, i, H, W, r, err);
        if (st == SL_OK) st = sl__resize_sample_filters(s, io, i, err);
        if (st != SL_OK) {
            free(shapes);
            return st;
        }
        double ty = s->size[0], tx = s->size[1];
        if (!s->random) st = targets(s, io, i, fabs(r[2]), fabs(r[3]), &ty, &tx, err);
        if (st != SL_OK) {
            free(shapes);
            return st;
        }
        double exact[2];
        out_size(s, fabs(r[2]), fabs(r[3]), ty, tx, exact, &s->out_hw[2 * i]);
        if (s->subpixel) subpixel_window(r, exact, &s->out_hw[2 * i]);
        if (s->rcm && (st = sl__rcm_apply(s, io, i, &s->out_hw[2 * i], err)) != SL_OK) {
            free(shapes);
            return st;
        }
        int64_t *o = shapes + (size_t)i * (size_t)nd;
        memcpy(o, sh, (size_t)nd * sizeof *o);
        o[s->hpos] = s->out_hw[2 * i], o[s->hpos + 1] = s->out_hw[2 * i + 1];
    }
    sl_tlist *out = io->out[0];
    sl_status st =
        sl_tlist_reset(out, io->batch, s->has_dtype ? s->dtype : in->dtype, nd, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK)
        snprintf(out->layout, sizeof out->layout, "%s",
                 in->ndim == 3 && !s->hpos ? "HWC" : in->layout);
    free(shapes);
    return st;
}

/* Sample i's taps along dim d (0: y, 1: x) of an input of in pixels to out: its window's
 * resampling, or for resize_crop_mirror the crop's outputs of the whole image's resampling (in
 * reverse where mirrored), so that they are those of resize, then crop, then flip. */
static int taps_of(const resize_state *s, int i, int d, int64_t in, int64_t out, int64_t *first,
                   float *w, int max) {
    const double *r = s->roi + 4 * i;
    if (!s->rcm) return sl__resize_taps(s, i, in, r[d], r[2 + d], out, first, w, max);
    const int64_t *c = sl__rcm_sample(s->rcm, i); /* (n_y, n_x, at_y, at_x, flip_y, flip_x) */
    return sl__resize_taps_of(s, i, in, r[d], r[2 + d], c[d], c[2 + d], out, c[4 + d] != 0, first,
                              w, max);
}

static int max_taps_of(const resize_state *s, int i, int d, int64_t out) {
    const double *r = s->roi + 4 * i;
    return sl__resize_max_taps(r[2 + d], s->rcm ? sl__rcm_sample(s->rcm, i)[d] : out);
}

static size_t clampi(int64_t v, int64_t n) {
    return (size_t)(v < 0 ? 0 : v >= n ? n - 1 : v);
}

/* out: (out_h, out_w, C). Two separable passes, rows into a float scratch then columns; each
 * output sums its taps in order. The taps' clamped offsets are worked out once per image, and
 * uint8 (the decoders' output) is read and written directly. */
static sl_status resize_plane(resize_state *s, sl__op_io *io, int i, int worker, const void *src,
                              void *dst, int64_t H, int64_t W, int64_t C, sl_err *err) {
    const sl_tlist *in = io->in[0];
    int64_t OH = s->out_hw[2 * i], OW = s->out_hw[2 * i + 1];
    int tx_max = max_taps_of(s, i, 1, OW), ty_max = max_taps_of(s, i, 0, OH);
    size_t need = sizeof(float) * (size_t)((H + 1) * OW * C + OW * tx_max + OH * ty_max) +
                  sizeof(int64_t) * (size_t)(OW + OH + OW * tx_max);
    int64_t *fx = sl__worker_scratch_get(&s->scratch, worker, need);
    if (!fx) return sl__op_fail(err, SL_ENOMEM, io, i, s->name, "out of memory");
    int64_t *fy = fx + OW, *xoff = fy + OH;
    float *wx = (float *)(xoff + OW * tx_max), *wy = wx + OW * tx_max, *tmp = wy + OH * ty_max;
    int tx = taps_of(s, i, 1, W, OW, fx, wx, tx_max), ty = taps_of(s, i, 0, H, OH, fy, wy, ty_max);
    int64_t y0, rows = sl__resize_rows_read(fy, ty, OH, H, &y0);
    for (int64_t x = 0; x < OW; x++) /* taps outside the image are folded onto the edge */
        for (int k = 0; k < tx; k++) xoff[x * tx + k] = (int64_t)clampi(fx[x] + k, W) * C;
    sl_dtype it = in->dtype, ot = io->out[0]->dtype;
    for (int64_t y = y0; y < y0 + rows; y++) {
        float *t = tmp + y * OW * C;
        for (int64_t x = 0; x < OW; x++) {
            const int64_t *xo = xoff + x * tx;
            const float *w = wx + x * tx;
            if (it == SL_DTYPE_U8 && C == 3) { /* the three channels' sums side by side */
                const uint8_t *row = (const uint8_t *)src + y * W * C;
                float a0 = 0, a1 = 0, a2 = 0;
                for (int k = 0; k < tx; k++) {
                    const uint8_t *px = row + xo[k];
                    a0 += w[k] * (float)px[0];
                    a1 += w[k] * (float)px[1];
                    a2 += w[k] * (float)px[2];
                }
                t[x * 3] = a0, t[x * 3 + 1] = a1, t[x * 3 + 2] = a2;
                continue;
            }
            for (int64_t c = 0; c < C; c++) {
                float acc = 0;
                if (it == SL_DTYPE_U8) {
                    const uint8_t *row = (const uint8_t *)src + y * W * C + c;
                    for (int k = 0; k < tx; k++) acc += w[k] * (float)row[xo[k]];
                } else {
                    for (int k = 0; k < tx; k++)
                        acc += w[k] * (float)sl__dtype_conv_load(src, it, y * W * C + xo[k] + c);
                }
                t[x * C + c] = acc;
            }
        }
    }
    int64_t n = OW * C;
    float *acc = tmp + H * n; /* one output row's sums, tap by tap (each still in tap order) */
    for (int64_t y = 0; y < OH; y++) {
        const float *w = wy + y * ty;
        for (int64_t j = 0; j < n; j++) acc[j] = 0;
        for (int k = 0; k < ty; k++) {
            const float *row = tmp + (int64_t)clampi(fy[y] + k, H) * n;
            float wk = w[k];
            for (int64_t j = 0; j < n; j++) acc[j] += wk * row[j];
        }
        for (int64_t j = 0; j < n; j++) {
            if (ot == SL_DTYPE_U8)
                ((uint8_t *)dst)[y * n + j] = (uint8_t)sl__dtype_conv_sat(acc[j], 0, 255);
            else
                sl__dtype_conv_store(dst, ot, y * n + j, acc[j]);
        }
    }
    return SL_OK;
}

sl_status sl__resize_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    resize_state *s = state;
    if (s->vol) return sl__resize_volume_run(s, io, i, worker, err);
    const sl_tlist *in = io->in[0];
    int64_t P, H, W, C;
    planes(s, in, i, &P, &H, &W, &C);
    size_t ib = (size_t)(H * W * C) * sl_dtype_size(in->dtype);
    size_t ob =
        (size_t)(s->out_hw[2 * i] * s->out_hw[2 * i + 1] * C) * sl_dtype_size(io->out[0]->dtype);
    /* no channels: no bytes, and maybe no memory (NULL + 0 is undefined) */
    if (ib == 0 || ob == 0) return SL_OK;
    for (int64_t p = 0; p < P; p++) /* the planes (frames, channels) share the window */
        SL_TRY(resize_plane(s, io, i, worker, (const char *)in->data[i] + (size_t)p * ib,
                            (char *)io->out[0]->data[i] + (size_t)p * ob, H, W, C, err));
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* The whole batch: taps computed here as run_cpu does, sent with the descriptors in one copy;
 * then the two passes on the device (src/ops/resize.cu). */
sl_status sl__resize_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    resize_state *s = state;
    if (s->vol) return sl__resize_volume_run_gpu(s, io, err);
    const sl_tlist *in = io->in[0];
    int n = io->batch;
    size_t bytes = sl__gpu_args_align((size_t)n * sizeof(sl__cuda_resize_desc));
    int64_t tmp_total = 0, max_tmp = 0, max_out = 0;
    for (int i = 0; i < n; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        int64_t OH = s->out_hw[2 * i], OW = s->out_hw[2 * i + 1];
        bytes += sl__gpu_args_align((size_t)(OW + OH) * sizeof(int64_t));
        bytes += sl__gpu_args_align((size_t)OW * (size_t)max_taps_of(s, i, 1, OW) * sizeof(float));
        bytes += sl__gpu_args_align((size_t)OH * (size_t)max_taps_of(s, i, 0, OH) * sizeof(float));
        int64_t t = sh[0] * OW * sh[2], o = OH * OW * sh[2];
        tmp_total += t;
        if (o > max_out) max_out = o;
    }
    char *h = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!h) return err->status;
    sl__cuda_resize_desc *d = (sl__cuda_resize_desc *)h;
    size_t off = sl__gpu_args_align((size_t)n * sizeof *d);
    int64_t tmp = 0;
    for (int i = 0; i < n; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        int64_t H = sh[0], W = sh[1], C = sh[2], OH = s->out_hw[2 * i], OW = s->out_hw[2 * i + 1];
        int txm = max_taps_of(s, i, 1, OW), tym = max_taps_of(s, i, 0, OH);
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].h = H, d[i].w = W, d[i].c = C, d[i].oh = OH, d[i].ow = OW;
        d[i].fx = (int64_t)off, off += sl__gpu_args_align((size_t)OW * sizeof(int64_t));
        d[i].fy = (int64_t)off, off += sl__gpu_args_align((size_t)OH * sizeof(int64_t));
        d[i].wx = (int64_t)off, off += sl__gpu_args_align((size_t)OW * (size_t)txm * sizeof(float));
        d[i].wy = (int64_t)off, off += sl__gpu_args_align((size_t)OH * (size_t)tym * sizeof(float));
        d[i].tx = taps_of(s, i, 1, W, OW, (int64_t *)(h + d[i].fx), (float *)(h + d[i].wx), txm);
        d[i].ty = taps_of(s, i, 0, H, OH, (int64_t *)(h + d[i].fy), (float *)(h + d[i].wy), tym);
        d[i].rows = sl__resize_rows_read((const int64_t *)(h + d[i].fy), d[i].ty, OH, H, &d[i].y0);
        if (d[i].rows * OW * C > max_tmp) max_tmp = d[i].rows * OW * C;
        d[i].tmp = tmp;
        tmp += H * OW * C;
    }
    float *scratch = sl__gpu_scratch_get(&s->gpu_tmp, io->device.id,
                                         (size_t)tmp_total * sizeof(float), io->stream, err);
    if (!scratch) return err->status;
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, off, io->stream, &dd, err));
    return sl__cuda_resize(dd, dd, n, max_tmp, max_out, scratch, in->dtype, io->out[0]->dtype,
                           io->stream, err);
}
#endif

#ifdef SLUICE_HAVE_CUDA
#define RESIZE_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = sl__resize_run_gpu,
#else
#define RESIZE_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__random_resized_crop_op = {
    .name = "random_resized_crop",
    .doc = "Resamples a random area / aspect-ratio window of each image to `size` (DALI's "
           "fn.random_resized_crop); HWC, CHW and sequences (FHWC, FCHW, CFHW) share a window per "
           "sample.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = rrc_args,
    RESIZE_DEVICES.create = rrc_create,
    .setup = sl__resize_setup,
    .run_cpu = sl__resize_run_cpu,
    .destroy = sl__resize_destroy,
};

const sl__op_def sl__resize_op = {
    .name = "resize",
    .doc = "Resizes HWC images and DHWC / CDHW volumes (NN, linear, cubic, triangular, Gaussian, "
           "Lanczos3; antialiased when shrinking); sequences frame by frame.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = resize_args,
    .flags = SL_OPF_SEQUENCE,
    RESIZE_DEVICES.create = resize_create,
    .setup = sl__resize_setup,
    .run_cpu = sl__resize_run_cpu,
    .destroy = sl__resize_destroy,
};
