/* SPDX-License-Identifier: Apache-2.0 */
/* The audio operators that work on signals and values sample by sample (DALI's names, arguments
 * and defaults):
 *   preemphasis_filter  out[t] = x[t] - coeff * x[t - 1]; x[-1] from `border`: "clamp" (x[0],
 *                       the default), "zero" (0) or "reflect" (x[1]).
 *   nonsilent_region    the first sample and the length of the region whose short-term power
 *                       (the mean of x^2 over the window_length samples ending at each sample,
 *                       those before the start counted as 0) is at least cutoff_db below
 *                       reference_power (0: the signal's largest short-term power); the region
 *                       starts window_length - 1 samples before the first loud window's end, at
 *                       0 at the earliest. Two int32 scalars; a silent signal gives (0, 0).
 *   audio_resample      resamples (time,) or (time, channels) audio by in_rate/out_rate,
 *                       scale, or to out_length samples (ops/audio_dsp.h's windowed sinc), in
 *                       float; integer audio (up to 32 bits) is normalized on the way in and
 *                       scaled back to dtype (default: the input's) on the way out.
 *   to_decibels         multiplier * log10(max(min_ratio, x / reference)), min_ratio =
 *                       10^(cutoff_db / multiplier); reference left out: each sample's largest
 *                       value (0 is refused, as DALI's).
 * All CPU; every output is float32 except where said. */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"
#include "operator/gpu_args.h"
#include "ops/audio_dsp.h"
#include "ops/audio_gpu.h"

#include "core/alloc.h"
#ifdef SLUICE_HAVE_CUDA
#include "core/cuda.h"
#endif
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t volume(const sl_tlist *l, int i) {
    int64_t n = 1;
    for (int d = 0; d < l->ndim; d++) n *= sl_tlist_shape(l, i)[d];
    return n;
}

