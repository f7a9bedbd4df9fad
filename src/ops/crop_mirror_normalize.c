/* SPDX-License-Identifier: Apache-2.0 */
/* crop_mirror_normalize: crop (with DALI's crop / crop_h / crop_w / crop_pos_x / crop_pos_y and
 * rounding), horizontal mirror (per sample), normalisation out = scale * (in - mean) / std + shift
 * (mean and std scalar or per channel, per op or per sample), conversion to FLOAT, FLOAT16, UINT8
 * or INT8 (rounded to nearest, saturated), layout HWC or CHW, channel padding to a power of two
 * (pad_output) and out-of-bounds windows (error, pad with fill_values, trim_to_shape), in one pass
 * per sample. setup makes every decision into an sl__cmn_sample (crop_mirror_normalize.h) that
 * run_cpu here and a CUDA run read alike. Input: (H, W, C) HWC or (C, H, W) CHW, uint8 or float.
 * sluice extensions: mirror_vertical (per sample) and crop_anchor (the window origin in pixels,
 * which may lie outside the image) so that DALI's own slice/flip test vectors can be reproduced. */
#include "ops/crop_mirror_normalize.h"

#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/half.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/crop_mirror_normalize.h"
#endif

/* The cropping arguments, shared by crop_mirror_normalize and crop so that their names, types
 * and defaults cannot drift apart: the window, then (after each op's own) the outside. */
// clang-format off
#define CROP_WINDOW_ARGS                                                                            \
    {"crop", SL_ARG_FLOATS, "None", "crop window (crop_h, crop_w); exclusive with crop_h/crop_w",  \
     0, NULL},                                                                                      \
    {"crop_h", SL_ARG_FLOAT, "0.0", "crop height (0 = whole height)", SL_ARGF_PER_SAMPLE, NULL},   \
    {"crop_w", SL_ARG_FLOAT, "0.0", "crop width (0 = whole width)", SL_ARGF_PER_SAMPLE, NULL},     \
    {"crop_d", SL_ARG_FLOAT, "0.0", "crop depth (volumes; unsupported unless 0)", 0, NULL},        \
    {"crop_pos_x", SL_ARG_FLOAT, "0.5", "normalised horizontal anchor in [0, 1]",                   \
     SL_ARGF_PER_SAMPLE, NULL},                                                                     \
    {"crop_pos_y", SL_ARG_FLOAT, "0.5", "normalised vertical anchor in [0, 1]",                     \
     SL_ARGF_PER_SAMPLE, NULL},                                                                     \
    {"crop_pos_z", SL_ARG_FLOAT, "0.5", "volumes; unused", 0, NULL}
#define CROP_OUTSIDE_ARGS                                                                           \
    {"fill_values", SL_ARG_FLOATS, "[0.0]",                                                         \
     "output value outside the image, scalar or per channel", 0, NULL},                             \
    {"out_of_bounds_policy", SL_ARG_ENUM, "\"error\"",                                              \
     "window outside the image: error, pad, trim_to_shape", 0, "error|pad|trim_to_shape"},          \
    {"rounding", SL_ARG_ENUM, "\"round\"", "anchor rounding: round or truncate", 0,                 \
     "round|truncate"},                                                                             \
    {"preserve", SL_ARG_BOOL, "False", "accepted (the op is never pruned here)", 0, NULL},          \
    {"bytes_per_sample_hint", SL_ARG_INTS, "[0]", "accepted, unused", 0, NULL}
// clang-format on

