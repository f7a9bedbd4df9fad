/* SPDX-License-Identifier: Apache-2.0 */
/* experimental.equalize (equalize.c): the lookup table of one channel plane from its histogram,
 * shared by the CPU run and the CUDA run (ops/equalize.cu) so both give the same bits. OpenCV's
 * equalizeHist, which DALI follows: with `lo` the lowest value present and `total` the plane's
 * pixels, lut[lo] = 0 and lut[v] = round(cdf(v) * (255 / (total - hist[lo]))) above it, in float,
 * rounded half to even; a plane of one value (or none) is left as it is. */
#ifndef SLUICE_OPS_EQUALIZE_H
#define SLUICE_OPS_EQUALIZE_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <math.h>
#include <stdint.h>

static inline SL__HD void sl__equalize_lut(const int64_t *hist, int64_t total, uint8_t *lut) {
    int lo = 0;
    while (lo < 256 && hist[lo] == 0) lo++;
    if (lo == 256 || hist[lo] == total) {
        for (int v = 0; v < 256; v++) lut[v] = (uint8_t)v;
        return;
    }
    float scale = 255.0f / (float)(total - hist[lo]);
    int64_t sum = 0;
    for (int v = 0; v < lo; v++) lut[v] = 0;
    lut[lo] = 0;
    for (int v = lo + 1; v < 256; v++) {
        sum += hist[v];
        float x = SL__FMUL((float)sum, scale);
#ifdef __CUDA_ARCH__
        int r = __float2int_rn(x);
#else
        int r = (int)nearbyintf(x);
#endif
        lut[v] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
    }
}

#ifdef __cplusplus
extern "C" {
#endif

/* one channel plane on the device: n pixels, pixel p at in[start + p * stride] */
typedef struct sl__cuda_eq_plane {
    const uint8_t *in;
    uint8_t *out;
    int64_t n, start, stride;
} sl__cuda_eq_plane;
sl_status sl__cuda_equalize(const sl__cuda_eq_plane *d, int planes, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
