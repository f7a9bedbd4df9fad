/* SPDX-License-Identifier: Apache-2.0 */
/* tensor_resize (DALI's fn.experimental.tensor_resize): resamples any tensor of 1 to 8 dims along
 * chosen axes (`axes`, negative from the back, or `axis_names` from the layout; default all) to
 * `sizes`, or to `scales` times the input's extents rounded by `size_rounding` (round half away
 * from zero, truncate, ceil). The sizes are met as resize meets them (`mode`, `max_size`, in
 * DALI's float steps: sl__resize_adjust), over the named axes only; `roi_start` / `roi_end`
 * (`roi_relative`) pick the input window, reversed to flip an axis (as is a negative size). With
 * `subpixel_scale`, an output size that had to be rounded keeps the scale asked for: the window is
 * scaled by the rounding about its point (1 - alignment) * start + alignment * end (alignment 0:
 * the start stays put, 0.5 the centre, 1 the end). Every argument but the axes may be given per
 * sample. The filters are resize's (interp_type, min_filter, mag_filter, antialias; their taps
 * from sl__resize_taps), and so is the resampling: one separable pass per resized axis, each
 * output the sum of its taps in order in float, shrinking axes first, so that no intermediate
 * exceeds the larger of the input and the output. Axes left as they are take no pass. */
#include "ops/resize_int.h"
#include "operator/argin.h"
#include "operator/dtype_conv.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/resize.h"
#endif

#define TR_MAX SL_MAX_DIMS

// clang-format off
static const sl__arg_schema tr_args[] = {
    {"sizes", SL_ARG_FLOATS, "None",
     "output sizes of the axes (0: left to the mode); exclusive with scales", SL_ARGF_PER_SAMPLE,
     NULL},
    {"scales", SL_ARG_FLOATS, "None",
     "scale factors of the axes: output size = size_rounding(scale * input size)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"axes", SL_ARG_INTS, "None",
     "the dims sizes, scales, roi_start, roi_end, max_size and alignment refer to (negative: "
     "from the back; default: all); exclusive with axis_names", 0, NULL},
    {"axis_names", SL_ARG_STR, "None", "those dims by layout letter; exclusive with axes", 0,
     NULL},
    {"size_rounding", SL_ARG_ENUM, "\"round\"",
     "rounding of a size from scales: round (half away from zero), truncate or ceil", 0,
     "round|truncate|ceil"},
    {"alignment", SL_ARG_FLOATS, "[0.5]",
     "per axis (or one for all), the window's point kept in place when a rounded size rescales "
     "the window: 0 its start, 0.5 its centre, 1 its end", SL_ARGF_PER_SAMPLE, NULL},
    {"roi_start", SL_ARG_FLOATS, "None", "the input window's start per axis (default 0)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"roi_end", SL_ARG_FLOATS, "None",
     "the input window's end per axis (default the extent); below roi_start: the axis flipped",
     SL_ARGF_PER_SAMPLE, NULL},
    {"roi_relative", SL_ARG_BOOL, "False", "roi_start and roi_end as fractions of the extents", 0,
     NULL},
    {"mode", SL_ARG_ENUM, "\"default\"",
     "as resize's: default, stretch, not_larger, not_smaller (those two not with scales)", 0,
     "default|stretch|not_larger|not_smaller"},
    {"max_size", SL_ARG_FLOATS, "None", "the largest output size per axis, or one for all", 0,
     NULL},
    {"subpixel_scale", SL_ARG_BOOL, "True",
     "a rounded output size keeps the scale asked for (the window rescaled about its alignment "
     "point)", 0, NULL},
    RESIZE_FILTER_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};
// clang-format on

/* sample i's plan: output extents, and per dim the input window [lo, lo + len) (len < 0:
 * flipped); the passes' dims in order */
typedef struct tr_plan {
    int64_t out[TR_MAX];
    double lo[TR_MAX], len[TR_MAX];
    int pass[TR_MAX], npass;
} tr_plan;

