/* SPDX-License-Identifier: Apache-2.0 */
/* one_hot (one_hot.c): the CUDA run's per-sample descriptor and launcher (one_hot.cu). */
#ifndef SLUICE_OPS_ONE_HOT_H
#define SLUICE_OPS_ONE_HOT_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* one_hot: out[(o * classes + k) * inner + j] = in[o * inner + j] == k ? on : off */
typedef struct sl__cuda_one_hot_desc {
    const void *in;
    void *out;
    int64_t outer, inner;
} sl__cuda_one_hot_desc;
sl_status sl__cuda_one_hot(const sl__cuda_one_hot_desc *d, int n, int64_t max_out, int64_t classes,
                           int in_dtype, int out_dtype, double on, double off, void *stream,
                           sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