/* out as in: same shapes and layout, dtype */
static sl_status same_shape(const sl_tlist *in, sl_tlist *out, int batch, sl_dtype dtype,
                            sl_device dev, sl_err *err) {
    SL_TRY(sl_tlist_reset(out, batch, dtype, in->ndim, dev, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* the value of a per-sample float argument for sample i (the constant when not given as an op) */
static sl_status per_sample(const sl__op_io *io, int node, double constant, int i, const char *op,
                            const char *arg, double *out, sl_err *err) {
    *out = constant;
    if (node < 0) return SL_OK;
    if (sl__argin_values(io, node, i, out, 1) != 1)
        return sl__op_fail(err, SL_EINVAL, io, i, op, "%s must be one value per sample", arg);
    return SL_OK;
}

static bool numeric(sl_dtype t) {
    return t != SL_DTYPE_BOOL;
}

/* ---- preemphasis_filter ---------------------------------------------------------------------- */

static const sl__arg_schema pe_args[] = {
    {"preemph_coeff", SL_ARG_FLOAT, "0.97", "the filter's coefficient (may be per sample)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"border", SL_ARG_ENUM, "\"clamp\"", "what stands before the first sample", 0,
     "zero|clamp|reflect"},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct pe_state {
    double coeff;
    int node;
    int border; /* 0 zero, 1 clamp, 2 reflect */
    sl_dtype dtype;
    double *coeffs; /* batch */
    int cap;
    sl__gpu_args gpu;
} pe_state;

static void pe_destroy(void *state) {
    pe_state *s = state;
    if (s) {
        free(s->coeffs);
        sl__gpu_args_free(&s->gpu);
    }
    free(s);
}

static sl_status pe_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    pe_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->node = sl__args_node(a, "preemph_coeff");
    s->coeff = s->node >= 0 ? 0 : sl__args_float(a, "preemph_coeff");
    const char *b = sl__args_str(a, "border");
    s->border = strcmp(b, "zero") == 0 ? 0 : strcmp(b, "clamp") == 0 ? 1 : 2;
    s->dtype = sl__args_dtype(a, "dtype");
    s->cap = init->batch_size > 0 ? init->batch_size : 1;
    s->coeffs = sl__calloc((size_t)s->cap, sizeof *s->coeffs, err);
    if (!s->coeffs) {
        pe_destroy(s);
        return SL_ENOMEM;
    }
    if (s->dtype == SL_DTYPE_BOOL) {
        pe_destroy(s);
        return sl_err_set(err, SL_EINVAL, "preemphasis_filter: dtype BOOL");
    }
    *out = s;
    return SL_OK;
}

static sl_status pe_setup(void *state, sl__op_io *io, sl_err *err) {
    pe_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 1 || !numeric(in->dtype))
        return sl_err_set(err, SL_EINVAL,
                          "preemphasis_filter: the input must be 1-D audio (time,), not %d-D %s",
                          in->ndim, sl_dtype_name(in->dtype));
    if (io->batch > s->cap) {
        double *c = realloc(s->coeffs, (size_t)io->batch * sizeof *c);
        if (!c) return sl_err_set(err, SL_ENOMEM, "preemphasis_filter: out of memory");
        s->coeffs = c, s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++)
        SL_TRY(per_sample(io, s->node, s->coeff, i, "preemphasis_filter", "preemph_coeff",
                          &s->coeffs[i], err));
    return same_shape(in, io->out[0], io->batch, s->dtype, io->device, err);
}

static sl_status pe_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    pe_state *s = state;
    const sl_tlist *in = io->in[0];
    const void *x = in->data[i];
    void *y = io->out[0]->data[i];
    int64_t n = sl_tlist_shape(in, i)[0];
    if (n == 0) return SL_OK;
    double c = s->coeffs[i];
    double prev = s->border == 0   ? 0
                  : s->border == 1 ? sl__dtype_conv_load(x, in->dtype, 0)
                                   : sl__dtype_conv_load(x, in->dtype, n > 1 ? 1 : 0);
    if (in->dtype == SL_DTYPE_F32 && s->dtype == SL_DTYPE_F32) { /* the usual case */
        const float *xf = x;
        float *yf = y;
        yf[0] = (float)(xf[0] - c * prev);
        for (int64_t t = 1; t < n; t++) yf[t] = (float)(xf[t] - c * xf[t - 1]);
        return SL_OK;
    }
    for (int64_t t = 0; t < n; t++) {
        double v = sl__dtype_conv_load(x, in->dtype, t);
        sl__dtype_conv_store(y, s->dtype, t, v - c * prev);
        prev = v;
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status pe_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    pe_state *s = state;
    int n = io->batch;
    sl__cuda_preemph_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)(n ? n : 1) * sizeof *d, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < n; i++) {
        d[i].in = io->in[0]->data[i], d[i].out = io->out[0]->data[i];
        d[i].n = sl_tlist_shape(io->in[0], i)[0];
        d[i].coeff = s->coeffs[i];
        if (d[i].n > most) most = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)(n ? n : 1) * sizeof *d, io->stream, &dd, err));
    return sl__cuda_preemphasis(dd, n, most, (int)io->in[0]->dtype, (int)s->dtype, s->border,
                                io->stream, err);
}
#define PE_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = pe_run_gpu,
#else
#define PE_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__preemphasis_filter_op = {
    .name = "preemphasis_filter",
    .doc = "Pre-emphasis: out[t] = x[t] - preemph_coeff * x[t-1], the sample before the first "
           "from border (DALI's fn.preemphasis_filter).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = pe_args,
    PE_DEVICES.create = pe_create,
    .setup = pe_setup,
    .run_cpu = pe_run_cpu,
    .destroy = pe_destroy,
};

/* ---- nonsilent_region ------------------------------------------------------------------------ */

