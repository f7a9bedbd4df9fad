/* SPDX-License-Identifier: Apache-2.0 */
/* arithmetic's rule for one element (arithmetic.c), shared by its CPU run and its CUDA run
 * (ops/arithmetic.cu) so that both compute the same bits. Integer results are computed in 64 bits
 * and wrap to the result's width; floating results are computed in double and rounded once to the
 * result type (for + - * / on float32 operands that is exactly float32 arithmetic). */
#ifndef SLUICE_OPS_ARITHMETIC_H
#define SLUICE_OPS_ARITHMETIC_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <stdbool.h>
#include <stdint.h>

enum { SL__AR_ADD, SL__AR_SUB, SL__AR_MUL, SL__AR_FDIV, SL__AR_MINUS, SL__AR_DIV };

/* One batch's operation: the operands' types (a constant's: int32 or float32) and the result's. */
typedef struct sl__arith {
    int op;
    sl_dtype t[2];
    sl_dtype out;
    bool float_out; /* out is a floating type */
    int konst;      /* the operand that is the constant (0 or 1), or -1 */
    double cval;    /* the constant, a value of its type */
} sl__arith;

/* integer types read exactly (sl__dtype_conv_load goes through double) */
static inline SL__HD int64_t sl__arith_load_int(const void *p, sl_dtype t, int64_t k) {
    switch (t) {
    case SL_DTYPE_U8:
    case SL_DTYPE_BOOL:
        return ((const uint8_t *)p)[k];
    case SL_DTYPE_I8:
        return ((const int8_t *)p)[k];
    case SL_DTYPE_U16:
        return ((const uint16_t *)p)[k];
    case SL_DTYPE_I16:
        return ((const int16_t *)p)[k];
    case SL_DTYPE_I32:
        return ((const int32_t *)p)[k];
    case SL_DTYPE_U32:
        return ((const uint32_t *)p)[k];
    default:
        return ((const int64_t *)p)[k];
    }
}

/* the low bits of v, as the result type holds them (two's complement wrap) */
static inline SL__HD void sl__arith_store_int(void *p, sl_dtype t, int64_t k, uint64_t v) {
    switch (t) {
    case SL_DTYPE_U8:
        ((uint8_t *)p)[k] = (uint8_t)v;
        break;
    case SL_DTYPE_I8:
        ((int8_t *)p)[k] = (int8_t)(uint8_t)v;
        break;
    case SL_DTYPE_U16:
        ((uint16_t *)p)[k] = (uint16_t)v;
        break;
    case SL_DTYPE_I16:
        ((int16_t *)p)[k] = (int16_t)(uint16_t)v;
        break;
    case SL_DTYPE_I32:
        ((int32_t *)p)[k] = (int32_t)(uint32_t)v;
        break;
    case SL_DTYPE_U32:
        ((uint32_t *)p)[k] = (uint32_t)v;
        break;
    default:
        ((int64_t *)p)[k] = (int64_t)v;
        break;
    }
}

/* Element k of the result, from element k0 of operand 0 (at p0) and k1 of operand 1 (at p1; the
 * constant's operand and unary minus's second are not read). */
static inline SL__HD void sl__arith_elem(const sl__arith *a, const void *p0, int64_t k0,
                                         const void *p1, int64_t k1, void *out, int64_t k) {
    if (a->op == SL__AR_MINUS) { /* in the input's type; integers wrap (-(-128) is -128 in int8) */
        if (a->float_out)
            sl__dtype_conv_store(out, a->out, k, -sl__dtype_conv_load(p0, a->t[0], k0));
        else
            sl__arith_store_int(out, a->out, k, 0 - (uint64_t)sl__arith_load_int(p0, a->t[0], k0));
        return;
    }
    if (a->float_out) {
        double x = a->konst == 0 ? a->cval : sl__dtype_conv_load(p0, a->t[0], k0);
        double y = a->konst == 1 ? a->cval : sl__dtype_conv_load(p1, a->t[1], k1);
        double z = a->op == SL__AR_ADD   ? x + y
                   : a->op == SL__AR_SUB ? x - y
                   : a->op == SL__AR_MUL ? x * y
                                         : x / y; /* fdiv, and div on floating operands */
        sl__dtype_conv_store(out, a->out, k, z);
        return;
    }
    uint64_t x = (uint64_t)(a->konst == 0 ? (int64_t)a->cval : sl__arith_load_int(p0, a->t[0], k0));
    uint64_t y = (uint64_t)(a->konst == 1 ? (int64_t)a->cval : sl__arith_load_int(p1, a->t[1], k1));
    if (a->op == SL__AR_DIV) { /* C's integer division (toward zero); by zero gives 0 */
        bool sgn = a->out == SL_DTYPE_I8 || a->out == SL_DTYPE_I16 || a->out == SL_DTYPE_I32 ||
                   a->out == SL_DTYPE_I64;
        uint64_t q = 0;
        if (y != 0 && sgn && !((int64_t)y == -1 && (int64_t)x == INT64_MIN))
            q = (uint64_t)((int64_t)x / (int64_t)y);
        else if (y != 0 && sgn)
            q = x; /* INT64_MIN / -1 wraps, as the other operators do */
        else if (y != 0)
            q = x / y;
        sl__arith_store_int(out, a->out, k, q);
        return;
    }
    sl__arith_store_int(out, a->out, k,
                        a->op == SL__AR_ADD   ? x + y
                        : a->op == SL__AR_SUB ? x - y
                                              : x * y);
}

/* ---- the CUDA run (arithmetic.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* arithmetic: n result elements per sample; operand j's element k is p[j][k * step[j]] (step 0:
 * a one-element sample, broadcast), each computed by ops/arithmetic.h's rule, as on the CPU */
typedef struct sl__cuda_arith_desc {
    const void *p[2];
    void *out;
    int64_t n, step[2];
} sl__cuda_arith_desc;
struct sl__arith;
sl_status sl__cuda_arithmetic(const sl__cuda_arith_desc *d, int n, int64_t max_elems,
                              const struct sl__arith *a, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
