/* SPDX-License-Identifier: Apache-2.0 */
/* crop_mirror_normalize reproduces DALI_extra's crop/flip/normalise/transpose/pad vectors
 * (dali_extra/cmn, see ARGS.md) within 1e-6, each sample run with its own arguments (DALI's test
 * feeds per-sample mean/std; here sample i gets its own op instance, and once more the whole batch
 * with per-sample mean/std/mirror inputs). Also: dtypes, pad_output, trim_to_shape, the error
 * policy naming the record, per-sample mirror from another op's output, and the CPU run's table
 * path for larger uint8 windows. */
#include "check.h"
#include "npy.h"
#include "opharness.h"

#include "core/half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const int RY0[3] = {2, 22, 55}, RX0[3] = {8, 2, 4}, RY1[3] = {8, 28, 100},
                 RX1[3] = {19, 4, 5};
static const int FLIPY[3] = {0, 1, 0}, FLIPX[3] = {1, 1, 0};
static const double M[3][3] = {{0.485, 0.456, 0.406}, {0.455, 0.436, 0.416}, {0.495, 0.466, 0.396}};
static const double S[3][3] = {{0.229, 0.224, 0.225}, {0.225, 0.224, 0.221}, {0.226, 0.229, 0.222}};
/* pad vectors: region start (y, x) and end */
static const int PY0[3] = {-2, 0, 0}, PX0[3] = {0, -4, 0}, PY1[3] = {8, 28, 120},
                 PX1[3] = {19, 4, 5};

static double worst;

static void compare(const sl_tlist *l, int k, const char *ref_rel, double tol) {
    sl_err e;
    sl_tensor ref;
    CHECK_OK(npy_load(fixture(ref_rel), &ref, &e), &e);
    const int64_t *sh = sl_tlist_shape(l, k);
    CHECK_EQ_INT(l->ndim, ref.ndim);
    int ok = 1;
    for (int d = 0; d < ref.ndim; d++) ok &= sh[d] == ref.shape[d];
    CHECK_MSG(ok, "%s: shape (%lld,%lld,%lld) vs (%lld,%lld,%lld)", ref_rel, (long long)sh[0],
              (long long)sh[1], (long long)sh[2], (long long)ref.shape[0], (long long)ref.shape[1],
              (long long)ref.shape[2]);
    CHECK_EQ_INT(l->dtype, ref.dtype);
    if (ok && l->dtype == ref.dtype) {
        int64_t n = sl_tensor_numel(&ref);
        double m = 0;
        for (int64_t i = 0; i < n; i++) {
            double a =
                ref.dtype == SL_DTYPE_U8 ? ((uint8_t *)l->data[k])[i] : ((float *)l->data[k])[i];
            double b = ref.dtype == SL_DTYPE_U8 ? ((uint8_t *)ref.data)[i] : ((float *)ref.data)[i];
            if (fabs(a - b) > m) m = fabs(a - b);
        }
        if (m > worst) worst = m;
        CHECK_MSG(m <= tol, "%s: max |diff| %g > %g", ref_rel, m, tol);
    }
    sl_tensor_free(&ref);
}

/* runs one op over the three inputs (or sample i alone when i >= 0) */
static void run(oph *h, sl_tlist *in, int i, sl_tlist *const *argin, int nargin) {
    sl_err e;
    sl_tlist one;
    memset(&one, 0, sizeof one);
    sl_tlist *ins[1] = {in};
    if (i >= 0) {
        CHECK_OK(sl_tlist_reset(&one, 1, in->dtype, 3, sl_cpu(), &e), &e);
        sl_tlist_set_external(&one, 0, in->data[i], sl_tlist_shape(in, i));
        memcpy(one.layout, "HWC", 4);
        ins[0] = &one;
    }
    const char *keys[3] = {"input0", "input1", "input2"};
    CHECK_OK(oph_run(h, i >= 0 ? 1 : 3, ins, 1, argin, nargin, i >= 0 ? keys + i : keys, 0, &e),
             &e);
    sl_tlist_free(&one);
}

static void fmt3(char *buf, size_t n, const char *name, const double *v, double mul) {
    snprintf(buf, n, "%s=[%.9g, %.9g, %.9g]", name, (double)(float)(v[0] * mul),
             (double)(float)(v[1] * mul), (double)(float)(v[2] * mul));
}