static const sl__arg_schema ns_args[] = {
    {"cutoff_db", SL_ARG_FLOAT, "-60.0", "below this (dB relative to reference_power) is silence",
     0, NULL},
    {"reference_power", SL_ARG_FLOAT, "0.0",
     "the power 0 dB stands for (0: the signal's largest short-term power)", 0, NULL},
    {"window_length", SL_ARG_INT, "2048", "samples over which the short-term power is averaged", 0,
     NULL},
    {"reset_interval", SL_ARG_INT, "8192",
     "the running sum of squares is recomputed from scratch every so many samples (-1: never)", 0,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct ns_state {
    double cutoff, ref;
    int64_t window, reset;
    sl__worker_scratch scratch;
} ns_state;

static void ns_destroy(void *state) {
    ns_state *s = state;
    if (s) sl__worker_scratch_free(&s->scratch);
    free(s);
}

static int ns_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static sl_status ns_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    ns_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->cutoff = sl__args_float(a, "cutoff_db");
    s->ref = sl__args_float(a, "reference_power");
    s->window = sl__args_int(a, "window_length");
    s->reset = sl__args_int(a, "reset_interval");
    sl_status st = SL_OK;
    if (s->window < 1 || s->window > ((int64_t)1 << 30))
        st = sl_err_set(err, SL_EINVAL, "nonsilent_region: window_length %lld (1 to 2^30)",
                        (long long)s->window);
    else if (s->reset == 0 || s->reset < -1)
        st = sl_err_set(err, SL_EINVAL, "nonsilent_region: reset_interval %lld (> 0, or -1)",
                        (long long)s->reset);
    else if (s->ref < 0 || !isfinite(s->ref))
        st = sl_err_set(err, SL_EINVAL, "nonsilent_region: reference_power %g (>= 0)", s->ref);
    else if (!isfinite(s->cutoff))
        st = sl_err_set(err, SL_EINVAL, "nonsilent_region: cutoff_db %g", s->cutoff);
    if (!st) st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st) {
        ns_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status ns_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 1 || !numeric(in->dtype))
        return sl_err_set(err, SL_EINVAL,
                          "nonsilent_region: the input must be 1-D audio (time,), not %d-D %s",
                          in->ndim, sl_dtype_name(in->dtype));
    for (int k = 0; k < 2; k++) {
        SL_TRY(sl_tlist_reset(io->out[k], io->batch, SL_DTYPE_I32, 0, sl_cpu(), err));
        SL_TRY(sl_tlist_alloc(io->out[k], in->shapes, err));
    }
    return SL_OK;
}

static sl_status ns_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    ns_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t n = sl_tlist_shape(in, i)[0];
    int32_t *begin = io->out[0]->data[i], *length = io->out[1]->data[i];
    *begin = 0, *length = 0;
    if (n == 0) return SL_OK;
    if (n > INT32_MAX)
        return sl__op_fail(err, SL_EINVAL, io, i, "nonsilent_region",
                           "%lld samples (at most 2^31 - 1: the outputs are int32)", (long long)n);
    double *p = sl__worker_scratch_get(&s->scratch, worker, (size_t)n * sizeof *p);
    if (!p) return sl__op_fail(err, SL_ENOMEM, io, i, "nonsilent_region", "out of memory");
    const void *x = in->data[i];
    double sum = 0, most = 0;
    int64_t w = s->window;
    for (int64_t t = 0; t < n; t++) {
        if (s->reset > 0 && t % s->reset == 0 && t > 0) { /* exact again: no drift */
            sum = 0;
            for (int64_t j = t - w + 1 > 0 ? t - w + 1 : 0; j < t; j++) {
                double v = sl__dtype_conv_load(x, in->dtype, j);
                sum += v * v;
            }
        }
        double v = sl__dtype_conv_load(x, in->dtype, t);
        sum += v * v;
        if (t - w >= 0 && !(s->reset > 0 && t % s->reset == 0 && t > 0)) {
            double o = sl__dtype_conv_load(x, in->dtype, t - w);
            sum -= o * o;
        }
        p[t] = sum > 0 ? sum / (double)w : 0;
        if (p[t] > most) most = p[t];
    }
    double ref = s->ref > 0 ? s->ref : most;
    if (ref <= 0) return SL_OK; /* all zero: silent */
    double thresh = ref * pow(10, s->cutoff / 10);
    int64_t first = -1, last = -1;
    for (int64_t t = 0; t < n; t++)
        if (p[t] >= thresh && p[t] > 0) {
            first = t;
            break;
        }
    if (first < 0) return SL_OK;
    for (int64_t t = n - 1; t >= first; t--)
        if (p[t] >= thresh && p[t] > 0) {
            last = t;
            break;
        }
    int64_t b = first - (w - 1);
    if (b < 0) b = 0;
    *begin = (int32_t)b;
    *length = (int32_t)(last - b + 1);
    return SL_OK;
}

