/* SPDX-License-Identifier: Apache-2.0 */
/* random_crop_generator (DALI's fn.random_crop_generator): from each sample's shape (a 1-d list,
 * HW or HWC, as peek_image_shape or shapes give it) the crop window that decoders.image_random_crop
 * and random_resized_crop draw (crop_window.h: area and aspect ratio, the same Philox stream for
 * the same seed and sample), as two int64 outputs of (y, x): its anchor and its shape, to feed
 * slice, decoders.image_slice or any op that takes a region. */
#include "operator/op.h"
#include "ops/crop_window.h"

#include "core/alloc.h"
#include "operator/dtype_conv.h"

#include <stdlib.h>
#include <string.h>

static const char *const NAME = "random_crop_generator";

static const sl__arg_schema rcg_args[] = {
    SL__CROP_WINDOW_ARGS,
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct rcg_state {
    uint64_t seed;
    sl__crop_window_cfg win;
} rcg_state;

static sl_status rcg_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    rcg_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->seed = init->seed;
    sl_status st = sl__crop_window_args(a, NAME, &s->win, err);
    if (st != SL_OK) {
        free(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

/* in: (batch) 1-d integer shapes, HW or HWC; out[0], out[1]: (batch, 2) int64 anchor, shape */
static sl_status rcg_setup(void *state, sl__op_io *io, sl_err *err) {
    rcg_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->device.kind != SL_DEVICE_CPU || in->ndim != 1 || sl_dtype_is_float(in->dtype))
        return sl_err_set(err, SL_EINVAL,
                          "%s: the input must be each sample's shape, a 1-d list of integers "
                          "(HW or HWC) on the CPU",
                          NAME);
    int64_t *shapes = sl__malloc((size_t)(io->batch > 0 ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) shapes[i] = 2;
    sl_status st = SL_OK;
    for (int o = 0; o < 2 && st == SL_OK; o++) {
        st = sl_tlist_reset(io->out[o], io->batch, SL_DTYPE_I64, 1, sl_cpu(), err);
        if (st == SL_OK) st = sl_tlist_alloc(io->out[o], shapes, err);
    }
    free(shapes);
    uint64_t seed = io->seed ? io->seed : s->seed;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        int64_t n = in->shapes[i];
        if (n != 2 && n != 3) {
            st = sl__op_fail(err, SL_EINVAL, io, i, NAME,
                             "the shape has %lld values (HW or HWC: 2 or 3)", (long long)n);
            break;
        }
        double h = sl__dtype_conv_load(in->data[i], in->dtype, 0);
        double w = sl__dtype_conv_load(in->data[i], in->dtype, 1);
        if (!(h >= 1 && w >= 1 && h <= 1e9 && w <= 1e9)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, NAME,
                             "the shape's height and width are %g and %g (1 to 1e9)", h, w);
            break;
        }
        sl__crop_window c =
            sl__crop_window_draw(&s->win, seed, io->sample_base + i, (int64_t)h, (int64_t)w);
        int64_t *anchor = io->out[0]->data[i], *size = io->out[1]->data[i];
        anchor[0] = c.y, anchor[1] = c.x, size[0] = c.h, size[1] = c.w;
    }
    static const int none[1] = {0};
    io->run_index = none;
    io->run_count = 0;
    return st;
}

static int rcg_outputs(const sl__args *a) {
    (void)a;
    return 2;
}

static sl_status rcg_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)io, (void)i, (void)worker, (void)err;
    return SL_OK; /* setup drew everything */
}

const sl__op_def sl__random_crop_generator_op = {
    .name = "random_crop_generator",
    .doc = "From each sample's shape (HW or HWC), the random crop window of image_random_crop: "
           "its anchor and its shape, (y, x) int64 each.",
    .min_inputs = 1,
    .max_inputs = 1,
    .num_outputs = rcg_outputs,
    .args = rcg_args,
    .devices = SL_OPDEV_CPU,
    .flags = SL_OPF_RANDOM | SL_OPF_SHAPES,
    .create = rcg_create,
    .setup = rcg_setup,
    .run_cpu = rcg_run_cpu,
    .destroy = free,
};
