/* SPDX-License-Identifier: Apache-2.0 */
/* arithmetic: the op behind + - * / and unary - on op outputs in pipeline text (DALI's arithmetic
 * expressions; the parser emits it, and it can be called as fn.arithmetic too). Two inputs, or one
 * input and a constant (`constant`, typed by `constant_type` as DALI types Python's int and float:
 * int32, float32; `constant_left` when it is the left operand), or for op="minus" one input alone
 * (the result keeps its type; integers wrap). Element-wise; a sample of one element (a per-sample
 * scalar) is broadcast against the other operand, as DALI does.
 *
 * The result type follows DALI's promotion table: equal types stay; a floating type wins over an
 * integer one; two floating or two same-signedness integer types give the wider; a signed intX and
 * an unsigned intY give intX when X > Y, else the signed type twice Y's width (bool counts as
 * uint8; two bools are refused). `/` divides in floating point: two integer operands give float32.
 * Integer results are computed in 64-bit and wrap to the result's width, as C++ arithmetic in that
 * type does; floating results are computed in double and rounded once to the result type (for
 * + - * / on float32 that is exactly float32 arithmetic). `//` (op "div") keeps the promoted
 * type: integers divide as C does (toward zero; by zero gives 0), floating operands as `/`. A
 * float32 constant is rounded to float32 first, as DALI's is. The rule for one element is
 * ops/arithmetic.h's, which the CPU run and the CUDA run (ops/arithmetic.cu) share, so the two give
 * the same bits. */
#include "ops/arithmetic.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/arithmetic.h"
#endif

