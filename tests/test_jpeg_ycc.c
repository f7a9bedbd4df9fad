/* SPDX-License-Identifier: Apache-2.0 */
/* src/ops/jpeg_ycc.h against libjpeg-turbo itself: a JPEG's planes as stored (libjpeg's raw data
 * output, which is what nvJPEG's NVJPEG_OUTPUT_YUV returns), upsampled and converted by
 * sl__ycc_pixel, must equal libjpeg-turbo's own RGB and BGR decodes byte for byte. Over the
 * DALI_extra photos and JPEGs encoded here with every chroma layout libjpeg upsamples differently
 * (4:4:4, 4:2:2, 4:4:0, 4:2:0, 4:1:1, 4:1:0) at sizes with odd edges and chroma planes of <= 2
 * columns. Also: the header peek's colour-space guess (YCbCr unless Adobe transform 0 or
 * 'R','G','B' component ids, as libjpeg guesses) and the layouts jpeg_ycc.h declines. */
#include "check.h"
#include "jpegref.h"

#include "io/image_info.h"
#include "ops/jpeg_ycc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

/* A test picture: smooth ramps, noise and hard colour edges (where upsamplers differ most). */
static uint8_t *picture(int w, int h) {
    uint8_t *p = malloc((size_t)w * h * 3);
    unsigned s = 12345;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            s = s * 1103515245u + 12345u;
            uint8_t *q = p + ((size_t)y * w + x) * 3;
            int block = ((x / 3) + (y / 5)) & 1;
            q[0] = (uint8_t)(block ? 230 : (x * 255) / (w > 1 ? w - 1 : 1));
            q[1] = (uint8_t)(block ? 20 : (y * 255) / (h > 1 ? h - 1 : 1));
            q[2] = (uint8_t)((s >> 16) & 255);
        }
    return p;
}

/* Encodes the test picture: luma factors (hy, vy), chroma 1x1; rgb_space: an Adobe RGB JPEG. */
static unsigned char *encode(int w, int h, int hy, int vy, int rgb_space, size_t *size) {
    uint8_t *px = picture(w, h);
    uint8_t *d = jref_encode(px, w, h, rgb_space ? 1 : hy, rgb_space ? 1 : vy,
                             rgb_space ? JREF_RGB_SPACE : 0, size);
    free(px);
    return d;
}

/* libjpeg's own decode to RGB (or BGR). */
static uint8_t *decode_rgb(const unsigned char *d, size_t n, int bgr) {
    int64_t h, w;
    return jref_decode(d, n, bgr ? JCS_EXT_BGR : JCS_RGB, &h, &w, NULL, NULL);
}

/* The planes as stored: libjpeg's raw data output, each plane padded to whole blocks. */
typedef struct planes {
    uint8_t *p[3];
    int64_t pitch[3];
} planes;

static void decode_raw(const unsigned char *d, size_t n, planes *pl) {
    struct jpeg_decompress_struct c;
    struct jpeg_error_mgr jerr;
    c.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&c);
    jpeg_mem_src(&c, d, (unsigned long)n);
    jpeg_read_header(&c, TRUE);
    c.raw_data_out = TRUE;
    jpeg_start_decompress(&c);
    int rows_per_call = c.max_v_samp_factor * DCTSIZE;
    int64_t total_rows[3];
    for (int k = 0; k < 3; k++) {
        jpeg_component_info *ci = &c.comp_info[k];
        pl->pitch[k] = (int64_t)ci->width_in_blocks * DCTSIZE;
        total_rows[k] = ((int64_t)c.output_height + rows_per_call - 1) / rows_per_call *
                        ci->v_samp_factor * DCTSIZE;
        pl->p[k] = calloc((size_t)(pl->pitch[k] * total_rows[k]), 1);
    }
    JSAMPROW rowsets[3][4 * DCTSIZE];
    JSAMPARRAY arrays[3] = {rowsets[0], rowsets[1], rowsets[2]};
    for (int64_t done = 0; c.output_scanline < c.output_height; done++) {
        for (int k = 0; k < 3; k++) {
            int rk = c.comp_info[k].v_samp_factor * DCTSIZE;
            for (int r = 0; r < rk; r++) rowsets[k][r] = pl->p[k] + (done * rk + r) * pl->pitch[k];
        }
        jpeg_read_raw_data(&c, arrays, (JDIMENSION)rows_per_call);
    }
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
}

