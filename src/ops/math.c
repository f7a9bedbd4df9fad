/* SPDX-License-Identifier: Apache-2.0 */
/* math.abs, fabs, floor, ceil, pow, fpow, min, max, clamp, sqrt, rsqrt, cbrt, exp, log, log2,
 * log10, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, asinh, acosh, atanh: DALI's
 * mathematical functions (nvidia.dali.math), element by element on one to three inputs, broadcast
 * numpy-style (a per-sample scalar against an image, a (3,) vector against HWC). Result types as
 * DALI's: the floating functions (and fabs, floor, ceil) give float32 for integer inputs and keep
 * a floating type; abs keeps its type; pow, min, max and clamp give the operands' promoted type
 * (DALI's table: equal types stay, a float wins, same-signedness integers give the wider, intX
 * with uintY gives intX if X > Y else int2Y, bool is the smallest unsigned type), fpow and atan2
 * that type or float32 if it is an integer. Python gives constants as types.Constant nodes (int32,
 * float32). The per-element rule is ops/math.h's, shared with the CUDA run (math.cu). */
#include "ops/math.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema math_args[] = {
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const names[SL__M_COUNT] = {
    "math.sqrt",  "math.rsqrt", "math.cbrt",  "math.exp",  "math.log",   "math.log2",
    "math.log10", "math.sin",   "math.cos",   "math.tan",  "math.asin",  "math.acos",
    "math.atan",  "math.sinh",  "math.cosh",  "math.tanh", "math.asinh", "math.acosh",
    "math.atanh", "math.fabs",  "math.floor", "math.ceil", "math.abs",   "math.pow",
    "math.fpow",  "math.atan2", "math.min",   "math.max",  "math.clamp"};

typedef struct math_state {
    int op;
    sl__math_types t;
    sl__math_desc *desc;
    int cap;
    sl__gpu_args gpu;
} math_state;

static void math_destroy(void *state) {
    math_state *s = state;
    if (!s) return;
    free(s->desc);
    sl__gpu_args_free(&s->gpu);
    free(s);
}

static sl_status math_create(const sl__args *a, void **out, sl_err *err, int op) {
    (void)a;
    math_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->op = op;
    *out = s;
    return SL_OK;
}

/* DALI's promotion of two operand types */
static sl_dtype promote(sl_dtype a, sl_dtype b) {
    if (a == b) return a;
    bool fa = sl__math_is_float(a), fb = sl__math_is_float(b);
    int xa = sl__math_bits(a), xb = sl__math_bits(b);
    if (fa && fb) return xa != xb ? (xa > xb ? a : b) : SL_DTYPE_F32; /* f16 with bf16 */
    if (fa || fb) return fa ? a : b;
    bool sa = sl__math_is_signed(a), sb = sl__math_is_signed(b);
    if (sa == sb) return xa >= xb ? a : b;
    int x = sa ? xa : xb, y = sa ? xb : xa;
    int bits = x > y ? x : 2 * y;
    return bits <= 8    ? SL_DTYPE_I8
           : bits <= 16 ? SL_DTYPE_I16
           : bits <= 32 ? SL_DTYPE_I32
                        : SL_DTYPE_I64;
}

static sl_dtype result_type(int op, const sl_dtype *in, int nin) {
    if (op == SL__M_ABS) return in[0];
    if (op < SL__M_ABS) return sl__math_is_float(in[0]) ? in[0] : SL_DTYPE_F32;
    sl_dtype t = in[0];
    for (int j = 1; j < nin; j++) t = promote(t, in[j]);
    if ((op == SL__M_FPOW || op == SL__M_ATAN2) && !sl__math_is_float(t)) t = SL_DTYPE_F32;
    return t;
}

static sl_status math_setup(void *state, sl__op_io *io, sl_err *err) {
    math_state *s = state;
    const char *name = names[s->op];
    int nin = io->num_inputs;
    s->t.op = s->op;
    s->t.nin = nin;
    for (int j = 0; j < nin; j++) {
        s->t.in[j] = io->in[j]->dtype;
        if (s->t.in[j] == SL_DTYPE_INTERP) /* no number: math.h's loads know none of it */
            return sl_err_set(err, SL_EINVAL,
                              "%s: input %d is of interpolation types (DALIInterpType), not "
                              "numbers (cast it first)",
                              name, j);
    }
    s->t.out = result_type(s->op, s->t.in, nin);
    if (s->t.out == SL_DTYPE_BOOL && s->op == SL__M_POW)
        return sl_err_set(err, SL_EINVAL, "%s: two bool operands", name);
    /* the output's rank: the largest; its layout: the first input's of that rank */
    int nd = 0, lay = 0;
    for (int j = 0; j < nin; j++)
        if (io->in[j]->ndim > nd) nd = io->in[j]->ndim, lay = j;
    if (io->batch > s->cap) {
        sl__math_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", name);
        s->desc = d, s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->t.out, nd, io->device, err));
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(nd ? nd : 1) * sizeof(int64_t), err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        sl__math_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->ndim = nd;
        for (int k = 0; k < nd; k++) d->shape[k] = 1;
        for (int j = 0; j < nin && st == SL_OK; j++) {
            const sl_tlist *l = io->in[j];
            const int64_t *sh = sl_tlist_shape(l, i);
            int lead = nd - l->ndim;
            for (int k = 0; k < l->ndim; k++) {
                int64_t x = sh[k], *o = &d->shape[lead + k];
                if (x != 1 && *o != 1 && x != *o)
                    st = sl__op_fail(err, SL_EINVAL, io, i, name,
                                     "input %d's extent %lld at dimension %d does not broadcast "
                                     "against %lld",
                                     j, (long long)x, lead + k, (long long)*o);
                else if (x != 1)
                    *o = x;
            }
        }
        for (int j = 0; j < nin && st == SL_OK; j++) {
            const sl_tlist *l = io->in[j];
            const int64_t *sh = sl_tlist_shape(l, i);
            int lead = nd - l->ndim;
            int64_t stride = 1;
            for (int k = l->ndim - 1; k >= 0; k--) {
                d->stride[j][lead + k] = sh[k] == 1 ? 0 : stride;
                stride *= sh[k];
            }
            d->in[j] = l->data[i];
        }
        d->n = 1;
        for (int k = 0; k < nd; k++) d->n *= d->shape[k];
        memcpy(shapes + (size_t)i * (size_t)nd, d->shape, (size_t)nd * sizeof(int64_t));
        sl__math_desc_coalesce(d, nin);
    }
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memcpy(out->layout, io->in[lay]->layout, sizeof out->layout);
    for (int i = 0; i < io->batch; i++) s->desc[i].out = out->data[i];
    return SL_OK;
}

