/* SPDX-License-Identifier: Apache-2.0 */
/* laplacian (DALI's fn.laplacian): the sum over the spatial axes of each axis's second
 * derivative, smoothed along the other spatial axes. For axis a the partial derivative convolves
 * the derivative window of window_size[a] along a ([1, -2, 1] convolved with the binomial
 * coefficients of window_size[a] - 2 taps: OpenCV's getDerivKernels(2, 0, ksize)) and the
 * binomial smoothing window of smoothing_size[b] along each other axis b (without
 * smoothing_size: of window_size[a], the partial's own, as DALI), and is multiplied by scale[a];
 * normalized_kernel=True makes that factor 2^(-s + n + 2), s the sum of the partial's window sizes
 * and n the spatial axes. Windows are odd, 3 to 31 for the derivative, 1 to 31 for smoothing
 * (DALI's code takes 31, OpenCV's largest, though its schema text says 23); each of the three
 * arguments is one value for every axis or one per axis, outermost first, as a literal or per
 * sample (another op's output) or per frame. The spatial axes come from the layout as for
 * gaussian_blur (ops/conv_axes.h: channels first or last and frames ride along; up to 3 axes).
 * Borders reflect without repeating the edge (reflect-101). Computed in double, stored as `dtype`
 * (the input's, or FLOAT; nothing else, as DALI) with DALI's ConvertSat rules. With the defaults a
 * 2D image gets [[2, 0, 2], [0, -8, 0], [2, 0, 2]] (OpenCV's Laplacian of ksize 3). CPU only. */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"
#include "ops/conv_axes.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXW 31 /* the largest window */
#define NA   3  /* the most spatial axes */
#define NLIT 8  /* the most literal values kept (more is refused at create) */

static const char *const NAME = "laplacian";
enum { WIN, SMOOTH, SCALE, NARG };
static const char *const ARG[NARG] = {"window_size", "smoothing_size", "scale"};

