/* SPDX-License-Identifier: Apache-2.0 */
/* cat and stack against the index formulas, on three int16 inputs of HWC samples whose sizes differ
 * from sample to sample:
 * - cat along axis 2 (channels: 1 + 2 + 3), along axis 0 (heights differ per input), by
 *   axis_name, and axis=-1;
 * - stack at axis 0 and at axis 3 (axis=-1) with axis_name "N" inserted into the layout;
 * - errors: different dtypes, extents that differ off the axis (naming the sample), an axis past
 * the rank, an axis_name not in the layout. Runs on 2 pool threads. */
#include "check.h"
#include "opharness.h"

#include <stdlib.h>
#include <string.h>

enum { N = 3 };

static int16_t value(int input, int i, int64_t y, int64_t x, int64_t c) {
    return (int16_t)(input * 1000 + i * 100 + y * 17 + x * 5 + c);
}

/* input j: N samples of (h[i] (+ dh), w[i], ch), layout HWC */
static void make(sl_tlist *l, sl_dtype t, int j, int dh, int ch) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++)
        shapes[3 * i] = 2 + i + dh, shapes[3 * i + 1] = 3 + i, shapes[3 * i + 2] = ch;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "HWC");
    for (int i = 0; i < N; i++)
        for (int64_t y = 0; y < shapes[3 * i]; y++)
            for (int64_t x = 0; x < shapes[3 * i + 1]; x++)
                for (int64_t c = 0; c < ch; c++) {
                    int64_t k = (y * shapes[3 * i + 1] + x) * ch + c;
                    if (t == SL_DTYPE_I16)
                        ((int16_t *)l->data[i])[k] = value(j, i, y, x, c);
                    else
                        ((float *)l->data[i])[k] = 0;
                }
}

static const sl_tlist *run(oph *h, const char *op, const char *const *argv, sl_tlist **in, int n,
                           sl_err *e, sl_status *st) {
    *st = oph_create(h, op, argv, 2, N, 0, e);
    if (*st != SL_OK) return NULL;
    *st = oph_run(h, N, in, n, NULL, 0, NULL, 0, e);
    return *st == SL_OK ? &h->out[0] : NULL;
}

static int16_t get(const sl_tlist *l, int i, const int64_t *idx) {
    const int64_t *sh = sl_tlist_shape(l, i);
    int64_t k = 0;
    for (int d = 0; d < l->ndim; d++) k = k * sh[d] + idx[d];
    return ((int16_t *)l->data[i])[k];
}

