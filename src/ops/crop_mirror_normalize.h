/* SPDX-License-Identifier: Apache-2.0 */
/* crop_mirror_normalize's per-sample decisions, made once by setup on the CPU and read by both the
 * CPU run (crop_mirror_normalize.c) and a CUDA run (src/cuda/crop_mirror_normalize.cu). Plain C
 * that also compiles as C++ under nvcc. Coordinates: the input is (in_h, in_w, in_c) whatever its
 * layout; output element (y, x, c) reads input (anchor_y + y', anchor_x + x', c) where y', x' are
 * y, x mirrored when the flags say so; reads outside the input give fill[c]. */
#ifndef SLUICE_OPS_CROP_MIRROR_NORMALIZE_H
#define SLUICE_OPS_CROP_MIRROR_NORMALIZE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__CMN_MAX_C 16

typedef struct sl__cmn_sample {
    int64_t in_h, in_w, in_c;    /* input extents */
    int in_chw;                  /* 1: input is CHW, 0: HWC */
    int64_t anchor_y, anchor_x;  /* window origin in the input; may be negative (pad) */
    int64_t out_h, out_w, out_c; /* output extents; out_c > in_c with pad_output */
    int mirror_x, mirror_y;      /* flip the window horizontally / vertically */
    int out_chw;                 /* 1: output CHW, 0: HWC */
    /* per output channel: out = (in - mean) * inv_std, already folded with scale and shift:
       mean = mean - shift * std / scale, inv_std = scale / std; channels >= in_c hold fill */
    float mean[SL__CMN_MAX_C];
    float inv_std[SL__CMN_MAX_C];
    float fill[SL__CMN_MAX_C];
} sl__cmn_sample;

#ifdef __cplusplus
}
#endif
#endif
