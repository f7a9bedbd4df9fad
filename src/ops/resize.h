/* SPDX-License-Identifier: Apache-2.0 */
/* resize (resize.c, resize_volume.c): the CUDA run's per-sample descriptor and launchers
 * (resize.cu). */
#ifndef SLUICE_OPS_RESIZE_H
#define SLUICE_OPS_RESIZE_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* resize, two separable passes as resize.c's run_cpu: horizontal (h, w, c) -> tmp (h, ow, c) with
 * taps fx/wx, vertical tmp -> out (oh, ow, c) with fy/wy; float accumulation in tap order. Offsets
 * index the params block (int64 firsts and float weights); tmp is in floats into scratch. */
typedef struct sl__cuda_resize_desc {
    const void *in;
    void *out;
    int64_t h, w, c, oh, ow;
    int tx, ty;
    int64_t fx, fy, wx, wy; /* byte offsets into the params block */
    int64_t tmp;            /* float offset into the scratch block (h rows of ow x c) */
    int64_t y0, rows;       /* the input rows the vertical taps read: the horizontal pass's */
} sl__cuda_resize_desc;
sl_status sl__cuda_resize(const sl__cuda_resize_desc *d, const void *params, int n, int64_t max_tmp,
                          int64_t max_out, float *scratch, int in_dtype, int out_dtype,
                          void *stream, sl_err *err);

/* One of the two passes over n descriptors (resize of volumes chains three): horizontal (in ->
 * tmp; dtype the input's) or vertical (tmp -> out; dtype the output's, float32 into scratch for
 * a pass that follows); max_elems: the most elements a descriptor writes. */
sl_status sl__cuda_resize_pass(const sl__cuda_resize_desc *d, const void *params, int n,
                               int64_t max_elems, float *scratch, int dtype, bool vertical,
                               void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
