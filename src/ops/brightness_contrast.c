/* SPDX-License-Identifier: Apache-2.0 */
/* brightness_contrast: DALI's fn.brightness_contrast. Every element becomes
 *
 *     out = shift * R(out) + brightness * (center + contrast * (in - center))
 *
 * (shift: brightness_shift, center: contrast_center), where R is the output type's range (1 for
 * floating types, the largest value for integers) and the center by default half of the input
 * type's positive range (128 for uint8, 0.5 for floats), as DALI does: the input's values are
 * not rescaled to the output type's range (a uint8 200 made float stays 200.0). All four may be per
 * sample. Setup folds them into one multiplier and one addend per sample, rounded to float as
 * DALI's are; each element, read as a float (as DALI does), is then in * multiplier + addend in
 * double precision (the product of two floats is exact there, so a fused multiply-add gives the
 * same bits and the CPU and CUDA runs agree) and stored with DALI's ConvertSat rules
 * (operator/dtype_conv.h). The output keeps the input's shape and layout, and a layout-less input
 * of 3 or 4 dims gets DALI's "HWC" or "FHWC"; `dtype` changes its type (default: the input's). */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/brightness_contrast.h"
#endif

static const sl__arg_schema bc_args[] = {
    {"brightness", SL_ARG_FLOAT, "1.0", "brightness multiplier",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"brightness_shift", SL_ARG_FLOAT, "0.0",
     "brightness shift, in units of the output type's range (1.0: its largest value)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"contrast", SL_ARG_FLOAT, "1.0", "contrast multiplier (0.0: uniform grey)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"contrast_center", SL_ARG_FLOAT, "None",
     "the level contrast leaves alone (default: half the input type's positive range, 0.5 for "
     "floats)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema brightness_args[] = {
    {"brightness", SL_ARG_FLOAT, "1.0", "brightness multiplier",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"brightness_shift", SL_ARG_FLOAT, "0.0",
     "brightness shift, in units of the output type's range (1.0: its largest value)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema contrast_args[] = {
    {"contrast", SL_ARG_FLOAT, "1.0", "contrast multiplier (0.0: uniform grey)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"contrast_center", SL_ARG_FLOAT, "None",
     "the level contrast leaves alone (default: half the input type's positive range, 0.5 for "
     "floats)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { B_BRIGHT, B_SHIFT, B_CONTRAST, B_CENTER, B_NARGS };
static const char *const arg_names[B_NARGS] = {"brightness", "brightness_shift", "contrast",
                                               "contrast_center"};

typedef struct bc_state {
    double value[B_NARGS]; /* the arguments' constants (center: NAN when not given) */
    int node[B_NARGS];     /* per-sample inputs, or -1 */
    int dtype;             /* -1: the input's */
    const char *name;      /* brightness_contrast, brightness or contrast */
    double *mul, *add;     /* per sample, from setup */
    int cap;
    sl__gpu_args gpu;
} bc_state;

static void bc_destroy(void *state) {
    bc_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        free(s->mul);
        free(s->add);
    }
    free(s);
}

static sl_status bc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    bc_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    static const double neutral[B_NARGS] = {1, 0, 1, NAN}; /* brightness and contrast alone */
    for (int k = 0; k < B_NARGS; k++) {
        if (!sl__args_has(a, arg_names[k])) {
            s->node[k] = -1, s->value[k] = neutral[k];
            continue;
        }
        s->node[k] = sl__args_node(a, arg_names[k]);
        s->value[k] = sl__args_get(a, arg_names[k])->kind == SL_VAL_NONE
                          ? NAN
                          : sl__args_float(a, arg_names[k]);
    }
    s->dtype = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    bool b = sl__args_has(a, "brightness"), c = sl__args_has(a, "contrast");
    s->name = b && c ? "brightness_contrast" : b ? "brightness" : "contrast";
    *out = s;
    return SL_OK;
}

/* R(t): 1 for floating types, else the largest value */
static double full_range(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_U8:
        return 255;
    case SL_DTYPE_I8:
        return 127;
    case SL_DTYPE_U16:
        return 65535;
    case SL_DTYPE_I16:
        return 32767;
    case SL_DTYPE_I32:
        return 2147483647.0;
    case SL_DTYPE_I64:
        return 9223372036854775807.0;
    case SL_DTYPE_U32:
        return 4294967295.0;
    case SL_DTYPE_U64:
        return 18446744073709551615.0;
    case SL_DTYPE_BOOL:
        return 1;
    default:
        return 1;
    }
}

/* half of the positive range: 2^(bits - signed - 1) for integers, 0.5 for floats */
static double half_range(sl_dtype t) {
    if (sl_dtype_is_float(t)) return 0.5;
    int bits = 8 * (int)sl_dtype_size(t);
    bool is_signed =
        t == SL_DTYPE_I8 || t == SL_DTYPE_I16 || t == SL_DTYPE_I32 || t == SL_DTYPE_I64;
    return ldexp(1.0, bits - (is_signed ? 1 : 0) - 1);
}

static sl_status bc_setup(void *state, sl__op_io *io, sl_err *err) {
    bc_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_dtype ot = s->dtype >= 0 ? (sl_dtype)s->dtype : in->dtype;
    if (io->batch > s->cap) {
        double *m = realloc(s->mul, (size_t)io->batch * sizeof *m);
        if (m) s->mul = m;
        double *d = realloc(s->add, (size_t)io->batch * sizeof *d);
        if (d) s->add = d;
        if (!m || !d) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        double v[B_NARGS];
        for (int k = 0; k < B_NARGS; k++) {
            v[k] = s->value[k];
            if (s->node[k] >= 0 && sl__argin_values(io, s->node[k], i, &v[k], 1) != 1)
                return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                   "%s must be one value per sample", arg_names[k]);
        }
        double center = isnan(v[B_CENTER]) ? half_range(in->dtype) : v[B_CENTER];
        /* the formula rearranged as in * mul + add */
        double b = v[B_BRIGHT];
        s->mul[i] = (double)(float)(b * v[B_CONTRAST]);
        s->add[i] =
            (double)(float)(v[B_SHIFT] * full_range(ot) + b * (center - v[B_CONTRAST] * center));
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, ot, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    if (!in->layout[0] && (in->ndim == 3 || in->ndim == 4)) /* DALI's image or sequence */
        strcpy(out->layout, in->ndim == 3 ? "HWC" : "FHWC");
    return SL_OK;
}

static sl_status bc_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    bc_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    int64_t n = (int64_t)(sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype));
    double mul = s->mul[i], add = s->add[i];
    if (in->dtype == SL_DTYPE_U8 && out->dtype == SL_DTYPE_U8) { /* the common case: a table */
        uint8_t table[256];
        for (int v = 0; v < 256; v++) sl__dtype_conv_store(table, SL_DTYPE_U8, v, v * mul + add);
        const uint8_t *src = in->data[i];
        uint8_t *dst = out->data[i];
        for (int64_t k = 0; k < n; k++) dst[k] = table[src[k]];
        return SL_OK;
    }
    for (int64_t k = 0; k < n; k++)
        sl__dtype_conv_store(out->data[i], out->dtype, k,
                             (double)(float)sl__dtype_conv_load(in->data[i], in->dtype, k) * mul +
                                 add);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status bc_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    bc_state *s = state;
    const sl_tlist *in = io->in[0];
    sl__cuda_bc_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].n = (int64_t)(sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype));
        d[i].mul = s->mul[i];
        d[i].add = s->add[i];
        if (d[i].n > maxn) maxn = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_brightness_contrast(dd, io->batch, maxn, in->dtype, io->out[0]->dtype,
                                        io->stream, err);
}
#endif

