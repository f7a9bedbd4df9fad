/* SPDX-License-Identifier: Apache-2.0 */
/* water, sphere and jitter (DALI's fn.water, fn.sphere, fn.jitter): each output pixel of an HWC
 * image (or HW) takes the value at a displaced point of the input. water: (x + ampl_x * sin(freq_x
 * * y + phase_x), y + ampl_y * cos(freq_y * x + phase_y)) at pixel centres; sphere: the point
 * pushed out from the centre by its distance over half the longer side; jitter: the pixel moved
 * by a random whole amount in [-nDegree / 2, nDegree - 1 - nDegree / 2] in x and y (Philox, keyed
 * by the seed, the sample's global index and the pixel). interp_type INTERP_NN (default) or
 * INTERP_LINEAR; points outside the image give fill_value; `mask` (per sample) 0 leaves a sample
 * as it is. Every dtype; the rule is ops/displace.h's, shared with the CUDA run. */
#include "ops/displace.h"
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define COMMON_ARGS                                                                                \
    {"fill_value", SL_ARG_FLOAT, "0.0", "value of points outside the image", 0, NULL},             \
        {"interp_type", SL_ARG_ENUM, "types.INTERP_NN", "sampling", 0, "INTERP_NN|INTERP_LINEAR"}, \
    {                                                                                              \
        "mask", SL_ARG_INT, "1", "0 leaves the sample as it is", SL_ARGF_PER_SAMPLE, NULL          \
    }

static const sl__arg_schema water_args[] = {
    {"ampl_x", SL_ARG_FLOAT, "10.0", "amplitude of the wave in x", 0, NULL},
    {"ampl_y", SL_ARG_FLOAT, "10.0", "amplitude of the wave in y", 0, NULL},
    {"freq_x", SL_ARG_FLOAT, "0.04908738521234052", "frequency of the wave in x (along y)", 0,
     NULL},
    {"freq_y", SL_ARG_FLOAT, "0.04908738521234052", "frequency of the wave in y (along x)", 0,
     NULL},
    {"phase_x", SL_ARG_FLOAT, "0.0", "phase of the wave in x", 0, NULL},
    {"phase_y", SL_ARG_FLOAT, "0.0", "phase of the wave in y", 0, NULL},
    COMMON_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema sphere_args[] = {
    COMMON_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};
static const sl__arg_schema jitter_args[] = {
    {"nDegree", SL_ARG_INT, "2", "each pixel moves by up to nDegree / 2 in x and y", 0, NULL},
    COMMON_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const names[] = {"water", "sphere", "jitter"};

typedef struct disp_state {
    sl__displace_params p;
    const char *name;
    uint64_t seed;
    int mask, node_mask;
    sl__displace_desc *desc;
    int cap;
    sl__gpu_args gpu;
} disp_state;

static void disp_destroy(void *state) {
    disp_state *s = state;
    if (!s) return;
    free(s->desc);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status disp_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err,
                             int kind) {
    disp_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->p.kind = kind;
    s->name = names[kind];
    s->seed = init->seed;
    s->p.fill = sl__args_float(a, "fill_value");
    s->p.linear = !strcmp(sl__args_str(a, "interp_type"), "INTERP_LINEAR");
    s->mask = (int)sl__args_int(a, "mask");
    s->node_mask = sl__args_node(a, "mask");
    if (kind == SL__DISP_WATER) {
        s->p.ampl_x = sl__args_float(a, "ampl_x"), s->p.ampl_y = sl__args_float(a, "ampl_y");
        s->p.freq_x = sl__args_float(a, "freq_x"), s->p.freq_y = sl__args_float(a, "freq_y");
        s->p.phase_x = sl__args_float(a, "phase_x"), s->p.phase_y = sl__args_float(a, "phase_y");
    }
    if (kind == SL__DISP_JITTER) {
        int64_t n = sl__args_int(a, "nDegree");
        if (n < 1 || n > 1000000) {
            free(s);
            return sl_err_set(err, SL_EINVAL, "jitter: nDegree %lld (1 or more)", (long long)n);
        }
        s->p.degree = (int)n;
    }
    *out = s;
    return SL_OK;
}

static sl_status water_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return disp_create(a, i, o, e, SL__DISP_WATER);
}
static sl_status sphere_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return disp_create(a, i, o, e, SL__DISP_SPHERE);
}
static sl_status jitter_create(const sl__args *a, const sl__op_init *i, void **o, sl_err *e) {
    return disp_create(a, i, o, e, SL__DISP_JITTER);
}

static sl_status disp_setup(void *state, sl__op_io *io, sl_err *err) {
    disp_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->ndim != 2 && in->ndim != 3)
        return sl_err_set(err, SL_EINVAL, "%s: the input is %d-d (an HWC or HW image)", s->name,
                          in->ndim);
    if (in->ndim == 3 && in->layout[0] && strcmp(in->layout, "HWC") != 0)
        return sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" (HWC images)", s->name, in->layout);
    if (io->batch > s->cap) {
        sl__displace_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->desc = d, s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, in->dtype, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    s->p.seed = io->seed ? io->seed : s->seed;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        sl__displace_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->in = in->data[i];
        d->out = out->data[i];
        d->h = sh[0], d->w = sh[1], d->c = in->ndim == 3 ? sh[2] : 1;
        if (d->c == 0) d->h = 0; /* nothing to do */
        d->stream = (uint64_t)(io->sample_base + i);
        double m = s->mask;
        if (s->node_mask >= 0 && sl__argin_values(io, s->node_mask, i, &m, 1) != 1)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name, "mask must be one value per sample");
        d->apply = m != 0;
    }
    return SL_OK;
}

static sl_status disp_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    disp_state *s = state;
    (void)worker, (void)err;
    const sl__displace_desc *d = &s->desc[i];
    sl_dtype t = io->in[0]->dtype;
    int es = (int)sl_dtype_size(t);
    int64_t n = d->h * d->w * d->c;
    for (int64_t e = 0; e < n; e++) sl__displace_elem(d, &s->p, t, es, e);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status disp_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    disp_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__displace_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].h * d[i].w * d[i].c > maxn) maxn = d[i].h * d[i].w * d[i].c;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    sl_dtype t = io->in[0]->dtype;
    return sl__cuda_displace(dd, io->batch, maxn, &s->p, t, (int)sl_dtype_size(t), io->stream, err);
}
#define DISP_GPU SL_OPDEV_GPU, .run_gpu = disp_run_gpu
#else
#define DISP_GPU 0
#endif

#define DISP_OP(var, nm, schema, create_, flags_, doc_)                                            \
    const sl__op_def var = {                                                                       \
        .name = nm,                                                                                \
        .doc = doc_,                                                                               \
        .min_inputs = 1,                                                                           \
        .max_inputs = 1,                                                                           \
        .args = schema,                                                                            \
        .devices = SL_OPDEV_CPU | DISP_GPU,                                                        \
        .flags = flags_,                                                                           \
        .create = create_,                                                                         \
        .setup = disp_setup,                                                                       \
        .run_cpu = disp_run_cpu,                                                                   \
        .destroy = disp_destroy,                                                                   \
    }

DISP_OP(sl__water_op, "water", water_args, water_create, 0,
        "Displaces pixels along sine waves, as seen through water.");
DISP_OP(sl__sphere_op, "sphere", sphere_args, sphere_create, 0,
        "Displaces pixels as if the image were wrapped on a sphere.");
DISP_OP(sl__jitter_op, "jitter", jitter_args, jitter_create, SL_OPF_RANDOM,
        "Moves each pixel by a random amount of up to nDegree / 2 in x and y.");
