/* SPDX-License-Identifier: Apache-2.0 */
/* gaussian_blur on the CPU against a direct 2-D convolution in double (reflect-101 borders, the
 * weights exp(-k^2 / (2 sigma^2)) normalised) on random images:
 * - float HWC with sigma [1.3, 0.7] (windows 2 ceil(3 sigma) + 1: 9 and 5 taps), within 2e-3 on
 *   values up to 255; uint8 with window_size 5 alone (sigma 1.1 by DALI's rule), within 1;
 *   images narrower than the window reflect more than once;
 * - a per-sample sigma input (one value or [y, x]), sigma 0 with a window taking DALI's sigma
 *   for that window, and a constant image staying constant exactly;
 * - errors: neither sigma nor window_size, an even window, a negative sigma (naming the sample),
 *   sigma and window both 0 on an axis, a 'C' between the spatial axes. (Volumes, sequences and
 *   channel-first layouts: python/tests/test_gaussian_blur.py.) */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 4, C = 3 };

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

static void make(sl_tlist *l, sl_dtype t, int h, int w, bool constant) {
    sl_err e;
    int64_t shapes[N * 3];
    for (int i = 0; i < N; i++)
        shapes[3 * i] = h + 3 * i, shapes[3 * i + 1] = w - i, shapes[3 * i + 2] = C;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, 3, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    memcpy(l->layout, "HWC", 4);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i) / sl_dtype_size(t);
        for (size_t k = 0; k < n; k++) {
            unsigned v = constant ? 77 : rnd() % 256;
            if (t == SL_DTYPE_U8)
                ((uint8_t *)l->data[i])[k] = (uint8_t)v;
            else
                ((float *)l->data[i])[k] = (float)v;
        }
    }
}

