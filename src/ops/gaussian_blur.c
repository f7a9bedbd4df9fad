/* SPDX-License-Identifier: Apache-2.0 */
/* gaussian_blur: DALI's fn.gaussian_blur, a separable Gaussian over the spatial axes of any type.
 * The spatial axes come from the layout as DALI decides them: a layout-less input of 1 to 3 dims
 * is all spatial (HW, DHW, ...); otherwise a last 'C' (channels) and up to two leading 'F' or 'C'
 * (frames, channels first: FHWC, CHW, FCHW, CFDHW ...) are not blurred and the 1 to 3 axes
 * between them are; another 'C' or 'F' is an error. `sigma` and `window_size` (odd) are one value
 * for every spatial axis or one per axis, outermost first ([y, x], [z, y, x]), as lists or per
 * sample (another op's output of one value or one per axis) or per frame (fn.per_frame: sequences
 * run frame by frame, operator/sequence.h). Per axis, as DALI: with a window of
 * 0 (not given) it is 2 * ceil(3 sigma) + 1 taps, with a sigma of 0 (not given) that is
 * 0.3 * ((window_size - 1) / 2 - 1) + 0.8; both 0 is an error. The weights are
 * exp(-k^2 / (2 sigma^2)) normalised to sum 1, computed in double and kept as float; the border is
 * reflect-101, as DALI's. One pass per axis, innermost first, through float scratch
 * (ops/gaussian_blur.h, shared with the CUDA run, so the two give the same bits); `dtype` (default
 * the input's) is stored with DALI's ConvertSat rules. */
#include "operator/argin.h"
#include "ops/conv_axes.h"
#include "ops/gaussian_blur.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema gb_args[] = {
    {"sigma", SL_ARG_FLOATS, "None",
     "standard deviation in pixels: one value or one per spatial axis, outermost first",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"window_size", SL_ARG_INTS, "None",
     "taps, odd: one or one per spatial axis, outermost first (default: from sigma)",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { MAX_RADIUS = 4096, NA = SL__BLUR_MAX_AXES };
static const char *const NAME = "gaussian_blur";
static const char *const ARG[2] = {"sigma", "window_size"};

typedef struct gb_state {
    bool given[2]; /* sigma, window_size */
    int node[2];   /* per-sample inputs, or -1 */
    int nlit[2];   /* literal values (1 or one per axis) */
    double lit[2][NA];
    int dtype;
    sl__blur *blur; /* per sample (setup) */
    double *sig;    /* per sample: NA sigmas (setup) */
    int cap;
    sl__worker_scratch scratch; /* per worker: run_cpu's taps and float buffers */
    sl__gpu_args gpu;
    sl__gpu_scratch gpu_tmp;
} gb_state;

static void gb_destroy(void *state) {
    gb_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    sl__gpu_scratch_free(&s->gpu_tmp);
    sl__worker_scratch_free(&s->scratch);
    free(s->blur);
    free(s->sig);
    free(s);
}

static sl_status gb_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    gb_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int k = 0; k < 2 && st == SL_OK; k++) {
        s->node[k] = sl__args_node(a, ARG[k]);
        s->given[k] = s->node[k] >= 0 || sl__args_get(a, ARG[k])->kind != SL_VAL_NONE;
        if (!s->given[k] || s->node[k] >= 0) continue;
        int n;
        if (k == 0) {
            const double *v;
            n = sl__args_floats(a, ARG[k], &v);
            for (int j = 0; j < n && j < NA; j++) s->lit[k][j] = v[j];
        } else {
            const int64_t *v;
            n = sl__args_ints(a, ARG[k], &v);
            for (int j = 0; j < n && j < NA; j++) s->lit[k][j] = (double)v[j];
        }
        if (n < 1 || n > NA)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: %s has %d values (one, or one per spatial axis: at most %d)", NAME,
                            ARG[k], n, NA);
        s->nlit[k] = n;
    }
    if (st == SL_OK && !s->given[0] && !s->given[1])
        st = sl_err_set(err, SL_EINVAL, "%s: give sigma, window_size or both", NAME);
    s->dtype = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    if (st == SL_OK) st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st != SL_OK) {
        gb_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* the 2r + 1 weights of one axis */
static void weights(double sigma, int r, float *w) {
    if (r == 0 || !(sigma > 0)) {
        for (int k = 0; k <= 2 * r; k++) w[k] = k == r ? 1.0f : 0.0f;
        return;
    }
    double sum = 0;
    for (int k = -r; k <= r; k++) sum += exp(-(double)k * k / (2 * sigma * sigma));
    for (int k = -r; k <= r; k++)
        w[k + r] = (float)(exp(-(double)k * k / (2 * sigma * sigma)) / sum);
}

/* Sample i's sigma and radius per axis (k axes) into sg and b->r. */
static sl_status sample_params(gb_state *s, const sl__op_io *io, int i, int k, double *sg,
                               sl__blur *b, sl_err *err) {
    double v[2][NA] = {{0}};
    for (int m = 0; m < 2; m++) {
        if (!s->given[m]) continue;
        double got[NA];
        int n = s->nlit[m];
        if (s->node[m] >= 0)
            n = sl__argin_values(io, s->node[m], i, got, NA);
        else
            memcpy(got, s->lit[m], sizeof got);
        if (n != 1 && n != k)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "%s has %d values for %d spatial axes (give one, or one per axis)",
                               ARG[m], n, k);
        for (int a = 0; a < k; a++) v[m][a] = got[n == 1 ? 0 : a];
    }
    for (int a = 0; a < k; a++) {
        double sigma = v[0][a], win = v[1][a];
        if (!(sigma >= 0))
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "sigma %g of axis %d is negative: `sigma` must have non-negative "
                               "values, got %g for sample: %d, axis: %d.",
                               sigma, a, sigma, i, a);
        if (win < 0)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "window_size %g of axis %d is negative: `window_size` must have "
                               "non-negative values, got %g for sample: %d, axis : %d.",
                               win, a, win, i, a);
        if (win != floor(win) || win > 2 * MAX_RADIUS + 1)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "window_size %g of axis %d: odd sizes from 1 to %d", win, a,
                               2 * MAX_RADIUS + 1);
        if (sigma == 0 && win == 0)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "sigma and window_size of axis %d are both 0 (give one): `sigma` "
                               "and `window_size` shouldn't be 0 at the same time for sample: %d, "
                               "axis: %d.",
                               a, i, a);
        if (win == 0) { /* DALI: 2 * ceil(3 sigma) + 1, in float */
            float r = ceilf((float)sigma * 3.0f);
            if (!(r <= MAX_RADIUS))
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "sigma %g of axis %d wants more than %d taps", sigma, a,
                                   2 * MAX_RADIUS + 1);
            win = 2 * (double)r + 1;
        } else if (fmod(win, 2) == 0) {
            return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                               "window_size %g of axis %d is even: the window must be odd: Kernel "
                               "window should have odd length, got: %g. Even or non-centered "
                               "windows are not supported yet, got window with even length: %g "
                               "for sample %d.",
                               win, a, win, win, i);
        }
        int r = (int)((win - 1) / 2);
        if (sigma == 0) sigma = 0.3 * (r - 1) + 0.8;
        sg[a] = sigma;
        b->r[a] = r;
    }
    return SL_OK;
}