typedef struct tr_state {
    resize_state rs; /* the filters and antialias the taps read, the scratch */
    int64_t axes[TR_MAX];
    int naxes;              /* -1: all dims */
    char names[TR_MAX + 1]; /* axis_names, or "" */
    bool scales, has_roi, rel, subpixel;
    int rounding; /* 0 round, 1 truncate, 2 ceil */
    float max_size[TR_MAX];
    int nmax;
    tr_plan *plan;
    int plan_cap;
} tr_state;

static void tr_destroy(void *state) {
    tr_state *t = state;
    if (!t) return;
    free(t->plan);
    sl__gpu_args_free(&t->rs.gpu);
    sl__gpu_scratch_free(&t->rs.gpu_tmp);
    sl__worker_scratch_free(&t->rs.scratch);
    free(t->rs.out_hw), free(t->rs.roi), free(t->rs.filters), free(t->rs.vol_out),
        free(t->rs.vol_roi);
    free(t);
}

static sl_status tr_args_check(tr_state *t, const sl__args *a, sl_err *err) {
    const char *nm = t->rs.name;
    bool sizes = sl__args_given(a, "sizes") &&
                 (sl__args_node(a, "sizes") >= 0 || sl__args_get(a, "sizes")->kind != SL_VAL_NONE);
    t->scales = sl__args_given(a, "scales") &&
                (sl__args_node(a, "scales") >= 0 || sl__args_get(a, "scales")->kind != SL_VAL_NONE);
    if (sizes == t->scales)
        return sl_err_set(err, SL_EINVAL, "%s: give one of sizes or scales (not both)", nm);
    bool rs = sl__args_node(a, "roi_start") >= 0 ||
              sl__args_get(a, "roi_start")->kind != SL_VAL_NONE,
         re = sl__args_node(a, "roi_end") >= 0 || sl__args_get(a, "roi_end")->kind != SL_VAL_NONE;
    if (rs != re) return sl_err_set(err, SL_EINVAL, "%s: roi_start and roi_end go together", nm);
    t->has_roi = rs, t->rel = sl__args_bool(a, "roi_relative");
    const char *m = sl__args_str(a, "mode");
    t->rs.mode = !strcmp(m, "stretch")       ? MODE_STRETCH
                 : !strcmp(m, "not_larger")  ? MODE_NOT_LARGER
                 : !strcmp(m, "not_smaller") ? MODE_NOT_SMALLER
                                             : MODE_DEFAULT;
    if (t->scales && (t->rs.mode == MODE_NOT_LARGER || t->rs.mode == MODE_NOT_SMALLER))
        return sl_err_set(err, SL_EINVAL, "%s: mode %s does not go with scales (give sizes)", nm,
                          m);
    const char *r = sl__args_str(a, "size_rounding");
    t->rounding = !strcmp(r, "truncate") ? 1 : !strcmp(r, "ceil") ? 2 : 0;
    t->subpixel = sl__args_bool(a, "subpixel_scale");
    if (!t->subpixel && sl__args_given(a, "alignment"))
        return sl_err_set(err, SL_EINVAL,
                          "%s: alignment places the window that subpixel_scale rescales; it "
                          "does nothing with subpixel_scale=False",
                          nm);
    bool axes = sl__args_given(a, "axes") && sl__args_get(a, "axes")->kind != SL_VAL_NONE;
    const char *names = sl__args_str(a, "axis_names");
    if (axes && names)
        return sl_err_set(err, SL_EINVAL, "%s: give axes or axis_names, not both", nm);
    t->naxes = -1;
    if (names) {
        size_t len = strlen(names);
        if (len < 1 || len > TR_MAX)
            return sl_err_set(err, SL_EINVAL, "%s: axis_names \"%s\": 1 to %d names", nm, names,
                              TR_MAX);
        memcpy(t->names, names, len + 1);
        t->naxes = (int)len;
    } else if (axes) {
        const int64_t *v;
        int n = sl__args_ints(a, "axes", &v);
        if (n < 1 || n > TR_MAX)
            return sl_err_set(err, SL_EINVAL, "%s: axes: 1 to %d dims, not %d", nm, TR_MAX, n);
        for (int k = 0; k < n; k++) t->axes[k] = v[k];
        t->naxes = n;
    }
    if (sl__args_get(a, "max_size")->kind != SL_VAL_NONE) {
        const double *v;
        int n = sl__args_floats(a, "max_size", &v);
        if (n < 1 || n > TR_MAX)
            return sl_err_set(err, SL_EINVAL, "%s: max_size: one limit per axis, or one for all",
                              nm);
        for (int k = 0; k < n; k++) {
            if (!(v[k] >= 0 && v[k] <= 1e9))
                return sl_err_set(err, SL_EINVAL, "%s: max_size = %g: a size from 0 (none) to 1e9",
                                  nm, v[k]);
            t->max_size[k] = (float)v[k];
        }
        t->nmax = n;
    }
    if (sl__args_int(a, "minibatch_size") < 1)
        return sl_err_set(err, SL_EINVAL, "%s: minibatch_size = %lld: a positive count", nm,
                          (long long)sl__args_int(a, "minibatch_size"));
    if (sl__args_int(a, "temp_buffer_hint") < 0)
        return sl_err_set(err, SL_EINVAL, "%s: temp_buffer_hint = %lld: a byte count", nm,
                          (long long)sl__args_int(a, "temp_buffer_hint"));
    return SL_OK;
}

