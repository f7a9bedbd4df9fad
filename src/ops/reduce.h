/* SPDX-License-Identifier: Apache-2.0 */
/* reductions.* (reduce.c): the reduction of one output element, shared by the CPU run and the CUDA
 * run (reduce.cu). An output element is the kept dimensions' index; the elements it reduces are
 * the reduced dimensions' indices, walked as one flat count r in [0, count). Integer sums are
 * exact (64-bit, wrapping to the output type as C++ arithmetic in that type does); every other
 * reduction accumulates in double and rounds once to the output type; min and max copy the
 * winning element. */
#ifndef SLUICE_OPS_REDUCE_H
#define SLUICE_OPS_REDUCE_H

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
    SL__RED_SUM,
    SL__RED_MEAN,
    SL__RED_MIN,
    SL__RED_MAX,
    SL__RED_MEAN_SQUARE,
    SL__RED_RMS,
    SL__RED_VARIANCE,
    SL__RED_STD_DEV
};

typedef struct sl__reduce_desc {
    const void *in;
    const void *mean; /* variance, std_dev: one value per output element (float32) */
    void *out;
    int nkeep, nred;
    int64_t keep_ext[SL_MAX_DIMS], keep_stride[SL_MAX_DIMS]; /* in elements of the input */
    int64_t red_ext[SL_MAX_DIMS], red_stride[SL_MAX_DIMS];
    int64_t nout;  /* output elements */
    int64_t count; /* elements reduced into each */
} sl__reduce_desc;

/* The input offset of output element o's base (its kept indices). */
static inline SL__HD int64_t sl__reduce_base(const sl__reduce_desc *d, int64_t o) {
    int64_t off = 0;
    for (int k = d->nkeep - 1; k >= 0; k--) {
        off += (o % d->keep_ext[k]) * d->keep_stride[k];
        o /= d->keep_ext[k];
    }
    return off;
}

/* The offset of reduced element r from the base. */
static inline SL__HD int64_t sl__reduce_at(const sl__reduce_desc *d, int64_t r) {
    int64_t off = 0;
    for (int k = d->nred - 1; k >= 0; k--) {
        off += (r % d->red_ext[k]) * d->red_stride[k];
        r /= d->red_ext[k];
    }
    return off;
}

static inline SL__HD bool sl__reduce_signed(sl_dtype t) {
    return t == SL_DTYPE_I8 || t == SL_DTYPE_I16 || t == SL_DTYPE_I32 || t == SL_DTYPE_I64;
}

static inline SL__HD bool sl__reduce_is_int(sl_dtype t) {
    return !(t == SL_DTYPE_F16 || t == SL_DTYPE_BF16 || t == SL_DTYPE_F32 || t == SL_DTYPE_F64);
}

/* Element k as its 64-bit integer bits (signed types sign-extended). */
static inline SL__HD uint64_t sl__reduce_load_bits(const void *p, sl_dtype t, int64_t k) {
    switch (t) {
    case SL_DTYPE_U8:
    case SL_DTYPE_BOOL:
        return ((const uint8_t *)p)[k];
    case SL_DTYPE_I8:
        return (uint64_t)(int64_t)((const int8_t *)p)[k];
    case SL_DTYPE_U16:
        return ((const uint16_t *)p)[k];
    case SL_DTYPE_I16:
        return (uint64_t)(int64_t)((const int16_t *)p)[k];
    case SL_DTYPE_I32:
        return (uint64_t)(int64_t)((const int32_t *)p)[k];
    case SL_DTYPE_U32:
        return ((const uint32_t *)p)[k];
    default:
        return ((const uint64_t *)p)[k];
    }
}

/* x < y for elements of type t (integers exactly) */
static inline SL__HD bool sl__reduce_less(const void *p, sl_dtype t, int64_t x, int64_t y) {
    if (!sl__reduce_is_int(t)) return sl__dtype_conv_load(p, t, x) < sl__dtype_conv_load(p, t, y);
    uint64_t a = sl__reduce_load_bits(p, t, x), b = sl__reduce_load_bits(p, t, y);
    return sl__reduce_signed(t) ? (int64_t)a < (int64_t)b : a < b;
}

/* Partial accumulations, merged in any grouping: a double sum, an integer sum, and for min and
 * max the winning element's offset (-1: none yet). */
typedef struct sl__reduce_acc {
    double s;
    uint64_t u;
    int64_t best;
} sl__reduce_acc;

static inline SL__HD void sl__reduce_acc_init(sl__reduce_acc *a) {
    a->s = 0;
    a->u = 0;
    a->best = -1;
}

