/* SPDX-License-Identifier: Apache-2.0 */
/* pad (pad.c): each output element either the input's element at the same index (copied as
 * bytes) or the fill value, shared by the CPU run and the CUDA run (ops/pad.cu). */
#ifndef SLUICE_OPS_PAD_H
#define SLUICE_OPS_PAD_H

#include "sluice/status.h"

#include "sluice/tensor.h"

#include "core/half.h"

#include <stdint.h>
#include <string.h>

typedef struct sl__pad {
    int nd;
    int64_t in[SL_MAX_DIMS], out[SL_MAX_DIMS]; /* extents */
    int es;                                    /* element bytes: 1, 2, 4 or 8 */
    unsigned char fill[8];                     /* the fill value's bytes, in the output's type */
} sl__pad;

/* element e (row-major) of the output */
static inline SL__HD void sl__pad_elem(const sl__pad *p, const void *in, void *out, int64_t e) {
    int64_t r = e, src = 0, stride = 1;
    int inside = 1;
    for (int d = p->nd - 1; d >= 0; d--) {
        int64_t i = r % p->out[d];
        r /= p->out[d];
        inside &= i < p->in[d];
        src += i * stride;
        stride *= p->in[d];
    }
    const unsigned char *from =
        inside ? (const unsigned char *)in + src * p->es : (const unsigned char *)p->fill;
    unsigned char *to = (unsigned char *)out + e * p->es;
    for (int k = 0; k < p->es; k++) to[k] = from[k];
}

/* ---- the CUDA run (pad.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* pad (pad.c, ops/pad.h): n output elements per sample */
typedef struct sl__cuda_pad_desc {
    const void *in;
    void *out;
    int64_t n;
    sl__pad p;
} sl__cuda_pad_desc;
sl_status sl__cuda_pad(const sl__cuda_pad_desc *d, int n, int64_t max_elems, void *stream,
                       sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
