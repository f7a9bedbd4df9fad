/* SPDX-License-Identifier: Apache-2.0 */
/* peek_image_shape (DALI's fn.peek_image_shape): each encoded image's shape, [height, width,
 * channels], from its headers alone (io/image_info.h, the decoders' own peek), as the decoder
 * would give it: after the EXIF orientation (adjust_orientation, default True) and with the
 * channels of `image_type` (RGB: 3, GRAY: 1, ANY_DATA: the file's). JPEG, PNG, BMP, PNM, TIFF,
 * JPEG 2000 (the last two where the build reads them); anything else is an error naming the record.
 * `dtype`: INT64 (default), INT32, UINT32, UINT64, FLOAT or DOUBLE. CPU only, as DALI's. */
#include "io/image_info.h"
#include "operator/dtype_conv.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdlib.h>
#include <string.h>

static const sl__arg_schema peek_args[] = {
    {"dtype", SL_ARG_DTYPE, "types.INT64",
     "output type (INT64, INT32, UINT32, UINT64, FLOAT, DOUBLE)", 0, NULL},
    {"adjust_orientation", SL_ARG_BOOL, "True", "the shape after the EXIF orientation", 0, NULL},
    {"image_type", SL_ARG_ENUM, "types.RGB",
     "the channels asked for: RGB, BGR, YCbCr (3), GRAY (1), ANY_DATA (the file's)", 0,
     "RGB|BGR|GRAY|YCbCr|ANY_DATA"},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const NAME = "peek_image_shape";

typedef struct peek_state {
    sl_dtype dtype;
    bool orient;
    sl__img_type type;
} peek_state;

static sl_status peek_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    sl_dtype t = sl__args_dtype(a, "dtype");
    if (t != SL_DTYPE_I64 && t != SL_DTYPE_I32 && t != SL_DTYPE_U32 && t != SL_DTYPE_U64 &&
        t != SL_DTYPE_F32 && t != SL_DTYPE_F64)
        return sl_err_set(err, SL_EINVAL,
                          "%s: dtype %s (INT64, INT32, UINT32, UINT64, FLOAT or DOUBLE)", NAME,
                          sl_dtype_name(t));
    int type = sl__decode_image_type(sl__args_str(a, "image_type"));
    if (type < 0)
        return sl_err_set(err, SL_EINVAL, "%s: image_type %s", NAME, sl__args_str(a, "image_type"));
    peek_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->dtype = t;
    s->orient = sl__args_bool(a, "adjust_orientation");
    s->type = (sl__img_type)type;
    *out = s;
    return SL_OK;
}

static sl_status peek_setup(void *state, sl__op_io *io, sl_err *err) {
    peek_state *s = state;
    const sl_tlist *in = io->in[0];
    if (in->dtype != SL_DTYPE_U8 || in->ndim != 1)
        return sl_err_set(err, SL_EINVAL,
                          "%s: the input is encoded images, 1-d uint8 (got %s, %d dims)", NAME,
                          sl_dtype_name(in->dtype), in->ndim);
    sl_tlist *out = io->out[0];
    int64_t *shapes = sl__malloc((size_t)(io->batch ? io->batch : 1) * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++) shapes[i] = 3;
    sl_status st = sl_tlist_reset(out, io->batch, s->dtype, 1, sl_cpu(), err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    SL_TRY(st);
    for (int i = 0; i < io->batch; i++) {
        sl__decode_image_info inf;
        char why[256];
        st = sl__decode_image_peek(in->data[i], sl_tlist_sample_nbytes(in, i), s->type, s->orient,
                                   0, &inf, why, sizeof why);
        if (st != SL_OK) return sl__op_fail(err, st, io, i, NAME, "%s", why);
        sl__dtype_conv_store(out->data[i], s->dtype, 0, (double)inf.out_h);
        sl__dtype_conv_store(out->data[i], s->dtype, 1, (double)inf.out_w);
        sl__dtype_conv_store(out->data[i], s->dtype, 2, (double)inf.c);
    }
    return SL_OK;
}

const sl__op_def sl__peek_image_shape_op = {
    .name = "peek_image_shape",
    .aliases = "experimental.peek_image_shape",
    .doc = "Each encoded image's [height, width, channels], from its headers (no decoding).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = peek_args,
    .devices = SL_OPDEV_CPU,
    .create = peek_create,
    .setup = peek_setup,
    .destroy = free,
};