/* Windows of more than 1024 pixels from uint8 HWC take the CPU run's table path (each channel's
 * 256 outputs worked out once): every element, inside the image and in the padding, mirrored,
 * must equal the formula the generic loop computes, for float16 and float outputs. */
static void test_table_path(void) {
    enum { H = 48, W = 40, CH = 50, CW = 44 };
    static uint8_t img[H * W * 3];
    uint32_t r = 12345;
    for (int k = 0; k < H * W * 3; k++) img[k] = (uint8_t)((r = r * 1103515245u + 12345u) >> 23);
    const float mean[3] = {10, 20, 30}, sd[3] = {50, 60, 70}, fill[3] = {1, 2, 3};
    for (int half = 0; half <= 1; half++) {
        sl_err e;
        sl_tlist in;
        memset(&in, 0, sizeof in);
        int64_t shape[3] = {H, W, 3};
        CHECK_OK(sl_tlist_reset(&in, 1, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
        sl_tlist_set_external(&in, 0, img, shape);
        memcpy(in.layout, "HWC", 4);
        const char *argv[] = {"mean=[10.0, 20.0, 30.0]",
                              "std=[50.0, 60.0, 70.0]",
                              "mirror=1",
                              "crop=[50, 44]",
                              "out_of_bounds_policy=\"pad\"",
                              "fill_values=[1.0, 2.0, 3.0]",
                              half ? "dtype=types.FLOAT16" : "dtype=types.FLOAT",
                              "output_layout=\"CHW\"",
                              NULL};
        oph op;
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv, 1, 1, 0, &e), &e);
        sl_tlist *ins[1] = {&in};
        CHECK_OK(oph_run(&op, 1, ins, 1, NULL, 0, NULL, 0, &e), &e);
        int bad = 0;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < CH; y++)
                for (int x = 0; x < CW; x++) {
                    int sy = -1 + y, sx = -2 + (CW - 1 - x); /* anchor (-1, -2), mirrored */
                    bool in_b = sy >= 0 && sy < H && sx >= 0 && sx < W;
                    float want = in_b ? ((float)img[(sy * W + sx) * 3 + c] - mean[c]) *
                                            (float)(1.0 / (double)sd[c])
                                      : fill[c];
                    int64_t k = ((int64_t)c * CH + y) * CW + x;
                    bool same =
                        half ? ((const uint16_t *)op.out[0].data[0])[k] == sl__f32_to_f16(want)
                             : ((const float *)op.out[0].data[0])[k] == want;
                    bad += !same;
                }
        CHECK_MSG(bad == 0, "%s: %d of %d elements differ from the formula",
                  half ? "float16" : "float", bad, 3 * CH * CW);
        oph_destroy(&op);
        sl_tlist_free(&in);
    }
}

