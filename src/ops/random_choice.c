/* SPDX-License-Identifier: Apache-2.0 */
/* random.choice and random.beta (DALI's fn.random.choice, fn.random.beta): per-sample draws made
 * in setup from Philox keyed by (the instance's seed, the sample's global index), as random.c's
 * ops, so they do not depend on threads or batches and a checkpoint resumes them. choice picks
 * from its input: a 0-d integer n means 0..n-1, an n-d sample one of its elements along the first
 * dim (a scalar of a 1-d list, a row of a 2-d one); with probabilities `p` (each in [0, 1],
 * summing to 1, as DALI checks) or uniformly; the output has the input's type and `shape` (a
 * scalar by default) followed by the element's shape. A further input (DALI's shape_like) gives
 * the shape instead of `shape`. beta draws X / (X + Y) from Gamma(alpha) and Gamma(beta)
 * (Marsaglia and Tsang's method; alpha < 1 through Gamma(alpha + 1) * U^(1 / alpha), in logs),
 * float32 by default. */
#include "operator/argin.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/rng.h"
#include "core/size.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema choice_args[] = {
    {"p", SL_ARG_FLOATS, "None", "probability of each choice (default: uniform)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"shape", SL_ARG_INTS, "None", "shape of each sample (default: a scalar)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const sl__arg_schema beta_args[] = {
    {"alpha", SL_ARG_FLOAT, "1.0", "the first shape parameter (> 0)", SL_ARGF_PER_SAMPLE, NULL},
    {"beta", SL_ARG_FLOAT, "1.0", "the second shape parameter (> 0)", SL_ARGF_PER_SAMPLE, NULL},
    {"shape", SL_ARG_INTS, "None", "shape of each sample (default: a scalar)", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type: FLOAT or FLOAT64", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct rc_state {
    bool beta;
    const char *name;
    uint64_t seed;
    int ndim;
    bool shape_given;
    int64_t shape[SL_MAX_DIMS];
    int64_t count; /* elements per sample */
    sl_dtype dtype;
    /* choice */
    int node_p, np;
    double *p;
    /* beta */
    double alpha, b;
    int node_a, node_b;
    double *scratch;
    size_t scratch_n;
} rc_state;

static void rc_destroy(void *state) {
    rc_state *s = state;
    if (!s) return;
    free(s->p);
    free(s->scratch);
    free(s);
}

static sl_status rc_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err,
                           bool beta) {
    rc_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->beta = beta;
    s->name = beta ? "random.beta" : "random.choice";
    s->seed = init->seed;
    s->node_p = s->node_a = s->node_b = -1;
    sl_status st = SL_OK;
    s->count = 1;
    if (sl__args_get(a, "shape")->kind != SL_VAL_NONE) {
        const int64_t *sh;
        s->shape_given = true;
        s->ndim = sl__args_ints(a, "shape", &sh);
        if (s->ndim > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: shape has %d dims, at most %d", s->name, s->ndim,
                            SL_MAX_DIMS);
        for (int d = 0; st == SL_OK && d < s->ndim; d++) {
            if (sh[d] < 0)
                st =
                    sl_err_set(err, SL_EINVAL, "%s: shape: extent %lld", s->name, (long long)sh[d]);
            s->shape[d] = sh[d];
        }
        size_t bytes;
        if (st == SL_OK && sl__size_shape(s->shape, s->ndim, 8, &bytes, NULL) != SL__SIZE_OK)
            st = sl_err_set(err, SL_EINVAL, "%s: shape: a sample of more than %zu bytes", s->name,
                            SL__SIZE_LIMIT);
        for (int d = 0; st == SL_OK && d < s->ndim; d++) s->count *= s->shape[d];
    }
    if (beta) {
        s->dtype = sl__args_dtype(a, "dtype");
        if (st == SL_OK && s->dtype != SL_DTYPE_F32 && s->dtype != SL_DTYPE_F64)
            st = sl_err_set(err, SL_EINVAL,
                            "random.beta: dtype %s (FLOAT or FLOAT64): Data type %s is not "
                            "supported",
                            sl_dtype_name(s->dtype), sl_dtype_name(s->dtype));
        s->alpha = sl__args_float(a, "alpha");
        s->b = sl__args_float(a, "beta");
        s->node_a = sl__args_node(a, "alpha");
        s->node_b = sl__args_node(a, "beta");
        /* (the messages end in DALI's sentence, which DALI's tests match; DALI checks them as
         * it runs) */
        bool bad_a = s->node_a < 0 && !(s->alpha > 0 && s->alpha <= FLT_MAX);
        bool bad_b = s->node_b < 0 && !(s->b > 0 && s->b <= FLT_MAX);
        if (st == SL_OK && (bad_a || bad_b))
            st = sl__op_at_run(
                init,
                sl_err_set(err, SL_EINVAL,
                           "random.beta: alpha %g and beta %g must be %s: The `%s` must be a "
                           "positive float32",
                           s->alpha, s->b,
                           (bad_a ? !(s->alpha > 0) : !(s->b > 0)) ? "> 0"
                                                                   : "positive float32 values",
                           bad_a ? "alpha" : "beta"));
    } else {
        s->node_p = sl__args_node(a, "p");
        if (s->node_p < 0 && sl__args_get(a, "p")->kind != SL_VAL_NONE) {
            const double *v;
            s->np = sl__args_floats(a, "p", &v);
            s->p = sl__malloc((size_t)(s->np ? s->np : 1) * sizeof *v, err);
            if (!s->p)
                st = SL_ENOMEM;
            else
                memcpy(s->p, v, (size_t)s->np * sizeof *v);
        }
    }
    if (st != SL_OK) {
        rc_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status choice_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return rc_create(a, i, o, e, false);
}
static sl_status beta_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return rc_create(a, i, o, e, true);
}

/* Gamma(a, 1) by Marsaglia and Tsang, for a >= 1 */
static double gamma_draw(sl__rng_philox *r, double a) {
    double d = a - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x = sl__rng_philox_normal(r), v = 1 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = sl__rng_philox_uniform(r);
        if (u < 1 - 0.0331 * x * x * x * x) return d * v;
        if (u > 0 && log(u) < 0.5 * x * x + d * (1 - v + log(v))) return d * v;
    }
}

