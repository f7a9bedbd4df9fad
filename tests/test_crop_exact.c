/* SPDX-License-Identifier: Apache-2.0 */
/* The cropped JPEG decode (decoders.image_random_crop's CPU path: jpeg_crop_scanline +
 * jpeg_skip_scanlines in decode_image_cpu.c) against libjpeg-turbo's full decode cut to the same
 * window, byte for byte, RGB and GRAY, for the four DALI_extra photos (4:2:0, sizes multiples of
 * 16 wide) and small JPEGs encoded here with every common sampling (4:2:0, 4:2:2, 4:4:0, 4:4:4,
 * 4:1:1, gray, progressive) at sizes that are not iMCU multiples; many windows per image: random
 * ones from a fixed seed plus edge cases in each direction (at 0, at iMCU multiples and one
 * either side, reaching the right or bottom edge, 1..3 pixels wide or tall, the whole image). */
#include "check.h"
#include "jpegref.h"
#include "opharness.h"
#include "io/image_info.h"
#include "ops/decode_image_cpu.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const JPEGS[] = {
    "dali_extra/jpeg/swan-3584559_640.jpg", "dali_extra/jpeg/padlock-406986_640.jpg",
    "dali_extra/jpeg/site-1534685_1280.jpg", "dali_extra/jpeg/snail-4291306_1280.jpg"};
#define NFILES 4

typedef struct span {
    int64_t at, len;
} span;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static int64_t below(int64_t n) { /* splitmix64, uniform enough for picking windows */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (int64_t)((z ^ (z >> 31)) % (uint64_t)n);
}

/* Edge cases along one axis of extent n with iMCU size m: windows starting at 0, at multiples of
   m and of m/2 (the 8-pixel blocks of a subsampled image) and one either side, of lengths 1..3,
   m +/- 1, ending at the far edge or one iMCU short of it, and the whole extent. */
static int edge_spans(int64_t n, int m, span *out) {
    int64_t starts[64], k = 0;
    const int64_t bases[] = {0, m / 2, m, 2 * m, (n / 2 / m) * m, (n / m - 1) * m, (n / m) * m};
    for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
        for (int d = -1; d <= 1; d++) starts[k++] = bases[b] + d;
    starts[k++] = n - 1, starts[k++] = n - 2, starts[k++] = n - 3;
    int cnt = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t x = starts[i];
        if (x < 0 || x >= n) continue;
        const int64_t lens[] = {1,     2,         3,         m - 1,         m + 1,
                                n - x, n - x - 1, n - x - m, n - x - m + 1, 1 + below(n - x)};
        for (size_t j = 0; j < sizeof lens / sizeof *lens; j++)
            if (lens[j] >= 1 && x + lens[j] <= n) out[cnt++] = (span){x, lens[j]};
    }
    out[cnt++] = (span){0, n};
    return cnt;
}

/* A (h, w) test picture with smooth gradients, sharp edges and noise in all three channels, so
   chroma differs from sample to sample; encoded with the given luma sampling factors. */
static uint8_t *encode(int64_t w, int64_t h, int hs, int vs, bool gray, bool progressive,
                       size_t *n) {
    uint8_t *px = malloc((size_t)(w * h * 3));
    for (int64_t y = 0; y < h; y++)
        for (int64_t x = 0; x < w; x++) {
            uint8_t *p = px + (y * w + x) * 3;
            int noise = (int)below(64);
            p[0] = (uint8_t)((x * 255 / w + noise) & 255);
            p[1] = (uint8_t)(((x / 3 + y / 5) % 2) ? 220 - noise : 30 + noise);
            p[2] = (uint8_t)((y * 255 / h + 3 * noise) & 255);
        }
    uint8_t *d = jref_encode(px, w, h, hs, vs,
                             (gray ? JREF_GRAY : 0) | (progressive ? JREF_PROGRESSIVE : 0), n);
    free(px);
    return d;
}

/* decodes the window with the library's crop path and compares it with ref; 1 when equal */
static int one_window(sl__decode_image_worker *wk, const uint8_t *d, size_t n,
                      const sl__decode_image_info *info, sl__img_type type, const uint8_t *ref,
                      sl__decode_image_roi roi, const char *file, uint8_t *out) {
    char why[256] = "";
    int c = info->c;
    sl_status st = sl__decode_image_run(wk, d, n, info, type, &roi, false, out, why, sizeof why);
    CHECK_MSG(st == SL_OK, "%s: %s", file, why);
    if (st != SL_OK) return 0;
    int64_t bad = 0, fy = -1, fx = -1, maxd = 0;
    for (int64_t y = 0; y < roi.h; y++) {
        const uint8_t *r = ref + ((roi.y + y) * info->w + roi.x) * c, *o = out + y * roi.w * c;
        for (int64_t i = 0; i < roi.w * c; i++) {
            if (r[i] == o[i]) continue;
            int64_t dd = r[i] > o[i] ? r[i] - o[i] : o[i] - r[i];
            if (dd > maxd) maxd = dd;
            if (!bad++) fy = y, fx = i / c;
        }
    }
    CHECK_MSG(bad == 0,
              "%s %s window y=%lld x=%lld h=%lld w=%lld: %lld values differ (max %lld), first at "
              "window (%lld, %lld)",
              file, type == SL__IMG_GRAY ? "GRAY" : "RGB", (long long)roi.y, (long long)roi.x,
              (long long)roi.h, (long long)roi.w, (long long)bad, (long long)maxd, (long long)fy,
              (long long)fx);
    return bad == 0;
}

