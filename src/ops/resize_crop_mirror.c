/* SPDX-License-Identifier: Apache-2.0 */
/* resize_crop_mirror (DALI's fn.resize_crop_mirror, and fast_resize_crop_mirror, its older name
 * with antialias off by default): resize, then crop, then flip, in one resampling. resize's setup
 * (resize.c) works out the resized image's size and the input window it comes from; then, per
 * sample, the crop is placed in the resized image as crop places its window (crop / crop_h /
 * crop_w, crop_pos_x / crop_pos_y, rounding), and resize's runs (CPU and CUDA) compute only those
 * output pixels, in reverse along a mirrored axis (mirror: bit 0 horizontal, bit 1 vertical): the
 * taps of each are those of the whole image's resampling (sl__resize_taps_of), so the result is
 * resize, then crop, then flip, bit for bit, at the cost of the crop alone. A crop window that does
 * not fit inside the resized image is an error, as crop's default out_of_bounds_policy makes it.
 * HWC images, sequences frame by frame, and on the CPU CHW and CFHW (resize.c's geometry, as
 * random_resized_crop's); volumes are refused. */
#include "ops/resize_int.h"
#include "operator/argin.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sl__rcm {
    double crop_h, crop_w, pos_x, pos_y;
    int node_ch, node_cw, node_px, node_py, node_mirror; /* per-sample inputs, else -1 */
    bool has_crop, truncate;
    int64_t mirror;
    int64_t *sample; /* per sample: (n_y, n_x, at_y, at_x, flip_y, flip_x) */
    int cap;
};

// clang-format off
#define RCM_ARGS                                                                                   \
    {"crop", SL_ARG_FLOATS, "None",                                                                \
     "the crop's (height, width) in the resized image, or one length for both; exclusive with "   \
     "crop_h / crop_w", SL_ARGF_PER_SAMPLE, NULL},                                                 \
    {"crop_h", SL_ARG_FLOAT, "0.0", "crop height (0: the resized image's)", SL_ARGF_PER_SAMPLE,    \
     NULL},                                                                                        \
    {"crop_w", SL_ARG_FLOAT, "0.0", "crop width (0: the resized image's)", SL_ARGF_PER_SAMPLE,     \
     NULL},                                                                                        \
    {"crop_d", SL_ARG_FLOAT, "0.0", "volumes' crop depth: refused unless 0 (no volumes here)", 0,  \
     NULL},                                                                                        \
    {"crop_pos_x", SL_ARG_FLOAT, "0.5", "the crop's normalised horizontal anchor in [0, 1]",       \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"crop_pos_y", SL_ARG_FLOAT, "0.5", "the crop's normalised vertical anchor in [0, 1]",         \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"crop_pos_z", SL_ARG_FLOAT, "0.5", "volumes' depth anchor: refused unless 0.5", 0, NULL},     \
    {"mirror", SL_ARG_INT, "0", "per sample: bit 0 flips horizontally, bit 1 vertically",          \
     SL_ARGF_PER_SAMPLE, NULL},                                                                    \
    {"rounding", SL_ARG_ENUM, "\"round\"", "the crop anchor's rounding: round or truncate", 0,     \
     "round|truncate"}
// clang-format on

