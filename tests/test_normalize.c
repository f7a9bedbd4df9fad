/* SPDX-License-Identifier: Apache-2.0 */
/* normalize against a two-pass reference written here (HWC samples of different sizes):
 * - all axes (the default): each sample's own mean and population stddev;
 * - axes=[0, 1] and axis_names="HW": per channel;
 * - given mean and stddev; scale, shift and UINT8 output (rounded to nearest even, saturated);
 * - ddof=1; epsilon (computed and given stddev); a constant sample maps to shift;
 * - batch=True: one mean and stddev per channel over the whole batch;
 * - errors: axes with axis_names, an axis the input lacks, batch=True with differing channel
 *   counts, a non-positive stddev, a per-sample stddev with batch=True.
 * Runs on 3 pool threads. */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4, C = 3 };

static const int64_t H[N] = {4, 7, 1, 5}, W[N] = {6, 3, 9, 5};

static double value(int i, int64_t k) {
    return i == 2 ? 42.0 : (double)((k * 37 + (int64_t)i * 101) % 251) + 0.25 * (double)(k % 4);
}

static void make(sl_tlist *l, sl_dtype t, int channels_last_differ) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++) {
        shapes[3 * i] = H[i], shapes[3 * i + 1] = W[i];
        shapes[3 * i + 2] = channels_last_differ && i == 3 ? C + 1 : C;
    }
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "HWC");
    for (int i = 0; i < N; i++) {
        int64_t n = shapes[3 * i] * shapes[3 * i + 1] * shapes[3 * i + 2];
        for (int64_t k = 0; k < n; k++) {
            if (t == SL_DTYPE_U8)
                ((uint8_t *)l->data[i])[k] = (uint8_t)value(i, k);
            else
                ((float *)l->data[i])[k] = (float)value(i, k);
        }
    }
}

/* the reference: per channel (per_channel) or whole-sample statistics, over samples [i0, i1) */
static void ref_stats(const sl_tlist *in, int i0, int i1, bool per_channel, int ddof, double eps,
                      double *mean, double *inv) {
    for (int c = 0; c < C; c++) {
        double sum = 0, sq = 0;
        int64_t n = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int i = i0; i < i1; i++)
                for (int64_t k = 0; k < H[i] * W[i] * C; k++) {
                    if (per_channel && k % C != c) continue;
                    double x = ((float *)in->data[i])[k];
                    if (pass == 0)
                        sum += x, n++;
                    else
                        sq += (x - sum / (double)n) * (x - sum / (double)n);
                }
        mean[c] = sum / (double)n;
        double var = sq / (double)(n - ddof) + eps;
        inv[c] = var > 0 ? 1 / sqrt(var) : 0;
        if (!per_channel) {
            for (int d = 1; d < C; d++) mean[d] = mean[0], inv[d] = inv[0];
            return;
        }
    }
}

static const sl_tlist *run(oph *h, const char *const *argv, sl_tlist *in, sl_tlist *arg, sl_err *e,
                           sl_status *st) {
    *st = oph_create(h, "normalize", argv, 3, N, 0, e);
    if (*st != SL_OK) return NULL;
    sl_tlist *ins[1] = {in}, *args[1] = {arg};
    *st = oph_run(h, N, ins, 1, args, arg ? 1 : 0, NULL, 0, e);
    return *st == SL_OK ? &h->out[0] : NULL;
}

/* worst |out - ((x - mean) * inv * scale + shift)| over the batch; batch: one set of statistics */
static double worst(const sl_tlist *in, const sl_tlist *out, bool per_channel, bool batch, int ddof,
                    double eps, double scale, double shift) {
    double mean[C], inv[C], w = 0;
    if (batch) ref_stats(in, 0, N, per_channel, ddof, eps, mean, inv);
    for (int i = 0; i < N; i++) {
        if (!batch) ref_stats(in, i, i + 1, per_channel, ddof, eps, mean, inv);
        for (int64_t k = 0; k < H[i] * W[i] * C; k++) {
            double x = ((float *)in->data[i])[k];
            double want = (x - mean[k % C]) * inv[k % C] * scale + shift;
            double d = fabs(((float *)out->data[i])[k] - want);
            if (d > w) w = d;
        }
    }
    return w;
}

