/* SPDX-License-Identifier: Apache-2.0 */
/* arithmetic: the op behind DALI's mathematical expressions on op outputs (+ - * / // % ** ==
 * != < <= > >= & | ^ << >>, unary - + ~), which the Python package and the pipeline text emit;
 * it can be called as fn.arithmetic too. Two inputs, or one input and a constant (`constant`,
 * typed by `constant_type` as DALI types Python's int, float and bool: int32, float32, bool;
 * `constant_left` when it is the left operand), or for the unary ops one input alone (the result
 * keeps its type; integers wrap; ~ on bool is logical not). Element-wise, broadcast numpy-style
 * as DALI's (shapes padded with outer 1s; extents of 1 repeated).
 *
 * The result type follows DALI's promotion table: equal types stay; a floating type wins over an
 * integer one; two floating or two same-signedness integer types give the wider; a signed intX
 * and an unsigned intY give intX when X > Y, else the signed type twice Y's width (int64 at most);
 * bool is the smallest unsigned type. `/` divides in floating point (two integer operands give
 * float32); comparisons give bool. On two bools only * (logical and), the comparisons and the
 * bitwise ops are defined; % takes no bool; the bitwise ops and shifts take integers (and bool),
 * no floating operand. `//` and `%` follow C (truncation, fmod) as DALI's do; an integer
 * division or remainder by 0 gives 0 (numpy's result; C leaves it undefined). A float32
 * constant is rounded to float32 first, as DALI's is. The rule for one element is
 * ops/arithmetic.h's, which the CPU run and the CUDA run (ops/arithmetic.cu) share. */
#include "ops/arithmetic.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AR_OPS                                                                                     \
    "add|sub|mul|fdiv|div|mod|pow|eq|neq|lt|leq|gt|geq|bitand|bitor|bitxor|"                       \
    "lshift|rshift|minus|plus|invert"

