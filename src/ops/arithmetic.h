/* SPDX-License-Identifier: Apache-2.0 */
/* arithmetic's rule for one element (arithmetic.c), shared by its CPU run and its CUDA run
 * (ops/arithmetic.cu) so that both compute the same bits. Both operands are first converted to
 * the computation type (the promoted type of DALI's table; float32 for `/` on integers): an
 * integer type by its bits (cut and sign- or zero-extended, as C++ converts), a floating one by
 * rounding. Integer results are then computed in 64 bits and wrap to the result's width;
 * floating ones in double and rounded once to the result type (for + - * / on float32 operands
 * that is exactly float32 arithmetic). Comparisons give bool. Operands broadcast numpy-style
 * (ops/math.h's descriptor: shapes padded with outer 1s, extents of 1 repeated). */
#ifndef SLUICE_OPS_ARITHMETIC_H
#define SLUICE_OPS_ARITHMETIC_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"
#include "ops/math.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

enum {
    SL__AR_ADD,
    SL__AR_SUB,
    SL__AR_MUL,
    SL__AR_FDIV,  /* / : floating division */
    SL__AR_DIV,   /* // : C's division (truncates), in the promoted type */
    SL__AR_MOD,   /* % : C's remainder (fmod for floats) */
    SL__AR_POW,   /* ** */
    SL__AR_EQ,    /* == (bool result, as the rest of the comparisons) */
    SL__AR_NE,    /* != */
    SL__AR_LT,    /* < */
    SL__AR_LE,    /* <= */
    SL__AR_GT,    /* > */
    SL__AR_GE,    /* >= */
    SL__AR_AND,   /* & (integers and bool) */
    SL__AR_OR,    /* | */
    SL__AR_XOR,   /* ^ */
    SL__AR_SHL,   /* << */
    SL__AR_SHR,   /* >> */
    SL__AR_MINUS, /* unary - (the input's type) */
    SL__AR_PLUS,  /* unary + */
    SL__AR_INV,   /* unary ~ (logical not on bool) */
    SL__AR_COUNT
};

/* One batch's operation: the operands' types (a constant's: int32, float32 or bool), the type
 * both are converted to, and the result's. */
typedef struct sl__arith {
    int op;
    sl_dtype t[2];
    sl_dtype ct;  /* computation type */
    sl_dtype out; /* result type: ct, or bool for a comparison */
    int konst;    /* the operand that is the constant (0 or 1), or -1 */
    double cval;  /* the constant, a value of its type */
} sl__arith;

/* a floating value rounded to floating type t */
static inline SL__HD double sl__arith_round(double v, sl_dtype t) {
    if (t == SL_DTYPE_F64) return v;
    if (t == SL_DTYPE_F32) return (double)(float)v;
    uint16_t h = 0; /* float16 and bfloat16: through their stores */
    sl__dtype_conv_store(&h, t, 0, v);
    return sl__dtype_conv_load(&h, t, 0);
}

/* operand j's value as an integer of type ct, the constant's included */
static inline SL__HD uint64_t sl__arith_int(const sl__arith *a, int j, const void *p, int64_t k) {
    if (a->konst == j) {
        int64_t c = (int64_t)a->cval;
        return sl__math_int_as(&c, SL_DTYPE_I64, 0, a->ct);
    }
    return sl__math_int_as(p, a->t[j], k, a->ct);
}

static inline SL__HD double sl__arith_float(const sl__arith *a, int j, const void *p, int64_t k) {
    double v = a->konst == j ? a->cval : sl__dtype_conv_load(p, a->t[j], k);
    return sl__arith_round(v, a->ct);
}

