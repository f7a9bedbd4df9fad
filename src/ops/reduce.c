/* SPDX-License-Identifier: Apache-2.0 */
/* reductions.sum, mean, min, max, mean_square, rms, variance and std_dev (DALI's fn.reductions.*):
 * each sample reduced over `axes` (negative ones count from the back; axes=[] reduces nothing) or
 * the dimensions `axis_names` names in its layout, or, given neither, over every element.
 * keep_dims keeps the reduced dimensions with extent 1 (and the layout); otherwise they and their
 * layout letters go. Output types as DALI's: sum gives int64 for signed and uint64 for unsigned
 * integers (the input's type for floats), mean, mean_square and rms float32, min and max the
 * input's type; `dtype` picks another. variance and std_dev take a second input, the mean
 * (float32, one value per output element, e.g. reductions.mean with the same axes), and `ddof`;
 * they give float32. Integer sums are exact and wrap to the output type; every other reduction
 * accumulates in double and rounds once. A mean over no elements is NaN; min or max over none is
 * an error. The rule is ops/reduce.h's, shared with the CUDA run (reduce.cu). */
#include "ops/reduce.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AXES_ARGS                                                                                   \
    {                                                                                               \
        "axes", SL_ARG_INTS,                                                                        \
        "None", "axes to reduce (negative: from the back); default: all, [] none",                  \
        0,      NULL},                                                                              \
        {"axis_names", SL_ARG_STR, "None", "layout names of the axes to reduce (not with axes)", 0, \
         NULL},                                                                                     \
    {                                                                                               \
        "keep_dims", SL_ARG_BOOL, "False", "keep reduced dimensions with extent 1", 0, NULL         \
    }

