/* SPDX-License-Identifier: Apache-2.0 */
/* reshape: the same bytes seen with another shape and/or layout, as DALI's fn.reshape; no copy:
 * every output sample is an external view of its input sample. shape (one extent may be -1, the
 * wildcard) or rel_shape (factors of the input extents, one may be negative = wildcard), layout
 * (kept when the rank is unchanged and none is given, else cleared). (1, 28, 28) -> (784,).
 * src_dims instead takes the output's extents from the input's dims it lists, in its order, -1
 * inserting a dim of extent 1 (dims left out must have extent 1; the layout's letters follow
 * the dims, where the input has one and no dim is inserted); with rel_shape too, its factors
 * scale the extents src_dims picks; src_dims=[] makes a scalar of a one-element sample. The
 * shape may also come as the op's second input (a list of integers per sample, on the CPU), as
 * DALI's.
 * squeeze and expand_dims (DALI's fn.squeeze, fn.expand_dims) are views too: dims of extent 1
 * removed (`axes` or `axis_names`) or inserted (`axes`, positions in the output, with
 * `new_axis_names` for the layout). */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema reshape_args[] = {
    {"shape", SL_ARG_INTS, "None",
     "output shape ([] for a scalar); one extent may be -1 (inferred); may be per sample",
     SL_ARGF_PER_SAMPLE, NULL},
    {"rel_shape", SL_ARG_FLOATS, "None",
     "output shape relative to the input extents; one may be negative (inferred); may be per "
     "sample",
     SL_ARGF_PER_SAMPLE, NULL},
    {"layout", SL_ARG_STR, "None",
     "output layout; default: kept if the rank is kept, else empty. Alone: the shape is kept", 0,
     NULL},
    {"src_dims", SL_ARG_INTS, "None",
     "the input dims that make the output's, in order; -1 inserts a dim of extent 1 (instead of "
     "shape and rel_shape)",
     0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* BY_SRC with rel_shape: the extents src_dims picks, times rel_shape's factors (DALI's
 * combination); BY_INPUT: nothing but (maybe) a layout given, the shape is the second input */
typedef enum reshape_how { BY_SHAPE, BY_REL, BY_SRC, BY_LAYOUT, BY_INPUT } reshape_how;

typedef struct reshape_state {
    const sl__args *a; /* shape or rel_shape per sample: read in setup */
    reshape_how how;
    bool per_sample;
    int n; /* output rank (of the literal) */
    int64_t src_dims[SL_MAX_DIMS];
    bool src_rel;      /* BY_SRC: rel_shape scales the picked extents */
    bool src_rel_node; /* ... rel_shape given per sample (an op output) */
    int64_t shape[SL_MAX_DIMS];
    double rel_shape[SL_MAX_DIMS];
    bool has_layout;
    char layout[SL_LAYOUT_MAX + 1];
} reshape_state;

static const char *const NAME = "reshape";

/* an error about sample i (io NULL: about the literal, at create) */
static sl_status fail(const sl__op_io *io, int i, sl_err *err, const char *fmt, ...)
    SL_PRINTF(4, 5);
static sl_status fail(const sl__op_io *io, int i, sl_err *err, const char *fmt, ...) {
    char what[SL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!io) return sl_err_set(err, SL_EINVAL, "%s: %s", NAME, what);
    return sl__op_fail(err, SL_EINVAL, io, i, NAME, "%s", what);
}

/* Checks a shape (shape, or rel_shape when rel) of n dims: no extent 0, at most one wildcard,
 * the known extents' product below 2^63. shape=[] is a scalar; rel_shape needs a dim. */
static sl_status check_shape(const sl__op_io *io, int i, const int64_t *shape, const double *rel,
                             int n, sl_err *err) {
    int wild = 0;
    int64_t known = 1;
    for (int d = 0; d < n && d < SL_MAX_DIMS; d++) {
        if (rel) {
            wild += rel[d] < 0;
            continue;
        }
        if (shape[d] == 0) return fail(io, i, err, "shape extent 0 is not allowed");
        wild += shape[d] < 0;
        if (shape[d] > 0 && __builtin_mul_overflow(known, shape[d], &known))
            return fail(io, i, err,
                        "shape: the extents up to dim %d (%lld there) multiply past 2^63 "
                        "elements",
                        d, (long long)shape[d]);
    }
    if (n < (rel ? 1 : 0) || n > SL_MAX_DIMS || wild > 1)
        return fail(io, i, err, "%d dims with %d wildcards (%d..%d dims, at most one -1)", n, wild,
                    rel ? 1 : 0, SL_MAX_DIMS);
    return SL_OK;
}

static sl_status reshape_create(const sl__args *a, const sl__op_init *init, void **out,
                                sl_err *err) {
    (void)init;
    bool has_shape = sl__args_get(a, "shape")->kind != SL_VAL_NONE;
    bool has_rel = sl__args_get(a, "rel_shape")->kind != SL_VAL_NONE;
    bool has_src = sl__args_get(a, "src_dims")->kind != SL_VAL_NONE;
    const char *lay = sl__args_str(a, "layout");
    if (has_shape + has_rel + has_src > 1 && !(has_src && has_rel && !has_shape))
        return sl_err_set(err, SL_EINVAL,
                          "%s: give at most one of shape, rel_shape and src_dims (src_dims may go "
                          "with rel_shape)",
                          NAME);
    reshape_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->a = a;
    sl_status st = SL_OK;
    if (has_src) {
        const int64_t *v;
        s->how = BY_SRC;
        s->n = sl__args_ints(a, "src_dims", &v);
        if (s->n < 0 || s->n > SL_MAX_DIMS) /* [] makes a scalar of a one-element sample */
            st = sl_err_set(err, SL_EINVAL, "%s: src_dims has %d dims (0..%d)", NAME, s->n,
                            SL_MAX_DIMS);
        for (int i = 0; i < s->n && i < SL_MAX_DIMS && st == SL_OK; i++) {
            if (v[i] < -1 || v[i] >= SL_MAX_DIMS)
                st = sl_err_set(err, SL_EINVAL, "%s: src_dims[%d] = %lld (a dim, or -1)", NAME, i,
                                (long long)v[i]);
            s->src_dims[i] = v[i];
        }
        if (st == SL_OK && has_rel) {
            const double *r = NULL;
            s->src_rel_node = sl__args_node(a, "rel_shape") >= 0; /* (then checked per sample) */
            int nr = s->src_rel_node ? s->n : sl__args_floats(a, "rel_shape", &r);
            if (!s->src_rel_node && nr != s->n) /* DALI finds it when the op runs */
                st = sl__op_at_run(
                    init, sl_err_set(err, SL_EINVAL,
                                     "%s: src_dims has %d values, rel_shape %d: ``src_dims`` and "
                                     "``rel_shape`` have different lengths: %d vs %d",
                                     NAME, s->n, nr, s->n, nr));
            for (int i = 0; st == SL_OK && !s->src_rel_node && i < nr; i++) s->rel_shape[i] = r[i];
            if (st == SL_OK && !s->src_rel_node) st = check_shape(NULL, -1, NULL, r, nr, err);
            s->src_rel = true;
        }
    } else if (has_shape || has_rel) {
        s->how = has_shape ? BY_SHAPE : BY_REL;
        s->per_sample = sl__args_node(a, has_shape ? "shape" : "rel_shape") >= 0;
        if (!s->per_sample && has_shape) {
            const int64_t *v;
            s->n = sl__args_ints(a, "shape", &v);
            for (int i = 0; i < s->n && i < SL_MAX_DIMS; i++) s->shape[i] = v[i];
            st = check_shape(NULL, -1, v, NULL, s->n, err);
        } else if (!s->per_sample) {
            const double *v;
            s->n = sl__args_floats(a, "rel_shape", &v);
            for (int i = 0; i < s->n && i < SL_MAX_DIMS; i++) s->rel_shape[i] = v[i];
            st = check_shape(NULL, -1, NULL, v, s->n, err);
        }
    } else {
        s->how = lay ? BY_LAYOUT : BY_INPUT; /* checked in setup, which knows the inputs */
    }
    if (st == SL_OK && lay) {
        if (*lay && s->how != BY_LAYOUT && s->how != BY_INPUT && !s->per_sample &&
            (int)strlen(lay) != s->n)
            st = sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" for %d dims", NAME, lay, s->n);
        else if (strlen(lay) > SL_LAYOUT_MAX)
            st = sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" is too long", NAME, lay);
        s->has_layout = true;
        snprintf(s->layout, sizeof s->layout, "%s", lay);
    }
    if (st != SL_OK) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* Sample i's requested shape (sh; -1 = the wildcard) for n output dims, from the literal or its
 * own per-sample value (which must have n values). */