/* Adds element at input offset x (mean m for variance) to a. */
static inline SL__HD void sl__reduce_add(sl__reduce_acc *a, int op, const void *in, sl_dtype t,
                                         int64_t x, double m) {
    switch (op) {
    case SL__RED_MIN:
        if (a->best < 0 || sl__reduce_less(in, t, x, a->best)) a->best = x;
        return;
    case SL__RED_MAX:
        if (a->best < 0 || sl__reduce_less(in, t, a->best, x)) a->best = x;
        return;
    case SL__RED_SUM:
        if (sl__reduce_is_int(t)) {
            a->u += sl__reduce_load_bits(in, t, x);
            return;
        }
        a->s = SL__DADD(a->s, sl__dtype_conv_load(in, t, x));
        return;
    case SL__RED_MEAN:
        a->s = SL__DADD(a->s, sl__dtype_conv_load(in, t, x));
        return;
    case SL__RED_MEAN_SQUARE:
    case SL__RED_RMS: {
        double v = sl__dtype_conv_load(in, t, x);
        a->s = SL__DADD(a->s, SL__DMUL(v, v));
        return;
    }
    default: {
        double v = SL__DADD(sl__dtype_conv_load(in, t, x), -m);
        a->s = SL__DADD(a->s, SL__DMUL(v, v));
        return;
    }
    }
}

static inline SL__HD void sl__reduce_merge(sl__reduce_acc *a, const sl__reduce_acc *b, int op,
                                           const void *in, sl_dtype t) {
    if (op == SL__RED_MIN || op == SL__RED_MAX) {
        if (b->best < 0) return;
        if (a->best < 0) {
            a->best = b->best;
            return;
        }
        bool take = op == SL__RED_MIN ? sl__reduce_less(in, t, b->best, a->best)
                                      : sl__reduce_less(in, t, a->best, b->best);
        /* equal values: the earlier element, as a sequential walk keeps it */
        if (take || (!sl__reduce_less(in, t, a->best, b->best) &&
                     !sl__reduce_less(in, t, b->best, a->best) && b->best < a->best))
            a->best = b->best;
        return;
    }
    a->s = SL__DADD(a->s, b->s);
    a->u += b->u;
}

static inline SL__HD int sl__reduce_esize(sl_dtype t) {
    switch (t) {
    case SL_DTYPE_U8:
    case SL_DTYPE_I8:
    case SL_DTYPE_BOOL:
        return 1;
    case SL_DTYPE_U16:
    case SL_DTYPE_I16:
    case SL_DTYPE_F16:
    case SL_DTYPE_BF16:
        return 2;
    case SL_DTYPE_I32:
    case SL_DTYPE_U32:
    case SL_DTYPE_F32:
        return 4;
    default:
        return 8;
    }
}

/* Writes output element o of d from its accumulation. */
static inline SL__HD void sl__reduce_store(const sl__reduce_desc *d, int op, sl_dtype it,
                                           sl_dtype ot, int ddof, int64_t o,
                                           const sl__reduce_acc *a) {
    double n = (double)d->count, v;
    if ((op == SL__RED_VARIANCE || op == SL__RED_STD_DEV) && d->nred == 0) {
        sl__dtype_conv_store(d->out, ot, o, 0.0); /* nothing reduced: no spread (DALI's zeros) */
        return;
    }
    switch (op) {
    case SL__RED_MIN:
    case SL__RED_MAX: {
        int es = sl__reduce_esize(it);
        const unsigned char *src = (const unsigned char *)d->in + a->best * es;
        unsigned char *dst = (unsigned char *)d->out + o * es;
        for (int b = 0; b < es; b++) dst[b] = src[b];
        return;
    }
    case SL__RED_SUM:
        if (sl__reduce_is_int(it)) {
            if (sl__reduce_is_int(ot))
                sl__dtype_conv_store_bits(d->out, ot, o, a->u);
            else
                sl__dtype_conv_store(d->out, ot, o,
                                     sl__reduce_signed(it) ? (double)(int64_t)a->u : (double)a->u);
            return;
        }
        v = a->s;
        break;
    case SL__RED_MEAN:
    case SL__RED_MEAN_SQUARE:
        v = a->s / n;
        break;
    case SL__RED_RMS:
        v = sqrt(a->s / n);
        break;
    case SL__RED_VARIANCE:
        v = a->s / (n - ddof > 0 ? n - ddof : 0.0);
        break;
    default:
        v = sqrt(a->s / (n - ddof > 0 ? n - ddof : 0.0));
        break;
    }
    sl__dtype_conv_store(d->out, ot, o, v);
}

sl_status sl__cuda_reduce(const sl__reduce_desc *d, int n, int64_t max_out, int op, int in_dtype,
                          int out_dtype, int ddof, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
