/* SPDX-License-Identifier: Apache-2.0 */
/* brightness_contrast against DALI's formula, with arguments whose arithmetic is exact so that the
 * expected values are exact too:
 * - uint8 with brightness 1.5, contrast 0.5 around the default centre 128: 96 + 0.75 in, rounded to
 *   nearest even and saturated; brightness_shift 0.25 adds 63.75;
 * - per-sample brightness from another op's output (0 or 1): each sample is all 0 or unchanged;
 * - uint8 -> float: the value kept (200 stays 200.0, no rescaling to the output's range), the
 *   shift in the output's units (0.5 adds 0.5); float -> int16: the shift is 0.5 * 32767 and
 *   the value saturates; a layout-less input of 3 dims gets "HWC", of 4 dims "FHWC";
 * - float input: the centre defaults to 0.5 (contrast 0 gives brightness * 0.5 everywhere);
 * - int16: the centre defaults to 16384; an explicit contrast_center wins;
 * - shapes and layout are kept; a per-sample argument with two values a sample is an error naming
 *   the sample;
 * - brightness and contrast, the ops, equal brightness_contrast given their arguments alone, and
 *   their errors carry their own names. Runs on 3 pool threads. */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4 };

static void make(sl_tlist *l, sl_dtype t, int h, int w, int c, const char *layout) {
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
            int v = (int)((k * 37 + (size_t)i * 11) % 256);
            if (t == SL_DTYPE_U8) ((uint8_t *)l->data[i])[k] = (uint8_t)v;
            if (t == SL_DTYPE_F32) ((float *)l->data[i])[k] = (float)v / 256.0f;
            if (t == SL_DTYPE_I16) ((int16_t *)l->data[i])[k] = (int16_t)(v * 100 - 9000);
        }
    }
}

static sl_tlist *run(oph *h, const char *const *argv, sl_tlist *in, sl_tlist *arg, sl_err *e,
                     sl_status *st) {
    *st = oph_create(h, "brightness_contrast", argv, 3, N, 1, e);
    CHECK_MSG(*st == SL_OK, "%s", e->msg);
    if (*st != SL_OK) return NULL;
    sl_tlist *ins[1] = {in}, *args[1] = {arg};
    *st = oph_run(h, N, ins, 1, args, arg ? 1 : 0, NULL, 0, e);
    return *st == SL_OK ? &h->out[0] : NULL;
}