static sl_status tr_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    tr_state *t = sl__calloc(1, sizeof *t, err);
    if (!t) return SL_ENOMEM;
    t->rs.name = "tensor_resize";
    t->rs.args = a;
    t->rs.antialias = sl__args_bool(a, "antialias");
    t->rs.has_dtype = sl__args_get(a, "dtype")->kind != SL_VAL_NONE;
    if (t->rs.has_dtype) t->rs.dtype = sl__args_dtype(a, "dtype");
    sl_status st = tr_args_check(t, a, err);
    if (st == SL_OK) st = sl__worker_scratch_init(&t->rs.scratch, init->threads, err);
    if (st != SL_OK) {
        tr_destroy(t);
        return st;
    }
    *out = t;
    return SL_OK;
}

/* the dims the arguments refer to, for an input of nd dims and layout; *n of them */
static sl_status tr_axes(const tr_state *t, const sl_tlist *in, int *dims, int *n, sl_err *err) {
    int nd = in->ndim;
    if (t->naxes < 0) {
        for (int d = 0; d < nd; d++) dims[d] = d;
        *n = nd;
        return SL_OK;
    }
    for (int k = 0; k < t->naxes; k++) {
        int d;
        if (t->names[0]) {
            const char *at = strchr(in->layout, t->names[k]);
            if (!in->layout[0] || !at)
                return sl_err_set(err, SL_EINVAL,
                                  "%s: axis_names \"%s\": '%c' is not in the input's layout \"%s\"",
                                  t->rs.name, t->names, t->names[k], in->layout);
            d = (int)(at - in->layout);
        } else {
            int64_t v = t->axes[k];
            if (v < -nd || v >= nd)
                return sl_err_set(err, SL_EINVAL,
                                  "%s: axes: %lld is outside [-%d, %d] for an input of %d dims",
                                  t->rs.name, (long long)v, nd, nd - 1, nd);
            d = (int)(v < 0 ? v + nd : v);
        }
        for (int j = 0; j < k; j++)
            if (dims[j] == d)
                return sl_err_set(err, SL_EINVAL, "%s: dim %d named twice in the axes", t->rs.name,
                                  d);
        dims[k] = d;
    }
    *n = t->naxes;
    return SL_OK;
}

