/* SPDX-License-Identifier: Apache-2.0 */
/* color_twist and hsv: DALI's fn.color_twist (hue, saturation, brightness, contrast) and fn.hsv
 * (hue, saturation, value) on images with three channels last (HWC, or FHWC for video). Both are
 * one linear map per sample in the YIQ colour space, as DALI builds it: color_twist: out =
 * brightness * contrast * Yiq2Rgb * H(hue) * S(saturation) * Rgb2Yiq * in
 *                      + (half - half * contrast) * brightness
 *   hsv:         out = Yiq2Rgb * H(hue) * S(saturation) * value * Rgb2Yiq * in
 * where Rgb2Yiq is the NTSC matrix (rows .299 .587 .114 / .596 -.274 -.321 / .211 -.523 .311),
 * Yiq2Rgb its inverse, H a rotation of I and Q by hue degrees, S a scaling of I and Q, and half
 * 0.5 for floating inputs and 128 for integer ones (DALI's half range). The matrix is composed in
 * double and kept as float, as DALI keeps it; pixels go through ops/color_twist.h, which the CUDA
 * run shares. Every argument may be a per-sample input. The output (dtype, default the input's) is
 * stored with DALI's ConvertSat rules. */
#include "operator/argin.h"
#include "ops/color_twist.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/color_twist.h"
#endif

enum { T_HUE, T_SAT, T_VAL, T_BRIGHT, T_CONTRAST, T_NARGS };
static const char *const arg_names[T_NARGS] = {"hue", "saturation", "value", "brightness",
                                               "contrast"};

#define TWIST_HUE_SAT                                                                              \
    {                                                                                              \
        "hue",                                                                                     \
        SL_ARG_FLOAT,                                                                              \
        "0.0",                                                                                     \
        "hue rotation, in degrees",                                                                \
        SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME,                                                    \
        NULL},                                                                                     \
    {                                                                                              \
        "saturation", SL_ARG_FLOAT, "1.0", "saturation multiplier (0.0: grey)",                    \
            SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL                                           \
    }
