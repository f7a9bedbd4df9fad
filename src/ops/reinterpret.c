/* SPDX-License-Identifier: Apache-2.0 */
/* reinterpret: each sample's bytes seen as another type and/or shape (DALI's fn.reinterpret), no
 * conversion. `dtype` changes the element type: without a shape the last extent is scaled by the
 * ratio of the sizes (it must divide); `shape` (one extent may be -1) or `rel_shape` (factors of
 * the input's extents) give the shape, whose byte size must equal the sample's. `layout` names the
 * dimensions (kept when the rank is and none is given). The output is a view of the input, or a
 * copy for a sample whose address does not suit the new type (a record inside a store). */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema reinterpret_args[] = {
    {"dtype", SL_ARG_DTYPE, "None", "the new element type (default: the input's)", 0, NULL},
    {"shape", SL_ARG_INTS, "None", "the new shape; one extent may be -1 (inferred)", 0, NULL},
    {"rel_shape", SL_ARG_FLOATS, "None",
     "the new shape relative to the input's extents; one may be negative (inferred)", 0, NULL},
    {"layout", SL_ARG_STR, "\"\"", "the new layout (default: kept when the rank is)", 0, NULL},
    {"src_dims", SL_ARG_INTS, "None", "not supported", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const NAME = "reinterpret";

typedef struct ri_state {
    bool has_dtype, has_shape, rel;
    sl_dtype dtype;
    int n;
    int64_t shape[SL_MAX_DIMS];
    double rel_shape[SL_MAX_DIMS];
    char layout[SL_LAYOUT_MAX + 1];
    bool copy; /* this batch is copied (a sample is misaligned) */
} ri_state;

static sl_status ri_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    bool has_shape = sl__args_get(a, "shape")->kind != SL_VAL_NONE;
    bool has_rel = sl__args_get(a, "rel_shape")->kind != SL_VAL_NONE;
    if (has_shape && has_rel)
        return sl_err_set(err, SL_EINVAL, "%s: give shape or rel_shape, not both", NAME);
    if (sl__args_get(a, "src_dims")->kind != SL_VAL_NONE)
        return sl_err_set(err, SL_ENOTSUP, "%s: src_dims is not supported", NAME);
    ri_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->has_dtype = sl__args_get(a, "dtype")->kind != SL_VAL_NONE;
    if (s->has_dtype) s->dtype = sl__args_dtype(a, "dtype");
    s->has_shape = has_shape || has_rel;
    s->rel = has_rel;
    int wild = 0;
    sl_status st = SL_OK;
    if (has_shape) {
        const int64_t *v;
        s->n = sl__args_ints(a, "shape", &v);
        for (int i = 0; i < s->n && i < SL_MAX_DIMS; i++) {
            s->shape[i] = v[i];
            wild += v[i] < 0;
            if (v[i] < -1)
                st = sl_err_set(err, SL_EINVAL, "%s: shape: extent %lld", NAME, (long long)v[i]);
        }
    } else if (has_rel) {
        const double *v;
        s->n = sl__args_floats(a, "rel_shape", &v);
        for (int i = 0; i < s->n && i < SL_MAX_DIMS; i++) {
            s->rel_shape[i] = v[i];
            wild += v[i] < 0;
        }
    }
    if (st == SL_OK && s->has_shape && (s->n > SL_MAX_DIMS || wild > 1))
        st = sl_err_set(err, SL_EINVAL, "%s: %d dims with %d wildcards (at most %d dims, one -1)",
                        NAME, s->n, wild, SL_MAX_DIMS);
    const char *lay = sl__args_str(a, "layout");
    if (st == SL_OK && lay && strlen(lay) > SL_LAYOUT_MAX)
        st = sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" is too long", NAME, lay);
    else if (st == SL_OK && lay && *lay && s->has_shape && (int)strlen(lay) != s->n)
        st = sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" for %d dims", NAME, lay, s->n);
    if (st == SL_OK && lay) snprintf(s->layout, sizeof s->layout, "%s", lay);
    if (st != SL_OK) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* Sample i's new shape (*nd dims) from its shape and byte size. */
