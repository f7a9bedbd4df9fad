/* SPDX-License-Identifier: Apache-2.0 */
/* normalize: DALI's fn.normalize, out = scale * (in - mean) / stddev + shift. The mean and the
 * standard deviation are computed over the reduced axes (`axes`, or `axis_names` from the layout;
 * by default every axis), one value per position in the other axes -- per sample, or across the
 * whole batch with batch=True -- unless `mean` / `stddev` give them (scalars, or per sample: one
 * value, or a tensor of the statistics' shape, the input's with the reduced extents 1, where an
 * extent 1 is broadcast; on the GPU one value per sample).
 * The variance is sum((x - mean)^2) / (N - ddof) plus epsilon; a zero variance gives an inverse of
 * zero, so a constant region maps to `shift` (as DALI); N <= ddof with epsilon 0 does too. A given
 * stddev is used as 1 / stddev, or 1 / sqrt(stddev^2 + epsilon) when epsilon is set. Sums are
 * accumulated in double (DALI uses float). The output keeps the input's shape and layout; `dtype`
 * (FLOAT) is stored with DALI's ConvertSat rules. Per-sample statistics are computed on the pool
 * with the normalisation; batch statistics in setup, on the stage's thread. On a GPU
 * (ops/normalize.cu) a block of threads sums each statistic and one thread per element applies
 * it; the sums are added in another (fixed) order, so results agree with the CPU's to double
 * rounding, not always to the bit. */
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

#ifdef SLUICE_HAVE_CUDA
#include "ops/normalize.h"
#endif

