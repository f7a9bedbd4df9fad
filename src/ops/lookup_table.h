/* SPDX-License-Identifier: Apache-2.0 */
/* lookup_table (lookup_table.c): the CUDA run's per-sample descriptor and launcher
 * (lookup_table.cu). */
#ifndef SLUICE_OPS_LOOKUP_TABLE_H
#define SLUICE_OPS_LOOKUP_TABLE_H

#include "ops/cast.h"
#include "sluice/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__LUT_KEYS 65536

/* lookup_table, over cast's per-sample descriptors (ops/cast.h: n integer elements each):
 * out[k] = table[in[k]] for in[k] in [0, keys), else table[keys] (default_value); the table holds
 * keys + 1 values already of the output type, elem bytes each, on the device */
sl_status sl__cuda_lookup_table(const sl__cuda_cast_desc *d, int n, int64_t max_elems, int in_dtype,
                                const void *table, int64_t elem, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
