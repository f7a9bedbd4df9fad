/* SPDX-License-Identifier: Apache-2.0 */
/* The uncompressed image formats the image decoders read besides JPEG and PNG: BMP (Windows
 * bitmaps: the 12-byte core header and the 40-byte and later info headers; 1, 4 and 8 bits
 * through a palette, 16, 24 and 32 bits, plain or with bit-field masks; bottom-up or top-down)
 * and PNM (netpbm's PBM, PGM and PPM, ASCII P1-P3 and binary P4-P6, maxval up to 65535), TIFF
 * where the build has libtiff (io/image_tiff.c) and JPEG 2000 where it has OpenJPEG
 * (io/image_openjpeg.c). Pure
 * parsing of bytes with every offset checked against the record's size: a peek of the header for
 * the extents and channels, and a decode to 8-bit pixels in the file's channels. */
#ifndef SLUICE_IO_IMAGE_RAW_H
#define SLUICE_IO_IMAGE_RAW_H

#include "io/image_info.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The record starts as a BMP ("BM"), a PNM ("P1".."P6" and a whitespace), a TIFF ("II*\0",
 * "MM\0*") or a JPEG 2000 (a JP2 file's signature box, or a J2K codestream's SOC and SIZ
 * markers). */
bool sl__bmp_magic(const uint8_t *d, size_t n);
bool sl__pnm_magic(const uint8_t *d, size_t n);
bool sl__tiff_magic(const uint8_t *d, size_t n);
bool sl__jp2_magic(const uint8_t *d, size_t n);

/* Header facts: info->w, h, comps (BMP: 1 for a palette of grays, 4 for 32 bits with an alpha
 * mask, else 3; PNM: 1 for PBM and PGM, 3 for PPM), orientation 1. SL_EFORMAT with the reason in
 * why on a malformed or unsupported header (BMP's RLE and embedded JPEG/PNG). */
sl_status sl__bmp_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                       size_t why_size);
sl_status sl__pnm_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                       size_t why_size);

/* TIFF through libtiff (io/image_tiff.c, built where libtiff is found): the first image's
 * extents and channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), and its decode as below. */
sl_status sl__tiff_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                        size_t why_size);
sl_status sl__tiff_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                          uint8_t *out, char *why, size_t why_size);

/* JPEG 2000 through OpenJPEG (io/image_openjpeg.c, built where it is found): the extents and
 * channels (1 to 4 components: gray, gray+alpha, RGB, RGBA; at most 16 bits each) from the main
 * header, and the decode as below, every component scaled to 8 bits. */
sl_status sl__jp2_peek(const uint8_t *d, size_t n, sl__decode_image_info *info, char *why,
                       size_t why_size);
sl_status sl__jp2_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                         uint8_t *out, char *why, size_t why_size);

/* Decodes the whole image that the peek described (BMP, PNM or, with libtiff, TIFF and, with
 * OpenJPEG, JPEG 2000) into out: (h,
 * w, comps) uint8, top row first, channels RGB(A) or gray; BMP bit fields and PNM values above 8
 * bits scaled to 0..255, PBM's 1 (black) to 0 and 0 to 255. SL_EFORMAT with the reason in why on
 * short or malformed data. */
sl_status sl__raw_image_decode(const uint8_t *d, size_t n, const sl__decode_image_info *info,
                               uint8_t *out, char *why, size_t why_size);

#ifdef __cplusplus
}
#endif
#endif