static const sl__arg_schema cmn_args[] = {
    CROP_WINDOW_ARGS,
    {"crop_anchor", SL_ARG_INTS, "None",
     "sluice: window origin (y, x) in pixels, may be negative; overrides crop_pos_x/y", 0, NULL},
    {"mirror", SL_ARG_INT, "0", "nonzero: flip horizontally", SL_ARGF_PER_SAMPLE, NULL},
    {"mirror_vertical", SL_ARG_INT, "0", "sluice: nonzero: flip vertically", SL_ARGF_PER_SAMPLE,
     NULL},
    {"mean", SL_ARG_FLOATS, "[0.0]", "mean, scalar or per channel", SL_ARGF_PER_SAMPLE, NULL},
    {"std", SL_ARG_FLOATS, "[1.0]", "standard deviation, scalar or per channel", SL_ARGF_PER_SAMPLE,
     NULL},
    {"scale", SL_ARG_FLOAT, "1.0", "multiplies the normalised value", 0, NULL},
    {"shift", SL_ARG_FLOAT, "0.0", "added after scaling", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type: FLOAT, FLOAT16, UINT8, INT8", 0, NULL},
    {"output_dtype", SL_ARG_DTYPE, "None", "DALI's older name of dtype (give one of the two)", 0,
     NULL},
    {"image_type", SL_ARG_ENUM, "None",
     "DALI's older argument: the input's colour type; its channel count (GRAY 1, RGB, BGR and "
     "YCbCr 3) is checked",
     0, "RGB|BGR|GRAY|YCbCr|ANY_DATA"},
    {"output_layout", SL_ARG_STR, "\"CHW\"", "HWC or CHW", 0, NULL},
    {"pad_output", SL_ARG_BOOL, "False", "pad channels to the next power of two with fill_values",
     0, NULL},
    CROP_OUTSIDE_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* crop: crop_mirror_normalize's cropping arguments alone, and the output type */
static const sl__arg_schema crop_args[] = {
    CROP_WINDOW_ARGS,
    {"dtype", SL_ARG_DTYPE, "None",
     "output type: FLOAT, FLOAT16, UINT8, INT8 (default: the input's)", 0, NULL},
    CROP_OUTSIDE_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { OOB_ERROR, OOB_PAD, OOB_TRIM };

typedef struct cmn_state {
    const char *name; /* "crop_mirror_normalize" or "crop" (the same op with fewer arguments) */
    bool auto_dtype, auto_layout; /* crop: the output takes the input's type / layout (setup) */
    double pos_x, pos_y, mirror, mirror_v;
    sl_dtype dtype;
    int out_chw, pad_output, oob, truncate;
    bool out_seq; /* output_layout FHWC / FCHW: the input must be a sequence */
    bool has_crop;
    double crop_h, crop_w;
    bool has_anchor;
    int64_t anchor[2];
    int n_mean, n_std, n_fill;
    int want_c; /* image_type's channel count (0: any) */
    double mean[SL__CMN_MAX_C], std[SL__CMN_MAX_C], fill[SL__CMN_MAX_C];
    double scale, shift;
    int node_mirror, node_mirror_v, node_px, node_py, node_mean, node_std, node_ch, node_cw;
    sl__cmn_sample *samples;
    int cap;
    sl__gpu_args gpu; /* the CUDA run's per-sample descriptors */
} cmn_state;

static const char *const NAME = "crop_mirror_normalize";

static void cmn_destroy(void *state) {
    cmn_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    free(s->samples);
    free(s);
}

static int copy_floats(const sl__args *a, const char *name, double *dst) {
    const double *v;
    int n = sl__args_floats(a, name, &v);
    for (int i = 0; i < n && i < SL__CMN_MAX_C; i++) dst[i] = v[i];
    return n;
}

/* The state from a's arguments; crop (the `crop` op): only the cropping ones are in its schema,
 * the rest is identity normalisation, no mirror, and the input's type and layout. */
static sl_status cmn_create_as(const sl__args *a, bool crop, void **out, sl_err *err) {
    cmn_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->name = crop ? "crop" : NAME;
    s->auto_dtype = crop && !sl__args_given(a, "dtype");
    s->auto_layout = crop;
    bool legacy_dtype = !crop && sl__args_given(a, "output_dtype");
    if (legacy_dtype && sl__args_given(a, "dtype"))
        st = sl_err_set(err, SL_EINVAL, "%s: give dtype or output_dtype (its older name), not both",
                        s->name);
    if (!crop && sl__args_given(a, "image_type")) {
        const char *t = sl__args_str(a, "image_type");
        s->want_c = !strcmp(t, "GRAY") ? 1 : !strcmp(t, "ANY_DATA") ? 0 : 3;
    }
    if (!s->auto_dtype && st == SL_OK) {
        s->dtype = sl__args_dtype(a, legacy_dtype ? "output_dtype" : "dtype");
        if (s->dtype != SL_DTYPE_F32 && s->dtype != SL_DTYPE_F16 && s->dtype != SL_DTYPE_U8 &&
            s->dtype != SL_DTYPE_I8)
            st = sl_err_set(err, SL_EINVAL, "%s: dtype %s is not FLOAT, FLOAT16, UINT8 or INT8",
                            s->name, sl_dtype_name(s->dtype));
    }
    if (!crop) {
        const char *lay = sl__args_str(a, "output_layout");
        /* a sequence's FHWC / FCHW: each frame's HWC / CHW (the frames run one by one) */
        s->out_seq = lay && lay[0] == 'F';
        const char *frame = s->out_seq ? lay + 1 : lay;
        if (frame && !strcmp(frame, "CHW"))
            s->out_chw = 1;
        else if (!frame || strcmp(frame, "HWC"))
            st = sl_err_set(err, SL_EINVAL,
                            "%s: output_layout \"%s\": HWC or CHW (FHWC or FCHW for sequences)",
                            NAME, lay ? lay : "");
        s->pad_output = sl__args_bool(a, "pad_output");
    }
    const char *oob = sl__args_str(a, "out_of_bounds_policy");
    s->oob = !strcmp(oob, "pad") ? OOB_PAD : !strcmp(oob, "trim_to_shape") ? OOB_TRIM : OOB_ERROR;
    s->truncate = !strcmp(sl__args_str(a, "rounding"), "truncate");
    const double *cr;
    int nc = sl__args_get(a, "crop")->kind == SL_VAL_NONE ? 0 : sl__args_floats(a, "crop", &cr);
    if (nc) {
        if (nc != 2)
            st = sl_err_set(err, SL_EINVAL, "%s: crop wants (crop_h, crop_w), got %d values",
                            s->name, nc);
        else if (sl__args_given(a, "crop_h") || sl__args_given(a, "crop_w"))
            st = sl_err_set(err, SL_EINVAL, "%s: crop and crop_h/crop_w are exclusive", s->name);
        else
            s->has_crop = true, s->crop_h = cr[0], s->crop_w = cr[1];
    } else {
        s->crop_h = sl__args_float(a, "crop_h");
        s->crop_w = sl__args_float(a, "crop_w");
        s->has_crop = true; /* 0 = whole extent */
    }
    if (st == SL_OK && !(s->crop_h >= 0 && s->crop_h <= 1e9 && s->crop_w >= 0 && s->crop_w <= 1e9))
        st = sl_err_set(err, SL_EINVAL, "%s: %s (%g, %g): crop sizes from 0 to 1e9", s->name,
                        nc ? "crop" : "crop_h/crop_w", s->crop_h, s->crop_w);
    if (sl__args_float(a, "crop_d") != 0)
        st = sl_err_set(err, SL_ENOTSUP, "%s: crop_d: volumes are not supported", s->name);
    if (!crop && sl__args_get(a, "crop_anchor")->kind != SL_VAL_NONE) {
        const int64_t *an;
        if (sl__args_ints(a, "crop_anchor", &an) != 2)
            st = sl_err_set(err, SL_EINVAL, "%s: crop_anchor wants (y, x)", NAME);
        else
            s->has_anchor = true, s->anchor[0] = an[0], s->anchor[1] = an[1];
    }
    s->n_fill = copy_floats(a, "fill_values", s->fill);
    s->node_px = sl__args_node(a, "crop_pos_x");
    s->node_py = sl__args_node(a, "crop_pos_y");
    s->node_ch = sl__args_node(a, "crop_h");
    s->node_cw = sl__args_node(a, "crop_w");
    s->pos_x = sl__args_float(a, "crop_pos_x");
    s->pos_y = sl__args_float(a, "crop_pos_y");
    if (crop) { /* out = in: mean 0, std 1, no mirror */
        s->n_mean = s->n_std = 1;
        s->mean[0] = 0, s->std[0] = 1, s->scale = 1, s->shift = 0;
        s->node_mirror = s->node_mirror_v = s->node_mean = s->node_std = -1;
    } else {
        s->n_mean = copy_floats(a, "mean", s->mean);
        s->n_std = copy_floats(a, "std", s->std);
        s->scale = sl__args_float(a, "scale");
        s->shift = sl__args_float(a, "shift");
        s->node_mirror = sl__args_node(a, "mirror");
        s->node_mirror_v = sl__args_node(a, "mirror_vertical");
        s->node_mean = sl__args_node(a, "mean");
        s->node_std = sl__args_node(a, "std");
        s->mirror = (double)sl__args_int(a, "mirror");
        s->mirror_v = (double)sl__args_int(a, "mirror_vertical");
    }
    if (s->n_mean > SL__CMN_MAX_C || s->n_std > SL__CMN_MAX_C || s->n_fill > SL__CMN_MAX_C)
        st = sl_err_set(err, SL_EINVAL, "%s: at most %d channels", s->name, SL__CMN_MAX_C);
    if (st != SL_OK) {
        cmn_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status cmn_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return cmn_create_as(a, false, out, err);
}

static sl_status crop_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return cmn_create_as(a, true, out, err);
}

static double per_sample(const sl__op_io *io, int node, int i, double dflt) {
    double v;
    return node >= 0 && sl__argin_values(io, node, i, &v, 1) >= 1 ? v : dflt;
}

/* One extent: window [anchor, anchor + ext) of an input of length n. */
static void window(const cmn_state *s, int64_t n, double crop, double pos, bool has_anchor,
                   int64_t anchor, int64_t *a, int64_t *len) {
    int64_t ext = crop > 0 ? (int64_t)llround(crop) : n;
    if (ext < 1) ext = 1;
    if (has_anchor) {
        *a = anchor;
    } else {
        double v = pos * (double)(n - ext);
        *a = s->truncate ? (int64_t)trunc(v) : (int64_t)llroundf((float)v);
    }
    *len = ext;
}

static sl_status cmn_setup(void *state, sl__op_io *io, sl_err *err) {
    cmn_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 3)
        return sl_err_set(err, SL_EINVAL, "%s: input must be 3-D (HWC or CHW), got %d dims",
                          s->name, in->ndim);
    if (in->dtype != SL_DTYPE_U8 && in->dtype != SL_DTYPE_F32 && in->dtype != SL_DTYPE_F16 &&
        in->dtype != SL_DTYPE_I8)
        return sl_err_set(err, SL_EINVAL, "%s: input dtype %s not supported", s->name,
                          sl_dtype_name(in->dtype));
    if (in->layout[0] && strcmp(in->layout, "HWC") && strcmp(in->layout, "CHW"))
        return sl_err_set(err, SL_EINVAL,
                          "%s: The layout \"%s%s\" does not match any of the allowed layouts "
                          "(HWC, CHW, FHWC, FCHW)",
                          s->name, io->seq_frames ? "F" : "", in->layout);
    if (s->out_seq && !io->seq_frames)
        return sl_err_set(err, SL_EINVAL,
                          "%s: output_layout F%s is for sequences (FHWC or FCHW input); the input "
                          "is \"%s\"",
                          s->name, s->out_chw ? "CHW" : "HWC", in->layout);
    int in_chw = !strcmp(in->layout, "CHW");
    if (s->auto_dtype) s->dtype = in->dtype; /* crop: each batch's input type (always the same) */
    if (s->auto_layout) s->out_chw = in_chw;
    if (io->batch > s->cap) {
        sl__cmn_sample *ns = realloc(s->samples, (size_t)io->batch * sizeof *ns);
        if (!ns) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->samples = ns;
        s->cap = io->batch;
    }
    int64_t *shapes = sl__malloc((size_t)io->batch * 3 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        sl__cmn_sample *p = &s->samples[i];
        memset(p, 0, sizeof *p);
        const int64_t *sh = sl_tlist_shape(in, i);
        p->in_chw = in_chw;
        p->in_c = in_chw ? sh[0] : sh[2];
        p->in_h = in_chw ? sh[1] : sh[0];
        p->in_w = in_chw ? sh[2] : sh[1];
        p->out_chw = s->out_chw;
        if (s->want_c && p->in_c != s->want_c) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "image_type wants %d channel%s, the image has %lld", s->want_c,
                             s->want_c == 1 ? "" : "s", (long long)p->in_c);
            break;
        }
        if (p->in_c > SL__CMN_MAX_C) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name, "%lld channels (at most %d)",
                             (long long)p->in_c, SL__CMN_MAX_C);
            break;
        }
        double ch = per_sample(io, s->node_ch, i, s->crop_h);
        double cw = per_sample(io, s->node_cw, i, s->crop_w);
        double px = per_sample(io, s->node_px, i, s->pos_x);
        double py = per_sample(io, s->node_py, i, s->pos_y);
        if (!(ch >= 0 && ch <= 1e9 && cw >= 0 && cw <= 1e9)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "crop_h/crop_w (%g, %g): crop sizes from 0 to 1e9", ch, cw);
            break;
        }
        if (!s->has_anchor && (px < 0 || px > 1 || py < 0 || py > 1)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name, "crop_pos (%g, %g) outside [0, 1]", px,
                             py);
            break;
        }
        window(s, p->in_h, ch, py, s->has_anchor, s->anchor[0], &p->anchor_y, &p->out_h);
        window(s, p->in_w, cw, px, s->has_anchor, s->anchor[1], &p->anchor_x, &p->out_w);
        bool oob = p->anchor_y < 0 || p->anchor_x < 0 || p->anchor_y + p->out_h > p->in_h ||
                   p->anchor_x + p->out_w > p->in_w;
        if (oob && s->oob == OOB_ERROR) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "Slice can't be placed out of bounds with current policy. Got: "
                             "window (%lld, %lld) + (%lld, %lld) is outside the %lldx%lld input "
                             "(out_of_bounds_policy=\"error\")",
                             (long long)p->anchor_y, (long long)p->anchor_x, (long long)p->out_h,
                             (long long)p->out_w, (long long)p->in_h, (long long)p->in_w);
            break;
        }
        if (oob && s->oob == OOB_TRIM) {
            int64_t y0 = p->anchor_y < 0 ? 0 : p->anchor_y, x0 = p->anchor_x < 0 ? 0 : p->anchor_x;
            int64_t y1 = p->anchor_y + p->out_h, x1 = p->anchor_x + p->out_w;
            if (y1 > p->in_h) y1 = p->in_h;
            if (x1 > p->in_w) x1 = p->in_w;
            p->anchor_y = y0, p->anchor_x = x0;
            p->out_h = y1 > y0 ? y1 - y0 : 0, p->out_w = x1 > x0 ? x1 - x0 : 0;
        }
        p->mirror_x = per_sample(io, s->node_mirror, i, s->mirror) != 0;
        p->mirror_y = per_sample(io, s->node_mirror_v, i, s->mirror_v) != 0;
        p->out_c = p->in_c;
        if (s->pad_output) {
            int64_t c = 1;
            while (c < p->in_c) c *= 2;
            p->out_c = c;
        }
        double mean[SL__CMN_MAX_C], sd[SL__CMN_MAX_C];
        int nm = s->n_mean, ns = s->n_std;
        memcpy(mean, s->mean, sizeof mean);
        memcpy(sd, s->std, sizeof sd);
        if (s->node_mean >= 0) nm = sl__argin_values(io, s->node_mean, i, mean, SL__CMN_MAX_C);
        if (s->node_std >= 0) ns = sl__argin_values(io, s->node_std, i, sd, SL__CMN_MAX_C);
        if ((nm != 1 && nm != p->in_c) || (ns != 1 && ns != p->in_c)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "mean has %d and std %d values for %lld channels", nm, ns,
                             (long long)p->in_c);
            break;
        }
        if (s->n_fill != 1 && s->n_fill < p->in_c) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "fill_values has %d values for %lld channels", s->n_fill,
                             (long long)p->in_c);
            break;
        }
        for (int64_t c = 0; c < p->out_c; c++) {
            /* one value for all; else per channel, padded channels past the list 0 (DALI's) */
            p->fill[c] = s->n_fill == 1 ? (float)s->fill[0] : c < s->n_fill ? (float)s->fill[c] : 0;
            if (c >= p->in_c) continue; /* padded channels always hold fill */
            double m = mean[nm == 1 ? 0 : c], d = sd[ns == 1 ? 0 : c];
            if (d == 0) {
                st = sl__op_fail(err, SL_EINVAL, io, i, s->name, "std is 0 for channel %lld",
                                 (long long)c);
                break;
            }
            p->mean[c] = (float)(m - s->shift * d / s->scale);
            p->inv_std[c] = (float)(s->scale / d);
        }
        int64_t *o = shapes + (size_t)i * 3;
        if (s->out_chw)
            o[0] = p->out_c, o[1] = p->out_h, o[2] = p->out_w;
        else
            o[0] = p->out_h, o[1] = p->out_w, o[2] = p->out_c;
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, s->dtype, 3, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK) memcpy(out->layout, s->out_chw ? "CHW" : "HWC", 4);
    free(shapes);
    return st;
}