const sl__op_def sl__nonsilent_region_op = {
    .name = "nonsilent_region",
    .doc = "Finds the leading and trailing silence of 1-D audio from its short-term power: the "
           "non-silent region's first sample and length, int32 scalars (DALI's "
           "fn.nonsilent_region).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = ns_args,
    .devices = SL_OPDEV_CPU,
    .num_outputs = ns_outputs,
    .create = ns_create,
    .setup = ns_setup,
    .run_cpu = ns_run_cpu,
    .destroy = ns_destroy,
};

/* ---- audio_resample -------------------------------------------------------------------------- */

static const sl__arg_schema rs_args[] = {
    {"in_rate", SL_ARG_FLOAT, "None", "the input's sample rate (with out_rate; may be per sample)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"out_rate", SL_ARG_FLOAT, "None", "the output's sample rate (with in_rate; may be per sample)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"scale", SL_ARG_FLOAT, "None", "output length / input length (may be per sample)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"out_length", SL_ARG_INT, "None", "the output's length in samples (may be per sample)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"quality", SL_ARG_FLOAT, "50.0", "resampling quality, 0 to 100 (the sinc's width)", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None",
     "output type (default: the input's); another type's values are normalized to its range", 0,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { RS_IN, RS_OUT, RS_SCALE, RS_LEN, RS_NARGS };

/* The types audio_resample takes and gives (DALI's): float and the integers up to 32 bits. The
 * integers stand for -1..1: a signed one x / max (its minimum a little below -1), an unsigned one
 * x / max * 2 - 1 (0 at half its range); the other way, float values from -1..1 are scaled back,
 * rounded to nearest (ties to even) and saturated. */
static bool rs_type_ok(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_F32:
    case SL_DTYPE_U8:
    case SL_DTYPE_I8:
    case SL_DTYPE_U16:
    case SL_DTYPE_I16:
    case SL_DTYPE_U32:
    case SL_DTYPE_I32:
        return true;
    default:
        return false;
    }
}

static double rs_int_max(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_U8:
        return 255.0;
    case SL_DTYPE_I8:
        return 127.0;
    case SL_DTYPE_U16:
        return 65535.0;
    case SL_DTYPE_I16:
        return 32767.0;
    case SL_DTYPE_U32:
        return 4294967295.0;
    default: /* I32 */
        return 2147483647.0;
    }
}

static bool rs_unsigned(sl_dtype t) {
    return t == SL_DTYPE_U8 || t == SL_DTYPE_U16 || t == SL_DTYPE_U32;
}

/* n values of type t at p, normalized, into float */
static void rs_to_float(const void *p, sl_dtype t, int64_t n, float *out) {
    double max = rs_int_max(t);
    if (rs_unsigned(t))
        for (int64_t k = 0; k < n; k++)
            out[k] = (float)(sl__dtype_conv_load(p, t, k) / max * 2 - 1);
    else
        for (int64_t k = 0; k < n; k++) out[k] = (float)(sl__dtype_conv_load(p, t, k) / max);
}

/* n floats (-1..1 stands for the type's range) into type t at p */
static void rs_from_float(const float *in, int64_t n, sl_dtype t, void *p) {
    double max = rs_int_max(t);
    if (rs_unsigned(t))
        for (int64_t k = 0; k < n; k++)
            sl__dtype_conv_store(p, t, k, ((double)in[k] + 1) / 2 * max);
    else
        for (int64_t k = 0; k < n; k++) sl__dtype_conv_store(p, t, k, (double)in[k] * max);
}
static const char *const rs_names[RS_NARGS] = {"in_rate", "out_rate", "scale", "out_length"};