static sl_status requested(const reshape_state *s, const sl__op_io *io, int i, int n, int64_t *sh,
                           sl_err *err) {
    const sl_tlist *in = io->in[0];
    const int64_t *ish = sl_tlist_shape(in, i);
    int64_t shape[SL_MAX_DIMS];
    double rel[SL_MAX_DIMS];
    int got = n;
    if (io->num_inputs > 1) {
        const sl_tlist *si = io->in[1];
        got = (int)(sl_tlist_sample_nbytes(si, i) / sl_dtype_size(si->dtype));
        if (got != n)
            return fail(io, i, err,
                        "the shape input has %d values, sample 0's %d (every sample "
                        "has one rank)",
                        got, n);
        for (int d = 0; d < n; d++) {
            double v = sl__dtype_conv_load(si->data[i], si->dtype, d);
            if (!(fabs(v) < 0x1p62)) /* (also NaN; casting a larger one is undefined) */
                return fail(io, i, err, "the shape input's value %d is %g, not an extent", d, v);
            shape[d] = (int64_t)v;
        }
        SL_TRY(check_shape(io, i, shape, NULL, n, err));
        for (int d = 0; d < n; d++) sh[d] = shape[d];
        return SL_OK;
    }
    if (s->how == BY_SRC && s->src_rel_node) {
        SL_TRY(sl__args_sample_floats(s->a, io, NAME, "rel_shape", i, rel, SL_MAX_DIMS, &got, err));
        if (got != n)
            return fail(io, i, err,
                        "src_dims has %d values, rel_shape %d: ``src_dims`` and ``rel_shape`` "
                        "have different lengths: %d vs %d",
                        n, got, n, got);
        SL_TRY(check_shape(io, i, NULL, rel, n, err));
    } else if (s->per_sample && s->how == BY_SHAPE) {
        SL_TRY(sl__args_sample_ints(s->a, io, NAME, "shape", i, shape, SL_MAX_DIMS, &got, err));
    } else if (s->per_sample) {
        SL_TRY(sl__args_sample_floats(s->a, io, NAME, "rel_shape", i, rel, SL_MAX_DIMS, &got, err));
    } else {
        memcpy(shape, s->shape, sizeof shape), memcpy(rel, s->rel_shape, sizeof rel);
    }
    if (got != n)
        return fail(io, i, err, "%s has %d values, sample 0's %d (every sample has one rank)",
                    s->how == BY_SHAPE ? "shape" : "rel_shape", got, n);
    if (s->per_sample) SL_TRY(check_shape(io, i, shape, s->how == BY_REL ? rel : NULL, n, err));
    if (s->how == BY_REL && n > in->ndim)
        return fail(io, i, err,
                    "rel_shape has %d dims, the input %d: ``rel_shape`` has more elements (%d) "
                    "than there are dimensions in the input (%d); use ``src_dims`` to add dims",
                    n, in->ndim, n, in->ndim);
    for (int d = 0; d < n; d++) {
        if (s->how == BY_LAYOUT) {
            sh[d] = ish[d];
        } else if (s->how == BY_SRC) {
            if (s->src_dims[d] >= in->ndim)
                return fail(io, i, err,
                            "src_dims[%d] = %lld, but the input has %d dims (index %lld "
                            "is out of bounds)",
                            d, (long long)s->src_dims[d], in->ndim, (long long)s->src_dims[d]);
            sh[d] = s->src_dims[d] < 0 ? 1 : ish[s->src_dims[d]];
            if (s->src_rel && rel[d] < 0)
                sh[d] = -1;
            else if (s->src_rel)
                sh[d] = llround(rel[d] * (double)sh[d]);
        } else if (s->how == BY_REL && rel[d] >= 0) {
            double x = rel[d] * (double)ish[d];
            if (!(x < 0x1p62))
                return fail(io, i, err,
                            "rel_shape[%d] = %g times the input's extent %lld is beyond any shape",
                            d, rel[d], (long long)ish[d]);
            sh[d] = llround(x);
        } else {
            sh[d] = s->how == BY_REL ? -1 : shape[d];
        }
    }
    return SL_OK;
}

