/* SPDX-License-Identifier: Apache-2.0 */
/* shapes: each input sample's shape as a 1-D tensor of `dtype` (default INT64), as DALI's fn.shapes
 * (what DataNode.shape() makes). Only the input's shapes are read, so its data may be anywhere;
 * the output is on the CPU, written in setup. */
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema shapes_args[] = {
    {"dtype", SL_ARG_DTYPE, "types.INT64", "output type (an integer or floating type)", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct shapes_state {
    sl_dtype dtype;
} shapes_state;

static sl_status shapes_create(const sl__args *a, const sl__op_init *init, void **out,
                               sl_err *err) {
    (void)init;
    sl_dtype t = sl__args_dtype(a, "dtype");
    if (t == SL_DTYPE_BOOL || t == SL_DTYPE_BF16)
        return sl_err_set(err, SL_EINVAL, "shapes: dtype %s cannot hold extents", sl_dtype_name(t));
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
    int64_t *shapes = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) shapes[i] = in->ndim;
    sl_status st = sl_tlist_reset(out, io->batch, s->dtype, 1, sl_cpu(), err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        for (int d = 0; d < in->ndim; d++)
            sl__dtype_conv_store(out->data[i], s->dtype, d, (double)sh[d]);
    }
    return SL_OK;
}

const sl__op_def sl__shapes_op = {
    .name = "shapes",
    .doc = "Each sample's shape as a 1-D tensor (DALI's fn.shapes; DataNode.shape()).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = shapes_args,
    .devices = SL_OPDEV_CPU,
    .create = shapes_create,
    .setup = shapes_setup,
    .destroy = free,
};
