/* SPDX-License-Identifier: Apache-2.0 */
/* box_encoder (box_encoder.c): the IoU, the [cx, cy, w, h] form and one anchor's output row,
 * shared by the CPU run and the kernels (box_encoder.cu) so that the two match the same boxes and
 * write the same bits (products and sums rounded one at a time: a GPU compiler would otherwise
 * fuse them into multiply-adds); and the CUDA run's descriptors and launcher. The offsets' logf
 * may differ by an ulp between glibc and CUDA. */
#ifndef SLUICE_OPS_BOX_ENCODER_H
#define SLUICE_OPS_BOX_ENCODER_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <math.h>
#include <stdint.h>

/* the encoding's parameters */
typedef struct sl__box_params {
    float criteria, scale, means[4], stds[4];
    int offset;
} sl__box_params;

/* IoU of two [l, t, r, b] boxes; 0 when they do not overlap */
static inline SL__HD float sl__box_iou(const float *a, const float *b) {
    float l = a[0] > b[0] ? a[0] : b[0], t = a[1] > b[1] ? a[1] : b[1];
    float r = a[2] < b[2] ? a[2] : b[2], btm = a[3] < b[3] ? a[3] : b[3];
    if (!(r > l && btm > t)) return 0.0f;
    float inter = SL__FMUL(r - l, btm - t);
    float ua = SL__FMUL(a[2] - a[0], a[3] - a[1]), ub = SL__FMUL(b[2] - b[0], b[3] - b[1]);
    float uni = SL__FADD(ua, ub) - inter;
    return uni > 0 ? inter / uni : 0.0f;
}

/* [cx, cy, w, h] of an [l, t, r, b] box */
static inline SL__HD void sl__box_centre(const float *b, float *o) {
    o[0] = SL__FMUL(b[0] + b[2], 0.5f);
    o[1] = SL__FMUL(b[1] + b[3], 0.5f);
    o[2] = b[2] - b[0];
    o[3] = b[3] - b[1];
}

/* anchor an's output row o: box (NULL: unmatched) as [cx, cy, w, h], or SSD's offsets */
static inline SL__HD void sl__box_row(const sl__box_params *p, const float *an, const float *box,
                                      float *o) {
    if (!box) {
        if (p->offset)
            o[0] = o[1] = o[2] = o[3] = 0.0f;
        else
            sl__box_centre(an, o);
        return;
    }
    float bc[4], ac[4];
    sl__box_centre(box, bc);
    if (!p->offset) {
        for (int k = 0; k < 4; k++) o[k] = bc[k];
        return;
    }
    sl__box_centre(an, ac);
    for (int k = 0; k < 4; k++) {
        bc[k] = SL__FMUL(bc[k], p->scale);
        ac[k] = SL__FMUL(ac[k], p->scale);
    }
    o[0] = ((bc[0] - ac[0]) / ac[2] - p->means[0]) / p->stds[0];
    o[1] = ((bc[1] - ac[1]) / ac[3] - p->means[1]) / p->stds[1];
    o[2] = (logf(bc[2] / ac[2]) - p->means[2]) / p->stds[2];
    o[3] = (logf(bc[3] / ac[3]) - p->means[3]) / p->stds[3];
}

#ifdef __cplusplus
extern "C" {
#endif

/* one sample: n boxes (n, 4) and labels (n,), outputs (m, 4) and (m,); first: where its boxes'
 * best anchors go in the scratch */
typedef struct sl__cuda_box_desc {
    const float *boxes;
    const int32_t *labels;
    float *out_boxes;
    int32_t *out_labels;
    int64_t n, first;
} sl__cuda_box_desc;
/* anchors (m, 4) on the device; best: scratch of one int64 per box of the batch */
sl_status sl__cuda_box_encoder(const sl__cuda_box_desc *d, int nsamples, int64_t max_boxes,
                               const float *anchors, int64_t m, const sl__box_params *p,
                               int64_t *best, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
