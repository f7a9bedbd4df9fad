/* SPDX-License-Identifier: Apache-2.0 */
/* DALI's expressions on op outputs (the arithmetic op and the parser's expressions; the Python
 * suite test_expressions.py covers every operator and type pair against numpy):
 * - DALI's type promotions, one pair of types at a time (uint8 + uint8 wraps in uint8; uint8 * an
 *   int constant is int32; / of integers is float32; int8 with uint8 is int16; bool counts as
 *   uint1, two bools are refused for +);
 * - a constant on the left (10 - x) and on the right; unary minus keeps the type and wraps;
 * - one-element samples broadcast (a per-sample scalar times an image, either side, equal or lower
 *   rank); operands of different sizes are an error naming the sample;
 * - pipeline text: (u * 10 + 1), 2.0 / v, 1 - c, -c and +c computed exactly as float32 / int32
 *   arithmetic would, batch after batch; // % ** comparisons & | ^ ~ << >> and bool constants as
 *   C computes them; a string constant, '&' on a float and a multi-output op are errors pointing
 *   at the expression. */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3 };

/* a list of N samples of type t, sample i with shape sh (ndim nd) and value v(i, k) */
static void make(sl_tlist *l, sl_dtype t, int nd, const int64_t *sh, double (*v)(int, int64_t)) {
    sl_err e;
    int64_t shapes[N * 8];
    for (int i = 0; i < N; i++) memcpy(shapes + i * nd, sh, (size_t)nd * sizeof *sh);
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, nd, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    for (int i = 0; i < N; i++) {
        int64_t n = 1;
        for (int d = 0; d < nd; d++) n *= sh[d];
        for (int64_t k = 0; k < n; k++) {
            double x = v(i, k);
            switch (t) {
            case SL_DTYPE_U8:
            case SL_DTYPE_BOOL:
                ((uint8_t *)l->data[i])[k] = (uint8_t)x;
                break;
            case SL_DTYPE_I8:
                ((int8_t *)l->data[i])[k] = (int8_t)x;
                break;
            case SL_DTYPE_U16:
                ((uint16_t *)l->data[i])[k] = (uint16_t)x;
                break;
            case SL_DTYPE_I16:
                ((int16_t *)l->data[i])[k] = (int16_t)x;
                break;
            case SL_DTYPE_I32:
                ((int32_t *)l->data[i])[k] = (int32_t)x;
                break;
            default:
                ((float *)l->data[i])[k] = (float)x;
            }
        }
    }
}

static double big(int i, int64_t k) {
    return 150 + 40 * i + (double)k;
}
static double small(int i, int64_t k) {
    return -3 - i + (double)k;
}
static double unit(int i, int64_t k) {
    (void)k;
    return i % 2;
}
static double quarter(int i, int64_t k) {
    return 0.25 * (double)(i + 1) + (double)k;
}

/* one batch of `arithmetic` with argv over in0 (and in1); out: its output (valid until destroy) */
static const sl_tlist *run(oph *h, const char *const *argv, sl_tlist *in0, sl_tlist *in1, sl_err *e,
                           sl_status *st) {
    *st = oph_create(h, "arithmetic", argv, 2, N, 0, e);
    if (*st != SL_OK) return NULL;
    sl_tlist *ins[2] = {in0, in1};
    *st = oph_run(h, N, ins, in1 ? 2 : 1, NULL, 0, NULL, 0, e);
    return *st == SL_OK ? &h->out[0] : NULL;
}

static double at(const sl_tlist *l, int i, int64_t k) {
    switch (l->dtype) {
    case SL_DTYPE_U8:
        return ((uint8_t *)l->data[i])[k];
    case SL_DTYPE_I16:
        return ((int16_t *)l->data[i])[k];
    case SL_DTYPE_I32:
        return ((int32_t *)l->data[i])[k];
    case SL_DTYPE_F32:
        return ((float *)l->data[i])[k];
    default:
        return NAN;
    }
}