static double sat_u8(double v) {
    v = nearbyint(v);
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

static void test_u8(void) {
    sl_tlist img;
    make(&img, SL_DTYPE_U8, 5, 7, 3, "HWC");
    oph h;
    sl_err e;
    sl_status st;
    const char *a1[] = {"brightness=1.5", "contrast=0.5", NULL};
    sl_tlist *out = run(&h, a1, &img, NULL, &e, &st);
    CHECK(out != NULL);
    for (int i = 0; out && i < N; i++) {
        CHECK_EQ_INT(out->dtype, SL_DTYPE_U8);
        CHECK_STR(out->layout, "HWC");
        CHECK(memcmp(sl_tlist_shape(out, i), sl_tlist_shape(&img, i), 3 * sizeof(int64_t)) == 0);
        size_t n = sl_tlist_sample_nbytes(&img, i);
        int wrong = 0;
        for (size_t k = 0; k < n; k++) {
            double in = ((uint8_t *)img.data[i])[k];
            wrong += ((uint8_t *)out->data[i])[k] != sat_u8(1.5 * (128 + 0.5 * (in - 128)));
        }
        CHECK_MSG(wrong == 0, "sample %d: %d of %zu wrong", i, wrong, n);
    }
    oph_destroy(&h);

    const char *a2[] = {"brightness_shift=0.25", "contrast=2.0", NULL};
    out = run(&h, a2, &img, NULL, &e, &st);
    for (int i = 0; out && i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(&img, i);
        int wrong = 0;
        for (size_t k = 0; k < n; k++) {
            double in = ((uint8_t *)img.data[i])[k];
            wrong += ((uint8_t *)out->data[i])[k] != sat_u8(63.75 + 128 + 2 * (in - 128));
        }
        CHECK_MSG(wrong == 0, "shifted, sample %d: %d of %zu wrong", i, wrong, n);
    }
    oph_destroy(&h);

    /* per-sample brightness: samples 0 and 2 dark, 1 and 3 unchanged */
    sl_tlist coin;
    int64_t one[N] = {1, 1, 1, 1};
    memset(&coin, 0, sizeof coin);
    CHECK_OK(sl_tlist_reset(&coin, N, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&coin, one, &e), &e);
    for (int i = 0; i < N; i++) *(int32_t *)coin.data[i] = i % 2;
    const char *a3[] = {"brightness=@0", NULL};
    out = run(&h, a3, &img, &coin, &e, &st);
    for (int i = 0; out && i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(&img, i), diff = 0, lit = 0;
        for (size_t k = 0; k < n; k++) {
            diff += ((uint8_t *)out->data[i])[k] != ((uint8_t *)img.data[i])[k];
            lit += ((uint8_t *)out->data[i])[k] != 0;
        }
        CHECK_MSG(i % 2 ? diff == 0 : lit == 0, "sample %d: %zu changed, %zu non-zero", i, diff,
                  lit);
    }
    oph_destroy(&h);

    /* to float: the value kept, the shift in float's units (DALI rescales no input) */
    const char *a4[] = {"dtype=types.FLOAT", "brightness_shift=0.5", NULL};
    out = run(&h, a4, &img, NULL, &e, &st);
    double worst = 0;
    for (int i = 0; out && i < N; i++) {
        CHECK_EQ_INT(out->dtype, SL_DTYPE_F32);
        size_t n = sl_tlist_sample_nbytes(&img, i);
        for (size_t k = 0; k < n; k++) {
            double d = fabs(((float *)out->data[i])[k] - (((uint8_t *)img.data[i])[k] + 0.5));
            if (d > worst) worst = d;
        }
    }
    CHECK_MSG(out && worst == 0, "u8 -> float: off by %g", worst);
    oph_destroy(&h);

    /* two values a sample for a per-sample argument */
    sl_tlist two;
    int64_t twos[N] = {2, 2, 2, 2};
    memset(&two, 0, sizeof two);
    CHECK_OK(sl_tlist_reset(&two, N, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&two, twos, &e), &e);
    memset(two.buf, 0, 4 * 2 * N);
    const char *a5[] = {"contrast=@0", NULL};
    out = run(&h, a5, &img, &two, &e, &st);
    CHECK(out == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "brightness_contrast: sample 0: contrast must be one "
                                           "value per sample"),
              "%s", e.msg);
    oph_destroy(&h);
    sl_tlist_free(&coin);
    sl_tlist_free(&two);
    sl_tlist_free(&img);
}

/* float -> int16: out = 0.5 * 32767 + 2 * in, saturated at 32767 (no rescaling of the input);
 * layout-less inputs get DALI's "HWC" (3 dims) and "FHWC" (4 dims) */
static void test_types_and_layouts(void) {
    sl_tlist f;
    make(&f, SL_DTYPE_F32, 3, 4, 3, "");
    for (int i = 0; i < N; i++) ((float *)f.data[i])[0] = 20000.0f; /* saturates */
    oph h;
    sl_err e;
    sl_status st;
    const char *a1[] = {"brightness=2.0", "brightness_shift=0.5", "dtype=types.INT16", NULL};
    sl_tlist *out = run(&h, a1, &f, NULL, &e, &st);
    int wrong = 0;
    for (int i = 0; out && i < N; i++) {
        CHECK_STR(out->layout, "HWC");
        for (size_t k = 0; k < sl_tlist_sample_nbytes(&f, i) / 4; k++) {
            double want = nearbyint(16383.5 + 2.0 * ((float *)f.data[i])[k]);
            want = want > 32767 ? 32767 : want;
            wrong += ((int16_t *)out->data[i])[k] != want;
        }
    }
    CHECK_MSG(out && wrong == 0, "float -> int16: %d wrong", wrong);
    oph_destroy(&h);
    sl_tlist_free(&f);

    sl_tlist seq;
    int64_t shapes[N * 4];
    for (int i = 0; i < N; i++)
        shapes[4 * i] = 2, shapes[4 * i + 1] = 3, shapes[4 * i + 2] = 4, shapes[4 * i + 3] = 3;
    memset(&seq, 0, sizeof seq);
    CHECK_OK(sl_tlist_reset(&seq, N, SL_DTYPE_U8, 4, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&seq, shapes, &e), &e);
    memset(seq.buf, 7, (size_t)N * 72);
    const char *a2[] = {"contrast=1.0", NULL};
    out = run(&h, a2, &seq, NULL, &e, &st);
    if (out) CHECK_STR(out->layout, "FHWC");
    oph_destroy(&h);
    sl_tlist_free(&seq);
}

