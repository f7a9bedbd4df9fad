/* SPDX-License-Identifier: Apache-2.0 */
/* laplacian on the CPU against a direct (not separable) 3-D convolution in double: each partial
 * derivative's kernel is the outer product of its windows, built here by DALI's documented rule
 * (smoothing: binomial coefficients; derivative: [1, -2, 1] convolved with the binomial window
 * two taps shorter), borders reflect-101:
 * - DHWC float volumes of several shapes (extent 1 among them) with a per-sample window_size
 *   input ([dz, dy, dx] or one value), literal smoothing_size [3, 1, 5] and scale per axis;
 * - uint8 CHW images with normalized_kernel and window 31 (the largest), stored saturated;
 * - errors: a 'C' between the spatial axes, a per-sample window of 4 (naming the sample), a
 *   literal list of 2 for 3 axes, dtype uint16 for uint8 input, scale with normalized_kernel.
 * (Sequences, per-frame arguments and DALI's program forms: python/tests/test_laplacian.py.) */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3 };

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

static void smooth(double *k, int n) {
    for (int i = 0; i < n; i++) k[i] = 0;
    k[0] = 1;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) k[j] += k[j - 1];
}

static void deriv(double *k, int n) {
    double b[32];
    smooth(b, n - 2);
    for (int i = 0; i < n; i++) k[i] = 0;
    for (int i = 0; i < n - 2; i++) k[i] += b[i], k[i + 1] -= 2 * b[i], k[i + 2] += b[i];
}

static int64_t reflect(int64_t i, int64_t n) {
    if (n == 1) return 0;
    while (i < 0 || i >= n) i = i < 0 ? -i : 2 * n - 2 - i;
    return i;
}

/* the reference at (z, y, x, c) of a (D, H, W, C) sample; win[t][u]: window of axis u in
 * partial t (k axes: the last k of z, y, x), sc[t] its factor */
static double ref_at(const float *v, const int64_t *sh, int k, int win[3][3], const double *sc,
                     const int64_t *p) {
    double acc = 0;
    for (int t = 0; t < k; t++) {
        double w[3][32];
        int r[3] = {0, 0, 0};
        for (int u = 0; u < 3; u++) {
            int a = u - (3 - k); /* spatial axis index, or < 0: not spatial */
            if (a < 0) {
                w[u][0] = 1;
                continue;
            }
            int n = win[t][a];
            r[u] = n / 2;
            if (a == t)
                deriv(w[u], n);
            else
                smooth(w[u], n);
        }
        double part = 0;
        for (int dz = -r[0]; dz <= r[0]; dz++)
            for (int dy = -r[1]; dy <= r[1]; dy++)
                for (int dx = -r[2]; dx <= r[2]; dx++) {
                    int64_t z = reflect(p[0] + dz, sh[0]), y = reflect(p[1] + dy, sh[1]),
                            x = reflect(p[2] + dx, sh[2]);
                    part += w[0][dz + r[0]] * w[1][dy + r[1]] * w[2][dx + r[2]] *
                            v[((z * sh[1] + y) * sh[2] + x) * sh[3] + p[3]];
                }
        acc += sc[t] * part;
    }
    return acc;
}

static void make(sl_tlist *l, sl_dtype t, int ndim, const int64_t *shapes, const char *layout) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, ndim, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    strcpy(l->layout, layout);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i) / sl_dtype_size(t);
        for (size_t k = 0; k < n; k++) {
            unsigned v = rnd() % 256;
            if (t == SL_DTYPE_U8)
                ((uint8_t *)l->data[i])[k] = (uint8_t)v;
            else
                ((float *)l->data[i])[k] = (float)v;
        }
    }
}

static sl_status run(oph *h, const char *const *argv, sl_tlist *in, sl_tlist *arg, sl_err *e) {
    sl_status st = oph_create(h, "laplacian", argv, 2, N, 1, e);
    if (st != SL_OK) return st;
    sl_tlist *ins[1] = {in}, *args[1] = {arg};
    st = oph_run(h, N, ins, 1, args, arg ? 1 : 0, NULL, 0, e);
    oph_destroy(h);
    return st;
}

