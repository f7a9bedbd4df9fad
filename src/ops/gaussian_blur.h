/* SPDX-License-Identifier: Apache-2.0 */
/* gaussian_blur (gaussian_blur.c): two separable passes, shared by the CPU run and the CUDA run
 * (ops/gaussian_blur.cu) so that both give the same bits: each output sums its taps in order in
 * float, every product and sum rounded on its own (SL__FMUL, SL__FADD), with DALI's border,
 * reflect-101
 * (... 2 1 | 0 1 2 ... n-1 | n-2 n-3 ...). */
#ifndef SLUICE_OPS_GAUSSIAN_BLUR_H
#define SLUICE_OPS_GAUSSIAN_BLUR_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <stdint.h>

typedef struct sl__blur {
    int64_t h, w, c; /* extents (c 1 for an HW image) */
    int ry, rx;      /* the windows' radii: 2r + 1 taps each */
} sl__blur;

static inline SL__HD int64_t sl__reflect101(int64_t i, int64_t n) {
    if (n == 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
    return i;
}

/* the horizontal pass: element e (y, x, channel) of the float scratch; wx: 2 rx + 1 weights */
static inline SL__HD float sl__blur_h(const sl__blur *b, const float *wx, const void *in,
                                      sl_dtype it, int64_t e) {
    int64_t ch = e % b->c, p = e / b->c, x = p % b->w, y = p / b->w;
    float acc = 0;
    for (int k = -b->rx; k <= b->rx; k++) {
        int64_t xx = sl__reflect101(x + k, b->w);
        float v = (float)sl__dtype_conv_load(in, it, (y * b->w + xx) * b->c + ch);
        acc = SL__FADD(acc, SL__FMUL(wx[k + b->rx], v));
    }
    return acc;
}

/* the vertical pass: element e of the output, from the scratch; wy: 2 ry + 1 weights */
static inline SL__HD void sl__blur_v(const sl__blur *b, const float *wy, const float *tmp,
                                     void *out, sl_dtype ot, int64_t e) {
    int64_t ch = e % b->c, p = e / b->c, x = p % b->w, y = p / b->w;
    float acc = 0;
    for (int k = -b->ry; k <= b->ry; k++) {
        int64_t yy = sl__reflect101(y + k, b->h);
        acc = SL__FADD(acc, SL__FMUL(wy[k + b->ry], tmp[(yy * b->w + x) * b->c + ch]));
    }
    sl__dtype_conv_store(out, ot, e, acc);
}

/* ---- the CUDA run (gaussian_blur.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* gaussian_blur (gaussian_blur.c, ops/gaussian_blur.h): per sample its extents and radii, its
 * weights' byte offsets in the params block, and its float offset in the scratch block */
typedef struct sl__cuda_blur_desc {
    const void *in;
    void *out;
    sl__blur b;
    int64_t wx, wy, tmp;
} sl__cuda_blur_desc;
sl_status sl__cuda_blur(const sl__cuda_blur_desc *d, const void *params, int n, int64_t max_elems,
                        float *scratch, int in_dtype, int out_dtype, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
