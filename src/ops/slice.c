/* SPDX-License-Identifier: Apache-2.0 */
/* slice: a window of each sample, as DALI's fn.slice. The window is given per sample either by two
 * extra inputs, anchor and shape of one type (floating ones normalized to the extent unless
 * normalized_anchor / normalized_shape say otherwise; integer ones always absolute), or by the
 * named arguments start / rel_start and one of end / rel_end / shape / rel_shape (each a list or a
 * per-sample input); they apply to the dimensions `axis_names` names in the input's layout (default
 * "WH"), or, when only `axes` is given, to those dimensions (negative ones count from the back).
 * Dimensions not named keep their whole extent. Coordinates are rounded as DALI rounds them: with
 * both anchor and shape normalized, end = round((anchor + shape) * extent) and start = round(anchor
 * * extent); otherwise each is scaled first and rounded. A window that leaves the input is an error
 * (out_of_bounds_policy="error"), is padded with fill_values ("pad": one value, or one per channel
 * along the layout's 'C', else the last dimension), or is cut to the input ("trim_to_shape").
 * `dtype` converts the result (ConvertSat rules). CPU and CUDA runs share the element rule of
 * ops/slice.h. */
#include "ops/slice.h"
#include "ops/slice_window.h"
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema slice_args[] = {
    {"axes", SL_ARG_INTS, "[1, 0]",
     "dimensions the window's coordinates apply to (per sample too; an empty one: every dim)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"axis_names", SL_ARG_STR, "\"WH\"",
     "layout names of the dimensions the coordinates apply to (wins over axes)", 0, NULL},
    {"normalized_anchor", SL_ARG_BOOL, "True", "the anchor input is a fraction of the extent", 0,
     NULL},
    {"normalized_shape", SL_ARG_BOOL, "True", "the shape input is a fraction of the extent", 0,
     NULL},
    {"start", SL_ARG_FLOATS, "None", "window start, absolute", SL_ARGF_PER_SAMPLE, NULL},
    {"rel_start", SL_ARG_FLOATS, "None", "window start, a fraction of the extent",
     SL_ARGF_PER_SAMPLE, NULL},
    {"end", SL_ARG_FLOATS, "None", "window end (exclusive), absolute", SL_ARGF_PER_SAMPLE, NULL},
    {"rel_end", SL_ARG_FLOATS, "None", "window end, a fraction of the extent", SL_ARGF_PER_SAMPLE,
     NULL},
    {"shape", SL_ARG_FLOATS, "None", "window shape, absolute", SL_ARGF_PER_SAMPLE, NULL},
    {"rel_shape", SL_ARG_FLOATS, "None", "window shape, a fraction of the extent",
     SL_ARGF_PER_SAMPLE, NULL},
    {"out_of_bounds_policy", SL_ARG_ENUM, "\"error\"",
     "a window outside the input: error, pad (with fill_values) or trim_to_shape", 0,
     "error|pad|trim_to_shape"},
    {"fill_values", SL_ARG_FLOATS, "[0.0]", "padding value, or one per channel", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {"image_type", SL_ARG_ENUM, "None",
     "DALI's older argument: the input's colour type; a channel-last input's channel count (GRAY "
     "1, RGB, BGR and YCbCr 3; ANY_DATA any) is checked",
     0, "RGB|BGR|GRAY|YCbCr|ANY_DATA"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { OOB_ERROR, OOB_PAD, OOB_TRIM };
enum { N_START, N_REL_START, N_END, N_REL_END, N_SHAPE, N_REL_SHAPE, N_COUNT };
static const char *const named[N_COUNT] = {"start",   "rel_start", "end",
                                           "rel_end", "shape",     "rel_shape"};

typedef struct slice_state {
    const char *opname; /* "slice", or "decoders.image_slice" (slice_window.h) */
    int naxes;
    int node_axes; /* axes given per sample (a tensor), or -1 */
    int axes[SL_MAX_DIMS];
    char axis_names[SL_MAX_DIMS + 1]; /* "" when axes are given by number */
    bool norm_anchor, norm_shape;
    int oob;
    int nfill;
    double fill[SL__SLICE_MAX_FILL];
    bool has_dtype;
    sl_dtype dtype;
    int want_c; /* image_type's channel count (0: any) */
    /* named window arguments: given, per-sample input node (or -1), and the literal list */
    bool given[N_COUNT];
    int node[N_COUNT];
    int nlit[N_COUNT];
    double lit[N_COUNT][SL_MAX_DIMS];
    sl__slice_desc *desc; /* per sample, filled by setup */
    int cap;
    sl__gpu_args gpu;
} slice_state;

static void slice_destroy(void *state) {
    slice_state *s = state;
    if (!s) return;
    free(s->desc);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status create_as(const sl__args *a, const char *opname, void **out, sl_err *err) {
    slice_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->opname = opname;
    sl_status st = SL_OK;
    /* DALI: axis_names when given, or when neither is; axes only when given alone */
    s->node_axes = sl__args_node(a, "axes");
    if (s->node_axes >= 0 && !sl__args_given(a, "axis_names")) {
        s->naxes = -1; /* each sample's own */
    } else if (sl__args_given(a, "axes") && !sl__args_given(a, "axis_names")) {
        const int64_t *ax;
        s->naxes = sl__args_ints(a, "axes", &ax);
        if (s->naxes > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: axes: %d axes, at most %d", s->opname, s->naxes,
                            SL_MAX_DIMS);
        for (int k = 0; st == SL_OK && k < s->naxes; k++) {
            if (ax[k] < -SL_MAX_DIMS || ax[k] >= SL_MAX_DIMS)
                st = sl_err_set(err, SL_EINVAL, "%s: axes: %lld is no dimension", s->opname,
                                (long long)ax[k]);
            s->axes[k] = (int)ax[k];
            for (int j = 0; st == SL_OK && j < k; j++)
                if (s->axes[j] == s->axes[k])
                    st = sl_err_set(err, SL_EINVAL, "%s: axes: %d is named twice", s->opname,
                                    s->axes[k]);
        }
    } else {
        const char *names = sl__args_str(a, "axis_names");
        size_t len = names ? strlen(names) : 0;
        if (len > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: axis_names \"%s\": more than %d names", s->opname,
                            names, SL_MAX_DIMS);
        else {
            memcpy(s->axis_names, names ? names : "", len + 1);
            s->naxes = (int)len;
            for (size_t k = 0; st == SL_OK && k < len; k++)
                if (strchr(s->axis_names + k + 1, s->axis_names[k]))
                    st = sl_err_set(err, SL_EINVAL, "%s: axis_names \"%s\" names '%c' twice",
                                    s->opname, names, s->axis_names[k]);
        }
    }
    s->norm_anchor = sl__args_bool(a, "normalized_anchor");
    s->norm_shape = sl__args_bool(a, "normalized_shape");
    /* decoders.image_slice has no policy (windows must lie inside), fill or dtype */
    const char *oob =
        sl__args_has(a, "out_of_bounds_policy") ? sl__args_str(a, "out_of_bounds_policy") : "error";
    s->oob = !strcmp(oob, "pad") ? OOB_PAD : !strcmp(oob, "trim_to_shape") ? OOB_TRIM : OOB_ERROR;
    static const double zero = 0;
    const double *fv = &zero;
    s->nfill = sl__args_has(a, "fill_values") ? sl__args_floats(a, "fill_values", &fv) : 1;
    if (st == SL_OK && (s->nfill < 1 || s->nfill > SL__SLICE_MAX_FILL))
        st = sl_err_set(err, SL_EINVAL, "%s: fill_values: %d values (1 to %d)", s->opname, s->nfill,
                        SL__SLICE_MAX_FILL);
    else if (st == SL_OK)
        memcpy(s->fill, fv, (size_t)s->nfill * sizeof *fv);
    s->has_dtype = sl__args_has(a, "dtype") && sl__args_get(a, "dtype")->kind != SL_VAL_NONE;
    if (s->has_dtype) s->dtype = sl__args_dtype(a, "dtype");
    if (sl__args_has(a, "image_type") && sl__args_given(a, "image_type")) {
        const char *it = sl__args_str(a, "image_type");
        s->want_c = !strcmp(it, "GRAY") ? 1 : !strcmp(it, "ANY_DATA") ? 0 : 3;
    }
    for (int k = 0; k < N_COUNT; k++) {
        s->node[k] = sl__args_node(a, named[k]);
        s->given[k] = s->node[k] >= 0 || sl__args_get(a, named[k])->kind != SL_VAL_NONE;
        if (s->given[k] && s->node[k] < 0) {
            const double *v;
            int n = sl__args_floats(a, named[k], &v);
            if (st == SL_OK && s->naxes >= 0 && n != s->naxes)
                st = sl_err_set(err, SL_EINVAL, "%s: %s has %d values for %d axes", s->opname,
                                named[k], n, s->naxes);
            for (int j = 0; j < n && j < SL_MAX_DIMS; j++) s->lit[k][j] = v[j];
            s->nlit[k] = n;
        }
    }
    if (st == SL_OK && s->given[N_START] && s->given[N_REL_START])
        st = sl_err_set(err, SL_EINVAL, "%s: give start or rel_start, not both", s->opname);
    int ends = s->given[N_END] + s->given[N_REL_END] + s->given[N_SHAPE] + s->given[N_REL_SHAPE];
    if (st == SL_OK && ends > 1)
        st = sl_err_set(err, SL_EINVAL,
                        "%s: \"end\", \"rel_end\", \"shape\", and \"rel_shape\" arguments are "
                        "mutually exclusive (give one)",
                        s->opname);
    if (st != SL_OK) {
        slice_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status slice_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    return create_as(a, "slice", out, err);
}

/* The values of named argument k for sample i (naxes of them). */
static sl_status named_values(const slice_state *s, const sl__op_io *io, int k, int i, double *v,
                              int na, sl_err *err) {
    if (s->node[k] < 0) {
        if (s->nlit[k] != na)
            return sl__op_fail(err, SL_EINVAL, io, i, s->opname, "%s has %d values for %d axes",
                               named[k], s->nlit[k], na);
        memcpy(v, s->lit[k], (size_t)na * sizeof *v);
        return SL_OK;
    }
    int n = sl__argin_values(io, s->node[k], i, v, SL_MAX_DIMS);
    if (n != na)
        return sl__op_fail(err, SL_EINVAL, io, i, s->opname, "%s has %d values for %d axes",
                           named[k], n, na);
    return SL_OK;
}

/* Sample i's window: d->anchor and d->out_shape over the input's shape. */
static sl_status window(slice_state *s, const sl__op_io *io, int i, const int64_t *sh, int nd,
                        const char *layout, sl__slice_desc *d, sl_err *err) {
    d->ndim = nd;
    for (int k = 0; k < nd; k++) d->in_shape[k] = d->out_shape[k] = sh[k], d->anchor[k] = 0;
    int dims[SL_MAX_DIMS], na = s->naxes, ax[SL_MAX_DIMS];
    memcpy(ax, s->axes, sizeof ax);
    if (s->node_axes >= 0 && !s->axis_names[0]) { /* this sample's axes; none: every dim */
        double v[SL_MAX_DIMS];
        int n = sl__argin_values(io, s->node_axes, i, v, SL_MAX_DIMS);
        if (n < 0 || n > SL_MAX_DIMS)
            return sl__op_fail(err, SL_EINVAL, io, i, s->opname, "axes: %d values (at most %d)", n,
                               SL_MAX_DIMS);
        na = n ? n : nd;
        for (int k = 0; k < na; k++) {
            if (n && !(v[k] == floor(v[k]) && fabs(v[k]) <= SL_MAX_DIMS)) /* before the cast */
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                   "axes: %g is not an axis of a %dD input", v[k], nd);
            ax[k] = n ? (int)v[k] : k;
        }
    }
    for (int k = 0; k < na; k++) {
        if (s->axis_names[0]) {
            const char *at = strchr(layout, s->axis_names[k]);
            if (!at || !layout[0])
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                   "axis_names \"%s\": '%c' is not in the input's layout \"%s\" "
                                   "(give the layout, or axes)",
                                   s->axis_names, s->axis_names[k], layout);
            dims[k] = (int)(at - layout);
        } else {
            int a = ax[k] < 0 ? ax[k] + nd : ax[k];
            if (a < 0 || a >= nd)
                return sl__op_fail(
                    err, SL_EINVAL, io, i, s->opname,
                    "Axis %d out of range. Expected range is [%d, %d] for a %dD input", ax[k], -nd,
                    nd - 1, nd);
            dims[k] = a;
        }
    }
    double a[SL_MAX_DIMS], b[SL_MAX_DIMS];
    if (io->num_inputs == 3) {
        /* DALI: integer anchors and shapes are absolute whatever normalized_* say */
        if (io->in[1]->dtype != io->in[2]->dtype)
            return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                               "the anchor (%s) and shape (%s) inputs must have the same type",
                               sl_dtype_name(io->in[1]->dtype), sl_dtype_name(io->in[2]->dtype));
        bool fl = sl_dtype_is_float(io->in[1]->dtype);
        bool norm_anchor = fl && s->norm_anchor, norm_shape = fl && s->norm_shape;
        for (int j = 1; j < 3; j++) {
            const sl_tlist *l = io->in[j];
            int64_t n = (int64_t)(sl_tlist_sample_nbytes(l, i) / sl_dtype_size(l->dtype));
            if (n != na)
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                   "the %s input has %lld values for %d axes",
                                   j == 1 ? "anchor" : "shape", (long long)n, na);
            for (int k = 0; k < na; k++)
                (j == 1 ? a : b)[k] = sl__dtype_conv_load(l->data[i], l->dtype, k);
        }
        for (int k = 0; k < na; k++) {
            double ext = (double)sh[dims[k]], av = a[k], bv = b[k];
            int64_t end;
            double endv;
            if (norm_anchor && norm_shape) {
                endv = (av + bv) * ext;
                av *= ext;
            } else {
                if (norm_anchor) av *= ext;
                if (norm_shape) bv *= ext;
                endv = av + bv;
            }
            if (!isfinite(av) || !isfinite(endv) || fabs(av) > 9e18 || fabs(endv) > 9e18)
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                   "the window of axis %d is not finite", dims[k]);
            if (endv < av)
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                   "the window of dimension %d ends (%g) before it starts (%g)",
                                   dims[k], endv, av);
            end = llround(endv);
            d->anchor[dims[k]] = llround(av);
            d->out_shape[dims[k]] = end - d->anchor[dims[k]];
        }
    } else {
        double v[N_COUNT][SL_MAX_DIMS];
        for (int k = 0; k < N_COUNT; k++)
            if (s->given[k]) SL_TRY(named_values(s, io, k, i, v[k], na, err));
        for (int k = 0; k < na; k++) {
            double ext = (double)sh[dims[k]];
            double start = s->given[N_START]       ? v[N_START][k]
                           : s->given[N_REL_START] ? v[N_REL_START][k] * ext
                                                   : 0;
            /* rel_start with rel_shape: one product of the sum, as DALI rounds it */
            double end =
                s->given[N_END]       ? v[N_END][k]
                : s->given[N_REL_END] ? v[N_REL_END][k] * ext
                : s->given[N_SHAPE]   ? start + v[N_SHAPE][k]
                : s->given[N_REL_SHAPE]
                    ? (s->given[N_REL_START] ? (v[N_REL_START][k] + v[N_REL_SHAPE][k]) * ext
                                             : start + v[N_REL_SHAPE][k] * ext)
                    : ext;

            if (!isfinite(start) || !isfinite(end) || fabs(start) > 9e18 || fabs(end) > 9e18)
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                   "the window of axis %d is not finite", dims[k]);
            d->anchor[dims[k]] = llround(start);
            d->out_shape[dims[k]] = llround(end) - d->anchor[dims[k]];
        }
    }
    for (int k = 0; k < na; k++) {
        int dim = dims[k];
        int64_t an = d->anchor[dim], len = d->out_shape[dim], ext = sh[dim];
        if (len < 0)
            return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                               "the window of dimension %d has a negative extent (%lld)", dim,
                               (long long)len);
        bool outside = an < 0 || an > ext || len > ext - an;
        if (!outside) continue;
        if (s->oob == OOB_ERROR)
            return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                               "Slice can't be placed out of bounds with current policy. Got: "
                               "the window [%lld, %lld) of dimension %d, the input's extent %lld "
                               "(out_of_bounds_policy=\"pad\" or \"trim_to_shape\" allow it)",
                               (long long)an, (long long)(an + len), dim, (long long)ext);
        if (s->oob == OOB_TRIM) {
            int64_t lo = an < 0 ? 0 : an > ext ? ext : an;
            int64_t hi = len > ext - an ? ext : an + len;
            if (hi < lo) hi = lo;
            d->anchor[dim] = lo;
            d->out_shape[dim] = hi - lo;
        }
    }
    d->chan = -1;
    d->nfill = s->nfill;
    memcpy(d->fill, s->fill, (size_t)s->nfill * sizeof *s->fill);
    if (s->nfill > 1) {
        const char *c = strchr(layout, 'C');
        d->chan = c && layout[0] ? (int)(c - layout) : nd - 1;
        if (nd == 0 || d->out_shape[d->chan] > s->nfill)
            return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                               "fill_values has %d values for %lld channels", s->nfill,
                               nd ? (long long)d->out_shape[d->chan] : 0LL);
    }
    d->n = 1;
    for (int k = 0; k < nd; k++) d->n *= d->out_shape[k];
    return SL_OK;
}