/* log of a Gamma(a, 1) draw; a < 1 through Gamma(a + 1) * U^(1 / a), in logs, because for a tiny
 * a (1e-5, 1e-40) the draw itself underflows every float while the ratio of two draws, all that
 * Beta needs, does not */
static double log_gamma_draw(sl__rng_philox *r, double a) {
    if (a < 1) {
        double u = sl__rng_philox_uniform(r);
        return log(gamma_draw(r, a + 1)) + log(u > 0 ? u : 0x1p-60) / a;
    }
    return log(gamma_draw(r, a));
}

/* The output's shape for sample i (out: ndim extents): the shape_like input's shape (like) or
 * `shape`, then, for choice from an n-d input, the shape of one element (the input's shape less
 * its first extent). Its element count goes to *count. */
static void rc_sample_shape(const rc_state *s, const sl_tlist *in, const sl_tlist *like, int i,
                            int64_t *out, int64_t *count) {
    int base = like ? like->ndim : s->ndim;
    const int64_t *b = like ? sl_tlist_shape(like, i) : s->shape;
    *count = 1;
    for (int d = 0; d < base; d++) out[d] = b[d], *count *= b[d];
    for (int d = 1; in && d < in->ndim; d++) out[base + d - 1] = sl_tlist_shape(in, i)[d];
}

/* DALI's output layout: a scalar draw of an n-d element keeps the element's layout (the input's
 * less its first letter); a 1-d `shape` keeps the input's whole layout; anything else has none */
static void rc_layout(char *out, const sl_tlist *in, int base) {
    out[0] = 0;
    if (!in || !in->layout[0]) return;
    if (base == 0)
        strcpy(out, in->layout + 1);
    else if (base == 1)
        strcpy(out, in->layout);
}