static const sl__arg_schema lap_args[] = {
    {"window_size", SL_ARG_INTS, "[3]",
     "derivative window (odd, 3 to 31): one, or one per spatial axis, outermost first",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"smoothing_size", SL_ARG_INTS, "None",
     "smoothing window (odd, 1 to 31; default: window_size): one, or one per spatial axis",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"scale", SL_ARG_FLOATS, "[1.0]",
     "factor of each axis's partial derivative: one, or one per spatial axis",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"normalized_kernel", SL_ARG_BOOL, "False",
     "scale each partial derivative by 2^(-s + n + 2) (s: its window sizes summed, n: spatial "
     "axes); not with scale",
     0, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type: the input's (default) or FLOAT", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

/* one sample's decisions (setup) */
typedef struct lap_sample {
    int k;                       /* spatial axes (0: nothing to compute) */
    int64_t n;                   /* elements */
    int64_t ext[NA], stride[NA]; /* the spatial axes' extents and element strides */
    int win[NA][NA];             /* win[t][u]: window along axis u of partial t */
    double scale[NA];            /* factor of partial t */
} lap_sample;

typedef struct lap_state {
    bool given[NARG]; /* the argument has values (a literal or a node) */
    int node[NARG];   /* per-sample input, or -1 */
    int nlit[NARG];
    double lit[NARG][NLIT];
    bool normalize;
    int dtype; /* -1: the input's */
    /* deriv[w / 2], smooth[w / 2]: the windows of w taps */
    double deriv[MAXW / 2 + 1][MAXW], smooth[MAXW / 2 + 1][MAXW];
    lap_sample *smp;
    int cap;
    sl__worker_scratch scratch;
} lap_state;

static void lap_destroy(void *state) {
    lap_state *s = state;
    if (!s) return;
    sl__worker_scratch_free(&s->scratch);
    free(s->smp);
    free(s);
}

/* binomial coefficients of a window of n taps */
static void binomial(double *k, int n) {
    k[0] = 1;
    for (int i = 1; i < n; i++) {
        k[i] = 0;
        for (int j = i; j > 0; j--) k[j] += k[j - 1];
    }
}

/* [1, -2, 1] convolved with binomial(n - 2): n taps */
static void derivative(double *k, int n) {
    double b[MAXW];
    binomial(b, n - 2);
    for (int i = 0; i < n; i++) k[i] = 0;
    const double d[3] = {1, -2, 1};
    for (int i = 0; i < n - 2; i++)
        for (int j = 0; j < 3; j++) k[i + j] += b[i] * d[j];
}

/* DALI's range checks of one window size; sample < 0: a literal */
static sl_status check_window(int m, double v, const sl__op_io *io, int sample, sl_err *err) {
    int lo = m == WIN ? 3 : 1;
    if (v == floor(v) && v >= lo && v <= MAXW && fmod(v, 2) != 0) return SL_OK;
    const char *what = m == WIN ? "Window size" : "Smoothing window size";
    if (sample < 0)
        return sl_err_set(err, SL_EINVAL,
                          "%s: %s %g: %s must be an odd integer between %d and %d, got %g for "
                          "sample: 0.",
                          NAME, ARG[m], v, what, lo, MAXW, v);
    return sl__op_fail(err, SL_EINVAL, io, sample, NAME,
                       "%s %g: %s must be an odd integer between %d and %d, got %g for sample: "
                       "%d.",
                       ARG[m], v, what, lo, MAXW, v, sample);
}

static sl_status lap_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    lap_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->normalize = sl__args_bool(a, "normalized_kernel");
    for (int m = 0; m < NARG && st == SL_OK; m++) {
        s->node[m] = sl__args_node(a, ARG[m]);
        s->given[m] = s->node[m] >= 0 || sl__args_get(a, ARG[m])->kind != SL_VAL_NONE;
        if (!s->given[m] || s->node[m] >= 0) continue;
        int n;
        if (m == SCALE) {
            const double *v;
            n = sl__args_floats(a, ARG[m], &v);
            for (int j = 0; j < n && j < NLIT; j++) s->lit[m][j] = v[j];
        } else {
            const int64_t *v;
            n = sl__args_ints(a, ARG[m], &v);
            for (int j = 0; j < n && j < NLIT; j++) s->lit[m][j] = (double)v[j];
        }
        s->nlit[m] = n;
        if (n < 1 || n > NLIT)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: %s has %d values (one, or one per spatial axis: at most %d)", NAME,
                            ARG[m], n, NA);
        for (int j = 0; m != SCALE && j < n && st == SL_OK; j++)
            st = sl__op_at_run(init, check_window(m, s->lit[m][j], NULL, -1, err));
    }
    /* scale counts as given when the user wrote it (its default is a value too) */
    if (st == SL_OK && s->normalize && (s->node[SCALE] >= 0 || sl__args_given(a, "scale")))
        st = sl__op_at_run(init, sl_err_set(err, SL_EINVAL,
                                            "%s: normalized_kernel=True and scale: Parameter "
                                            "``scale`` cannot be specified when "
                                            "``normalized_kernel`` is set to True",
                                            NAME));
    s->dtype = sl__args_given(a, "dtype") && sl__args_get(a, "dtype")->kind != SL_VAL_NONE
                   ? (int)sl__args_dtype(a, "dtype")
                   : -1;
    for (int w = 1; w <= MAXW; w += 2) {
        binomial(s->smooth[w / 2], w);
        if (w >= 3) derivative(s->deriv[w / 2], w);
    }
    if (st == SL_OK) st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st != SL_OK) {
        lap_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* Sample i's values of argument m, one per axis (k axes), into v. */
static sl_status sample_values(const lap_state *s, const sl__op_io *io, int i, int m, int k,
                               double *v, sl_err *err) {
    double got[NLIT];
    int n = s->nlit[m];
    if (s->node[m] >= 0) {
        n = sl__argin_values(io, s->node[m], i, got, NLIT);
        if (n < 0)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME, "%s: its input is not on the CPU",
                               ARG[m]);
        if (n != 1 && n != k)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "%s has %d values for %d spatial axes (give one, or one per "
                               "axis): Argument %s for sample %d is expected to have 1 or %d "
                               "elements, got: %d.",
                               ARG[m], n, k, ARG[m], i, k, n);
    } else {
        memcpy(got, s->lit[m], sizeof got);
        if (n != 1 && n != k)
            return sl_err_set(err, SL_EINVAL,
                              "%s: %s has %d values for %d spatial axes (give one, or one per "
                              "axis): Argument \"%s\" expects either a single value or a list of "
                              "%d elements. %d given.",
                              NAME, ARG[m], n, k, ARG[m], k, n);
    }
    for (int a = 0; a < k; a++) {
        v[a] = got[n == 1 ? 0 : a];
        if (m != SCALE && s->node[m] >= 0) SL_TRY(check_window(m, v[a], io, i, err));
    }
    return SL_OK;
}