static inline float load(const void *p, sl_dtype t, int64_t k) {
    switch (t) {
    case SL_DTYPE_U8:
        return ((const uint8_t *)p)[k];
    case SL_DTYPE_I8:
        return ((const int8_t *)p)[k];
    case SL_DTYPE_F16:
        return sl__f16_to_f32(((const uint16_t *)p)[k]);
    default:
        return ((const float *)p)[k];
    }
}

static inline void store(void *p, sl_dtype t, int64_t k, float v) {
    switch (t) {
    case SL_DTYPE_F32:
        ((float *)p)[k] = v;
        break;
    case SL_DTYPE_F16:
        ((uint16_t *)p)[k] = sl__f32_to_f16(v);
        break;
    case SL_DTYPE_U8:
        ((uint8_t *)p)[k] = v != v ? 0 : v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)lrintf(v);
        break;
    default:
        ((int8_t *)p)[k] = v != v ? 0 : v <= -128 ? -128 : v >= 127 ? 127 : (int8_t)lrintf(v);
        break;
    }
}

/* Where output pixel (y, x) of sample p reads: its offset in the input (row stride ys, pixel
 * stride xs), or -1 when it falls outside the image (the fill values). */
static inline int64_t source_at(const sl__cmn_sample *p, int64_t y, int64_t x, int64_t ys,
                                int64_t xs) {
    int64_t sy = p->anchor_y + (p->mirror_y ? p->out_h - 1 - y : y);
    int64_t sx = p->anchor_x + (p->mirror_x ? p->out_w - 1 - x : x);
    return sy >= 0 && sy < p->in_h && sx >= 0 && sx < p->in_w ? sy * ys + sx * xs : -1;
}

