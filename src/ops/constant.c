/* SPDX-License-Identifier: Apache-2.0 */
/* constant: the same tensor in every sample (DALI's fn.constant, behind types.Constant): `idata`
 * (integers, int32 by default) or `fdata` (floats, float32 by default), given the `shape` (one
 * value is repeated to fill it; shape=[] is a scalar) or laid out as a 1-d tensor, converted to
 * `dtype` with cast's rules, with `layout`. No values make an empty tensor, of shape (0) or of
 * any shape of no elements ((3, 0), as DALI's). The values are converted once, at creation; each
 * batch copies them (on the GPU in one transfer). */
#include "ops/upload.h"
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"
#include "core/size.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema constant_args[] = {
    {"idata", SL_ARG_INTS, "None", "the values, as integers", 0, NULL},
    {"fdata", SL_ARG_FLOATS, "None", "the values, as floats", 0, NULL},
    {"shape", SL_ARG_INTS, "None", "the shape (default: 1-d, the values' count)", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "None",
     "output type (default: int32 for idata, float32 for fdata); types.INTERP_TYPE takes idata of "
     "interpolation types (types.Constant([types.INTERP_NN, ...]))",
     SL_ARGF_ENUM_DTYPE, NULL},
    {"layout", SL_ARG_STR, "\"\"", "the output's layout", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const NAME = "constant";

typedef struct const_state {
    sl_dtype dtype;
    int ndim;
    int64_t shape[SL_MAX_DIMS];
    char layout[SL_LAYOUT_MAX + 1];
    void *bytes; /* the sample */
    size_t size;
    sl__gpu_args gpu;
} const_state;

static void const_destroy(void *state) {
    const_state *s = state;
    if (!s) return;
    free(s->bytes);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status const_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    bool hi = sl__args_get(a, "idata")->kind != SL_VAL_NONE;
    bool hf = sl__args_get(a, "fdata")->kind != SL_VAL_NONE;
    if (hi == hf)
        return sl_err_set(err, SL_EINVAL, "%s: give exactly one of idata and fdata", NAME);
    const_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    const int64_t *iv = NULL;
    const double *fv = NULL;
    int n = hi ? sl__args_ints(a, "idata", &iv) : sl__args_floats(a, "fdata", &fv);
    s->dtype = sl__args_get(a, "dtype")->kind != SL_VAL_NONE ? sl__args_dtype(a, "dtype")
               : hi                                          ? SL_DTYPE_I32
                                                             : SL_DTYPE_F32;
    sl_status st = SL_OK;
    if (s->dtype == SL_DTYPE_INTERP && !hi)
        st = sl_err_set(err, SL_EINVAL, "%s: dtype INTERP_TYPE takes idata, not fdata", NAME);
    for (int k = 0; st == SL_OK && s->dtype == SL_DTYPE_INTERP && k < n; k++)
        if (!sl__enum_code_name("INTERP_", (int)(iv[k] >= 0 && iv[k] < 1000 ? iv[k] : -1)))
            st = sl_err_set(err, SL_EINVAL,
                            "%s: idata[%d] = %lld is no interpolation type (DALI's codes: "
                            "INTERP_NN 0 to INTERP_GAUSSIAN 5)",
                            NAME, k, (long long)iv[k]);
    int64_t count = n;
    if (sl__args_get(a, "shape")->kind != SL_VAL_NONE) {
        const int64_t *sh;
        s->ndim = sl__args_ints(a, "shape", &sh);
        if (s->ndim > SL_MAX_DIMS)
            st = sl_err_set(err, SL_EINVAL, "%s: shape has %d dims, at most %d", NAME, s->ndim,
                            SL_MAX_DIMS);
        count = 1;
        for (int d = 0; st == SL_OK && d < s->ndim; d++) {
            s->shape[d] = sh[d];
            if (sh[d] < 0)
                st = sl_err_set(err, SL_EINVAL, "%s: shape: extent %lld", NAME, (long long)sh[d]);
        }
        size_t bytes;
        if (st == SL_OK &&
            sl__size_shape(s->shape, s->ndim, sl_dtype_size(s->dtype), &bytes, NULL) != SL__SIZE_OK)
            st = sl_err_set(err, SL_EINVAL, "%s: shape: a sample of more than %zu bytes", NAME,
                            SL__SIZE_LIMIT);
        for (int d = 0; st == SL_OK && d < s->ndim; d++) count *= s->shape[d];
        if (st == SL_OK && n != 1 && n != count)
            st = sl_err_set(err, SL_EINVAL, "%s: %s has %d values, the shape %lld", NAME,
                            hi ? "idata" : "fdata", n, (long long)count);
    } else {
        s->ndim = 1;
        s->shape[0] = n;
    }
    const char *lay = sl__args_str(a, "layout");
    if (st == SL_OK && lay && *lay && (int)strlen(lay) != s->ndim)
        st = sl_err_set(err, SL_EINVAL, "%s: layout \"%s\" for %d dims", NAME, lay, s->ndim);
    if (st == SL_OK && lay) snprintf(s->layout, sizeof s->layout, "%s", lay);
    if (st == SL_OK) {
        s->size = (size_t)count * sl_dtype_size(s->dtype);
        s->bytes = sl__malloc(s->size ? s->size : 1, err);
        if (!s->bytes) st = SL_ENOMEM;
        for (int64_t k = 0; st == SL_OK && k < count; k++) {
            int64_t j = n == 1 ? 0 : k;
            sl__dtype_conv_store(s->bytes, s->dtype, k, iv ? (double)iv[j] : fv[j]);
        }
    }
    if (st != SL_OK) {
        const_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status const_setup(void *state, sl__op_io *io, sl_err *err) {
    const_state *s = state;
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype, s->ndim, io->device, err));
    int64_t *shapes = sl__malloc((size_t)(io->batch ? io->batch : 1) *
                                     (size_t)(s->ndim ? s->ndim : 1) * sizeof(int64_t),
                                 err);
    if (!shapes) return SL_ENOMEM;
    for (int i = 0; i < io->batch; i++)
        memcpy(shapes + (size_t)i * (size_t)s->ndim, s->shape, (size_t)s->ndim * sizeof(int64_t));
    sl_status st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memcpy(out->layout, s->layout, sizeof out->layout);
    static const int none[1] = {0};
    io->run_index = none;
    io->run_count = 0;
    if (io->device.kind == SL_DEVICE_CPU)
        for (int i = 0; i < io->batch; i++)
            if (s->size) memcpy(out->data[i], s->bytes, s->size);
    return SL_OK;
}

/* setup did the work: the pool is not woken (io->run_count 0) */
static sl_status const_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)state, (void)io, (void)i, (void)worker, (void)err;
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static const void *const_bytes(const void *state, const sl__op_io *io, int i) {
    (void)io, (void)i;
    return ((const const_state *)state)->bytes;
}

static sl_status const_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    return sl__upload_samples(&((const_state *)state)->gpu, io, const_bytes, state, err);
}
#endif

const sl__op_def sl__constant_op = {
    .name = "constant",
    .doc = "The same tensor in every sample, from idata or fdata.",
    .min_inputs = 0,
    .max_inputs = 0,
    .args = constant_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = const_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = const_create,
    .setup = const_setup,
    .run_cpu = const_run_cpu,
    .destroy = const_destroy,
};
