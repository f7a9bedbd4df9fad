/* SPDX-License-Identifier: Apache-2.0 */
/* random.coin_flip, random.uniform and random.normal: per-sample random values drawn in setup from
 * a Philox stream keyed by (the instance's seed, the sample's global index), so the values do not
 * depend on threads, batch boundaries or scheduling. coin_flip gives 1 with `probability` (int32 by
 * default); uniform draws from [range[0], range[1]) or from the discrete `values`; normal draws
 * mean + stddev * N(0, 1), with mean and stddev per sample if wanted. Without `shape` each sample
 * is a scalar: ndim 0, as DALI's shape (); with an input (DALI's shape_like) each sample has the
 * shape of the input's (whose data is not read). */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/size.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema coin_args[] = {
    {"probability", SL_ARG_FLOAT, "0.5", "chance of a 1", SL_ARGF_PER_SAMPLE, NULL},
    {"shape", SL_ARG_INTS, "None", "shape of each sample (default: a scalar)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"dtype", SL_ARG_DTYPE, "types.INT32", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema normal_args[] = {
    {"mean", SL_ARG_FLOAT, "0.0", "mean of the distribution", SL_ARGF_PER_SAMPLE, NULL},
    {"stddev", SL_ARG_FLOAT, "1.0", "standard deviation (>= 0)", SL_ARGF_PER_SAMPLE, NULL},
    {"shape", SL_ARG_INTS, "None", "shape of each sample (default: a scalar)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema uniform_args[] = {
    {"range", SL_ARG_FLOATS, "[-1.0, 1.0]", "[lo, hi): the interval", SL_ARGF_PER_SAMPLE, NULL},
    {"values", SL_ARG_FLOATS, "None", "discrete values to pick from (instead of range)", 0, NULL},
    {"shape", SL_ARG_INTS, "None", "shape of each sample (default: a scalar)", SL_ARGF_PER_SAMPLE,
     NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum { R_COIN, R_UNIFORM, R_NORMAL };

typedef struct rand_state {
    int kind;
    double p, lo, hi;
    double mean, stddev;
    int node_mean, node_std, node_p, node_shape, node_range; /* per-sample inputs, or -1 */
    bool shape_given; /* the `shape` argument (a value or a node) */
    double *values;
    int nvalues;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    sl_dtype dtype;
    uint64_t seed;
} rand_state;

static void rand_destroy(void *state) {
    rand_state *s = state;
    if (s) free(s->values);
    free(s);
}

static sl_status rand_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err,
                             int kind) {
    const char *name = kind == R_COIN      ? "random.coin_flip"
                       : kind == R_UNIFORM ? "random.uniform"
                                           : "random.normal";
    rand_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->kind = kind;
    s->node_mean = s->node_std = -1;
    s->node_p = kind == R_COIN ? sl__args_node(a, "probability") : -1;
    s->node_shape = sl__args_node(a, "shape");
    s->node_range = kind == R_UNIFORM ? sl__args_node(a, "range") : -1;
    s->seed = init->seed;
    s->dtype = sl__args_dtype(a, "dtype");
    s->shape_given = sl__args_get(a, "shape")->kind != SL_VAL_NONE || s->node_shape >= 0;
    sl_status st = SL_OK, at_run = SL_OK;
    if (s->node_shape < 0 && sl__args_get(a, "shape")->kind != SL_VAL_NONE) {
        const int64_t *sh;
        s->ndim = sl__args_ints(a, "shape", &sh);
        if (s->ndim > SL_MAX_DIMS) st = sl_err_set(err, SL_EINVAL, "%s: too many dims", name);
        for (int d = 0; d < s->ndim && st == SL_OK; d++) {
            if (sh[d] < 0) st = sl_err_set(err, SL_EINVAL, "%s: negative extent", name);
            s->shape[d] = sh[d];
        }
        size_t bytes;
        if (st == SL_OK &&
            sl__size_shape(s->shape, s->ndim, sl_dtype_size(s->dtype), &bytes, NULL) != SL__SIZE_OK)
            st = sl_err_set(err, SL_EINVAL, "%s: shape: a sample of more than %zu bytes", name,
                            SL__SIZE_LIMIT);
    }
    if (kind == R_NORMAL) {
        s->mean = sl__args_float(a, "mean");
        s->stddev = sl__args_float(a, "stddev");
        s->node_mean = sl__args_node(a, "mean");
        s->node_std = sl__args_node(a, "stddev");
        if (st == SL_OK && s->node_std < 0 && !(s->stddev >= 0))
            at_run = sl_err_set(err, SL_EINVAL, "%s: stddev %g is negative", name, s->stddev);
    } else if (kind == R_COIN) {
        s->p = sl__args_float(a, "probability");
        if (st == SL_OK && s->node_p < 0 && !(s->p >= 0 && s->p <= 1))
            at_run = sl_err_set(err, SL_EINVAL, "%s: probability %g outside [0, 1]", name, s->p);
    } else if (sl__args_get(a, "values")->kind != SL_VAL_NONE) {
        const double *v;
        s->nvalues = sl__args_floats(a, "values", &v);
        s->values = sl__malloc((size_t)(s->nvalues ? s->nvalues : 1) * sizeof *v, err);
        if (!s->values)
            st = SL_ENOMEM;
        else
            memcpy(s->values, v, (size_t)s->nvalues * sizeof *v);
        if (st == SL_OK && s->nvalues < 1)
            st = sl_err_set(err, SL_EINVAL, "%s: empty values", name);
    } else if (s->node_range < 0) {
        const double *r = NULL;
        if (sl__args_floats(a, "range", &r) == 2 && r[0] < r[1])
            s->lo = r[0], s->hi = r[1];
        else if (st == SL_OK)
            at_run = sl_err_set(err, SL_EINVAL, "%s: range must be [lo, hi] with lo < hi", name);
    }
    if (st != SL_OK || at_run != SL_OK) { /* (DALI checks the values it takes per sample as it
                                           * runs: at_run) */
        rand_destroy(s);
        return st != SL_OK ? st : sl__op_at_run(init, at_run);
    }
    *out = s;
    return SL_OK;
}

static sl_status coin_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    return rand_create(a, init, out, err, R_COIN);
}
static sl_status uniform_create(const sl__args *a, const sl__op_init *init, void **out,
                                sl_err *err) {
    return rand_create(a, init, out, err, R_UNIFORM);
}
static sl_status normal_create(const sl__args *a, const sl__op_init *init, void **out,
                               sl_err *err) {
    return rand_create(a, init, out, err, R_NORMAL);
}

/* Sample i's shape from the per-sample `shape` input: *ndim extents into sh (every sample of a
 * batch has the rank of sample 0). */
static sl_status sample_shape(const rand_state *s, const sl__op_io *io, int i, const char *name,
                              int *ndim, int64_t *sh, sl_err *err) {
    double v[SL_MAX_DIMS + 1];
    int n = sl__argin_values(io, s->node_shape, i, v, SL_MAX_DIMS + 1);
    if (n < 0 || n > SL_MAX_DIMS)
        return sl__op_fail(err, SL_EINVAL, io, i, name,
                           "shape: the per-sample value must be at most %d extents, on the CPU",
                           SL_MAX_DIMS);
    if (i > 0 && n != *ndim)
        return sl__op_fail(err, SL_EINVAL, io, i, name,
                           "shape: %d extents, but sample 0 of the batch has %d (one rank per "
                           "batch)",
                           n, *ndim);
    *ndim = n;
    for (int d = 0; d < n; d++) {
        if (!(v[d] >= 0 && v[d] <= 0x1p40 && v[d] == (double)(int64_t)v[d]))
            return sl__op_fail(err, SL_EINVAL, io, i, name, "shape: extent %g", v[d]);
        sh[d] = (int64_t)v[d];
    }
    size_t bytes;
    if (sl__size_shape(sh, n, sl_dtype_size(s->dtype), &bytes, NULL) != SL__SIZE_OK)
        return sl__op_fail(err, SL_EINVAL, io, i, name, "shape: a sample of more than %zu bytes",
                           (size_t)SL__SIZE_LIMIT);
    return SL_OK;
}

/* out: per sample `shape` (or a scalar, ndim 0) of dtype; all drawn here, in setup */

/* v, a draw in [lo, hi), as the output type stores it: DALI's floating draws stay below hi, so a
 * value that rounds up to hi in float32 (or float64) becomes the largest one below it (range
 * [10, nextafter(10)) gives 10 only). Integer types round, and may reach hi, as in DALI. */
static double below_hi(double v, double lo, double hi, sl_dtype t) {
    if (!(hi > lo)) return v;
    if (t == SL_DTYPE_F32 && (float)v >= (float)hi) {
        float b = nextafterf((float)hi, -INFINITY);
        return b >= (float)lo ? b : (float)lo;
    }
    if (t == SL_DTYPE_F64 && v >= hi)
        return nextafter(hi, -INFINITY) >= lo ? nextafter(hi, -INFINITY) : lo;
    return v;
}

static sl_status rand_setup(void *state, sl__op_io *io, sl_err *err) {
    rand_state *s = state;
    const char *name = s->kind == R_COIN      ? "random.coin_flip"
                       : s->kind == R_UNIFORM ? "random.uniform"
                                              : "random.normal";
    sl_tlist *out = io->out[0];
    int ndim = s->ndim;
    int64_t *shapes = sl__malloc((size_t)io->batch * SL_MAX_DIMS * sizeof(int64_t), err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    if (io->num_inputs > 0 && s->shape_given)
        st = sl_err_set(err, SL_EINVAL,
                        "%s: give `shape` or an input whose shape to take, not "
                        "both",
                        name);
    if (io->num_inputs > 0) ndim = io->in[0]->ndim;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        int64_t *sh = shapes + (size_t)i * SL_MAX_DIMS;
        if (io->num_inputs > 0) /* the input's shape (DALI's shape_like input; data unread) */
            memcpy(sh, sl_tlist_shape(io->in[0], i), (size_t)ndim * sizeof(int64_t));
        else if (s->node_shape >= 0)
            st = sample_shape(s, io, i, name, &ndim, sh, err);
        else
            memcpy(sh, s->shape, (size_t)s->ndim * sizeof(int64_t));
    }
    /* packed: (batch, ndim) */
    for (int i = 1; i < io->batch && st == SL_OK; i++)
        memmove(shapes + (size_t)i * (size_t)ndim, shapes + (size_t)i * SL_MAX_DIMS,
                (size_t)ndim * sizeof(int64_t));
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, s->dtype, ndim, sl_cpu(), err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    uint64_t seed = io->seed ? io->seed : s->seed;
    for (int i = 0; i < io->batch; i++) {
        sl__rng_philox r;
        sl__rng_philox_init(&r, seed, (uint64_t)(io->sample_base + i));
        double mean = s->mean, sd = s->stddev;
        if (s->kind == R_NORMAL) {
            if ((s->node_mean >= 0 && sl__argin_values(io, s->node_mean, i, &mean, 1) != 1) ||
                (s->node_std >= 0 && sl__argin_values(io, s->node_std, i, &sd, 1) != 1))
                return sl__op_fail(err, SL_EINVAL, io, i, "random.normal",
                                   "mean and stddev must be one value per sample");
            if (!(sd >= 0))
                return sl__op_fail(err, SL_EINVAL, io, i, "random.normal", "stddev %g is %s", sd,
                                   sd != sd ? "not a number" : "negative");
        }
        double lo = s->lo, hi = s->hi;
        if (s->node_range >= 0) {
            double rg[3];
            if (sl__argin_values(io, s->node_range, i, rg, 3) != 2 || !(rg[0] <= rg[1]))
                return sl__op_fail(err, SL_EINVAL, io, i, name,
                                   "range: [lo, hi] with lo <= hi per sample");
            lo = rg[0], hi = rg[1];
        }
        double p = s->p;
        if (s->node_p >= 0 &&
            (sl__argin_values(io, s->node_p, i, &p, 1) != 1 || !(p >= 0 && p <= 1)))
            return sl__op_fail(err, SL_EINVAL, io, i, name,
                               "probability: one value in [0, 1] per sample, got %g", p);
        int64_t n = 1;
        const int64_t *sh = sl_tlist_shape(out, i);
        for (int d = 0; d < ndim; d++) n *= sh[d];
        for (int64_t k = 0; k < n; k++) {
            double v;
            if (s->kind == R_NORMAL) {
                v = mean + sd * sl__rng_philox_normal(&r);
            } else {
                double u = sl__rng_philox_uniform(&r);
                if (s->kind == R_COIN)
                    v = u < p ? 1 : 0;
                else if (s->values)
                    v = s->values[sl__rng_philox_below(&r, (uint64_t)s->nvalues)];
                else
                    v = below_hi(lo + u * (hi - lo), lo, hi, s->dtype);
            }
            sl__dtype_conv_store(out->data[i], s->dtype, k, v);
        }
    }
    return SL_OK;
}

const sl__op_def sl__coin_flip_op = {
    .name = "random.coin_flip",
    .aliases = "coin_flip",
    .doc = "Per-sample Bernoulli draws: 1 with `probability`, else 0 (scalars by default).",
    .min_inputs = 0,
    .max_inputs = 1,
    .args = coin_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM | SL_OPF_SHAPES,
    .create = coin_create,
    .setup = rand_setup,
    .destroy = rand_destroy,
};

const sl__op_def sl__uniform_op = {
    .name = "random.uniform",
    .aliases = "uniform",
    .doc = "Per-sample uniform draws from [lo, hi) or from a list of values.",
    .min_inputs = 0,
    .max_inputs = 1,
    .args = uniform_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM | SL_OPF_SHAPES,
    .create = uniform_create,
    .setup = rand_setup,
    .destroy = rand_destroy,
};

const sl__op_def sl__normal_op = {
    .name = "random.normal",
    .aliases = "normal_distribution",
    .doc = "Per-sample normal draws: mean + stddev * N(0, 1) (scalars by default).",
    .min_inputs = 0,
    .max_inputs = 1,
    .args = normal_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM | SL_OPF_SHAPES,
    .create = normal_create,
    .setup = rand_setup,
    .destroy = rand_destroy,
};