/* out: (out_h, out_w, out_c) HWC or (out_c, out_h, out_w) CHW, one pass */
static sl_status cmn_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    cmn_state *s = state;
    const sl__cmn_sample *p = &s->samples[i];
    const void *src = io->in[0]->data[i];
    sl_dtype it = io->in[0]->dtype, ot = s->dtype;
    void *dst = io->out[0]->data[i];
    int64_t H = p->out_h, W = p->out_w, C = p->out_c, IC = p->in_c;
    int64_t ys = p->in_chw ? p->in_w : p->in_w * IC, xs = p->in_chw ? 1 : IC,
            cs = p->in_chw ? p->in_h * p->in_w : 1;
    int64_t oys = p->out_chw ? W : W * C, oxs = p->out_chw ? 1 : C, ocs = p->out_chw ? H * W : 1;
    bool direct = it == SL_DTYPE_U8 && !p->in_chw && IC == C;
    if (direct && ot == SL_DTYPE_F32 && H * W <= 1024) {
        /* small uint8 HWC windows (MNIST's) -> float: no dtype switch in the loop */
        const uint8_t *in8 = src;
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                int64_t at = source_at(p, y, x, ys, xs);
                float *o = (float *)dst + y * oys + x * oxs;
                if (at >= 0) {
                    for (int64_t c = 0; c < C; c++)
                        o[c * ocs] = ((float)in8[at + c] - p->mean[c]) * p->inv_std[c];
                } else {
                    for (int64_t c = 0; c < C; c++) o[c * ocs] = p->fill[c];
                }
            }
        return SL_OK;
    }
    if (direct && (ot == SL_DTYPE_F32 || ot == SL_DTYPE_F16) && C <= 4) {
        /* larger uint8 HWC windows -> float or float16: a uint8 channel has 256 values, so each
         * channel's outputs are worked out once per sample and the loop only looks them up (the
         * same values as the generic loop below) */
        const uint8_t *in8 = src;
        bool half = ot == SL_DTYPE_F16;
        float f[4][256];
        uint16_t h[4][256], fill16[4];
        for (int64_t c = 0; c < C; c++) {
            for (int v = 0; v < 256; v++) {
                f[c][v] = ((float)v - p->mean[c]) * p->inv_std[c];
                if (half) h[c][v] = sl__f32_to_f16(f[c][v]);
            }
            if (half) fill16[c] = sl__f32_to_f16(p->fill[c]);
        }
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                int64_t at = source_at(p, y, x, ys, xs), o = y * oys + x * oxs;
                const uint8_t *px = in8 + (at >= 0 ? at : 0);
                if (half) {
                    uint16_t *o16 = (uint16_t *)dst + o;
                    for (int64_t c = 0; c < C; c++)
                        o16[c * ocs] = at >= 0 ? h[c][px[c]] : fill16[c];
                } else {
                    float *of = (float *)dst + o;
                    for (int64_t c = 0; c < C; c++)
                        of[c * ocs] = at >= 0 ? f[c][px[c]] : p->fill[c];
                }
            }
        return SL_OK;
    }
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++) {
            int64_t at = source_at(p, y, x, ys, xs), o = y * oys + x * oxs;
            for (int64_t c = 0; c < C; c++) {
                float v = at >= 0 && c < IC
                              ? (load(src, it, at + c * cs) - p->mean[c]) * p->inv_std[c]
                              : p->fill[c];
                store(dst, ot, o + c * ocs, v);
            }
        }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* The whole batch on io->stream: descriptors in one copy, one kernel (crop_mirror_normalize.cu). */