static const sl__arg_schema nz_args[] = {
    {"mean", SL_ARG_FLOAT, "None", "mean to subtract (default: computed)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"stddev", SL_ARG_FLOAT, "None", "standard deviation to divide by (default: computed)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"axes", SL_ARG_INTS, "[]", "the reduced axes (default: all); exclusive with axis_names", 0,
     NULL},
    {"axis_names", SL_ARG_STR, "\"\"", "the reduced axes by layout letter (\"HW\")", 0, NULL},
    {"batch", SL_ARG_BOOL, "False", "statistics across the whole batch", 0, NULL},
    {"ddof", SL_ARG_INT, "0", "delta degrees of freedom: the variance divides by N - ddof", 0,
     NULL},
    {"epsilon", SL_ARG_FLOAT, "0.0", "added to the variance", 0, NULL},
    {"scale", SL_ARG_FLOAT, "1.0", "multiplies the normalised value", 0, NULL},
    {"shift", SL_ARG_FLOAT, "0.0", "added last: what the mean maps to", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct nz_state {
    bool has_mean, has_std, batch;
    double mean, std, eps, scale, shift;
    int node_mean, node_std, ddof;
    int naxes;
    int axes[SL_MAX_DIMS];
    char axis_names[SL_MAX_DIMS + 1];
    sl_dtype dtype;
    /* setup: the reduced axes of this batch's input; batch statistics (param-shaped) */
    bool reduced[SL_MAX_DIMS];
    double *bmean, *binv;
    int64_t bcap;
    sl__gpu_args gpu;       /* the CUDA run's descriptors */
    sl__gpu_scratch gstats; /* the CUDA run's statistics */
} nz_state;

static void nz_destroy(void *state) {
    nz_state *s = state;
    if (s) {
        free(s->bmean), free(s->binv);
        sl__gpu_args_free(&s->gpu);
        sl__gpu_scratch_free(&s->gstats);
    }
    free(s);
}

static sl_status nz_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    nz_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    sl_status st = SL_OK;
    s->node_mean = sl__args_node(a, "mean");
    s->node_std = sl__args_node(a, "stddev");
    s->has_mean = s->node_mean >= 0 || sl__args_get(a, "mean")->kind != SL_VAL_NONE;
    s->has_std = s->node_std >= 0 || sl__args_get(a, "stddev")->kind != SL_VAL_NONE;
    if (s->has_mean && s->node_mean < 0) s->mean = sl__args_float(a, "mean");
    if (s->has_std && s->node_std < 0) s->std = sl__args_float(a, "stddev");
    s->batch = sl__args_bool(a, "batch");
    s->ddof = (int)sl__args_int(a, "ddof");
    s->eps = sl__args_float(a, "epsilon");
    s->scale = sl__args_float(a, "scale");
    s->shift = sl__args_float(a, "shift");
    s->dtype = sl__args_dtype(a, "dtype");
    const int64_t *ax;
    s->naxes = sl__args_ints(a, "axes", &ax);
    const char *names = sl__args_str(a, "axis_names");
    if (s->naxes > SL_MAX_DIMS)
        st = sl_err_set(err, SL_EINVAL, "normalize: %d axes (at most %d)", s->naxes, SL_MAX_DIMS);
    for (int k = 0; k < s->naxes && st == SL_OK; k++) {
        if (ax[k] < 0 || ax[k] >= SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "normalize: axis %lld", (long long)ax[k]);
        else
            s->axes[k] = (int)ax[k];
    }
    if (st == SL_OK && names && names[0]) {
        if (s->naxes)
            st = sl_err_set(err, SL_EINVAL, "normalize: give axes or axis_names, not both");
        else if (strlen(names) > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "normalize: axis_names \"%s\" is too long", names);
        else
            snprintf(s->axis_names, sizeof s->axis_names, "%s", names);
    }
    if (st == SL_OK && s->batch && (s->node_mean >= 0 || s->node_std >= 0))
        st = sl_err_set(err, SL_EINVAL,
                        "normalize: per-sample mean or stddev cannot be used with batch=True");
    if (st == SL_OK && s->ddof < 0)
        st = sl_err_set(err, SL_EINVAL, "normalize: ddof %d is negative", s->ddof);
    if (st == SL_OK && s->eps < 0)
        st = sl_err_set(err, SL_EINVAL, "normalize: epsilon %g is negative", s->eps);
    if (st != SL_OK) {
        nz_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* the statistics' shape for a sample: the reduced extents become 1 */
static int64_t param_shape(const nz_state *s, const int64_t *sh, int nd, int64_t *ps) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= ps[d] = s->reduced[d] ? 1 : sh[d];
    return n;
}

/* For each element of sample (in C order), calls back with its param offset: the element's
 * index with the reduced axes dropped. The walk keeps a counter per axis. */
#define NZ_WALK(sh, nd, ps, body)                                                                  \
    do {                                                                                           \
        int64_t pstride_[SL_MAX_DIMS], idx_[SL_MAX_DIMS] = {0}, n_ = 1, p_ = 0, k_;                \
        int64_t m_ = 1;                                                                            \
        for (int d_ = (nd)-1; d_ >= 0; d_--) {                                                     \
            pstride_[d_] = s->reduced[d_] ? 0 : m_;                                                \
            m_ *= (ps)[d_];                                                                        \
            n_ *= (sh)[d_];                                                                        \
        }                                                                                          \
        for (k_ = 0; k_ < n_; k_++) {                                                              \
            const int64_t k = k_, p = p_;                                                          \
            body;                                                                                  \
            for (int d_ = (nd)-1; d_ >= 0; d_--) {                                                 \
                if (++idx_[d_] < (sh)[d_]) {                                                       \
                    p_ += pstride_[d_];                                                            \
                    break;                                                                         \
                }                                                                                  \
                p_ -= pstride_[d_] * ((sh)[d_] - 1);                                               \
                idx_[d_] = 0;                                                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* sums of x into sum[p] (and counts of the reduced positions) */
static void add_sums(const nz_state *s, const sl_tlist *in, int i, const int64_t *ps, double *sum) {
    const int64_t *sh = sl_tlist_shape(in, i);
    const void *x = in->data[i];
    NZ_WALK(sh, in->ndim, ps, sum[p] += sl__dtype_conv_load(x, in->dtype, k));
}

static void add_squares(const nz_state *s, const sl_tlist *in, int i, const int64_t *ps,
                        const double *mean, double *sq) {
    const int64_t *sh = sl_tlist_shape(in, i);
    const void *x = in->data[i];
    NZ_WALK(sh, in->ndim, ps, {
        double dv = sl__dtype_conv_load(x, in->dtype, k) - mean[p];
        sq[p] += dv * dv;
    });
}

/* the inverse of sqrt(sq / (n - ddof) + epsilon), times scale; 0 for a zero variance */
static double inv_std(const nz_state *s, double sq, int64_t n) {
    if (n <= s->ddof && s->eps == 0) return 0;
    double var = (n > s->ddof ? sq / (double)(n - s->ddof) : 0) + s->eps;
    return var > 0 ? s->scale / sqrt(var) : 0;
}

static double given_inv(const nz_state *s, double sd) {
    return s->eps ? s->scale / sqrt(sd * sd + s->eps) : s->scale / sd;
}

#ifdef SLUICE_HAVE_CUDA
/* The given mean and stddev for sample i as one value each (the scalars, or its per-sample
 * values of one element): what the CUDA run takes; stddev must be positive. */
static sl_status given(const nz_state *s, const sl__op_io *io, int i, double *m, double *sd,
                       sl_err *err) {
    *m = s->mean, *sd = s->std;
    if ((s->node_mean >= 0 && sl__argin_values(io, s->node_mean, i, m, 1) != 1) ||
        (s->node_std >= 0 && sl__argin_values(io, s->node_std, i, sd, 1) != 1))
        return sl__op_fail(err, SL_ENOTSUP, io, i, "normalize",
                           "on the GPU, a per-sample mean or stddev is one value per sample "
                           "(tensors of the statistics' shape run on the CPU)");
    if (s->has_std && !(*sd > 0))
        return sl__op_fail(err, SL_EINVAL, io, i, "normalize", "stddev %g is not positive", *sd);
    return SL_OK;
}
#endif

/* The given mean or stddev (what) for sample i, statistics-shaped (ps: the input's shape with
 * the reduced extents 1; np values): the scalar, or the sample's per-sample tensor of one value
 * or of the input's rank with each extent that of ps or 1 (broadcast), as DALI takes it --
 * fn.reductions.mean(x, axes=..., keep_dims=True) gives one. */
static sl_status given_param(const sl__op_io *io, int i, int node, double scalar, const char *what,
                             int nd, const int64_t *ps, int64_t np, double *out, sl_err *err) {
    if (node < 0) {
        for (int64_t p = 0; p < np; p++) out[p] = scalar;
        return SL_OK;
    }
    double one;
    int n = sl__argin_values(io, node, i, &one, 1);
    if (n == 1) {
        for (int64_t p = 0; p < np; p++) out[p] = one;
        return SL_OK;
    }
    const sl_tlist *l = io->arg_in[node];
    const int64_t *ms = sl_tlist_shape(l, i);
    bool fits = n >= 0 && l->ndim == nd;
    int64_t mstride[SL_MAX_DIMS], m = 1;
    for (int d = nd - 1; d >= 0 && fits; d--) {
        fits = ms[d] == ps[d] || ms[d] == 1;
        mstride[d] = ms[d] == 1 ? 0 : m;
        m *= ms[d];
    }
    if (!fits) {
        char want[96] = "", got[96] = "";
        for (int d = 0; d < nd; d++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? ", " : "",
                     (long long)ps[d]);
        for (int d = 0; n >= 0 && d < l->ndim; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "",
                     (long long)ms[d]);
        return sl__op_fail(err, SL_EINVAL, io, i, "normalize",
                           "%s has shape (%s); it must be one value or of shape (%s), the input's "
                           "with the reduced axes 1 (an extent 1 is broadcast)",
                           what, got, want);
    }
    int64_t idx[SL_MAX_DIMS] = {0}, at = 0;
    for (int64_t p = 0; p < np; p++) { /* the statistics in C order, the tensor's offset at */
        out[p] = sl__dtype_conv_load(l->data[i], l->dtype, at);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < ps[d]) {
                at += mstride[d];
                break;
            }
            at -= mstride[d] * (ps[d] - 1);
            idx[d] = 0;
        }
    }
    return SL_OK;
}

/* mean and inverse stddev (param-shaped, np values) for the elements that sample(s) [i0, i1)
 * hold: computed, or given (sample i0's per-sample values) */
static sl_status stats(nz_state *s, const sl__op_io *io, int i0, int i1, const int64_t *ps,
                       int64_t np, double *mean, double *inv, sl_err *err) {
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    int64_t n = 0;                          /* elements per statistic */
    for (int i = i0; i < i1 && np > 0; i++) /* (np 0: a kept extent of 0, nothing to do) */
        n += (int64_t)(sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype)) / np;
    for (int64_t p = 0; p < np; p++) mean[p] = 0, inv[p] = 0;
    if (s->has_mean)
        SL_TRY(given_param(io, i0, s->node_mean, s->mean, "mean", nd, ps, np, mean, err));
    else {
        for (int i = i0; i < i1; i++) add_sums(s, in, i, ps, mean);
        for (int64_t p = 0; p < np; p++) mean[p] = n ? mean[p] / (double)n : 0;
    }
    if (s->has_std) {
        SL_TRY(given_param(io, i0, s->node_std, s->std, "stddev", nd, ps, np, inv, err));
        for (int64_t p = 0; p < np; p++) {
            if (!(inv[p] > 0))
                return sl__op_fail(err, SL_EINVAL, io, i0, "normalize", "stddev %g is not positive",
                                   inv[p]);
            inv[p] = given_inv(s, inv[p]);
        }
        return SL_OK;
    }
    for (int i = i0; i < i1; i++) add_squares(s, in, i, ps, mean, inv);
    for (int64_t p = 0; p < np; p++) inv[p] = inv_std(s, inv[p], n);
    return SL_OK;
}

static sl_status nz_setup(void *state, sl__op_io *io, sl_err *err) {
    nz_state *s = state;
    const sl_tlist *in = io->in[0];
    int nd = in->ndim;
    memset(s->reduced, 0, sizeof s->reduced);
    if (s->axis_names[0]) {
        for (const char *c = s->axis_names; *c; c++) {
            const char *at = strchr(in->layout, *c);
            if (!at)
                return sl_err_set(err, SL_EINVAL,
                                  "normalize: axis '%c' is not in the input's layout \"%s\"", *c,
                                  in->layout);
            s->reduced[at - in->layout] = true;
        }
    } else if (s->naxes) {
        for (int k = 0; k < s->naxes; k++) {
            if (s->axes[k] >= nd)
                return sl_err_set(err, SL_EINVAL, "normalize: axis %d, the input has %d",
                                  s->axes[k], nd);
            s->reduced[s->axes[k]] = true;
        }
    } else {
        for (int d = 0; d < nd; d++) s->reduced[d] = true;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype, nd, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    if (!s->batch || io->batch == 0) return SL_OK;
    /* batch statistics: every sample must have sample 0's extents in the kept axes */
    int64_t ps[SL_MAX_DIMS], p0[SL_MAX_DIMS];
    int64_t np = param_shape(s, sl_tlist_shape(in, 0), nd, p0);
    for (int i = 1; i < io->batch; i++) {
        param_shape(s, sl_tlist_shape(in, i), nd, ps);
        if (memcmp(ps, p0, (size_t)nd * sizeof *ps))
            return sl__op_fail(err, SL_EINVAL, io, i, "normalize",
                               "batch=True: its extents in the axes not reduced differ from "
                               "sample 0's");
    }
    if (io->device.kind == SL_DEVICE_CUDA) return SL_OK; /* the CUDA run computes them */
    if (np > s->bcap) {
        double *m = realloc(s->bmean, (size_t)np * sizeof *m);
        if (m) s->bmean = m;
        double *v = realloc(s->binv, (size_t)np * sizeof *v);
        if (v) s->binv = v;
        if (!m || !v) return sl_err_set(err, SL_ENOMEM, "normalize: out of memory");
        s->bcap = np;
    }
    return stats(s, io, 0, io->batch, p0, np, s->bmean, s->binv, err);
}

static sl_status nz_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker;
    nz_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    int64_t ps[SL_MAX_DIMS];
    int64_t np = param_shape(s, sh, in->ndim, ps);
    double *mean = s->bmean, *inv = s->binv, *own = NULL;
    if (!s->batch) {
        own = sl__malloc((size_t)(np ? 2 * np : 1) * sizeof *own, err);
        if (!own) return SL_ENOMEM;
        mean = own, inv = own + np;
        sl_status st = stats(s, io, i, i + 1, ps, np, mean, inv, err);
        if (st != SL_OK) {
            free(own);
            return st;
        }
    }
    const void *x = in->data[i];
    void *y = out->data[i];
    NZ_WALK(
        sh, in->ndim, ps,
        sl__dtype_conv_store(y, out->dtype, k,
                             (sl__dtype_conv_load(x, in->dtype, k) - mean[p]) * inv[p] + s->shift));
    free(own);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
/* sample i's descriptor (but for its statistics' addresses); returns its number of statistics */
static int64_t describe(const nz_state *s, const sl_tlist *in, int i, sl__cuda_norm_desc *x) {
    const int64_t *sh = sl_tlist_shape(in, i);
    int nd = in->ndim;
    int64_t ps[SL_MAX_DIMS], estride[SL_MAX_DIMS], st = 1, pst = 1;
    x->np = param_shape(s, sh, nd, ps);
    x->nd = nd, x->nk = 0, x->nrd = 0, x->nr = 1;
    for (int d = nd - 1; d >= 0; d--) { /* element and statistic strides, C order */
        x->ext[d] = sh[d];
        x->pstride[d] = s->reduced[d] ? 0 : pst;
        estride[d] = st;
        pst *= ps[d], st *= sh[d];
    }
    x->n = st;
    for (int d = 0; d < nd; d++) {
        if (s->reduced[d]) {
            x->rext[x->nrd] = sh[d], x->rstride[x->nrd++] = estride[d];
            x->nr *= sh[d];
        } else {
            x->kext[x->nk] = sh[d], x->kstride[x->nk++] = estride[d];
        }
    }
    return x->np;
}

static sl_status nz_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    nz_state *s = state;
    const sl_tlist *in = io->in[0];
    int n = io->batch;
    sl__cuda_norm_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, (size_t)n * sizeof *d, err);
    if (!d) return err->status;
    int64_t total = 0, max_np = 0, max_n = 0;
    for (int i = 0; i < n; i++) {
        memset(&d[i], 0, sizeof d[i]);
        int64_t np = describe(s, in, i, &d[i]);
        d[i].in = in->data[i], d[i].out = io->out[0]->data[i];
        d[i].in_dtype = (int)in->dtype, d[i].out_dtype = (int)s->dtype;
        double m, sd;
        SL_TRY(given(s, io, i, &m, &sd, err));
        d[i].mean_given = m;
        d[i].inv_given = s->has_std ? given_inv(s, sd) : 0;
        total += s->batch ? (i == 0 ? 2 * np : 0) : 2 * np;
        if (np > max_np) max_np = np;
        if (d[i].n > max_n) max_n = d[i].n;
    }
    double *stats = sl__gpu_scratch_get(
        &s->gstats, io->device.id, (size_t)(total ? total : 1) * sizeof(double), io->stream, err);
    if (!stats) return err->status;
    int64_t at = 0;
    for (int i = 0; i < n; i++) { /* batch: every sample shares sample 0's statistics */
        int64_t np = s->batch ? d[0].np : d[i].np;
        d[i].mean = stats + (s->batch ? 0 : at), d[i].inv = d[i].mean + np;
        if (!s->batch) at += 2 * np;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)n * sizeof *d, io->stream, &dd, err));
    sl__cuda_norm_args a = {s->batch, s->has_mean, s->has_std, s->ddof, s->eps, s->scale, s->shift};
    return sl__cuda_normalize(dd, n, max_np, max_n, &a, io->stream, err);
}
#endif

const sl__op_def sl__normalize_op = {
    .name = "normalize",
    .doc = "out = scale * (in - mean) / stddev + shift, the statistics computed over `axes` per "
           "sample or per batch, or given (DALI's fn.normalize).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = nz_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = nz_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = nz_create,
    .setup = nz_setup,
    .run_cpu = nz_run_cpu,
    .destroy = nz_destroy,
};