/* the output rank: the literal's, the input's (layout alone), or sample 0's per-sample value */
static sl_status out_rank(const reshape_state *s, const sl__op_io *io, int *n, sl_err *err) {
    *n = s->how == BY_LAYOUT ? io->in[0]->ndim : s->n;
    if (io->num_inputs > 1) { /* the shape input: sample 0's length */
        const sl_tlist *si = io->in[1];
        *n = io->batch ? (int)(sl_tlist_sample_nbytes(si, 0) / sl_dtype_size(si->dtype)) : 0;
        if (si->device.kind != SL_DEVICE_CPU || sl_dtype_is_float(si->dtype) || si->ndim > 1 ||
            *n > SL_MAX_DIMS)
            return sl_err_set(err, SL_EINVAL,
                              "%s: the shape input must be a CPU list of at most %d integers per "
                              "sample",
                              NAME, SL_MAX_DIMS);
        return SL_OK;
    }
    if (!s->per_sample || io->batch == 0) return SL_OK;
    int64_t shape[SL_MAX_DIMS];
    double rel[SL_MAX_DIMS];
    if (s->how == BY_SHAPE)
        return sl__args_sample_ints(s->a, io, NAME, "shape", 0, shape, SL_MAX_DIMS, n, err);
    return sl__args_sample_floats(s->a, io, NAME, "rel_shape", 0, rel, SL_MAX_DIMS, n, err);
}

