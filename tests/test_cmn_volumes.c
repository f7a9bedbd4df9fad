/* SPDX-License-Identifier: Apache-2.0 */
/* crop_mirror_normalize of volumes and sequences on the CPU, every output element against its
 * input element found by index arithmetic here:
 * - uint8 DHWC volumes -> float CDHW: crop (d, h, w) with crop_pos_z, a depth window that runs
 *   past the volume (out_of_bounds_policy pad: whole planes of fill values), per-sample mirror,
 *   per-channel mean and std, channels padded to 4;
 * - uint8 FHWC sequences with a per-sample crop_d input: the frames are the depth (DALI's rule),
 *   FCHW out, trim_to_shape where crop_d exceeds the frames. */
#include "check.h"
#include "opharness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3 };

static uint64_t rs = 0x853C49E6748FEA9Bull;
static uint32_t rnd(void) {
    rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

static void make(sl_tlist *l, sl_dtype t, int nd, const int64_t *shapes, const char *layout) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, N, t, nd, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    strcpy(l->layout, layout);
    for (int i = 0; i < N; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i) / sl_dtype_size(t);
        for (size_t k = 0; k < n; k++) {
            if (t == SL_DTYPE_U8)
                ((uint8_t *)l->data[i])[k] = (uint8_t)(rnd() % 256);
            else if (t == SL_DTYPE_I32)
                ((int32_t *)l->data[i])[k] = (int32_t)(rnd() % 2);
            else
                ((float *)l->data[i])[k] = 0;
        }
    }
}

static int64_t anchor(double pos, int64_t n, int64_t ext) {
    return (int64_t)floorf((float)pos * (float)(n - ext) + 0.5f);
}

