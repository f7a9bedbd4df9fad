/* SPDX-License-Identifier: Apache-2.0 */
/* resize's input window (roi_start / roi_end) and random_resized_crop, on the CPU:
 * - nearest-neighbour resampling of a whole-pixel window equals cropping the window out and
 *   resizing that (both pick floor(x0 + (o + 0.5) * w / out)), for random_resized_crop with the
 *   windows that crop_window.h draws for each sample (Philox(seed, index)) and for resize's
 *   roi_start / roi_end; the window of the whole image (roi_relative [0, 0] to [1, 1]) equals
 *   plain resize with the linear and cubic filters, byte for byte;
 * - random_resized_crop gives every sample `size`, draws windows per sample (identical inputs come
 *   out different) and repeats itself with the same seed;
 * - errors: a window whose end is not past its start (naming the sample), one beyond 1e7 pixels,
 *   size missing or < 1. */
#include "check.h"
#include "opharness.h"

#include "ops/crop_window.h"

#include <stdlib.h>
#include <string.h>

enum { N = 5 };

/* N samples of (h + 3i) x (w + 5i) x 3 uint8, a fixed pattern; same: every sample alike */
static void make(sl_tlist *l, int h, int w, bool same) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++) {
        int k = same ? 0 : i;
        shapes[3 * i] = h + 3 * k, shapes[3 * i + 1] = w + 5 * k, shapes[3 * i + 2] = 3;
    }
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    memcpy(l->layout, "HWC", 4);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i);
        for (size_t k = 0; k < n; k++)
            ((uint8_t *)l->data[i])[k] = (uint8_t)((k * 29 + (k / 7) * 13) % 251);
    }
}

/* win[4 * i ...] = (y, x, h, w): each sample's window cut out */
static void cut(const sl_tlist *in, const int64_t *win, sl_tlist *out) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++)
        shapes[3 * i] = win[4 * i + 2], shapes[3 * i + 1] = win[4 * i + 3], shapes[3 * i + 2] = 3;
    memset(out, 0, sizeof *out);
    CHECK_OK(sl_tlist_reset(out, N, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(out, shapes, &e), &e);
    memcpy(out->layout, "HWC", 4);
    for (int i = 0; i < N; i++) {
        int64_t W = sl_tlist_shape(in, i)[1];
        for (int64_t y = 0; y < win[4 * i + 2]; y++)
            memcpy((uint8_t *)out->data[i] + y * win[4 * i + 3] * 3,
                   (const uint8_t *)in->data[i] + ((win[4 * i] + y) * W + win[4 * i + 1]) * 3,
                   (size_t)win[4 * i + 3] * 3);
    }
}

/* op over in (seed 11); its output moved into *out */
static sl_status run(const char *op, const char *const *argv, sl_tlist *in, sl_tlist *out,
                     sl_err *e) {
    oph h;
    sl_status st = oph_create(&h, op, argv, 2, N, 11, e);
    if (st != SL_OK) return st;
    sl_tlist *ins[1] = {in};
    st = oph_run(&h, N, ins, 1, NULL, 0, NULL, 0, e);
    if (st == SL_OK) *out = h.out[0], memset(&h.out[0], 0, sizeof h.out[0]);
    oph_destroy(&h);
    return st;
}

static void check_same(const char *what, const sl_tlist *a, const sl_tlist *b) {
    CHECK_EQ_INT(a->count, b->count);
    for (int i = 0; i < a->count && i < b->count; i++) {
        size_t n = sl_tlist_sample_nbytes(a, i);
        CHECK_MSG(n == sl_tlist_sample_nbytes(b, i) && !memcmp(a->data[i], b->data[i], n),
                  "%s: sample %d differs", what, i);
    }
}

