/* SPDX-License-Identifier: Apache-2.0 */
/* JPEG encoding with libjpeg(-turbo) for `sluice convert` (grayscale for 1-channel input, RGB for
 * 3, baseline, default quality 95), and a header probe (format and dimensions of encoded images:
 * JPEG via libjpeg, PNG from its IHDR) for `sluice inspect`. Failures are errors, never exits. */
#ifndef SLUICE_IO_JPEGENC_H
#define SLUICE_IO_JPEGENC_H

#include "sluice/status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* pixels: (h, w, c) uint8, c 1 or 3. *out is malloc'd (free with free()). */
sl_status sl__jpegenc_encode(const uint8_t *pixels, int w, int h, int c, int quality, uint8_t **out,
                             size_t *size, sl_err *err);

typedef struct sl__image_info {
    const char *format; /* "jpeg", "png", or "unknown" */
    int width, height, channels;
} sl__image_info;
/* Reads only the header; SL_EFORMAT when it is not a valid JPEG/PNG header. */
sl_status sl__jpegenc_probe(const uint8_t *data, size_t size, sl__image_info *info, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