/* argument name's values for sample i: one per axis (one value: for all); *got 0 when absent */
static sl_status per_axis(const tr_state *t, const sl__op_io *io, const char *name, int i,
                          int naxes, double *v, int *got, sl_err *err) {
    int n;
    SL_TRY(sl__args_sample_floats(t->rs.args, io, t->rs.name, name, i, v, TR_MAX, &n, err));
    if (n == 1)
        for (int k = 1; k < naxes; k++) v[k] = v[0];
    else if (n != 0 && n != naxes)
        return sl__op_fail(err, SL_EINVAL, io, i, t->rs.name,
                           "%s has %d values for %d axes (give one per axis, or one for all)", name,
                           n, naxes);
    for (int k = 0; k < (n ? naxes : 0); k++)
        if (!(fabs(v[k]) <= 1e9)) /* (also NaN) */
            return sl__op_fail(err, SL_EINVAL, io, i, t->rs.name, "%s[%d] = %g: keep it within 1e9",
                               name, k, v[k]);
    *got = n;
    return SL_OK;
}

static int64_t round_size(int how, float v) {
    return how == 1 ? (int64_t)v : how == 2 ? (int64_t)ceilf(v) : (int64_t)llroundf(v);
}

/* sample i's plan p from its shape sh (nd dims) and the axes dims[na] */
static sl_status tr_plan_sample(tr_state *t, const sl__op_io *io, int i, const int64_t *sh, int nd,
                                const int *dims, int na, tr_plan *p, sl_err *err) {
    double req[TR_MAX], align[TR_MAX], r0[TR_MAX], r1[TR_MAX];
    int n;
    SL_TRY(per_axis(t, io, t->scales ? "scales" : "sizes", i, na, req, &n, err));
    if (n == 0)
        return sl__op_fail(err, SL_EINVAL, io, i, t->rs.name, "%s has no values",
                           t->scales ? "scales" : "sizes");
    SL_TRY(per_axis(t, io, "alignment", i, na, align, &n, err));
    if (n == 0)
        for (int k = 0; k < na; k++) align[k] = 0.5;
    if (t->has_roi) {
        SL_TRY(per_axis(t, io, "roi_start", i, na, r0, &n, err));
        SL_TRY(per_axis(t, io, "roi_end", i, na, r1, &n, err));
    }
    if (t->nmax > 1 && t->nmax != na)
        return sl_err_set(err, SL_EINVAL, "%s: max_size has %d values for %d axes", t->rs.name,
                          t->nmax, na);
    bool empty = false;
    for (int d = 0; d < nd; d++) {
        empty |= sh[d] == 0;
        p->out[d] = sh[d], p->lo[d] = 0, p->len[d] = (double)sh[d];
    }
    float in[TR_MAX], out[TR_MAX], mx[TR_MAX];
    double lo[TR_MAX], hi[TR_MAX];
    for (int k = 0; k < na; k++) { /* the window, made to run forward; the size then negated */
        double e = (double)sh[dims[k]];
        lo[k] = t->has_roi ? r0[k] * (t->rel ? e : 1) : 0;
        hi[k] = t->has_roi ? r1[k] * (t->rel ? e : 1) : e;
        out[k] = t->scales ? (float)req[k] * (float)e : (float)req[k];
        if (hi[k] < lo[k]) {
            double x = lo[k];
            lo[k] = hi[k], hi[k] = x, out[k] = -out[k];
        }
        in[k] = (float)(hi[k] - lo[k]);
        mx[k] = t->nmax ? t->max_size[t->nmax == 1 ? 0 : k] : 0;
    }
    sl__resize_adjust(t->rs.mode, in, out, mx, na);
    for (int k = 0; k < na; k++) {
        int d = dims[k];
        float want = fabsf(out[k]);
        if (!(want <= 1e9f)) /* (also NaN) */
            return sl__op_fail(err, SL_EINVAL, io, i, t->rs.name,
                               "dim %d: an output size of %g: sizes are up to 1e9", d,
                               (double)want);
        if (in[k] == 0 && want != 0)
            return sl__op_fail(err, SL_EINVAL, io, i, t->rs.name,
                               "dim %d: an empty window (%g to %g) cannot give %g outputs", d,
                               lo[k], hi[k], (double)want);
        int64_t o = round_size(t->rounding, want);
        if (o < (empty ? 0 : 1)) o = empty ? 0 : 1;
        if (out[k] < 0) { /* flipped */
            double x = lo[k];
            lo[k] = hi[k], hi[k] = x;
        }
        if (t->subpixel && (float)o != want && want > 0) {
            double adj = (double)o / (double)want;
            adj = adj > 10 ? 10 : adj;
            double c = (1.0 - align[k]) * lo[k] + align[k] * hi[k];
            lo[k] = c + (lo[k] - c) * adj, hi[k] = c + (hi[k] - c) * adj;
            lo[k] = lo[k] < -1e9 ? -1e9 : lo[k] > 1e9 ? 1e9 : lo[k];
            hi[k] = hi[k] < -1e9 ? -1e9 : hi[k] > 1e9 ? 1e9 : hi[k];
        }
        p->out[d] = o, p->lo[d] = lo[k], p->len[d] = hi[k] - lo[k];
    }
    /* the passes: dims whose output differs from the input, shrinking ones first */
    p->npass = 0;
    for (int d = nd - 1; d >= 0; d--)
        if (!empty && (p->out[d] != sh[d] || p->lo[d] != 0 || p->len[d] != (double)sh[d]))
            p->pass[p->npass++] = d;
    for (int a = 1; a < p->npass; a++) /* stable insertion sort by out / in */
        for (int b = a; b > 0; b--) {
            int x = p->pass[b - 1], y = p->pass[b];
            if ((double)p->out[y] * (double)sh[x] >= (double)p->out[x] * (double)sh[y]) break;
            p->pass[b - 1] = y, p->pass[b] = x;
        }
    return SL_OK;
}