int main(void) {
    oph h;
    sl_err e;

    /* volumes: per-sample windows, literal smoothing and scales */
    int64_t vs[N * 4] = {5, 6, 7, 2, 1, 8, 6, 1, 7, 5, 9, 3};
    sl_tlist vol, win;
    make(&vol, SL_DTYPE_F32, 4, vs, "DHWC");
    int64_t wsh[N] = {3, 1, 3};
    memset(&win, 0, sizeof win);
    CHECK_OK(sl_tlist_reset(&win, N, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&win, wsh, &e), &e);
    const int32_t wv[N][3] = {{3, 5, 7}, {5, 0, 0}, {7, 3, 9}};
    for (int i = 0; i < N; i++) memcpy(win.data[i], wv[i], (size_t)wsh[i] * sizeof(int32_t));
    const char *a1[] = {"window_size=@0", "smoothing_size=[3, 1, 5]", "scale=[0.5, 0.25, 2.0]",
                        NULL};
    const double sc[3] = {0.5, 0.25, 2.0};
    CHECK_OK(oph_create(&h, "laplacian", a1, 2, N, 1, &e), &e);
    sl_tlist *ins[1] = {&vol}, *args[1] = {&win};
    CHECK_OK(oph_run(&h, N, ins, 1, args, 1, NULL, 0, &e), &e);
    const sl_tlist *o = &h.out[0];
    CHECK(o->dtype == SL_DTYPE_F32 && !strcmp(o->layout, "DHWC"));
    for (int i = 0; i < N; i++) {
        const int64_t *sh = vs + 4 * i;
        int w[3][3];
        for (int t = 0; t < 3; t++)
            for (int u = 0; u < 3; u++) {
                int d = wv[i][wsh[i] == 1 ? 0 : t];
                const int s[3] = {3, 1, 5};
                w[t][u] = u == t ? d : s[u];
            }
        double worst = 0;
        int64_t p[4];
        for (p[0] = 0; p[0] < sh[0]; p[0]++)
            for (p[1] = 0; p[1] < sh[1]; p[1]++)
                for (p[2] = 0; p[2] < sh[2]; p[2]++)
                    for (p[3] = 0; p[3] < sh[3]; p[3]++) {
                        int64_t at = ((p[0] * sh[1] + p[1]) * sh[2] + p[2]) * sh[3] + p[3];
                        double want = ref_at(vol.data[i], sh, 3, w, sc, p);
                        double got = ((const float *)o->data[i])[at];
                        worst = fmax(worst, fabs(got - want) / fmax(1, fabs(want)));
                    }
        CHECK_MSG(worst < 1e-5, "volume %d: relative error %g", i, worst);
    }
    oph_destroy(&h);

    /* CHW uint8, window 31 normalized: a channel-first image, stored saturated */
    int64_t is[N * 3] = {2, 9, 12, 3, 33, 4, 1, 6, 40};
    sl_tlist img;
    make(&img, SL_DTYPE_U8, 3, is, "CHW");
    float *asf[N];
    for (int i = 0; i < N; i++) { /* the same as float (D = C, one channel) for the reference */
        int64_t n = is[3 * i] * is[3 * i + 1] * is[3 * i + 2];
        asf[i] = malloc((size_t)n * sizeof(float));
        CHECK(asf[i] != NULL);
        for (int64_t k = 0; asf[i] && k < n; k++) asf[i][k] = ((uint8_t *)img.data[i])[k];
    }
    const char *a2[] = {"window_size=31", "normalized_kernel=True", NULL};
    CHECK_OK(oph_create(&h, "laplacian", a2, 2, N, 1, &e), &e);
    ins[0] = &img;
    CHECK_OK(oph_run(&h, N, ins, 1, NULL, 0, NULL, 0, &e), &e);
    o = &h.out[0];
    CHECK(o->dtype == SL_DTYPE_U8);
    for (int i = 0; i < N && asf[i]; i++) {
        int64_t sh[4] = {is[3 * i], is[3 * i + 1], is[3 * i + 2], 1}, p[4] = {0, 0, 0, 0};
        int w[3][3] = {{31, 31, 31}, {31, 31, 31}, {31, 31, 31}};
        const double f[2] = {ldexp(1, -62 + 4), ldexp(1, -62 + 4)};
        int bad = 0;
        for (p[0] = 0; p[0] < sh[0]; p[0]++)
            for (p[1] = 0; p[1] < sh[1]; p[1]++)
                for (p[2] = 0; p[2] < sh[2]; p[2]++) {
                    double want = ref_at(asf[i], sh, 2, w, f, p);
                    want = want < 0 ? 0 : want > 255 ? 255 : want;
                    int64_t at = (p[0] * sh[1] + p[1]) * sh[2] + p[2];
                    bad += fabs(((const uint8_t *)o->data[i])[at] - want) > 0.5 + 1e-9;
                }
        CHECK_MSG(bad == 0, "CHW sample %d: %d values off", i, bad);
        free(asf[i]);
    }
    oph_destroy(&h);

    /* errors */
    sl_tlist bad;
    make(&bad, SL_DTYPE_F32, 4, vs, "DHCW");
    const char *a3[] = {NULL};
    CHECK_FAILS(run(&h, a3, &bad, NULL, &e), SL_EINVAL, &e,
                "laplacian: layout \"DHCW\": 'C' between the spatial axes");
    ((int32_t *)win.data[1])[0] = 4;
    const char *a4[] = {"window_size=@0", NULL};
    CHECK_FAILS(run(&h, a4, &vol, &win, &e), SL_EINVAL, &e,
                "laplacian: sample 1: window_size 4: Window size must be an odd integer between 3 "
                "and 31, got 4 for sample: 1.");
    const char *a5[] = {"smoothing_size=[3, 5]", NULL};
    CHECK_FAILS(run(&h, a5, &vol, NULL, &e), SL_EINVAL, &e,
                "laplacian: smoothing_size has 2 values for 3 spatial axes");
    const char *a6[] = {"dtype=types.UINT16", NULL};
    CHECK_FAILS(run(&h, a6, &img, NULL, &e), SL_EINVAL, &e,
                "laplacian: dtype uint16 for a uint8 input");
    const char *a7[] = {"normalized_kernel=True", "scale=[1.0]", NULL};
    CHECK_FAILS(run(&h, a7, &img, NULL, &e), SL_EINVAL, &e,
                "laplacian: normalized_kernel=True and scale");

    sl_tlist_free(&vol);
    sl_tlist_free(&win);
    sl_tlist_free(&img);
    sl_tlist_free(&bad);
    return check_done();
}
