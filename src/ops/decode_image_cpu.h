/* SPDX-License-Identifier: Apache-2.0 */
/* The image decoders' CPU decoder (decode_image_cpu.c): one worker per pool thread (libjpeg-turbo's
 * libjpeg API for JPEG, libspng for PNG) that writes an HWC uint8 image, or a window of it,
 * straight into the output sample, from the header facts io/image_info.h's peek found. */
#ifndef SLUICE_OPS_DECODE_IMAGE_CPU_H
#define SLUICE_OPS_DECODE_IMAGE_CPU_H

#include "io/image_info.h"
#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl__decode_image_roi {
    int64_t y, x, h, w; /* a window in oriented (output) coordinates */
} sl__decode_image_roi;

typedef struct sl__decode_image_worker sl__decode_image_worker;

/* One per pool thread: keeps its libjpeg decompressor and scratch buffers between images. */
sl_status sl__decode_image_worker_create(bool save_exif, sl__decode_image_worker **out,
                                         sl_err *err);
void sl__decode_image_worker_free(sl__decode_image_worker *w);

/* Decodes the image described by info (from peek) into out: (roi->h, roi->w, info->c) uint8, or
 * (out_h, out_w, c) when roi is NULL. SL_EFORMAT with the reason in why on bad data. */
sl_status sl__decode_image_run(sl__decode_image_worker *w, const uint8_t *data, size_t size,
                               const sl__decode_image_info *info, sl__img_type type,
                               const sl__decode_image_roi *roi, bool fast_idct, uint8_t *out,
                               char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif
