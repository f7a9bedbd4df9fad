/* SPDX-License-Identifier: Apache-2.0 */
/* erase (erase.c): whether an element lies in one of the erased boxes, and its fill value, shared
 * by the CPU run and the CUDA run (erase.cu). */
#ifndef SLUICE_OPS_ERASE_H
#define SLUICE_OPS_ERASE_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include "operator/dtype_conv.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__ERASE_MAX_FILL 32

/* a box: [lo[d], hi[d]) in every dimension (clipped to the sample) */
typedef struct sl__erase_box {
    int64_t lo[SL_MAX_DIMS], hi[SL_MAX_DIMS];
} sl__erase_box;

typedef struct sl__erase_desc {
    const void *in;
    void *out;
    int ndim;
    int chan; /* the dimension fill values run along, or -1 */
    int64_t shape[SL_MAX_DIMS];
    int64_t n;
    const sl__erase_box *box; /* nbox of them */
    int nbox;
    int nfill;
    double fill[SL__ERASE_MAX_FILL];
} sl__erase_desc;

/* Element e of d: copied, or (in a box) set to its channel's fill value. */
static inline SL__HD void sl__erase_elem(const sl__erase_desc *d, sl_dtype t, int es, int64_t e) {
    int64_t idx[SL_MAX_DIMS], rem = e;
    for (int k = d->ndim - 1; k >= 0; k--) {
        idx[k] = rem % d->shape[k];
        rem /= d->shape[k];
    }
    for (int b = 0; b < d->nbox; b++) {
        bool in = true;
        for (int k = 0; k < d->ndim && in; k++)
            in = idx[k] >= d->box[b].lo[k] && idx[k] < d->box[b].hi[k];
        if (in) {
            int f = d->nfill > 1 && d->chan >= 0 ? (int)idx[d->chan] : 0;
            sl__dtype_conv_store(d->out, t, e, d->fill[f < d->nfill ? f : d->nfill - 1]);
            return;
        }
    }
    const unsigned char *a = (const unsigned char *)d->in + e * es;
    unsigned char *o = (unsigned char *)d->out + e * es;
    for (int k = 0; k < es; k++) o[k] = a[k];
}

sl_status sl__cuda_erase(const sl__erase_desc *d, int n, int64_t max_elems, int dtype, int esize,
                         void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