static sl_status gb_setup(void *state, sl__op_io *io, sl_err *err) {
    gb_state *s = state;
    const sl_tlist *in = io->in[0];
    int first = 0, k = 0;
    SL_TRY(sl__conv_axes(NAME, in->layout, in->ndim, io->seq_frames != NULL, NA, &first, &k, err));
    if (in->dtype == SL_DTYPE_BOOL)
        return sl_err_set(err, SL_EINVAL, "%s: bool images are not supported", NAME);
    if (io->batch > s->cap) {
        double *g = realloc(s->sig, (size_t)io->batch * NA * sizeof *g);
        if (g) s->sig = g;
        sl__blur *b = g ? realloc(s->blur, (size_t)io->batch * sizeof *b) : NULL;
        if (b) s->blur = b;
        if (!g || !b) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        sl__blur *b = &s->blur[i];
        memset(b, 0, sizeof *b);
        SL_TRY(sample_params(s, io, i, k, s->sig + (size_t)i * NA, b, err));
        const int64_t *sh = sl_tlist_shape(in, i);
        b->naxes = k;
        b->n = 1;
        for (int d = 0; d < in->ndim; d++) b->n *= sh[d];
        for (int a = k - 1; a >= 0; a--) {
            int d = first + a;
            int64_t stride = 1;
            for (int j = d + 1; j < in->ndim; j++) stride *= sh[j];
            b->ext[a] = sh[d];
            b->stride[a] = stride ? stride : 1;
        }
        if (b->n == 0) b->naxes = 0; /* nothing to blur */
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype >= 0 ? (sl_dtype)s->dtype : in->dtype, in->ndim,
                          io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static int64_t taps(const sl__blur *b) {
    int64_t t = 0;
    for (int a = 0; a < b->naxes; a++) t += 2 * b->r[a] + 1;
    return t;
}

static sl_status gb_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    gb_state *s = state;
    const sl__blur *b = &s->blur[i];
    int k = b->naxes;
    if (k == 0) return SL_OK;
    int64_t nbuf = k > 2 ? 2 : k - 1;
    size_t need = sizeof(float) * (size_t)(taps(b) + nbuf * b->n);
    float *w = sl__worker_scratch_get(&s->scratch, worker, need);
    if (!w) return sl__op_fail(err, SL_ENOMEM, io, i, NAME, "out of memory");
    const float *wa[NA];
    float *at = w;
    for (int a = 0; a < k; a++) {
        weights(s->sig[(size_t)i * NA + (size_t)a], b->r[a], at);
        wa[a] = at;
        at += 2 * b->r[a] + 1;
    }
    float *buf[2] = {at, at + b->n};
    sl_dtype it = io->in[0]->dtype, ot = io->out[0]->dtype;
    for (int p = 0; p < k; p++) { /* innermost axis first */
        int a = k - 1 - p;
        const void *src = p == 0 ? io->in[0]->data[i] : buf[(p - 1) % 2];
        sl_dtype st = p == 0 ? it : SL_DTYPE_F32;
        if (p == k - 1)
            for (int64_t e = 0; e < b->n; e++)
                sl__dtype_conv_store(io->out[0]->data[i], ot, e,
                                     sl__blur_pass(b, a, wa[a], src, st, e));
        else
            for (int64_t e = 0; e < b->n; e++)
                buf[p % 2][e] = sl__blur_pass(b, a, wa[a], src, st, e);
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* descriptors and every sample's weights in one params block; the passes on the device, each
 * sample with its own two scratch buffers (one for two axes, none for one) */
static sl_status gb_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    gb_state *s = state;
    const sl_tlist *in = io->in[0];
    int n = io->batch, passes = 0;
    size_t bytes = sl__gpu_args_align((size_t)n * sizeof(sl__cuda_blur_desc));
    int64_t tmp_total = 0, most = 0;
    for (int i = 0; i < n; i++) {
        const sl__blur *b = &s->blur[i];
        for (int a = 0; a < b->naxes; a++)
            bytes += sl__gpu_args_align(sizeof(float) * (size_t)(2 * b->r[a] + 1));
        tmp_total += (b->naxes > 2 ? 2 : b->naxes > 1 ? 1 : 0) * b->n;
        if (b->n > most) most = b->n;
        if (b->naxes > passes) passes = b->naxes;
    }
    char *h = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!h) return err->status;
    sl__cuda_blur_desc *d = (sl__cuda_blur_desc *)h;
    size_t off = sl__gpu_args_align((size_t)n * sizeof *d);
    int64_t tmp = 0;
    for (int i = 0; i < n; i++) {
        memset(&d[i], 0, sizeof d[i]);
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].b = s->blur[i];
        for (int a = 0; a < d[i].b.naxes; a++) {
            d[i].w[a] = (int64_t)off;
            weights(s->sig[(size_t)i * NA + (size_t)a], d[i].b.r[a], (float *)(h + off));
            off += sl__gpu_args_align(sizeof(float) * (size_t)(2 * d[i].b.r[a] + 1));
        }
        d[i].tmp[0] = tmp;
        if (d[i].b.naxes > 1) tmp += d[i].b.n;
        d[i].tmp[1] = tmp;
        if (d[i].b.naxes > 2) tmp += d[i].b.n;
    }
    float *scratch =
        sl__gpu_scratch_get(&s->gpu_tmp, io->device.id,
                            (size_t)(tmp_total ? tmp_total : 1) * sizeof(float), io->stream, err);
    if (!scratch) return err->status;
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, off, io->stream, &dd, err));
    return sl__cuda_blur(dd, dd, n, passes, most, scratch, in->dtype, io->out[0]->dtype, io->stream,
                         err);
}
#define GB_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = gb_run_gpu,
#else
#define GB_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__gaussian_blur_op = {
    .name = "gaussian_blur",
    .doc = "Blurs the spatial axes (1 to 3; channels and frames ride along) with a separable "
           "Gaussian (DALI's fn.gaussian_blur).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = gb_args,
    .flags = SL_OPF_SEQUENCE,
    GB_DEVICES.create = gb_create,
    .setup = gb_setup,
    .run_cpu = gb_run_cpu,
    .destroy = gb_destroy,
};