int main(void) {
    oph h;
    sl_err e;

    /* volumes: DHWC -> CDHW */
    int64_t vs[N * 4] = {6, 9, 10, 3, 3, 8, 8, 3, 7, 12, 9, 3};
    sl_tlist vol, mir;
    make(&vol, SL_DTYPE_U8, 4, vs, "DHWC");
    int64_t ms[N] = {1, 1, 1};
    make(&mir, SL_DTYPE_I32, 1, ms, "");
    const char *a1[] = {"crop=[5.0, 6.0, 7.0]",
                        "crop_pos_z=0.7",
                        "crop_pos_y=0.25",
                        "mean=[10.0, 20.0, 30.0]",
                        "std=[2.0, 4.0, 8.0]",
                        "mirror=@0",
                        "pad_output=True",
                        "fill_values=[-1.0, -2.0, -3.0, -4.0]",
                        "output_layout=\"CDHW\"",
                        "out_of_bounds_policy=\"pad\"",
                        NULL};
    CHECK_OK(oph_create(&h, "crop_mirror_normalize", a1, 2, N, 1, &e), &e);
    sl_tlist *ins[1] = {&vol}, *args[1] = {&mir};
    CHECK_OK(oph_run(&h, N, ins, 1, args, 1, NULL, 0, &e), &e);
    const sl_tlist *o = &h.out[0];
    CHECK(o->ndim == 4 && !strcmp(o->layout, "CDHW") && o->dtype == SL_DTYPE_F32);
    const double mean[3] = {10, 20, 30}, sd[3] = {2, 4, 8}, fill[4] = {-1, -2, -3, -4};
    for (int i = 0; i < N && o->ndim == 4; i++) {
        const int64_t *sh = vs + 4 * i, *osh = sl_tlist_shape(o, i);
        CHECK(osh[0] == 4 && osh[1] == 5 && osh[2] == 6 && osh[3] == 7);
        int64_t z0 = anchor(0.7, sh[0], 5), y0 = anchor(0.25, sh[1], 6), x0 = anchor(0.5, sh[2], 7);
        int flip = ((int32_t *)mir.data[i])[0];
        int bad = 0;
        for (int64_t c = 0; c < 4; c++)
            for (int64_t z = 0; z < 5; z++)
                for (int64_t y = 0; y < 6; y++)
                    for (int64_t x = 0; x < 7; x++) {
                        int64_t sz = z0 + z, sy = y0 + y, sx = x0 + (flip ? 6 - x : x);
                        bool in = sz >= 0 && sz < sh[0] && sy >= 0 && sy < sh[1] && sx >= 0 &&
                                  sx < sh[2] && c < 3;
                        double want = fill[c];
                        if (in) {
                            uint8_t v =
                                ((uint8_t *)vol.data[i])[((sz * sh[1] + sy) * sh[2] + sx) * 3 + c];
                            want = ((double)v - mean[c]) / sd[c];
                        }
                        float got = ((float *)o->data[i])[((c * 5 + z) * 6 + y) * 7 + x];
                        bad += fabs(got - want) > 1e-5;
                    }
        CHECK_MSG(bad == 0, "volume %d: %d elements off", i, bad);
    }
    oph_destroy(&h);

    /* sequences cropped along their frames by a per-sample crop_d */
    int64_t ss[N * 4] = {7, 5, 6, 3, 4, 5, 6, 3, 9, 6, 5, 3};
    sl_tlist seq, cd;
    make(&seq, SL_DTYPE_U8, 4, ss, "FHWC");
    make(&cd, SL_DTYPE_F32, 1, ms, "");
    const float depth[N] = {3, 6, 1}; /* sample 1: more than its 4 frames: trimmed */
    for (int i = 0; i < N; i++) ((float *)cd.data[i])[0] = depth[i];
    const char *a2[] = {"crop_d=@0",
                        "crop_h=4.0",
                        "crop_w=4.0",
                        "crop_pos_z=0.5",
                        "output_layout=\"FCHW\"",
                        "out_of_bounds_policy=\"trim_to_shape\"",
                        NULL};
    CHECK_OK(oph_create(&h, "crop_mirror_normalize", a2, 2, N, 1, &e), &e);
    ins[0] = &seq, args[0] = &cd;
    CHECK_OK(oph_run(&h, N, ins, 1, args, 1, NULL, 0, &e), &e);
    o = &h.out[0];
    CHECK(o->ndim == 4 && !strcmp(o->layout, "FCHW"));
    for (int i = 0; i < N && o->ndim == 4; i++) {
        const int64_t *sh = ss + 4 * i, *osh = sl_tlist_shape(o, i);
        int64_t d = (int64_t)depth[i], f0 = anchor(0.5, sh[0], d);
        if (f0 < 0) d += f0, f0 = 0;
        if (f0 + d > sh[0]) d = sh[0] - f0;
        CHECK_MSG(osh[0] == d && osh[1] == 3 && osh[2] == 4 && osh[3] == 4,
                  "sequence %d: %lld frames, want %lld", i, (long long)osh[0], (long long)d);
        if (osh[0] != d) continue;
        int64_t y0 = anchor(0.5, sh[1], 4), x0 = anchor(0.5, sh[2], 4);
        int bad = 0;
        for (int64_t f = 0; f < d; f++)
            for (int64_t c = 0; c < 3; c++)
                for (int64_t y = 0; y < 4; y++)
                    for (int64_t x = 0; x < 4; x++) {
                        uint8_t v =
                            ((uint8_t *)seq
                                 .data[i])[(((f0 + f) * sh[1] + y0 + y) * sh[2] + x0 + x) * 3 + c];
                        float got = ((float *)o->data[i])[((f * 3 + c) * 4 + y) * 4 + x];
                        bad += got != (float)v;
                    }
        CHECK_MSG(bad == 0, "sequence %d: %d elements off", i, bad);
    }
    oph_destroy(&h);

    sl_tlist_free(&vol);
    sl_tlist_free(&mir);
    sl_tlist_free(&seq);
    sl_tlist_free(&cd);
    return check_done();
}