static sl_status math_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    math_state *s = state;
    (void)io, (void)worker, (void)err;
    const sl__math_desc *d = &s->desc[i];
    for (int64_t e = 0; e < d->n; e++) sl__math_elem(d, &s->t, e);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status math_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    math_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__math_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t maxn = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].n > maxn) maxn = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_math(dd, io->batch, maxn, &s->t, io->stream, err);
}
#define MATH_GPU SL_OPDEV_GPU, .run_gpu = math_run_gpu
#else
#define MATH_GPU 0
#endif

#define MATH_OP(fname, op, nin, doc_)                                                              \
    static sl_status create_##fname(const sl__args *a, const sl__op_init *init, void **out,        \
                                    sl_err *err) {                                                 \
        (void)init;                                                                                \
        return math_create(a, out, err, op);                                                       \
    }                                                                                              \
    const sl__op_def sl__math_##fname##_op = {                                                     \
        .name = "math." #fname,                                                                    \
        .doc = doc_,                                                                               \
        .min_inputs = nin,                                                                         \
        .max_inputs = nin,                                                                         \
        .args = math_args,                                                                         \
        .devices = SL_OPDEV_CPU | MATH_GPU,                                                        \
        .create = create_##fname,                                                                  \
        .setup = math_setup,                                                                       \
        .run_cpu = math_run_cpu,                                                                   \
        .destroy = math_destroy,                                                                   \
    }

MATH_OP(sqrt, SL__M_SQRT, 1, "Square root (float32 for integer inputs).");
MATH_OP(rsqrt, SL__M_RSQRT, 1, "1 / square root (float32 for integer inputs).");
MATH_OP(cbrt, SL__M_CBRT, 1, "Cube root (float32 for integer inputs).");
MATH_OP(exp, SL__M_EXP, 1, "e to the power of the input (float32 for integer inputs).");
MATH_OP(log, SL__M_LOG, 1, "Natural logarithm (float32 for integer inputs).");
MATH_OP(log2, SL__M_LOG2, 1, "Base-2 logarithm (float32 for integer inputs).");
MATH_OP(log10, SL__M_LOG10, 1, "Base-10 logarithm (float32 for integer inputs).");
MATH_OP(sin, SL__M_SIN, 1, "Sine of radians (float32 for integer inputs).");
MATH_OP(cos, SL__M_COS, 1, "Cosine of radians (float32 for integer inputs).");
MATH_OP(tan, SL__M_TAN, 1, "Tangent of radians (float32 for integer inputs).");
MATH_OP(asin, SL__M_ASIN, 1, "Arcsine, in radians (float32 for integer inputs).");
MATH_OP(acos, SL__M_ACOS, 1, "Arccosine, in radians (float32 for integer inputs).");
MATH_OP(atan, SL__M_ATAN, 1, "Arctangent, in radians (float32 for integer inputs).");
MATH_OP(sinh, SL__M_SINH, 1, "Hyperbolic sine (float32 for integer inputs).");
MATH_OP(cosh, SL__M_COSH, 1, "Hyperbolic cosine (float32 for integer inputs).");
MATH_OP(tanh, SL__M_TANH, 1, "Hyperbolic tangent (float32 for integer inputs).");
MATH_OP(asinh, SL__M_ASINH, 1, "Inverse hyperbolic sine (float32 for integer inputs).");
MATH_OP(acosh, SL__M_ACOSH, 1, "Inverse hyperbolic cosine (float32 for integer inputs).");
MATH_OP(atanh, SL__M_ATANH, 1, "Inverse hyperbolic tangent (float32 for integer inputs).");
MATH_OP(fabs, SL__M_FABS, 1, "Absolute value as a float (float32 for integer inputs).");
MATH_OP(floor, SL__M_FLOOR, 1, "Rounds down (float32 for integer inputs).");
MATH_OP(ceil, SL__M_CEIL, 1, "Rounds up (float32 for integer inputs).");
MATH_OP(abs, SL__M_ABS, 1, "Absolute value, in the input's type.");
MATH_OP(pow, SL__M_POW, 2, "First input to the power of the second (promoted type).");
MATH_OP(fpow, SL__M_FPOW, 2, "First input to the power of the second, in floating point.");
MATH_OP(atan2, SL__M_ATAN2, 2, "Arctangent of y / x, by quadrant (float32 for integers).");
MATH_OP(min, SL__M_MIN, 2, "Element-wise minimum (promoted type).");
MATH_OP(max, SL__M_MAX, 2, "Element-wise maximum (promoted type).");
MATH_OP(clamp, SL__M_CLAMP, 3, "The first input clamped to [lo, hi] (promoted type).");
