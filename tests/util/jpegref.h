/* SPDX-License-Identifier: Apache-2.0 */
/* Reference JPEGs for tests, made and decoded with plain libjpeg-turbo (nothing of sluice's). */
#ifndef SLUICE_TESTS_JPEGREF_H
#define SLUICE_TESTS_JPEGREF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */

#include <jpeglib.h>

enum {
    JREF_GRAY = 1,        /* one component */
    JREF_PROGRESSIVE = 2, /* jpeg_simple_progression */
    JREF_RGB_SPACE = 4    /* an Adobe RGB JPEG (transform 0), components not subsampled */
};

/* Encodes the (h, w, 3) RGB picture rgb at quality 90: luma sampled (hy, vy), chroma 1x1, as flags
 * say. malloc'd; *n = its size. */
uint8_t *jref_encode(const uint8_t *rgb, int64_t w, int64_t h, int hy, int vy, int flags,
                     size_t *n);

/* libjpeg-turbo's own decode (ISLOW IDCT, fancy upsampling) to cs: (h, w, c) uint8, malloc'd.
 * mcu_w / mcu_h (may be NULL): the iMCU's extents, 8 x the largest sampling factors. */
uint8_t *jref_decode(const uint8_t *d, size_t n, J_COLOR_SPACE cs, int64_t *h, int64_t *w,
                     int *mcu_w, int *mcu_h);

#endif