static sl_status tr_setup(void *state, sl__op_io *io, sl_err *err) {
    tr_state *t = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim, dims[TR_MAX], na = 0;
    if (nd < 1)
        return sl_err_set(err, SL_EINVAL, "%s: takes tensors of 1 to %d dims, not scalars",
                          t->rs.name, TR_MAX);
    SL_TRY(tr_axes(t, in, dims, &na, err));
    SL_TRY(sl__resize_grow(&t->rs, io->batch, err));
    if (io->batch > t->plan_cap) {
        tr_plan *np = realloc(t->plan, (size_t)io->batch * sizeof *np);
        if (!np) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", t->rs.name);
        t->plan = np, t->plan_cap = io->batch;
    }
    int64_t *shapes =
        sl__malloc((size_t)(io->batch ? io->batch : 1) * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        st = sl__resize_sample_filters(&t->rs, io, i, err);
        if (st == SL_OK)
            st = tr_plan_sample(t, io, i, sl_tlist_shape(in, i), nd, dims, na, &t->plan[i], err);
        if (st == SL_OK)
            memcpy(shapes + (size_t)i * (size_t)nd, t->plan[i].out, (size_t)nd * sizeof *shapes);
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK)
        st = sl_tlist_reset(out, io->batch, t->rs.has_dtype ? t->rs.dtype : in->dtype, nd,
                            io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK) snprintf(out->layout, sizeof out->layout, "%s", in->layout);
    free(shapes);
    return st;
}

