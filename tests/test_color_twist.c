/* SPDX-License-Identifier: Apache-2.0 */
/* color_twist and hsv against what their YIQ maps must do:
 * - the neutral arguments leave uint8 images unchanged (the matrix is the identity to float
 *   rounding);
 * - saturation 0 makes every pixel grey: its three channels within 1 of each other and of the
 *   luma .299 R + .587 G + .114 B (DALI's YIQ rows for I and Q sum to 0.001 and -0.001, not 0, so
 *   a grey pixel keeps a trace of I and Q, and rounding may part the channels by 1);
 * - contrast 0 gives a uniform half range (128 for uint8, 0.5 for float) times brightness;
 *   brightness 0 gives black; brightness 2 on float doubles every value;
 * - any hue leaves grey pixels as they were, within 1 (rotating I and Q moves next to nothing when
 *   both are all but 0);
 *   hue 360 is the identity (within 1);
 * - hsv's value 0.5 halves every channel (within 1);
 * - a per-sample hue input (0 for some samples) changes only the other samples;
 * - uint8 -> float output keeps values on the input's scale; shapes and layouts are kept;
 * - hue and saturation, the ops, equal hsv given that one argument;
 * - errors: 4 channels (naming the sample), channels not last. */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4 };

/* N samples of (h + i) x w x c, values from a fixed pattern; grey: R = G = B */
static void make(sl_tlist *l, sl_dtype t, int h, int w, int c, const char *layout, bool grey) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++) shapes[3 * i] = h + i, shapes[3 * i + 1] = w, shapes[3 * i + 2] = c;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "%s", layout);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i) / sl_dtype_size(t);
        for (size_t k = 0; k < n; k++) {
            size_t q = grey ? k / (size_t)c : k;
            int v = (int)((q * 37 + (size_t)i * 11) % 256);
            if (t == SL_DTYPE_U8) ((uint8_t *)l->data[i])[k] = (uint8_t)v;
            if (t == SL_DTYPE_F32) ((float *)l->data[i])[k] = (float)v / 256.0f;
        }
    }
}

static sl_tlist *run(oph *h, const char *op, const char *const *argv, sl_tlist *in, sl_tlist *arg,
                     sl_err *e, sl_status *st) {
    *st = oph_create(h, op, argv, 3, N, 1, e);
    CHECK_MSG(*st == SL_OK, "%s", e->msg);
    if (*st != SL_OK) return NULL;
    sl_tlist *ins[1] = {in}, *args[1] = {arg};
    *st = oph_run(h, N, ins, 1, args, arg ? 1 : 0, NULL, 0, e);
    return *st == SL_OK ? &h->out[0] : NULL;
}

static double at(const sl_tlist *l, int i, size_t k) {
    return l->dtype == SL_DTYPE_U8 ? ((const uint8_t *)l->data[i])[k]
                                   : ((const float *)l->data[i])[k];
}

/* the worst |out - f(in, k)| over all samples and elements */
static double worst(const sl_tlist *o, const sl_tlist *in,
                    double (*f)(const sl_tlist *, int, size_t)) {
    double w = 0;
    for (int i = 0; o && i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(in, i) / sl_dtype_size(in->dtype);
        for (size_t k = 0; k < n; k++) w = fmax(w, fabs(at(o, i, k) - f(in, i, k)));
    }
    return o ? w : INFINITY;
}

static double same(const sl_tlist *in, int i, size_t k) {
    return at(in, i, k);
}
static double luma(const sl_tlist *in, int i, size_t k) {
    size_t p = k / 3 * 3;
    return .299 * at(in, i, p) + .587 * at(in, i, p + 1) + .114 * at(in, i, p + 2);
}
static double half(const sl_tlist *in, int i, size_t k) {
    (void)in, (void)i, (void)k;
    return 128;
}
static double zero(const sl_tlist *in, int i, size_t k) {
    (void)in, (void)i, (void)k;
    return 0;
}
static double twice(const sl_tlist *in, int i, size_t k) {
    return 2 * at(in, i, k);
}
static double halved(const sl_tlist *in, int i, size_t k) {
    return at(in, i, k) / 2;
}