typedef struct rs_state {
    bool has[RS_NARGS];
    int node[RS_NARGS];
    double val[RS_NARGS];
    sl__audio_dsp_resampler rs;
    double *ratio; /* batch: out_rate / in_rate, as positions map */
    int cap;
    bool same_type; /* no dtype given: the output's type is the input's */
    sl_dtype dtype;
} rs_state;

static void rs_destroy(void *state) {
    rs_state *s = state;
    if (!s) return;
    sl__audio_dsp_resampler_free(&s->rs);
    free(s->ratio);
    free(s);
}

static sl_status rs_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    rs_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int k = 0; k < RS_NARGS; k++) {
        s->node[k] = sl__args_node(a, rs_names[k]);
        s->has[k] = s->node[k] >= 0 || sl__args_get(a, rs_names[k])->kind != SL_VAL_NONE;
        if (s->has[k] && s->node[k] < 0)
            s->val[k] =
                k == RS_LEN ? (double)sl__args_int(a, rs_names[k]) : sl__args_float(a, rs_names[k]);
    }
    int ways = (s->has[RS_IN] || s->has[RS_OUT]) + s->has[RS_SCALE] + s->has[RS_LEN];
    if (ways != 1)
        st = sl_err_set(err, SL_EINVAL,
                        "audio_resample: give in_rate and out_rate, or scale, or out_length "
                        "(exactly one of the three)");
    else if (s->has[RS_IN] != s->has[RS_OUT])
        st = sl_err_set(err, SL_EINVAL, "audio_resample: in_rate and out_rate go together");
    s->same_type = sl__args_get(a, "dtype")->kind == SL_VAL_NONE;
    if (!s->same_type) s->dtype = sl__args_dtype(a, "dtype");
    if (!st && !s->same_type && !rs_type_ok(s->dtype))
        st = sl_err_set(err, SL_EINVAL,
                        "audio_resample: dtype %s (FLOAT, UINT8, INT8, UINT16, INT16, UINT32 or "
                        "INT32)",
                        sl_dtype_name(s->dtype));
    double q = sl__args_float(a, "quality");
    if (!st && !(q >= 0 && q <= 100))
        st = sl_err_set(err, SL_EINVAL, "audio_resample: quality %g (0 to 100)", q);
    if (!st) st = sl__audio_dsp_resampler_init(&s->rs, q, err);
    if (!st) {
        s->cap = init->batch_size > 0 ? init->batch_size : 1;
        s->ratio = sl__calloc((size_t)s->cap, sizeof *s->ratio, err);
        if (!s->ratio) st = SL_ENOMEM;
    }
    if (st) {
        rs_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status rs_setup(void *state, sl__op_io *io, sl_err *err) {
    rs_state *s = state;
    const sl_tlist *in = io->in[0];
    if ((in->ndim != 1 && in->ndim != 2) || !rs_type_ok(in->dtype))
        return sl_err_set(err, SL_EINVAL,
                          "audio_resample: the input must be audio, (time,) or (time, channels), "
                          "of float or an integer type up to 32 bits, not %d-D %s",
                          in->ndim, sl_dtype_name(in->dtype));
    sl_dtype out_type = s->same_type ? in->dtype : s->dtype;
    if (io->batch > s->cap) {
        double *r = realloc(s->ratio, (size_t)io->batch * sizeof *r);
        if (!r) return sl_err_set(err, SL_ENOMEM, "audio_resample: out of memory");
        s->ratio = r, s->cap = io->batch;
    }
    int nd = in->ndim;
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * 2 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        double v[RS_NARGS];
        for (int k = 0; k < RS_NARGS && st == SL_OK; k++)
            if (s->has[k])
                st = per_sample(io, s->node[k], s->val[k], i, "audio_resample", rs_names[k], &v[k],
                                err);
        if (st) break;
        int64_t n = sl_tlist_shape(in, i)[0], m;
        double ratio;
        if (s->has[RS_IN]) {
            if (!(v[RS_IN] > 0 && v[RS_OUT] > 0 && v[RS_IN] <= 1e7 && v[RS_OUT] <= 1e7)) {
                st = sl__op_fail(err, SL_EINVAL, io, i, "audio_resample",
                                 "in_rate %g, out_rate %g (each > 0, at most 1e7)", v[RS_IN],
                                 v[RS_OUT]);
                break;
            }
            ratio = v[RS_OUT] / v[RS_IN];
            m = sl__audio_dsp_resampled_length(n, v[RS_IN], v[RS_OUT]);
        } else if (s->has[RS_SCALE]) {
            if (!(v[RS_SCALE] > 0 && v[RS_SCALE] <= 1e4)) {
                st = sl__op_fail(err, SL_EINVAL, io, i, "audio_resample",
                                 "scale %g (> 0, at most 1e4)", v[RS_SCALE]);
                break;
            }
            ratio = v[RS_SCALE];
            m = sl__audio_dsp_resampled_length(n, 1, ratio);
        } else {
            if (!(v[RS_LEN] >= 0 && v[RS_LEN] <= (double)((int64_t)1 << 34))) {
                st = sl__op_fail(err, SL_EINVAL, io, i, "audio_resample",
                                 "out_length %g (0 to 2^34)", v[RS_LEN]);
                break;
            }
            m = (int64_t)v[RS_LEN];
            ratio = n > 0 ? (double)m / (double)n : 1;
        }
        if ((double)m > 1e4 * (double)(n + 1)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, "audio_resample",
                             "%lld samples to %lld: more than 10^4 times as long", (long long)n,
                             (long long)m);
            break;
        }
        s->ratio[i] = ratio;
        shapes[(size_t)i * nd] = m;
        if (nd == 2) shapes[(size_t)i * nd + 1] = sl_tlist_shape(in, i)[1];
    }
    if (st == SL_OK) st = sl_tlist_reset(io->out[0], io->batch, out_type, nd, sl_cpu(), err);
    if (st == SL_OK) st = sl_tlist_alloc(io->out[0], shapes, err);
    if (st == SL_OK) memcpy(io->out[0]->layout, in->layout, sizeof in->layout);
    free(shapes);
    return st;
}

