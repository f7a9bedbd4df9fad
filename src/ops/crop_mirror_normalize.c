/* SPDX-License-Identifier: Apache-2.0 */
/* crop_mirror_normalize: crop (with DALI's crop / crop_d / crop_h / crop_w / crop_pos_x / _y / _z
 * and rounding), horizontal mirror (per sample), normalisation out = scale * (in - mean) / std +
 * shift (mean and std scalar or per channel, per op or per sample), conversion to FLOAT, FLOAT16,
 * UINT8 or INT8 (rounded to nearest, saturated), output_layout any order of the input's axes
 * (HWC or CHW, DHWC or CDHW, F first for sequences), channel padding to a power of two
 * (pad_output) and out-of-bounds windows (error, pad with fill_values, trim_to_shape), in one pass
 * per sample. setup makes every decision into an sl__cmn_sample (crop_mirror_normalize.h) that
 * run_cpu here and a CUDA run read alike. Input: images, volumes and sequences of either in
 * DALI's layouts (HWC, CHW, DHWC, CDHW, FHWC, FCHW, CFHW, FDHWC, FCDHW, CFDHW; without a layout
 * a 3-D input is HWC), uint8, int8, float16 or float; a sequence's frames keep their count and
 * share one window, unless crop_d is given and it has no D: then its frames are the depth that
 * crop_d and crop_pos_z crop, as DALI does.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/crop_mirror_normalize.h"
#endif

/* The cropping arguments, shared by crop_mirror_normalize and crop so that their names, types
 * and defaults cannot drift apart: the window, then (after each op's own) the outside. */