static sl_status slice_setup(void *state, sl__op_io *io, sl_err *err) {
    slice_state *s = state;
    const sl_tlist *in = io->in[0];
    if (io->num_inputs == 2)
        return sl_err_set(err, SL_EINVAL, "slice: give both anchor and shape inputs, or neither");
    bool has_named = false;
    for (int k = 0; k < N_COUNT; k++) has_named |= s->given[k];
    if (io->num_inputs == 3 && has_named)
        return sl_err_set(err, SL_EINVAL,
                          "slice: the window is given twice: anchor and shape inputs, and %s",
                          s->given[N_START] ? "start" : "named arguments");
    for (int j = 1; j < io->num_inputs; j++)
        if (io->in[j]->device.kind != SL_DEVICE_CPU)
            return sl_err_set(err, SL_EINVAL,
                              "slice: the %s input must be on the CPU (on the GPU, give the window "
                              "as start/shape arguments)",
                              j == 1 ? "anchor" : "shape");
    size_t ll = strlen(in->layout);
    if (s->want_c && ll == (size_t)in->ndim && ll && in->layout[ll - 1] == 'C')
        for (int i = 0; i < io->batch; i++)
            if (sl_tlist_shape(in, i)[ll - 1] != s->want_c)
                return sl__op_fail(err, SL_EINVAL, io, i, s->opname,
                                   "image_type wants %d channel%s, the input has %lld", s->want_c,
                                   s->want_c == 1 ? "" : "s",
                                   (long long)sl_tlist_shape(in, i)[ll - 1]);
    if (io->batch > s->cap) {
        sl__slice_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "slice: out of memory");
        s->desc = d, s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    sl_dtype ot = s->has_dtype ? s->dtype : in->dtype;
    SL_TRY(sl_tlist_reset(out, io->batch, ot, in->ndim, io->device, err));
    int64_t *shapes =
        sl__malloc((size_t)io->batch * (size_t)(in->ndim ? in->ndim : 1) * sizeof(int64_t), err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        st = window(s, io, i, sl_tlist_shape(in, i), in->ndim, in->layout, &s->desc[i], err);
        memcpy(shapes + (size_t)i * (size_t)in->ndim, s->desc[i].out_shape,
               (size_t)in->ndim * sizeof(int64_t));
    }
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memcpy(out->layout, in->layout, sizeof out->layout);
    for (int i = 0; i < io->batch; i++) {
        s->desc[i].in = in->data[i];
        s->desc[i].out = out->data[i];
    }
    return SL_OK;
}

