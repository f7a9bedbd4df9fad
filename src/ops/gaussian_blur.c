/* SPDX-License-Identifier: Apache-2.0 */
/* gaussian_blur: DALI's fn.gaussian_blur on HWC (or HW) images of any type. `sigma` (one value for
 * both axes or [y, x]; per sample as another op's output) and/or `window_size` (odd, one or
 * [y, x]): without a window it is 2 * ceil(3 sigma) + 1 taps, without sigma that is
 * 0.3 * ((window_size - 1) / 2 - 1) + 0.8 (both DALI's rules); sigma 0 leaves that axis alone.
 * The weights are exp(-k^2 / (2 sigma^2)) normalised to sum 1, computed in double and kept as
 * float; the border is reflect-101, as DALI's. Two separable passes through a float scratch
 * (ops/gaussian_blur.h, shared with the CUDA run, so the two give the same bits); `dtype` (default
 * the input's) is stored with DALI's ConvertSat rules. */
#include "operator/argin.h"
#include "ops/gaussian_blur.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/gaussian_blur.h"
#endif

static const sl__arg_schema gb_args[] = {
    {"sigma", SL_ARG_FLOATS, "None", "standard deviation in pixels, one or [y, x]",
     SL_ARGF_PER_SAMPLE | SL_ARGF_PER_FRAME, NULL},
    {"window_size", SL_ARG_INTS, "None", "taps, odd: one or [y, x] (default: from sigma)", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type (default: the input's)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { MAX_RADIUS = 4096 };
static const char *const NAME = "gaussian_blur";

typedef struct gb_state {
    bool has_sigma, has_window;
    double sigma[2];
    int64_t window[2];
    int node; /* per-sample sigma, or -1 */
    int dtype;
    double *sig; /* per sample: sigma [y, x] (setup) */
    int *rad;    /* per sample: radius [y, x] (setup) */
    int cap;
    sl__worker_scratch scratch; /* per worker: run_cpu's taps and rows */
    sl__gpu_args gpu;
    sl__gpu_scratch gpu_tmp;
} gb_state;

static void gb_destroy(void *state) {
    gb_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    sl__gpu_scratch_free(&s->gpu_tmp);
    sl__worker_scratch_free(&s->scratch);
    free(s->sig);
    free(s->rad);
    free(s);
}

static sl_status gb_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    gb_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->node = sl__args_node(a, "sigma");
    s->has_sigma = s->node >= 0 || sl__args_get(a, "sigma")->kind != SL_VAL_NONE;
    if (s->has_sigma && s->node < 0) {
        const double *v;
        int k = sl__args_floats(a, "sigma", &v);
        if (k < 1 || k > 2)
            st = sl_err_set(err, SL_EINVAL, "%s: sigma wants one value or [y, x]", NAME);
        else
            s->sigma[0] = v[0], s->sigma[1] = v[k - 1];
    }
    s->has_window = sl__args_get(a, "window_size")->kind != SL_VAL_NONE;
    if (st == SL_OK && s->has_window) {
        const int64_t *v;
        int k = sl__args_ints(a, "window_size", &v);
        if (k < 1 || k > 2 || v[0] < 1 || v[k - 1] < 1 || v[0] % 2 == 0 || v[k - 1] % 2 == 0 ||
            v[0] > 2 * MAX_RADIUS + 1 || v[k - 1] > 2 * MAX_RADIUS + 1)
            st = sl_err_set(err, SL_EINVAL,
                            "%s: window_size wants odd sizes from 1 to %d, one or [y, x]", NAME,
                            2 * MAX_RADIUS + 1);
        else
            s->window[0] = v[0], s->window[1] = v[k - 1];
    }
    if (st == SL_OK && !s->has_sigma && !s->has_window)
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

static sl_status gb_setup(void *state, sl__op_io *io, sl_err *err) {
    gb_state *s = state;
    const sl_tlist *in = io->in[0];
    if (!(in->ndim == 2 || (in->ndim == 3 && (!in->layout[0] || !strcmp(in->layout, "HWC")))))
        return sl_err_set(err, SL_EINVAL, "%s: images are HWC or HW (layout \"%s\", %d dims)", NAME,
                          in->layout, in->ndim);
    if (in->dtype == SL_DTYPE_BOOL)
        return sl_err_set(err, SL_EINVAL, "%s: bool images are not supported", NAME);
    if (io->batch > s->cap) {
        double *g = realloc(s->sig, (size_t)io->batch * 2 * sizeof *g);
        if (g) s->sig = g;
        int *r = g ? realloc(s->rad, (size_t)io->batch * 2 * sizeof *r) : NULL;
        if (r) s->rad = r;
        if (!g || !r) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", NAME);
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        double sg[2] = {s->sigma[0], s->sigma[1]};
        if (s->node >= 0) {
            double v[2];
            int k = sl__argin_values(io, s->node, i, v, 2);
            if (k < 1 || k > 2)
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "sigma must be one value or [y, x] per sample");
            sg[0] = v[0], sg[1] = v[k - 1];
        }
        for (int d = 0; d < 2; d++) {
            double r;
            if (s->has_window) {
                r = (double)(s->window[d] - 1) / 2;
                if (!s->has_sigma) sg[d] = 0.3 * (r - 1) + 0.8;
            } else {
                r = ceil(3 * sg[d]);
            }
            if (!(sg[d] >= 0) || !(r <= MAX_RADIUS))
                return sl__op_fail(err, SL_EINVAL, io, i, NAME,
                                   "sigma %g: it must be >= 0 and want at most %d taps", sg[d],
                                   2 * MAX_RADIUS + 1);
            s->sig[2 * i + d] = sg[d];
            s->rad[2 * i + d] = (int)r;
        }
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype >= 0 ? (sl_dtype)s->dtype : in->dtype, in->ndim,
                          io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static sl__blur blur_of(const gb_state *s, const sl_tlist *in, int i) {
    const int64_t *sh = sl_tlist_shape(in, i);
    sl__blur b = {sh[0], sh[1], in->ndim == 3 ? sh[2] : 1, s->rad[2 * i], s->rad[2 * i + 1]};
    return b;
}

static sl_status gb_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    gb_state *s = state;
    const sl_tlist *in = io->in[0];
    sl__blur b = blur_of(s, in, i);
    int64_t n = b.h * b.w * b.c;
    size_t need = sizeof(float) * (size_t)(2 * b.ry + 1 + 2 * b.rx + 1 + n);
    float *wy = sl__worker_scratch_get(&s->scratch, worker, need);
    if (!wy) return sl__op_fail(err, SL_ENOMEM, io, i, NAME, "out of memory");
    float *wx = wy + 2 * b.ry + 1, *tmp = wx + 2 * b.rx + 1;
    weights(s->sig[2 * i], b.ry, wy);
    weights(s->sig[2 * i + 1], b.rx, wx);
    for (int64_t e = 0; e < n; e++) tmp[e] = sl__blur_h(&b, wx, in->data[i], in->dtype, e);
    for (int64_t e = 0; e < n; e++)
        sl__blur_v(&b, wy, tmp, io->out[0]->data[i], io->out[0]->dtype, e);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* descriptors and every sample's weights in one params block; the passes on the device */
static sl_status gb_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    gb_state *s = state;
    const sl_tlist *in = io->in[0];
    int n = io->batch;
    size_t bytes = sl__gpu_args_align((size_t)n * sizeof(sl__cuda_blur_desc));
    int64_t tmp_total = 0, most = 0;
    for (int i = 0; i < n; i++) {
        sl__blur b = blur_of(s, in, i);
        bytes += sl__gpu_args_align(sizeof(float) * (size_t)(2 * b.ry + 1)) +
                 sl__gpu_args_align(sizeof(float) * (size_t)(2 * b.rx + 1));
        tmp_total += b.h * b.w * b.c;
        if (b.h * b.w * b.c > most) most = b.h * b.w * b.c;
    }
    char *h = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!h) return err->status;
    sl__cuda_blur_desc *d = (sl__cuda_blur_desc *)h;
    size_t off = sl__gpu_args_align((size_t)n * sizeof *d);
    int64_t tmp = 0;
    for (int i = 0; i < n; i++) {
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].b = blur_of(s, in, i);
        d[i].wy = (int64_t)off,
        off += sl__gpu_args_align(sizeof(float) * (size_t)(2 * d[i].b.ry + 1));
        d[i].wx = (int64_t)off,
        off += sl__gpu_args_align(sizeof(float) * (size_t)(2 * d[i].b.rx + 1));
        weights(s->sig[2 * i], d[i].b.ry, (float *)(h + d[i].wy));
        weights(s->sig[2 * i + 1], d[i].b.rx, (float *)(h + d[i].wx));
        d[i].tmp = tmp;
        tmp += d[i].b.h * d[i].b.w * d[i].b.c;
    }
    float *scratch =
        sl__gpu_scratch_get(&s->gpu_tmp, io->device.id,
                            (size_t)(tmp_total ? tmp_total : 1) * sizeof(float), io->stream, err);
    if (!scratch) return err->status;
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, off, io->stream, &dd, err));
    return sl__cuda_blur(dd, dd, n, most, scratch, in->dtype, io->out[0]->dtype, io->stream, err);
}
#define GB_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = gb_run_gpu,
#else
#define GB_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__gaussian_blur_op = {
    .name = "gaussian_blur",
    .doc = "Blurs HWC or HW images with a separable Gaussian (DALI's fn.gaussian_blur).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = gb_args,
    .flags = SL_OPF_SEQUENCE,
    GB_DEVICES.create = gb_create,
    .setup = gb_setup,
    .run_cpu = gb_run_cpu,
    .destroy = gb_destroy,
};
