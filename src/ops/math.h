/* SPDX-License-Identifier: Apache-2.0 */
/* math.* (math.c): DALI's mathematical functions, element by element, shared by the CPU run and
 * the CUDA run (math.cu). Operands are broadcast numpy-style (shapes padded with outer 1s, extents
 * of 1 repeated). A result of an integer type is computed in that type (each operand converted
 * to it first, as C++ does; products wrap); a floating result is computed in double and rounded
 * once to its type. */
#ifndef SLUICE_OPS_MATH_H
#define SLUICE_OPS_MATH_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include "operator/dtype_conv.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    /* one operand, floating result */
    SL__M_SQRT,
    SL__M_RSQRT,
    SL__M_CBRT,
    SL__M_EXP,
    SL__M_LOG,
    SL__M_LOG2,
    SL__M_LOG10,
    SL__M_SIN,
    SL__M_COS,
    SL__M_TAN,
    SL__M_ASIN,
    SL__M_ACOS,
    SL__M_ATAN,
    SL__M_SINH,
    SL__M_COSH,
    SL__M_TANH,
    SL__M_ASINH,
    SL__M_ACOSH,
    SL__M_ATANH,
    SL__M_FABS,
    SL__M_FLOOR,
    SL__M_CEIL,
    /* one operand, its own type */
    SL__M_ABS,
    /* two operands */
    SL__M_POW,
    SL__M_FPOW,
    SL__M_ATAN2,
    SL__M_MIN,
    SL__M_MAX,
    /* three */
    SL__M_CLAMP,
    SL__M_COUNT
};

#define SL__MATH_MAX_IN 3

typedef struct sl__math_desc {
    const void *in[SL__MATH_MAX_IN];
    void *out;
    int ndim;
    int64_t shape[SL_MAX_DIMS];                   /* the output's */
    int64_t stride[SL__MATH_MAX_IN][SL_MAX_DIMS]; /* in elements; 0 where broadcast */
    int64_t n;
} sl__math_desc;

/* Merges each dimension of d into the one inside it wherever every one of the nin operands steps
 * through the two as through one (the output, dense, always does), and drops extents of 1: an
 * image's HWC with a scalar becomes one run of H*W*C elements, not H*W rows of C. The element
 * order and n stay; only the walk gets longer rows. Called once the output's shape is taken. */
static inline void sl__math_desc_coalesce(sl__math_desc *d, int nin) {
    int nd = 0;
    for (int k = 0; k < d->ndim; k++) {
        if (d->shape[k] == 1) continue;
        bool merge = nd > 0;
        for (int j = 0; j < nin && merge; j++)
            merge = d->stride[j][nd - 1] == d->stride[j][k] * d->shape[k];
        if (merge) {
            d->shape[nd - 1] *= d->shape[k];
        } else {
            d->shape[nd] = d->shape[k];
            nd++;
        }
        for (int j = 0; j < nin; j++) d->stride[j][nd - 1] = d->stride[j][k];
    }
    for (int k = nd; k < d->ndim; k++) {
        d->shape[k] = 1;
        for (int j = 0; j < nin; j++) d->stride[j][k] = 0;
    }
    d->ndim = nd;
}

typedef struct sl__math_types {
    int op, nin;
    sl_dtype in[SL__MATH_MAX_IN];
    sl_dtype out;
} sl__math_types;

static inline SL__HD bool sl__math_is_float(sl_dtype t) {
    return t == SL_DTYPE_F16 || t == SL_DTYPE_BF16 || t == SL_DTYPE_F32 || t == SL_DTYPE_F64;
}
static inline SL__HD bool sl__math_is_signed(sl_dtype t) {
    return t == SL_DTYPE_I8 || t == SL_DTYPE_I16 || t == SL_DTYPE_I32 || t == SL_DTYPE_I64;
}
static inline SL__HD int sl__math_bits(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_BOOL:
        return 1;
    case SL_DTYPE_U8:
    case SL_DTYPE_I8:
        return 8;
    case SL_DTYPE_U16:
    case SL_DTYPE_I16:
    case SL_DTYPE_F16:
    case SL_DTYPE_BF16:
        return 16;
    case SL_DTYPE_U32:
    case SL_DTYPE_I32:
    case SL_DTYPE_F32:
        return 32;
    default:
        return 64;
    }
}

/* Element k of an integer (or bool) operand, converted to integer type t: its bits cut to t's
 * width, then sign- or zero-extended as t is signed or not. */
static inline SL__HD uint64_t sl__math_int_as(const void *p, sl_dtype src, int64_t k, sl_dtype t) {
    uint64_t v;
    switch (src) {
    case SL_DTYPE_U8:
        v = ((const uint8_t *)p)[k];
        break;
    case SL_DTYPE_BOOL:
        v = ((const uint8_t *)p)[k] != 0;
        break;
    case SL_DTYPE_I8:
        v = (uint64_t)(int64_t)((const int8_t *)p)[k];
        break;
    case SL_DTYPE_U16:
        v = ((const uint16_t *)p)[k];
        break;
    case SL_DTYPE_I16:
        v = (uint64_t)(int64_t)((const int16_t *)p)[k];
        break;
    case SL_DTYPE_I32:
        v = (uint64_t)(int64_t)((const int32_t *)p)[k];
        break;
    case SL_DTYPE_U32:
        v = ((const uint32_t *)p)[k];
        break;
    default:
        v = ((const uint64_t *)p)[k];
        break;
    }
    int b = sl__math_bits(t);
    if (t == SL_DTYPE_BOOL) return v != 0;
    if (b < 64) {
        uint64_t mask = ((uint64_t)1 << b) - 1;
        v &= mask;
        if (sl__math_is_signed(t) && (v >> (b - 1))) v |= ~mask;
    }
    return v;
}