/* Sample i, row by row along the last dimension: the part inside the input copied (or
 * converted), the rest filled. */
static sl_status slice_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    slice_state *s = state;
    const sl__slice_desc *d = &s->desc[i];
    sl_dtype it = io->in[0]->dtype, ot = io->out[0]->dtype;
    size_t es = sl_dtype_size(it), os = sl_dtype_size(ot);
    (void)worker, (void)err;
    if (d->n == 0) return SL_OK;
    if (d->ndim == 0) {
        if (it == ot)
            memcpy(d->out, d->in, es);
        else
            sl__dtype_conv_store(d->out, ot, 0, sl__dtype_conv_load(d->in, it, 0));
        return SL_OK;
    }
    int last = d->ndim - 1;
    int64_t w = d->out_shape[last], rows = d->n / w;
    int64_t a = d->anchor[last], iw = d->in_shape[last];
    int64_t lo = a < 0 ? -a : 0; /* output columns [lo, hi) lie inside the input */
    int64_t hi = iw - a < w ? iw - a : w;
    if (hi < lo) hi = lo;
    for (int64_t r = 0; r < rows; r++) {
        int64_t e0 = r * w;
        int f;
        /* the row's source: that of its first column shifted to column lo */
        int64_t rem = r, src = 0, stride = d->in_shape[last];
        bool inside = true;
        for (int k = last - 1; k >= 0; k--) {
            int64_t o = rem % d->out_shape[k];
            rem /= d->out_shape[k];
            int64_t x = d->anchor[k] + o;
            if (x < 0 || x >= d->in_shape[k]) inside = false;
            src += x * stride;
            stride *= d->in_shape[k];
        }
        int64_t from = inside ? lo : w, to = inside ? hi : w;
        for (int64_t c = 0; c < w; c++) {
            if (c == from && to > from) {
                int64_t sx = src + a + from;
                if (it == ot)
                    memcpy((char *)d->out + (size_t)(e0 + from) * os,
                           (const char *)d->in + (size_t)sx * es, (size_t)(to - from) * es);
                else
                    for (int64_t k = 0; k < to - from; k++)
                        sl__dtype_conv_store(d->out, ot, e0 + from + k,
                                             sl__dtype_conv_load(d->in, it, sx + k));
                c = to - 1;
                continue;
            }
            (void)sl__slice_source(d, e0 + c, &f);
            sl__dtype_conv_store(d->out, ot, e0 + c, d->fill[f]);
        }
    }
    return SL_OK;
}

