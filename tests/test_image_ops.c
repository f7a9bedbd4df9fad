/* SPDX-License-Identifier: Apache-2.0 */
/* The other image and generic ops: cast (saturation, rounding), flip (per sample), coin_flip and
 * uniform (range, determinism across batch splits and threads), normal (moments, determinism,
 * per-sample mean and stddev, negative stddev refused), resize (sizes, NN replication,
 * constant images, mean preserved) and decoders.image_random_crop (window within DALI's ranges,
 * pixels equal to the same window of a full decode). */
#include "check.h"
#include "npy.h"
#include "opharness.h"

#include "ops/decode_image.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static sl_err e;

static void run1(oph *h, sl_tlist *in, int batch, sl_tlist *const *ai, int nai, int64_t base) {
    sl_tlist *ins[1] = {in};
    CHECK_OK(oph_run(h, batch, in ? ins : NULL, in ? 1 : 0, ai, nai, NULL, base, &e), &e);
}

static void test_cast(void) {
    float v[5] = {-1.4f, 300.6f, NAN, 2.5f, 3.5f};
    sl_tlist in;
    memset(&in, 0, sizeof in);
    int64_t n = 5;
    CHECK_OK(sl_tlist_reset(&in, 1, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
    sl_tlist_set_external(&in, 0, v, &n);
    oph h;
    const char *a[] = {"dtype=types.UINT8", NULL};
    CHECK_OK(oph_create(&h, "cast", a, 1, 1, 0, &e), &e);
    run1(&h, &in, 1, NULL, 0, 0);
    const uint8_t *o = h.out[0].data[0];
    CHECK(o[0] == 0 && o[1] == 255 && o[2] == 0 && o[3] == 2 && o[4] == 4);
    oph_destroy(&h);
    const char *b[] = {"dtype=types.INT32", NULL};
    CHECK_OK(oph_create(&h, "cast", b, 1, 1, 0, &e), &e);
    run1(&h, &in, 1, NULL, 0, 0);
    const int32_t *oi = h.out[0].data[0];
    CHECK(oi[0] == -1 && oi[1] == 301 && oi[2] == 0 && oi[3] == 2);
    oph_destroy(&h);
    sl_tlist_free(&in);
}

static void test_flip(sl_tlist *img) {
    /* img: one (10, 22, 3) uint8 HWC sample, used twice: flags per sample from an input */
    sl_tlist two, fl;
    memset(&two, 0, sizeof two), memset(&fl, 0, sizeof fl);
    CHECK_OK(sl_tlist_reset(&two, 2, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    sl_tlist_set_external(&two, 0, img->data[0], sl_tlist_shape(img, 0));
    sl_tlist_set_external(&two, 1, img->data[0], sl_tlist_shape(img, 0));
    memcpy(two.layout, "HWC", 4);
    CHECK_OK(sl_tlist_reset(&fl, 2, SL_DTYPE_I32, 0, sl_cpu(), &e), &e);
    int64_t none[2] = {0, 0};
    CHECK_OK(sl_tlist_alloc(&fl, none, &e), &e);
    *(int32_t *)fl.data[0] = 0, *(int32_t *)fl.data[1] = 1;
    oph h;
    const char *a[] = {"horizontal=@0", "vertical=1", NULL};
    CHECK_OK(oph_create(&h, "flip", a, 2, 2, 0, &e), &e);
    sl_tlist *ai[1] = {&fl};
    run1(&h, &two, 2, ai, 1, 0);
    const uint8_t *s = img->data[0], *v = h.out[0].data[0], *hv = h.out[0].data[1];
    int bad = 0;
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 22; x++)
            for (int c = 0; c < 3; c++) {
                bad += v[(y * 22 + x) * 3 + c] != s[((9 - y) * 22 + x) * 3 + c];
                bad += hv[(y * 22 + x) * 3 + c] != s[((9 - y) * 22 + 21 - x) * 3 + c];
            }
    CHECK_EQ_INT(bad, 0);
    CHECK_STR(h.out[0].layout, "HWC");
    oph_destroy(&h);
    sl_tlist_free(&two), sl_tlist_free(&fl);
}

static void test_random(void) {
    oph a, b;
    const char *args[] = {"probability=0.3", NULL};
    CHECK_OK(oph_create(&a, "random.coin_flip", args, 1, 1000, 42, &e), &e);
    run1(&a, NULL, 1000, NULL, 0, 0);
    CHECK_EQ_INT(a.out[0].ndim, 0);
    CHECK_EQ_INT(a.out[0].dtype, SL_DTYPE_I32);
    int ones = 0;
    for (int i = 0; i < 1000; i++) ones += *(int32_t *)a.out[0].data[i];
    CHECK_MSG(ones > 250 && ones < 350, "%d ones of 1000 at p=0.3", ones);
    /* the same samples drawn as batches of 10 starting at 500: the same values */
    CHECK_OK(oph_create(&b, "random.coin_flip", args, 1, 10, 42, &e), &e);
    run1(&b, NULL, 10, NULL, 0, 500);
    int same = 0;
    for (int i = 0; i < 10; i++)
        same += *(int32_t *)b.out[0].data[i] == *(int32_t *)a.out[0].data[500 + i];
    CHECK_EQ_INT(same, 10);
    oph_destroy(&a), oph_destroy(&b);
    const char *u[] = {"range=[2.0, 3.0]", "shape=[4]", NULL};
    CHECK_OK(oph_create(&a, "random.uniform", u, 1, 100, 7, &e), &e);
    run1(&a, NULL, 100, NULL, 0, 0);
    int in_range = 0;
    double sum = 0;
    for (int i = 0; i < 100; i++)
        for (int k = 0; k < 4; k++) {
            float v = ((float *)a.out[0].data[i])[k];
            in_range += v >= 2.0f && v < 3.0f;
            sum += v;
        }
    CHECK_EQ_INT(in_range, 400);
    CHECK_NEAR(sum / 400, 2.5, 0.05);
    CHECK_EQ_INT(sl_tlist_shape(&a.out[0], 3)[0], 4);
    oph_destroy(&a);
    const char *vals[] = {"values=[1.0, 5.0]", NULL};
    CHECK_OK(oph_create(&a, "random.uniform", vals, 1, 50, 7, &e), &e);
    run1(&a, NULL, 50, NULL, 0, 0);
    int ok = 0;
    for (int i = 0; i < 50; i++) {
        float v = *(float *)a.out[0].data[i];
        ok += v == 1.0f || v == 5.0f;
    }
    CHECK_EQ_INT(ok, 50);
    oph_destroy(&a);
    CHECK_FAILS(
        oph_create(&a, "random.coin_flip", (const char *[]){"probability=1.5", NULL}, 1, 1, 0, &e),
        SL_EINVAL, &e, "probability");

    /* normal: 2000 x 8 draws at mean 3, stddev 2 -- moments within 5 standard errors, about 68%
     * within one stddev; the same samples drawn in a later batch of 10 are the same values */
    const char *nv[] = {"mean=3.0", "stddev=2.0", "shape=[8]", NULL};
    CHECK_OK(oph_create(&a, "random.normal", nv, 1, 2000, 11, &e), &e);
    run1(&a, NULL, 2000, NULL, 0, 0);
    double m = 0, m2 = 0;
    int within = 0;
    for (int i = 0; i < 2000; i++)
        for (int k = 0; k < 8; k++) {
            double v = ((float *)a.out[0].data[i])[k];
            m += v, m2 += v * v, within += fabs(v - 3) < 2;
        }
    m /= 16000, m2 = m2 / 16000 - m * m;
    CHECK_NEAR(m, 3.0, 5 * 2 / sqrt(16000.0));
    CHECK_NEAR(sqrt(m2), 2.0, 0.06);
    CHECK_NEAR(within / 16000.0, 0.6827, 0.02);
    CHECK_OK(oph_create(&b, "random.normal", nv, 1, 10, 11, &e), &e);
    run1(&b, NULL, 10, NULL, 0, 700);
    CHECK(memcmp(b.out[0].data[0], a.out[0].data[700], 10 * 8 * sizeof(float)) == 0);
    oph_destroy(&a), oph_destroy(&b);
    /* per-sample mean and stddev; a negative stddev names the sample */
    sl_tlist ms[2];
    int64_t one[4] = {1, 1, 1, 1};
    for (int j = 0; j < 2; j++) {
        memset(&ms[j], 0, sizeof ms[j]);
        CHECK_OK(sl_tlist_reset(&ms[j], 4, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
        CHECK_OK(sl_tlist_alloc(&ms[j], one, &e), &e);
    }
    for (int i = 0; i < 4; i++) *(float *)ms[0].data[i] = 100.0f * (float)i;
    for (int i = 0; i < 4; i++) *(float *)ms[1].data[i] = i == 3 ? 0.0f : 0.5f;
    const char *np[] = {"mean=@0", "stddev=@1", "dtype=types.FLOAT64", NULL};
    CHECK_OK(oph_create(&a, "random.normal", np, 1, 4, 11, &e), &e);
    sl_tlist *ai[2] = {&ms[0], &ms[1]};
    run1(&a, NULL, 4, ai, 2, 0);
    for (int i = 0; i < 4; i++) {
        double v = *(double *)a.out[0].data[i];
        CHECK_MSG(fabs(v - 100.0 * i) < (i == 3 ? 1e-12 : 3.0), "sample %d: %g", i, v);
    }
    oph_destroy(&a);
    *(float *)ms[1].data[2] = -1.0f;
    CHECK_OK(oph_create(&a, "random.normal", np, 1, 4, 11, &e), &e);
    CHECK_FAILS(oph_run(&a, 4, NULL, 0, ai, 2, NULL, 0, &e), SL_EINVAL, &e,
                "random.normal: sample 2: stddev -1 is negative");
    oph_destroy(&a);
    sl_tlist_free(&ms[0]), sl_tlist_free(&ms[1]);
    CHECK_FAILS(oph_create(&a, "random.normal", (const char *[]){"stddev=-0.5", NULL}, 1, 1, 0, &e),
                SL_EINVAL, &e, "stddev -0.5 is negative");
}

static void test_resize(sl_tlist *rgb) {
    /* swan (408, 640, 3): shorter side 204 -> (204, 320); mean kept within 1 */
    oph h;
    const char *a[] = {"resize_shorter=204", NULL};
    CHECK_OK(oph_create(&h, "resize", a, 2, 1, 0, &e), &e);
    run1(&h, rgb, 1, NULL, 0, 0);
    CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 0)[0], 204);
    CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 0)[1], 320);
    CHECK_EQ_INT(h.out[0].dtype, SL_DTYPE_U8);
    double m0 = 0, m1 = 0;
    for (int64_t k = 0; k < 408 * 640 * 3; k++) m0 += ((uint8_t *)rgb->data[0])[k];
    for (int64_t k = 0; k < 204 * 320 * 3; k++) m1 += ((uint8_t *)h.out[0].data[0])[k];
    m0 /= 408 * 640 * 3, m1 /= 204 * 320 * 3;
    printf("resize: mean %.3f -> %.3f\n", m0, m1);
    CHECK_NEAR(m0, m1, 1.0);
    oph_destroy(&h);
    /* NN 2x up: pixel replication; cubic on a constant image stays constant */
    const char *nn[] = {"size=[816, 1280]", "interp_type=types.INTERP_NN", NULL};
    CHECK_OK(oph_create(&h, "resize", nn, 1, 1, 0, &e), &e);
    run1(&h, rgb, 1, NULL, 0, 0);
    const uint8_t *s = rgb->data[0], *o = h.out[0].data[0];
    int bad = 0;
    for (int y = 0; y < 816; y += 7)
        for (int x = 0; x < 1280; x += 5)
            bad += o[(y * 1280 + x) * 3 + 1] != s[((y / 2) * 640 + x / 2) * 3 + 1];
    CHECK_EQ_INT(bad, 0);
    oph_destroy(&h);
    uint8_t flat[30 * 40];
    memset(flat, 77, sizeof flat);
    sl_tlist fl;
    memset(&fl, 0, sizeof fl);
    CHECK_OK(sl_tlist_reset(&fl, 1, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    int64_t fs[3] = {30, 40, 1};
    sl_tlist_set_external(&fl, 0, flat, fs);
    const char *cu[] = {"resize_x=17", "interp_type=types.INTERP_CUBIC", "dtype=types.FLOAT", NULL};
    CHECK_OK(oph_create(&h, "resize", cu, 1, 1, 0, &e), &e);
    run1(&h, &fl, 1, NULL, 0, 0);
    CHECK_EQ_INT(sl_tlist_shape(&h.out[0], 0)[0], 13); /* 30 * 17 / 40 = 12.75 */
    float worst = 0;
    for (int k = 0; k < 13 * 17; k++) {
        float d = fabsf(((float *)h.out[0].data[0])[k] - 77.0f);
        if (d > worst) worst = d;
    }
    CHECK(worst < 1e-3f);
    oph_destroy(&h);
    sl_tlist_free(&fl);
}

static void test_random_crop(sl_tlist *enc, sl_tlist *full) {
    for (int threads = 1; threads <= 2; threads++) {
        oph h;
        const char *a[] = {NULL};
        CHECK_OK(oph_create(&h, "decoders.image_random_crop", a, threads, 4, 99, &e), &e);
        /* the same JPEG four times: four windows */
        sl_tlist four;
        memset(&four, 0, sizeof four);
        CHECK_OK(sl_tlist_reset(&four, 4, SL_DTYPE_U8, 1, sl_cpu(), &e), &e);
        for (int i = 0; i < 4; i++)
            sl_tlist_set_external(&four, i, enc->data[0], sl_tlist_shape(enc, 0));
        run1(&h, &four, 4, NULL, 0, 0);
        int worst = 0;
        for (int i = 0; i < 4; i++) {
            const sl__decode_image_roi *r = sl__image_random_crop_roi(h.state, i);
            const int64_t *sh = sl_tlist_shape(&h.out[0], i);
            CHECK(sh[0] == r->h && sh[1] == r->w && sh[2] == 3);
            double area = (double)(r->h * r->w) / (408.0 * 640.0),
                   ratio = (double)r->w / (double)r->h;
            CHECK_MSG(area >= 0.07 && area <= 1.0 && ratio > 0.74 && ratio < 1.34,
                      "area %g ratio %g", area, ratio);
            CHECK(r->x >= 0 && r->y >= 0 && r->x + r->w <= 640 && r->y + r->h <= 408);
            const uint8_t *o = h.out[0].data[i], *f = full->data[0];
            for (int64_t y = 0; y < r->h; y++)
                for (int64_t x = 0; x < r->w * 3; x++) {
                    int d = abs((int)o[y * r->w * 3 + x] -
                                (int)f[((r->y + y) * 640) * 3 + r->x * 3 + x]);
                    if (d > worst) worst = d;
                }
        }
        printf("random crop (%d threads): max |diff| to the full decode's window %d\n", threads,
               worst);
        CHECK(worst == 0);
        /* the pool decodes the dearest windows first: the share of a whole decode a window costs
         * (rows down to its bottom, its area) falls along the run, which holds every sample */
        CHECK(h.run_count == 4);
        double last = 2.0;
        int seen = 0;
        for (int k = 0; k < h.run_count && h.run_index; k++) {
            int i = h.run_index[k];
            const sl__decode_image_roi *r = sl__image_random_crop_roi(h.state, i);
            double share = 0.65 * (double)(r->y + r->h) / 408.0 +
                           0.35 * (double)(r->h * r->w) / (408.0 * 640.0);
            CHECK_MSG(share <= last, "run %d: sample %d costs %g after %g", k, i, share, last);
            last = share;
            seen |= 1 << i;
        }
        CHECK(h.run_index != NULL && seen == 15);
        sl_tlist_free(&four);
        oph_destroy(&h);
    }
}

/* decoders.image on images of two sizes: the larger ones are decoded first (a batch does not
 * wait on a large image started last); images of one size keep their order */
static void test_run_order(void) {
    size_t ls, lb;
    void *small = oph_read_file(fixture("dali_extra/jpeg/swan-3584559_640.jpg"), &ls);
    void *big = oph_read_file(fixture("dali_extra/jpeg/site-1534685_1280.jpg"), &lb);
    CHECK(small && big);
    const void *d[4] = {small, big, small, big};
    size_t len[4] = {ls, lb, ls, lb};
    sl_tlist enc;
    memset(&enc, 0, sizeof enc);
    CHECK_OK(oph_bytes(&enc, 4, d, len, &e), &e);
    oph h;
    CHECK_OK(oph_create(&h, "decoders.image", NULL, 2, 4, 0, &e), &e);
    run1(&h, &enc, 4, NULL, 0, 0);
    CHECK(h.run_index != NULL && h.run_count == 4);
    static const int want[4] = {1, 3, 0, 2};
    for (int k = 0; k < 4 && h.run_index; k++)
        CHECK_MSG(h.run_index[k] == want[k], "run %d: sample %d", k, h.run_index[k]);
    for (int i = 0; i < 4; i++) CHECK(sl_tlist_shape(&h.out[0], i)[1] == (i % 2 ? 1280 : 640));
    const void *same[2] = {small, small};
    size_t same_len[2] = {ls, ls};
    CHECK_OK(oph_bytes(&enc, 2, same, same_len, &e), &e);
    run1(&h, &enc, 2, NULL, 0, 0);
    CHECK(h.run_index == NULL && h.run_count == 2);
    oph_destroy(&h);
    sl_tlist_free(&enc);
    free(small), free(big);
}

static void test_reshape_one_hot(void) {
    int32_t lab[6] = {3, 0, 9, 12, -1, 5};
    sl_tlist in;
    memset(&in, 0, sizeof in);
    int64_t n = 6;
    CHECK_OK(sl_tlist_reset(&in, 1, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    sl_tlist_set_external(&in, 0, lab, &n);
    oph h;
    const char *a[] = {"num_classes=10", "axis=0", "dtype=types.UINT8", "on_value=7", NULL};
    CHECK_OK(oph_create(&h, "one_hot", a, 1, 1, 0, &e), &e);
    run1(&h, &in, 1, NULL, 0, 0);
    CHECK_EQ_INT(h.out[0].ndim, 2);
    CHECK(sl_tlist_shape(&h.out[0], 0)[0] == 10 && sl_tlist_shape(&h.out[0], 0)[1] == 6);
    const uint8_t *o = h.out[0].data[0];
    int ok = 1;
    for (int k = 0; k < 10; k++)
        for (int j = 0; j < 6; j++) ok &= o[k * 6 + j] == (lab[j] == k ? 7 : 0);
    CHECK(ok); /* 12 and -1 give all-off columns */
    oph_destroy(&h);
    /* reshape: rel_shape with a wildcard, a layout, and a bad volume naming the record */
    float buf[24] = {0};
    int64_t s3[3] = {2, 3, 4};
    sl_tlist f;
    memset(&f, 0, sizeof f);
    CHECK_OK(sl_tlist_reset(&f, 1, SL_DTYPE_F32, 3, sl_cpu(), &e), &e);
    sl_tlist_set_external(&f, 0, buf, s3);
    const char *r[] = {"rel_shape=[0.5, -1]", "layout=\"HW\"", NULL};
    CHECK_OK(oph_create(&h, "reshape", r, 1, 1, 0, &e), &e);
    run1(&h, &f, 1, NULL, 0, 0);
    CHECK(sl_tlist_shape(&h.out[0], 0)[0] == 1 && sl_tlist_shape(&h.out[0], 0)[1] == 24);
    CHECK(h.out[0].data[0] == (void *)buf);
    CHECK_STR(h.out[0].layout, "HW");
    oph_destroy(&h);
    const char *bad[] = {"shape=[5, 5]", NULL};
    CHECK_OK(oph_create(&h, "reshape", bad, 1, 1, 0, &e), &e);
    sl_tlist *ins[1] = {&f};
    const char *key = "rec7";
    CHECK_FAILS(oph_run(&h, 1, ins, 1, NULL, 0, &key, 0, &e), SL_EINVAL, &e,
                "reshape: record rec7");
    oph_destroy(&h);
    sl_tlist_free(&f), sl_tlist_free(&in);
}

int main(void) {
    test_cast();
    test_reshape_one_hot();
    test_run_order();
    sl_tensor t;
    CHECK_OK(npy_load(fixture("dali_extra/cmn/input0.npy"), &t, &e), &e);
    sl_tlist img;
    memset(&img, 0, sizeof img);
    CHECK_OK(sl_tlist_reset(&img, 1, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    sl_tlist_set_external(&img, 0, t.data, t.shape);
    memcpy(img.layout, "HWC", 4);
    test_flip(&img);
    sl_tlist_free(&img);
    sl_tensor_free(&t);
    test_random();

    size_t len;
    void *jpg = oph_read_file(fixture("dali_extra/jpeg/swan-3584559_640.jpg"), &len);
    CHECK(jpg != NULL);
    sl_tlist enc;
    memset(&enc, 0, sizeof enc);
    const void *d[1] = {jpg};
    CHECK_OK(oph_bytes(&enc, 1, d, &len, &e), &e);
    oph dec;
    CHECK_OK(oph_create(&dec, "decoders.image", NULL, 1, 1, 0, &e), &e);
    run1(&dec, &enc, 1, NULL, 0, 0);
    test_resize(&dec.out[0]);
    test_random_crop(&enc, &dec.out[0]);
    oph_destroy(&dec);
    sl_tlist_free(&enc);
    free(jpg);
    return check_done();
}