/* Upsamples + converts the raw planes with jpeg_ycc.h; compares with libjpeg's RGB and BGR. */
static void compare(const char *what, const unsigned char *d, size_t n) {
    sl__decode_image_info info;
    char why[256];
    CHECK_MSG(sl__decode_image_peek(d, n, SL__IMG_RGB, false, 0, &info, why, sizeof why) == SL_OK,
              "%s: %s", what, why);
    CHECK_MSG(info.ycbcr, "%s: peek says not YCbCr", what);
    sl__ycc_layout l;
    const bool have_layout = sl__ycc_layout_of(info.h, info.w, (const uint8_t(*)[2])info.samp, &l);
    CHECK_MSG(have_layout, "%s: layout", what);
    if (!info.ycbcr || !have_layout) return; /* l is not set without a layout */
    planes pl;
    decode_raw(d, n, &pl);
    for (int bgr = 0; bgr < 2; bgr++) {
        uint8_t *ref = decode_rgb(d, n, bgr);
        int64_t bad = 0, first = -1;
        for (int y = 0; y < l.h; y++)
            for (int x = 0; x < l.w; x++) {
                uint8_t px[3];
                sl__ycc_pixel(pl.p[0], pl.pitch[0], pl.p[1], pl.p[2], pl.pitch[1], &l, y, x, bgr,
                              px);
                const uint8_t *r = ref + ((int64_t)y * l.w + x) * 3;
                if (memcmp(px, r, 3)) {
                    if (first < 0) first = (int64_t)y * l.w + x;
                    bad++;
                }
            }
        CHECK_MSG(bad == 0, "%s %s (%dx%d, mode %d): %lld pixels differ, first at (%lld, %lld)",
                  what, bgr ? "BGR" : "RGB", l.w, l.h, l.mode, (long long)bad,
                  (long long)(first / l.w), (long long)(first % l.w));
        free(ref);
    }
    for (int k = 0; k < 3; k++) free(pl.p[k]);
}

int main(void) {
    static const char *const photos[] = {"padlock-406986_640.jpg", "site-1534685_1280.jpg",
                                         "snail-4291306_1280.jpg", "swan-3584559_640.jpg"};
    for (int i = 0; i < 4; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "dali_extra/jpeg/%s", photos[i]);
        size_t n = 0;
        unsigned char *d = check_read_file(fixture(rel), &n);
        CHECK_MSG(d != NULL, "cannot read %s", rel);
        if (d) compare(photos[i], d, n);
        free(d);
    }
    static const int layouts[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 1}, {4, 2}};
    static const int sizes[][2] = {{37, 23}, {64, 48}, {5, 3}, {3, 7}, {1, 1}, {17, 200}, {2, 9}};
    int cases = 0;
    for (size_t a = 0; a < sizeof layouts / sizeof *layouts; a++)
        for (size_t b = 0; b < sizeof sizes / sizeof *sizes; b++) {
            size_t n = 0;
            int w = sizes[b][0], h = sizes[b][1];
            unsigned char *d = encode(w, h, layouts[a][0], layouts[a][1], 0, &n);
            char what[64];
            snprintf(what, sizeof what, "%dx%d sampling %dx%d", w, h, layouts[a][0], layouts[a][1]);
            compare(what, d, n);
            free(d);
            cases++;
        }
    /* an Adobe RGB JPEG (transform 0) is not YCbCr: the peek says so, callers decode it another way
     */
    size_t n = 0;
    unsigned char *d = encode(20, 10, 1, 1, 1, &n);
    sl__decode_image_info info;
    char why[256];
    CHECK_OK(sl__decode_image_peek(d, n, SL__IMG_RGB, false, 0, &info, why, sizeof why), NULL);
    CHECK_MSG(!info.ycbcr, "Adobe transform 0 taken for YCbCr");
    free(d);
    /* layouts libjpeg does not upsample by whole ratios, or with luma not the largest, are declined
     */
    sl__ycc_layout l;
    const uint8_t odd[3][2] = {{3, 1}, {2, 1}, {2, 1}}, small_y[3][2] = {{1, 1}, {2, 2}, {2, 2}},
                  mixed[3][2] = {{2, 2}, {1, 1}, {2, 1}};
    CHECK(!sl__ycc_layout_of(10, 10, odd, &l));
    CHECK(!sl__ycc_layout_of(10, 10, small_y, &l));
    CHECK(!sl__ycc_layout_of(10, 10, mixed, &l));
    printf("jpeg_ycc: 4 photos and %d encoded layouts x sizes equal libjpeg-turbo's RGB and BGR\n",
           cases);
    return check_done();
}
