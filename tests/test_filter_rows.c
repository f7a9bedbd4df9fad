/* SPDX-License-Identifier: Apache-2.0 */
/* experimental.filter's CPU run (a row at a time, over padded float rows) against the element rule
 * it shares with the CUDA run (sl__filt_elem, ops/filter.h), bit for bit: every input type, both
 * output types, HW / HWC / CHW / FHWC / FCHW, the five borders (constant with and without a fill
 * value), filters of 1x1, 3x3, 2x4 (even: the anchor rounds down), 5x1 and 7x6 (larger than the
 * image), default and explicit anchors, mode "same" and "valid", samples of different sizes in one
 * batch, one and three threads. */
#include "check.h"
#include "opharness.h"
#include "ops/filter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3 };

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* a value for element k of type t: the whole range of the integer types, signed floats */
static void put(void *p, sl_dtype t, size_t k) {
    uint64_t r = next();
    double f = (double)(int64_t)(r % 2001) / 7.0 - 140.0;
    switch (t) {
    case SL_DTYPE_U8:
        ((uint8_t *)p)[k] = (uint8_t)r;
        break;
    case SL_DTYPE_I8:
        ((int8_t *)p)[k] = (int8_t)r;
        break;
    case SL_DTYPE_U16:
        ((uint16_t *)p)[k] = (uint16_t)r;
        break;
    case SL_DTYPE_I16:
        ((int16_t *)p)[k] = (int16_t)r;
        break;
    default:
        sl__dtype_conv_store(p, t, (int64_t)k, f);
        break;
    }
}

typedef struct layout_case {
    const char *layout;
    int nd;
    int frames, c; /* c: channels (1 for HW / FHW) */
    bool chan_first;
} layout_case;

/* sample i's shape of h x w (frames and channels from lc) */
static void shape_of(const layout_case *lc, int64_t h, int64_t w, int64_t *sh) {
    int d = 0;
    if (lc->frames) sh[d++] = lc->frames;
    if (lc->chan_first) sh[d++] = lc->c;
    sh[d++] = h, sh[d++] = w;
    if (!lc->chan_first && lc->c > 1) sh[d++] = lc->c;
}

static int64_t cases, mismatched;

static void one(const layout_case *lc, sl_dtype it, bool to_float, const char *border, int r, int s,
                int ay, int ax, bool valid, bool fill, int threads) {
    sl_err e;
    sl_tlist in, k, fv;
    memset(&in, 0, sizeof in), memset(&k, 0, sizeof k), memset(&fv, 0, sizeof fv);
    const int64_t hs[N] = {6, 9, 3}, ws[N] = {5, 11, 4};
    int64_t shapes[N * 4], ks[N * 2], fs[1] = {0};
    for (int i = 0; i < N; i++) {
        shape_of(lc, hs[i], ws[i], shapes + i * lc->nd);
        ks[2 * i] = r, ks[2 * i + 1] = s;
    }
    CHECK_OK(sl_tlist_reset(&in, N, it, lc->nd, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&in, shapes, &e), &e);
    snprintf(in.layout, sizeof in.layout, "%s", lc->layout);
    CHECK_OK(sl_tlist_reset(&k, N, SL_DTYPE_F32, 2, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&k, ks, &e), &e);
    CHECK_OK(sl_tlist_reset(&fv, N, it, 0, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&fv, fs, &e), &e);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(&in, i) / sl_dtype_size(it);
        for (size_t q = 0; q < n; q++) put(in.data[i], it, q);
        for (int q = 0; q < r * s; q++)
            ((float *)k.data[i])[q] = (float)((int64_t)(next() % 2001) - 1000) / 317.0f;
        put(fv.data[i], it, 0);
    }
    char a_border[48], a_anchor[48], a_mode[32], a_dtype[32];
    snprintf(a_border, sizeof a_border, "border=\"%s\"", border);
    snprintf(a_anchor, sizeof a_anchor, "anchor=[%d, %d]", ay, ax);
    snprintf(a_mode, sizeof a_mode, "mode=\"%s\"", valid ? "valid" : "same");
    snprintf(a_dtype, sizeof a_dtype, "dtype=%s", to_float ? "types.FLOAT" : "None");
    const char *argv[] = {a_border, a_anchor, a_mode, a_dtype, NULL};
    oph h;
    CHECK_OK(oph_create(&h, "experimental.filter", argv, threads, N, 1, &e), &e);
    sl_tlist *ins[3] = {&in, &k, &fv};
    CHECK_OK(oph_run(&h, N, ins, fill ? 3 : 2, NULL, 0, NULL, 0, &e), &e);
    const sl_tlist *out = &h.out[0];
    sl_dtype ot = to_float ? SL_DTYPE_F32 : it;
    CHECK_EQ_INT(out->dtype, ot);
    size_t osz = sl_dtype_size(ot);
    for (int i = 0; i < N && out->count == N; i++) {
        sl__filt f;
        memset(&f, 0, sizeof f);
        f.frames = lc->frames ? lc->frames : 1;
        f.h = hs[i], f.w = ws[i], f.c = lc->c, f.chan_first = lc->chan_first;
        f.r = r, f.s = s,
        f.border = !strcmp(border, "reflect_1001") ? SL__FB_REFLECT_1001
                   : !strcmp(border, "wrap")       ? SL__FB_WRAP
                   : !strcmp(border, "clamp")      ? SL__FB_CLAMP
                   : !strcmp(border, "constant")   ? SL__FB_CONSTANT
                                                   : SL__FB_REFLECT_101;
        f.ay = valid ? 0 : ay < 0 ? r / 2 : ay;
        f.ax = valid ? 0 : ax < 0 ? s / 2 : ax;
        f.oh = valid ? f.h - r + 1 : f.h, f.ow = valid ? f.w - s + 1 : f.w;
        int64_t n = f.frames * f.oh * f.ow * f.c;
        CHECK_EQ_INT((int64_t)(sl_tlist_sample_nbytes(out, i) / osz), n);
        if ((int64_t)(sl_tlist_sample_nbytes(out, i) / osz) != n) continue;
        float fillv = fill ? (float)sl__dtype_conv_load(fv.data[i], it, 0) : 0;
        int64_t wrong = 0;
        void *ref = malloc((size_t)n * osz);
        CHECK(ref != NULL);
        for (int64_t q = 0; ref && q < n; q++)
            sl__filt_elem(&f, in.data[i], it, k.data[i], fillv, ref, ot, q);
        for (int64_t q = 0; ref && q < n; q++)
            wrong += memcmp((const char *)ref + (size_t)q * osz,
                            (const char *)out->data[i] + (size_t)q * osz, osz) != 0;
        free(ref);
        cases++;
        if (wrong) {
            mismatched++;
            if (mismatched <= 5)
                fprintf(stderr,
                        "filter %s %s->%s border %s %dx%d anchor (%d, %d)%s%s, %d threads, sample "
                        "%d: %lld of %lld elements differ\n",
                        lc->layout, sl_dtype_name(it), sl_dtype_name(ot), border, r, s, ay, ax,
                        valid ? " valid" : "", fill ? " fill" : "", threads, i, (long long)wrong,
                        (long long)n);
        }
    }
    oph_destroy(&h);
    sl_tlist_free(&in), sl_tlist_free(&k), sl_tlist_free(&fv);
}

