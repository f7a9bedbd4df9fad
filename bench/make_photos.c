/* SPDX-License-Identifier: Apache-2.0 */
/* Makes a folder of photo-sized JPEGs for the GPU benchmarks and tests, with libjpeg-turbo and
 * nothing else: CLASSES subfolders of PER JPEGs each, sized as ImageNet's photos are (about
 * 500 x 375, landscape or portrait, every size different), baseline 4:2:0 at quality 90. Each
 * picture is smooth colour fields, a few hard-edged shapes and grain, so that the entropy-coded
 * data and the files' sizes (about 50-80 KB) are a photo's rather than a flat test card's.
 * The same SEED gives the same bytes.
 * usage: build/make_photos DIR CLASSES PER [SEED]   (`make bench` builds it; or on its own:
 *        gcc -O2 bench/make_photos.c -ljpeg -lm -o make_photos) */
#include <stdio.h>
#include <jpeglib.h>
#include <math.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rng_state;

static uint32_t next(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static double unit(void) {
    return next() / 4294967296.0;
}

static int paint(const char *path, int w, int h) {
    unsigned char *px = malloc((size_t)w * h * 3);
    if (!px) return -1;
    double fx[3][3], fy[3][3], ph[3][3], base[3];
    for (int c = 0; c < 3; c++) {
        base[c] = 60 + 120 * unit();
        for (int k = 0; k < 3; k++)
            fx[c][k] = 0.002 + 0.03 * unit(), fy[c][k] = 0.002 + 0.03 * unit(),
            ph[c][k] = 6.283 * unit();
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                double v = base[c];
                for (int k = 0; k < 3; k++) v += 30 * sin(fx[c][k] * x + fy[c][k] * y + ph[c][k]);
                px[((size_t)y * w + x) * 3 + c] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    int shapes = 3 + (int)(next() % 6);
    for (int s = 0; s < shapes; s++) { /* discs and boxes with hard edges */
        int cx = (int)(next() % (unsigned)w), cy = (int)(next() % (unsigned)h);
        int r = 10 + (int)(next() % (unsigned)(w / 4));
        unsigned char col[3] = {(unsigned char)next(), (unsigned char)next(),
                                (unsigned char)next()};
        bool disc = next() & 1;
        for (int y = cy - r; y < cy + r; y++)
            for (int x = cx - r; x < cx + r; x++) {
                if (x < 0 || y < 0 || x >= w || y >= h) continue;
                if (disc && (x - cx) * (x - cx) + (y - cy) * (y - cy) > r * r) continue;
                memcpy(&px[((size_t)y * w + x) * 3], col, 3);
            }
    }
    for (size_t i = 0; i < (size_t)w * h * 3; i++) { /* grain */
        int v = px[i] + (int)(next() % 49) - 24;
        px[i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(px);
        return -1;
    }
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo); /* baseline, 4:2:0 */
    jpeg_set_quality(&cinfo, 90, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = &px[(size_t)cinfo.next_scanline * w * 3];
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) bad = 1;
    free(px);
    return bad ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIR CLASSES PER [SEED]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    int classes = atoi(argv[2]), per = atoi(argv[3]);
    rng_state = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
    if (classes < 1 || per < 1) {
        fprintf(stderr, "%s: CLASSES and PER must be positive\n", argv[0]);
        return 2;
    }
    mkdir(dir, 0755);
    char path[4096];
    for (int c = 0; c < classes; c++) {
        snprintf(path, sizeof path, "%s/class%03d", dir, c);
        if (mkdir(path, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "%s: cannot make %s\n", argv[0], path);
            return 1;
        }
        for (int i = 0; i < per; i++) {
            int a = 400 + (int)(next() % 101), b = 300 + (int)(next() % 76);
            bool portrait = next() % 4 == 0;
            snprintf(path, sizeof path, "%s/class%03d/img%05d.jpg", dir, c, i);
            if (paint(path, portrait ? b : a, portrait ? a : b) != 0) {
                fprintf(stderr, "%s: cannot write %s\n", argv[0], path);
                return 1;
            }
        }
    }
    return 0;
}