static int64_t clampi(int64_t v, int64_t n) {
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

/* One pass along a dim: src (outer, n, inner) of type it -> dst (outer, m, inner) of type ot,
 * output y the sum over its taps k of w[y * taps + k] * src[first[y] + k] (clamped into [0, n)),
 * in order, in float; acc: inner floats. */
static void axis_pass(const void *src, sl_dtype it, void *dst, sl_dtype ot, int64_t outer,
                      int64_t n, int64_t inner, int64_t m, const int64_t *first, const float *w,
                      int taps, float *acc) {
    for (int64_t o = 0; o < outer; o++)
        for (int64_t y = 0; y < m; y++) {
            for (int64_t j = 0; j < inner; j++) acc[j] = 0;
            for (int k = 0; k < taps; k++) {
                int64_t row = (o * n + clampi(first[y] + k, n)) * inner;
                float wk = w[y * taps + k];
                if (it == SL_DTYPE_F32) {
                    const float *s = (const float *)src + row;
                    for (int64_t j = 0; j < inner; j++) acc[j] += wk * s[j];
                } else {
                    for (int64_t j = 0; j < inner; j++)
                        acc[j] += wk * (float)sl__dtype_conv_load(src, it, row + j);
                }
            }
            int64_t base = (o * m + y) * inner;
            if (ot == SL_DTYPE_F32)
                memcpy((float *)dst + base, acc, (size_t)inner * sizeof *acc);
            else
                for (int64_t j = 0; j < inner; j++) sl__dtype_conv_store(dst, ot, base + j, acc[j]);
        }
}

/* the extents before pass q of plan p on a sample of shape sh (nd dims) into cur */
static void shape_before(const tr_plan *p, const int64_t *sh, int nd, int q, int64_t *cur) {
    memcpy(cur, sh, (size_t)nd * sizeof *cur);
    for (int k = 0; k < q; k++) cur[p->pass[k]] = p->out[p->pass[k]];
}

static int64_t span(const int64_t *cur, int from, int to) {
    int64_t v = 1;
    for (int d = from; d < to; d++) v *= cur[d];
    return v;
}

static sl_status tr_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    tr_state *t = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    const tr_plan *p = &t->plan[i];
    const int64_t *sh = sl_tlist_shape(in, i);
    int nd = in->ndim;
    int64_t n_out = span(p->out, 0, nd), n_in = span(sh, 0, nd);
    if (n_out == 0) return SL_OK;
    if (p->npass == 0) { /* nothing resampled: the input, converted to the output's type */
        if (in->dtype == out->dtype)
            memcpy(out->data[i], in->data[i], (size_t)n_in * sl_dtype_size(in->dtype));
        else
            for (int64_t k = 0; k < n_in; k++)
                sl__dtype_conv_store(out->data[i], out->dtype, k,
                                     sl__dtype_conv_load(in->data[i], in->dtype, k));
        return SL_OK;
    }
    /* scratch: two intermediates (the largest a pass but the last writes), the taps, a row */
    int64_t cur[TR_MAX], mid = 0, inner_max = 1, taps_max = 0, m_max = 0;
    for (int q = 0; q < p->npass; q++) {
        int d = p->pass[q];
        shape_before(p, sh, nd, q + 1, cur);
        if (q + 1 < p->npass && span(cur, 0, nd) > mid) mid = span(cur, 0, nd);
        int64_t inner = span(cur, d + 1, nd), tm = sl__resize_max_taps(p->len[d], p->out[d]);
        inner_max = inner > inner_max ? inner : inner_max;
        taps_max = p->out[d] * tm > taps_max ? p->out[d] * tm : taps_max;
        m_max = p->out[d] > m_max ? p->out[d] : m_max;
    }
    size_t need =
        sizeof(float) * (size_t)(2 * mid + inner_max + taps_max) + sizeof(int64_t) * (size_t)m_max;
    int64_t *first = sl__worker_scratch_get(&t->rs.scratch, worker, need);
    if (!first) return sl__op_fail(err, SL_ENOMEM, io, i, t->rs.name, "out of memory");
    float *w = (float *)(first + m_max), *acc = w + taps_max, *buf[2] = {acc + inner_max, NULL};
    buf[1] = buf[0] + mid;
    const void *src = in->data[i];
    sl_dtype it = in->dtype;
    for (int q = 0; q < p->npass; q++) {
        int d = p->pass[q];
        shape_before(p, sh, nd, q, cur);
        int tm = sl__resize_max_taps(p->len[d], p->out[d]);
        int taps = sl__resize_taps(&t->rs, i, sh[d], p->lo[d], p->len[d], p->out[d], first, w, tm);
        bool last = q + 1 == p->npass;
        void *dst = last ? out->data[i] : (void *)buf[q & 1];
        axis_pass(src, it, dst, last ? out->dtype : SL_DTYPE_F32, span(cur, 0, d), sh[d],
                  span(cur, d + 1, nd), p->out[d], first, w, taps, acc);
        src = dst, it = SL_DTYPE_F32;
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* The CUDA run: resize.cu's two kernels as the CPU's passes. The horizontal kernel is a pass
 * along a dim (rows = the dims before it, channels = those after) from any type into float
 * scratch, the vertical one a pass along a dim from float scratch into any type, one descriptor
 * per slice before the dim. So every pass but the last is horizontal (launch q: the q-th pass of
 * every sample that has more) and the last vertical; a sample of one pass (none: an identity pass
 * on its last dim) gets an identity pass after it. Taps as the CPU's. */
typedef struct tr_gpass {
    int d;
    bool identity;
} tr_gpass;

static int gpu_passes(const tr_plan *p, int nd, tr_gpass *g) {
    int n = 0;
    for (int q = 0; q < p->npass; q++) g[n].d = p->pass[q], g[n++].identity = false;
    if (n == 0) g[n].d = nd - 1, g[n++].identity = true;
    if (n == 1) g[1].d = g[0].d, g[1].identity = true, n = 2;
    return n;
}

static sl_status tr_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    tr_state *t = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    int nd = in->ndim, B = io->batch;
    int nh[TR_MAX + 1] = {0}, nv = 0, maxq = 0;
    size_t taps = 0;
    int64_t scratch_n = 0;
    for (int i = 0; i < B; i++) {
        const tr_plan *p = &t->plan[i];
        const int64_t *sh = sl_tlist_shape(in, i);
        if (span(p->out, 0, nd) == 0) continue;
        tr_gpass g[TR_MAX + 1];
        int n = gpu_passes(p, nd, g);
        int64_t cur[TR_MAX], mid = 0;
        memcpy(cur, sh, (size_t)nd * sizeof *cur);
        for (int q = 0; q < n; q++) {
            int d = g[q].d;
            int64_t m = p->out[d];
            taps += sl__gpu_args_align((size_t)m * sizeof(int64_t)) +
                    sl__gpu_args_align((size_t)m * (size_t)sl__resize_max_taps(p->len[d], m) *
                                       sizeof(float));
            if (q + 1 < n)
                nh[q]++;
            else
                nv += (int)span(cur, 0, d);
            cur[d] = m;
            if (q + 1 < n && span(cur, 0, nd) > mid) mid = span(cur, 0, nd);
        }
        scratch_n += 2 * mid;
        maxq = n - 1 > maxq ? n - 1 : maxq;
    }
    if (nv == 0) return SL_OK;
    float *scratch = sl__gpu_scratch_get(&t->rs.gpu_tmp, io->device.id,
                                         (size_t)scratch_n * sizeof(float), io->stream, err);
    if (!scratch) return err->status;
    size_t dsz = sizeof(sl__cuda_resize_desc), off = 0, at[TR_MAX + 1];
    for (int q = 0; q < maxq; q++) at[q] = off, off += sl__gpu_args_align((size_t)nh[q] * dsz);
    at[maxq] = off, off += sl__gpu_args_align((size_t)nv * dsz);
    char *h = sl__gpu_args_host(&t->rs.gpu, io->device.id, off + taps, err);
    if (!h) return err->status;
    memset(h, 0, off);
    int fill[TR_MAX + 1] = {0};
    int64_t max_el[TR_MAX + 1] = {0}, sbase = 0;
    for (int i = 0; i < B; i++) {
        const tr_plan *p = &t->plan[i];
        const int64_t *sh = sl_tlist_shape(in, i);
        if (span(p->out, 0, nd) == 0) continue;
        tr_gpass g[TR_MAX + 1];
        int n = gpu_passes(p, nd, g);
        int64_t cur[TR_MAX], mid = 0;
        memcpy(cur, sh, (size_t)nd * sizeof *cur);
        for (int q = 0; q + 1 < n; q++) {
            cur[g[q].d] = p->out[g[q].d];
            if (span(cur, 0, nd) > mid) mid = span(cur, 0, nd);
        }
        memcpy(cur, sh, (size_t)nd * sizeof *cur);
        for (int q = 0; q < n; q++) {
            int d = g[q].d;
            int64_t m = p->out[d], nin = g[q].identity ? m : cur[d];
            int64_t outer = span(cur, 0, d), inner = span(cur, d + 1, nd);
            int tm = g[q].identity ? 1 : sl__resize_max_taps(p->len[d], m);
            int64_t fo = (int64_t)off, wo = fo + (int64_t)sl__gpu_args_align((size_t)m * 8);
            off = (size_t)wo + sl__gpu_args_align((size_t)m * (size_t)tm * sizeof(float));
            int nt = 1;
            if (g[q].identity)
                for (int64_t o = 0; o < m; o++)
                    ((int64_t *)(h + fo))[o] = o, ((float *)(h + wo))[o] = 1;
            else
                nt = sl__resize_taps(&t->rs, i, sh[d], p->lo[d], p->len[d], m, (int64_t *)(h + fo),
                                     (float *)(h + wo), tm);
            int64_t src = sbase + ((q + 1) & 1) * mid, dst = sbase + (q & 1) * mid;
            if (q + 1 < n) {
                sl__cuda_resize_desc *x = (sl__cuda_resize_desc *)(h + at[q]) + fill[q]++;
                x->in = q ? (const void *)(scratch + src) : in->data[i];
                x->h = outer, x->w = nin, x->c = inner, x->ow = m, x->tx = nt;
                x->fx = fo, x->wx = wo, x->tmp = dst, x->y0 = 0, x->rows = outer;
                if (outer * m * inner > max_el[q]) max_el[q] = outer * m * inner;
            } else {
                size_t ob = (size_t)(m * inner) * sl_dtype_size(out->dtype);
                for (int64_t o = 0; o < outer; o++) {
                    sl__cuda_resize_desc *v = (sl__cuda_resize_desc *)(h + at[maxq]) + fill[maxq]++;
                    v->out = (char *)out->data[i] + (size_t)o * ob;
                    v->h = nin, v->oh = m, v->ow = inner, v->c = 1, v->ty = nt;
                    v->fy = fo, v->wy = wo, v->tmp = src + o * nin * inner;
                }
                if (m * inner > max_el[maxq]) max_el[maxq] = m * inner;
            }
            cur[d] = m;
        }
        sbase += 2 * mid;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&t->rs.gpu, off, io->stream, &dd, err));
    for (int q = 0; q < maxq; q++)
        SL_TRY(sl__cuda_resize_pass((const sl__cuda_resize_desc *)((char *)dd + at[q]), dd, nh[q],
                                    max_el[q], scratch, q ? SL_DTYPE_F32 : in->dtype, false,
                                    io->stream, err));
    return sl__cuda_resize_pass((const sl__cuda_resize_desc *)((char *)dd + at[maxq]), dd, nv,
                                max_el[maxq], scratch, out->dtype, true, io->stream, err);
}
#define TR_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = tr_run_gpu,
#else
#define TR_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__tensor_resize_op = {
    .name = "tensor_resize",
    .aliases = "experimental.tensor_resize",
    .doc = "Resizes tensors of any rank along chosen axes to sizes or by scales (DALI's "
           "fn.experimental.tensor_resize): resize's filters, modes and windows, with an "
           "alignment for the rounding of the sizes.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = tr_args,
    TR_DEVICES.create = tr_create,
    .setup = tr_setup,
    .run_cpu = tr_run_cpu,
    .destroy = tr_destroy,
};