int main(void) {
    static const layout_case LAYOUTS[] = {{"HW", 2, 0, 1, false},
                                          {"HWC", 3, 0, 3, false},
                                          {"CHW", 3, 0, 3, true},
                                          {"FHWC", 4, 2, 2, false},
                                          {"FCHW", 4, 2, 2, true}};
    static const sl_dtype TYPES[] = {SL_DTYPE_U8,  SL_DTYPE_I8,  SL_DTYPE_U16,
                                     SL_DTYPE_I16, SL_DTYPE_F16, SL_DTYPE_F32};
    static const char *const BORDERS[] = {"reflect_101", "reflect_1001", "wrap", "clamp",
                                          "constant"};
    static const int SIZES[][2] = {{1, 1}, {3, 3}, {2, 4}, {5, 1}, {7, 6}};
    for (size_t l = 0; l < sizeof LAYOUTS / sizeof *LAYOUTS; l++)
        for (size_t t = 0; t < sizeof TYPES / sizeof *TYPES; t++)
            for (size_t b = 0; b < sizeof BORDERS / sizeof *BORDERS; b++)
                for (size_t z = 0; z < sizeof SIZES / sizeof *SIZES; z++) {
                    int r = SIZES[z][0], s = SIZES[z][1];
                    bool fill = b == 4 && z % 2 == 0;
                    one(&LAYOUTS[l], TYPES[t], (t + z) % 3 == 0, BORDERS[b], r, s, -1, -1, false,
                        fill, 1 + 2 * (int)((l + b) % 2));
                    if (r > 1 && s > 1) /* the last row and column of the filter as its anchor */
                        one(&LAYOUTS[l], TYPES[t], false, BORDERS[b], r, s, r - 1, s - 1, false,
                            fill, 1);
                }
    /* mode valid: images at least as large as the filter (3 x 4 is the smallest) */
    for (size_t l = 0; l < sizeof LAYOUTS / sizeof *LAYOUTS; l++)
        for (size_t t = 0; t < sizeof TYPES / sizeof *TYPES; t++) {
            one(&LAYOUTS[l], TYPES[t], false, "reflect_101", 3, 3, -1, -1, true, false, 2);
            one(&LAYOUTS[l], TYPES[t], true, "wrap", 2, 4, -1, -1, true, false, 1);
        }
    CHECK(cases > 1000);
    CHECK_MSG(mismatched == 0, "%lld of %lld samples differ from sl__filt_elem",
              (long long)mismatched, (long long)cases);
    return check_done();
}