#define TWIST_DTYPE                                                                                \
    { "dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL }

static const sl__arg_schema ct_args[] = {
    TWIST_HUE_SAT,
    {"brightness", SL_ARG_FLOAT, "1.0", "brightness multiplier (0.0: black)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"contrast", SL_ARG_FLOAT, "1.0", "contrast multiplier (0.0: a uniform grey at half the range)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    TWIST_DTYPE,
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema hsv_args[] = {
    TWIST_HUE_SAT,
    {"value", SL_ARG_FLOAT, "1.0", "value multiplier (scales Y, I and Q alike)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    TWIST_DTYPE,
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema hue_args[] = {
    {"hue", SL_ARG_FLOAT, "0.0", "hue rotation, in degrees", SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME,
     NULL},
    TWIST_DTYPE,
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema sat_args[] = {
    {"saturation", SL_ARG_FLOAT, "1.0", "saturation multiplier (0.0: grey)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    TWIST_DTYPE,
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct tw_state {
    const char *name;
    double value[T_NARGS]; /* the arguments' constants (the other op's: their neutral values) */
    int node[T_NARGS];     /* per-sample inputs, or -1 */
    int dtype;             /* -1: the input's */
    sl__twist *tw;         /* per sample, from setup */
    int cap;
    sl__gpu_args gpu;
} tw_state;

static void tw_destroy(void *state) {
    tw_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        free(s->tw);
    }
    free(s);
}

/* every op here: the arguments its schema has, the others at their neutral values */
static sl_status tw_create_as(const sl__args *a, const char *name, void **out, sl_err *err) {
    tw_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->name = name;
    static const double neutral[T_NARGS] = {0, 1, 1, 1, 1};
    for (int k = 0; k < T_NARGS; k++) {
        bool has = sl__args_has(a, arg_names[k]);
        s->node[k] = has ? sl__args_node(a, arg_names[k]) : -1;
        s->value[k] = has ? sl__args_float(a, arg_names[k]) : neutral[k];
    }
    s->dtype = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    *out = s;
    return SL_OK;
}

static sl_status ct_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return tw_create_as(a, "color_twist", out, err);
}

static sl_status hsv_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return tw_create_as(a, "hsv", out, err);
}

static sl_status hue_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return tw_create_as(a, "hue", out, err);
}

static sl_status sat_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return tw_create_as(a, "saturation", out, err);
}

/* c = a x b, 3x3 row-major */
static void mul3(const double *a, const double *b, double *c) {
    double r[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
    memcpy(c, r, sizeof r);
}

/* the inverse of a 3x3 matrix (adjugate over determinant) */
static void inv3(const double *m, double *r) {
    double c0 = m[4] * m[8] - m[5] * m[7], c1 = m[5] * m[6] - m[3] * m[8],
           c2 = m[3] * m[7] - m[4] * m[6];
    double det = m[0] * c0 + m[1] * c1 + m[2] * c2;
    r[0] = c0 / det, r[3] = c1 / det, r[6] = c2 / det;
    r[1] = (m[2] * m[7] - m[1] * m[8]) / det, r[4] = (m[0] * m[8] - m[2] * m[6]) / det;
    r[7] = (m[1] * m[6] - m[0] * m[7]) / det;
    r[2] = (m[1] * m[5] - m[2] * m[4]) / det, r[5] = (m[2] * m[3] - m[0] * m[5]) / det;
    r[8] = (m[0] * m[4] - m[1] * m[3]) / det;
}

/* one sample's transform from its argument values */
static void compose(const tw_state *s, const double *v, double half, sl__twist *t) {
    static const float yiq_f[9] = {.299f,  .587f, .114f,  .596f, -.274f,
                                   -.321f, .211f, -.523f, .311f};
    double yiq[9], rgb[9], m[9];
    for (int k = 0; k < 9; k++) yiq[k] = yiq_f[k]; /* DALI's float constants */
    inv3(yiq, rgb);
    double h = v[T_HUE] * 3.14159265358979323846 / 180, ch = cos(h), sh = sin(h), sat = v[T_SAT];
    /* H(hue) x S(saturation) x value: I and Q rotated and scaled, Y only scaled by value */
    double hs[9] = {v[T_VAL],
                    0,
                    0,
                    0,
                    ch * sat * v[T_VAL],
                    sh * sat * v[T_VAL],
                    0,
                    -sh * sat * v[T_VAL],
                    ch * sat * v[T_VAL]};
    mul3(rgb, hs, m);
    mul3(m, yiq, m);
    double g = v[T_BRIGHT] * v[T_CONTRAST];
    for (int k = 0; k < 9; k++) t->m[k] = (float)(g * m[k]);
    t->off = (float)((half - half * v[T_CONTRAST]) * v[T_BRIGHT]);
}

static sl_status tw_setup(void *state, sl__op_io *io, sl_err *err) {
    tw_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_dtype ot = s->dtype >= 0 ? (sl_dtype)s->dtype : in->dtype;
    if (in->dtype == SL_DTYPE_BOOL || ot == SL_DTYPE_BOOL)
        return sl_err_set(err, SL_EINVAL, "%s: bool images are not supported", s->name);
    if (in->ndim != 3 && in->ndim != 4)
        return sl_err_set(err, SL_EINVAL,
                          "%s: images are HWC or FHWC (3 or 4 dimensions), not %d dimensions",
                          s->name, in->ndim);
    size_t ll = strlen(in->layout);
    if (ll && in->layout[ll - 1] != 'C')
        return sl_err_set(err, SL_EINVAL, "%s: layout \"%s\": the channels must come last", s->name,
                          in->layout);
    if (io->batch > s->cap) {
        sl__twist *t = realloc(s->tw, (size_t)io->batch * sizeof *t);
        if (!t) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->tw = t;
        s->cap = io->batch;
    }
    double half = sl_dtype_is_float(in->dtype) ? 0.5 : 128;
    for (int i = 0; i < io->batch; i++) {
        int64_t c = sl_tlist_shape(in, i)[in->ndim - 1];
        if (c != 3)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "%lld channels: RGB images (3 channels, last) only", (long long)c);
        double v[T_NARGS];
        for (int k = 0; k < T_NARGS; k++) {
            v[k] = s->value[k];
            if (s->node[k] >= 0 && sl__argin_values(io, s->node[k], i, &v[k], 1) != 1)
                return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                   "%s must be one value per sample", arg_names[k]);
        }
        compose(s, v, half, &s->tw[i]);
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, ot, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static int64_t pixels(const sl_tlist *l, int i) {
    return (int64_t)(sl_tlist_sample_nbytes(l, i) / sl_dtype_size(l->dtype)) / 3;
}

static sl_status tw_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    tw_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    int64_t n = pixels(in, i);
    /* the common type pairs with the types constant (the compiler drops the element rules'
       switches; the rule is the same), the rest through the generic loop */
#define PAIR(IT, OT)                                                                               \
    if (in->dtype == IT && out->dtype == OT) {                                                     \
        for (int64_t p = 0; p < n; p++)                                                            \
            sl__twist_pixel(&s->tw[i], in->data[i], IT, out->data[i], OT, p);                      \
        return SL_OK;                                                                              \
    }
    PAIR(SL_DTYPE_U8, SL_DTYPE_U8)
    PAIR(SL_DTYPE_U8, SL_DTYPE_F32)
    PAIR(SL_DTYPE_F32, SL_DTYPE_F32)
#undef PAIR
    for (int64_t p = 0; p < n; p++)
        sl__twist_pixel(&s->tw[i], in->data[i], in->dtype, out->data[i], out->dtype, p);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status tw_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    tw_state *s = state;
    const sl_tlist *in = io->in[0];
    sl__cuda_twist_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].pixels = pixels(in, i);
        d[i].t = s->tw[i];
        if (d[i].pixels > most) most = d[i].pixels;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_color_twist(dd, io->batch, most, in->dtype, io->out[0]->dtype, io->stream, err);
}
#define TW_GPU .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = tw_run_gpu,
#else
#define TW_GPU .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__color_twist_op = {
    .name = "color_twist",
    .doc = "Adjusts hue, saturation, brightness and contrast of RGB images (DALI's "
           "fn.color_twist): one linear map per sample in YIQ space.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = ct_args,
    .flags = SL_OPF_SEQUENCE,
    TW_GPU.create = ct_create,
    .setup = tw_setup,
    .run_cpu = tw_run_cpu,
    .destroy = tw_destroy,
};

const sl__op_def sl__hsv_op = {
    .name = "hsv",
    .doc = "Adjusts hue, saturation and value of RGB images (DALI's fn.hsv): one linear map per "
           "sample in YIQ space.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = hsv_args,
    .flags = SL_OPF_SEQUENCE,
    TW_GPU.create = hsv_create,
    .setup = tw_setup,
    .run_cpu = tw_run_cpu,
    .destroy = tw_destroy,
};

const sl__op_def sl__hue_op = {
    .name = "hue",
    .doc = "Turns the hue of RGB images by `hue` degrees (DALI's fn.hue): hsv with the hue alone.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = hue_args,
    .flags = SL_OPF_SEQUENCE,
    TW_GPU.create = hue_create,
    .setup = tw_setup,
    .run_cpu = tw_run_cpu,
    .destroy = tw_destroy,
};

const sl__op_def sl__saturation_op = {
    .name = "saturation",
    .doc = "Scales the saturation of RGB images (DALI's fn.saturation): hsv with the saturation "
           "alone.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = sat_args,
    .flags = SL_OPF_SEQUENCE,
    TW_GPU.create = sat_create,
    .setup = tw_setup,
    .run_cpu = tw_run_cpu,
    .destroy = tw_destroy,
};
