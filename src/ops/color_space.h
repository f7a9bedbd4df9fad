/* SPDX-License-Identifier: Apache-2.0 */
/* color_space_conversion (color_space.c): one pixel's conversion, shared by the CPU run and the
 * CUDA run (color_space.cu). Values are normalized to [0, 1] (integers over their type's largest
 * value), converted in float32 with DALI's coefficients (full-range BT.601, as JPEG's YCbCr), and
 * scaled back, rounded and saturated. */
#ifndef SLUICE_OPS_COLOR_SPACE_H
#define SLUICE_OPS_COLOR_SPACE_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include "operator/dtype_conv.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SL__CS_RGB, SL__CS_BGR, SL__CS_GRAY, SL__CS_YCBCR };

typedef struct sl__cs_desc {
    const void *in;
    void *out;
    int64_t pixels;
} sl__cs_desc;

static inline SL__HD float sl__cs_dot(float a, float b, float c, float x, float y, float z) {
    return SL__FADD(SL__FADD(SL__FMUL(a, x), SL__FMUL(b, y)), SL__FMUL(c, z));
}

/* pixel p of d from space `from` (cin channels) to `to` (cout); scale: the type's largest value
 * (1 for floating types) */
static inline SL__HD void sl__cs_pixel(const sl__cs_desc *d, sl_dtype t, int from, int to,
                                       float scale, int64_t p) {
    int cin = from == SL__CS_GRAY ? 1 : 3, cout = to == SL__CS_GRAY ? 1 : 3;
    if (from == to) { /* the same space: the values as they are */
        for (int k = 0; k < cin; k++)
            sl__dtype_conv_store(d->out, t, p * cin + k,
                                 sl__dtype_conv_load(d->in, t, p * cin + k));
        return;
    }
    float v[3];
    for (int k = 0; k < cin; k++) v[k] = (float)sl__dtype_conv_load(d->in, t, p * cin + k) / scale;
    float r, g, b, y = 0, cb = 0.5f, cr = 0.5f;
    switch (from) {
    case SL__CS_BGR:
        r = v[2], g = v[1], b = v[0];
        break;
    case SL__CS_GRAY:
        r = g = b = y = v[0];
        break;
    case SL__CS_YCBCR:
        y = v[0], cb = v[1], cr = v[2];
        r = SL__FADD(y, SL__FMUL(1.402f, cr - 0.5f));
        g = SL__FADD(SL__FADD(y, SL__FMUL(-0.34413629f, cb - 0.5f)),
                     SL__FMUL(-0.71413629f, cr - 0.5f));
        b = SL__FADD(y, SL__FMUL(1.772f, cb - 0.5f));
        break;
    default:
        r = v[0], g = v[1], b = v[2];
        break;
    }
    if (to == SL__CS_GRAY || to == SL__CS_YCBCR) {
        if (from != SL__CS_GRAY && from != SL__CS_YCBCR) {
            y = sl__cs_dot(0.299f, 0.587f, 0.114f, r, g, b);
            cb = SL__FADD(sl__cs_dot(-0.16873589f, -0.33126411f, 0.5f, r, g, b), 0.5f);
            cr = SL__FADD(sl__cs_dot(0.5f, -0.41868759f, -0.08131241f, r, g, b), 0.5f);
        }
    }
    float o[3];
    switch (to) {
    case SL__CS_GRAY:
        o[0] = y;
        break;
    case SL__CS_YCBCR:
        o[0] = y, o[1] = cb, o[2] = cr;
        break;
    case SL__CS_BGR:
        o[0] = b, o[1] = g, o[2] = r;
        break;
    default:
        o[0] = r, o[1] = g, o[2] = b;
        break;
    }
    for (int k = 0; k < cout; k++)
        sl__dtype_conv_store(d->out, t, p * cout + k, (double)SL__FMUL(o[k], scale));
}

sl_status sl__cuda_color_space(const sl__cs_desc *d, int n, int64_t max_pixels, int dtype, int from,
                               int to, float scale, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
