/* SPDX-License-Identifier: Apache-2.0 */
/* cast (cast.c): the CUDA run's per-sample descriptor and launcher (cast.cu). */
#ifndef SLUICE_OPS_CAST_H
#define SLUICE_OPS_CAST_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cast: n elements per sample, converted as operator/dtype_conv.h does (a byte copy when equal) */
typedef struct sl__cuda_cast_desc {
    const void *in;
    void *out;
    int64_t n;
} sl__cuda_cast_desc;
sl_status sl__cuda_cast(const sl__cuda_cast_desc *d, int n, int64_t max_elems, int in_dtype,
                        int out_dtype, void *stream, sl_err *err);

/* One descriptor per sample of an element-wise op's CUDA run, input 0 to output 0 (n: the input
 * sample's elements), sent to the device in g on io's stream: *dev the device copy, *max_elems the
 * largest n (cast.c; also for cast_like and lookup_table). */
struct sl__gpu_args;
struct sl__op_io;
sl_status sl__cuda_cast_descs(struct sl__gpu_args *g, const struct sl__op_io *io, void **dev,
                              int64_t *max_elems, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
