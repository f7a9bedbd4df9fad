/* SPDX-License-Identifier: Apache-2.0 */
/* Re-encodes JPEGs at about a given pixel count, for measuring the ImageNet-style pipeline on
 * images of ImageNet's size (about 0.2 megapixels on average) next to the DALI_extra photos
 * (0.26-1.1 MP). Each image is decoded by libjpeg-turbo at the scale k/8 (k = 1..8) whose pixel
 * count is nearest the target, and written again with sluice's encoder (baseline, 4:2:0, quality
 * 90) under the same name in OUT_DIR. usage: build/shrink_jpegs TARGET_PIXELS OUT_DIR IN.jpg... */
#include "io/jpegenc.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h: it uses FILE */

typedef struct {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
} fail_mgr;

static void on_error(j_common_ptr c) {
    longjmp(((fail_mgr *)c->err)->jump, 1);
}

/* Decodes path at the k/8 scale nearest target pixels; *rgb is malloc'd (h, w, 3). */
static int decode_scaled(const char *path, double target, uint8_t **rgb, int *w, int *h) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    struct jpeg_decompress_struct d;
    fail_mgr em;
    d.err = jpeg_std_error(&em.mgr);
    em.mgr.error_exit = on_error;
    *rgb = NULL;
    if (setjmp(em.jump)) {
        fprintf(stderr, "%s: not a JPEG libjpeg decodes\n", path);
        jpeg_destroy_decompress(&d);
        fclose(f);
        free(*rgb);
        return 1;
    }
    jpeg_create_decompress(&d);
    jpeg_stdio_src(&d, f);
    jpeg_read_header(&d, TRUE);
    double full = (double)d.image_width * d.image_height, best = -1;
    for (int k = 1; k <= 8; k++) {
        double px = full * k * k / 64.0, off = px > target ? px - target : target - px;
        if (best < 0 || off < best) {
            best = off;
            d.scale_num = (unsigned)k;
        }
    }
    d.scale_denom = 8;
    d.out_color_space = JCS_RGB;
    jpeg_start_decompress(&d);
    *w = (int)d.output_width;
    *h = (int)d.output_height;
    *rgb = malloc((size_t)*w * *h * 3);
    if (!*rgb) longjmp(em.jump, 1);
    while (d.output_scanline < d.output_height) {
        JSAMPROW row = *rgb + (size_t)d.output_scanline * *w * 3;
        jpeg_read_scanlines(&d, &row, 1);
    }
    jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    fclose(f);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s TARGET_PIXELS OUT_DIR IN.jpg...\n", argv[0]);
        return 2;
    }
    double target = atof(argv[1]);
    for (int i = 3; i < argc; i++) {
        uint8_t *rgb, *jpg;
        int w, h;
        size_t size;
        if (decode_scaled(argv[i], target, &rgb, &w, &h)) return 1;
        sl_err e;
        sl_status st = sl__jpegenc_encode(rgb, w, h, 3, 90, &jpg, &size, &e);
        free(rgb);
        if (st) {
            fprintf(stderr, "%s: %s\n", argv[i], e.msg);
            return 1;
        }
        const char *base = strrchr(argv[i], '/');
        char out[4096];
        snprintf(out, sizeof out, "%s/%s", argv[2], base ? base + 1 : argv[i]);
        FILE *f = fopen(out, "wb");
        if (!f || fwrite(jpg, 1, size, f) != size || fclose(f) != 0) {
            perror(out);
            return 1;
        }
        printf("%s: %dx%d, %zu bytes\n", out, w, h, size);
        free(jpg);
    }
    return 0;
}