static sl_status rs_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker;
    rs_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    int ch = in->ndim == 2 ? (int)sl_tlist_shape(in, i)[1] : 1;
    int64_t n = sl_tlist_shape(in, i)[0], m = sl_tlist_shape(out, i)[0];
    if (ch == 0 || m == 0) return SL_OK;
    /* integer audio goes through float: the input normalized, the output scaled back */
    bool in_f = in->dtype == SL_DTYPE_F32, out_f = out->dtype == SL_DTYPE_F32;
    float *x = in_f ? in->data[i] : NULL, *y = out_f ? out->data[i] : NULL;
    if (!in_f && n > 0) {
        x = sl__malloc((size_t)(n * ch) * sizeof(float), err);
        if (!x) return SL_ENOMEM;
        rs_to_float(in->data[i], in->dtype, n * ch, x);
    }
    if (!out_f) {
        y = sl__malloc((size_t)(m * ch) * sizeof(float), err);
        if (!y) {
            if (!in_f) free(x);
            return SL_ENOMEM;
        }
    }
    if (n == 0)
        memset(y, 0, (size_t)(m * ch) * sizeof(float));
    else
        sl__audio_dsp_resample(&s->rs, x, n, ch, 1.0, y, m, s->ratio[i]);
    if (!out_f) {
        rs_from_float(y, m * ch, out->dtype, out->data[i]);
        free(y);
    }
    if (!in_f) free(x);
    return SL_OK;
}

const sl__op_def sl__audio_resample_op = {
    .name = "audio_resample",
    .aliases = "experimental.audio_resample",
    .doc = "Resamples audio, (time,) or (time, channels), float or integer, by in_rate/out_rate, "
           "scale or to out_length, with a windowed sinc (DALI's fn.audio_resample); dtype "
           "converts, normalizing the values to the new type's range.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = rs_args,
    .devices = SL_OPDEV_CPU,
    .create = rs_create,
    .setup = rs_setup,
    .run_cpu = rs_run_cpu,
    .destroy = rs_destroy,
};

/* ---- to_decibels ----------------------------------------------------------------------------- */

