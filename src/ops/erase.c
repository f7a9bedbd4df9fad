/* SPDX-License-Identifier: Apache-2.0 */
/* erase (DALI's fn.erase): sets regions of each sample to fill_value. The regions are given by
 * `anchor` and `shape` (lists or per-sample inputs of n * k values: n regions over the k
 * dimensions that `axis_names` names in the layout, default "HW", or that `axes` gives when given
 * alone); absolute, or fractions of the extent with normalized_anchor / normalized_shape
 * (`normalized` sets both); `centered_anchor` puts the anchor at the region's centre. A region's
 * start and end (start + shape) are rounded half away from zero and clipped to the sample.
 * fill_value is one value, or one per channel (the layout's 'C', else the last dimension), as a
 * list or per sample (another op's output of one value or one per channel). Every dtype. CPU and
 * CUDA runs share ops/erase.h's rule. */
#include "ops/erase.h"
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema erase_args[] = {
    {"anchor", SL_ARG_FLOATS, "[]", "the regions' starts (n regions * k axes; default: 0)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"shape", SL_ARG_FLOATS, "[]", "the regions' extents (n regions * k axes)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"axes", SL_ARG_INTS, "[1, 0]", "dimensions the coordinates apply to", 0, NULL},
    {"axis_names", SL_ARG_STR, "\"HW\"", "layout names of those dimensions (wins over axes)", 0,
     NULL},
    {"centered_anchor", SL_ARG_BOOL, "False", "the anchor is the region's centre", 0, NULL},
    {"fill_value", SL_ARG_FLOATS, "[0.0]", "value of erased elements, or one per channel",
     SL_ARGF_PER_SAMPLE, NULL},
    {"normalized", SL_ARG_BOOL, "False", "anchor and shape are fractions of the extent", 0, NULL},
    {"normalized_anchor", SL_ARG_BOOL, "False", "the anchor is a fraction of the extent", 0, NULL},
    {"normalized_shape", SL_ARG_BOOL, "False", "the shape is a fraction of the extent", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct erase_state {
    int naxes;
    int axes[SL_MAX_DIMS];
    char axis_names[SL_MAX_DIMS + 1];
    bool centered, norm_anchor, norm_shape;
    int nfill; /* the literal's values (fill_value not per sample) */
    double fill[SL__ERASE_MAX_FILL];
    int node_anchor, node_shape, node_fill;
    double *lit_anchor, *lit_shape;
    int n_lit_anchor, n_lit_shape;
    sl__erase_desc *desc;
    int cap;
    sl__erase_box *boxes;
    size_t nboxes, box_cap;
    double *vals;
    size_t vals_cap;
    sl__gpu_args gpu;
} erase_state;

static void erase_destroy(void *state) {
    erase_state *s = state;
    if (!s) return;
    free(s->desc);
    free(s->boxes);
    free(s->vals);
    free(s->lit_anchor);
    free(s->lit_shape);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status erase_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    erase_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    if (sl__args_given(a, "axes") && !sl__args_given(a, "axis_names")) {
        const int64_t *ax;
        s->naxes = sl__args_ints(a, "axes", &ax);
        if (s->naxes < 1 || s->naxes > SL_MAX_DIMS)
            st =
                sl_err_set(err, SL_EINVAL, "erase: axes: %d axes (1 to %d)", s->naxes, SL_MAX_DIMS);
        for (int k = 0; st == SL_OK && k < s->naxes; k++) {
            if (ax[k] < -SL_MAX_DIMS || ax[k] >= SL_MAX_DIMS)
                st = sl_err_set(err, SL_EINVAL, "erase: axes: %lld is no dimension",
                                (long long)ax[k]);
            s->axes[k] = (int)ax[k];
        }
    } else {
        const char *n = sl__args_str(a, "axis_names");
        size_t len = n ? strlen(n) : 0;
        if (len < 1 || len > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "erase: axis_names \"%s\": 1 to %d names", n ? n : "",
                            SL_MAX_DIMS);
        else
            memcpy(s->axis_names, n, len + 1), s->naxes = (int)len;
    }
    s->centered = sl__args_bool(a, "centered_anchor");
    bool norm = sl__args_bool(a, "normalized");
    if (st == SL_OK && norm &&
        (sl__args_given(a, "normalized_anchor") || sl__args_given(a, "normalized_shape")))
        st = sl_err_set(err, SL_EINVAL,
                        "erase: give normalized, or normalized_anchor and normalized_shape");
    s->norm_anchor = norm || sl__args_bool(a, "normalized_anchor");
    s->norm_shape = norm || sl__args_bool(a, "normalized_shape");
    const double *fv;
    s->node_fill = sl__args_node(a, "fill_value");
    s->nfill = s->node_fill >= 0 ? 1 : sl__args_floats(a, "fill_value", &fv);
    if (s->node_fill >= 0)
        s->fill[0] = 0;
    else if (st == SL_OK && (s->nfill < 1 || s->nfill > SL__ERASE_MAX_FILL))
        st = sl_err_set(err, SL_EINVAL, "erase: fill_value: %d values (1 to %d)", s->nfill,
                        SL__ERASE_MAX_FILL);
    else if (st == SL_OK)
        memcpy(s->fill, fv, (size_t)s->nfill * sizeof *fv);
    s->node_anchor = sl__args_node(a, "anchor");
    s->node_shape = sl__args_node(a, "shape");
    for (int k = 0; k < 2 && st == SL_OK; k++) {
        const char *nm = k ? "shape" : "anchor";
        if ((k ? s->node_shape : s->node_anchor) >= 0) continue;
        const double *v;
        int n = sl__args_floats(a, nm, &v);
        double *c = sl__malloc((size_t)(n ? n : 1) * sizeof *c, err);
        if (!c) {
            st = SL_ENOMEM;
            break;
        }
        if (n) memcpy(c, v, (size_t)n * sizeof *c); /* (an empty list may have no array) */
        if (k)
            s->lit_shape = c, s->n_lit_shape = n;
        else
            s->lit_anchor = c, s->n_lit_anchor = n;
    }
    if (st != SL_OK) {
        erase_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* anchor or shape values of sample i into s->vals + at; their count */
static int values(erase_state *s, const sl__op_io *io, int i, int which, size_t at, sl_err *err) {
    int node = which ? s->node_shape : s->node_anchor;
    int n = node >= 0 ? sl__argin_values(io, node, i, NULL, 0)
                      : (which ? s->n_lit_shape : s->n_lit_anchor);
    if (n <= 0) return n < 0 ? -1 : 0; /* none: nothing to copy (vals may still be NULL) */
    if (at + (size_t)n > s->vals_cap) {
        size_t cap = (at + (size_t)n) * 2 + 16;
        double *v = realloc(s->vals, cap * sizeof *v);
        if (!v) {
            sl_err_set(err, SL_ENOMEM, "erase: out of memory");
            return -2;
        }
        s->vals = v, s->vals_cap = cap;
    }
    if (node >= 0)
        sl__argin_values(io, node, i, s->vals + at, n);
    else
        memcpy(s->vals + at, which ? s->lit_shape : s->lit_anchor, (size_t)n * sizeof(double));
    return n;
}

static sl_status erase_setup(void *state, sl__op_io *io, sl_err *err) {
    erase_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    if (io->batch > s->cap) {
        sl__erase_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "erase: out of memory");
        s->desc = d, s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, nd, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    int dims[SL_MAX_DIMS];
    for (int k = 0; k < s->naxes; k++) {
        if (s->axis_names[0]) {
            const char *at = in->layout[0] ? strchr(in->layout, s->axis_names[k]) : NULL;
            if (!at)
                return sl_err_set(err, SL_EINVAL,
                                  "erase: axis_names \"%s\": '%c' is not in the input's layout "
                                  "\"%s\" (give the layout, or axes)",
                                  s->axis_names, s->axis_names[k], in->layout);
            dims[k] = (int)(at - in->layout);
        } else {
            int ax = s->axes[k] < 0 ? s->axes[k] + nd : s->axes[k];
            if (ax < 0 || ax >= nd)
                return sl_err_set(err, SL_EINVAL, "erase: axes: %d is no dimension of a %d-d input",
                                  s->axes[k], nd);
            dims[k] = ax;
        }
    }
    const char *c = in->layout[0] ? strchr(in->layout, 'C') : NULL;
    int chan = c ? (int)(c - in->layout) : nd - 1; /* where fill values of one per channel run */
    /* the boxes of every sample, laid out one after another */
    s->nboxes = 0;
    size_t *first = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *first, err);
    if (!first) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        sl__erase_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->ndim = nd;
        memcpy(d->shape, sh, (size_t)nd * sizeof *sh);
        d->n = 1;
        for (int k = 0; k < nd; k++) d->n *= sh[k];
        d->nfill = s->nfill;
        memcpy(d->fill, s->fill, (size_t)s->nfill * sizeof *s->fill);
        if (s->node_fill >= 0) {
            d->nfill = sl__argin_values(io, s->node_fill, i, d->fill, SL__ERASE_MAX_FILL);
            if (d->nfill < 1 || d->nfill > SL__ERASE_MAX_FILL) {
                st = sl__op_fail(err, SL_EINVAL, io, i, "erase",
                                 "fill_value has %d values (1 to %d: one, or one per channel)",
                                 d->nfill, SL__ERASE_MAX_FILL);
                break;
            }
        }
        d->chan = d->nfill > 1 ? chan : -1;
        if (d->chan >= 0 && sh[chan] > d->nfill) {
            st = sl__op_fail(err, SL_EINVAL, io, i, "erase",
                             "fill_value has %d values for %lld channels", d->nfill,
                             (long long)sh[chan]);
            break;
        }
        int ns = values(s, io, i, 1, 0, err);
        int na = ns >= 0 ? values(s, io, i, 0, (size_t)ns, err) : -1;
        if (ns == -2 || na == -2) {
            st = SL_ENOMEM;
            break;
        }
        if (ns < 0 || na < 0 || ns % s->naxes || (na != 0 && na != ns)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, "erase",
                             "shape has %d values and anchor %d: both n regions * %d axes "
                             "(anchor may be empty)",
                             ns, na, s->naxes);
            break;
        }
        int nreg = ns / s->naxes;
        first[i] = s->nboxes;
        d->nbox = nreg;
        if (s->nboxes + (size_t)nreg > s->box_cap) {
            size_t cap = (s->nboxes + (size_t)nreg) * 2 + 8;
            sl__erase_box *b = realloc(s->boxes, cap * sizeof *b);
            if (!b) {
                st = sl_err_set(err, SL_ENOMEM, "erase: out of memory");
                break;
            }
            s->boxes = b, s->box_cap = cap;
        }
        for (int r = 0; r < nreg && st == SL_OK; r++) {
            sl__erase_box *b = &s->boxes[s->nboxes++];
            for (int k = 0; k < nd; k++) b->lo[k] = 0, b->hi[k] = sh[k];
            for (int k = 0; k < s->naxes; k++) {
                double ext = (double)sh[dims[k]];
                double len = s->vals[r * s->naxes + k] * (s->norm_shape ? ext : 1);
                double a = na ? s->vals[ns + r * s->naxes + k] * (s->norm_anchor ? ext : 1) : 0;
                if (s->centered) a -= len / 2;
                if (!(len >= 0) || !isfinite(a) || !isfinite(len) || fabs(a) + len > 9e18) {
                    st = sl__op_fail(err, SL_EINVAL, io, i, "erase",
                                     "region %d: shape %g along dimension %d is negative or not "
                                     "finite",
                                     r, len, dims[k]);
                    break;
                }
                int64_t lo = llround(a), hi = llround(a + len);
                b->lo[dims[k]] = lo < 0 ? 0 : lo > sh[dims[k]] ? sh[dims[k]] : lo;
                b->hi[dims[k]] = hi < 0 ? 0 : hi > sh[dims[k]] ? sh[dims[k]] : hi;
            }
        }
    }
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        s->desc[i].in = in->data[i];
        s->desc[i].out = out->data[i];
        s->desc[i].box = s->boxes ? s->boxes + first[i] : NULL; /* no boxes in the batch */
    }
    free(first);
    return st;
}

/* copy, then fill each box row by row */
static sl_status erase_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    erase_state *s = state;
    (void)worker, (void)err;
    const sl__erase_desc *d = &s->desc[i];
    sl_dtype t = io->in[0]->dtype;
    int es = (int)sl_dtype_size(t);
    if (d->n == 0) return SL_OK;
    memcpy(d->out, d->in, (size_t)d->n * (size_t)es);
    if (d->ndim == 0) {
        if (d->nbox) sl__dtype_conv_store(d->out, t, 0, d->fill[0]);
        return SL_OK;
    }
    int last = d->ndim - 1;
    for (int b = 0; b < d->nbox; b++) {
        const sl__erase_box *x = &d->box[b];
        int64_t rows = 1, w = x->hi[last] - x->lo[last];
        bool empty = w <= 0;
        for (int k = 0; k < last; k++) {
            rows *= x->hi[k] - x->lo[k];
            empty |= x->hi[k] <= x->lo[k];
        }
        if (empty) continue;
        for (int64_t r = 0; r < rows; r++) {
            int64_t rem = r, off = 0, stride = d->shape[last];
            int64_t idx[SL_MAX_DIMS];
            for (int k = last - 1; k >= 0; k--) {
                int64_t ext = x->hi[k] - x->lo[k];
                idx[k] = x->lo[k] + rem % ext;
                rem /= ext;
            }
            for (int k = last - 1; k >= 0; k--) {
                off += idx[k] * stride;
                stride *= d->shape[k];
            }
            for (int64_t c = x->lo[last]; c < x->hi[last]; c++) {
                int f = 0;
                if (d->nfill > 1 && d->chan >= 0) f = (int)(d->chan == last ? c : idx[d->chan]);
                sl__dtype_conv_store(d->out, t, off + c, d->fill[f < d->nfill ? f : d->nfill - 1]);
            }
        }
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status erase_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    erase_state *s = state;
    size_t head = sl__gpu_args_align((size_t)io->batch * sizeof *s->desc);
    size_t bytes = head + s->nboxes * sizeof *s->boxes;
    unsigned char *h = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!h) return err->status;
    sl__erase_desc *d = (sl__erase_desc *)h;
    if (s->nboxes) memcpy(h + head, s->boxes, s->nboxes * sizeof *s->boxes);
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        d[i].box = (const sl__erase_box *)((unsigned char *)s->gpu.dev + head) +
                   (s->desc[i].box - s->boxes);
        if (d[i].n > maxn) maxn = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    sl_dtype t = io->in[0]->dtype;
    return sl__cuda_erase(dd, io->batch, maxn, t, (int)sl_dtype_size(t), io->stream, err);
}
#endif

const sl__op_def sl__erase_op = {
    .name = "erase",
    .doc = "Sets regions of each sample (anchor, shape; absolute or normalized) to fill_value.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = erase_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = erase_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = erase_create,
    .setup = erase_setup,
    .run_cpu = erase_run_cpu,
    .destroy = erase_destroy,
};
