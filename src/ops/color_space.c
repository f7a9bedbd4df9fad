/* SPDX-License-Identifier: Apache-2.0 */
/* color_space_conversion (DALI's fn.color_space_conversion): HWC images (or any (..., C) data)
 * from `image_type` to `output_type`, among RGB, BGR, GRAY and YCbCr, their type kept. Values are
 * normalized to [0, 1] (integers over their type's largest value), converted in float32 with
 * DALI's coefficients -- Y = 0.299 R + 0.587 G + 0.114 B, Cb and Cr full-range BT.601 around 0.5,
 * as JPEG's; GRAY to colour repeats the grey -- and scaled back, rounded and saturated. The rule
 * is ops/color_space.h's, shared with the CUDA run. */
#include "ops/color_space.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema cs_args[] = {
    {"image_type", SL_ARG_ENUM, NULL, "the input's colour space", SL_ARGF_REQUIRED,
     "RGB|BGR|GRAY|YCbCr"},
    {"output_type", SL_ARG_ENUM, NULL, "the output's colour space", SL_ARGF_REQUIRED,
     "RGB|BGR|GRAY|YCbCr"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct cs_state {
    int from, to;
    sl__cs_desc *desc;
    int cap;
    sl__gpu_args gpu;
} cs_state;

static int space(const char *s) {
    return !strcmp(s, "BGR")     ? SL__CS_BGR
           : !strcmp(s, "GRAY")  ? SL__CS_GRAY
           : !strcmp(s, "YCbCr") ? SL__CS_YCBCR
                                 : SL__CS_RGB;
}

static void cs_destroy(void *state) {
    cs_state *s = state;
    if (!s) return;
    free(s->desc);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status cs_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    cs_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->from = space(sl__args_str(a, "image_type"));
    s->to = space(sl__args_str(a, "output_type"));
    *out = s;
    return SL_OK;
}

static float type_scale(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_U8:
        return 255.0f;
    case SL_DTYPE_I8:
        return 127.0f;
    case SL_DTYPE_U16:
        return 65535.0f;
    case SL_DTYPE_I16:
        return 32767.0f;
    case SL_DTYPE_I32:
        return 2147483647.0f;
    case SL_DTYPE_U32:
        return 4294967295.0f;
    default:
        return 1.0f;
    }
}

static sl_status cs_setup(void *state, sl__op_io *io, sl_err *err) {
    cs_state *s = state;
    const sl_tlist *in = io->in[0];
    int cin = s->from == SL__CS_GRAY ? 1 : 3, cout = s->to == SL__CS_GRAY ? 1 : 3;
    if (in->ndim < 1)
        return sl_err_set(err, SL_EINVAL, "color_space_conversion: 0-d input (HWC images)");
    if (in->dtype == SL_DTYPE_BOOL || in->dtype == SL_DTYPE_I64 || in->dtype == SL_DTYPE_U64)
        return sl_err_set(err, SL_EINVAL, "color_space_conversion: %s images are not converted",
                          sl_dtype_name(in->dtype));
    size_t ll = strlen(in->layout);
    if (ll && in->layout[ll - 1] != 'C')
        return sl_err_set(err, SL_EINVAL,
                          "color_space_conversion: layout \"%s\": channels must come last",
                          in->layout);
    if (io->batch > s->cap) {
        sl__cs_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "color_space_conversion: out of memory");
        s->desc = d, s->cap = io->batch;
    }
    int nd = in->ndim;
    int64_t *shapes =
        sl__malloc((size_t)(io->batch ? io->batch : 1) * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        if (sh[nd - 1] != cin)
            st = sl__op_fail(err, SL_EINVAL, io, i, "color_space_conversion",
                             "%lld channels; the image_type has %d", (long long)sh[nd - 1], cin);
        memcpy(shapes + (size_t)i * (size_t)nd, sh, (size_t)nd * sizeof *sh);
        shapes[(size_t)i * (size_t)nd + (size_t)nd - 1] = cout;
        int64_t px = 1;
        for (int k = 0; k < nd - 1; k++) px *= sh[k];
        s->desc[i].pixels = px;
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, in->dtype, nd, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memcpy(out->layout, in->layout, sizeof out->layout);
    for (int i = 0; i < io->batch; i++) s->desc[i].in = in->data[i], s->desc[i].out = out->data[i];
    return SL_OK;
}

static sl_status cs_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    cs_state *s = state;
    (void)worker, (void)err;
    sl_dtype t = io->in[0]->dtype;
    const sl__cs_desc *d = &s->desc[i];
    if (s->from == s->to) {
        memcpy(d->out, d->in, sl_tlist_sample_nbytes(io->in[0], i));
        return SL_OK;
    }
    float scale = type_scale(t);
    for (int64_t p = 0; p < d->pixels; p++) sl__cs_pixel(d, t, s->from, s->to, scale, p);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status cs_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    cs_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__cs_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].pixels > maxn) maxn = d[i].pixels;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    sl_dtype t = io->in[0]->dtype;
    return sl__cuda_color_space(dd, io->batch, maxn, t, s->from, s->to, type_scale(t), io->stream,
                                err);
}
#endif

const sl__op_def sl__color_space_conversion_op = {
    .name = "color_space_conversion",
    .doc = "Converts images among RGB, BGR, GRAY and YCbCr.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = cs_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = cs_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = cs_create,
    .setup = cs_setup,
    .run_cpu = cs_run_cpu,
    .destroy = cs_destroy,
};