static const sl__arg_schema ar_args[] = {
    {"op", SL_ARG_ENUM, NULL, "the operation", SL_ARGF_REQUIRED, AR_OPS},
    {"constant", SL_ARG_FLOAT, "None", "the constant operand (with one input)", 0, NULL},
    {"constant_type", SL_ARG_ENUM, "\"int32\"", "the constant's type: int32, float32 or bool", 0,
     "int32|float32|bool"},
    {"constant_left", SL_ARG_BOOL, "False", "the constant is the left operand", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const op_names[SL__AR_COUNT] = {
    "add", "sub", "mul",    "fdiv",  "div",    "mod",    "pow",    "eq",    "neq",  "lt",    "leq",
    "gt",  "geq", "bitand", "bitor", "bitxor", "lshift", "rshift", "minus", "plus", "invert"};
static const char *const symbol[SL__AR_COUNT] = {"+",  "-",  "*",  "/",  "//",      "%",       "**",
                                                 "==", "!=", "<",  "<=", ">",       ">=",      "&",
                                                 "|",  "^",  "<<", ">>", "unary -", "unary +", "~"};

typedef struct ar_state {
    int op;
    bool has_const, const_left;
    double cval;
    sl_dtype ctype;
    sl__arith ar;        /* the batch's operation (setup) */
    sl__math_desc *desc; /* per sample (setup) */
    int cap;
    sl__gpu_args gpu; /* the CUDA run's descriptors */
} ar_state;

static void ar_destroy(void *state) {
    ar_state *s = state;
    if (s) {
        free(s->desc);
        sl__gpu_args_free(&s->gpu);
    }
    free(s);
}

static bool unary(int op) {
    return op >= SL__AR_MINUS;
}
static bool comparison(int op) {
    return op >= SL__AR_EQ && op <= SL__AR_GE;
}
static bool bitwise(int op) {
    return op >= SL__AR_AND && op <= SL__AR_SHR;
}

static sl_status ar_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    ar_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    const char *op = sl__args_str(a, "op");
    for (int k = 0; k < SL__AR_COUNT; k++)
        if (!strcmp(op, op_names[k])) s->op = k;
    s->has_const = sl__args_get(a, "constant")->kind != SL_VAL_NONE;
    if (s->has_const) s->cval = sl__args_float(a, "constant");
    s->const_left = sl__args_bool(a, "constant_left");
    const char *ct = sl__args_str(a, "constant_type");
    s->ctype = !strcmp(ct, "float32") ? SL_DTYPE_F32
               : !strcmp(ct, "bool")  ? SL_DTYPE_BOOL
                                      : SL_DTYPE_I32;
    sl_status st = SL_OK;
    if (s->has_const && s->ctype == SL_DTYPE_F32) s->cval = (double)(float)s->cval;
    if (s->has_const && s->ctype == SL_DTYPE_I32 &&
        (s->cval != trunc(s->cval) || s->cval < -2147483648.0 || s->cval > 2147483647.0))
        st = sl_err_set(err, SL_EINVAL, "arithmetic: constant %g is not an int32", s->cval);
    if (s->has_const && s->ctype == SL_DTYPE_BOOL && s->cval != 0 && s->cval != 1)
        st = sl_err_set(err, SL_EINVAL, "arithmetic: constant %g is not a bool (0 or 1)", s->cval);
    if (st == SL_OK && unary(s->op) && (s->has_const || sl__args_given(a, "constant_left")))
        st = sl_err_set(err, SL_EINVAL,
                        "arithmetic: '%s' takes one input and no constant (argument 'constant')",
                        symbol[s->op]);
    if (st != SL_OK) {
        ar_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_dtype int_type(bool sg, int bits) {
    if (!sg)
        return bits <= 8    ? SL_DTYPE_U8
               : bits <= 16 ? SL_DTYPE_U16
               : bits <= 32 ? SL_DTYPE_U32
                            : SL_DTYPE_U64;
    return bits <= 8    ? SL_DTYPE_I8
           : bits <= 16 ? SL_DTYPE_I16
           : bits <= 32 ? SL_DTYPE_I32
                        : SL_DTYPE_I64;
}

/* DALI's promotion table (see the top); bool is uint1 */
static sl_dtype promote(sl_dtype a, sl_dtype b) {
    if (a == b) return a;
    bool fa = sl__math_is_float(a), fb = sl__math_is_float(b);
    int xa = sl__math_bits(a), xb = sl__math_bits(b);
    if (fa && fb) return xa != xb ? (xa > xb ? a : b) : SL_DTYPE_F32; /* float16 with bfloat16 */
    if (fa || fb) return fa ? a : b;
    bool sa = sl__math_is_signed(a), sb = sl__math_is_signed(b);
    if (sa == sb) return xa >= xb ? a : b;
    int x = sa ? xa : xb, y = sa ? xb : xa;
    return int_type(true, x > y ? x : 2 * y);
}

/* The batch's operation for operand types ta, tb (unary: tb unused), or an error naming the
 * operands' types. */
static sl_status plan(int op, sl_dtype ta, sl_dtype tb, sl__arith *r, sl_err *err) {
    char na[16], nb[16];
    snprintf(na, sizeof na, "%s", sl_dtype_name(ta));
    snprintf(nb, sizeof nb, "%s", sl_dtype_name(tb));
    r->op = op;
    if (unary(op)) {
        if (op == SL__AR_MINUS && ta == SL_DTYPE_BOOL)
            return sl_err_set(err, SL_ENOTSUP, "arithmetic: unary '-' on a bool operand");
        if (op == SL__AR_INV && sl__math_is_float(ta))
            return sl_err_set(err, SL_ENOTSUP,
                              "arithmetic: '~' on a %s operand (integers and "
                              "bool only)",
                              na);
        r->ct = r->out = ta;
        return SL_OK;
    }
    bool two_bools = ta == SL_DTYPE_BOOL && tb == SL_DTYPE_BOOL;
    if (two_bools && (op == SL__AR_ADD || op == SL__AR_SUB || op == SL__AR_FDIV ||
                      op == SL__AR_DIV || op == SL__AR_POW || op == SL__AR_SHL || op == SL__AR_SHR))
        return sl_err_set(err, SL_ENOTSUP,
                          "arithmetic: '%s' on two bool operands (DALI allows only *, the "
                          "comparisons and & | ^ between bools)",
                          symbol[op]);
    if (op == SL__AR_MOD && (ta == SL_DTYPE_BOOL || tb == SL_DTYPE_BOOL))
        return sl_err_set(err, SL_ENOTSUP, "arithmetic: '%%' on a bool operand (%s %% %s)", na, nb);
    if (bitwise(op) && (sl__math_is_float(ta) || sl__math_is_float(tb)))
        return sl_err_set(err, SL_ENOTSUP,
                          "arithmetic: '%s' on a floating operand (%s %s %s): bitwise operations "
                          "take integers and bool",
                          symbol[op], na, symbol[op], nb);
    r->ct = promote(ta, tb);
    if (op == SL__AR_FDIV && !sl__math_is_float(r->ct)) r->ct = SL_DTYPE_F32;
    r->out = comparison(op) ? SL_DTYPE_BOOL : r->ct;
    return SL_OK;
}

static sl_status ar_setup(void *state, sl__op_io *io, sl_err *err) {
    ar_state *s = state;
    const sl_tlist *a = io->in[0], *b = io->num_inputs > 1 ? io->in[1] : NULL;
    if (unary(s->op) && b)
        return sl_err_set(err, SL_EINVAL, "arithmetic: '%s' takes one input", symbol[s->op]);
    if (!unary(s->op) && (b != NULL) == s->has_const)
        return sl_err_set(err, SL_EINVAL,
                          "arithmetic: give two inputs, or one input and a constant");
    for (int j = 0; j < io->num_inputs; j++)
        if (io->in[j]->dtype == SL_DTYPE_INTERP) /* no number: math.h's loads know none of it */
            return sl_err_set(err, SL_EINVAL,
                              "arithmetic: input %d is of interpolation types (DALIInterpType), "
                              "not numbers (cast it first)",
                              j);
    /* operands in order: a constant on the left is operand 0 */
    const sl_tlist *opnd[2] = {a, b};
    sl__arith r = {0};
    r.konst = -1;
    r.t[0] = a->dtype;
    r.t[1] = b ? b->dtype : s->ctype;
    if (s->has_const) {
        r.konst = s->const_left ? 0 : 1, r.cval = s->cval;
        if (s->const_left) r.t[0] = s->ctype, r.t[1] = a->dtype, opnd[0] = NULL, opnd[1] = a;
    }
    SL_TRY(plan(s->op, r.t[0], r.t[1], &r, err));
    s->ar = r;
    /* the output's rank: the larger; its layout: the first input's of that rank */
    int nd = 0;
    const sl_tlist *lay = NULL;
    for (int j = 0; j < 2; j++)
        if (opnd[j] && (!lay || opnd[j]->ndim > nd)) nd = opnd[j]->ndim, lay = opnd[j];
    if (io->batch > s->cap) {
        sl__math_desc *d = realloc(s->desc, (size_t)io->batch * sizeof *d);
        if (!d) return sl_err_set(err, SL_ENOMEM, "arithmetic: out of memory");
        s->desc = d, s->cap = io->batch;
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, r.out, nd, io->device, err));
    int64_t *shapes = sl__malloc(
        (size_t)(io->batch ? io->batch : 1) * (size_t)(nd ? nd : 1) * sizeof(int64_t), err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        sl__math_desc *d = &s->desc[i];
        memset(d, 0, sizeof *d);
        d->ndim = nd;
        for (int k = 0; k < nd; k++) d->shape[k] = 1;
        for (int j = 0; j < 2 && st == SL_OK; j++) {
            if (!opnd[j]) continue;
            const int64_t *sh = sl_tlist_shape(opnd[j], i);
            int lead = nd - opnd[j]->ndim;
            for (int k = 0; k < opnd[j]->ndim; k++) {
                int64_t x = sh[k], *o = &d->shape[lead + k];
                if (x != 1 && *o != 1 && x != *o)
                    st = sl__op_fail(err, SL_EINVAL, io, i, "arithmetic",
                                     "'%s': operand shapes do not broadcast (extent %lld against "
                                     "%lld at dimension %d)",
                                     symbol[s->op], (long long)x, (long long)*o, lead + k);
                else if (x != 1)
                    *o = x;
            }
        }
        for (int j = 0; j < 2 && st == SL_OK; j++) {
            if (!opnd[j]) continue;
            const int64_t *sh = sl_tlist_shape(opnd[j], i);
            int lead = nd - opnd[j]->ndim;
            int64_t stride = 1;
            for (int k = opnd[j]->ndim - 1; k >= 0; k--) {
                d->stride[j][lead + k] = sh[k] == 1 ? 0 : stride;
                stride *= sh[k];
            }
            d->in[j] = opnd[j]->data[i];
        }
        d->n = 1;
        for (int k = 0; k < nd; k++) d->n *= d->shape[k];
        memcpy(shapes + (size_t)i * (size_t)nd, d->shape, (size_t)nd * sizeof(int64_t));
        sl__math_desc_coalesce(d, 2);
    }
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    if (st != SL_OK) return st;
    memcpy(out->layout, lay->layout, sizeof out->layout);
    for (int i = 0; i < io->batch; i++) s->desc[i].out = out->data[i];
    return SL_OK;
}

/* The CPU run goes a row (the output's last dim) at a time, in chunks of CHUNK elements: the
 * operands' offsets are found once per row, not per element, and each step below is a loop over
 * the chunk for one fixed type or op. The steps call arithmetic.h's rules for one element with
 * the type or op a constant (the compiler drops their switch), so the bits are those of
 * sl__arith_elem, which the CUDA run uses. */
#define CHUNK 256

/* the cases the loops are specialised for; other types and ops take the generic loop (one a
 * line, and left alone by clang-format, which reflows such lists differently on every pass) */
// clang-format off
#define AR_ALL_TYPES(X)                                                                            \
    X(SL_DTYPE_U8)                                                                                 \
    X(SL_DTYPE_BOOL)                                                                               \
    X(SL_DTYPE_I8)                                                                                 \
    X(SL_DTYPE_U16)                                                                                \
    X(SL_DTYPE_I16)                                                                                \
    X(SL_DTYPE_I32)                                                                                \
    X(SL_DTYPE_U32)                                                                                \
    X(SL_DTYPE_I64)                                                                                \
    X(SL_DTYPE_U64)                                                                                \
    X(SL_DTYPE_F32)                                                                                \
    X(SL_DTYPE_F64)
#define AR_FAST_OPS(X)                                                                             \
    X(SL__AR_ADD)                                                                                  \
    X(SL__AR_SUB)                                                                                  \
    X(SL__AR_MUL)                                                                                  \
    X(SL__AR_FDIV)                                                                                 \
    X(SL__AR_EQ)                                                                                   \
    X(SL__AR_NE)                                                                                   \
    X(SL__AR_LT)                                                                                   \
    X(SL__AR_LE)                                                                                   \
    X(SL__AR_GT)                                                                                   \
    X(SL__AR_GE)                                                                                   \
    X(SL__AR_AND)                                                                                  \
    X(SL__AR_OR)                                                                                   \
    X(SL__AR_XOR)                                                                                  \
    X(SL__AR_MINUS)
// clang-format on

/* m values of type t from element offset off, step st, as doubles */
static void load_values(sl_dtype t, const void *p, int64_t off, int64_t st, int m, double *v) {
    switch (t) { /* a contiguous run (st 1, the common case) in a loop of its own */
#define LOAD(T)                                                                                    \
    case T:                                                                                        \
        if (st == 1)                                                                               \
            for (int k = 0; k < m; k++) v[k] = sl__dtype_conv_load(p, T, off + k);                 \
        else                                                                                       \
            for (int k = 0; k < m; k++) v[k] = sl__dtype_conv_load(p, T, off + k * st);            \
        break;
        AR_ALL_TYPES(LOAD)
#undef LOAD
    default:
        for (int k = 0; k < m; k++) v[k] = sl__dtype_conv_load(p, t, off + k * st);
    }
}

/* m values of operand j from element offset off, step st (in elements), as the computation
 * type's values: doubles (a floating computation) or integer bits */
static void load_float(const sl__arith *a, int j, const void *p, int64_t off, int64_t st, int m,
                       double *v) {
    if (a->konst == j) { /* the constant, rounded below as any value of its type */
        for (int k = 0; k < m; k++) v[k] = a->cval;
    } else {
        load_values(a->t[j], p, off, st, m, v);
    }
    /* rounded to the computation type (sl__arith_round's rule, a loop per type), where that can
     * change the value: float32 holds every value of the types up to 16 bits and its own */
    sl_dtype t = a->t[j];
    bool exact32 = t == SL_DTYPE_U8 || t == SL_DTYPE_I8 || t == SL_DTYPE_U16 || t == SL_DTYPE_I16 ||
                   t == SL_DTYPE_BOOL || t == SL_DTYPE_F16 || t == SL_DTYPE_BF16 ||
                   t == SL_DTYPE_F32;
    if (a->ct == SL_DTYPE_F32 && !exact32)
        for (int k = 0; k < m; k++) v[k] = (double)(float)v[k];
    else if (a->ct == SL_DTYPE_F16)
        for (int k = 0; k < m; k++) v[k] = sl__f16_to_f32(sl__f32_to_f16((float)v[k]));
    else if (a->ct == SL_DTYPE_BF16)
        for (int k = 0; k < m; k++) v[k] = sl__bf16_to_f32(sl__f32_to_bf16((float)v[k]));
}

static void load_int(const sl__arith *a, int j, const void *p, int64_t off, int64_t st, int m,
                     uint64_t *v) {
    if (a->konst == j) {
        uint64_t c = sl__arith_int(a, j, p, 0);
        for (int k = 0; k < m; k++) v[k] = c;
        return;
    }
    /* the values' own bits (sign-extended), then cut to the computation type in a second loop:
     * sl__math_int_as's two steps, the type of each loop fixed */
    switch (a->t[j]) {
#define LOAD(T)                                                                                    \
    case T:                                                                                        \
        if (st == 1)                                                                               \
            for (int k = 0; k < m; k++) v[k] = sl__math_int_as(p, T, off + k, SL_DTYPE_U64);       \
        else                                                                                       \
            for (int k = 0; k < m; k++) v[k] = sl__math_int_as(p, T, off + k * st, SL_DTYPE_U64);  \
        break;
        AR_ALL_TYPES(LOAD)
#undef LOAD
    default:
        for (int k = 0; k < m; k++) v[k] = sl__math_int_as(p, a->t[j], off + k * st, SL_DTYPE_U64);
    }
    int b = sl__math_bits(a->ct);
    if (a->ct == SL_DTYPE_BOOL) {
        for (int k = 0; k < m; k++) v[k] = v[k] != 0;
    } else if (b < 64) {
        uint64_t mask = ((uint64_t)1 << b) - 1;
        if (sl__math_is_signed(a->ct))
            for (int k = 0; k < m; k++) {
                uint64_t x = v[k] & mask;
                v[k] = (x >> (b - 1)) ? x | ~mask : x;
            }
        else
            for (int k = 0; k < m; k++) v[k] &= mask;
    }
}

static void op_float(int op, const double *x, const double *y, int m, double *r) {
    switch (op) {
#define OP(O)                                                                                      \
    case O:                                                                                        \
        for (int k = 0; k < m; k++) r[k] = sl__arith_float_op(O, x[k], y[k]);                      \
        break;
        AR_FAST_OPS(OP)
#undef OP
    default:
        for (int k = 0; k < m; k++) r[k] = sl__arith_float_op(op, x[k], y[k]);
    }
}

static void op_int(int op, sl_dtype ct, const uint64_t *x, const uint64_t *y, int m, uint64_t *r) {
    switch (op) {
#define OP(O)                                                                                      \
    case O:                                                                                        \
        for (int k = 0; k < m; k++) r[k] = sl__arith_int_op(O, x[k], y[k], ct);                    \
        break;
        AR_FAST_OPS(OP)
#undef OP
    default:
        for (int k = 0; k < m; k++) r[k] = sl__arith_int_op(op, x[k], y[k], ct);
    }
}

static void store_float(void *out, sl_dtype t, int64_t e, int m, const double *r) {
    switch (t) {
#define STORE(T)                                                                                   \
    case T:                                                                                        \
        for (int k = 0; k < m; k++) sl__dtype_conv_store(out, T, e + k, r[k]);                     \
        break;
        AR_ALL_TYPES(STORE)
#undef STORE
    default:
        for (int k = 0; k < m; k++) sl__dtype_conv_store(out, t, e + k, r[k]);
    }
}

static void store_int(void *out, sl_dtype t, int64_t e, int m, const uint64_t *r) {
    switch (t) {
#define STORE(T)                                                                                   \
    case T:                                                                                        \
        for (int k = 0; k < m; k++) sl__dtype_conv_store_bits(out, T, e + k, r[k]);                \
        break;
        AR_ALL_TYPES(STORE)
#undef STORE
    default:
        for (int k = 0; k < m; k++) sl__dtype_conv_store_bits(out, t, e + k, r[k]);
    }
}

/* uint8 arithmetic (computation type uint8: uint8 and bool operands) in bytes, for the ops whose
 * 64-bit result cut to 8 bits is the byte arithmetic's (+ - * & | ^, unary - and ~) and the
 * comparisons: the rule's values, without widening each element to 64 bits. */
static bool u8_op(int op) {
    switch (op) {
    case SL__AR_ADD:
    case SL__AR_SUB:
    case SL__AR_MUL:
    case SL__AR_AND:
    case SL__AR_OR:
    case SL__AR_XOR:
    case SL__AR_EQ:
    case SL__AR_NE:
    case SL__AR_LT:
    case SL__AR_LE:
    case SL__AR_GT:
    case SL__AR_GE:
    case SL__AR_MINUS:
    case SL__AR_INV:
        return true;
    default:
        return false;
    }
}

static bool u8_path(const sl__arith *a) {
    bool unary = a->op >= SL__AR_MINUS;
    for (int j = 0; j < (unary ? 1 : 2); j++)
        if (a->konst != j && a->t[j] != SL_DTYPE_U8 && a->t[j] != SL_DTYPE_BOOL) return false;
    return a->ct == SL_DTYPE_U8 && (a->out == SL_DTYPE_U8 || a->out == SL_DTYPE_BOOL) &&
           u8_op(a->op);
}

/* m bytes of operand j (a bool's as 0 or 1, the constant's cut to 8 bits) */
static void load_u8(const sl__arith *a, int j, const uint8_t *p, int64_t off, int64_t st, int m,
                    uint8_t *v) {
    if (a->konst == j) {
        memset(v, (int)(uint8_t)sl__arith_int(a, j, p, 0), (size_t)m);
    } else if (st == 0) { /* broadcast: one value (a bool's as 0 or 1) */
        memset(v, a->t[j] == SL_DTYPE_BOOL ? p[off] != 0 : p[off], (size_t)m);
    } else if (a->t[j] == SL_DTYPE_BOOL) {
        for (int k = 0; k < m; k++) v[k] = p[off + k * st] != 0;
    } else if (st == 1) {
        memcpy(v, p + off, (size_t)m);
    } else {
        for (int k = 0; k < m; k++) v[k] = p[off + k * st];
    }
}

static void op_u8(int op, const uint8_t *x, const uint8_t *y, int m, uint8_t *r) {
#define OP(O, E)                                                                                   \
    case O:                                                                                        \
        for (int k = 0; k < m; k++) r[k] = (uint8_t)(E);                                           \
        return;
    switch (op) {
        OP(SL__AR_ADD, x[k] + y[k])
        OP(SL__AR_SUB, x[k] - y[k])
        OP(SL__AR_MUL, x[k] * y[k])
        OP(SL__AR_AND, x[k] & y[k])
        OP(SL__AR_OR, x[k] | y[k])
        OP(SL__AR_XOR, x[k] ^ y[k])
        OP(SL__AR_EQ, x[k] == y[k])
        OP(SL__AR_NE, x[k] != y[k])
        OP(SL__AR_LT, x[k] < y[k])
        OP(SL__AR_LE, x[k] <= y[k])
        OP(SL__AR_GT, x[k] > y[k])
        OP(SL__AR_GE, x[k] >= y[k])
        OP(SL__AR_MINUS, 0 - x[k])
        OP(SL__AR_INV, ~x[k])
    default:
        break;
    }
#undef OP
}

static sl_status ar_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)io, (void)worker, (void)err;
    ar_state *s = state;
    const sl__arith *a = &s->ar;
    const sl__math_desc *d = &s->desc[i];
    int nd = d->ndim;
    int64_t row = nd > 0 ? d->shape[nd - 1] : 1;
    int64_t st0 = nd > 0 ? d->stride[0][nd - 1] : 0, st1 = nd > 0 ? d->stride[1][nd - 1] : 0;
    bool unary = a->op >= SL__AR_MINUS, flt = sl__math_is_float(a->ct);
    bool bytes = !flt && u8_path(a);
    union {
        double f[CHUNK];
        uint64_t u[CHUNK];
        uint8_t b[CHUNK];
    } x, y, r;
    memset(&y, 0, sizeof y); /* a unary op's second operand */
    if (row < 1) return SL_OK;
    for (int64_t e0 = 0; e0 < d->n; e0 += row) {
        int64_t off[2] = {0, 0}, rem = e0 / row; /* the row's first element in each operand */
        for (int k = nd - 2; k >= 0; k--) {
            int64_t ix = rem % d->shape[k];
            rem /= d->shape[k];
            off[0] += ix * d->stride[0][k];
            off[1] += ix * d->stride[1][k];
        }
        for (int64_t c = 0; c < row; c += CHUNK) {
            int m = (int)(row - c < CHUNK ? row - c : CHUNK);
            if (bytes) { /* (a bool result is 0 or 1 already: the same byte) */
                load_u8(a, 0, d->in[0], off[0] + c * st0, st0, m, x.b);
                if (!unary) load_u8(a, 1, d->in[1], off[1] + c * st1, st1, m, y.b);
                op_u8(a->op, x.b, y.b, m, (uint8_t *)d->out + e0 + c);
            } else if (flt) {
                load_float(a, 0, d->in[0], off[0] + c * st0, st0, m, x.f);
                if (!unary) load_float(a, 1, d->in[1], off[1] + c * st1, st1, m, y.f);
                op_float(a->op, x.f, y.f, m, r.f);
                store_float(d->out, a->out, e0 + c, m, r.f);
            } else {
                load_int(a, 0, d->in[0], off[0] + c * st0, st0, m, x.u);
                if (!unary) load_int(a, 1, d->in[1], off[1] + c * st1, st1, m, y.u);
                op_int(a->op, a->ct, x.u, y.u, m, r.u);
                store_int(d->out, a->out, e0 + c, m, r.u);
            }
        }
    }
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status ar_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    ar_state *s = state;
    size_t bytes = (size_t)io->batch * sizeof *s->desc;
    sl__math_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < io->batch; i++) {
        d[i] = s->desc[i];
        if (d[i].n > most) most = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_arithmetic(dd, io->batch, most, &s->ar, io->stream, err);
}
#endif

const sl__op_def sl__arithmetic_op = {
    .name = "arithmetic",
    .doc = "The op behind DALI's expressions on op outputs (+ - * / // % ** comparisons & | ^ << "
           ">> and unary - + ~): element-wise, broadcast numpy-style, DALI's type promotions.",
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
