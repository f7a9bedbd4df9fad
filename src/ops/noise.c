/* SPDX-License-Identifier: Apache-2.0 */
/* noise.gaussian, noise.salt_and_pepper and noise.shot (DALI's fn.noise.*), on any numeric input,
 * its type kept (results converted with cast's rules: rounded and saturated for integers).
 * gaussian adds mean + stddev * N(0, 1) to every element, drawn as random.normal draws it;
 * salt_and_pepper replaces an element, or with per_channel=False a whole pixel (the channels
 * along the layout's 'C', first, last or between), with probability
 * `prob`, by salt_val (chance salt_vs_pepper) or pepper_val (defaults: the type's largest and
 * smallest value, 1.0 and -1.0 for floating types); shot gives Poisson(x / factor) * factor. All
 * their arguments may be per sample. Every element draws from its own Philox blocks keyed by the
 * seed and the sample's global index (ops/noise.h, shared with the CUDA run in noise.cu): the
 * noise does not depend on threads or batches, and a checkpoint resumes it exactly. */
#include "ops/noise.h"
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema gaussian_args[] = {
    {"mean", SL_ARG_FLOAT, "0.0", "mean of the noise", SL_ARGF_PER_SAMPLE, NULL},
    {"stddev", SL_ARG_FLOAT, "1.0", "standard deviation of the noise (>= 0)", SL_ARGF_PER_SAMPLE,
     NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema sp_args[] = {
    {"prob", SL_ARG_FLOAT, "0.05", "chance that an element (a pixel) is replaced",
     SL_ARGF_PER_SAMPLE, NULL},
    {"salt_vs_pepper", SL_ARG_FLOAT, "0.5", "chance that a replaced one is salt",
     SL_ARGF_PER_SAMPLE, NULL},
    {"salt_val", SL_ARG_FLOAT, "None", "salt (default: the type's largest value, 1.0 for floats)",
     SL_ARGF_PER_SAMPLE, NULL},
    {"pepper_val", SL_ARG_FLOAT, "None",
     "pepper (default: the type's smallest value, -1.0 for floats)", SL_ARGF_PER_SAMPLE, NULL},
    {"per_channel", SL_ARG_BOOL, "False", "draw per element, not per pixel", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema shot_args[] = {
    {"factor", SL_ARG_FLOAT, "20.0", "Poisson(x / factor) * factor; 0 gives no noise",
     SL_ARGF_PER_SAMPLE, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const names[] = {"noise.gaussian", "noise.salt_and_pepper", "noise.shot"};
static const char *const pnames[3][4] = {{"mean", "stddev", NULL, NULL},
                                         {"prob", "salt_vs_pepper", "salt_val", "pepper_val"},
                                         {"factor", NULL, NULL, NULL}};

typedef struct noise_state {
    int kind;
    uint64_t seed;
    bool per_channel;
    double p[4];
    bool given[4];
    int node[4];
    sl__noise_desc *desc;
    int cap;
    uint64_t batch_seed;
    sl__gpu_args gpu;
} noise_state;

static void noise_destroy(void *state) {
    noise_state *s = state;
    if (!s) return;
    free(s->desc);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status noise_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err,
                              int kind) {
    noise_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->kind = kind;
    s->seed = init->seed;
    for (int k = 0; k < 4; k++) {
        s->node[k] = -1;
        if (!pnames[kind][k]) continue;
        s->node[k] = sl__args_node(a, pnames[kind][k]);
        s->given[k] = sl__args_get(a, pnames[kind][k])->kind != SL_VAL_NONE;
        if (s->given[k] && s->node[k] < 0) s->p[k] = sl__args_float(a, pnames[kind][k]);
    }
    if (kind == SL__NOISE_SALT_PEPPER) s->per_channel = sl__args_bool(a, "per_channel");
    *out = s;
    return SL_OK;
}

static sl_status gaussian_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return noise_create(a, i, o, e, SL__NOISE_GAUSSIAN);
}
static sl_status sp_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return noise_create(a, i, o, e, SL__NOISE_SALT_PEPPER);
}
static sl_status shot_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return noise_create(a, i, o, e, SL__NOISE_SHOT);
}

static double type_max(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_U8:
        return 255;
    case SL_DTYPE_I8:
        return 127;
    case SL_DTYPE_U16:
        return 65535;
    case SL_DTYPE_I16:
        return 32767;
    case SL_DTYPE_I32:
        return 2147483647.0;
    case SL_DTYPE_U32:
        return 4294967295.0;
    case SL_DTYPE_I64:
        return 9223372036854775807.0;
    case SL_DTYPE_U64:
        return 18446744073709551615.0;
    default:
        return 1; /* floats, bool */
    }
}

static double type_min(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_I8:
        return -128;
    case SL_DTYPE_I16:
        return -32768;
    case SL_DTYPE_I32:
        return -2147483648.0;
    case SL_DTYPE_I64:
        return -9223372036854775808.0;
    case SL_DTYPE_F16:
    case SL_DTYPE_BF16:
    case SL_DTYPE_F32:
    case SL_DTYPE_F64:
        return -1;
    default:
        return 0;
    }
}

static sl_status noise_setup(void *state, sl__op_io *io, sl_err *err) {
    noise_state *s = state;
    const char *name = names[s->kind];
    const sl_tlist *in = io->in[0];
    if (io->batch > s->cap) {
        sl__noise_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", name);
        s->desc = d, s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    s->batch_seed = io->seed ? io->seed : s->seed;
    /* per_channel=False: one draw for the channels of a pixel, the layout's 'C' wherever it is */
    const char *c = strchr(in->layout, 'C');
    int cdim = s->kind == SL__NOISE_SALT_PEPPER && !s->per_channel && c && in->layout[0] &&
                       strlen(in->layout) == (size_t)in->ndim
                   ? (int)(c - in->layout)
                   : -1;
    for (int i = 0; i < io->batch; i++) {
        sl__noise_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->in = in->data[i];
        d->out = out->data[i];
        d->n = (int64_t)(sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype));
        d->stream = (uint64_t)(io->sample_base + i);
        d->group = d->inner = 1;
        if (cdim >= 0) {
            const int64_t *sh = sl_tlist_shape(in, i);
            d->group = sh[cdim];
            for (int k = cdim + 1; k < in->ndim; k++) d->inner *= sh[k];
        }
        if (d->group < 1 || d->inner < 1) d->group = d->inner = 1; /* an empty sample */
        for (int k = 0; k < 4; k++) {
            d->p[k] = s->p[k];
            if (s->node[k] >= 0 && sl__argin_values(io, s->node[k], i, &d->p[k], 1) != 1)
                return sl__op_fail(err, SL_EINVAL, io, i, name, "%s must be one value per sample",
                                   pnames[s->kind][k]);
        }
        if (s->kind == SL__NOISE_SALT_PEPPER) {
            if (!s->given[2]) d->p[2] = type_max(in->dtype);
            if (!s->given[3]) d->p[3] = type_min(in->dtype);
            if (!(d->p[0] >= 0 && d->p[0] <= 1) || !(d->p[1] >= 0 && d->p[1] <= 1))
                return sl__op_fail(err, SL_EINVAL, io, i, name,
                                   "prob %g and salt_vs_pepper %g must be in [0, 1]", d->p[0],
                                   d->p[1]);
        }
        if (s->kind == SL__NOISE_GAUSSIAN && !(d->p[1] >= 0))
            return sl__op_fail(err, SL_EINVAL, io, i, name, "stddev %g is %s", d->p[1],
                               d->p[1] != d->p[1] ? "not a number" : "negative");
        if (s->kind == SL__NOISE_SHOT && !(d->p[0] >= 0))
            return sl__op_fail(err, SL_EINVAL, io, i, name, "factor %g is %s", d->p[0],
                               d->p[0] != d->p[0] ? "not a number" : "negative");
    }
    return SL_OK;
}

static sl_status noise_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    noise_state *s = state;
    (void)worker, (void)err;
    const sl__noise_desc *d = &s->desc[i];
    sl_dtype t = io->in[0]->dtype;
    for (int64_t e = 0; e < d->n; e++) sl__noise_elem(d, s->kind, t, s->batch_seed, e);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status noise_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    noise_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__noise_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].n > maxn) maxn = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_noise(dd, io->batch, maxn, s->kind, io->in[0]->dtype, s->batch_seed, io->stream,
                          err);
}
#define NOISE_GPU SL_OPDEV_GPU, .run_gpu = noise_run_gpu
#else
#define NOISE_GPU 0
#endif

#define NOISE_OP(var, nm, doc_, schema, create_)                                                   \
    const sl__op_def var = {                                                                       \
        .name = nm,                                                                                \
        .doc = doc_,                                                                               \
        .min_inputs = 1,                                                                           \
        .max_inputs = 1,                                                                           \
        .args = schema,                                                                            \
        .devices = SL_OPDEV_CPU | NOISE_GPU,                                                       \
        .flags = SL_OPF_RANDOM,                                                                    \
        .create = create_,                                                                         \
        .setup = noise_setup,                                                                      \
        .run_cpu = noise_run_cpu,                                                                  \
        .destroy = noise_destroy,                                                                  \
    }

NOISE_OP(sl__noise_gaussian_op, "noise.gaussian", "Adds Gaussian noise to every element.",
         gaussian_args, gaussian_create);
NOISE_OP(sl__noise_salt_and_pepper_op, "noise.salt_and_pepper",
         "Replaces random elements (or pixels) by salt or pepper values.", sp_args, sp_create);
NOISE_OP(sl__noise_shot_op, "noise.shot", "Shot (Poisson) noise: Poisson(x / factor) * factor.",
         shot_args, shot_create);
