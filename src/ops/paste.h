/* SPDX-License-Identifier: Apache-2.0 */
/* paste (paste.c): one element of the canvas, shared by the CPU run and the CUDA run (paste.cu):
 * inside the pasted image its pixel, elsewhere the fill value of its channel. */
#ifndef SLUICE_OPS_PASTE_H
#define SLUICE_OPS_PASTE_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include "operator/dtype_conv.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__PASTE_MAX_C 32

typedef struct sl__paste_desc {
    const void *in;
    void *out;
    int64_t h, w, c; /* the image */
    int64_t oh, ow;  /* the canvas */
    int64_t y0, x0;  /* where the image goes */
    double fill[SL__PASTE_MAX_C];
} sl__paste_desc;

static inline SL__HD void sl__paste_elem(const sl__paste_desc *d, sl_dtype t, int es, int64_t e) {
    int64_t ch = e % d->c, pix = e / d->c, y = pix / d->ow - d->y0, x = pix % d->ow - d->x0;
    if (y >= 0 && y < d->h && x >= 0 && x < d->w) {
        const unsigned char *a = (const unsigned char *)d->in + ((y * d->w + x) * d->c + ch) * es;
        unsigned char *o = (unsigned char *)d->out + e * es;
        for (int k = 0; k < es; k++) o[k] = a[k];
    } else {
        sl__dtype_conv_store(d->out, t, e, d->fill[ch]);
    }
}

sl_status sl__cuda_paste(const sl__paste_desc *d, int n, int64_t max_elems, int dtype, int esize,
                         void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