/* p for sample i, checked as DALI does: each value in [0, 1], their sum 1 */
static sl_status rc_probs(rc_state *s, sl__op_io *io, int i, int64_t choices, const double **pp,
                          sl_err *err) {
    const double *p = s->p;
    int np = s->np;
    *pp = NULL;
    if (s->node_p >= 0) {
        int m = sl__argin_values(io, s->node_p, i, NULL, 0);
        if (m < 0) return sl__op_fail(err, SL_EINVAL, io, i, s->name, "p is unreadable");
        if ((size_t)m > s->scratch_n) {
            double *q = realloc(s->scratch, (size_t)(m ? m : 1) * sizeof *q);
            if (!q) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
            s->scratch = q, s->scratch_n = (size_t)m;
        }
        np = sl__argin_values(io, s->node_p, i, s->scratch, m);
        p = s->scratch;
    }
    if (!p) return SL_OK;
    if (np == 1 && choices > 1) { /* one value stands for every choice (as DALI broadcasts it) */
        if (choices > (1 << 26))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "one p for %lld choices (give p per choice, or none)",
                               (long long)choices);
        double v = p[0]; /* read before the realloc: p may be the scratch itself */
        if ((size_t)choices > s->scratch_n) {
            double *q = realloc(s->scratch, (size_t)choices * sizeof *q);
            if (!q) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
            s->scratch = q, s->scratch_n = (size_t)choices;
        }
        for (int64_t k = 0; k < choices; k++) s->scratch[k] = v;
        p = s->scratch, np = (int)choices;
    }
    if (np != choices)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "p has %d values for %lld choices: Unexpected shape for argument \"p\". "
                           "Expected {%lld}, but got {%d}",
                           np, (long long)choices, (long long)choices, np);
    double total = 0;
    for (int k = 0; k < np; k++) {
        if (!(p[k] >= 0) || !(p[k] <= 1))
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "p[%d] = %g is not a probability (in [0, 1]): Probabilities must "
                               "be in range [0, 1], but got: %g for sample: %d at index %d.",
                               k, p[k], p[k], i, k);
        total += p[k];
    }
    if (!(fabs(total - 1) <= 1e-4))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "the probabilities p sum to %g, not 1.0: Sum of probabilities must be "
                           "1.0, but got %g for sample: %d.",
                           total, total, i);
    *pp = p;
    return SL_OK;
}

/* choice's draws for sample i: count picks of an element (es bytes) of in's sample, or of 0..n-1 */
static sl_status rc_choose(rc_state *s, sl__op_io *io, int i, const sl_tlist *in, int64_t count,
                           sl__rng_philox *r, sl_err *err) {
    sl_dtype t = in->dtype;
    sl_tlist *out = io->out[0];
    bool range = in->ndim == 0;
    int64_t choices;
    size_t es = sl_dtype_size(t);
    if (range) {
        if (sl_dtype_is_float(t) || t == SL_DTYPE_BOOL || t == SL_DTYPE_INTERP)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "a 0-d input is a count of choices, an integer: Data type %s is "
                               "not supported for 0D inputs. Supported types are: uint8, uint16, "
                               "uint32, uint64, int8, int16, int32, int64",
                               t == SL_DTYPE_F32   ? "float"
                               : t == SL_DTYPE_F64 ? "double"
                                                   : sl_dtype_name(t));
        double v = sl__dtype_conv_load(in->data[i], t, 0);
        if (!(v >= 1) || v > 0x1p62)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "the count of choices is %.0f (at least 1): Expected positive "
                               "number of elements for sampling, got: %.0f for sample: %d.",
                               v, v, i);
        choices = (int64_t)v;
    } else {
        choices = sl_tlist_shape(in, i)[0];
        for (int d = 1; d < in->ndim; d++) es *= (size_t)sl_tlist_shape(in, i)[d];
    }
    if (choices < 1) return sl__op_fail(err, SL_EINVAL, io, i, s->name, "nothing to choose from");
    const double *p;
    SL_TRY(rc_probs(s, io, i, choices, &p, err));
    for (int64_t k = 0; k < count; k++) {
        int64_t pick;
        if (p) {
            double u = sl__rng_philox_uniform(r), acc = 0;
            pick = choices - 1;
            for (int64_t c = 0; c < choices; c++) {
                acc += p[c];
                if (u < acc && p[c] > 0) {
                    pick = c;
                    break;
                }
            }
            while (p[pick] <= 0 && pick > 0) pick--; /* rounding at the top end */
        } else {
            pick = (int64_t)sl__rng_philox_below(r, (uint64_t)choices);
        }
        if (range)
            sl__dtype_conv_store(out->data[i], t, k, (double)pick);
        else if (es) /* (elements of no bytes may have no memory) */
            memcpy((char *)out->data[i] + (size_t)k * es,
                   (const char *)in->data[i] + (size_t)pick * es, es);
    }
    return SL_OK;
}