// clang-format off
#define CROP_WINDOW_ARGS                                                                            \
    {"crop", SL_ARG_FLOATS, "None",                                                                 \
     "crop window (crop_h, crop_w) or (crop_d, crop_h, crop_w); exclusive with crop_h/w/d", 0,      \
     NULL},                                                                                         \
    {"crop_h", SL_ARG_FLOAT, "0.0", "crop height (0 = whole height)", SL_ARGF_PER_SAMPLE, NULL},   \
    {"crop_w", SL_ARG_FLOAT, "0.0", "crop width (0 = whole width)", SL_ARGF_PER_SAMPLE, NULL},     \
    {"crop_d", SL_ARG_FLOAT, "0.0",                                                                 \
     "crop depth (volumes; a sequence without D: its frames; 0 = whole depth)",                     \
     SL_ARGF_PER_SAMPLE, NULL},                                                                     \
    {"crop_pos_x", SL_ARG_FLOAT, "0.5", "normalised horizontal anchor in [0, 1]",                   \
     SL_ARGF_PER_SAMPLE, NULL},                                                                     \
    {"crop_pos_y", SL_ARG_FLOAT, "0.5", "normalised vertical anchor in [0, 1]",                     \
     SL_ARGF_PER_SAMPLE, NULL},                                                                     \
    {"crop_pos_z", SL_ARG_FLOAT, "0.5", "normalised depth anchor in [0, 1] (with crop_d)",          \
     SL_ARGF_PER_SAMPLE, NULL}
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
    {"output_layout", SL_ARG_STR, "\"CHW\"",
     "channels last or first: HWC or CHW; DHWC or CDHW for volumes; F first for sequences (HWC "
     "and CHW give it)",
     0, NULL},
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
    double pos_x, pos_y, pos_z, mirror, mirror_v;
    sl_dtype dtype;
    int pad_output, oob, truncate;
    char out_layout[8]; /* output_layout (crop: "", the input's) */
    bool has_crop, has_crop_d;
    double crop_h, crop_w, crop_d;
    bool has_anchor;
    int64_t anchor[2];
    int n_mean, n_std, n_fill;
    int want_c; /* image_type's channel count (0: any) */
    double mean[SL__CMN_MAX_C], std[SL__CMN_MAX_C], fill[SL__CMN_MAX_C];
    double scale, shift;
    int node_mirror, node_mirror_v, node_px, node_py, node_pz, node_mean, node_std, node_ch,
        node_cw, node_cd;
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
        /* the letters of an image, a volume or a sequence of either, channels first or last
         * (which of them the input has, setup checks) */
        const char *lay = sl__args_str(a, "output_layout");
        size_t n = lay ? strlen(lay) : 0;
        bool ok = n >= 3 && n <= 5 && strchr(lay, 'H') && strchr(lay, 'W') && strchr(lay, 'C');
        for (size_t k = 0; ok && k < n; k++)
            ok = strchr("FDHWC", lay[k]) && !strchr(lay + k + 1, lay[k]);
        if (ok)
            memcpy(s->out_layout, lay, n + 1);
        else
            st = sl_err_set(err, SL_EINVAL,
                            "%s: output_layout \"%s\": HWC or CHW, DHWC or CDHW for volumes (F "
                            "first for sequences)",
                            NAME, lay ? lay : "");
        s->pad_output = sl__args_bool(a, "pad_output");
    }
    const char *oob = sl__args_str(a, "out_of_bounds_policy");
    s->oob = !strcmp(oob, "pad") ? OOB_PAD : !strcmp(oob, "trim_to_shape") ? OOB_TRIM : OOB_ERROR;
    s->truncate = !strcmp(sl__args_str(a, "rounding"), "truncate");
    const double *cr;
    int nc = sl__args_get(a, "crop")->kind == SL_VAL_NONE ? 0 : sl__args_floats(a, "crop", &cr);
    bool given_d = sl__args_given(a, "crop_d");
    if (nc) {
        if (nc != 2 && nc != 3)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: crop wants (crop_h, crop_w) or (crop_d, crop_h, crop_w), got %d "
                            "values: `crop` argument should have 2 or 3 elements depending on the "
                            "input data shape",
                            s->name, nc);
        else if (sl__args_given(a, "crop_h") || sl__args_given(a, "crop_w") || given_d)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: crop and crop_h/crop_w/crop_d are exclusive: `crop` argument is "
                            "not compatible with `crop_h`, `crop_w`, `crop_d`",
                            s->name);
        else
            s->has_crop = true, s->crop_h = cr[nc - 2], s->crop_w = cr[nc - 1];
        s->has_crop_d = nc == 3;
        s->crop_d = nc == 3 ? cr[0] : 0;
    } else {
        s->crop_h = sl__args_float(a, "crop_h");
        s->crop_w = sl__args_float(a, "crop_w");
        s->crop_d = sl__args_float(a, "crop_d");
        s->has_crop = true; /* 0 = whole extent */
        s->has_crop_d = given_d;
        if (given_d && !(sl__args_given(a, "crop_h") && sl__args_given(a, "crop_w")))
            st = sl_err_set(err, SL_EINVAL,
                            "%s: crop_d without crop_h and crop_w: `crop_d` argument must be "
                            "provided together with `crop_w` and `crop_h`",
                            s->name);
    }
    if (st == SL_OK && !(s->crop_h >= 0 && s->crop_h <= 1e9 && s->crop_w >= 0 && s->crop_w <= 1e9 &&
                         s->crop_d >= 0 && s->crop_d <= 1e9))
        st = sl_err_set(err, SL_EINVAL, "%s: %s (%g, %g, %g): crop sizes from 0 to 1e9", s->name,
                        nc ? "crop" : "crop_d/crop_h/crop_w", s->crop_d, s->crop_h, s->crop_w);
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
    s->node_cd = sl__args_node(a, "crop_d");
    s->node_pz = sl__args_node(a, "crop_pos_z");
    s->pos_x = sl__args_float(a, "crop_pos_x");
    s->pos_y = sl__args_float(a, "crop_pos_y");
    s->pos_z = sl__args_float(a, "crop_pos_z");
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