#ifdef SLUICE_HAVE_CUDA
#define BC_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = bc_run_gpu,
#else
#define BC_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__brightness_contrast_op = {
    .name = "brightness_contrast",
    .doc = "Adjusts brightness and contrast (per sample), as DALI: out = brightness_shift * "
           "range + brightness * (contrast_center + contrast * (in - contrast_center)).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = bc_args,
    .flags = SL_OPF_SEQUENCE,
    BC_DEVICES.create = bc_create,
    .setup = bc_setup,
    .run_cpu = bc_run_cpu,
    .destroy = bc_destroy,
};

const sl__op_def sl__brightness_op = {
    .name = "brightness",
    .doc = "Scales and shifts brightness (DALI's fn.brightness): brightness_contrast with the "
           "brightness arguments alone.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = brightness_args,
    .flags = SL_OPF_SEQUENCE,
    BC_DEVICES.create = bc_create,
    .setup = bc_setup,
    .run_cpu = bc_run_cpu,
    .destroy = bc_destroy,
};

const sl__op_def sl__contrast_op = {
    .name = "contrast",
    .doc = "Scales contrast around a centre (DALI's fn.contrast): brightness_contrast with the "
           "contrast arguments alone.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = contrast_args,
    .flags = SL_OPF_SEQUENCE,
    BC_DEVICES.create = bc_create,
    .setup = bc_setup,
    .run_cpu = bc_run_cpu,
    .destroy = bc_destroy,
};