static void test_centres(void) {
    sl_tlist f, s16;
    make(&f, SL_DTYPE_F32, 3, 4, 1, "CHW");
    make(&s16, SL_DTYPE_I16, 3, 4, 2, "HWC");
    oph h;
    sl_err e;
    sl_status st;
    const char *a1[] = {"brightness=0.5", "contrast=0.0", NULL};
    sl_tlist *out = run(&h, a1, &f, NULL, &e, &st);
    int wrong = 0;
    for (int i = 0; out && i < N; i++) {
        CHECK_STR(out->layout, "CHW");
        for (size_t k = 0; k < sl_tlist_sample_nbytes(&f, i) / 4; k++)
            wrong += ((float *)out->data[i])[k] != 0.25f;
    }
    CHECK_MSG(out && wrong == 0, "float centre 0.5: %d wrong", wrong);
    oph_destroy(&h);

    const char *a2[] = {"contrast=0.0", NULL};
    out = run(&h, a2, &s16, NULL, &e, &st);
    wrong = 0;
    for (int i = 0; out && i < N; i++)
        for (size_t k = 0; k < sl_tlist_sample_nbytes(&s16, i) / 2; k++)
            wrong += ((int16_t *)out->data[i])[k] != 16384;
    CHECK_MSG(out && wrong == 0, "int16 centre 16384: %d wrong", wrong);
    oph_destroy(&h);

    const char *a3[] = {"contrast=0.5", "contrast_center=-1000.0", NULL};
    out = run(&h, a3, &s16, NULL, &e, &st);
    wrong = 0;
    for (int i = 0; out && i < N; i++)
        for (size_t k = 0; k < sl_tlist_sample_nbytes(&s16, i) / 2; k++) {
            double in = ((int16_t *)s16.data[i])[k];
            wrong += ((int16_t *)out->data[i])[k] != nearbyint(-1000 + 0.5 * (in + 1000));
        }
    CHECK_MSG(out && wrong == 0, "int16 explicit centre: %d wrong", wrong);
    oph_destroy(&h);
    sl_tlist_free(&f);
    sl_tlist_free(&s16);
}

/* brightness and contrast, the ops: brightness_contrast given their arguments alone, bit for bit;
 * their errors name them */
static void test_alone(void) {
    sl_tlist img;
    make(&img, SL_DTYPE_U8, 5, 7, 3, "HWC");
    const char *ops[2] = {"brightness", "contrast"};
    const char *args[2][3] = {{"brightness=1.7", "brightness_shift=-0.1", NULL},
                              {"contrast=1.6", "contrast_center=100.0", NULL}};
    for (int k = 0; k < 2; k++) {
        oph a, b;
        sl_err e;
        sl_tlist *ins[1] = {&img};
        CHECK_OK(oph_create(&a, ops[k], args[k], 2, N, 1, &e), &e);
        CHECK_OK(oph_create(&b, "brightness_contrast", args[k], 2, N, 1, &e), &e);
        CHECK_OK(oph_run(&a, N, ins, 1, NULL, 0, NULL, 0, &e), &e);
        CHECK_OK(oph_run(&b, N, ins, 1, NULL, 0, NULL, 0, &e), &e);
        int same = 0;
        for (int i = 0; i < N; i++)
            same += !memcmp(a.out[0].data[i], b.out[0].data[i], sl_tlist_sample_nbytes(&img, i));
        CHECK_MSG(same == N, "%s: %d of %d samples equal brightness_contrast's", ops[k], same, N);
        CHECK(memcmp(a.out[0].data[0], img.data[0], sl_tlist_sample_nbytes(&img, 0)) != 0);
        oph_destroy(&a);
        oph_destroy(&b);
    }
    /* a per-sample argument with two values a sample: the error names the op used */
    sl_tlist two;
    int64_t shapes[N];
    sl_err e;
    for (int i = 0; i < N; i++) shapes[i] = 2;
    memset(&two, 0, sizeof two);
    CHECK_OK(sl_tlist_reset(&two, N, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&two, shapes, &e), &e);
    oph h;
    const char *per[] = {"contrast=@0", NULL};
    CHECK_OK(oph_create(&h, "contrast", per, 1, N, 1, &e), &e);
    sl_tlist *ins[1] = {&img}, *arg[1] = {&two};
    CHECK_FAILS(oph_run(&h, N, ins, 1, arg, 1, NULL, 0, &e), SL_EINVAL, &e, "contrast: sample 0");
    oph_destroy(&h);
    sl_tlist_free(&two);
    sl_tlist_free(&img);
}

int main(void) {
    test_u8();
    test_centres();
    test_types_and_layouts();
    test_alone();
    return check_done();
}