static const sl__arg_schema db_args[] = {
    {"multiplier", SL_ARG_FLOAT, "10.0", "the logarithm's factor (10 for power, 20 for amplitude)",
     0, NULL},
    {"reference", SL_ARG_FLOAT, "None",
     "the magnitude 0 dB stands for (default: each sample's largest)", 0, NULL},
    {"cutoff_db", SL_ARG_FLOAT, "-200.0", "the least value out, in dB: smaller ratios saturate", 0,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct db_state {
    double mult, ref, min_ratio;
    sl__gpu_args gpu;
    sl__gpu_scratch maxes;
} db_state;

static void db_destroy(void *state) {
    db_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        sl__gpu_scratch_free(&s->maxes);
    }
    free(s);
}

static sl_status db_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    db_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->mult = sl__args_float(a, "multiplier");
    /* not given: each sample's largest (s->ref 0); given, it must be > 0 (DALI refuses 0) */
    bool has_ref = sl__args_get(a, "reference")->kind != SL_VAL_NONE;
    s->ref = has_ref ? sl__args_float(a, "reference") : 0;
    double cut = sl__args_float(a, "cutoff_db");
    sl_status st = SL_OK;
    if (s->mult == 0 || !isfinite(s->mult))
        st = sl_err_set(err, SL_EINVAL, "to_decibels: multiplier %g (nonzero)", s->mult);
    else if (has_ref && s->ref == 0)
        st = sl_err_set(err, SL_EINVAL,
                        "to_decibels: `reference` argument can't be zero (leave it out for each "
                        "sample's largest value)");
    else if (s->ref < 0 || !isfinite(s->ref))
        st = sl_err_set(err, SL_EINVAL, "to_decibels: reference %g (> 0)", s->ref);
    else if (!isfinite(cut))
        st = sl_err_set(err, SL_EINVAL, "to_decibels: cutoff_db %g", cut);
    s->min_ratio = pow(10, cut / s->mult);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status db_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL, "to_decibels: the input must be float32, not %s",
                          sl_dtype_name(in->dtype));
    return same_shape(in, io->out[0], io->batch, SL_DTYPE_F32, io->device, err);
}

static sl_status db_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    db_state *s = state;
    const float *x = io->in[0]->data[i];
    float *y = io->out[0]->data[i];
    int64_t n = volume(io->in[0], i);
    double ref = s->ref;
    if (ref == 0) {
        for (int64_t k = 0; k < n; k++)
            if (x[k] > ref) ref = x[k];
        if (ref == 0) ref = 1; /* nothing positive: every value saturates */
    }
    double inv = 1 / ref;
    for (int64_t k = 0; k < n; k++) {
        double r = x[k] * inv;
        y[k] = (float)(s->mult * log10(r > s->min_ratio ? r : s->min_ratio));
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status db_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    db_state *s = state;
    int n = io->batch;
    sl__cuda_db_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)(n ? n : 1) * sizeof *d, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < n; i++) {
        d[i].in = io->in[0]->data[i], d[i].out = io->out[0]->data[i];
        d[i].n = volume(io->in[0], i);
        if (d[i].n > most) most = d[i].n;
    }
    float *maxes = NULL;
    if (s->ref == 0) {
        maxes = sl__gpu_scratch_get(&s->maxes, io->device.id, (size_t)(n ? n : 1) * sizeof(float),
                                    io->stream, err);
        if (!maxes) return err->status;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)(n ? n : 1) * sizeof *d, io->stream, &dd, err));
    return sl__cuda_to_decibels(dd, n, most, s->mult, s->ref, s->min_ratio, maxes, io->stream, err);
}
#define DB_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = db_run_gpu,
#else
#define DB_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__to_decibels_op = {
    .name = "to_decibels",
    .doc = "Magnitudes to decibels: multiplier * log10(max(min_ratio, x / reference)) (DALI's "
           "fn.to_decibels).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = db_args,
    DB_DEVICES.create = db_create,
    .setup = db_setup,
    .run_cpu = db_run_cpu,
    .destroy = db_destroy,
};