/* Inputs: choice (a, [shape_like]), beta ([shape_like]); shape_like's data is not read. */
static sl_status rc_setup(void *state, sl__op_io *io, sl_err *err) {
    rc_state *s = state;
    const sl_tlist *in = s->beta ? NULL : io->in[0];
    int nlike = s->beta ? 0 : 1;
    const sl_tlist *like = io->num_inputs > nlike ? io->in[nlike] : NULL;
    sl_dtype t = s->beta ? s->dtype : in->dtype;
    if (in && in->device.kind != SL_DEVICE_CPU)
        return sl_err_set(err, SL_EINVAL, "random.choice: its input must be on the CPU");
    if (like && s->shape_given)
        return sl_err_set(err, SL_EINVAL,
                          "%s: give `shape` or an input whose shape to take (shape_like), not both",
                          s->name);
    int base = like ? like->ndim : s->ndim;
    int ndim = base + (in && in->ndim > 1 ? in->ndim - 1 : 0);
    if (ndim > SL_MAX_DIMS)
        return sl_err_set(err, SL_EINVAL, "%s: the output would have %d dims, at most %d", s->name,
                          ndim, SL_MAX_DIMS);
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, t, ndim, sl_cpu(), err));
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(ndim ? ndim : 1) * sizeof(int64_t), err);
    int64_t *counts = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof(int64_t), err);
    sl_status st = shapes && counts ? SL_OK : SL_ENOMEM;
    for (int i = 0; st == SL_OK && i < io->batch; i++)
        rc_sample_shape(s, in, like, i, shapes + (size_t)i * (size_t)ndim, &counts[i]);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st == SL_OK) rc_layout(out->layout, in, base);
    static const int none[1] = {0};
    io->run_index = none;
    io->run_count = 0;
    uint64_t seed = io->seed ? io->seed : s->seed;
    for (int i = 0; st == SL_OK && i < io->batch; i++) {
        sl__rng_philox r;
        sl__rng_philox_init(&r, seed, (uint64_t)(io->sample_base + i));
        if (!s->beta) {
            st = rc_choose(s, io, i, in, counts[i], &r, err);
            continue;
        }
        double a = s->alpha, b = s->b;
        if ((s->node_a >= 0 && sl__argin_values(io, s->node_a, i, &a, 1) != 1) ||
            (s->node_b >= 0 && sl__argin_values(io, s->node_b, i, &b, 1) != 1)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "alpha and beta must be one value per sample");
            break;
        }
        if (!(a > 0) || !(b > 0) || !(a <= FLT_MAX) || !(b <= FLT_MAX)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "alpha %g and beta %g must be positive float32 values: The `%s` must "
                             "be a positive float32",
                             a, b, !(a > 0 && a <= FLT_MAX) ? "alpha" : "beta");
            break;
        }
        for (int64_t k = 0; k < counts[i]; k++) {
            /* X / (X + Y) = 1 / (1 + exp(log Y - log X)) */
            double lx = log_gamma_draw(&r, a), ly = log_gamma_draw(&r, b);
            sl__dtype_conv_store(out->data[i], t, k, 1 / (1 + exp(ly - lx)));
        }
    }
    free(counts);
    return st;
}

static sl_status rc_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)io, (void)i, (void)worker, (void)err;
    return SL_OK; /* setup drew everything */
}

const sl__op_def sl__random_choice_op = {
    .name = "random.choice",
    .doc = "Per-sample random picks from the input's elements (or 0..n-1 for a 0-d n); a second "
           "input gives the output's shape (shape_like).",
    .min_inputs = 1,
    .max_inputs = 2,
    .args = choice_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .create = choice_create,
    .setup = rc_setup,
    .run_cpu = rc_run_cpu,
    .destroy = rc_destroy,
};

const sl__op_def sl__random_beta_op = {
    .name = "random.beta",
    .doc = "Per-sample draws from the Beta(alpha, beta) distribution (scalars by default); an "
           "input gives the output's shape (shape_like).",
    .min_inputs = 0,
    .max_inputs = 1,
    .args = beta_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM,
    .create = beta_create,
    .setup = rc_setup,
    .run_cpu = rc_run_cpu,
    .destroy = rc_destroy,
};
