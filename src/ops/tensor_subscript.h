/* SPDX-License-Identifier: Apache-2.0 */
/* tensor_subscript (tensor_subscript.c): the CUDA run's per-sample descriptor and launcher
 * (tensor_subscript.cu). Output element e is element r = e % inner of the block at input offset
 * sum over the walked dims d of (start[d] + idx[d] * step[d]) * stride[d], idx being e / inner
 * spelled out over count[] (last dim fastest); an index is a walked dim of count 1 and step 0.
 * Strides and offsets are in elements. */
#ifndef SLUICE_OPS_TENSOR_SUBSCRIPT_H
#define SLUICE_OPS_TENSOR_SUBSCRIPT_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__subscript_desc {
    const void *in;
    void *out;
    int64_t n;     /* output elements */
    int64_t inner; /* elements of the dims past the walked ones (taken whole) */
    int k;         /* walked dims */
    int64_t count[SL_MAX_DIMS], start[SL_MAX_DIMS], step[SL_MAX_DIMS], stride[SL_MAX_DIMS];
} sl__subscript_desc;

sl_status sl__cuda_subscript(const sl__subscript_desc *d, int n, int64_t max_elems, int esize,
                             void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
