/* SPDX-License-Identifier: Apache-2.0 */
/* slice (slice.c): one sample's window, shared by the CPU run and the CUDA run (slice.cu). The
 * output element at index o (per dimension) comes from the input at anchor + o, or, where that
 * lies outside the input, is the fill value of its channel; a value that changes type is
 * converted as operator/dtype_conv.h does. */
#ifndef SLUICE_OPS_SLICE_H
#define SLUICE_OPS_SLICE_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include "operator/dtype_conv.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__SLICE_MAX_FILL 32

typedef struct sl__slice_desc {
    const void *in;
    void *out;
    int ndim;
    int chan; /* the dimension fill values run along, or -1 (one value for all) */
    int64_t in_shape[SL_MAX_DIMS];
    int64_t out_shape[SL_MAX_DIMS];
    int64_t anchor[SL_MAX_DIMS]; /* input coordinates of the output's origin (may be < 0) */
    int64_t n;                   /* output elements */
    int nfill;
    double fill[SL__SLICE_MAX_FILL];
} sl__slice_desc;

/* Output element e of d: the flat input index it copies, or -1 with *fill_at the fill value's
 * index. */
static inline SL__HD int64_t sl__slice_source(const sl__slice_desc *d, int64_t e, int *fill_at) {
    int64_t src = 0, stride = 1;
    int64_t rem = e;
    int64_t c = 0;
    bool inside = true;
    for (int k = d->ndim - 1; k >= 0; k--) {
        int64_t o = rem % d->out_shape[k];
        rem /= d->out_shape[k];
        if (k == d->chan) c = o;
        int64_t x = d->anchor[k] + o;
        if (x < 0 || x >= d->in_shape[k]) inside = false;
        src += x * stride;
        stride *= d->in_shape[k];
    }
    *fill_at = d->nfill > 1 ? (int)c : 0;
    return inside ? src : -1;
}

sl_status sl__cuda_slice(const sl__slice_desc *d, int n, int64_t max_elems, int in_dtype,
                         int out_dtype, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