static const sl__arg_schema typed_args[] = {
    AXES_ARGS,
    {"dtype", SL_ARG_DTYPE, "None", "output (and accumulation) type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema minmax_args[] = {
    AXES_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema spread_args[] = {
    AXES_ARGS,
    {"ddof", SL_ARG_INT, "0", "delta degrees of freedom: divide by count - ddof", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const names[] = {
    "reductions.sum",         "reductions.mean", "reductions.min",      "reductions.max",
    "reductions.mean_square", "reductions.rms",  "reductions.variance", "reductions.std_dev"};

typedef struct red_state {
    int op;
    const char *name;
    int mode; /* 0: every axis, 1: axes, 2: axis_names */
    int naxes;
    int axes[SL_MAX_DIMS];
    char axis_names[SL_MAX_DIMS + 1];
    bool keep;
    bool has_dtype;
    sl_dtype dtype;
    int ddof;
    sl__reduce_desc *desc;
    int cap;
    sl__gpu_args gpu;
} red_state;

static void red_destroy(void *state) {
    red_state *s = state;
    if (!s) return;
    free(s->desc);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status red_create(const sl__args *a, void **out, sl_err *err, int op) {
    red_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->op = op;
    s->name = names[op];
    sl_status st = SL_OK;
    bool ha = sl__args_get(a, "axes")->kind != SL_VAL_NONE;
    bool hn = sl__args_get(a, "axis_names")->kind != SL_VAL_NONE;
    if (ha && hn) st = sl_err_set(err, SL_EINVAL, "%s: give axes or axis_names, not both", s->name);
    if (st == SL_OK && ha) {
        const int64_t *v;
        s->mode = 1;
        s->naxes = sl__args_ints(a, "axes", &v);
        if (s->naxes > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: axes: %d axes, at most %d", s->name, s->naxes,
                            SL_MAX_DIMS);
        for (int k = 0; st == SL_OK && k < s->naxes; k++) {
            if (v[k] < -SL_MAX_DIMS || v[k] >= SL_MAX_DIMS)
                st = sl_err_set(err, SL_EINVAL, "%s: axes: %lld is no dimension", s->name,
                                (long long)v[k]);
            s->axes[k] = (int)v[k];
        }
    } else if (st == SL_OK && hn) {
        const char *n = sl__args_str(a, "axis_names");
        s->mode = 2;
        if (strlen(n) > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: axis_names \"%s\" is too long", s->name, n);
        else
            snprintf(s->axis_names, sizeof s->axis_names, "%s", n);
    }
    s->keep = sl__args_bool(a, "keep_dims");
    if (sl__args_has(a, "dtype") && sl__args_get(a, "dtype")->kind != SL_VAL_NONE) {
        s->has_dtype = true;
        s->dtype = sl__args_dtype(a, "dtype");
    }
    if (sl__args_has(a, "ddof")) {
        int64_t d = sl__args_int(a, "ddof");
        if (d < 0 || d > 1000000)
            st = sl_err_set(err, SL_EINVAL, "%s: ddof %lld is negative or too large", s->name,
                            (long long)d);
        s->ddof = (int)d;
    }
    if (st != SL_OK) {
        red_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

#define CREATE(fn, op)                                                                             \
    static sl_status fn(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {     \
        (void)init;                                                                                \
        return red_create(a, out, err, op);                                                        \
    }
CREATE(sum_create, SL__RED_SUM)
CREATE(mean_create, SL__RED_MEAN)
CREATE(min_create, SL__RED_MIN)
CREATE(max_create, SL__RED_MAX)
CREATE(msq_create, SL__RED_MEAN_SQUARE)
CREATE(rms_create, SL__RED_RMS)
CREATE(var_create, SL__RED_VARIANCE)
CREATE(std_create, SL__RED_STD_DEV)

static sl_dtype out_type(const red_state *s, sl_dtype in) {
    if (s->has_dtype) return s->dtype;
    switch (s->op) {
    case SL__RED_SUM:
        if (in == SL_DTYPE_F16 || in == SL_DTYPE_BF16) return SL_DTYPE_F32;
        if (!sl__reduce_is_int(in)) return in;
        return sl__reduce_signed(in) ? SL_DTYPE_I64 : SL_DTYPE_U64;
    case SL__RED_MIN:
    case SL__RED_MAX:
        return in;
    default:
        return SL_DTYPE_F32;
    }
}

/* Which dims of an ndim-d input with this layout are reduced (red[d]). */
static sl_status reduced_dims(const red_state *s, const sl_tlist *in, bool *red, sl_err *err) {
    int nd = in->ndim;
    for (int d = 0; d < nd; d++) red[d] = s->mode == 0;
    if (s->mode == 1)
        for (int k = 0; k < s->naxes; k++) {
            int ax = s->axes[k] < 0 ? s->axes[k] + nd : s->axes[k];
            if (ax < 0 || ax >= nd)
                return sl_err_set(err, SL_EINVAL, "%s: axes: %d is no dimension of a %d-d input",
                                  s->name, s->axes[k], nd);
            if (red[ax])
                return sl_err_set(err, SL_EINVAL, "%s: axes: dimension %d is named twice", s->name,
                                  ax);
            red[ax] = true;
        }
    if (s->mode == 2)
        for (const char *c = s->axis_names; *c; c++) {
            const char *at = in->layout[0] ? strchr(in->layout, *c) : NULL;
            if (!at)
                return sl_err_set(err, SL_EINVAL,
                                  "%s: axis_names \"%s\": '%c' is not in the input's layout \"%s\"",
                                  s->name, s->axis_names, *c, in->layout);
            red[at - in->layout] = true;
        }
    return SL_OK;
}

static sl_status red_setup(void *state, sl__op_io *io, sl_err *err) {
    red_state *s = state;
    const sl_tlist *in = io->in[0];
    bool spread = s->op == SL__RED_VARIANCE || s->op == SL__RED_STD_DEV;
    if (spread && io->in[1]->dtype != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL, "%s: the mean input is %s; it must be float32", s->name,
                          sl_dtype_name(io->in[1]->dtype));
    if (in->dtype == SL_DTYPE_INTERP) /* no number: reduce.h's loads know none of it */
        return sl_err_set(err, SL_EINVAL,
                          "%s: the input is of interpolation types (DALIInterpType), not numbers "
                          "(cast it first)",
                          s->name);
    if (in->dtype == SL_DTYPE_BOOL && s->op != SL__RED_MIN && s->op != SL__RED_MAX &&
        s->op != SL__RED_SUM)
        return sl_err_set(err, SL_EINVAL, "%s: a bool input (cast it first)", s->name);
    bool red[SL_MAX_DIMS];
    SL_TRY(reduced_dims(s, in, red, err));
    int nd = in->ndim, ond = 0;
    char layout[SL_LAYOUT_MAX + 1] = "";
    for (int d = 0; d < nd; d++)
        if (s->keep || !red[d]) {
            if (in->layout[0]) layout[ond] = in->layout[d];
            ond++;
        }
    layout[in->layout[0] ? ond : 0] = '\0';
    if (io->batch > s->cap) {
        sl__reduce_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->desc = d, s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    sl_dtype ot = out_type(s, in->dtype);
    SL_TRY(sl_tlist_reset(out, io->batch, ot, ond, io->device, err));
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(ond ? ond : 1) * sizeof(int64_t), err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        sl__reduce_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        int64_t stride = 1, strides[SL_MAX_DIMS];
        for (int k = nd - 1; k >= 0; k--) strides[k] = stride, stride *= sh[k];
        int o = 0;
        d->nout = d->count = 1;
        for (int k = 0; k < nd; k++) {
            if (red[k]) {
                d->red_ext[d->nred] = sh[k];
                d->red_stride[d->nred++] = strides[k];
                d->count *= sh[k];
            } else {
                d->keep_ext[d->nkeep] = sh[k];
                d->keep_stride[d->nkeep++] = strides[k];
                d->nout *= sh[k];
            }
            if (s->keep || !red[k])
                shapes[(size_t)i * (size_t)ond + (size_t)o++] = red[k] ? 1 : sh[k];
        }
        if (d->count == 0 && d->nout > 0 && (s->op == SL__RED_MIN || s->op == SL__RED_MAX))
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name, "reduces an empty extent");
        if (st == SL_OK && spread) {
            int64_t mn = (int64_t)(sl_tlist_sample_nbytes(io->in[1], i) / 4);
            if (mn != d->nout)
                st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                 "the mean input has %lld values, the result %lld", (long long)mn,
                                 (long long)d->nout);
            d->mean = io->in[1]->data[i];
        }
    }
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memcpy(out->layout, layout, sizeof out->layout);
    for (int i = 0; i < io->batch; i++) {
        s->desc[i].in = in->data[i];
        s->desc[i].out = out->data[i];
    }
    return SL_OK;
}

/* Adds n elements from input offset off, step st, to a: for the common ops and types a loop with
 * them constant (the compiler drops sl__reduce_add's switches; the rule is the same). */
static void reduce_row(sl__reduce_acc *a, int op, const void *in, sl_dtype t, int64_t off,
                       int64_t st, int64_t n, double m) {
#define CASE(OP, T)                                                                                \
    do {                                                                                           \
        if (op == OP && t == T) {                                                                  \
            for (int64_t k = 0; k < n; k++) sl__reduce_add(a, OP, in, T, off + k * st, m);         \
            return;                                                                                \
        }                                                                                          \
    } while (0)
    CASE(SL__RED_SUM, SL_DTYPE_U8);
    CASE(SL__RED_SUM, SL_DTYPE_F32);
    CASE(SL__RED_MEAN, SL_DTYPE_U8);
    CASE(SL__RED_MEAN, SL_DTYPE_F32);
    CASE(SL__RED_MIN, SL_DTYPE_U8);
    CASE(SL__RED_MIN, SL_DTYPE_F32);
    CASE(SL__RED_MAX, SL_DTYPE_U8);
    CASE(SL__RED_MAX, SL_DTYPE_F32);
#undef CASE
    for (int64_t k = 0; k < n; k++) sl__reduce_add(a, op, in, t, off + k * st, m);
}

/* Adds the d->count reduced elements from base to a in sl__reduce_at's order (so that the sums
 * round as the CUDA run's do), a row of the last reduced dim at a time, the rows' offsets kept
 * by an odometer over the other reduced dims (no division per element). */
static void reduce_span(const sl__reduce_desc *d, int op, sl_dtype t, int64_t base, double m,
                        sl__reduce_acc *a) {
    int nr = d->nred;
    int64_t row = nr > 0 ? d->red_ext[nr - 1] : 1, st = nr > 0 ? d->red_stride[nr - 1] : 0;
    int64_t idx[SL_MAX_DIMS] = {0}, off = base;
    if (row < 1) return;
    for (int64_t r = 0; r < d->count; r += row) {
        reduce_row(a, op, d->in, t, off, st, row, m);
        for (int k = nr - 2; k >= 0; k--) { /* the next row: carry through the outer dims */
            off += d->red_stride[k];
            if (++idx[k] < d->red_ext[k]) break;
            off -= idx[k] * d->red_stride[k];
            idx[k] = 0;
        }
    }
}

static sl_status red_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    red_state *s = state;
    (void)worker, (void)err;
    const sl__reduce_desc *d = &s->desc[i];
    sl_dtype it = io->in[0]->dtype, ot = io->out[0]->dtype;
    for (int64_t o = 0; o < d->nout; o++) {
        double m = d->mean ? ((const float *)d->mean)[o] : 0;
        sl__reduce_acc a;
        sl__reduce_acc_init(&a);
        reduce_span(d, s->op, it, sl__reduce_base(d, o), m, &a);
        sl__reduce_store(d, s->op, it, ot, s->ddof, o, &a);
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status red_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    red_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__reduce_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].nout > maxn) maxn = d[i].nout;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_reduce(dd, io->batch, maxn, s->op, io->in[0]->dtype, io->out[0]->dtype, s->ddof,
                           io->stream, err);
}
#define RED_GPU SL_OPDEV_GPU, .run_gpu = red_run_gpu
#else
#define RED_GPU 0
#endif

#define RED_OP(var, nm, doc_, schema, nin, create_)                                                \
    const sl__op_def var = {                                                                       \
        .name = nm,                                                                                \
        .doc = doc_,                                                                               \
        .min_inputs = nin,                                                                         \
        .max_inputs = nin,                                                                         \
        .args = schema,                                                                            \
        .devices = SL_OPDEV_CPU | RED_GPU,                                                         \
        .create = create_,                                                                         \
        .setup = red_setup,                                                                        \
        .run_cpu = red_run_cpu,                                                                    \
        .destroy = red_destroy,                                                                    \
    }

RED_OP(sl__red_sum_op, "reductions.sum", "Sum of elements along the axes.", typed_args, 1,
       sum_create);
RED_OP(sl__red_mean_op, "reductions.mean", "Mean of elements along the axes.", typed_args, 1,
       mean_create);
RED_OP(sl__red_min_op, "reductions.min", "Smallest element along the axes.", minmax_args, 1,
       min_create);
RED_OP(sl__red_max_op, "reductions.max", "Largest element along the axes.", minmax_args, 1,
       max_create);
RED_OP(sl__red_mean_square_op, "reductions.mean_square", "Mean of squares along the axes.",
       typed_args, 1, msq_create);
RED_OP(sl__red_rms_op, "reductions.rms", "Root mean square along the axes.", typed_args, 1,
       rms_create);
RED_OP(sl__red_variance_op, "reductions.variance",
       "Variance along the axes, around a given mean (second input).", spread_args, 2, var_create);
RED_OP(sl__red_std_dev_op, "reductions.std_dev",
       "Standard deviation along the axes, around a given mean (second input).", spread_args, 2,
       std_create);
