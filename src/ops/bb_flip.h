/* SPDX-License-Identifier: Apache-2.0 */
/* bb_flip (bb_flip.c): one box axis's mirror, shared by the CPU run and the kernel (bb_flip.cu) so
 * that the two give the same bits, and the CUDA run's per-sample descriptor and launcher. */
#ifndef SLUICE_OPS_BB_FLIP_H
#define SLUICE_OPS_BB_FLIP_H

#include "sluice/status.h"

#include "core/half.h"

#include <stdint.h>

/* one axis of one box: lo, hi (ltrb) or lo, extent (xywh), mirrored in place, in float */
static inline SL__HD void sl__bb_flip_axis(float *lo, float *second, int ltrb) {
    float l = *lo, h = ltrb ? *second : *lo + *second;
    float nl = 1.0f - h, nh = 1.0f - l;
    *lo = nl;
    *second = ltrb ? nh : nh - nl;
}

#ifdef __cplusplus
extern "C" {
#endif

/* one sample: n boxes of 4 floats from in to out; flags bit 0 horizontal, bit 1 vertical */
typedef struct sl__cuda_bb_flip_desc {
    const float *in;
    float *out;
    int64_t n;
    int flags, ltrb;
} sl__cuda_bb_flip_desc;
sl_status sl__cuda_bb_flip(const sl__cuda_bb_flip_desc *d, int n, int64_t max_boxes, void *stream,
                           sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