static sl_status reshape_setup(void *state, sl__op_io *io, sl_err *err) {
    reshape_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    int n;
    if (io->num_inputs > 1 && s->how != BY_LAYOUT && s->how != BY_INPUT)
        return sl_err_set(err, SL_EINVAL,
                          "%s: give the shape as the second input or as shape, rel_shape or "
                          "src_dims, not both",
                          NAME);
    if (io->num_inputs < 2 && s->how == BY_INPUT)
        return sl_err_set(err, SL_EINVAL,
                          "%s: give shape, rel_shape, src_dims, a second input with the shape, or "
                          "layout (alone: the data keeps its shape, the layout is set)",
                          NAME);
    SL_TRY(out_rank(s, io, &n, err));
    if (s->has_layout && s->layout[0] && (int)strlen(s->layout) != n)
        return sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" for %d dims", NAME, s->layout, n);
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, n, in->device, err));
    for (int i = 0; i < io->batch; i++) {
        const int64_t *ish = sl_tlist_shape(in, i);
        int64_t vol = 1, known = 1, sh[SL_MAX_DIMS];
        int wild = -1;
        for (int d = 0; d < in->ndim; d++)
            if (__builtin_mul_overflow(vol, ish[d], &vol))
                return sl__op_fail(err, SL_EINVAL, io, i, NAME, "the input's extents overflow");
        SL_TRY(requested(s, io, i, n, sh, err));
        for (int d = 0; d < n; d++) {
            if (sh[d] < 0)
                wild = d;
            else if (__builtin_mul_overflow(known, sh[d], &known))
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "shape: the extents up to dim %d (%lld there) multiply past "
                                   "2^63 elements; the input has %lld",
                                   d, (long long)sh[d], (long long)vol);
        }
        if (wild >= 0) {
            if (known == 0 || (vol == 0 && s->how == BY_REL)) {
                char dims[SL_MAX_DIMS * 24] = "";
                for (int d = 0, o = 0; d < in->ndim && o < (int)sizeof dims; d++)
                    o += snprintf(dims + o, sizeof dims - (size_t)o, "%s%lld", d ? " x " : "",
                                  (long long)ish[d]);
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "cannot infer the -1 extent (dim %d) of a sample with no "
                                   "elements: Cannot infer the size of dimension %d when the "
                                   "volume of the other dimensions is 0. Input shape: %s",
                                   wild, wild, dims);
            }
            if (vol % known)
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "cannot infer the -1 extent: %lld elements over %lld",
                                   (long long)vol, (long long)known);
            sh[wild] = vol / known;
            known = vol;
        }
        if (known != vol)
            return sl__op_fail(
                err, SL_EINVAL, io, i, NAME,
                "input has %lld elements, the requested shape %lld%s: The volume of the new shape "
                "should match the one of the original shape. Requested a shape with %lld elements "
                "but the original shape has %lld elements.",
                (long long)vol, (long long)known,
                s->how == BY_SRC ? " (src_dims may leave out only dims of extent 1)" : "",
                (long long)known, (long long)vol);
        sl_tlist_set_external(out, i, in->data[i], sh);
    }
    if (s->has_layout) {
        memcpy(out->layout, s->layout, sizeof out->layout);
    } else if (s->how == BY_SRC) { /* the letters follow their dims (none where one is inserted) */
        bool whole = (int)strlen(in->layout) == in->ndim;
        for (int d = 0; d < n && whole; d++) whole = s->src_dims[d] >= 0;
        memset(out->layout, 0, sizeof out->layout);
        for (int d = 0; d < n && whole; d++) out->layout[d] = in->layout[s->src_dims[d]];
    } else if (n == in->ndim) {
        memcpy(out->layout, in->layout, sizeof out->layout);
    }
    return SL_OK;
}

