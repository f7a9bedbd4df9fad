/* SPDX-License-Identifier: Apache-2.0 */
/* experimental.filter (filter.c): one output element of a 2D correlation, shared by the CPU run
 * and the CUDA run (ops/filter.cu) so that both give the same bits. The taps are summed in order,
 * row by row, in float, every product and sum rounded on its own (SL__FMUL, SL__FADD), as DALI
 * computes in float32. */
#ifndef SLUICE_OPS_FILTER_H
#define SLUICE_OPS_FILTER_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <stdint.h>

enum {
    SL__FB_REFLECT_101 = 0, /* dcb|abcd|cba */
    SL__FB_REFLECT_1001,    /* cba|abcd|dcb */
    SL__FB_WRAP,            /* bcd|abcd|abc */
    SL__FB_CLAMP,           /* aaa|abcd|ddd */
    SL__FB_CONSTANT         /* the fill value (0 when none is given) */
};

/* One sample: frames of (h, w) planes with c channels, channels last (HWC: stride c between
 * pixels) or first (CHW: stride 1, channel planes h * w apart); an (r, s) filter anchored at
 * (ay, ax); the output is (oh, ow) per frame, in the same layout. */
typedef struct sl__filt {
    int64_t frames, h, w, c, oh, ow;
    int chan_first;
    int r, s, ay, ax;
    int border;
} sl__filt;

/* index i of an axis of n under the border rule; -1: outside (the fill value) */
static inline SL__HD int64_t sl__filt_index(int64_t i, int64_t n, int border) {
    if (i >= 0 && i < n) return i;
    switch (border) {
    case SL__FB_CONSTANT:
        return -1;
    case SL__FB_CLAMP:
        return i < 0 ? 0 : n - 1;
    case SL__FB_WRAP:
        i %= n;
        return i < 0 ? i + n : i;
    case SL__FB_REFLECT_1001:
        if (n == 1) return 0;
        while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
        return i;
    default: /* reflect-101 */
        if (n == 1) return 0;
        while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
        return i;
    }
}

/* output element e of a sample: in (it), the filter (r * s floats), the fill value */
static inline SL__HD void sl__filt_elem(const sl__filt *f, const void *in, sl_dtype it,
                                        const float *k, float fill, void *out, sl_dtype ot,
                                        int64_t e) {
    int64_t ch, x, y, fr;
    if (f->chan_first) {
        x = e % f->ow;
        y = e / f->ow % f->oh;
        ch = e / (f->ow * f->oh) % f->c;
        fr = e / (f->ow * f->oh * f->c);
    } else {
        ch = e % f->c;
        x = e / f->c % f->ow;
        y = e / (f->c * f->ow) % f->oh;
        fr = e / (f->c * f->ow * f->oh);
    }
    int64_t base = fr * f->h * f->w * f->c;
    float acc = 0;
    for (int i = 0; i < f->r; i++) {
        int64_t yy = sl__filt_index(y - f->ay + i, f->h, f->border);
        for (int j = 0; j < f->s; j++) {
            int64_t xx = sl__filt_index(x - f->ax + j, f->w, f->border);
            float v = fill;
            if (yy >= 0 && xx >= 0) {
                int64_t p =
                    f->chan_first ? (ch * f->h + yy) * f->w + xx : (yy * f->w + xx) * f->c + ch;
                v = (float)sl__dtype_conv_load(in, it, base + p);
            }
            acc = SL__FADD(acc, SL__FMUL(k[i * f->s + j], v));
        }
    }
    sl__dtype_conv_store(out, ot, e, acc);
}

/* ---- the CUDA run (filter.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* one sample on the device: its geometry, input, filter, fill value (NULL: 0) and output */
typedef struct sl__cuda_filt_desc {
    sl__filt f;
    const void *in;
    const float *k;
    const void *fill;
    void *out;
    int64_t n; /* output elements */
} sl__cuda_filt_desc;
sl_status sl__cuda_filter(const sl__cuda_filt_desc *d, int n, int64_t max_elems, int in_dtype,
                          int out_dtype, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
