/* SPDX-License-Identifier: Apache-2.0 */
/* crop_mirror_normalize's per-sample decisions, made once by setup on the CPU and read by both the
 * CPU run (crop_mirror_normalize.c) and a CUDA run (src/ops/crop_mirror_normalize.cu). Plain C
 * that also compiles as C++ under nvcc. Coordinates: the input is (in_f, in_d, in_h, in_w, in_c)
 * whatever its layout (the strides say where each lies); output element (f, z, y, x, c) reads
 * input (f, anchor_z + z, anchor_y + y', anchor_x + x', c) where y', x' are y, x mirrored when
 * the flags say so; reads outside the input give fill[c]. */
#ifndef SLUICE_OPS_CROP_MIRROR_NORMALIZE_H
#define SLUICE_OPS_CROP_MIRROR_NORMALIZE_H

#include "sluice/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__CMN_MAX_C 16

typedef struct sl__cmn_sample {
    /* input extents: frames (kept whole), depth, height, width, channels; in_f and in_d are 1
     * where the layout has no such axis (a sequence cropped along its frames, crop_d without a
     * D axis, has them as its depth); and their element strides, which follow the layout */
    int64_t in_f, in_d, in_h, in_w, in_c;
    int64_t is_f, is_d, is_h, is_w, is_c;
    int64_t anchor_z, anchor_y, anchor_x; /* window origin in the input; may be negative (pad) */
    int64_t out_f, out_d, out_h, out_w, out_c; /* output extents; out_c > in_c with pad_output */
    int64_t os_f, os_d, os_h, os_w, os_c;      /* their strides in the output's layout */
    int mirror_x, mirror_y;                    /* flip the window horizontally / vertically */
    /* per output channel: out = (in - mean) * inv_std, already folded with scale and shift:
       mean = mean - shift * std / scale, inv_std = scale / std; channels >= in_c hold fill */
    float mean[SL__CMN_MAX_C];
    float inv_std[SL__CMN_MAX_C];
    float fill[SL__CMN_MAX_C];
} sl__cmn_sample;

/* The extents and strides of a plain HWC crop (one frame, one plane), input and output HWC: p's
 * in_h, in_w, in_c, out_h, out_w and out_c set, the rest zero. */
static inline void sl__cmn_sample_hwc(sl__cmn_sample *p) {
    p->in_f = p->in_d = p->out_f = p->out_d = 1;
    p->is_c = 1, p->is_w = p->in_c, p->is_h = p->in_w * p->in_c;
    p->os_c = 1, p->os_w = p->out_c, p->os_h = p->out_w * p->out_c;
}

/* ---- the CUDA run (crop_mirror_normalize.cu) ---- */

/* crop_mirror_normalize: sample i reads d[i].in and writes d[i].out as d[i].p says;
 * max_pixels = the largest out_f * out_d * out_h * out_w of the batch. dtypes: SL_DTYPE_* of input
 * and output. */
typedef struct sl__cuda_cmn_desc {
    sl__cmn_sample p;
    const void *in;
    void *out;
} sl__cuda_cmn_desc;
sl_status sl__cuda_cmn(const sl__cuda_cmn_desc *d, int n, int64_t max_pixels, int in_dtype,
                       int out_dtype, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