int main(void) {
    sl_tlist img, grey, fimg;
    make(&img, SL_DTYPE_U8, 5, 7, 3, "HWC", false);
    make(&grey, SL_DTYPE_U8, 4, 6, 3, "HWC", true);
    make(&fimg, SL_DTYPE_F32, 5, 7, 3, "HWC", false);
    oph h;
    sl_err e;
    sl_status st;
    const sl_tlist *o;

    const char *none[] = {NULL};
    o = run(&h, "color_twist", none, &img, NULL, &e, &st);
    CHECK_EQ_INT(worst(o, &img, same) == 0, 1);
    if (o) CHECK(o->dtype == SL_DTYPE_U8 && !strcmp(o->layout, "HWC") && o->ndim == 3);
    oph_destroy(&h);
    o = run(&h, "hsv", none, &img, NULL, &e, &st);
    CHECK_EQ_INT(worst(o, &img, same) == 0, 1);
    oph_destroy(&h);

    const char *sat0[] = {"saturation=0.0", NULL};
    o = run(&h, "color_twist", sat0, &img, NULL, &e, &st);
    CHECK_MSG(worst(o, &img, luma) <= 1.5, "saturation 0: %g off the luma", worst(o, &img, luma));
    for (int i = 0; o && i < N; i++) /* grey: R = G = B, but for rounding (see the top) */
        for (size_t k = 0; k < sl_tlist_sample_nbytes(o, i); k += 3)
            CHECK(fabs(at(o, i, k) - at(o, i, k + 1)) <= 1 &&
                  fabs(at(o, i, k) - at(o, i, k + 2)) <= 1);
    oph_destroy(&h);

    const char *c0[] = {"contrast=0.0", NULL};
    o = run(&h, "color_twist", c0, &img, NULL, &e, &st);
    CHECK_EQ_INT(worst(o, &img, half) == 0, 1);
    oph_destroy(&h);
    const char *b0[] = {"brightness=0.0", NULL};
    o = run(&h, "color_twist", b0, &img, NULL, &e, &st);
    CHECK_EQ_INT(worst(o, &img, zero) == 0, 1);
    oph_destroy(&h);
    const char *b2[] = {"brightness=2.0", NULL};
    o = run(&h, "color_twist", b2, &fimg, NULL, &e, &st);
    CHECK_MSG(worst(o, &fimg, twice) <= 1e-5, "brightness 2 on float: %g", worst(o, &fimg, twice));
    oph_destroy(&h);

    const char *hue[] = {"hue=73.0", "saturation=1.7", NULL};
    o = run(&h, "color_twist", hue, &grey, NULL, &e, &st);
    CHECK_MSG(worst(o, &grey, same) <= 1, "hue on grey: %g", worst(o, &grey, same));
    oph_destroy(&h);
    const char *h360[] = {"hue=360.0", NULL};
    o = run(&h, "hsv", h360, &img, NULL, &e, &st);
    CHECK_MSG(worst(o, &img, same) <= 1, "hue 360: %g", worst(o, &img, same));
    oph_destroy(&h);
    const char *v05[] = {"value=0.5", NULL};
    o = run(&h, "hsv", v05, &img, NULL, &e, &st);
    CHECK_MSG(worst(o, &img, halved) <= 1, "value 0.5: %g", worst(o, &img, halved));
    oph_destroy(&h);

    /* a per-sample hue: 0 (unchanged) for samples 0 and 2, 90 for 1 and 3 */
    sl_tlist hues;
    int64_t one[N] = {1, 1, 1, 1};
    memset(&hues, 0, sizeof hues);
    CHECK_OK(sl_tlist_reset(&hues, N, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&hues, one, &e), &e);
    for (int i = 0; i < N; i++) ((float *)hues.data[i])[0] = i % 2 ? 90.0f : 0.0f;
    const char *ph[] = {"hue=@0", NULL};
    o = run(&h, "hsv", ph, &img, &hues, &e, &st);
    for (int i = 0; o && i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(o, i);
        bool unchanged = memcmp(o->data[i], img.data[i], n) == 0;
        CHECK_MSG(unchanged == (i % 2 == 0), "sample %d: hue %d", i, i % 2 ? 90 : 0);
    }
    oph_destroy(&h);
    sl_tlist_free(&hues);

    const char *tof[] = {"dtype=types.FLOAT", NULL};
    o = run(&h, "color_twist", tof, &img, NULL, &e, &st);
    if (o) CHECK(o->dtype == SL_DTYPE_F32);
    CHECK_MSG(worst(o, &img, same) <= 1e-3, "uint8 -> float: %g", worst(o, &img, same));
    oph_destroy(&h);

    /* hue and saturation alone: hsv with the one argument, bit for bit */
    const char *pairs[2][2] = {{"hue", "hue=-33.0"}, {"saturation", "saturation=0.4"}};
    for (int k = 0; k < 2; k++) {
        const char *arg[] = {pairs[k][1], NULL};
        sl_tlist a;
        o = run(&h, pairs[k][0], arg, &img, NULL, &e, &st);
        if (o) a = *o, memset(&h.out[0], 0, sizeof h.out[0]);
        oph_destroy(&h);
        o = run(&h, "hsv", arg, &img, NULL, &e, &st);
        for (int i = 0; o && st == SL_OK && i < N; i++)
            CHECK_MSG(!memcmp(a.data[i], o->data[i], sl_tlist_sample_nbytes(o, i)),
                      "%s: sample %d differs from hsv's", pairs[k][0], i);
        CHECK_MSG(worst(o, &img, same) > 0, "%s changed nothing", pairs[k][1]);
        oph_destroy(&h);
        sl_tlist_free(&a);
    }

    /* errors */
    sl_tlist rgba, flat;
    make(&rgba, SL_DTYPE_U8, 3, 3, 4, "HWC", false);
    CHECK_OK(oph_create(&h, "color_twist", none, 1, N, 1, &e), &e);
    sl_tlist *ins[1] = {&rgba};
    CHECK_FAILS(oph_run(&h, N, ins, 1, NULL, 0, NULL, 0, &e), SL_EINVAL, &e, "4 channels");
    CHECK_MSG(strstr(e.msg, "sample 0") != NULL, "%s", e.msg);
    oph_destroy(&h);
    make(&flat, SL_DTYPE_U8, 3, 3, 3, "CHW", false);
    CHECK_OK(oph_create(&h, "hsv", none, 1, N, 1, &e), &e);
    ins[0] = &flat;
    CHECK_FAILS(oph_run(&h, N, ins, 1, NULL, 0, NULL, 0, &e), SL_EINVAL, &e,
                "channels must come last");
    oph_destroy(&h);
    sl_tlist_free(&rgba);
    sl_tlist_free(&flat);

    sl_tlist_free(&img);
    sl_tlist_free(&grey);
    sl_tlist_free(&fimg);
    return check_done();
}
