/* SPDX-License-Identifier: Apache-2.0 */
/* lookup_table: maps each element of an integer input through a table (DALI's fn.lookup_table):
 * the element equal to keys[k] becomes values[k], any other default_value; the output has the
 * input's shape and layout, of `dtype` (FLOAT by default; values stored with cast's rules). Keys
 * are in [0, 65535], as DALI's; the table is built once, dense, at creation. On the GPU the
 * table, converted to the output type, is copied to the device at the first batch there. */
#include "ops/cast.h"
#include "ops/lookup_table.h"

#include "core/cuda.h"
#include "operator/dtype_conv.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LUT_KEYS SL__LUT_KEYS

static const sl__arg_schema lut_args[] = {
    {"keys", SL_ARG_INTS, "[]", "input values to map (0 to 65535)", 0, NULL},
    {"values", SL_ARG_FLOATS, "[]", "what each key maps to (as many as keys)", 0, NULL},
    {"default_value", SL_ARG_FLOAT, "0.0", "what any other input value maps to", 0, NULL},
    {"dtype", SL_ARG_DTYPE, "types.FLOAT", "output type", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct lut_state {
    sl_dtype dtype;
    double dflt;
    double *table;    /* LUT_KEYS values */
    void *typed;      /* LUT_KEYS + 1 values of dtype, the last default_value (the CUDA run's) */
    sl__gpu_args gpu; /* the CUDA run's descriptors */
    sl__gpu_scratch dev_table;
    const void *sent; /* where dev_table's copy of typed was made, or NULL */
} lut_state;

static void lut_destroy(void *state) {
    lut_state *s = state;
    if (s) {
        sl__gpu_args_free(&s->gpu);
        sl__gpu_scratch_free(&s->dev_table);
        free(s->table);
        free(s->typed);
    }
    free(s);
}

static sl_status lut_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    const int64_t *k;
    const double *v;
    int nk = sl__args_ints(a, "keys", &k), nv = sl__args_floats(a, "values", &v);
    if (nk != nv) return sl_err_set(err, SL_EINVAL, "lookup_table: %d keys but %d values", nk, nv);
    for (int i = 0; i < nk; i++)
        if (k[i] < 0 || k[i] >= LUT_KEYS)
            return sl_err_set(err, SL_EINVAL, "lookup_table: key %lld outside [0, %d]",
                              (long long)k[i], LUT_KEYS - 1);
    lut_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->dtype = sl__args_dtype(a, "dtype");
    s->dflt = sl__args_float(a, "default_value");
    s->table = sl__malloc(LUT_KEYS * sizeof *s->table, err);
    if (!s->table) {
        lut_destroy(s);
        return SL_ENOMEM;
    }
    for (int i = 0; i < LUT_KEYS; i++) s->table[i] = s->dflt;
    for (int i = 0; i < nk; i++) s->table[k[i]] = v[i];
#ifdef SLUICE_HAVE_CUDA
    s->typed = sl__malloc((LUT_KEYS + 1) * sl_dtype_size(s->dtype), err);
    if (!s->typed) {
        lut_destroy(s);
        return SL_ENOMEM;
    }
    for (int i = 0; i <= LUT_KEYS; i++)
        sl__dtype_conv_store(s->typed, s->dtype, i, i < LUT_KEYS ? s->table[i] : s->dflt);
#endif
    *out = s;
    return SL_OK;
}

static sl_status lut_setup(void *state, sl__op_io *io, sl_err *err) {
    lut_state *s = state;
    const sl_tlist *in = io->in[0];
    if (sl_dtype_is_float(in->dtype) || in->dtype == SL_DTYPE_BOOL)
        return sl_err_set(err, SL_EINVAL,
                          "lookup_table: the input must be of an integer type, "
                          "not %s",
                          sl_dtype_name(in->dtype));
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->dtype, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* sample i: out[k] = table[in[k]] (default outside the keys' range) */
static sl_status lut_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    lut_state *s = state;
    const sl_tlist *in = io->in[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++) n *= sh[d];
    for (int64_t k = 0; k < n; k++) {
        double x = sl__dtype_conv_load(in->data[i], in->dtype, k);
        double y = x >= 0 && x < LUT_KEYS ? s->table[(int64_t)x] : s->dflt;
        sl__dtype_conv_store(io->out[0]->data[i], s->dtype, k, y);
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status lut_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    lut_state *s = state;
    const sl_tlist *in = io->in[0];
    size_t tbytes = (LUT_KEYS + 1) * sl_dtype_size(s->dtype);
    void *table = sl__gpu_scratch_get(&s->dev_table, io->device.id, tbytes, io->stream, err);
    if (!table) return err->status;
    if (table != s->sent) { /* the first batch on this device (or a new block) */
        SL_TRY(sl__cuda_memcpy(table, true, s->typed, false, tbytes, io->stream, err));
        s->sent = table;
    }
    void *dd;
    int64_t maxn;
    SL_TRY(sl__cuda_cast_descs(&s->gpu, io, &dd, &maxn, err));
    return sl__cuda_lookup_table(dd, io->batch, maxn, in->dtype, table,
                                 (int64_t)sl_dtype_size(s->dtype), io->stream, err);
}
#endif

const sl__op_def sl__lookup_table_op = {
    .name = "lookup_table",
    .doc = "Maps integer elements through keys -> values (default_value for any other).",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = lut_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = lut_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = lut_create,
    .setup = lut_setup,
    .run_cpu = lut_run_cpu,
    .destroy = lut_destroy,
};
