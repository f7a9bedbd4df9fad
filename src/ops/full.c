/* SPDX-License-Identifier: Apache-2.0 */
/* full, full_like, zeros, zeros_like, ones, ones_like: tensors of one value, as DALI's (and
 * numpy's) of those names. zeros / ones: `shape` (a scalar without one) of `dtype` (FLOAT).
 * zeros_like / ones_like: the input's shapes, of `dtype` or the input's type (its data is not
 * read). full: its input, the fill value, broadcast to `shape` as numpy broadcasts (the fill's
 * dims matched from the last; each 1 or equal to the shape's), in the fill's type; full_like:
 * the first input's shapes filled with the second input broadcast the same way, of `dtype` or
 * the first input's type. Values go through cast's rules. CPU runs. */
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/size.h"

#include <stdlib.h>
#include <string.h>

enum { K_ZEROS, K_ONES, K_ZEROS_LIKE, K_ONES_LIKE, K_FULL, K_FULL_LIKE };
static const char *const names[] = {"zeros",     "ones", "zeros_like",
                                    "ones_like", "full", "full_like"};

static const sl__arg_schema shape_args[] = {
    {"shape", SL_ARG_INTS, "[]", "the output's shape (default: a scalar)", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema like_args[] = {
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema full_args[] = {
    {"shape", SL_ARG_INTS, "[]", "the output's shape (default: a scalar)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct full_state {
    int kind;
    bool has_dtype;
    sl_dtype dtype;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
} full_state;

static sl_status full_create_as(const sl__args *a, int kind, void **out, sl_err *err) {
    full_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->kind = kind;
    if (kind != K_FULL) {
        s->has_dtype = sl__args_get(a, "dtype")->kind != SL_VAL_NONE;
        if (s->has_dtype) s->dtype = sl__args_dtype(a, "dtype");
    }
    if (kind == K_ZEROS || kind == K_ONES || kind == K_FULL) {
        const int64_t *sh;
        s->ndim = sl__args_ints(a, "shape", &sh);
        sl_status st = s->ndim > SL_MAX_DIMS ? sl_err_set(err, SL_EINVAL, "%s: shape of %d dims",
                                                          names[kind], s->ndim)
                                             : SL_OK;
        for (int d = 0; d < s->ndim && st == SL_OK; d++) {
            if (sh[d] < 0)
                st = sl_err_set(err, SL_EINVAL, "%s: shape: negative extent %lld", names[kind],
                                (long long)sh[d]);
            s->shape[d] = sh[d];
        }
        size_t bytes;
        if (st == SL_OK && sl__size_shape(s->shape, s->ndim, 8, &bytes, NULL) != SL__SIZE_OK)
            st = sl_err_set(err, SL_EINVAL, "%s: shape: a sample of more than %zu bytes",
                            names[kind], (size_t)SL__SIZE_LIMIT);
        if (st != SL_OK) {
            free(s);
            return st;
        }
    }
    *out = s;
    return SL_OK;
}

#define CREATE(fn, kind)                                                                           \
    static sl_status fn(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {     \
        (void)init;                                                                                \
        return full_create_as(a, kind, out, err);                                                  \
    }
CREATE(zeros_create, K_ZEROS)
CREATE(ones_create, K_ONES)
CREATE(zeros_like_create, K_ZEROS_LIKE)
CREATE(ones_like_create, K_ONES_LIKE)
CREATE(full_create, K_FULL)
CREATE(full_like_create, K_FULL_LIKE)

/* The fill (input fill) broadcast to a sample of nd dims sh: is it compatible? */
static bool broadcasts(const sl_tlist *fill, int i, int nd, const int64_t *sh) {
    const int64_t *fs = sl_tlist_shape(fill, i);
    if (fill->ndim > nd) return false;
    for (int k = 1; k <= fill->ndim; k++)
        if (fs[fill->ndim - k] != 1 && fs[fill->ndim - k] != sh[nd - k]) return false;
    return true;
}

static sl_status full_setup(void *state, sl__op_io *io, sl_err *err) {
    full_state *s = state;
    const char *name = names[s->kind];
    bool like = s->kind == K_ZEROS_LIKE || s->kind == K_ONES_LIKE || s->kind == K_FULL_LIKE;
    const sl_tlist *shp = like ? io->in[0] : NULL;
    const sl_tlist *fill = s->kind == K_FULL        ? io->in[0]
                           : s->kind == K_FULL_LIKE ? io->in[1]
                                                    : NULL;
    sl_dtype t = s->has_dtype ? s->dtype : like ? io->in[0]->dtype : fill ? fill->dtype : s->dtype;
    int nd = shp ? shp->ndim : s->ndim;
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(nd ? nd : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        int64_t *sh = shapes + (size_t)i * (size_t)nd;
        memcpy(sh, shp ? sl_tlist_shape(shp, i) : s->shape, (size_t)nd * sizeof *sh);
        if (fill && !broadcasts(fill, i, nd, sh))
            st = sl__op_fail(err, SL_EINVAL, io, i, name,
                             "the fill value's shape does not broadcast to the output's (%d "
                             "dims, from the last: each 1 or equal)",
                             nd);
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, t, nd, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st == SL_OK && shp) memcpy(out->layout, shp->layout, sizeof out->layout);
    return st;
}

/* sample i: every element, or the fill broadcast (numpy's rule, dims matched from the last) */
static sl_status full_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    full_state *s = state;
    const sl_tlist *out = io->out[0];
    const sl_tlist *fill = s->kind == K_FULL        ? io->in[0]
                           : s->kind == K_FULL_LIKE ? io->in[1]
                                                    : NULL;
    const int64_t *sh = sl_tlist_shape(out, i);
    int nd = out->ndim;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sh[d];
    double one = s->kind == K_ONES || s->kind == K_ONES_LIKE ? 1 : 0;
    for (int64_t k = 0; k < n; k++) {
        double v = one;
        if (fill) { /* k's index in the fill: its coordinates, 0 where the fill's extent is 1 */
            const int64_t *fs = sl_tlist_shape(fill, i);
            int64_t rem = k, fk = 0, stride = 1;
            for (int d = nd - 1, fd = fill->ndim - 1; d >= 0; d--, fd--) {
                int64_t c = rem % sh[d];
                rem /= sh[d];
                if (fd >= 0) {
                    if (fs[fd] != 1) fk += c * stride;
                    stride *= fs[fd];
                }
            }
            v = sl__dtype_conv_load(fill->data[i], fill->dtype, fk);
        }
        sl__dtype_conv_store(out->data[i], out->dtype, k, v);
    }
    return SL_OK;
}

#define DEF(var, nm, doc_, nin, schema, create_)                                                   \
    const sl__op_def var = {                                                                       \
        .name = nm,                                                                                \
        .doc = doc_,                                                                               \
        .min_inputs = nin,                                                                         \
        .max_inputs = nin,                                                                         \
        .args = schema,                                                                            \
        .devices = SL_OPDEV_CPU,                                                                   \
        .create = create_,                                                                         \
        .setup = full_setup,                                                                       \
        .run_cpu = full_run_cpu,                                                                   \
        .destroy = free,                                                                           \
    };
DEF(sl__zeros_op, "zeros", "A tensor of zeros of `shape`.", 0, shape_args, zeros_create)
DEF(sl__ones_op, "ones", "A tensor of ones of `shape`.", 0, shape_args, ones_create)
DEF(sl__zeros_like_op, "zeros_like", "Zeros of the input's shapes.", 1, like_args,
    zeros_like_create)
DEF(sl__ones_like_op, "ones_like", "Ones of the input's shapes.", 1, like_args, ones_like_create)
DEF(sl__full_op, "full", "The input (the fill value) broadcast to `shape`.", 1, full_args,
    full_create)
DEF(sl__full_like_op, "full_like", "The second input broadcast to the first input's shapes.", 2,
    like_args, full_like_create)
