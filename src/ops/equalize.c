/* SPDX-License-Identifier: Apache-2.0 */
/* experimental.equalize (DALI's fn.experimental.equalize, also fn.equalize): histogram
 * equalization of uint8 images, each channel of each frame on its own, by OpenCV's rule
 * (ops/equalize.h, shared with the CUDA run). Layouts HW, HWC, CHW, FHW, FHWC, FCHW (no layout: 2
 * dims HW, 3 dims HWC). */
#include "ops/equalize.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema eq_args[] = {
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct eq_state {
    const char *name;
    bool chan_first, frames;
    sl__gpu_args gpu;
} eq_state;

static void eq_destroy(void *state) {
    eq_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status eq_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    eq_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->name = a->op->name;
    *out = s;
    return SL_OK;
}

static sl_status eq_setup(void *state, sl__op_io *io, sl_err *err) {
    eq_state *s = state;
    const sl_tlist *in = io->in[0];
    const char *l = in->layout;
    if (!l[0]) l = in->ndim == 2 ? "HW" : in->ndim == 3 ? "HWC" : "";
    static const char *const OK[] = {"HW", "HWC", "CHW", "FHW", "FHWC", "FCHW"};
    int which = -1;
    for (int k = 0; k < 6; k++)
        if (!strcmp(l, OK[k]) && (int)strlen(l) == in->ndim) which = k;
    if (which < 0)
        return sl_err_set(err, SL_EINVAL,
                          "%s: images are HW, HWC, CHW, FHW, FHWC or FCHW (layout \"%s\", %d dims)",
                          s->name, in->layout, in->ndim);
    if (in->dtype != SL_DTYPE_U8)
        return sl_err_set(err, SL_EINVAL, "%s: input of type %s (uint8 only)", s->name,
                          sl_dtype_name(in->dtype));
    s->chan_first = which == 2 || which == 5;
    s->frames = which >= 3;
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* sample i's frames, channels and pixels per plane */
static void planes_of(const eq_state *s, const sl_tlist *in, int i, int64_t *f, int64_t *c,
                      int64_t *hw) {
    const int64_t *sh = sl_tlist_shape(in, i);
    int o = s->frames ? 1 : 0, nd = in->ndim;
    *f = o ? sh[0] : 1;
    if (s->chan_first)
        *c = sh[o], *hw = sh[o + 1] * sh[o + 2];
    else
        *c = nd - o == 3 ? sh[o + 2] : 1, *hw = sh[o] * sh[o + 1];
}

static sl_status eq_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    eq_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t f, c, hw;
    planes_of(s, in, i, &f, &c, &hw);
    const uint8_t *src = in->data[i];
    uint8_t *dst = io->out[0]->data[i];
    for (int64_t fr = 0; fr < f; fr++)
        for (int64_t ch = 0; ch < c; ch++) {
            int64_t start = fr * hw * c + (s->chan_first ? ch * hw : ch);
            int64_t stride = s->chan_first ? 1 : c;
            int64_t hist[256] = {0};
            uint8_t lut[256];
            for (int64_t p = 0; p < hw; p++) hist[src[start + p * stride]]++;
            sl__equalize_lut(hist, hw, lut);
            for (int64_t p = 0; p < hw; p++) dst[start + p * stride] = lut[src[start + p * stride]];
        }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status eq_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    eq_state *s = state;
    const sl_tlist *in = io->in[0];
    int64_t planes = 0;
    for (int i = 0; i < io->batch; i++) {
        int64_t f, c, hw;
        planes_of(s, in, i, &f, &c, &hw);
        if (hw > 0) planes += f * c;
    }
    if (planes > INT32_MAX)
        return sl_err_set(err, SL_EINVAL, "%s: %lld channel planes in one batch", s->name,
                          (long long)planes);
    size_t bytes = sl__gpu_args_align((size_t)(planes ? planes : 1) * sizeof(sl__cuda_eq_plane));
    sl__cuda_eq_plane *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t q = 0;
    for (int i = 0; i < io->batch; i++) {
        int64_t f, c, hw;
        planes_of(s, in, i, &f, &c, &hw);
        if (hw == 0) continue;
        for (int64_t fr = 0; fr < f; fr++)
            for (int64_t ch = 0; ch < c; ch++, q++) {
                d[q].in = in->data[i];
                d[q].out = io->out[0]->data[i];
                d[q].n = hw;
                d[q].start = fr * hw * c + (s->chan_first ? ch * hw : ch);
                d[q].stride = s->chan_first ? 1 : c;
            }
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_equalize(dd, (int)planes, io->stream, err);
}
#define EQ_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = eq_run_gpu,
#else
#define EQ_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__equalize_op = {
    .name = "equalize",
    .aliases = "experimental.equalize",
    .doc = "Histogram equalization of uint8 images, per channel (OpenCV's rule).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = eq_args,
    EQ_DEVICES.create = eq_create,
    .setup = eq_setup,
    .run_cpu = eq_run_cpu,
    .destroy = eq_destroy,
};
