/* SPDX-License-Identifier: Apache-2.0 */
/* pad on the CPU, DALI's examples and more:
 * - 1-D samples of 5, 2 and 3 elements padded to 5 with -1; with shape [7] to at least 7 (a
 *   sample of 8 keeps 8); with align [4] to 8; with shape [1] and align [4] each sample to its own
 *   multiple of 4;
 * - HWC images of mixed sizes with axis_names "HW": every sample the batch's largest H and W, the
 *   channels untouched, the original pixels in the top-left corner and fill_value elsewhere
 *   (float32 and int64, whose elements are copied as bytes);
 * - shape and align as per-sample argument inputs (each sample its own: as DALI's tensor
 *   arguments), and a sample's bad value named by its record key;
 * - errors: a shape with another number of values than padded axes, an axis name not in the
 *   layout, align 0. */
#include "check.h"
#include "opharness.h"

#include <stdlib.h>
#include <string.h>

static void list1d(sl_tlist *l, int n, const int64_t *len) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, n, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, len, &e), &e);
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < len[i]; k++) ((int32_t *)l->data[i])[k] = 10 * i + (int32_t)k + 1;
}

/* a per-sample int32 argument: sample i has the n[i] values v[...] (in order) */
static void per_sample(sl_tlist *l, int count, const int64_t *n, const int32_t *v) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, count, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, n, &e), &e);
    for (int i = 0, at = 0; i < count; i++)
        for (int64_t k = 0; k < n[i]; k++) ((int32_t *)l->data[i])[k] = v[at++];
}

static sl_status run(oph *h, const char *const *argv, sl_tlist *in, const sl_tlist **out,
                     sl_err *e) {
    *out = NULL;
    sl_status st = oph_create(h, "pad", argv, 2, in->count, 1, e);
    if (st != SL_OK) return st;
    sl_tlist *ins[1] = {in};
    st = oph_run(h, in->count, ins, 1, NULL, 0, NULL, 0, e);
    if (st == SL_OK) *out = &h->out[0];
    return st;
}

/* 1-D: each sample's length is want[i], its first len[i] values kept, the rest fill */
static void check1d(const sl_tlist *o, const sl_tlist *in, const int64_t *want, int32_t fill,
                    const char *what) {
    for (int i = 0; o && i < in->count; i++) {
        int64_t len = sl_tlist_shape(in, i)[0];
        CHECK_MSG(sl_tlist_shape(o, i)[0] == want[i], "%s: sample %d has %lld, want %lld", what, i,
                  (long long)sl_tlist_shape(o, i)[0], (long long)want[i]);
        for (int64_t k = 0; k < want[i] && sl_tlist_shape(o, i)[0] == want[i]; k++) {
            int32_t v = ((const int32_t *)o->data[i])[k];
            int32_t expect = k < len ? ((const int32_t *)in->data[i])[k] : fill;
            CHECK_MSG(v == expect, "%s: sample %d element %lld is %d, want %d", what, i,
                      (long long)k, v, expect);
        }
    }
    CHECK(o != NULL);
}

