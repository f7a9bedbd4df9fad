/* SPDX-License-Identifier: Apache-2.0 */
/* gaussian_blur (gaussian_blur.c): one separable pass per spatial axis, innermost first, shared by
 * the CPU run and the CUDA run (ops/gaussian_blur.cu) so that both give the same bits. A pass
 * reads the input (the first pass) or a float scratch and writes a float scratch or the output
 * (the last pass); each output element sums its taps in order in float, every product and sum
 * rounded on its own (SL__FMUL, SL__FADD), with DALI's border, reflect-101
 * (... 2 1 | 0 1 2 ... n-1 | n-2 n-3 ...). An axis is given by its extent and its element stride,
 * so the dimensions around the spatial ones (channels first or last, frames) ride along. */
#ifndef SLUICE_OPS_GAUSSIAN_BLUR_H
#define SLUICE_OPS_GAUSSIAN_BLUR_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <stdint.h>

#define SL__BLUR_MAX_AXES 3

typedef struct sl__blur {
    int64_t n;                         /* elements of the sample */
    int naxes;                         /* spatial axes (1 to 3), outermost first */
    int64_t ext[SL__BLUR_MAX_AXES];    /* their extents */
    int64_t stride[SL__BLUR_MAX_AXES]; /* their element strides */
    int r[SL__BLUR_MAX_AXES];          /* their windows' radii: 2r + 1 taps */
} sl__blur;

static inline SL__HD int64_t sl__reflect101(int64_t i, int64_t n) {
    if (n == 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
    return i;
}

/* The pass along spatial axis a at element e: the 2 r[a] + 1 weights w over src (of type st;
 * float scratch when st is SL_DTYPE_F32). */
static inline SL__HD float sl__blur_pass(const sl__blur *b, int a, const float *w, const void *src,
                                         sl_dtype st, int64_t e) {
    int64_t n = b->ext[a], s = b->stride[a];
    int64_t x = (e / s) % n, base = e - x * s;
    int r = b->r[a];
    float acc = 0;
    for (int k = -r; k <= r; k++) {
        int64_t at = base + sl__reflect101(x + k, n) * s;
        float v =
            st == SL_DTYPE_F32 ? ((const float *)src)[at] : (float)sl__dtype_conv_load(src, st, at);
        acc = SL__FADD(acc, SL__FMUL(w[k + r], v));
    }
    return acc;
}

/* ---- the CUDA run (gaussian_blur.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* gaussian_blur (gaussian_blur.c, ops/gaussian_blur.h): per sample its axes and radii, its
 * weights' byte offsets in the params block (one per axis), and the float offsets of its two
 * scratch buffers */
typedef struct sl__cuda_blur_desc {
    const void *in;
    void *out;
    sl__blur b;
    int64_t w[SL__BLUR_MAX_AXES];
    int64_t tmp[2];
} sl__cuda_blur_desc;
/* passes: the most axes of any sample */
sl_status sl__cuda_blur(const sl__cuda_blur_desc *d, const void *params, int n, int passes,
                        int64_t max_elems, float *scratch, int in_dtype, int out_dtype,
                        void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