static const sl__arg_schema ar_args[] = {
    {"op", SL_ARG_ENUM, NULL, "the operation", SL_ARGF_REQUIRED, "add|sub|mul|fdiv|minus|div"},
    {"constant", SL_ARG_FLOAT, "None", "the constant operand (with one input)", 0, NULL},
    {"constant_type", SL_ARG_ENUM, "\"int32\"", "the constant's type: int32 or float32", 0,
     "int32|float32"},
    {"constant_left", SL_ARG_BOOL, "False", "the constant is the left operand", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

enum {
    A_ADD = SL__AR_ADD,
    A_SUB = SL__AR_SUB,
    A_MUL = SL__AR_MUL,
    A_FDIV = SL__AR_FDIV,
    A_MINUS = SL__AR_MINUS,
    A_DIV = SL__AR_DIV
};
static const char *const symbol[] = {"+", "-", "*", "/", "unary -", "//"};

typedef struct ar_state {
    int op;
    bool has_const, const_left;
    double cval;
    sl_dtype ctype;
    sl_dtype out;    /* the batch's result type (setup) */
    int big;         /* the input whose shape the output takes: 0 or 1 (setup) */
    int64_t *shapes; /* setup's scratch */
    int cap;
    sl__gpu_args gpu; /* the CUDA run's descriptors */
} ar_state;

static void ar_destroy(void *state) {
    ar_state *s = state;
    if (s) {
        free(s->shapes);
        sl__gpu_args_free(&s->gpu);
    }
    free(s);
}

static sl_status ar_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    ar_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    const char *op = sl__args_str(a, "op");
    s->op = !strcmp(op, "add")    ? A_ADD
            : !strcmp(op, "sub")  ? A_SUB
            : !strcmp(op, "mul")  ? A_MUL
            : !strcmp(op, "fdiv") ? A_FDIV
            : !strcmp(op, "div")  ? A_DIV
                                  : A_MINUS;
    s->has_const = sl__args_get(a, "constant")->kind != SL_VAL_NONE;
    if (s->has_const) s->cval = sl__args_float(a, "constant");
    s->const_left = sl__args_bool(a, "constant_left");
    s->ctype = !strcmp(sl__args_str(a, "constant_type"), "float32") ? SL_DTYPE_F32 : SL_DTYPE_I32;
    if (s->has_const && s->ctype == SL_DTYPE_F32) s->cval = (double)(float)s->cval;
    if (s->has_const && s->ctype == SL_DTYPE_I32 &&
        (s->cval != trunc(s->cval) || s->cval < -2147483648.0 || s->cval > 2147483647.0)) {
        sl_err_set(err, SL_EINVAL, "arithmetic: constant %g is not an int32", s->cval);
        ar_destroy(s);
        return SL_EINVAL;
    }
    *out = s;
    return SL_OK;
}

/* bits and kind of a type: 'f' floating, 'i' signed, 'u' unsigned (bool as uint8) */
static char kind_of(sl_dtype t, int *bits) {
    *bits = 8 * (int)sl_dtype_size(t);
    if (sl_dtype_is_float(t)) return 'f';
    return t == SL_DTYPE_I8 || t == SL_DTYPE_I16 || t == SL_DTYPE_I32 || t == SL_DTYPE_I64 ? 'i'
                                                                                           : 'u';
}

static sl_dtype int_type(char kind, int bits) {
    if (kind == 'u')
        return bits <= 8    ? SL_DTYPE_U8
               : bits <= 16 ? SL_DTYPE_U16
               : bits <= 32 ? SL_DTYPE_U32
                            : SL_DTYPE_U64;
    return bits <= 8    ? SL_DTYPE_I8
           : bits <= 16 ? SL_DTYPE_I16
           : bits <= 32 ? SL_DTYPE_I32
                        : SL_DTYPE_I64;
}

/* DALI's promotion table (see the top); fdiv makes integer results float32 */
static sl_status promote(sl_dtype a, sl_dtype b, int op, sl_dtype *out, sl_err *err) {
    if (a == SL_DTYPE_BOOL && b == SL_DTYPE_BOOL)
        return sl_err_set(err, SL_ENOTSUP, "arithmetic: '%s' on two bool operands", symbol[op]);
    if (a == SL_DTYPE_BOOL) a = SL_DTYPE_U8;
    if (b == SL_DTYPE_BOOL) b = SL_DTYPE_U8;
    int xa, xb;
    char ka = kind_of(a, &xa), kb = kind_of(b, &xb);
    sl_dtype t;
    if (a == b)
        t = a;
    else if (ka == 'f' && kb == 'f')
        t = xa != xb ? (xa > xb ? a : b) : SL_DTYPE_F32; /* float16 with bfloat16: float32 */
    else if (ka == 'f' || kb == 'f')
        t = ka == 'f' ? a : b;
    else if (ka == kb)
        t = xa >= xb ? a : b;
    else { /* signed X, unsigned Y */
        int x = ka == 'i' ? xa : xb, y = ka == 'i' ? xb : xa;
        t = x > y ? int_type('i', x) : int_type('i', 2 * y);
    }
    if (op == A_FDIV && !sl_dtype_is_float(t)) t = SL_DTYPE_F32;
    *out = t;
    return SL_OK;
}

static int64_t volume(const sl_tlist *l, int i) {
    const int64_t *sh = sl_tlist_shape(l, i);
    int64_t v = 1;
    for (int d = 0; d < l->ndim; d++) v *= sh[d];
    return v;
}

static sl_status ar_setup(void *state, sl__op_io *io, sl_err *err) {
    ar_state *s = state;
    const sl_tlist *a = io->in[0], *b = io->num_inputs > 1 ? io->in[1] : NULL;
    if (s->op == A_MINUS) { /* unary: the input's own type */
        if (b || s->has_const)
            return sl_err_set(err, SL_EINVAL, "arithmetic: minus takes one input and no constant");
        if (a->dtype == SL_DTYPE_BOOL)
            return sl_err_set(err, SL_ENOTSUP, "arithmetic: unary '-' on a bool operand");
        s->out = a->dtype;
        s->big = 0;
        sl_tlist *out = io->out[0];
        SL_TRY(sl_tlist_reset(out, io->batch, s->out, a->ndim, io->device, err));
        SL_TRY(sl_tlist_alloc(out, a->shapes, err));
        memcpy(out->layout, a->layout, sizeof out->layout);
        return SL_OK;
    }
    if ((b != NULL) == s->has_const)
        return sl_err_set(err, SL_EINVAL,
                          "arithmetic: give two inputs, or one input and a constant");
    sl_dtype ta = a->dtype, tb = b ? b->dtype : s->ctype;
    if (s->has_const && s->const_left) ta = s->ctype, tb = a->dtype;
    SL_TRY(promote(ta, tb, s->op, &s->out, err));
    /* the output takes the shapes of the input with more dimensions (the first on a tie); the
     * other's samples must match them or hold one element */
    s->big = b && b->ndim > a->ndim ? 1 : 0;
    const sl_tlist *big = s->big ? b : a, *small = s->big ? a : b;
    for (int i = 0; small && i < io->batch; i++) {
        bool same =
            small->ndim == big->ndim && !memcmp(sl_tlist_shape(small, i), sl_tlist_shape(big, i),
                                                (size_t)big->ndim * sizeof(int64_t));
        if (same || volume(small, i) == 1) continue;
        if (small->ndim == big->ndim && volume(big, i) == 1) continue; /* the other way round */
        return sl__op_fail(err, SL_EINVAL, io, i, "arithmetic",
                           "'%s': operand shapes differ (%lld and %lld elements) and neither "
                           "is one element",
                           symbol[s->op], (long long)volume(a, i), (long long)volume(b, i));
    }
    int nd = big->ndim;
    if (io->batch > s->cap) {
        int64_t *n = realloc(s->shapes, (size_t)io->batch * SL_MAX_DIMS * sizeof *n);
        if (!n) return sl_err_set(err, SL_ENOMEM, "arithmetic: out of memory");
        s->shapes = n;
        s->cap = io->batch;
    }
    for (int i = 0; i < io->batch; i++) {
        /* a one-element sample of the bigger input takes the other's shape when equal in rank */
        const sl_tlist *from =
            small && small->ndim == nd && volume(big, i) == 1 && volume(small, i) > 1 ? small : big;
        memcpy(s->shapes + (size_t)i * (size_t)nd, sl_tlist_shape(from, i),
               (size_t)nd * sizeof(int64_t));
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, s->out, nd, io->device, err));
    SL_TRY(sl_tlist_alloc(out, s->shapes, err));
    memcpy(out->layout, big->layout, sizeof out->layout);
    return SL_OK;
}

