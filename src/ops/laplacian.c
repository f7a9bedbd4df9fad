/* SPDX-License-Identifier: Apache-2.0 */
/* laplacian (DALI's fn.laplacian): the sum over the spatial axes of each axis's second derivative,
 * smoothed along the other spatial axes: for axis a, the derivative window ([1, -2, 1]
 * convolved with binomial coefficients up to window_size) along a and the binomial smoothing
 * window of smoothing_size (default: window_size) along the others, times scale[a]. Windows are
 * odd, 1 to 23 (the derivative's at least 3); one value stands for every axis. The spatial axes
 * are the layout's letters but 'C' (channels are filtered apart), or every axis of a sample
 * without a layout. Borders reflect without repeating the edge (OpenCV's BORDER_REFLECT_101).
 * Computed in double, stored as `dtype` (default: the input's) with cast's rules. With the
 * defaults a 2D image gets [[2, 0, 2], [0, -8, 0], [2, 0, 2]] (OpenCV's Laplacian of ksize 3).
 * CPU only here. */
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#define MAXW 23

static const sl__arg_schema lap_args[] = {
    {"window_size", SL_ARG_INTS, "[3]", "derivative window (odd, 3 to 23), or one per axis", 0,
     NULL},
    {"smoothing_size", SL_ARG_INTS, "None",
     "smoothing window (odd, 1 to 23; default: window_size), or one per axis", 0, NULL},
    {"scale", SL_ARG_FLOATS, "[1.0]", "factor of each axis's term, or one for all", 0, NULL},
    {"normalized_kernel", SL_ARG_BOOL, "False", "not supported: must be False", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct lap_state {
    int nw, ns, nsc;
    int64_t win[SL_MAX_DIMS], smooth[SL_MAX_DIMS];
    double scale[SL_MAX_DIMS];
    bool has_smooth, has_dtype;
    sl_dtype dtype;
    /* per batch */
    int nsp, sp[SL_MAX_DIMS]; /* spatial dims */
    double dk[SL_MAX_DIMS][MAXW], sk[SL_MAX_DIMS][MAXW];
    int dl[SL_MAX_DIMS], sl[SL_MAX_DIMS];
    double sc[SL_MAX_DIMS];
    sl__worker_scratch scratch;
} lap_state;

static void lap_destroy(void *state) {
    lap_state *s = state;
    if (!s) return;
    sl__worker_scratch_free(&s->scratch);
    free(s);
}

static sl_status lap_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    if (sl__args_bool(a, "normalized_kernel"))
        return sl_err_set(err, SL_ENOTSUP, "laplacian: normalized_kernel is not supported");
    lap_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    const int64_t *v;
    const double *f;
    sl_status st = SL_OK;
    s->nw = sl__args_ints(a, "window_size", &v);
    if (s->nw < 1 || s->nw > SL_MAX_DIMS)
        st = sl_err_set(err, SL_EINVAL, "laplacian: window_size has %d values", s->nw);
    for (int k = 0; st == SL_OK && k < s->nw; k++) {
        s->win[k] = v[k];
        if (v[k] < 3 || v[k] > MAXW || v[k] % 2 == 0)
            st = sl_err_set(err, SL_EINVAL, "laplacian: window_size %lld (odd, 3 to %d)",
                            (long long)v[k], MAXW);
    }
    s->has_smooth = sl__args_get(a, "smoothing_size")->kind != SL_VAL_NONE;
    if (s->has_smooth) {
        s->ns = sl__args_ints(a, "smoothing_size", &v);
        if (st == SL_OK && (s->ns < 1 || s->ns > SL_MAX_DIMS))
            st = sl_err_set(err, SL_EINVAL, "laplacian: smoothing_size has %d values", s->ns);
        for (int k = 0; st == SL_OK && k < s->ns; k++) {
            s->smooth[k] = v[k];
            if (v[k] < 1 || v[k] > MAXW || v[k] % 2 == 0)
                st = sl_err_set(err, SL_EINVAL, "laplacian: smoothing_size %lld (odd, 1 to %d)",
                                (long long)v[k], MAXW);
        }
    }
    s->nsc = sl__args_floats(a, "scale", &f);
    if (st == SL_OK && (s->nsc < 1 || s->nsc > SL_MAX_DIMS))
        st = sl_err_set(err, SL_EINVAL, "laplacian: scale has %d values", s->nsc);
    for (int k = 0; st == SL_OK && k < s->nsc; k++) s->scale[k] = f[k];
    s->has_dtype = sl__args_get(a, "dtype")->kind != SL_VAL_NONE;
    if (s->has_dtype) s->dtype = sl__args_dtype(a, "dtype");
    if (st == SL_OK) st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st != SL_OK) {
        lap_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* binomial coefficients of a window of n */
static void binomial(double *k, int n) {
    k[0] = 1;
    for (int i = 1; i < n; i++) {
        k[i] = 0;
        for (int j = i; j > 0; j--) k[j] += k[j - 1];
    }
}

/* [1, -2, 1] convolved with binomial(n - 2) */
static void derivative(double *k, int n) {
    double b[MAXW];
    binomial(b, n - 2);
    for (int i = 0; i < n; i++) k[i] = 0;
    const double d[3] = {1, -2, 1};
    for (int i = 0; i < n - 2; i++)
        for (int j = 0; j < 3; j++) k[i + j] += b[i] * d[j];
}

static sl_status lap_setup(void *state, sl__op_io *io, sl_err *err) {
    lap_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    s->nsp = 0;
    for (int k = 0; k < nd; k++)
        if (!in->layout[0] || in->layout[k] != 'C') s->sp[s->nsp++] = k;
    if (s->nsp < 1 || s->nsp > 3)
        return sl_err_set(err, SL_EINVAL, "laplacian: %d spatial axes (1 to 3; layout \"%s\")",
                          s->nsp, in->layout);
    if ((s->nw != 1 && s->nw != s->nsp) || (s->has_smooth && s->ns != 1 && s->ns != s->nsp) ||
        (s->nsc != 1 && s->nsc != s->nsp))
        return sl_err_set(err, SL_EINVAL,
                          "laplacian: window_size, smoothing_size and scale take one value, or "
                          "one per spatial axis (%d)",
                          s->nsp);
    for (int a = 0; a < s->nsp; a++) {
        s->dl[a] = (int)s->win[s->nw == 1 ? 0 : a];
        s->sl[a] = s->has_smooth ? (int)s->smooth[s->ns == 1 ? 0 : a] : s->dl[a];
        s->sc[a] = s->scale[s->nsc == 1 ? 0 : a];
        derivative(s->dk[a], s->dl[a]);
        binomial(s->sk[a], s->sl[a]);
    }
    sl_tlist *out = io->out[0];
    SL_TRY(
        sl_tlist_reset(out, io->batch, s->has_dtype ? s->dtype : in->dtype, nd, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* reflect-101 index */
static int64_t reflect(int64_t i, int64_t n) {
    if (n == 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
    return i;
}

/* dst = src convolved with k (len taps, centred) along dim d of a (shape) array */
static void conv1(double *dst, const double *src, const int64_t *shape, int nd, int d,
                  const double *k, int len) {
    int64_t inner = 1, outer = 1, n = shape[d];
    for (int j = d + 1; j < nd; j++) inner *= shape[j];
    for (int j = 0; j < d; j++) outer *= shape[j];
    int r = len / 2;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t x = 0; x < n; x++)
            for (int64_t in = 0; in < inner; in++) {
                double acc = 0;
                for (int t = 0; t < len; t++)
                    acc += k[t] * src[(o * n + reflect(x + t - r, n)) * inner + in];
                dst[(o * n + x) * inner + in] = acc;
            }
}

static sl_status lap_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    lap_state *s = state;
    const sl_tlist *in = io->in[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    int nd = in->ndim;
    int64_t n = 1;
    for (int k = 0; k < nd; k++) n *= sh[k];
    if (n == 0) return SL_OK;
    double *buf = sl__worker_scratch_get(&s->scratch, worker, (size_t)n * 4 * sizeof(double));
    if (!buf) return sl__op_fail(err, SL_ENOMEM, io, i, "laplacian", "out of memory");
    double *x = buf, *acc = buf + n, *a = buf + 2 * n, *b = buf + 3 * n;
    for (int64_t e = 0; e < n; e++)
        x[e] = sl__dtype_conv_load(in->data[i], in->dtype, e), acc[e] = 0;
    for (int t = 0; t < s->nsp; t++) {
        const double *cur = x;
        double *dst = a;
        for (int u = 0; u < s->nsp; u++) {
            bool deriv = u == t;
            conv1(dst, cur, sh, nd, s->sp[u], deriv ? s->dk[t] : s->sk[u],
                  deriv ? s->dl[t] : s->sl[u]);
            cur = dst;
            dst = dst == a ? b : a;
        }
        for (int64_t e = 0; e < n; e++) acc[e] += s->sc[t] * cur[e];
    }
    for (int64_t e = 0; e < n; e++)
        sl__dtype_conv_store(io->out[0]->data[i], io->out[0]->dtype, e, acc[e]);
    return SL_OK;
}

const sl__op_def sl__laplacian_op = {
    .name = "laplacian",
    .doc = "Sum of smoothed second derivatives along the spatial axes.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = lap_args,
    .devices = SL_OPDEV_CPU,
    .create = lap_create,
    .setup = lap_setup,
    .run_cpu = lap_run_cpu,
    .destroy = lap_destroy,
};
