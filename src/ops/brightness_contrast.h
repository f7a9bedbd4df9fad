/* SPDX-License-Identifier: Apache-2.0 */
/* brightness_contrast (brightness_contrast.c): the CUDA run's per-sample descriptor and
 * launcher (brightness_contrast.cu). */
#ifndef SLUICE_OPS_BRIGHTNESS_CONTRAST_H
#define SLUICE_OPS_BRIGHTNESS_CONTRAST_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* brightness_contrast: n elements per sample, out = (float)in * mul + add (brightness_contrast.c)
 */
typedef struct sl__cuda_bc_desc {
    const void *in;
    void *out;
    int64_t n;
    double mul, add;
} sl__cuda_bc_desc;
sl_status sl__cuda_brightness_contrast(const sl__cuda_bc_desc *d, int n, int64_t max_elems,
                                       int in_dtype, int out_dtype, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