static void test_promotions(void) {
    int64_t sh[1] = {4};
    sl_tlist u8a, u8b, i8, i16, u16, f32, b1;
    make(&u8a, SL_DTYPE_U8, 1, sh, big);
    make(&u8b, SL_DTYPE_U8, 1, sh, big);
    make(&i8, SL_DTYPE_I8, 1, sh, small);
    make(&i16, SL_DTYPE_I16, 1, sh, small);
    make(&u16, SL_DTYPE_U16, 1, sh, big);
    make(&f32, SL_DTYPE_F32, 1, sh, quarter);
    make(&b1, SL_DTYPE_BOOL, 1, sh, unit);
    oph h;
    sl_err e;
    sl_status st;
    const sl_tlist *o;

    const char *add[] = {"op=\"add\"", NULL};
    o = run(&h, add, &u8a, &u8b, &e, &st);
    CHECK_MSG(o != NULL, "%s", e.msg);
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(at(o, i, k), (uint8_t)(2 * big(i, k)));
    if (o) CHECK_EQ_INT(o->dtype, SL_DTYPE_U8);
    oph_destroy(&h);

    const char *mul2[] = {"op=\"mul\"", "constant=2", NULL};
    o = run(&h, mul2, &u8a, NULL, &e, &st);
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(at(o, i, k), 2 * big(i, k));
    CHECK(o && o->dtype == SL_DTYPE_I32);
    oph_destroy(&h);

    const char *div255[] = {"op=\"fdiv\"", "constant=255", NULL};
    o = run(&h, div255, &u8a, NULL, &e, &st);
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(at(o, i, k) == (float)(big(i, k) / 255.0), 1);
    CHECK(o && o->dtype == SL_DTYPE_F32);
    oph_destroy(&h);

    /* a float constant is a float32, as in DALI: x * 0.1 multiplies by 0.1f, not by the double 0.1
     * (for x = 9 the two give 0.90000004f and 0.9f) */
    const char *mul01[] = {"op=\"mul\"", "constant=0.1", "constant_type=\"float32\"", NULL};
    o = run(&h, mul01, &u8a, NULL, &e, &st);
    int differ = 0; /* elements where rounding the constant first matters */
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) {
            CHECK_EQ_INT(at(o, i, k) == (float)(big(i, k) * (double)0.1f), 1);
            differ += (float)(big(i, k) * (double)0.1f) != (float)(big(i, k) * 0.1);
        }
    CHECK(o && o->dtype == SL_DTYPE_F32);
    CHECK(differ > 0);
    oph_destroy(&h);

    const char *sub[] = {"op=\"sub\"", NULL};
    o = run(&h, sub, &i8, &u8a, &e, &st); /* int8 - uint8: int16 */
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(at(o, i, k), small(i, k) - big(i, k));
    CHECK(o && o->dtype == SL_DTYPE_I16);
    oph_destroy(&h);
    o = run(&h, sub, &i16, &u8a, &e, &st); /* int16 - uint8: int16 */
    CHECK(o && o->dtype == SL_DTYPE_I16);
    oph_destroy(&h);
    o = run(&h, sub, &u16, &i16, &e, &st); /* uint16 - int16: int32 */
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(at(o, i, k), big(i, k) - small(i, k));
    CHECK(o && o->dtype == SL_DTYPE_I32);
    oph_destroy(&h);
    o = run(&h, add, &f32, &u16, &e, &st); /* float32 + uint16: float32 */
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_NEAR(at(o, i, k), quarter(i, k) + big(i, k), 0);
    CHECK(o && o->dtype == SL_DTYPE_F32);
    oph_destroy(&h);
    o = run(&h, mul2, &b1, NULL, &e, &st); /* bool * int32: int32 */
    for (int i = 0; o && i < N; i++) CHECK_EQ_INT(at(o, i, 0), 2 * unit(i, 0));
    CHECK(o && o->dtype == SL_DTYPE_I32);
    oph_destroy(&h);
    o = run(&h, add, &b1, &b1, &e, &st);
    CHECK(o == NULL && st == SL_ENOTSUP);
    CHECK_MSG(!check_needle_missing(e.msg, "'+' on two bool operands"), "%s", e.msg);
    oph_destroy(&h);

    /* the constant on the left: 10 - x */
    const char *rsub[] = {"op=\"sub\"", "constant=10", "constant_left=True", NULL};
    o = run(&h, rsub, &i16, NULL, &e, &st);
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(at(o, i, k), 10 - small(i, k));
    oph_destroy(&h);
    /* unary minus keeps the type and wraps: -(uint8 x) is 256 - x, -(-128) in int8 is -128 */
    const char *neg[] = {"op=\"minus\"", NULL};
    o = run(&h, neg, &u8a, NULL, &e, &st);
    for (int i = 0; o && i < N; i++)
        for (int k = 0; k < 4; k++) CHECK_EQ_INT(at(o, i, k), (uint8_t)(256 - (int)big(i, k)));
    CHECK(o && o->dtype == SL_DTYPE_U8);
    oph_destroy(&h);
    ((int8_t *)i8.data[0])[0] = -128;
    o = run(&h, neg, &i8, NULL, &e, &st);
    CHECK(o && o->dtype == SL_DTYPE_I8 && ((int8_t *)o->data[0])[0] == -128 &&
          ((int8_t *)o->data[1])[1] == (int8_t)(-small(1, 1)));
    oph_destroy(&h);
    o = run(&h, neg, &b1, NULL, &e, &st);
    CHECK(o == NULL && st == SL_ENOTSUP);
    oph_destroy(&h);
    const char *bad[] = {"op=\"add\"", "constant=2.5", NULL};
    CHECK_FAILS(oph_create(&h, "arithmetic", bad, 1, N, 0, &e), SL_EINVAL, &e,
                "constant 2.5 is not an int32");
    oph_destroy(&h);
    sl_tlist_free(&u8a), sl_tlist_free(&u8b), sl_tlist_free(&i8), sl_tlist_free(&i16);
    sl_tlist_free(&u16), sl_tlist_free(&f32), sl_tlist_free(&b1);
}