/* Sample i's mean, inv_std and fill per output channel into p (p's channels set). */
static sl_status normalisation(const cmn_state *s, const sl__op_io *io, int i, sl__cmn_sample *p,
                               sl_err *err) {
    double mean[SL__CMN_MAX_C], sd[SL__CMN_MAX_C];
    int nm = s->n_mean, ns = s->n_std;
    memcpy(mean, s->mean, sizeof mean);
    memcpy(sd, s->std, sizeof sd);
    if (s->node_mean >= 0) nm = sl__argin_values(io, s->node_mean, i, mean, SL__CMN_MAX_C);
    if (s->node_std >= 0) ns = sl__argin_values(io, s->node_std, i, sd, SL__CMN_MAX_C);
    if ((nm != 1 && nm != p->in_c) || (ns != 1 && ns != p->in_c))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "mean has %d and std %d values for %lld channels", nm, ns,
                           (long long)p->in_c);
    if (s->n_fill != 1 && s->n_fill < p->in_c)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "fill_values has %d values for %lld channels", s->n_fill,
                           (long long)p->in_c);
    for (int64_t c = 0; c < p->out_c; c++) {
        /* one value for all; else per channel, padded channels past the list 0 (DALI's) */
        p->fill[c] = s->n_fill == 1 ? (float)s->fill[0] : c < s->n_fill ? (float)s->fill[c] : 0;
        if (c >= p->in_c) continue; /* padded channels always hold fill */
        double m = mean[nm == 1 ? 0 : c], d = sd[ns == 1 ? 0 : c];
        if (d == 0)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name, "std is 0 for channel %lld",
                               (long long)c);
        p->mean[c] = (float)(m - s->shift * d / s->scale);
        p->inv_std[c] = (float)(s->scale / d);
    }
    return SL_OK;
}

enum { LAYBUF = SL_MAX_DIMS + 8 }; /* a layout and room to spare */

/* The input layouts DALI's crop_mirror_normalize takes (an empty one: HWC) */
static const char *const IN_LAYOUTS[] = {"HWC",  "CHW",  "DHWC",  "CDHW",  "FHWC",
                                         "FCHW", "CFHW", "FDHWC", "FCDHW", "CFDHW"};

/* The batch's layouts: the input's (*lay; an empty one of 3 dims is HWC) and the output's
 * (*olay: output_layout, F put first for a sequence given an image's layout, as the frames'
 * layout; crop: the input's). */
static sl_status layouts(const cmn_state *s, const sl_tlist *in, char *lay, char *olay,
                         sl_err *err) {
    snprintf(lay, LAYBUF, "%s", in->layout[0] || in->ndim != 3 ? in->layout : "HWC");
    bool known = false;
    for (size_t k = 0; k < sizeof IN_LAYOUTS / sizeof *IN_LAYOUTS; k++)
        known |= !strcmp(lay, IN_LAYOUTS[k]) && (int)strlen(lay) == in->ndim;
    if (!known)
        return sl_err_set(err, SL_EINVAL,
                          "%s: The layout \"%s\" does not match any of the allowed layouts (HWC, "
                          "CHW, DHWC, CDHW, FHWC, FCHW, CFHW, FDHWC, FCDHW, CFDHW)%s",
                          s->name, in->layout,
                          in->layout[0] ? "" : " (an input without a layout must be 3-D: HWC)");
    if (s->auto_layout) {
        memcpy(olay, lay, LAYBUF);
        return SL_OK;
    }
    bool seq = strchr(lay, 'F') != NULL;
    if (strchr(s->out_layout, 'F') && !seq)
        return sl_err_set(err, SL_EINVAL,
                          "%s: output_layout %s is for sequences (an F in the input's layout); "
                          "the input is \"%s\"",
                          s->name, s->out_layout, lay);
    snprintf(olay, LAYBUF, "%s%s", seq && !strchr(s->out_layout, 'F') ? "F" : "", s->out_layout);
    bool perm = strlen(olay) == strlen(lay);
    for (size_t k = 0; perm && olay[k]; k++) perm = strchr(lay, olay[k]) != NULL;
    if (!perm)
        return sl_err_set(err, SL_EINVAL,
                          "%s: output_layout \"%s\" for a \"%s\" input (%s): The requested "
                          "output layout is not a permutation of input layout.",
                          s->name, s->out_layout, lay,
                          strchr(lay, 'D') ? "volumes: DHWC or CDHW" : "images: HWC or CHW");
    return SL_OK;
}

