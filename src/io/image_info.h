/* SPDX-License-Identifier: Apache-2.0 */
/* Image header facts: a JPEG's, PNG's, BMP's, PNM's, TIFF's or JPEG 2000's format (from the magic
 * bytes), extents,
 * channels, EXIF orientation and, for JPEG, the sampling factors, frame process, libjpeg's guess of
 * the colour space and whether the stream is complete. A small marker and chunk scanner, pure
 * parsing of bytes: the image decoders (ops/decode_image.h) run it in setup to size every output
 * before any decode, so the extents and channels here are those of the decoded image for the
 * output type asked for. */
#ifndef SLUICE_IO_IMAGE_INFO_H
#define SLUICE_IO_IMAGE_INFO_H

#include "sluice/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* output_type, DALI's DALIImageType order */
typedef enum sl__img_type {
    SL__IMG_RGB = 0,
    SL__IMG_BGR = 1,
    SL__IMG_GRAY = 2,
    SL__IMG_YCBCR = 3,
    SL__IMG_ANY = 4
} sl__img_type;

enum {
    SL__IMG_JPEG = 1,
    SL__IMG_PNG = 2,
    SL__IMG_BMP = 3,
    SL__IMG_PNM = 4,
    SL__IMG_TIFF = 5,
    SL__IMG_JP2 = 6 /* JPEG 2000: a JP2 file or a J2K codestream */
};

typedef struct sl__decode_image_info {
    int format;      /* SL__IMG_JPEG, ..., SL__IMG_JP2 */
    int64_t h, w;    /* stored extents */
    int comps;       /* channels in the file (JPEG components; PNG: 1 gray, 2 GA, 3 RGB, 4 RGBA; BMP
                        and PNM: io/image_raw.h) */
    int orientation; /* EXIF orientation 1..8 (1 when not adjusting) */
    int64_t out_h, out_w; /* extents after orientation */
    int c;                /* output channels */
    uint8_t samp[4][2];   /* JPEG: each component's sampling factors (horizontal, vertical) */
    uint8_t sof;   /* JPEG: the frame marker's process, 0xC0 + sof (0 baseline, 2 progressive) */
    bool ycbcr;    /* JPEG with 3 components that libjpeg decodes as YCbCr (JFIF, Adobe
                      transform 1, or component ids that are not 'R','G','B') */
    bool complete; /* JPEG: an EOI marker follows the first scan (none when the stream is cut) */
} sl__decode_image_info;

/* Parses only the headers: fills *info or returns SL_EFORMAT with the reason in why. */
sl_status sl__decode_image_peek(const uint8_t *data, size_t size, sl__img_type type, bool orient,
                                int64_t max_pixels, sl__decode_image_info *info, char *why,
                                size_t why_size);

/* Asks for the bytes the peek reads (the first 512 and the last), without waiting: called for a
 * whole batch before its peeks, the records' cache misses overlap instead of coming one by one. */
void sl__decode_image_prefetch(const uint8_t *data, size_t size);

/* "RGB" -> SL__IMG_RGB, ...; -1 when unknown. */
int sl__decode_image_type(const char *name);

#ifdef __cplusplus
}
#endif
#endif
