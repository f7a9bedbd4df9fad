/* SPDX-License-Identifier: Apache-2.0 */
/* color_twist and hsv (color_twist.c): each pixel's three channels through a 3x3 matrix plus an
 * offset, shared by the CPU run and the CUDA run (ops/color_twist.cu) so that the two give the
 * same bits. The channels are read as double and the sums made with explicitly rounded double
 * operations, so a GPU compiler cannot fuse them into multiply-adds that round differently. */
#ifndef SLUICE_OPS_COLOR_TWIST_H
#define SLUICE_OPS_COLOR_TWIST_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <stdint.h>

/* One sample's transform: out = m x in + off, m row-major, as float (DALI's precision). */
typedef struct sl__twist {
    float m[9];
    float off;
} sl__twist;

/* pixel px (three channels) of in to out */
static inline SL__HD void sl__twist_pixel(const sl__twist *t, const void *in, sl_dtype it,
                                          void *out, sl_dtype ot, int64_t px) {
    double x[3];
    for (int c = 0; c < 3; c++) x[c] = sl__dtype_conv_load(in, it, 3 * px + c);
    for (int c = 0; c < 3; c++) {
        const float *r = t->m + 3 * c;
        double v =
            SL__DADD(SL__DADD(SL__DADD(SL__DMUL((double)r[0], x[0]), SL__DMUL((double)r[1], x[1])),
                              SL__DMUL((double)r[2], x[2])),
                     (double)t->off);
        sl__dtype_conv_store(out, ot, 3 * px + c, v);
    }
}

/* ---- the CUDA run (color_twist.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* color_twist and hsv: pixels pixels of three channels per sample, each through its transform
 * (color_twist.c, ops/color_twist.h) */
typedef struct sl__cuda_twist_desc {
    const void *in;
    void *out;
    int64_t pixels;
    sl__twist t;
} sl__cuda_twist_desc;
sl_status sl__cuda_color_twist(const sl__cuda_twist_desc *d, int n, int64_t max_pixels,
                               int in_dtype, int out_dtype, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