/* slots of a sample's axes: frames, depth, height, width, channels */
enum { SF, SD, SH, SW, SC, NSLOT };

/* Sample i's window and its normalisation into p, its output shape into o (olay's order). */
static sl_status sample_setup(cmn_state *s, const sl__op_io *io, int i, const char *lay,
                              const char *olay, sl__cmn_sample *p, int64_t *o, sl_err *err) {
    const int64_t *sh = sl_tlist_shape(io->in[0], i);
    double cd = per_sample(io, s->node_cd, i, s->crop_d);
    /* crop_d on a sequence without D: its frames are the depth (DALI's rule) */
    bool f_depth = s->has_crop_d && cd > 0 && !strchr(lay, 'D') && strchr(lay, 'F');
    int64_t ext[NSLOT] = {1, 1, 1, 1, 1}, str[NSLOT] = {0, 0, 0, 0, 0}, stride = 1;
    int slot_of[128] = {0};
    slot_of['F'] = f_depth ? SD : SF, slot_of['D'] = SD, slot_of['H'] = SH, slot_of['W'] = SW;
    slot_of['C'] = SC;
    for (int k = (int)strlen(lay) - 1; k >= 0; k--) {
        int sl = slot_of[(unsigned char)lay[k]];
        ext[sl] = sh[k], str[sl] = stride;
        stride *= sh[k];
    }
    p->in_f = ext[SF], p->in_d = ext[SD], p->in_h = ext[SH], p->in_w = ext[SW];
    p->in_c = ext[SC];
    p->is_f = str[SF], p->is_d = str[SD], p->is_h = str[SH], p->is_w = str[SW];
    p->is_c = str[SC];
    if (s->want_c && p->in_c != s->want_c)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "image_type wants %d channel%s, the image has %lld", s->want_c,
                           s->want_c == 1 ? "" : "s", (long long)p->in_c);
    if (p->in_c > SL__CMN_MAX_C)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name, "%lld channels (at most %d)",
                           (long long)p->in_c, SL__CMN_MAX_C);
    double ch = per_sample(io, s->node_ch, i, s->crop_h);
    double cw = per_sample(io, s->node_cw, i, s->crop_w);
    double px = per_sample(io, s->node_px, i, s->pos_x);
    double py = per_sample(io, s->node_py, i, s->pos_y);
    double pz = per_sample(io, s->node_pz, i, s->pos_z);
    /* the window has a depth only where the input has one (D, or F as depth) */
    double zc = strchr(lay, 'D') || f_depth ? cd : 0;
    if (!(ch >= 0 && ch <= 1e9 && cw >= 0 && cw <= 1e9 && cd >= 0 && cd <= 1e9))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "crop_d/crop_h/crop_w (%g, %g, %g): crop sizes from 0 to 1e9", cd, ch,
                           cw);
    if (!s->has_anchor && (px < 0 || px > 1 || py < 0 || py > 1 || (zc > 0 && (pz < 0 || pz > 1))))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name, "crop_pos (%g, %g, %g) outside [0, 1]",
                           px, py, pz);
    window(s, p->in_d, zc, pz, false, 0, &p->anchor_z, &p->out_d);
    window(s, p->in_h, ch, py, s->has_anchor, s->anchor[0], &p->anchor_y, &p->out_h);
    window(s, p->in_w, cw, px, s->has_anchor, s->anchor[1], &p->anchor_x, &p->out_w);
    int64_t lo[3] = {p->anchor_z, p->anchor_y, p->anchor_x};
    int64_t len[3] = {p->out_d, p->out_h, p->out_w}, n[3] = {p->in_d, p->in_h, p->in_w};
    bool oob = false;
    for (int a = 0; a < 3; a++) oob |= lo[a] < 0 || lo[a] + len[a] > n[a];
    if (oob && s->oob == OOB_ERROR) {
        char win[160];
        if (strchr(lay, 'D') || f_depth)
            snprintf(win, sizeof win,
                     "(%lld, %lld, %lld) + (%lld, %lld, %lld) is outside the "
                     "%lldx%lldx%lld input",
                     (long long)lo[0], (long long)lo[1], (long long)lo[2], (long long)len[0],
                     (long long)len[1], (long long)len[2], (long long)n[0], (long long)n[1],
                     (long long)n[2]);
        else
            snprintf(win, sizeof win, "(%lld, %lld) + (%lld, %lld) is outside the %lldx%lld input",
                     (long long)lo[1], (long long)lo[2], (long long)len[1], (long long)len[2],
                     (long long)n[1], (long long)n[2]);
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "Slice can't be placed out of bounds with current policy. Got: "
                           "window %s (out_of_bounds_policy=\"error\")",
                           win);
    }
    if (oob && s->oob == OOB_TRIM)
        for (int a = 0; a < 3; a++) {
            int64_t a0 = lo[a] < 0 ? 0 : lo[a], a1 = lo[a] + len[a] > n[a] ? n[a] : lo[a] + len[a];
            lo[a] = a0, len[a] = a1 > a0 ? a1 - a0 : 0;
        }
    p->anchor_z = lo[0], p->anchor_y = lo[1], p->anchor_x = lo[2];
    p->out_d = len[0], p->out_h = len[1], p->out_w = len[2];
    p->out_f = p->in_f;
    p->mirror_x = per_sample(io, s->node_mirror, i, s->mirror) != 0;
    p->mirror_y = per_sample(io, s->node_mirror_v, i, s->mirror_v) != 0;
    p->out_c = p->in_c;
    if (s->pad_output) {
        int64_t c = 1;
        while (c < p->in_c) c *= 2;
        p->out_c = c;
    }
    SL_TRY(normalisation(s, io, i, p, err));
    /* the output: olay's order, dense */
    int64_t oext[NSLOT] = {p->out_f, p->out_d, p->out_h, p->out_w, p->out_c};
    int64_t *ostr[NSLOT] = {&p->os_f, &p->os_d, &p->os_h, &p->os_w, &p->os_c};
    p->os_f = p->os_d = 0;
    stride = 1;
    for (int k = (int)strlen(olay) - 1; k >= 0; k--) {
        int sl = slot_of[(unsigned char)olay[k]];
        o[k] = oext[sl];
        *ostr[sl] = stride;
        stride *= oext[sl];
    }
    return SL_OK;
}

