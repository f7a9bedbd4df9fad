/* SPDX-License-Identifier: Apache-2.0 */
/* cast: converts every element to dtype with DALI's ConvertSat rules (float to integer rounds to
 * nearest even and saturates; NaN gives 0). Shapes and layout are kept. */
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/cast.h"
#endif

static const sl__arg_schema cast_args[] = {
    {"dtype", SL_ARG_DTYPE, NULL, "output type", SL_ARGF_REQUIRED, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct cast_state {
    sl_dtype dtype;
    sl__gpu_args gpu;
} cast_state;

static void cast_destroy(void *state) {
    cast_state *s = state;
    if (s) sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status cast_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    cast_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->dtype = sl__args_dtype(a, "dtype");
    *out = s;
    return SL_OK;
}

static sl_status cast_setup(void *state, sl__op_io *io, sl_err *err) {
    cast_state *s = state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static sl_status cast_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    cast_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t n = (int64_t)(sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype));
    if (in->dtype == s->dtype) {
        memcpy(io->out[0]->data[i], in->data[i], sl_tlist_sample_nbytes(in, i));
        return SL_OK;
    }
    sl__dtype_conv_n(io->out[0]->data[i], s->dtype, in->data[i], in->dtype, n);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
sl_status sl__cuda_cast_descs(sl__gpu_args *g, const sl__op_io *io, void **dev, int64_t *max_elems,
                              sl_err *err) {
    const sl_tlist *in = io->in[0];
    sl__cuda_cast_desc *d = sl__gpu_args_host(g, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    *max_elems = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i].in = in->data[i];
        d[i].out = io->out[0]->data[i];
        d[i].n = (int64_t)(sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype));
        if (d[i].n > *max_elems) *max_elems = d[i].n;
    }
    return sl__gpu_args_send(g, (size_t)io->batch * sizeof *d, io->stream, dev, err);
}

static sl_status cast_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    cast_state *s = state;
    void *dd;
    int64_t maxn;
    SL_TRY(sl__cuda_cast_descs(&s->gpu, io, &dd, &maxn, err));
    return sl__cuda_cast(dd, io->batch, maxn, io->in[0]->dtype, s->dtype, io->stream, err);
}
#endif

const sl__op_def sl__cast_op = {
    .name = "cast",
    .doc = "Converts elements to another type (saturating, round to nearest).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = cast_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = cast_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = cast_create,
    .setup = cast_setup,
    .run_cpu = cast_run_cpu,
    .destroy = cast_destroy,
};