/* The batch's operation, with the operands in order (a constant on the left is operand 0), and
 * sample i's operand addresses and element steps (0: a one-element sample, broadcast). */
static sl__arith ar_of(const ar_state *s, const sl__op_io *io) {
    const sl_tlist *a = io->in[0], *b = io->num_inputs > 1 ? io->in[1] : NULL;
    sl__arith r = {
        s->op, {a->dtype, b ? b->dtype : s->ctype}, s->out, sl_dtype_is_float(s->out), -1, s->cval};
    if (s->has_const) r.konst = 1;
    if (s->has_const && s->const_left) r.t[1] = r.t[0], r.t[0] = s->ctype, r.konst = 0;
    return r;
}

static void operands(const ar_state *s, const sl__op_io *io, int i, const void *p[2],
                     int64_t step[2]) {
    const sl_tlist *a = io->in[0], *b = io->num_inputs > 1 ? io->in[1] : NULL;
    p[0] = a->data[i], p[1] = b ? b->data[i] : NULL;
    step[0] = volume(a, i) == 1 ? 0 : 1, step[1] = b && volume(b, i) == 1 ? 0 : 1;
    if (s->has_const && s->const_left) p[1] = p[0], step[1] = step[0], p[0] = NULL, step[0] = 0;
}

static sl_status ar_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker, (void)err;
    ar_state *s = state;
    sl__arith r = ar_of(s, io);
    const void *p[2];
    int64_t step[2];
    operands(s, io, i, p, step);
    void *out = io->out[0]->data[i];
    int64_t n = volume(io->out[0], i);
    for (int64_t k = 0; k < n; k++)
        sl__arith_elem(&r, p[0], k * step[0], p[1], k * step[1], out, k);
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status ar_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    ar_state *s = state;
    sl__cuda_arith_desc *d =
        sl__gpu_args_host(&s->gpu, io->device.id, (size_t)io->batch * sizeof *d, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < io->batch; i++) {
        operands(s, io, i, d[i].p, d[i].step);
        d[i].out = io->out[0]->data[i];
        d[i].n = volume(io->out[0], i);
        if (d[i].n > most) most = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, (size_t)io->batch * sizeof *d, io->stream, &dd, err));
    sl__arith r = ar_of(s, io);
    return sl__cuda_arithmetic(dd, io->batch, most, &r, io->stream, err);
}
#endif

const sl__op_def sl__arithmetic_op = {
    .name = "arithmetic",
    .doc = "The op behind + - * / on op outputs (DALI's arithmetic expressions): element-wise, "
           "one-element samples broadcast, DALI's type promotions.",
    .min_inputs = 1,
    .max_inputs = 2,
    .args = ar_args,
#ifdef SLUICE_HAVE_CUDA
    .devices = SL_OPDEV_CPU | SL_OPDEV_GPU,
    .run_gpu = ar_run_gpu,
#else
    .devices = SL_OPDEV_CPU,
#endif
    .create = ar_create,
    .setup = ar_setup,
    .run_cpu = ar_run_cpu,
    .destroy = ar_destroy,
};