/* ---- the window alone, for decoders.image_slice (slice_window.h) ---------------------------- */

sl_status sl__slice_window_create(const sl__args *a, const char *opname, void **state,
                                  sl_err *err) {
    return create_as(a, opname, state, err);
}

void sl__slice_window_destroy(void *state) {
    slice_destroy(state);
}

sl_status sl__slice_window_check(void *state, const sl__op_io *io, sl_err *err) {
    slice_state *s = state;
    if (io->num_inputs == 2)
        return sl_err_set(err, SL_EINVAL, "%s: give both anchor and shape inputs, or neither",
                          s->opname);
    bool has_named = false;
    for (int k = 0; k < N_COUNT; k++) has_named |= s->given[k];
    if (io->num_inputs == 3 && has_named)
        return sl_err_set(err, SL_EINVAL,
                          "%s: the window is given twice: anchor and shape inputs, and named "
                          "arguments",
                          s->opname);
    return SL_OK;
}

sl_status sl__slice_window_sample(void *state, const sl__op_io *io, int i, const int64_t *shape,
                                  int ndim, const char *layout, int64_t *anchor, int64_t *extent,
                                  sl_err *err) {
    slice_state *s = state;
    sl__slice_desc d;
    SL_TRY(window(s, io, i, shape, ndim, layout, &d, err));
    memcpy(anchor, d.anchor, (size_t)ndim * sizeof *anchor);
    memcpy(extent, d.out_shape, (size_t)ndim * sizeof *extent);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status slice_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    slice_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__slice_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].n > maxn) maxn = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_slice(dd, io->batch, maxn, io->in[0]->dtype, io->out[0]->dtype, io->stream,
                          err);
}
#endif

const sl__op_def sl__slice_op = {
    .name = "slice",
    .doc = "A window of each sample: anchor and shape inputs, or start/end/shape arguments, "
           "absolute or relative, on the axes named; out-of-bounds windows error, pad or trim.",
    .min_inputs = 1,
    .max_inputs = 3,
    .args = slice_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = slice_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = slice_create,
    .setup = slice_setup,
    .run_cpu = slice_run_cpu,
    .destroy = slice_destroy,
};
