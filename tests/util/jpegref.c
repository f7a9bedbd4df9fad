/* SPDX-License-Identifier: Apache-2.0 */
#include "jpegref.h"

#include <stdlib.h>
#include <string.h>

uint8_t *jref_encode(const uint8_t *rgb, int64_t w, int64_t h, int hy, int vy, int flags,
                     size_t *n) {
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&ci);
    unsigned char *mem = NULL;
    unsigned long len = 0;
    jpeg_mem_dest(&ci, &mem, &len);
    ci.image_width = (JDIMENSION)w, ci.image_height = (JDIMENSION)h;
    ci.input_components = 3, ci.in_color_space = JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, 90, TRUE);
    if (flags & JREF_GRAY) jpeg_set_colorspace(&ci, JCS_GRAYSCALE);
    if (flags & JREF_RGB_SPACE) jpeg_set_colorspace(&ci, JCS_RGB);
    if (!(flags & JREF_RGB_SPACE))
        ci.comp_info[0].h_samp_factor = hy, ci.comp_info[0].v_samp_factor = vy;
    if (flags & JREF_PROGRESSIVE) jpeg_simple_progression(&ci);
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW r = (JSAMPROW)(rgb + (int64_t)ci.next_scanline * w * 3);
        jpeg_write_scanlines(&ci, &r, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    uint8_t *d = malloc(len ? len : 1);
    if (d) memcpy(d, mem, len);
    free(mem);
    *n = len;
    return d;
}

uint8_t *jref_decode(const uint8_t *d, size_t n, J_COLOR_SPACE cs, int64_t *h, int64_t *w,
                     int *mcu_w, int *mcu_h) {
    struct jpeg_decompress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, d, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    ci.out_color_space = cs;
    ci.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&ci);
    *h = ci.output_height, *w = ci.output_width;
    if (mcu_w) *mcu_w = ci.max_h_samp_factor * DCTSIZE;
    if (mcu_h) *mcu_h = ci.max_v_samp_factor * DCTSIZE;
    int c = ci.output_components;
    uint8_t *img = malloc((size_t)(*h * *w * c));
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW r = img + (int64_t)ci.output_scanline * *w * c;
        jpeg_read_scanlines(&ci, &r, 1);
    }
    jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
    return img;
}
