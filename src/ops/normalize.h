/* SPDX-License-Identifier: Apache-2.0 */
/* normalize (normalize.c): the CUDA run's per-sample descriptor, arguments and launcher
 * (normalize.cu). */
#ifndef SLUICE_OPS_NORMALIZE_H
#define SLUICE_OPS_NORMALIZE_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* normalize (normalize.c): per sample, the element strides of its kept and reduced axes and the
 * statistics' (param) strides of every axis (0 for a reduced one); mean and inv point at np device
 * doubles each (per sample, or the batch's shared ones), computed there unless given (then
 * mean_given / inv_given, already scale / stddev). */
typedef struct sl__cuda_norm_desc {
    const void *in;
    void *out;
    int in_dtype, out_dtype;
    int nd, nk, nrd;
    int64_t n, np, nr; /* elements, statistics, reduced elements per statistic */
    int64_t ext[SL_MAX_DIMS], pstride[SL_MAX_DIMS];
    int64_t kext[SL_MAX_DIMS], kstride[SL_MAX_DIMS], rext[SL_MAX_DIMS], rstride[SL_MAX_DIMS];
    double *mean, *inv;
    double mean_given, inv_given;
} sl__cuda_norm_desc;
typedef struct sl__cuda_norm_args {
    int batch, has_mean, has_std, ddof;
    double eps, scale, shift;
} sl__cuda_norm_args;
sl_status sl__cuda_normalize(const sl__cuda_norm_desc *d, int n, int64_t max_np, int64_t max_elems,
                             const sl__cuda_norm_args *a, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