/* Sample i's windows and factors (its k spatial axes start at dim first). */
static sl_status sample_setup(lap_state *s, const sl__op_io *io, int i, int first, int k,
                              sl_err *err) {
    const sl_tlist *in = io->in[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    lap_sample *p = &s->smp[i];
    memset(p, 0, sizeof *p);
    double win[NA], smooth[NA], scale[NA];
    SL_TRY(sample_values(s, io, i, WIN, k, win, err));
    if (s->given[SMOOTH]) SL_TRY(sample_values(s, io, i, SMOOTH, k, smooth, err));
    if (!s->normalize) SL_TRY(sample_values(s, io, i, SCALE, k, scale, err));
    p->n = 1;
    for (int d = 0; d < in->ndim; d++) p->n *= sh[d];
    for (int t = 0; t < k; t++) {
        int sum = 0;
        for (int u = 0; u < k; u++) {
            /* without smoothing_size, partial t smooths with its own window_size, as DALI */
            p->win[t][u] = (int)(u == t ? win[t] : s->given[SMOOTH] ? smooth[u] : win[t]);
            sum += p->win[t][u];
        }
        p->scale[t] = s->normalize ? ldexp(1.0, -sum + k + 2) : scale[t];
    }
    for (int a = 0; a < k; a++) {
        int64_t stride = 1;
        for (int d = first + a + 1; d < in->ndim; d++) stride *= sh[d];
        p->ext[a] = sh[first + a];
        p->stride[a] = stride;
    }
    p->k = p->n == 0 ? 0 : k;
    return SL_OK;
}

static sl_status lap_setup(void *state, sl__op_io *io, sl_err *err) {
    lap_state *s = state;
    const sl_tlist *in = io->in[0];
    int first = 0, k = 0;
    SL_TRY(sl__conv_axes(NAME, in->layout, in->ndim, io->seq_frames != NULL, NA, &first, &k, err));
    if (in->dtype == SL_DTYPE_BOOL || in->dtype == SL_DTYPE_INTERP)
        return sl_err_set(err, SL_EINVAL, "%s: %s input is not supported", NAME,
                          sl_dtype_name(in->dtype));
    sl_dtype ot = s->dtype >= 0 ? (sl_dtype)s->dtype : in->dtype;
    if (ot != in->dtype && ot != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL,
                          "%s: dtype %s for a %s input (the input's or FLOAT): Output data type "
                          "must be same as input, FLOAT or skipped (defaults to input type)",
                          NAME, sl_dtype_name(ot), sl_dtype_name(in->dtype));
    if (io->batch > s->cap) {
        lap_sample *p = realloc(s->smp, (size_t)io->batch * sizeof *p);
        if (!p) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->smp = p;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) SL_TRY(sample_setup(s, io, i, first, k, err));
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, ot, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* dst = src convolved along one axis (extent n, element stride inner, of an array of total
 * elements) with the len taps k, centred, borders reflect-101; ix: scratch of n + len - 1 */
static void conv1(double *dst, const double *src, int64_t total, int64_t n, int64_t inner,
                  const double *k, int len, int64_t *ix) {
    int r = len / 2;
    for (int64_t j = 0; j < n + len - 1; j++) { /* ix[x + t] = the element of tap t at x */
        int64_t i = j - r;
        if (n == 1) i = 0;
        while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
        ix[j] = i * inner;
    }
    int64_t outer = total / (n * inner);
    for (int64_t o = 0; o < outer; o++) {
        const double *s = src + o * n * inner;
        double *d = dst + o * n * inner;
        for (int64_t x = 0; x < n; x++) {
            double *dx = d + x * inner;
            for (int64_t e = 0; e < inner; e++) dx[e] = 0;
            for (int t = 0; t < len; t++) {
                const double *sx = s + ix[x + t];
                double w = k[t];
                if (w == 0) continue;
                for (int64_t e = 0; e < inner; e++) dx[e] += w * sx[e];
            }
        }
    }
}

static sl_status lap_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    lap_state *s = state;
    const lap_sample *p = &s->smp[i];
    if (p->k == 0) return SL_OK;
    int64_t n = p->n, most = 0;
    for (int a = 0; a < p->k; a++)
        if (p->ext[a] > most) most = p->ext[a];
    size_t need = (size_t)n * 4 * sizeof(double) + (size_t)(most + MAXW) * sizeof(int64_t);
    double *buf = sl__worker_scratch_get(&s->scratch, worker, need);
    if (!buf) return sl__op_fail(err, SL_ENOMEM, io, i, NAME, "out of memory");
    double *x = buf, *acc = buf + n, *tmp[2] = {buf + 2 * n, buf + 3 * n};
    int64_t *ix = (int64_t *)(buf + 4 * n);
    const sl_tlist *in = io->in[0];
    for (int64_t e = 0; e < n; e++) x[e] = sl__dtype_conv_load(in->data[i], in->dtype, e);
    memset(acc, 0, (size_t)n * sizeof *acc);
    for (int t = 0; t < p->k; t++) {
        const double *cur = x;
        int next = 0;
        for (int u = p->k - 1; u >= 0; u--) { /* innermost axis first */
            int w = p->win[t][u];
            if (w == 1) continue; /* a smoothing window of 1 is the identity */
            const double *k = u == t ? s->deriv[w / 2] : s->smooth[w / 2];
            conv1(tmp[next], cur, n, p->ext[u], p->stride[u], k, w, ix);
            cur = tmp[next];
            next ^= 1;
        }
        double f = p->scale[t];
        for (int64_t e = 0; e < n; e++) acc[e] += f * cur[e];
    }
    sl_tlist *out = io->out[0];
    for (int64_t e = 0; e < n; e++) sl__dtype_conv_store(out->data[i], out->dtype, e, acc[e]);
    return SL_OK;
}

const sl__op_def sl__laplacian_op = {
    .name = "laplacian",
    .doc = "Sum of the second derivatives along the spatial axes (1 to 3; channels and frames "
           "ride along), each smoothed along the other axes (DALI's fn.laplacian).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = lap_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_SEQUENCE,
    .create = lap_create,
    .setup = lap_setup,
    .run_cpu = lap_run_cpu,
    .destroy = lap_destroy,
};