static int64_t reflect(int64_t i, int64_t n) {
    if (n == 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
    return i;
}

static double at(const sl_tlist *l, int i, int64_t k) {
    return l->dtype == SL_DTYPE_U8 ? ((const uint8_t *)l->data[i])[k]
                                   : ((const float *)l->data[i])[k];
}

/* worst |out - reference| with sigmas sg[i][2] and radii r[2] per sample */
static double worst(const sl_tlist *in, const sl_tlist *o, double (*sg)[2], int (*r)[2]) {
    double w = 0;
    for (int i = 0; o && i < N; i++) {
        int64_t H = sl_tlist_shape(in, i)[0], W = sl_tlist_shape(in, i)[1];
        double wt[2][64];
        for (int d = 0; d < 2; d++) {
            double sum = 0;
            for (int k = -r[i][d]; k <= r[i][d]; k++)
                sum += wt[d][k + r[i][d]] =
                    sg[i][d] > 0 ? exp(-(double)k * k / (2 * sg[i][d] * sg[i][d])) : k == 0;
            for (int k = 0; k <= 2 * r[i][d]; k++) wt[d][k] /= sum;
        }
        for (int64_t y = 0; y < H; y++)
            for (int64_t x = 0; x < W; x++)
                for (int c = 0; c < C; c++) {
                    double ref = 0;
                    for (int ky = -r[i][0]; ky <= r[i][0]; ky++)
                        for (int kx = -r[i][1]; kx <= r[i][1]; kx++)
                            ref += wt[0][ky + r[i][0]] * wt[1][kx + r[i][1]] *
                                   at(in, i, (reflect(y + ky, H) * W + reflect(x + kx, W)) * C + c);
                    w = fmax(w, fabs(at(o, i, (y * W + x) * C + c) - ref));
                }
    }
    return o ? w : INFINITY;
}

static sl_status run(oph *h, const char *const *argv, sl_tlist *in, sl_tlist *arg,
                     const sl_tlist **out, sl_err *e) {
    *out = NULL;
    sl_status st = oph_create(h, "gaussian_blur", argv, 2, N, 1, e);
    if (st != SL_OK) return st;
    sl_tlist *ins[1] = {in}, *args[1] = {arg};
    st = oph_run(h, N, ins, 1, args, arg ? 1 : 0, NULL, 0, e);
    if (st == SL_OK) *out = &h->out[0];
    return st;
}

int main(void) {
    sl_tlist f, u, flat, narrow;
    make(&f, SL_DTYPE_F32, 12, 15, false);
    make(&u, SL_DTYPE_U8, 10, 13, false);
    make(&flat, SL_DTYPE_U8, 6, 9, true);
    make(&narrow, SL_DTYPE_F32, 3, 5, false); /* 3 to 12 rows, 2 to 5 columns */
    oph h;
    sl_err e;
    const sl_tlist *o;
    double sg[N][2];
    int r[N][2];

    const char *a1[] = {"sigma=[1.3, 0.7]", NULL};
    for (int i = 0; i < N; i++) sg[i][0] = 1.3, sg[i][1] = 0.7, r[i][0] = 4, r[i][1] = 3;
    CHECK_OK(run(&h, a1, &f, NULL, &o, &e), &e);
    CHECK_MSG(worst(&f, o, sg, r) <= 2e-3, "float: %g off", worst(&f, o, sg, r));
    if (o) CHECK(o->dtype == SL_DTYPE_F32 && !strcmp(o->layout, "HWC"));
    oph_destroy(&h);
    CHECK_OK(run(&h, a1, &narrow, NULL, &o, &e), &e);
    CHECK_MSG(worst(&narrow, o, sg, r) <= 2e-3, "narrow: %g off", worst(&narrow, o, sg, r));
    oph_destroy(&h);

    const char *a2[] = {"window_size=5", NULL};
    for (int i = 0; i < N; i++) sg[i][0] = sg[i][1] = 0.3 * (2 - 1) + 0.8, r[i][0] = r[i][1] = 2;
    CHECK_OK(run(&h, a2, &u, NULL, &o, &e), &e);
    CHECK_MSG(worst(&u, o, sg, r) <= 1, "uint8, window 5: %g off", worst(&u, o, sg, r));
    oph_destroy(&h);

    /* per-sample sigma: [0.5, 1.5] for even samples, 0.9 for odd */
    sl_tlist sig;
    int64_t sh[N];
    for (int i = 0; i < N; i++) sh[i] = i % 2 ? 1 : 2;
    memset(&sig, 0, sizeof sig);
    CHECK_OK(sl_tlist_reset(&sig, N, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&sig, sh, &e), &e);
    for (int i = 0; i < N; i++) {
        float *v = sig.data[i];
        if (i % 2)
            v[0] = 0.9f, sg[i][0] = sg[i][1] = 0.9f, r[i][0] = r[i][1] = 3;
        else
            v[0] = 0.5f, v[1] = 1.5f, sg[i][0] = 0.5f, sg[i][1] = 1.5f, r[i][0] = 2, r[i][1] = 5;
    }
    const char *a3[] = {"sigma=@0", NULL};
    CHECK_OK(run(&h, a3, &f, &sig, &o, &e), &e);
    CHECK_MSG(worst(&f, o, sg, r) <= 2e-3, "per-sample sigma: %g off", worst(&f, o, sg, r));
    oph_destroy(&h);
    sl_tlist_free(&sig);

    /* sigma 0 on an axis with a window: DALI's sigma for that window (7 taps: 1.4) */
    const char *a5[] = {"sigma=[0.0, 0.8]", "window_size=[7, 3]", NULL};
    for (int i = 0; i < N; i++)
        sg[i][0] = 0.3 * (3 - 1) + 0.8, sg[i][1] = 0.8, r[i][0] = 3, r[i][1] = 1;
    CHECK_OK(run(&h, a5, &f, NULL, &o, &e), &e);
    CHECK_MSG(worst(&f, o, sg, r) <= 2e-3, "sigma 0 with a window: %g off", worst(&f, o, sg, r));
    oph_destroy(&h);

    const char *a4[] = {"sigma=2.0", NULL};
    CHECK_OK(run(&h, a4, &flat, NULL, &o, &e), &e);
    for (int i = 0; o && i < N; i++)
        CHECK(!memcmp(o->data[i], flat.data[i], sl_tlist_sample_nbytes(o, i)));
    oph_destroy(&h);

    /* errors */
    const char *none[] = {NULL};
    CHECK_FAILS(run(&h, none, &u, NULL, &o, &e), SL_EINVAL, &e, "give sigma");
    const char *even[] = {"window_size=4", NULL};
    CHECK_FAILS(run(&h, even, &u, NULL, &o, &e), SL_EINVAL, &e, "odd");
    oph_destroy(&h); /* refused per sample, in setup: the op was made */
    const char *neg[] = {"sigma=-1.0", NULL};
    CHECK_FAILS(run(&h, neg, &u, NULL, &o, &e), SL_EINVAL, &e, "sigma -1 of axis 0 is negative");
    CHECK_MSG(strstr(e.msg, "sample 0") != NULL, "%s", e.msg);
    oph_destroy(&h);
    const char *zero[] = {"sigma=0.0", NULL};
    CHECK_FAILS(run(&h, zero, &u, NULL, &o, &e), SL_EINVAL, &e,
                "gaussian_blur: sample 0: sigma and window_size of axis 0 are both 0");
    oph_destroy(&h);
    memcpy(u.layout, "HCW", 4);
    const char *ok[] = {"sigma=1.0", NULL};
    CHECK_FAILS(run(&h, ok, &u, NULL, &o, &e), SL_EINVAL, &e,
                "gaussian_blur: layout \"HCW\": 'C' between the spatial axes");
    oph_destroy(&h);

    sl_tlist_free(&f), sl_tlist_free(&u), sl_tlist_free(&flat), sl_tlist_free(&narrow);
    return check_done();
}