const sl__op_def sl__reshape_op = {
    .name = "reshape",
    .doc = "Views each sample with another shape and/or layout; the data is not copied. The shape "
           "may come as a second input (a list of integers per sample), as DALI's.",
    .min_inputs = 1,
    .max_inputs = 2,
    .args = reshape_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY,
    .create = reshape_create,
    .setup = reshape_setup,
    .destroy = free,
};

/* ---- squeeze and expand_dims ----------------------------------------------------------------- */

static const sl__arg_schema squeeze_args[] = {
    {"axes", SL_ARG_INTS, "[]", "the dims of extent 1 to remove", 0, NULL},
    {"axis_names", SL_ARG_STR, "\"\"", "the dims to remove by layout letter", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema expand_args[] = {
    {"axes", SL_ARG_INTS, NULL, "where the new dims of extent 1 go, as positions in the output",
     SL_ARGF_REQUIRED, NULL},
    {"new_axis_names", SL_ARG_STR, "\"\"",
     "the new dims' layout letters (one each; without them the output has no layout)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct dims_state {
    const char *name;
    bool expand;
    int naxes;
    int axes[SL_MAX_DIMS];
    char names[SL_MAX_DIMS + 1];
} dims_state;

static sl_status dims_create_as(const sl__args *a, bool expand, void **out, sl_err *err) {
    dims_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->expand = expand;
    s->name = expand ? "expand_dims" : "squeeze";
    const int64_t *v;
    int n = sl__args_ints(a, "axes", &v);
    const char *names = sl__args_str(a, expand ? "new_axis_names" : "axis_names");
    sl_status st = SL_OK;
    /* (expand_dims's messages end with DALI's own sentence, which DALI's users' tests match) */
    if (expand && names && names[0] && (int)strlen(names) != n)
        st = sl_err_set(err, SL_EINVAL,
                        "%s: new_axis_names \"%s\" for %d axes: Specified %d new dimensions, but "
                        "layout contains only %d new dimension names",
                        s->name, names, n, n, (int)strlen(names));
    else if (n > SL_MAX_DIMS || (names && strlen(names) > SL_MAX_DIMS))
        st = sl_err_set(err, SL_EINVAL, "%s: more than %d axes", s->name, SL_MAX_DIMS);
    for (int k = 0; k < n && st == SL_OK; k++) {
        if (expand && v[k] < 0)
            st = sl_err_set(err, SL_EINVAL, "%s: axes: axis %lld: Axis value can't be negative",
                            s->name, (long long)v[k]);
        else if (expand && v[k] >= SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: axes: axis %lld, past the most dims a tensor has (%d): Data has "
                            "not enough dimensions to add new axes at specified indices.",
                            s->name, (long long)v[k], SL_MAX_DIMS);
        else if (v[k] < 0 || v[k] >= SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: axis %lld", s->name, (long long)v[k]);
        for (int j = 0; j < k && st == SL_OK; j++)
            if (v[j] == v[k])
                st = sl_err_set(
                    err, SL_EINVAL, "%s: axis %lld given twice%s", s->name, (long long)v[k],
                    expand ? "" : ": Specified at least twice same dimension to remove.");
        s->axes[k] = (int)v[k];
    }
    s->naxes = n;
    if (st == SL_OK && names) snprintf(s->names, sizeof s->names, "%s", names);
    if (st == SL_OK && !expand && (n > 0) == (s->names[0] != 0))
        st = sl_err_set(err, SL_EINVAL, "%s: give axes or axis_names (one of them)%s", s->name,
                        n > 0 ? ": Provided both ``axes`` and ``axis_names`` arguments" : "");
    if (st != SL_OK) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status squeeze_create(const sl__args *a, const sl__op_init *init, void **out,
                                sl_err *err) {
    (void)init;
    return dims_create_as(a, false, out, err);
}

static sl_status expand_create(const sl__args *a, const sl__op_init *init, void **out,
                               sl_err *err) {
    (void)init;
    return dims_create_as(a, true, out, err);
}

static sl_status dims_setup(void *state, sl__op_io *io, sl_err *err) {
    dims_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    bool mark[SL_MAX_DIMS] = {false}; /* squeeze: input dims removed; expand: output dims new */
    int on = s->expand ? nd + s->naxes : nd;
    if (on > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "%s: %d dims (at most %d)", s->name, on, SL_MAX_DIMS);
    if (!s->expand && s->names[0]) {
        for (const char *c = s->names; *c; c++) {
            const char *at = strchr(in->layout, *c);
            if (!at)
                return sl_err_set(err, SL_EINVAL,
                                  "%s: axis '%c' is not in the layout \"%s\": Axis '%c' is not "
                                  "present in the input layout",
                                  s->name, *c, in->layout, *c);
            mark[at - in->layout] = true;
        }
    } else {
        for (int k = 0; k < s->naxes; k++) {
            if (s->axes[k] >= (s->expand ? on : nd))
                return sl_err_set(err, SL_EINVAL, "%s: axis %d, but the %s has %d dims%s", s->name,
                                  s->axes[k], s->expand ? "output" : "input", s->expand ? on : nd,
                                  s->expand ? ": Data has not enough dimensions to add new axes at "
                                              "specified indices."
                                            : "");
            mark[s->axes[k]] = true;
        }
    }
    if (!s->expand) {
        on = 0;
        for (int d = 0; d < nd; d++) on += !mark[d];
    }
    SL_TRY(sl_tlist_reset(io->out[0], io->batch, in->dtype, on, in->device, err));
    for (int i = 0; i < io->batch; i++) {
        const int64_t *ish = sl_tlist_shape(in, i);
        int64_t sh[SL_MAX_DIMS];
        int o = 0;
        if (s->expand) {
            for (int j = 0; o < on; o++) sh[o] = mark[o] ? 1 : ish[j++];
        } else {
            /* as DALI: a removed dim has extent 1, or the sample has no elements either way */
            int64_t vin = 1, vout = 1;
            int bad = -1;
            for (int d = 0; d < nd; d++) {
                vin *= ish[d];
                if (!mark[d])
                    vout *= (sh[o++] = ish[d]);
                else if (ish[d] != 1 && bad < 0)
                    bad = d;
            }
            if (bad >= 0 && vin != vout)
                return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                   "dim %d has extent %lld, not 1: Requested a shape with %lld "
                                   "elements but the original shape has %lld elements.",
                                   bad, (long long)ish[bad], (long long)vout, (long long)vin);
        }
        sl_tlist_set_external(io->out[0], i, in->data[i], sh);
    }
    /* the layout: the kept letters, with the new ones inserted (or none) */
    char *lay = io->out[0]->layout;
    memset(lay, 0, sizeof io->out[0]->layout);
    size_t ll = strlen(in->layout);
    if (s->expand && s->names[0] && ll != (size_t)nd)
        return sl_err_set(err, SL_EINVAL,
                          "%s: new_axis_names \"%s\" needs an input with a layout of its %d dims "
                          "(it has \"%s\"): Specifying ``new_axis_names`` requires an input with "
                          "a proper layout.",
                          s->name, s->names, nd, in->layout);
    if (ll == (size_t)nd && (nd > 0 || (s->expand && s->names[0]))) {
        if (s->expand && s->names[0]) { /* the k-th name goes to the k-th axis given */
            char name_at[SL_MAX_DIMS];
            for (int k = 0; k < s->naxes; k++) name_at[s->axes[k]] = s->names[k];
            for (int o = 0, j = 0; o < on; o++) lay[o] = mark[o] ? name_at[o] : in->layout[j++];
        } else if (s->expand && s->naxes == 0) {
            memcpy(lay, in->layout, ll);
        } else if (!s->expand) {
            for (int d = 0, o = 0; d < nd; d++)
                if (!mark[d]) lay[o++] = in->layout[d];
        }
    }
    return SL_OK;
}

const sl__op_def sl__squeeze_op = {
    .name = "squeeze",
    .doc = "Removes dims of extent 1 (DALI's fn.squeeze); the data is not copied.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = squeeze_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY,
    .create = squeeze_create,
    .setup = dims_setup,
    .destroy = free,
};

const sl__op_def sl__expand_dims_op = {
    .name = "expand_dims",
    .doc = "Inserts dims of extent 1 (DALI's fn.expand_dims); the data is not copied.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = expand_args,
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .flags = SL_OPF_NOCOPY,
    .create = expand_create,
    .setup = dims_setup,
    .destroy = free,
};