static int64_t windows, exact;

/* all windows of one JPEG (extra: how many random ones), RGB and GRAY */
static void check_jpeg(sl__decode_image_worker *wk, const uint8_t *d, size_t n, const char *name,
                       int extra) {
    for (int t = 0; t < 2; t++) {
        sl__img_type type = t ? SL__IMG_GRAY : SL__IMG_RGB;
        sl__decode_image_info info;
        char why[256] = "";
        CHECK_OK(sl__decode_image_peek(d, n, type, true, 0, &info, why, sizeof why), NULL);
        CHECK_EQ_INT(info.orientation, 1); /* else the crop path is not the one under test */
        int64_t h, w;
        int mw, mh;
        uint8_t *ref = jref_decode(d, n, t ? JCS_GRAYSCALE : JCS_RGB, &h, &w, &mw, &mh);
        CHECK_EQ_INT(h, info.h);
        CHECK_EQ_INT(w, info.w);
        CHECK_EQ_INT(info.c, t ? 1 : 3);
        uint8_t *out = malloc((size_t)(h * w * info.c));
        static span xs[1024], ys[1024];
        int nx = edge_spans(w, mw, xs), ny = edge_spans(h, mh, ys);
        /* every x case with a random y case and the other way round, then random windows */
        for (int i = 0; i < nx + ny + extra; i++) {
            span sx, sy;
            if (i < nx) {
                sx = xs[i], sy = ys[below(ny)];
            } else if (i < nx + ny) {
                sx = xs[below(nx)], sy = ys[i - nx];
            } else {
                sx.len = 1 + below(w), sx.at = below(w - sx.len + 1);
                sy.len = 1 + below(h), sy.at = below(h - sy.len + 1);
            }
            sl__decode_image_roi roi = {sy.at, sx.at, sy.len, sx.len};
            windows++;
            exact += one_window(wk, d, n, &info, type, ref, roi, name, out);
        }
        /* the window (and its neighbours) in which the GPU machine's comparison found a
           difference */
        if (strstr(name, "snail") && h == 871 && w == 1280) {
            sl__decode_image_roi roi = {0, 0, 759, 934};
            for (int64_t y = 0; y + 759 <= h; y += 7)
                for (int64_t x = 0; x + 934 <= w; x += 61) {
                    roi.y = y, roi.x = x;
                    windows++;
                    exact += one_window(wk, d, n, &info, type, ref, roi, name, out);
                }
        }
        free(out);
        free(ref);
    }
}

int main(void) {
    sl_err e;
    sl__decode_image_worker *wk;
    CHECK_OK(sl__decode_image_worker_create(false, &wk, &e), &e);
    for (int k = 0; k < NFILES; k++) {
        size_t n;
        uint8_t *d = oph_read_file(fixture(JPEGS[k]), &n);
        CHECK(d != NULL);
        if (!d) continue;
        check_jpeg(wk, d, n, JPEGS[k], 100);
        free(d);
    }
    static const struct {
        int64_t w, h;
        int hs, vs;
        bool gray, progressive;
        const char *name;
    } syn[] = {
        {83, 61, 2, 2, false, false, "4:2:0 83x61"},
        {50, 35, 2, 2, false, false, "4:2:0 50x35"},
        {34, 18, 2, 2, false, false, "4:2:0 34x18"},
        {17, 17, 2, 2, false, false, "4:2:0 17x17"},
        {5, 3, 2, 2, false, false, "4:2:0 5x3"},
        {83, 61, 2, 1, false, false, "4:2:2 83x61"},
        {66, 19, 2, 1, false, false, "4:2:2 66x19"},
        {83, 61, 1, 2, false, false, "4:4:0 83x61"},
        {83, 61, 1, 1, false, false, "4:4:4 83x61"},
        {99, 21, 4, 1, false, false, "4:1:1 99x21"},
        {83, 61, 1, 1, true, false, "gray 83x61"},
        {83, 61, 2, 2, false, true, "4:2:0 prog 83x61"},
        {67, 45, 2, 1, false, true, "4:2:2 prog 67x45"},
    };
    for (size_t k = 0; k < sizeof syn / sizeof *syn; k++) {
        size_t n;
        uint8_t *d =
            encode(syn[k].w, syn[k].h, syn[k].hs, syn[k].vs, syn[k].gray, syn[k].progressive, &n);
        check_jpeg(wk, d, n, syn[k].name, 300);
        free(d);
    }
    printf("%lld windows, %lld exact\n", (long long)windows, (long long)exact);
    sl__decode_image_worker_free(wk);
    return check_done();
}