static sl_status cmn_setup(void *state, sl__op_io *io, sl_err *err) {
    cmn_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 && in->dtype != SL_DTYPE_F32 && in->dtype != SL_DTYPE_F16 &&
        in->dtype != SL_DTYPE_I8)
        return sl_err_set(err, SL_EINVAL, "%s: input dtype %s not supported", s->name,
                          sl_dtype_name(in->dtype));
    char lay[LAYBUF], olay[LAYBUF];
    SL_TRY(layouts(s, in, lay, olay, err));
    if (s->auto_dtype) s->dtype = in->dtype; /* crop: each batch's input type (always the same) */
    if (io->batch > s->cap) {
        sl__cmn_sample *ns = realloc(s->samples, (size_t)io->batch * sizeof *ns);
        if (!ns) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->samples = ns;
        s->cap = io->batch;
    }
    int ond = (int)strlen(olay);
    int64_t *shapes =
        sl__malloc((size_t)(io->batch ? io->batch : 1) * (size_t)ond * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        memset(&s->samples[i], 0, sizeof s->samples[i]);
        st = sample_setup(s, io, i, lay, olay, &s->samples[i], shapes + (size_t)i * ond, err);
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, s->dtype, ond, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK) memcpy(out->layout, olay, (size_t)ond + 1);
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

/* Where output pixel (y, x) of sample p's plane at input offset base (-1: a plane outside the
 * input) reads: its offset in the input, or -1 when it falls outside (the fill values). */