static const sl__arg_schema rcm_args[] = {
    RESIZE_SIZE_ARGS, RESIZE_FILTER_ARGS, RESIZE_ROI_ARGS, RCM_ARGS, {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema fast_args[] = {
    RESIZE_SIZE_ARGS, RESIZE_FILTER_ARGS_AA("False"), RESIZE_ROI_ARGS,
    RCM_ARGS,         {NULL, 0, NULL, NULL, 0, NULL},
};

void sl__rcm_free(struct sl__rcm *c) {
    if (c) free(c->sample);
    free(c);
}

const int64_t *sl__rcm_sample(const struct sl__rcm *c, int i) {
    return c->sample + 6 * i;
}

sl_status sl__rcm_create(const sl__args *a, resize_state *s, sl_err *err) {
    struct sl__rcm *c = sl__calloc(1, sizeof *c, err);
    if (!c) return SL_ENOMEM;
    s->rcm = c;
    c->has_crop = sl__args_given(a, "crop") &&
                  (sl__args_node(a, "crop") >= 0 || sl__args_get(a, "crop")->kind != SL_VAL_NONE);
    c->node_ch = sl__args_node(a, "crop_h"), c->node_cw = sl__args_node(a, "crop_w");
    c->node_px = sl__args_node(a, "crop_pos_x"), c->node_py = sl__args_node(a, "crop_pos_y");
    c->node_mirror = sl__args_node(a, "mirror");
    c->crop_h = c->node_ch < 0 ? sl__args_float(a, "crop_h") : 0;
    c->crop_w = c->node_cw < 0 ? sl__args_float(a, "crop_w") : 0;
    c->pos_x = c->node_px < 0 ? sl__args_float(a, "crop_pos_x") : 0.5;
    c->pos_y = c->node_py < 0 ? sl__args_float(a, "crop_pos_y") : 0.5;
    c->mirror = c->node_mirror < 0 ? sl__args_int(a, "mirror") : 0;
    c->truncate = !strcmp(sl__args_str(a, "rounding"), "truncate");
    if (c->has_crop && (sl__args_given(a, "crop_h") || sl__args_given(a, "crop_w")))
        return sl_err_set(err, SL_EINVAL, "%s: give crop or crop_h / crop_w, not both", s->name);
    if (sl__args_float(a, "crop_d") != 0)
        return sl_err_set(err, SL_EINVAL,
                          "%s: crop_d = %g: a volume's crop, and volumes are not taken here",
                          s->name, sl__args_float(a, "crop_d"));
    if (sl__args_float(a, "crop_pos_z") != 0.5)
        return sl_err_set(err, SL_EINVAL,
                          "%s: crop_pos_z = %g: a volume's anchor, and volumes are not taken here",
                          s->name, sl__args_float(a, "crop_pos_z"));
    if (c->mirror < 0 || c->mirror > 3)
        return sl_err_set(err, SL_EINVAL,
                          "%s: mirror = %lld: 0 to 3 (bit 0 horizontal, bit 1 vertical)", s->name,
                          (long long)c->mirror);
    return SL_OK;
}

/* sample i of a per-sample input, else the literal */
static double one(const sl__op_io *io, int node, int i, double literal) {
    double v;
    return node >= 0 && sl__argin_values(io, node, i, &v, 1) >= 1 ? v : literal;
}

sl_status sl__rcm_apply(const resize_state *s, const sl__op_io *io, int i, int64_t *out_hw,
                        sl_err *err) {
    struct sl__rcm *c = s->rcm;
    if (i == 0 && io->batch > c->cap) {
        int64_t *n = realloc(c->sample, (size_t)io->batch * 6 * sizeof *n);
        if (!n) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        c->sample = n, c->cap = io->batch;
    }
    double crop[2] = {one(io, c->node_ch, i, c->crop_h), one(io, c->node_cw, i, c->crop_w)};
    if (c->has_crop) {
        double v[3];
        int n = 0;
        SL_TRY(sl__args_sample_floats(s->args, io, s->name, "crop", i, v, 3, &n, err));
        if (n != 1 && n != 2)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "crop wants (height, width) or one length, not %d values", n);
        crop[0] = v[0], crop[1] = v[n - 1];
    }
    double pos[2] = {one(io, c->node_py, i, c->pos_y), one(io, c->node_px, i, c->pos_x)};
    double m = one(io, c->node_mirror, i, (double)c->mirror);
    if (!(m >= 0 && m <= 3 && m == floor(m)))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "mirror = %g: 0 to 3 (bit 0 horizontal, bit 1 vertical)", m);
    static const char *const axis[2] = {"height", "width"};
    for (int d = 0; d < 2; d++) {
        if (!(crop[d] >= 0 && crop[d] <= 1e9))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name, "crop %s %g: from 0 to 1e9", axis[d],
                               crop[d]);
        if (!(pos[d] >= 0 && pos[d] <= 1))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name, "crop_pos_%c = %g: outside [0, 1]",
                               d ? 'x' : 'y', pos[d]);
    }
    int64_t ext[2], at[2];
    for (int d = 0; d < 2; d++) { /* as crop places its window */
        int64_t n = out_hw[d];
        ext[d] = crop[d] > 0 ? (int64_t)llround(crop[d]) : n;
        if (ext[d] < 1) ext[d] = 1;
        double v = pos[d] * (double)(n - ext[d]);
        at[d] = c->truncate ? (int64_t)trunc(v) : (int64_t)llroundf((float)v);
    }
    if (at[0] < 0 || at[1] < 0 || at[0] + ext[0] > out_hw[0] || at[1] + ext[1] > out_hw[1])
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "the crop (%lld x %lld at y %lld, x %lld) does not fit in the resized "
                           "image (%lld x %lld)",
                           (long long)ext[0], (long long)ext[1], (long long)at[0], (long long)at[1],
                           (long long)out_hw[0], (long long)out_hw[1]);
    int64_t *o = c->sample + 6 * i;
    for (int d = 0; d < 2; d++) {
        o[d] = out_hw[d], o[2 + d] = at[d], o[4 + d] = ((int64_t)m >> (d ? 0 : 1)) & 1;
        out_hw[d] = ext[d];
    }
    return SL_OK;
}

static sl_status rcm_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    return sl__resize_create_as(a, init, SL__RESIZE_RCM, out, err);
}

static sl_status fast_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    return sl__resize_create_as(a, init, SL__RESIZE_RCM_FAST, out, err);
}

#ifdef SLUICE_HAVE_CUDA
#define RCM_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = sl__resize_run_gpu,
#else
#define RCM_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__resize_crop_mirror_op = {
    .name = "resize_crop_mirror",
    .doc = "Resize, crop and flip in one resampling of the input window that the crop comes from "
           "(DALI's fn.resize_crop_mirror): the same result as resize, then crop, then flip; HWC "
           "images, sequences frame by frame, CHW and CFHW on the CPU.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = rcm_args,
    .flags = SL_OPF_SEQUENCE,
    RCM_DEVICES.create = rcm_create,
    .setup = sl__resize_setup,
    .run_cpu = sl__resize_run_cpu,
    .destroy = sl__resize_destroy,
};

const sl__op_def sl__fast_resize_crop_mirror_op = {
    .name = "fast_resize_crop_mirror",
    .doc = "DALI's older name of resize_crop_mirror, with antialias off by default.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = fast_args,
    .flags = SL_OPF_SEQUENCE,
    RCM_DEVICES.create = fast_create,
    .setup = sl__resize_setup,
    .run_cpu = sl__resize_run_cpu,
    .destroy = sl__resize_destroy,
};