static sl_status cmn_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    cmn_state *s = state;
    sl__cuda_cmn_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t maxpix = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].p = s->samples[i];
        d[i].in = io->in[0]->data[i];
        d[i].out = io->out[0]->data[i];
        int64_t px = s->samples[i].out_h * s->samples[i].out_w;
        if (px > maxpix) maxpix = px;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_cmn(dd, io->batch, maxpix, io->in[0]->dtype, s->dtype, io->stream, err);
}
#endif

const sl__op_def sl__crop_mirror_normalize_op = {
    .name = "crop_mirror_normalize",
    .doc = "Crops, mirrors, normalises and converts images in one pass; HWC or CHW out.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = cmn_args,
    .flags = SL_OPF_SEQUENCE, /* FHWC / FCHW: frame by frame, one window per sequence */
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, /* both runs read the same sl__cmn_sample */
    .run_gpu = cmn_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = cmn_create,
    .setup = cmn_setup,
    .run_cpu = cmn_run_cpu,
    .destroy = cmn_destroy,
};

const sl__op_def sl__crop_op = {
    .name = "crop",
    .doc = "Cuts a window out of images (HWC or CHW), as DALI's fn.crop: crop_mirror_normalize "
           "without the normalisation, keeping the input's type and layout.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = crop_args,
    .flags = SL_OPF_SEQUENCE,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, /* crop_mirror_normalize's runs, state and all */
    .run_gpu = cmn_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = crop_create,
    .setup = cmn_setup,
    .run_cpu = cmn_run_cpu,
    .destroy = cmn_destroy,
};