int main(void) {
    oph h;
    sl_err e;
    const sl_tlist *o;
    sl_tlist a, b;
    int64_t la[3] = {5, 2, 3}, lb[4] = {5, 2, 3, 8};
    list1d(&a, 3, la);
    list1d(&b, 4, lb);

    const char *p1[] = {"fill_value=-1", NULL};
    CHECK_OK(run(&h, p1, &a, &o, &e), &e);
    int64_t w1[3] = {5, 5, 5};
    check1d(o, &a, w1, -1, "to the largest");
    oph_destroy(&h);
    const char *p2[] = {"fill_value=-1", "shape=[7]", NULL};
    CHECK_OK(run(&h, p2, &b, &o, &e), &e);
    int64_t w2[4] = {7, 7, 7, 8};
    check1d(o, &b, w2, -1, "to at least 7");
    oph_destroy(&h);
    const char *p3[] = {"fill_value=-1", "align=[4]", NULL};
    CHECK_OK(run(&h, p3, &a, &o, &e), &e);
    int64_t w3[3] = {8, 8, 8};
    check1d(o, &a, w3, -1, "aligned to 4");
    oph_destroy(&h);
    const char *p4[] = {"shape=[1]", "align=[4]", NULL};
    CHECK_OK(run(&h, p4, &b, &o, &e), &e);
    int64_t w4[4] = {8, 4, 4, 8};
    check1d(o, &b, w4, 0, "each to its own multiple of 4");
    oph_destroy(&h);

    /* images: H and W to the batch's largest, channels kept */
    sl_dtype types[2] = {SL_DTYPE_F32, SL_DTYPE_I64};
    for (int t = 0; t < 2; t++) {
        sl_tlist img;
        int64_t shapes[9] = {4, 7, 2, 6, 3, 2, 1, 1, 2};
        memset(&img, 0, sizeof img);
        CHECK_OK(sl_tlist_reset(&img, 3, types[t], 3, sl_cpu(), &e), &e);
        CHECK_OK(sl_tlist_alloc(&img, shapes, &e), &e);
        memcpy(img.layout, "HWC", 4);
        for (int i = 0; i < 3; i++)
            for (int64_t k = 0; k < shapes[3 * i] * shapes[3 * i + 1] * 2; k++) {
                if (types[t] == SL_DTYPE_F32)
                    ((float *)img.data[i])[k] = 0.5f + (float)(k + 100 * i);
                else
                    ((int64_t *)img.data[i])[k] = ((int64_t)1 << 40) + k + 100 * i;
            }
        const char *p5[] = {"axis_names=\"HW\"", "fill_value=9", NULL};
        CHECK_OK(run(&h, p5, &img, &o, &e), &e);
        int bad = 0;
        for (int i = 0; o && i < 3; i++) {
            const int64_t *os = sl_tlist_shape(o, i);
            CHECK(os[0] == 6 && os[1] == 7 && os[2] == 2);
            int64_t H = shapes[3 * i], W = shapes[3 * i + 1];
            for (int64_t y = 0; y < 6; y++)
                for (int64_t x = 0; x < 7; x++)
                    for (int64_t c = 0; c < 2; c++) {
                        bool in = y < H && x < W;
                        int64_t ko = (y * 7 + x) * 2 + c, ki = (y * W + x) * 2 + c;
                        if (types[t] == SL_DTYPE_F32)
                            bad += ((float *)o->data[i])[ko] !=
                                   (in ? ((float *)img.data[i])[ki] : 9.0f);
                        else
                            bad += ((int64_t *)o->data[i])[ko] !=
                                   (in ? ((int64_t *)img.data[i])[ki] : 9);
                    }
        }
        CHECK_MSG(o && bad == 0, "images (%s): %d elements wrong", t ? "int64" : "float", bad);
        if (o) CHECK_STR(o->layout, "HWC");
        oph_destroy(&h);
        sl_tlist_free(&img);
    }

    /* per sample: sample 0 to at least 7, 1 to the batch's largest (-1), 2 aligned to 4 */
    sl_tlist ps, pa;
    int64_t one[3] = {1, 1, 1};
    int32_t shv[3] = {7, -1, 1}, alv[3] = {1, 1, 4};
    per_sample(&ps, 3, one, shv);
    per_sample(&pa, 3, one, alv);
    const char *p6[] = {"fill_value=-1", "shape=@0", "align=@1", NULL};
    CHECK_OK(oph_create(&h, "pad", p6, 2, 3, 1, &e), &e);
    sl_tlist *ins[1] = {&a}, *args[2] = {&ps, &pa};
    CHECK_OK(oph_run(&h, 3, ins, 1, args, 2, NULL, 0, &e), &e);
    int64_t w6[3] = {7, 5, 4};
    check1d(&h.out[0], &a, w6, -1, "per-sample shape and align");
    oph_destroy(&h);
    int32_t badv[3] = {1, 1, 0};
    sl_tlist_free(&pa);
    per_sample(&pa, 3, one, badv);
    const char *keys[3] = {"r0", "r1", "r2"};
    CHECK_OK(oph_create(&h, "pad", p6, 2, 3, 1, &e), &e);
    CHECK_FAILS(oph_run(&h, 3, ins, 1, args, 2, keys, 0, &e), SL_EINVAL, &e,
                "pad: record r2: align 0 (Values of `align` argument must be positive.)");
    oph_destroy(&h);
    sl_tlist_free(&ps);
    sl_tlist_free(&pa);

    const char *e1[] = {"shape=[3, 3]", NULL};
    CHECK_FAILS(run(&h, e1, &a, &o, &e), SL_EINVAL, &e, "2 values for 1 padded axes");
    oph_destroy(&h);
    const char *e2[] = {"axis_names=\"W\"", NULL};
    CHECK_FAILS(run(&h, e2, &a, &o, &e), SL_EINVAL, &e, "not in the layout");
    oph_destroy(&h);
    const char *e3[] = {"align=[0]", NULL};
    CHECK_FAILS(run(&h, e3, &a, &o, &e), SL_EINVAL, &e, "align 0");
    sl_tlist_free(&a);
    sl_tlist_free(&b);
    return check_done();
}
