/* SPDX-License-Identifier: Apache-2.0 */
/* one_hot: class indices to one-hot vectors, as DALI's fn.one_hot. out[..., k, ...] = on_value when
 * k == input[...] else off_value; classes < 0 or >= num_classes give an all-off row. The new axis
 * of num_classes goes at `axis` (-1: last). DALI's scalar mode: when every sample has exactly one
 * element and axis is not given, each output is (num_classes,), so a caffe2 label (1,) gives (10,).
 */
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/one_hot.h"
#endif

static const sl__arg_schema one_hot_args[] = {
    {"num_classes", SL_ARG_INT, "0", "number of classes (the new axis' extent)", 0, NULL},
    {"axis", SL_ARG_INT, "-1", "where the new axis goes; -1 = last", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {"on_value", SL_ARG_FLOAT, "1.0", "value at the class index", 0, NULL},
    {"off_value", SL_ARG_FLOAT, "0.0", "value elsewhere", 0, NULL},
    {"axis_name", SL_ARG_STR, "None", "one-letter layout name of the new axis", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct one_hot_state {
    int64_t classes;
    int axis;
    bool axis_given;
    sl_dtype dtype;
    double on, off;
    char axis_name;
    int *axis_of; /* per sample of the batch: where the class axis goes; -2 = scalar mode */
    int cap;
    sl__gpu_args gpu;
} one_hot_state;

static const char *const NAME = "one_hot";

static void one_hot_destroy(void *state) {
    one_hot_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        free(s->axis_of);
    }
    free(s);
}

static sl_status one_hot_create(const sl__args *a, const sl__op_init *init, void **out,
                                sl_err *err) {
    int64_t n = sl__args_int(a, "num_classes");
    if (n < 1)
        return sl_err_set(err, SL_EINVAL, "%s: num_classes must be >= 1 (got %lld)", NAME,
                          (long long)n);
    const char *an = sl__args_str(a, "axis_name");
    if (an && strlen(an) != 1)
        return sl_err_set(err, SL_EINVAL, "%s: Unsupported axis_name value \"%s\" (one character)",
                          NAME, an);
    one_hot_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->classes = n;
    s->axis = (int)sl__args_int(a, "axis");
    s->axis_given = sl__args_given(a, "axis");
    s->dtype = sl__args_dtype(a, "dtype");
    s->on = sl__args_float(a, "on_value");
    s->off = sl__args_float(a, "off_value");
    s->axis_name = an ? an[0] : 0;
    *out = s;
    return SL_OK;
}

static sl_status one_hot_setup(void *state, sl__op_io *io, sl_err *err) {
    one_hot_state *s = state;
    const sl_tlist *in = io->in[0];
    bool scalar = !s->axis_given;
    for (int i = 0; i < io->batch && scalar; i++)
        if (sl_tlist_sample_nbytes(in, i) != sl_dtype_size(in->dtype)) scalar = false;
    int nd = scalar ? 1 : in->ndim + 1;
    if (nd > SL_MAX_DIMS) return sl_err_set(err, SL_EINVAL, "%s: too many dims", NAME);
    int axis = scalar ? 0 : s->axis < 0 ? in->ndim : s->axis;
    if (axis > in->ndim)
        return sl_err_set(err, SL_EINVAL, "%s: axis %d outside [-1, %d]", NAME, s->axis, in->ndim);
    if (io->batch > s->cap) {
        int *na = realloc(s->axis_of, (size_t)io->batch * sizeof *na);
        if (!na) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->axis_of = na;
        s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype, nd, io->device, err));
    int64_t *shapes = sl__malloc((size_t)io->batch * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) {
        int64_t *o = shapes + (size_t)i * (size_t)nd;
        s->axis_of[i] = scalar ? -2 : axis;
        if (scalar) {
            o[0] = s->classes;
            continue;
        }
        const int64_t *sh = sl_tlist_shape(in, i);
        for (int d = 0, k = 0; d < nd; d++) o[d] = d == axis ? s->classes : sh[k++];
    }
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    if (s->axis_name && !scalar && in->ndim > 1 && !in->layout[0])
        return sl_err_set(err, SL_EINVAL,
                          "%s: Input layout mismatch: axis_name \"%c\" names an axis of a "
                          "layout, but the %d-dim input has none",
                          NAME, s->axis_name, in->ndim);
    if (s->axis_name && !scalar && (int)strlen(in->layout) == in->ndim) {
        char lay[SL_LAYOUT_MAX + 1];
        for (int d = 0, k = 0; d < nd; d++) lay[d] = d == axis ? s->axis_name : in->layout[k++];
        lay[nd] = '\0';
        memcpy(out->layout, lay, sizeof lay);
    } else if (s->axis_name && scalar) {
        out->layout[0] = s->axis_name;
        out->layout[1] = '\0';
    }
    return SL_OK;
}

/* Sample i as (outer, inner) around the class axis. */
static void one_hot_split(const one_hot_state *s, const sl_tlist *in, int i, int64_t *outer,
                          int64_t *inner) {
    const int64_t *sh = sl_tlist_shape(in, i);
    int axis = s->axis_of[i] < 0 ? in->ndim : s->axis_of[i];
    *outer = 1, *inner = 1;
    for (int d = 0; d < in->ndim; d++) {
        if (d < axis)
            *outer *= sh[d];
        else
            *inner *= sh[d];
    }
    if (s->axis_of[i] == -2) *outer = 1, *inner = 1;
}

/* out: the input's shape with num_classes inserted at axis; (num_classes,) in scalar mode */
static sl_status one_hot_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    one_hot_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t outer, inner;
    one_hot_split(s, in, i, &outer, &inner);
    void *dst = io->out[0]->data[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < s->classes; k++)
            for (int64_t j = 0; j < inner; j++) {
                double v = sl__dtype_conv_load(in->data[i], in->dtype, o * inner + j);
                bool hit = v >= 0 && v < (double)s->classes && (int64_t)v == k;
                sl__dtype_conv_store(dst, s->dtype, (o * s->classes + k) * inner + j,
                                     hit ? s->on : s->off);
            }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status one_hot_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    one_hot_state *s = state;
    sl__cuda_one_hot_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t maxout = 0;
    for (int i = 0; i < io->batch; i++) {
        one_hot_split(s, io->in[0], i, &d[i].outer, &d[i].inner);
        d[i].in = io->in[0]->data[i];
        d[i].out = io->out[0]->data[i];
        int64_t n = d[i].outer * s->classes * d[i].inner;
        if (n > maxout) maxout = n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    return sl__cuda_one_hot(dd, io->batch, maxout, s->classes, io->in[0]->dtype, s->dtype, s->on,
                            s->off, io->stream, err);
}
#endif

const sl__op_def sl__one_hot_op = {
    .name = "one_hot",
    .doc = "Turns class indices into one-hot vectors (scalar labels give (num_classes,)).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = one_hot_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = one_hot_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = one_hot_create,
    .setup = one_hot_setup,
    .run_cpu = one_hot_run_cpu,
    .destroy = one_hot_destroy,
};
