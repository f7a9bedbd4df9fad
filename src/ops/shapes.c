/* SPDX-License-Identifier: Apache-2.0 */
/* shapes: each sample's shape as a 1-d tensor (DALI's fn.shapes), of `dtype` (int64 by default);
 * a 0-d sample gives an empty one. On the GPU the shapes are made in setup and sent in one copy. */
#include "ops/upload.h"
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema shapes_args[] = {
    {"dtype", SL_ARG_DTYPE, "types.INT64", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct shapes_state {
    sl_dtype dtype;
    sl__gpu_args gpu;
    unsigned char *host; /* GPU run: batch * SL_MAX_DIMS values */
    int cap;
} shapes_state;

static void shapes_destroy(void *state) {
    shapes_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    free(s->host);
    free(s);
}

static sl_status shapes_create(const sl__args *a, const sl__op_init *init, void **out,
                               sl_err *err) {
    (void)init;
    sl_dtype t = sl__args_dtype(a, "dtype");
    if (t == SL_DTYPE_BOOL || t == SL_DTYPE_F16 || t == SL_DTYPE_BF16)
        return sl_err_set(err, SL_EINVAL,
                          "shapes: dtype %s cannot hold extents (an integer type, float or double)",
                          sl_dtype_name(t));
    shapes_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->dtype = t;
    *out = s;
    return SL_OK;
}

/* out: (ndim,) per sample */
static sl_status shapes_setup(void *state, sl__op_io *io, sl_err *err) {
    shapes_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype, 1, io->device, err));
    int64_t *sh = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *sh, err);
    if (!sh) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) sh[i] = in->ndim;
    sl_status st = sl_tlist_alloc(out, sh, err);
    free(sh);
    if (st != SL_OK) return st;
    static const int none[1] = {0};
    io->run_index = none;
    io->run_count = 0;
    bool gpu = io->device.kind == SL_DEVICE_CUDA;
    if (gpu && io->batch > s->cap) {
        unsigned char *h = realloc(s->host, (size_t)io->batch * SL_MAX_DIMS * 8);
        if (!h) return sl_err_set(err, SL_ENOMEM, "shapes: out of memory");
        s->host = h, s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        void *dst = gpu ? s->host + (size_t)i * SL_MAX_DIMS * 8 : out->data[i];
        const int64_t *x = sl_tlist_shape(in, i);
        for (int d = 0; d < in->ndim; d++) sl__dtype_conv_store(dst, s->dtype, d, (double)x[d]);
    }
    return SL_OK;
}

/* setup did the work: the pool is not woken (io->run_count 0) */
static sl_status shapes_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)io, (void)i, (void)worker, (void)err;
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static const void *shapes_host(const void *state, const sl__op_io *io, int i) {
    (void)io;
    return ((const shapes_state *)state)->host + (size_t)i * SL_MAX_DIMS * 8;
}

static sl_status shapes_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    return sl__upload_samples(&((shapes_state *)state)->gpu, io, shapes_host, state, err);
}
#endif

const sl__op_def sl__shapes_op = {
    .name = "shapes",
    .doc = "Each sample's shape, as a 1-d tensor.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = shapes_args,
    .flags = SL_OPF_SHAPES,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = shapes_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = shapes_create,
    .setup = shapes_setup,
    .run_cpu = shapes_run_cpu,
    .destroy = shapes_destroy,
};
