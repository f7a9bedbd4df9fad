/* SPDX-License-Identifier: Apache-2.0 */
/* cast_like: the first input converted to the second input's type (DALI's fn.cast_like), with
 * cast's rules (operator/dtype_conv.h: saturating, round to nearest even, NaN to 0); the second
 * input's values are not read. Its CUDA run is cast's kernel (ops/cast.cu). */
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

static const sl__arg_schema cast_like_args[] = {
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct cl_state {
    sl__gpu_args gpu;
} cl_state;

static void cl_destroy(void *state) {
    cl_state *s = state;
    if (s) sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status cl_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)a, (void)init;
    cl_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    *out = s;
    return SL_OK;
}

static sl_status cl_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, io->in[1]->dtype, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static sl_status cl_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)worker, (void)err;
    const sl_tlist *in = io->in[0];
    sl_dtype ot = io->out[0]->dtype;
    size_t nb = sl_tlist_sample_nbytes(in, i);
    if (in->dtype == ot) {
        if (nb) memcpy(io->out[0]->data[i], in->data[i], nb);
        return SL_OK;
    }
    int64_t n = (int64_t)(nb / sl_dtype_size(in->dtype));
    sl__dtype_conv_n(io->out[0]->data[i], ot, in->data[i], in->dtype, n);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status cl_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    cl_state *s = state;
    void *dd;
    int64_t maxn;
    SL_TRY(sl__cuda_cast_descs(&s->gpu, io, &dd, &maxn, err));
    return sl__cuda_cast(dd, io->batch, maxn, io->in[0]->dtype, io->out[0]->dtype, io->stream, err);
}
#endif

const sl__op_def sl__cast_like_op = {
    .name = "cast_like",
    .doc = "Converts the first input to the type of the second (saturating, round to nearest).",
    .min_inputs = 2,
    .max_inputs = 2,
    .args = cast_like_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = cl_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = cl_create,
    .setup = cl_setup,
    .run_cpu = cl_run_cpu,
    .destroy = cl_destroy,
};