int main(void) {
    sl_tlist f, u8, odd;
    make(&f, SL_DTYPE_F32, 0);
    make(&u8, SL_DTYPE_U8, 0);
    make(&odd, SL_DTYPE_F32, 1);
    oph h;
    sl_err e;
    sl_status st;
    const sl_tlist *o;

    const char *all[] = {NULL};
    o = run(&h, all, &f, NULL, &e, &st);
    CHECK_MSG(o != NULL, "%s", e.msg);
    if (o) {
        CHECK_EQ_INT(o->dtype, SL_DTYPE_F32);
        CHECK_STR(o->layout, "HWC");
        CHECK_NEAR(worst(&f, o, false, false, 0, 0, 1, 0), 0, 1e-5);
        /* sample 2 is constant: zero variance maps it to shift */
        CHECK_EQ_INT(((float *)o->data[2])[0] == 0.0f, 1);
    }
    oph_destroy(&h);

    const char *hw[] = {"axes=[0, 1]", NULL}, *hw_names[] = {"axis_names=\"HW\"", NULL};
    for (int v = 0; v < 2; v++) {
        o = run(&h, v ? hw_names : hw, &f, NULL, &e, &st);
        CHECK_MSG(o != NULL, "%s", e.msg);
        if (o) CHECK_NEAR(worst(&f, o, true, false, 0, 0, 1, 0), 0, 1e-5);
        if (o) CHECK(worst(&f, o, false, false, 0, 0, 1, 0) > 0.01); /* not the whole-sample one */
        oph_destroy(&h);
    }

    const char *ddof[] = {"axes=[0, 1]", "ddof=1", "epsilon=0.5", "scale=2.0", "shift=-1.0", NULL};
    o = run(&h, ddof, &f, NULL, &e, &st);
    if (o) CHECK_NEAR(worst(&f, o, true, false, 1, 0.5, 2, -1), 0, 1e-5);
    CHECK(o != NULL);
    oph_destroy(&h);

    const char *batch[] = {"axis_names=\"HW\"", "batch=True", NULL};
    o = run(&h, batch, &f, NULL, &e, &st);
    CHECK_MSG(o != NULL, "%s", e.msg);
    if (o) CHECK_NEAR(worst(&f, o, true, true, 0, 0, 1, 0), 0, 1e-5);
    oph_destroy(&h);

    /* given statistics on uint8: (x - 128) / 64 exactly; as UINT8 with scale and shift */
    const char *given[] = {"mean=128.0", "stddev=64.0", NULL};
    o = run(&h, given, &u8, NULL, &e, &st);
    int wrong = 0;
    for (int i = 0; o && i < N; i++)
        for (int64_t k = 0; k < H[i] * W[i] * C; k++)
            wrong += ((float *)o->data[i])[k] != (float)((((uint8_t *)u8.data[i])[k] - 128.0) / 64);
    CHECK_MSG(o && wrong == 0, "given mean/stddev: %d wrong", wrong);
    oph_destroy(&h);
    const char *to_u8[] = {"mean=100.0",  "stddev=3.0",        "scale=10.0",
                           "shift=128.0", "dtype=types.UINT8", NULL};
    o = run(&h, to_u8, &u8, NULL, &e, &st);
    wrong = 0;
    for (int i = 0; o && i < N; i++)
        for (int64_t k = 0; k < H[i] * W[i] * C; k++) {
            double v = nearbyint((((uint8_t *)u8.data[i])[k] - 100.0) * (10.0 / 3.0) + 128);
            wrong += ((uint8_t *)o->data[i])[k] != (v < 0 ? 0 : v > 255 ? 255 : v);
        }
    CHECK_MSG(o && o->dtype == SL_DTYPE_U8 && wrong == 0, "UINT8 out: %d wrong", wrong);
    oph_destroy(&h);
    const char *given_eps[] = {"mean=0.0", "stddev=3.0", "epsilon=16.0", NULL};
    o = run(&h, given_eps, &f, NULL, &e, &st); /* 1 / sqrt(9 + 16) */
    if (o) CHECK_NEAR(((float *)o->data[0])[1], ((float *)f.data[0])[1] / 5.0, 1e-5);
    CHECK(o != NULL);
    oph_destroy(&h);

    const char *both[] = {"axes=[0]", "axis_names=\"H\"", NULL};
    CHECK_FAILS(oph_create(&h, "normalize", both, 1, N, 0, &e), SL_EINVAL, &e,
                "give axes or axis_names, not both");
    oph_destroy(&h);
    const char *far[] = {"axes=[3]", NULL};
    o = run(&h, far, &f, NULL, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "normalize: axis 3, the input has 3"), "%s", e.msg);
    oph_destroy(&h);
    const char *bad_batch[] = {"axes=[0, 1]", "batch=True", NULL};
    o = run(&h, bad_batch, &odd, NULL, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "normalize: sample 3: batch=True"), "%s", e.msg);
    oph_destroy(&h);
    const char *zero[] = {"stddev=0.0", NULL};
    o = run(&h, zero, &f, NULL, &e, &st);
    CHECK(o == NULL && st == SL_EINVAL);
    CHECK_MSG(!check_needle_missing(e.msg, "stddev 0 is not positive"), "%s", e.msg);
    oph_destroy(&h);
    const char *ps_batch[] = {"stddev=@0", "batch=True", NULL};
    CHECK_FAILS(oph_create(&h, "normalize", ps_batch, 1, N, 0, &e), SL_EINVAL, &e,
                "per-sample mean or stddev cannot be used with batch=True");
    oph_destroy(&h);

    /* empty samples: a kept extent of 0 (no statistics at all), a reduced one of 0 */
    sl_tlist empty;
    int64_t eshapes[N * 2] = {0, 4, 3, 0, 0, 0, 2, 2};
    memset(&empty, 0, sizeof empty);
    CHECK_OK(sl_tlist_reset(&empty, N, SL_DTYPE_F32, 2, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&empty, eshapes, &e), &e);
    for (int k = 0; k < 4; k++) ((float *)empty.data[3])[k] = (float)k;
    for (int b = 0; b < 2; b++) {
        const char *ax1[] = {"axes=[1]", b ? "batch=False" : NULL, NULL};
        o = run(&h, ax1, &empty, NULL, &e, &st);
        CHECK_MSG(o != NULL, "%s", e.msg);
        if (o) CHECK_NEAR(((float *)o->data[3])[1], 1.0, 1e-6); /* row (2, 3): mean 2.5, std 0.5 */
        oph_destroy(&h);
    }
    sl_tlist_free(&empty);

    sl_tlist_free(&f), sl_tlist_free(&u8), sl_tlist_free(&odd);
    return check_done();
}