static void test_broadcast(void) {
    int64_t img_sh[3] = {2, 3, 3}, one[1] = {1}, one3[3] = {1, 1, 1}, four[1] = {4};
    sl_tlist img, s1, s3, v4;
    make(&img, SL_DTYPE_F32, 3, img_sh, quarter);
    snprintf(img.layout, sizeof img.layout, "HWC");
    make(&s1, SL_DTYPE_F32, 1, one, unit);
    make(&s3, SL_DTYPE_F32, 3, one3, quarter);
    make(&v4, SL_DTYPE_F32, 1, four, quarter);
    oph h;
    sl_err e;
    sl_status st;
    const char *mul[] = {"op=\"mul\"", NULL};
    for (int order = 0; order < 2; order++) { /* scalar (1,) on either side of an HWC image */
        const sl_tlist *o =
            order ? run(&h, mul, &s1, &img, &e, &st) : run(&h, mul, &img, &s1, &e, &st);
        CHECK_MSG(o != NULL, "%s", e.msg);
        for (int i = 0; o && i < N; i++) {
            CHECK_EQ_INT(o->ndim, 3);
            CHECK(memcmp(sl_tlist_shape(o, i), img_sh, sizeof img_sh) == 0);
            for (int k = 0; k < 18; k++)
                CHECK_EQ_INT(at(o, i, k) == (float)(quarter(i, k) * unit(i, 0)), 1);
        }
        if (o) CHECK_STR(o->layout, "HWC");
        oph_destroy(&h);
    }
    const char *sub[] = {"op=\"sub\"", NULL};
    const sl_tlist *o = run(&h, sub, &s3, &img, &e, &st); /* (1, 1, 1) - (2, 3, 3) */
    for (int i = 0; o && i < N; i++) {
        CHECK(memcmp(sl_tlist_shape(o, i), img_sh, sizeof img_sh) == 0);
        for (int k = 0; k < 18; k++)
            CHECK_EQ_INT(at(o, i, k) == (float)(quarter(i, 0) - quarter(i, k)), 1);
    }
    CHECK(o != NULL);
    oph_destroy(&h);
    o = run(&h, sub, &v4, &img, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "arithmetic: sample 0: '-': operand shapes do not "
                                           "broadcast (extent 3 against 4 at dimension 2)"),
              "%s", e.msg);
    oph_destroy(&h);
    sl_tlist_free(&img), sl_tlist_free(&s1), sl_tlist_free(&s3), sl_tlist_free(&v4);
}

static sl_pipeline *pipe_of(const char *text, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = 8;
    c.num_threads = 2;
    return check_pipeline(&c, text, "math.py", 0, NULL, e);
}