static inline int64_t source_at(const sl__cmn_sample *p, int64_t base, int64_t y, int64_t x) {
    int64_t sy = p->anchor_y + (p->mirror_y ? p->out_h - 1 - y : y);
    int64_t sx = p->anchor_x + (p->mirror_x ? p->out_w - 1 - x : x);
    return base >= 0 && sy >= 0 && sy < p->in_h && sx >= 0 && sx < p->in_w
               ? base + sy * p->is_h + sx * p->is_w
               : -1;
}

/* One output plane (out_h, out_w, out_c) at offset ob of dst, from the input plane at base. */
static void cmn_plane(const sl__cmn_sample *p, const void *src, sl_dtype it, int64_t base,
                      void *dst, sl_dtype ot, int64_t ob) {
    int64_t H = p->out_h, W = p->out_w, C = p->out_c, IC = p->in_c, cs = p->is_c;
    int64_t oys = p->os_h, oxs = p->os_w, ocs = p->os_c;
    bool direct = it == SL_DTYPE_U8 && cs == 1 && IC == C;
    if (direct && ot == SL_DTYPE_F32 && H * W <= 1024) {
        /* small uint8 channels-last windows (MNIST's) -> float: no dtype switch in the loop */
        const uint8_t *in8 = src;
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++) {
                int64_t at = source_at(p, base, y, x);
                float *o = (float *)dst + ob + y * oys + x * oxs;
                if (at >= 0) {
                    for (int64_t c = 0; c < C; c++)
                        o[c * ocs] = ((float)in8[at + c] - p->mean[c]) * p->inv_std[c];
                } else {
                    for (int64_t c = 0; c < C; c++) o[c * ocs] = p->fill[c];
                }
            }
        return;
    }
    if (direct && (ot == SL_DTYPE_F32 || ot == SL_DTYPE_F16) && C <= 4) {
        /* larger uint8 channels-last windows -> float or float16: a uint8 channel has 256
         * values, so each channel's outputs are worked out once per plane and the loop only
         * looks them up (the same values as the generic loop below) */
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
                int64_t at = source_at(p, base, y, x), o = ob + y * oys + x * oxs;
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
        return;
    }
    for (int64_t y = 0; y < H; y++)
        for (int64_t x = 0; x < W; x++) {
            int64_t at = source_at(p, base, y, x), o = ob + y * oys + x * oxs;
            for (int64_t c = 0; c < C; c++) {
                float v = at >= 0 && c < IC
                              ? (load(src, it, at + c * cs) - p->mean[c]) * p->inv_std[c]
                              : p->fill[c];
                store(dst, ot, o + c * ocs, v);
            }
        }
}

/* out: (out_f, out_d) planes of (out_h, out_w, out_c), laid out as the output strides say */
static sl_status cmn_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    cmn_state *s = state;
    (void)worker, (void)err;
    const sl__cmn_sample *p = &s->samples[i];
    for (int64_t f = 0; f < p->out_f; f++)
        for (int64_t z = 0; z < p->out_d; z++) {
            int64_t sz = p->anchor_z + z;
            int64_t base = sz >= 0 && sz < p->in_d ? f * p->is_f + sz * p->is_d : -1;
            cmn_plane(p, io->in[0]->data[i], io->in[0]->dtype, base, io->out[0]->data[i], s->dtype,
                      f * p->os_f + z * p->os_d);
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
        const sl__cmn_sample *p = &s->samples[i];
        int64_t px = p->out_f * p->out_d * p->out_h * p->out_w;
        if (px > maxpix) maxpix = px;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_cmn(dd, io->batch, maxpix, io->in[0]->dtype, s->dtype, io->stream, err);
}
#endif

const sl__op_def sl__crop_mirror_normalize_op = {
    .name = "crop_mirror_normalize",
    .doc = "Crops, mirrors, normalises and converts images, volumes and sequences of either in "
           "one pass; channels first or last out.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = cmn_args,
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
    .doc = "Cuts a window out of images, volumes and sequences of either, as DALI's fn.crop: "
           "crop_mirror_normalize without the normalisation, keeping the input's type and layout.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = crop_args,
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