int main(void) {
    sl_tlist img, same, got, want, cropped;
    sl_err e;
    make(&img, 40, 57, false);
    make(&same, 40, 57, true);

    /* random_resized_crop NN = crop_window.h's windows cut out, then resized NN */
    const char *rrc[] = {"size=[24, 31]", "interp_type=types.INTERP_NN", NULL};
    CHECK_OK(run("random_resized_crop", rrc, &img, &got, &e), &e);
    sl__crop_window_cfg cfg = {{0.08, 1.0}, {0.75, 1.333333}, 10};
    int64_t win[4 * N];
    for (int i = 0; i < N; i++) {
        const int64_t *sh = sl_tlist_shape(&img, i);
        sl__crop_window w = sl__crop_window_draw(&cfg, 11, i, sh[0], sh[1]);
        win[4 * i] = w.y, win[4 * i + 1] = w.x, win[4 * i + 2] = w.h, win[4 * i + 3] = w.w;
        CHECK_EQ_INT(sl_tlist_shape(&got, i)[0], 24);
        CHECK_EQ_INT(sl_tlist_shape(&got, i)[1], 31);
    }
    cut(&img, win, &cropped);
    const char *nn[] = {"size=[24.0, 31.0]", "interp_type=types.INTERP_NN", NULL};
    CHECK_OK(run("resize", nn, &cropped, &want, &e), &e);
    check_same("random_resized_crop NN vs crop + resize", &got, &want);
    sl_tlist_free(&got), sl_tlist_free(&want), sl_tlist_free(&cropped);

    /* resize's own window, whole pixels */
    const char *roi[] = {"size=[17.0, 45.0]", "interp_type=types.INTERP_NN", "roi_start=[5, 9]",
                         "roi_end=[33, 50]", NULL};
    CHECK_OK(run("resize", roi, &img, &got, &e), &e);
    for (int i = 0; i < N; i++)
        win[4 * i] = 5, win[4 * i + 1] = 9, win[4 * i + 2] = 28, win[4 * i + 3] = 41;
    cut(&img, win, &cropped);
    const char *nn2[] = {"size=[17.0, 45.0]", "interp_type=types.INTERP_NN", NULL};
    CHECK_OK(run("resize", nn2, &cropped, &want, &e), &e);
    check_same("resize roi NN vs crop + resize", &got, &want);
    sl_tlist_free(&got), sl_tlist_free(&want), sl_tlist_free(&cropped);

    /* the whole image as the window changes nothing, with smooth filters too */
    const char *filters[2] = {"interp_type=types.INTERP_LINEAR", "interp_type=types.INTERP_CUBIC"};
    for (int f = 0; f < 2; f++) {
        const char *whole[] = {"resize_shorter=23",  filters[f],          "roi_start=[0.0, 0.0]",
                               "roi_end=[1.0, 1.0]", "roi_relative=True", NULL};
        const char *plain[] = {"resize_shorter=23", filters[f], NULL};
        CHECK_OK(run("resize", whole, &img, &got, &e), &e);
        CHECK_OK(run("resize", plain, &img, &want, &e), &e);
        check_same(filters[f], &got, &want);
        sl_tlist_free(&got), sl_tlist_free(&want);
    }

    /* windows per sample; the same seed, the same output */
    const char *lin[] = {"size=20", NULL};
    CHECK_OK(run("random_resized_crop", lin, &same, &got, &e), &e);
    CHECK_OK(run("random_resized_crop", lin, &same, &want, &e), &e);
    check_same("random_resized_crop twice", &got, &want);
    int differ = 0;
    for (int i = 1; i < N; i++) differ += memcmp(got.data[0], got.data[i], 20 * 20 * 3) != 0;
    CHECK_MSG(differ >= 3, "identical inputs: only %d of %d samples differ from the first", differ,
              N - 1);
    sl_tlist_free(&got), sl_tlist_free(&want);

    /* errors */
    const char *back[] = {"size=[8.0, 8.0]", "roi_start=[10, 10]", "roi_end=[10, 30]", NULL};
    CHECK_FAILS(run("resize", back, &img, &got, &e), SL_EINVAL, &e, "an empty window");
    CHECK_MSG(strstr(e.msg, "sample 0") != NULL, "%s", e.msg);
    const char *far[] = {"size=[8.0, 8.0]", "roi_start=[0, 0]", "roi_end=[1e300, 30]", NULL};
    CHECK_FAILS(run("resize", far, &img, &got, &e), SL_EINVAL, &e, "within 1e7 pixels");
    const char *nosize[] = {NULL};
    CHECK_FAILS(run("random_resized_crop", nosize, &img, &got, &e), SL_EINVAL, &e, "size");
    const char *zero[] = {"size=[0, 8]", NULL};
    CHECK_FAILS(run("random_resized_crop", zero, &img, &got, &e), SL_EINVAL, &e, "from 1 to 1e7");

    sl_tlist_free(&img);
    sl_tlist_free(&same);
    return check_done();
}