int main(void) {
    sl_tlist c1, c2, c3, tall, f;
    make(&c1, SL_DTYPE_I16, 0, 0, 1);
    make(&c2, SL_DTYPE_I16, 1, 0, 2);
    make(&c3, SL_DTYPE_I16, 2, 0, 3);
    make(&tall, SL_DTYPE_I16, 1, 3, 1); /* 3 rows more than c1 */
    make(&f, SL_DTYPE_F32, 0, 0, 1);
    oph h;
    sl_err e;
    sl_status st;

    /* cat along channels: (H, W, 6) = c1 | c2 | c3; by axis=2, axis=-1 and axis_name="C" */
    const char *by_axis[] = {"axis=2", NULL}, *by_neg[] = {"axis=-1", NULL},
               *by_name[] = {"axis_name=\"C\"", NULL};
    const char *const *cats[] = {by_axis, by_neg, by_name};
    for (int v = 0; v < 3; v++) {
        sl_tlist *ins[3] = {&c1, &c2, &c3};
        const sl_tlist *o = run(&h, "cat", cats[v], ins, 3, &e, &st);
        CHECK_MSG(o != NULL, "%s", e.msg);
        int wrong = 0;
        for (int i = 0; o && i < N; i++) {
            const int64_t *sh = sl_tlist_shape(o, i);
            CHECK(sh[0] == 2 + i && sh[1] == 3 + i && sh[2] == 6);
            for (int64_t y = 0; y < sh[0]; y++)
                for (int64_t x = 0; x < sh[1]; x++)
                    for (int64_t c = 0; c < 6; c++) {
                        int j = c < 1 ? 0 : c < 3 ? 1 : 2;
                        int64_t cj = c < 1 ? c : c < 3 ? c - 1 : c - 3;
                        wrong += get(o, i, (int64_t[]){y, x, c}) != value(j, i, y, x, cj);
                    }
        }
        CHECK_MSG(o && wrong == 0, "cat variant %d: %d wrong", v, wrong);
        if (o) CHECK_STR(o->layout, "HWC");
        oph_destroy(&h);
    }

    /* cat along rows: c1 (2 + i rows) then tall (5 + i rows) */
    const char *rows[] = {"axis=0", NULL};
    sl_tlist *two[2] = {&c1, &tall};
    const sl_tlist *o = run(&h, "cat", rows, two, 2, &e, &st);
    CHECK_MSG(o != NULL, "%s", e.msg);
    for (int i = 0; o && i < N; i++) {
        const int64_t *sh = sl_tlist_shape(o, i);
        CHECK_EQ_INT(sh[0], (2 + i) + (5 + i));
        int wrong = 0;
        for (int64_t y = 0; y < sh[0]; y++)
            for (int64_t x = 0; x < sh[1]; x++)
                wrong += get(o, i, (int64_t[]){y, x, 0}) !=
                         (y < 2 + i ? value(0, i, y, x, 0) : value(1, i, y - (2 + i), x, 0));
        CHECK_MSG(wrong == 0, "cat rows sample %d: %d wrong", i, wrong);
    }
    oph_destroy(&h);

    /* stack at 0 and at the end, with a layout letter */
    sl_tlist same[3];
    for (int j = 0; j < 3; j++) make(&same[j], SL_DTYPE_I16, j, 0, 2);
    sl_tlist *ins3[3] = {&same[0], &same[1], &same[2]};
    const char *s0[] = {"axis=0", "axis_name=\"N\"", NULL}, *s3[] = {"axis=-1", NULL};
    for (int v = 0; v < 2; v++) {
        o = run(&h, "stack", v ? s3 : s0, ins3, 3, &e, &st);
        CHECK_MSG(o != NULL, "%s", e.msg);
        int wrong = 0;
        for (int i = 0; o && i < N; i++) {
            const int64_t *sh = sl_tlist_shape(o, i);
            CHECK_EQ_INT(o->ndim, 4);
            CHECK_EQ_INT(sh[v ? 3 : 0], 3);
            for (int j = 0; j < 3; j++)
                for (int64_t y = 0; y < 2 + i; y++)
                    for (int64_t x = 0; x < 3 + i; x++)
                        for (int64_t c = 0; c < 2; c++) {
                            int64_t a0[4] = {j, y, x, c}, a3[4] = {y, x, c, j};
                            wrong += get(o, i, v ? a3 : a0) != value(j, i, y, x, c);
                        }
        }
        CHECK_MSG(o && wrong == 0, "stack variant %d: %d wrong", v, wrong);
        if (o) CHECK_STR(o->layout, v ? "" : "NHWC");
        oph_destroy(&h);
    }

    /* errors */
    sl_tlist *mixed[2] = {&c1, &f};
    o = run(&h, "cat", by_axis, mixed, 2, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "cat: input 1 is float32 with 3 dimensions, input 0 "
                                           "int16 with 3"),
              "%s", e.msg);
    oph_destroy(&h);
    o = run(&h, "cat", by_axis, two, 2, &e, &st); /* rows differ off the channel axis */
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "cat: sample 0: input 1's extent 5 in dimension 0 "
                                           "differs from input 0's 2"),
              "%s", e.msg);
    oph_destroy(&h);
    sl_tlist *pair[2] = {&c1, &c2};
    o = run(&h, "stack", s0, pair, 2, &e, &st); /* channels differ: 1 and 2 */
    CHECK(o == NULL && st == SL_EINVAL);
    oph_destroy(&h);
    const char *far[] = {"axis=3", NULL}, *nowhere[] = {"axis_name=\"D\"", NULL};
    o = run(&h, "cat", far, pair, 2, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "cat: axis 3 for 3-dimensional inputs"), "%s", e.msg);
    oph_destroy(&h);
    o = run(&h, "cat", nowhere, pair, 2, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "cat: axis 'D' is not in the layout \"HWC\""), "%s",
              e.msg);
    oph_destroy(&h);

    sl_tlist_free(&c1), sl_tlist_free(&c2), sl_tlist_free(&c3), sl_tlist_free(&tall);
    sl_tlist_free(&f);
    for (int j = 0; j < 3; j++) sl_tlist_free(&same[j]);
    return check_done();
}
