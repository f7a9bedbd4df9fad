/* SPDX-License-Identifier: Apache-2.0 */
/* transpose (transpose.c): the CUDA run's per-sample descriptor and launcher (transpose.cu). */
#ifndef SLUICE_OPS_TRANSPOSE_H
#define SLUICE_OPS_TRANSPOSE_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* transpose: n elements per sample; output dimension d has extent shape[d] and walks the input
 * with stride[d] elements (transpose.c); ndim 0: a plain copy */
typedef struct sl__cuda_transpose_desc {
    const void *in;
    void *out;
    int64_t n;
    int ndim;
    int64_t shape[8], stride[8];
} sl__cuda_transpose_desc;
sl_status sl__cuda_transpose(const sl__cuda_transpose_desc *d, int n, int64_t max_elems,
                             int elem_size, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