/* x op y in integer type ct (its bits in a uint64, sign-extended for a signed type) */
static inline SL__HD uint64_t sl__arith_int_op(int op, uint64_t x, uint64_t y, sl_dtype ct) {
    bool sg = sl__math_is_signed(ct);
    int bits = sl__math_bits(ct);
    switch (op) {
    case SL__AR_ADD:
        return x + y;
    case SL__AR_SUB:
        return x - y;
    case SL__AR_MUL:
        return x * y;
    case SL__AR_DIV: /* by 0: 0 (numpy's result; C's is undefined); MIN // -1 wraps */
        if (y == 0) return 0;
        if (sg && (int64_t)y == -1) return 0 - x;
        return sg ? (uint64_t)((int64_t)x / (int64_t)y) : x / y;
    case SL__AR_MOD:
        if (y == 0 || (sg && (int64_t)y == -1)) return 0;
        return sg ? (uint64_t)((int64_t)x % (int64_t)y) : x % y;
    case SL__AR_POW:
        return sl__math_ipow(x, y, ct);
    case SL__AR_EQ:
        return x == y;
    case SL__AR_NE:
        return x != y;
    case SL__AR_LT:
        return sl__math_int_less(x, y, ct);
    case SL__AR_LE:
        return !sl__math_int_less(y, x, ct);
    case SL__AR_GT:
        return sl__math_int_less(y, x, ct);
    case SL__AR_GE:
        return !sl__math_int_less(x, y, ct);
    case SL__AR_AND:
        return x & y;
    case SL__AR_OR:
        return x | y;
    case SL__AR_XOR:
        return x ^ y;
    case SL__AR_SHL: /* a count outside [0, bits) shifts every bit out, as numpy's */
        if ((sg && (int64_t)y < 0) || y >= (uint64_t)bits) return 0;
        return x << y;
    case SL__AR_SHR:
        if ((sg && (int64_t)y < 0) || y >= (uint64_t)bits)
            return sg && (int64_t)x < 0 ? ~(uint64_t)0 : 0;
        return sg ? (uint64_t)((int64_t)x >> y) : x >> y;
    case SL__AR_MINUS:
        return 0 - x;
    case SL__AR_INV:
        return ct == SL_DTYPE_BOOL ? !x : ~x;
    default: /* plus */
        return x;
    }
}

static inline SL__HD double sl__arith_float_op(int op, double x, double y) {
    switch (op) {
    case SL__AR_ADD:
        return x + y;
    case SL__AR_SUB:
        return x - y;
    case SL__AR_MUL:
        return x * y;
    case SL__AR_FDIV:
    case SL__AR_DIV: /* on floating operands, // divides as / does (DALI's) */
        return x / y;
    case SL__AR_MOD:
        return fmod(x, y);
    case SL__AR_POW:
        return pow(x, y);
    case SL__AR_EQ:
        return x == y;
    case SL__AR_NE:
        return x != y;
    case SL__AR_LT:
        return x < y;
    case SL__AR_LE:
        return x <= y;
    case SL__AR_GT:
        return x > y;
    case SL__AR_GE:
        return x >= y;
    case SL__AR_MINUS:
        return -x;
    default: /* plus */
        return x;
    }
}

/* Output element e of d: operand j (d->in[j], 0 or 1; a constant's is not read) at its
 * broadcast offset. */
static inline SL__HD void sl__arith_elem(const sl__arith *a, const sl__math_desc *d, int64_t e) {
    int64_t off[2] = {0, 0};
    int64_t rem = e;
    for (int k = d->ndim - 1; k >= 0; k--) {
        int64_t i = rem % d->shape[k];
        rem /= d->shape[k];
        off[0] += i * d->stride[0][k];
        off[1] += i * d->stride[1][k];
    }
    bool unary = a->op >= SL__AR_MINUS;
    if (!sl__math_is_float(a->ct)) {
        uint64_t x = sl__arith_int(a, 0, d->in[0], off[0]);
        uint64_t y = unary ? 0 : sl__arith_int(a, 1, d->in[1], off[1]);
        sl__dtype_conv_store_bits(d->out, a->out, e, sl__arith_int_op(a->op, x, y, a->ct));
        return;
    }
    double x = sl__arith_float(a, 0, d->in[0], off[0]);
    double y = unary ? 0 : sl__arith_float(a, 1, d->in[1], off[1]);
    sl__dtype_conv_store(d->out, a->out, e, sl__arith_float_op(a->op, x, y));
}

/* ---- the CUDA run (arithmetic.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* arithmetic over n samples (d: device descriptors, one per sample), each element computed by
 * the rule above, as on the CPU */
sl_status sl__cuda_arithmetic(const sl__math_desc *d, int n, int64_t max_elems, const sl__arith *a,
                              void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
