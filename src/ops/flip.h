/* SPDX-License-Identifier: Apache-2.0 */
/* flip (flip.c): the CUDA run's per-sample descriptor and launcher (flip.cu). */
#ifndef SLUICE_OPS_FLIP_H
#define SLUICE_OPS_FLIP_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* flip: planes of (h, w) pixels of px bytes, in groups of `depth` planes; flags bit 0
 * horizontal, bit 1 vertical, bit 2 depthwise (each group's planes in reverse order) */
typedef struct sl__cuda_flip_desc {
    const void *in;
    void *out;
    int64_t planes, depth, h, w, px;
    int flags;
} sl__cuda_flip_desc;
sl_status sl__cuda_flip(const sl__cuda_flip_desc *d, int n, int64_t max_pixels, void *stream,
                        sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