static inline SL__HD bool sl__math_int_less(uint64_t a, uint64_t b, sl_dtype t) {
    return sl__math_is_signed(t) ? (int64_t)a < (int64_t)b : a < b;
}

/* base ** e in integer type t (wrapping); a negative exponent gives 0, 1 or -1 as 1 / base^-e
 * truncated does */
static inline SL__HD uint64_t sl__math_ipow(uint64_t base, uint64_t e, sl_dtype t) {
    if (sl__math_is_signed(t) && (int64_t)e < 0) {
        int64_t bs = (int64_t)base;
        if (bs == 1) return 1;
        if (bs == -1) return (e & 1) ? (uint64_t)-1 : 1;
        return 0;
    }
    uint64_t r = 1;
    while (e) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
    }
    return r;
}

static inline SL__HD double sl__math_float1(int op, double x) {
    switch (op) {
    case SL__M_SQRT:
        return sqrt(x);
    case SL__M_RSQRT:
        return 1.0 / sqrt(x);
    case SL__M_CBRT:
        return cbrt(x);
    case SL__M_EXP:
        return exp(x);
    case SL__M_LOG:
        return log(x);
    case SL__M_LOG2:
        return log2(x);
    case SL__M_LOG10:
        return log10(x);
    case SL__M_SIN:
        return sin(x);
    case SL__M_COS:
        return cos(x);
    case SL__M_TAN:
        return tan(x);
    case SL__M_ASIN:
        return asin(x);
    case SL__M_ACOS:
        return acos(x);
    case SL__M_ATAN:
        return atan(x);
    case SL__M_SINH:
        return sinh(x);
    case SL__M_COSH:
        return cosh(x);
    case SL__M_TANH:
        return tanh(x);
    case SL__M_ASINH:
        return asinh(x);
    case SL__M_ACOSH:
        return acosh(x);
    case SL__M_ATANH:
        return atanh(x);
    case SL__M_FABS:
    case SL__M_ABS:
        return fabs(x);
    case SL__M_FLOOR:
        return floor(x);
    default:
        return ceil(x);
    }
}

/* Output element e of d. */
static inline SL__HD void sl__math_elem(const sl__math_desc *d, const sl__math_types *t,
                                        int64_t e) {
    int64_t off[SL__MATH_MAX_IN] = {0, 0, 0};
    int64_t rem = e;
    for (int k = d->ndim - 1; k >= 0; k--) {
        int64_t i = rem % d->shape[k];
        rem /= d->shape[k];
        for (int j = 0; j < t->nin; j++) off[j] += i * d->stride[j][k];
    }
    if (!sl__math_is_float(t->out)) {
        uint64_t v[SL__MATH_MAX_IN];
        for (int j = 0; j < t->nin; j++) v[j] = sl__math_int_as(d->in[j], t->in[j], off[j], t->out);
        uint64_t r;
        switch (t->op) {
        case SL__M_ABS:
            r = sl__math_is_signed(t->out) && (int64_t)v[0] < 0 ? 0 - v[0] : v[0];
            break;
        case SL__M_POW:
            r = sl__math_ipow(v[0], v[1], t->out);
            break;
        case SL__M_MIN:
            r = sl__math_int_less(v[1], v[0], t->out) ? v[1] : v[0];
            break;
        case SL__M_MAX:
            r = sl__math_int_less(v[0], v[1], t->out) ? v[1] : v[0];
            break;
        default: /* clamp: min(max(v, lo), hi) */
            r = sl__math_int_less(v[0], v[1], t->out) ? v[1] : v[0];
            r = sl__math_int_less(v[2], r, t->out) ? v[2] : r;
            break;
        }
        sl__dtype_conv_store_bits(d->out, t->out, e, r);
        return;
    }
    double x[SL__MATH_MAX_IN];
    for (int j = 0; j < t->nin; j++) x[j] = sl__dtype_conv_load(d->in[j], t->in[j], off[j]);
    double r;
    switch (t->op) {
    case SL__M_POW:
    case SL__M_FPOW:
        r = pow(x[0], x[1]);
        break;
    case SL__M_ATAN2:
        r = atan2(x[0], x[1]);
        break;
    case SL__M_MIN:
        r = x[1] < x[0] ? x[1] : x[0];
        break;
    case SL__M_MAX:
        r = x[0] < x[1] ? x[1] : x[0];
        break;
    case SL__M_CLAMP:
        r = x[0] < x[1] ? x[1] : x[0];
        r = x[2] < r ? x[2] : r;
        break;
    default:
        r = sl__math_float1(t->op, x[0]);
        break;
    }
    sl__dtype_conv_store(d->out, t->out, e, r);
}

sl_status sl__cuda_math(const sl__math_desc *d, int n, int64_t max_elems, const sl__math_types *t,
                        void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
