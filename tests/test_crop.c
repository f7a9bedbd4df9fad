/* SPDX-License-Identifier: Apache-2.0 */
/* crop (crop_mirror_normalize's cropping alone), against windows cut out here:
 * - uint8 HWC, crop=(4, 5) at the default centre: the input's type and layout, DALI's anchor
 *   round(pos * (extent - crop));
 * - float32 CHW with crop_h / crop_w and corner anchors: CHW out, values exact;
 * - dtype=types.FLOAT on uint8: the same values as float;
 * - a window larger than the image with out_of_bounds_policy="pad": fill_values around the image;
 * - errors: a window outside the image by default (naming crop and the sample), and an argument
 *   only crop_mirror_normalize has. */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 2 };

static double px(int i, int64_t y, int64_t x, int64_t c) {
    return (double)((i * 31 + y * 7 + x * 3 + c) % 200);
}

/* N images; hwc: (H, W, C) else (C, H, W) */
static void make(sl_tlist *l, sl_dtype t, bool hwc, const int64_t *hh, const int64_t *ww, int C) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++) {
        int64_t *o = shapes + 3 * i;
        if (hwc)
            o[0] = hh[i], o[1] = ww[i], o[2] = C;
        else
            o[0] = C, o[1] = hh[i], o[2] = ww[i];
    }
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "%s", hwc ? "HWC" : "CHW");
    for (int i = 0; i < N; i++)
        for (int64_t y = 0; y < hh[i]; y++)
            for (int64_t x = 0; x < ww[i]; x++)
                for (int c = 0; c < C; c++) {
                    int64_t k = hwc ? (y * ww[i] + x) * C + c : (c * hh[i] + y) * ww[i] + x;
                    if (t == SL_DTYPE_U8)
                        ((uint8_t *)l->data[i])[k] = (uint8_t)px(i, y, x, c);
                    else
                        ((float *)l->data[i])[k] = (float)px(i, y, x, c) + 0.5f;
                }
}

static const sl_tlist *run(oph *h, const char *const *argv, sl_tlist *in, sl_err *e,
                           sl_status *st) {
    *st = oph_create(h, "crop", argv, 2, N, 0, e);
    if (*st != SL_OK) return NULL;
    sl_tlist *ins[1] = {in};
    *st = oph_run(h, N, ins, 1, NULL, 0, NULL, 0, e);
    return *st == SL_OK ? &h->out[0] : NULL;
}

/* DALI's anchor for a window of len in extent n at pos */
static int64_t anchor(int64_t n, int64_t len, double pos) {
    return (int64_t)llroundf((float)(pos * (double)(n - len)));
}

int main(void) {
    const int64_t H[N] = {10, 7}, W[N] = {12, 9};
    sl_tlist u8, f32;
    make(&u8, SL_DTYPE_U8, true, H, W, 3);
    make(&f32, SL_DTYPE_F32, false, H, W, 2);
    oph h;
    sl_err e;
    sl_status st;

    const char *c1[] = {"crop=[4.0, 5.0]", NULL};
    const sl_tlist *o = run(&h, c1, &u8, &e, &st);
    CHECK_MSG(o != NULL, "%s", e.msg);
    for (int i = 0; o && i < N; i++) {
        CHECK_EQ_INT(o->dtype, SL_DTYPE_U8);
        CHECK_STR(o->layout, "HWC");
        const int64_t *sh = sl_tlist_shape(o, i);
        CHECK(sh[0] == 4 && sh[1] == 5 && sh[2] == 3);
        int64_t y0 = anchor(H[i], 4, 0.5), x0 = anchor(W[i], 5, 0.5);
        int wrong = 0;
        for (int64_t y = 0; y < 4; y++)
            for (int64_t x = 0; x < 5; x++)
                for (int c = 0; c < 3; c++)
                    wrong +=
                        ((uint8_t *)o->data[i])[(y * 5 + x) * 3 + c] != px(i, y0 + y, x0 + x, c);
        CHECK_MSG(wrong == 0, "uint8 HWC sample %d: %d wrong", i, wrong);
    }
    oph_destroy(&h);

    const char *c2[] = {"crop_h=3.0", "crop_w=2.0", "crop_pos_x=0.0", "crop_pos_y=1.0", NULL};
    o = run(&h, c2, &f32, &e, &st);
    CHECK_MSG(o != NULL, "%s", e.msg);
    for (int i = 0; o && i < N; i++) {
        CHECK_EQ_INT(o->dtype, SL_DTYPE_F32);
        CHECK_STR(o->layout, "CHW");
        const int64_t *sh = sl_tlist_shape(o, i);
        CHECK(sh[0] == 2 && sh[1] == 3 && sh[2] == 2);
        int wrong = 0;
        for (int c = 0; c < 2; c++)
            for (int64_t y = 0; y < 3; y++)
                for (int64_t x = 0; x < 2; x++)
                    wrong += ((float *)o->data[i])[(c * 3 + y) * 2 + x] !=
                             (float)px(i, H[i] - 3 + y, x, c) + 0.5f;
        CHECK_MSG(wrong == 0, "float CHW sample %d: %d wrong", i, wrong);
    }
    oph_destroy(&h);

    const char *c3[] = {"crop=[2.0, 2.0]", "dtype=types.FLOAT", NULL};
    o = run(&h, c3, &u8, &e, &st);
    if (o) {
        CHECK_EQ_INT(o->dtype, SL_DTYPE_F32);
        int64_t y0 = anchor(H[1], 2, 0.5), x0 = anchor(W[1], 2, 0.5);
        CHECK_EQ_INT(((float *)o->data[1])[3 * 3 + 2], px(1, y0 + 1, x0 + 1, 2));
    }
    CHECK(o != NULL);
    oph_destroy(&h);

    /* a 12x14 window around a 10x12 / 7x9 image: fill 7 outside */
    const char *c4[] = {"crop=[12.0, 14.0]", "out_of_bounds_policy=\"pad\"", "fill_values=[7.0]",
                        NULL};
    o = run(&h, c4, &u8, &e, &st);
    CHECK_MSG(o != NULL, "%s", e.msg);
    for (int i = 0; o && i < N; i++) {
        int64_t y0 = anchor(H[i], 12, 0.5), x0 = anchor(W[i], 14, 0.5);
        int wrong = 0;
        for (int64_t y = 0; y < 12; y++)
            for (int64_t x = 0; x < 14; x++)
                for (int c = 0; c < 3; c++) {
                    int64_t sy = y0 + y, sx = x0 + x;
                    bool in = sy >= 0 && sy < H[i] && sx >= 0 && sx < W[i];
                    wrong += ((uint8_t *)o->data[i])[(y * 14 + x) * 3 + c] !=
                             (in ? px(i, sy, sx, c) : 7);
                }
        CHECK_MSG(wrong == 0, "padded sample %d: %d wrong", i, wrong);
    }
    oph_destroy(&h);

    const char *c5[] = {"crop=[12.0, 14.0]", NULL};
    o = run(&h, c5, &u8, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "crop: sample 0: Slice can't be placed out of bounds "
                                           "with current policy. Got: window") &&
                  !check_needle_missing(e.msg, "out_of_bounds_policy=\"error\""),
              "%s", e.msg);
    oph_destroy(&h);
    const char *c6[] = {"crop=[2.0, 2.0]", "mean=[0.5]", NULL};
    CHECK_FAILS(oph_create(&h, "crop", c6, 1, N, 0, &e), SL_EINVAL, &e, "mean");
    oph_destroy(&h);

    sl_tlist_free(&u8), sl_tlist_free(&f32);
    return check_done();
}