static void test_text(void) {
    sl_err e;
    sl_pipeline *p = pipe_of("def pipe():\n"
                             "    u = fn.random.uniform(range=[0.0, 1.0], shape=[5])\n"
                             "    c = fn.random.coin_flip()\n"
                             "    v = u * 10 + 1\n"
                             "    w = 2.0 / v\n"
                             "    d = 1 - c\n"
                             "    return u, v, w, d\n",
                             &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    for (int batch = 0; p && batch < 3; batch++) {
        sl_batch *b = NULL;
        CHECK_OK(sl_pipeline_next(p, &b), NULL);
        if (!b) break;
        const sl_tlist *u = sl_batch_output(b, 0), *v = sl_batch_output(b, 1),
                       *w = sl_batch_output(b, 2), *d = sl_batch_output(b, 3);
        CHECK_EQ_INT(v->dtype, SL_DTYPE_F32);
        CHECK_EQ_INT(d->dtype, SL_DTYPE_I32);
        int wrong = 0;
        for (int i = 0; i < 8; i++) {
            for (int k = 0; k < 5; k++) {
                float x = ((float *)u->data[i])[k];
                float vx = (float)((double)(float)((double)x * 10.0) + 1.0);
                wrong += ((float *)v->data[i])[k] != vx;
                wrong += ((float *)w->data[i])[k] != (float)(2.0 / (double)vx);
            }
        }
        CHECK_MSG(wrong == 0, "batch %d: %d values differ from float32 arithmetic", batch, wrong);
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
    /* 1 - coin is 0 or 1 and equals 1 - the coin; -coin and +coin */
    p = pipe_of("def pipe():\n"
                "    c = fn.random.coin_flip()\n"
                "    return c, 1 - c, -c, +c\n",
                &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    sl_batch *b = NULL;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        for (int i = 0; i < 8; i++) {
            int32_t c = *(int32_t *)sl_batch_output(b, 0)->data[i];
            CHECK_EQ_INT(*(int32_t *)sl_batch_output(b, 1)->data[i], 1 - c);
            CHECK_EQ_INT(*(int32_t *)sl_batch_output(b, 2)->data[i], -c);
            CHECK_EQ_INT(*(int32_t *)sl_batch_output(b, 3)->data[i], c);
        }
        sl_pipeline_release(p, b);
    }
    CHECK(b != NULL);
    sl_pipeline_free(p);

    /* the rest of DALI's operators, on an int32 k and a float32 u, against C's formulas */
    p = pipe_of(
        "def pipe():\n"
        "    c = fn.random.coin_flip()\n"
        "    u = fn.random.uniform(range=[-5.0, 5.0], shape=[4])\n"
        "    k = fn.cast(u * 3, dtype=types.INT32)\n"
        "    return (k, u, c, k // 2, k % 3, k ** 2, u > 0.5, 1 <= k, (c == 1) & (k != 0),\n"
        "            c | True, ~k, k << 2, k >> 1, u // 2, u % 2, 7 - k * 2 ^ 5)\n",
        &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    b = NULL;
    if (p && sl_pipeline_next(p, &b) == SL_OK) {
        static const sl_dtype want[] = {SL_DTYPE_I32,  SL_DTYPE_F32, SL_DTYPE_I32,  SL_DTYPE_I32,
                                        SL_DTYPE_I32,  SL_DTYPE_I32, SL_DTYPE_BOOL, SL_DTYPE_BOOL,
                                        SL_DTYPE_BOOL, SL_DTYPE_I32, SL_DTYPE_I32,  SL_DTYPE_I32,
                                        SL_DTYPE_I32,  SL_DTYPE_F32, SL_DTYPE_F32,  SL_DTYPE_I32};
        for (int o = 0; o < 16; o++) CHECK_EQ_INT(sl_batch_output(b, o)->dtype, want[o]);
        int wrong = 0;
        for (int i = 0; i < 8; i++) {
            int32_t c = *(int32_t *)sl_batch_output(b, 2)->data[i];
            for (int k = 0; k < 4; k++) {
                int32_t x = ((int32_t *)sl_batch_output(b, 0)->data[i])[k];
                float u = ((float *)sl_batch_output(b, 1)->data[i])[k];
#define I32(o) (((int32_t *)sl_batch_output(b, o)->data[i])[o == 9 ? 0 : k])
#define B8(o)  (((uint8_t *)sl_batch_output(b, o)->data[i])[k])
#define F32(o) (((float *)sl_batch_output(b, o)->data[i])[k])
                wrong += I32(3) != x / 2; /* C's truncation, as DALI's */
                wrong += I32(4) != x % 3;
                wrong += I32(5) != x * x;
                wrong += B8(6) != (u > 0.5f);
                wrong += B8(7) != (1 <= x);
                wrong += B8(8) != (c == 1 && x != 0);
                wrong += I32(9) != 1;
                wrong += I32(10) != ~x;
                wrong += I32(11) != (int32_t)((uint32_t)x << 2);
                wrong += I32(12) != x >> 1;
                wrong += F32(13) != u / 2.0f;
                wrong += F32(14) != fmodf(u, 2.0f);
                wrong += I32(15) != ((7 - x * 2) ^ 5);
#undef I32
#undef B8
#undef F32
            }
        }
        CHECK_MSG(wrong == 0, "%d values differ from C's operators", wrong);
        sl_pipeline_release(p, b);
    }
    CHECK(b != NULL);
    sl_pipeline_free(p);
    p = pipe_of("def pipe():\n"
                "    c = fn.random.coin_flip()\n"
                "    return c + 'a'\n",
                &e);
    CHECK(p == NULL);
    CHECK_MSG(!check_needle_missing(e.msg, "math.py:3") &&
                  !check_needle_missing(e.msg, "unsupported operand type for '+' with an op "
                                               "output: str"),
              "%s", e.msg);
    p = pipe_of("def pipe():\n"
                "    u = fn.random.uniform(range=[-5.0, 5.0])\n"
                "    return u & 1\n",
                &e);
    CHECK_MSG(p != NULL, "%s", e.msg); /* types are known when the pipeline runs */
    b = NULL;
    CHECK(p && sl_pipeline_next(p, &b) != SL_OK);
    CHECK_MSG(p && !check_needle_missing(sl_pipeline_errmsg(p), "'&' on a floating operand "
                                                                "(float32 & int32)"),
              "%s", p ? sl_pipeline_errmsg(p) : "");
    sl_pipeline_free(p);
}

int main(void) {
    test_promotions();
    test_broadcast();
    test_text();
    return check_done();
}