static sl_status new_shape(ri_state *s, const sl__op_io *io, int i, sl_dtype ot, int64_t *sh,
                           int *nd, sl_err *err) {
    const sl_tlist *in = io->in[0];
    const int64_t *ish = sl_tlist_shape(in, i);
    size_t bytes = sl_tlist_sample_nbytes(in, i), os = sl_dtype_size(ot);
    if (!s->has_shape) {
        *nd = in->ndim;
        memcpy(sh, ish, (size_t)in->ndim * sizeof *sh);
        if (os == sl_dtype_size(in->dtype)) return SL_OK;
        if (in->ndim == 0)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "a 0-d %s sample cannot become %s without a shape",
                               sl_dtype_name(in->dtype), sl_dtype_name(ot));
        int64_t last_bytes = ish[in->ndim - 1] * (int64_t)sl_dtype_size(in->dtype);
        if (last_bytes % (int64_t)os)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "the last extent, %lld %s values, is no whole number of %s values",
                               (long long)ish[in->ndim - 1], sl_dtype_name(in->dtype),
                               sl_dtype_name(ot));
        sh[in->ndim - 1] = last_bytes / (int64_t)os;
        return SL_OK;
    }
    *nd = s->n;
    if (s->rel && s->n > in->ndim)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME, "rel_shape has %d dims, the input %d", s->n,
                           in->ndim);
    int wild = -1;
    int64_t known = 1;
    for (int d = 0; d < s->n; d++) {
        if (s->rel && s->rel_shape[d] >= 0) {
            double x = s->rel_shape[d] * (double)ish[d];
            if (!(x < 0x1p62))
                return sl__op_fail(err, SL_EINVAL, io, i, NAME, "rel_shape[%d] is too large", d);
            sh[d] = llround(x);
        } else {
            sh[d] = s->rel ? -1 : s->shape[d];
        }
        if (sh[d] < 0)
            wild = d;
        else if (__builtin_mul_overflow(known, sh[d], &known))
            return sl__op_fail(err, SL_EINVAL, io, i, NAME, "the shape overflows");
    }
    int64_t want = (int64_t)(bytes / os);
    if (bytes % os)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                           "%zu bytes are no whole number of %s values", bytes, sl_dtype_name(ot));
    if (wild >= 0) {
        if (known == 0 || want % known)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "cannot infer the -1 extent: %lld values over %lld", (long long)want,
                               (long long)known);
        sh[wild] = want / known;
        known = want;
    }
    if (known != want)
        return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                           "the sample has %zu bytes, the shape asks for %lld %s values", bytes,
                           (long long)known, sl_dtype_name(ot));
    return SL_OK;
}

static sl_status ri_setup(void *state, sl__op_io *io, sl_err *err) {
    ri_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    sl_dtype ot = s->has_dtype ? s->dtype : in->dtype;
    int nd = s->has_shape ? s->n : in->ndim;
    size_t os = sl_dtype_size(ot);
    s->copy = false;
    for (int i = 0; i < io->batch; i++)
        if ((uintptr_t)in->data[i] % os) s->copy = true;
    if (s->copy && in->device.kind != SL_DEVICE_CPU)
        return sl_err_set(err, SL_EINVAL, "%s: a GPU sample is not aligned for %s", NAME,
                          sl_dtype_name(ot));
    SL_TRY(sl_tlist_reset(out, io->batch, ot, nd, in->device, err));
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(nd ? nd : 1) * sizeof(int64_t), err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        int got;
        st = new_shape(s, io, i, ot, shapes + (size_t)i * (size_t)nd, &got, err);
    }
    if (st == SL_OK && s->copy) st = sl_tlist_alloc(out, shapes, err);
    for (int i = 0; st == SL_OK && !s->copy && i < io->batch; i++)
        sl_tlist_set_external(out, i, in->data[i], shapes + (size_t)i * (size_t)nd);
    free(shapes);
    if (st != SL_OK) return st;
    static const int none[1] = {0};
    if (!s->copy) io->run_index = none, io->run_count = 0; /* views: nothing to run */
    if (s->layout[0] && (int)strlen(s->layout) != nd)      /* (rel_shape's or the input's rank) */
        return sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" for outputs of %d dims", NAME,
                          s->layout, nd);
    if (s->layout[0])
        memcpy(out->layout, s->layout, sizeof out->layout);
    else if (nd == in->ndim)
        memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static sl_status ri_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    ri_state *s = state;
    (void)worker, (void)err;
    if (!s->copy) return SL_OK;
    size_t n = sl_tlist_sample_nbytes(io->in[0], i);
    if (n) memcpy(io->out[0]->data[i], io->in[0]->data[i], n);
    return SL_OK;
}

static sl_status ri_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    (void)state, (void)io, (void)err;
    return SL_OK; /* a view: setup did it all */
}

const sl__op_def sl__reinterpret_op = {
    .name = "reinterpret",
    .doc = "Views each sample's bytes as another type and/or shape (no conversion).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = reinterpret_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY,
    .create = ri_create,
    .setup = ri_setup,
    .run_cpu = ri_run_cpu,
    .run_gpu = ri_run_gpu,
    .destroy = free,
};