int main(void) {
    test_table_path();
    sl_err e;
    sl_tensor t[3];
    sl_tlist in;
    memset(&in, 0, sizeof in);
    CHECK_OK(sl_tlist_reset(&in, 3, SL_DTYPE_U8, 3, sl_cpu(), &e), &e);
    for (int i = 0; i < 3; i++) {
        char p[64];
        snprintf(p, sizeof p, "dali_extra/cmn/input%d.npy", i);
        CHECK_OK(npy_load(fixture(p), &t[i], &e), &e);
        sl_tlist_set_external(&in, i, t[i].data, t[i].shape);
    }
    memcpy(in.layout, "HWC", 4);

    for (int i = 0; i < 3; i++) {
        char crop[64], anchor[64], mirror[32], mirror_v[32], mean[96], std[96], fill[96], ref[64];
        int h = RY1[i] - RY0[i], w = RX1[i] - RX0[i];
        snprintf(crop, sizeof crop, "crop=[%d, %d]", h, w);
        snprintf(anchor, sizeof anchor, "crop_anchor=[%d, %d]", RY0[i], RX0[i]);
        snprintf(mirror, sizeof mirror, "mirror=%d", FLIPX[i]);
        snprintf(mirror_v, sizeof mirror_v, "mirror_vertical=%d", FLIPY[i]);
        fmt3(mean, sizeof mean, "mean", M[i], 255.0);
        fmt3(std, sizeof std, "std", S[i], 255.0);
        static const char *const kinds[4] = {"c", "cm", "cmn", "cmnt"};
        for (int k = 0; k < 4; k++) {
            const char *argv[12];
            int n = 0;
            argv[n++] = crop;
            argv[n++] = anchor;
            if (k >= 1) argv[n++] = mirror, argv[n++] = mirror_v;
            if (k >= 2) argv[n++] = mean, argv[n++] = std;
            argv[n++] = k == 3 ? "output_layout=\"CHW\"" : "output_layout=\"HWC\"";
            argv[n++] = k < 2 ? "dtype=types.UINT8" : "dtype=types.FLOAT";
            argv[n] = NULL;
            oph op;
            CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv, 1, 1, 0, &e), &e);
            run(&op, &in, i, NULL, 0);
            snprintf(ref, sizeof ref, "dali_extra/cmn/output%d_%s.npy", i, kinds[k]);
            compare(&op.out[0], 0, ref, k < 2 ? 0 : 1e-6);
            oph_destroy(&op);
        }
        /* pad: window partly outside, 4 channels, fill = [255, 128, 64, 32] + i */
        snprintf(crop, sizeof crop, "crop=[%d, %d]", PY1[i] - PY0[i], PX1[i] - PX0[i]);
        snprintf(anchor, sizeof anchor, "crop_anchor=[%d, %d]", PY0[i], PX0[i]);
        snprintf(fill, sizeof fill, "fill_values=[%d, %d, %d, %d]", 255 + i, 128 + i, 64 + i,
                 32 + i);
        const char *argv[] = {crop,
                              anchor,
                              mean,
                              std,
                              fill,
                              "pad_output=True",
                              "out_of_bounds_policy=\"pad\"",
                              "output_layout=\"HWC\"",
                              NULL};
        oph op;
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv, 1, 1, 0, &e), &e);
        run(&op, &in, i, NULL, 0);
        snprintf(ref, sizeof ref, "dali_extra/cmn/output%d_pn.npy", i);
        compare(&op.out[0], 0, ref, 1e-6);
        oph_destroy(&op);
    }
    printf("cmn vectors: worst |diff| %.3g (tolerance 1e-6)\n", worst);

    /* the whole batch in one op: per-sample mean, std and mirror flags as argument inputs */
    {
        sl_tlist mean, sd, mir, mirv;
        memset(&mean, 0, sizeof mean), memset(&sd, 0, sizeof sd);
        memset(&mir, 0, sizeof mir), memset(&mirv, 0, sizeof mirv);
        int64_t three = 3, one = 1;
        CHECK_OK(sl_tlist_reset(&mean, 3, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
        CHECK_OK(sl_tlist_reset(&sd, 3, SL_DTYPE_F32, 1, sl_cpu(), &e), &e);
        CHECK_OK(sl_tlist_reset(&mir, 3, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
        CHECK_OK(sl_tlist_reset(&mirv, 3, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
        int64_t s3[3] = {3, 3, 3}, s1[3] = {1, 1, 1};
        CHECK_OK(sl_tlist_alloc(&mean, s3, &e), &e);
        CHECK_OK(sl_tlist_alloc(&sd, s3, &e), &e);
        CHECK_OK(sl_tlist_alloc(&mir, s1, &e), &e);
        CHECK_OK(sl_tlist_alloc(&mirv, s1, &e), &e);
        (void)three, (void)one;
        for (int i = 0; i < 3; i++) {
            for (int c = 0; c < 3; c++) {
                ((float *)mean.data[i])[c] = (float)(M[i][c] * 255.0);
                ((float *)sd.data[i])[c] = (float)(S[i][c] * 255.0);
            }
            *(int32_t *)mir.data[i] = FLIPX[i];
            *(int32_t *)mirv.data[i] = FLIPY[i];
        }
        /* crop windows differ per sample: use the full image and compare the cmn of sample 2's
           whole image against (x - mean) / std directly */
        const char *argv[] = {
            "mean=@0", "std=@1", "mirror=@2", "mirror_vertical=@3", "output_layout=\"HWC\"", NULL};
        oph op;
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv, 2, 3, 0, &e), &e);
        sl_tlist *ai[4] = {&mean, &sd, &mir, &mirv};
        run(&op, &in, -1, ai, 4);
        double m = 0;
        for (int i = 0; i < 3; i++) {
            const int64_t *sh = sl_tlist_shape(&in, i);
            int64_t H = sh[0], W = sh[1];
            for (int64_t y = 0; y < H; y++)
                for (int64_t x = 0; x < W; x++)
                    for (int c = 0; c < 3; c++) {
                        int64_t sy = FLIPY[i] ? H - 1 - y : y, sx = FLIPX[i] ? W - 1 - x : x;
                        float v = ((const uint8_t *)in.data[i])[(sy * W + sx) * 3 + c];
                        float want = (v - (float)(M[i][c] * 255.0)) / (float)(S[i][c] * 255.0);
                        float got = ((const float *)op.out[0].data[i])[(y * W + x) * 3 + c];
                        if (fabs(got - want) > m) m = fabs(got - want);
                    }
        }
        CHECK_MSG(m <= 1e-6, "per-sample arguments: max diff %g", m);
        oph_destroy(&op);
        sl_tlist_free(&mean), sl_tlist_free(&sd), sl_tlist_free(&mir), sl_tlist_free(&mirv);
    }

    /* dtypes: FLOAT16 and INT8 with scale/shift; UINT8 saturates */
    {
        const char *argv[] = {
            "dtype=types.FLOAT16",   "mean=128.0", "std=64.0", "scale=2.0", "shift=1.0",
            "output_layout=\"CHW\"", NULL};
        oph op;
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv, 1, 3, 0, &e), &e);
        run(&op, &in, -1, NULL, 0);
        const int64_t *sh = sl_tlist_shape(&op.out[0], 0);
        CHECK_EQ_INT(sh[0], 3);
        CHECK_EQ_INT(sh[1], 10);
        CHECK_EQ_INT(sh[2], 22);
        CHECK_STR(op.out[0].layout, "CHW");
        const uint8_t *src = in.data[0];
        float got = sl__f16_to_f32(((uint16_t *)op.out[0].data[0])[1 * 220 + 5 * 22 + 7]);
        float want = 2.0f * ((float)src[(5 * 22 + 7) * 3 + 1] - 128.0f) / 64.0f + 1.0f;
        CHECK_NEAR(got, want, 2e-3);
        oph_destroy(&op);
        const char *argv2[] = {"dtype=types.INT8", "mean=0.0", "std=1.0", "output_layout=\"HWC\"",
                               NULL};
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv2, 1, 3, 0, &e), &e);
        run(&op, &in, -1, NULL, 0);
        int sat = 1;
        for (int64_t k = 0; k < 10 * 22 * 3; k++) {
            int want_i = src[k] > 127 ? 127 : src[k];
            sat &= ((int8_t *)op.out[0].data[0])[k] == want_i;
        }
        CHECK(sat);
        oph_destroy(&op);
    }

    /* crop_pos and rounding; trim_to_shape; error policy names the record */
    {
        const char *argv[] = {"crop=[4, 4]",       "crop_pos_x=1.0",        "crop_pos_y=0.0",
                              "dtype=types.UINT8", "output_layout=\"HWC\"", NULL};
        oph op;
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv, 1, 3, 0, &e), &e);
        run(&op, &in, -1, NULL, 0);
        const uint8_t *src = in.data[0], *o = op.out[0].data[0];
        CHECK_EQ_INT(o[0], src[(0 * 22 + 18) * 3]); /* anchor x = 22 - 4 */
        oph_destroy(&op);
        const char *argv2[] = {"crop=[40, 40]", "out_of_bounds_policy=\"trim_to_shape\"",
                               "output_layout=\"HWC\"", NULL};
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv2, 1, 3, 0, &e), &e);
        run(&op, &in, -1, NULL, 0);
        CHECK_EQ_INT(sl_tlist_shape(&op.out[0], 0)[0], 10);
        CHECK_EQ_INT(sl_tlist_shape(&op.out[0], 0)[1], 22);
        oph_destroy(&op);
        const char *argv3[] = {"crop=[40, 40]", NULL};
        CHECK_OK(oph_create(&op, "crop_mirror_normalize", argv3, 1, 3, 0, &e), &e);
        sl_tlist *ins[1] = {&in};
        const char *keys[3] = {"rec-a", "rec-b", "rec-c"};
        CHECK_FAILS(oph_run(&op, 3, ins, 1, NULL, 0, keys, 0, &e), SL_EINVAL, &e,
                    "crop_mirror_normalize: record rec-a");
        oph_destroy(&op);
        const char *bad[] = {"dtype=types.INT32", NULL};
        CHECK_FAILS(oph_create(&op, "crop_mirror_normalize", bad, 1, 3, 0, &e), SL_EINVAL, &e,
                    "dtype");
    }
    sl_tlist_free(&in);
    for (int i = 0; i < 3; i++) sl_tensor_free(&t[i]);
    return check_done();
}
