/* SPDX-License-Identifier: Apache-2.0 */
/* Every image op's CUDA run against its CPU run on random inputs of mixed sizes: the same op
 * arguments and per-sample argument inputs, setup then run_cpu on the host, setup then run_gpu
 * (io->device on GPU 0, a stream) on device copies of the inputs. crop_mirror_normalize (FLOAT,
 * FLOAT16, UINT8, INT8 out; HWC and CHW in and out; DHWC volumes to CDHW and FHWC sequences
 * cropped along their frames (crop_d); mirror both ways; pad_output; windows outside the image),
 * one_hot, cast, flip, brightness_contrast (per-sample arguments; uint8, float and
 * float16 out), transpose (1-, 2- and 4-byte elements), crop (crop_mirror_normalize's runs with
 * the input's type and layout), arithmetic (+ - * / // % ** comparisons, bitwise ops, shifts,
 * unary - and ~, constants either side (bool too), one-element samples broadcast, integer
 * wrap-around, mixed types), cat and stack (strided rows, empty samples), normalize (every axis,
 * per channel, per batch, ddof/epsilon/scale/shift, given and per-sample statistics), color_twist
 * and hsv (per-sample arguments; uint8, float and float16), rotate and warp_affine (per-sample
 * angles and matrices, both filters, filled or clamped), gaussian_blur (per-sample sigma and
 * windows, volumes, sequences, channels first, no layout;
 * uint8 and float), pad (named axes, alignment, least shapes, empty samples): equal element for
 * element (FLOAT16: within one ulp; arithmetic, cat, stack, colour, warps, blur and pad: the same
 * bits); resize (also of a fractional or a reversed window), random_resized_crop,
 * resize_crop_mirror and tensor_resize: within 1 for uint8 (float
 * accumulations may round a tie the other way), nearest-neighbour exactly; normalize: within 1e-5
 * (float) or 1 (uint8, FLOAT16 ulp), its sums being added in another order. And the paths first
 * built without a GPU (test_untried_paths): warp_affine / rotate with dtype and of volumes, resize
 * of volumes and with per-sample filters, tensor_subscript with per-sample bounds, lookup_table. */
#include "check.h"
#include "gpu.h"
#include "opharness.h"

#include "core/half.h"
#include "core/cuda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}

static void *stream;

/* A host list of count samples of rank nd with random shapes in [lo, hi] per dim (fixed dims when
 * lo == hi), random contents. */
static void make_shaped(sl_tlist *l, int count, sl_dtype t, int nd, const int64_t *shapes,
                        const char *layout);
static void make_list(sl_tlist *l, int count, sl_dtype t, int nd, const int64_t *lo,
                      const int64_t *hi, const char *layout) {
    int64_t *shapes = malloc((size_t)count * (size_t)nd * sizeof *shapes);
    for (int i = 0; i < count; i++)
        for (int d = 0; d < nd; d++)
            shapes[i * nd + d] = lo[d] + (int64_t)(rnd() % (uint32_t)(hi[d] - lo[d] + 1));
    make_shaped(l, count, t, nd, shapes, layout);
    free(shapes);
}

/* The same with the shapes given (count x nd). */
static void make_shaped(sl_tlist *l, int count, sl_dtype t, int nd, const int64_t *shapes,
                        const char *layout) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, count, t, nd, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, shapes, &e), &e);
    snprintf(l->layout, sizeof l->layout, "%s", layout ? layout : "");
    for (int i = 0; i < count; i++) {
        size_t n = sl_tlist_sample_nbytes(l, i), k = n / sl_dtype_size(t);
        for (size_t j = 0; j < k; j++) {
            uint32_t r = rnd();
            switch (t) {
            case SL_DTYPE_F32:
                ((float *)l->data[i])[j] = (float)(r % 100000) / 250.0f - 150.0f;
                break;
            case SL_DTYPE_F16:
                ((uint16_t *)l->data[i])[j] = sl__f32_to_f16((float)(r % 4000) / 16.0f - 100.0f);
                break;
            case SL_DTYPE_I32:
                ((int32_t *)l->data[i])[j] = (int32_t)(r % 14) - 2;
                break;
            default:
                ((uint8_t *)l->data[i])[j] = (uint8_t)r;
                break;
            }
        }
    }
}

/* A device copy of a host list. */
static void to_device(sl_tlist *d, const sl_tlist *h) {
    sl_err e;
    memset(d, 0, sizeof *d);
    CHECK_OK(sl_tlist_reset(d, h->count, h->dtype, h->ndim, sl_cuda(0), &e), &e);
    CHECK_OK(sl_tlist_alloc(d, h->shapes, &e), &e);
    memcpy(d->layout, h->layout, sizeof d->layout);
    for (int i = 0; i < h->count; i++)
        CHECK_OK(sl__cuda_memcpy(d->data[i], true, h->data[i], false, sl_tlist_sample_nbytes(h, i),
                                 NULL, &e),
                 &e);
}

/* Runs op on the CPU (h_out) and on GPU 0 (g_out, copied back to the host), over nin inputs. */
static void run_both_n(const char *op, const char *const *argv, sl_tlist *const *ins, int nin,
                       sl_tlist *arg_in, int narg, sl_tlist *h_out, sl_tlist *g_out) {
    sl_err e;
    oph h;
    int n = ins[0]->count;
    CHECK_OK(oph_create(&h, op, argv, 1, n, 7, &e), &e);
    sl_tlist *args[8] = {NULL}; /* the per-sample argument inputs: arg_in[0 .. narg) */
    CHECK(narg >= 0 && narg <= 8);
    for (int k = 0; k < narg && k < 8; k++) args[k] = arg_in + k;
    CHECK_OK(oph_run(&h, n, ins, nin, args, narg, NULL, 0, &e), &e);
    *h_out = h.out[0];
    memset(&h.out[0], 0, sizeof h.out[0]);
    oph_destroy(&h);

    CHECK_OK(oph_create(&h, op, argv, 1, n, 7, &e), &e);
    CHECK(h.def->run_gpu != NULL && (h.def->devices & SL_OPDEV_GPU));
    sl_tlist din[8];
    sl_tlist *dins[8], *outs[1] = {&h.out[0]};
    for (int k = 0; k < nin; k++) {
        to_device(&din[k], ins[k]);
        dins[k] = &din[k];
    }
    sl__op_io io;
    memset(&io, 0, sizeof io);
    io.batch = n;
    io.num_inputs = nin;
    io.in = dins;
    io.num_arg_inputs = narg;
    io.arg_in = args;
    io.num_outputs = 1;
    io.out = outs;
    io.seed = 7;
    io.device = sl_cuda(0);
    io.stream = stream;
    CHECK_OK(h.def->setup(h.state, &io, &e), &e);
    CHECK_OK(h.def->run_gpu(h.state, &io, &e), &e);
    CHECK_OK(sl__cuda_stream_sync(stream, &e), &e);
    const sl_tlist *go = &h.out[0];
    CHECK(go->device.kind == SL_DEVICE_CUDA);
    memset(g_out, 0, sizeof *g_out);
    CHECK_OK(sl_tlist_reset(g_out, go->count, go->dtype, go->ndim, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(g_out, go->shapes, &e), &e);
    memcpy(g_out->layout, go->layout, sizeof g_out->layout);
    for (int i = 0; i < go->count; i++)
        CHECK_OK(sl__cuda_memcpy(g_out->data[i], false, go->data[i], true,
                                 sl_tlist_sample_nbytes(go, i), NULL, &e),
                 &e);
    for (int k = 0; k < nin; k++) sl_tlist_free(&din[k]);
    oph_destroy(&h);
}

static void run_both(const char *op, const char *const *argv, sl_tlist *in, sl_tlist *arg_in,
                     int narg, sl_tlist *h_out, sl_tlist *g_out) {
    sl_tlist *ins[1] = {in};
    run_both_n(op, argv, ins, 1, arg_in, narg, h_out, g_out);
}

/* Compares two host lists: shapes, layout, then elements within tol (fp16: tol in ulps). */
static double compare(const char *what, const sl_tlist *a, const sl_tlist *b, double tol) {
    CHECK_EQ_INT(a->count, b->count);
    CHECK_EQ_INT(a->dtype, b->dtype);
    CHECK_EQ_INT(a->ndim, b->ndim);
    CHECK_STR(a->layout, b->layout);
    double worst = 0;
    for (int i = 0; i < a->count && i < b->count; i++) {
        size_t n = sl_tlist_sample_nbytes(a, i);
        CHECK_MSG(n == sl_tlist_sample_nbytes(b, i), "%s sample %d: %zu vs %zu bytes", what, i, n,
                  sl_tlist_sample_nbytes(b, i));
        if (n != sl_tlist_sample_nbytes(b, i)) continue;
        size_t k = n / sl_dtype_size(a->dtype);
        for (size_t j = 0; j < k; j++) {
            double d;
            switch (a->dtype) {
            case SL_DTYPE_F32: {
                float x = ((float *)a->data[i])[j], y = ((float *)b->data[i])[j];
                d = memcmp(&x, &y, 4) ? fabs((double)x - y) + (x != x || y != y) : 0;
                break;
            }
            case SL_DTYPE_F16: {
                int x = ((uint16_t *)a->data[i])[j], y = ((uint16_t *)b->data[i])[j];
                d = abs(x - y);
                break;
            }
            case SL_DTYPE_U8:
                d = abs(((uint8_t *)a->data[i])[j] - ((uint8_t *)b->data[i])[j]);
                break;
            case SL_DTYPE_I8:
                d = abs(((int8_t *)a->data[i])[j] - ((int8_t *)b->data[i])[j]);
                break;
            case SL_DTYPE_I32:
                d = fabs((double)((int32_t *)a->data[i])[j] - ((int32_t *)b->data[i])[j]);
                break;
            default:
                d = memcmp((char *)a->data[i] + j * sl_dtype_size(a->dtype),
                           (char *)b->data[i] + j * sl_dtype_size(a->dtype),
                           sl_dtype_size(a->dtype)) != 0;
            }
            if (d > worst) worst = d;
        }
    }
    CHECK_MSG(worst <= tol, "%s: CPU and GPU differ by %g (tolerance %g)", what, worst, tol);
    printf("%-48s max |cpu - gpu| = %g\n", what, worst);
    return worst;
}

static void case_(const char *what, const char *op, const char *const *argv, sl_tlist *in,
                  sl_tlist *arg_in, int narg, double tol) {
    sl_tlist h, g;
    run_both(op, argv, in, arg_in, narg, &h, &g);
    compare(what, &h, &g, tol);
    sl_tlist_free(&h);
    sl_tlist_free(&g);
}

static void case_n(const char *what, const char *op, const char *const *argv, sl_tlist *const *ins,
                   int nin) {
    sl_tlist h, g;
    run_both_n(op, argv, ins, nin, NULL, 0, &h, &g);
    compare(what, &h, &g, 0);
    sl_tlist_free(&h);
    sl_tlist_free(&g);
}

/* A list with src's shapes and layout, of type t, random contents. */
static void like(sl_tlist *l, const sl_tlist *src, sl_dtype t) {
    sl_err e;
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, src->count, t, src->ndim, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, src->shapes, &e), &e);
    memcpy(l->layout, src->layout, sizeof l->layout);
    for (int i = 0; i < l->count; i++) {
        unsigned char *p = l->data[i];
        size_t n = sl_tlist_sample_nbytes(l, i);
        for (size_t j = 0; j < n; j++) p[j] = (unsigned char)rnd();
        if (t == SL_DTYPE_F32) /* finite values: random bytes may be NaN */
            for (size_t j = 0; j < n / 4; j++)
                ((float *)p)[j] = (float)(rnd() % 100000) / 250.0f - 150.0f;
        if (t == SL_DTYPE_F16)
            for (size_t j = 0; j < n / 2; j++)
                ((uint16_t *)p)[j] = sl__f32_to_f16((float)(rnd() % 4000) / 16.0f - 100.0f);
    }
}

static void test_arithmetic(void) {
    const int n = 10;
    sl_tlist u8, f32, f16, i32, u8b, f32b, one;
    int64_t lo[3] = {1, 1, 3}, hi[3] = {33, 29, 3}, lo1[1] = {1}, hi1[1] = {1};
    make_list(&u8, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    like(&u8b, &u8, SL_DTYPE_U8);
    like(&f32, &u8, SL_DTYPE_F32);
    like(&f32b, &u8, SL_DTYPE_F32);
    like(&f16, &u8, SL_DTYPE_F16);
    like(&i32, &u8, SL_DTYPE_I32);
    make_list(&one, n, SL_DTYPE_F32, 1, lo1, hi1, NULL); /* a per-sample scalar */
    const char *div255[] = {"op=\"fdiv\"", "constant=255.0", "constant_type=\"float32\"", NULL};
    sl_tlist *a1[] = {&u8};
    case_n("arithmetic u8 / 255.0 -> f32", "arithmetic", div255, a1, 1);
    const char *mul01[] = {"op=\"mul\"", "constant=0.1", "constant_type=\"float32\"", NULL};
    sl_tlist *a2[] = {&f32};
    case_n("arithmetic f32 * 0.1", "arithmetic", mul01, a2, 1);
    const char *one_minus[] = {"op=\"sub\"", "constant=1", "constant_left=True", NULL};
    sl_tlist *a3[] = {&f16};
    case_n("arithmetic 1 - f16", "arithmetic", one_minus, a3, 1);
    const char *add[] = {"op=\"add\"", NULL}, *sub[] = {"op=\"sub\"", NULL},
               *mul[] = {"op=\"mul\"", NULL}, *fdiv[] = {"op=\"fdiv\"", NULL},
               *minus[] = {"op=\"minus\"", NULL};
    sl_tlist *a4[] = {&u8, &u8b};
    case_n("arithmetic u8 + u8 (wraps)", "arithmetic", add, a4, 2);
    case_n("arithmetic u8 * u8 (wraps)", "arithmetic", mul, a4, 2);
    case_n("arithmetic u8 / u8 -> f32", "arithmetic", fdiv, a4, 2);
    sl_tlist *a5[] = {&i32, &u8};
    case_n("arithmetic i32 - u8 -> i32", "arithmetic", sub, a5, 2);
    sl_tlist *a6[] = {&f32, &f32b};
    case_n("arithmetic f32 / f32", "arithmetic", fdiv, a6, 2);
    sl_tlist *a7[] = {&f32, &one};
    case_n("arithmetic f32 * per-sample scalar", "arithmetic", mul, a7, 2);
    sl_tlist *a8[] = {&one, &f16};
    case_n("arithmetic per-sample scalar - f16 -> f32", "arithmetic", sub, a8, 2);
    sl_tlist *a9[] = {&f16, &u8};
    case_n("arithmetic f16 + u8 -> f16", "arithmetic", add, a9, 2);
    case_n("arithmetic -u8 (wraps)", "arithmetic", minus, a1, 1);
    case_n("arithmetic -f16", "arithmetic", minus, a3, 1);
    /* the rest of DALI's expressions: // % ** comparisons, bitwise ops, shifts, ~, bool */
    static const char *const more[] = {"div",   "mod",    "pow",    "eq",    "neq",
                                       "lt",    "leq",    "gt",     "geq",   "bitand",
                                       "bitor", "bitxor", "lshift", "rshift"};
    char opbuf[40];
    for (size_t k = 0; k < sizeof more / sizeof more[0]; k++) {
        snprintf(opbuf, sizeof opbuf, "op=\"%s\"", more[k]);
        const char *two[] = {opbuf, NULL};
        case_n(more[k], "arithmetic", two, a5, 2);            /* i32 with u8 */
        if (k < 8) case_n(more[k], "arithmetic", two, a9, 2); /* f16 with u8 */
    }
    const char *inv[] = {"op=\"invert\"", NULL}, *ge3[] = {"op=\"geq\"", "constant=3", NULL},
               *andt[] = {"op=\"bitand\"", "constant=1", "constant_type=\"bool\"", NULL};
    sl_tlist *a10[] = {&i32};
    case_n("arithmetic ~i32", "arithmetic", inv, a10, 1);
    case_n("arithmetic u8 >= 3", "arithmetic", ge3, a1, 1);
    case_n("arithmetic u8 & True", "arithmetic", andt, a1, 1);
    sl_tlist *all[] = {&u8, &u8b, &f32, &f32b, &f16, &i32, &one};
    for (int k = 0; k < 7; k++) sl_tlist_free(all[k]);
}

static void test_cat_stack(void) {
    const int n = 9;
    sl_tlist r[3], c[3], f[2];
    int64_t rlo[3] = {0, 5, 3}, rhi[3] = {20, 5, 3}; /* rows differ: cat along H (axis 0) */
    int64_t clo[3] = {7, 1, 3}, chi[3] = {7, 30, 3}; /* columns differ: cat along W (axis 1) */
    for (int k = 0; k < 3; k++) {
        make_list(&r[k], n, SL_DTYPE_U8, 3, rlo, rhi, "HWC");
        make_list(&c[k], n, SL_DTYPE_U8, 3, clo, chi, "HWC");
    }
    int64_t flo[3] = {1, 1, 1}, fhi[3] = {16, 12, 4};
    make_list(&f[0], n, SL_DTYPE_F32, 3, flo, fhi, "HWC");
    like(&f[1], &f[0], SL_DTYPE_F32);
    const char *h0[] = {"axis=0", NULL}, *w1[] = {"axis_name=\"W\"", NULL},
               *last[] = {"axis=-1", NULL}, *s1[] = {"axis=1", NULL},
               *s3[] = {"axis=3", "axis_name=\"N\"", NULL};
    sl_tlist *rr[] = {&r[0], &r[1], &r[2]}, *cc[] = {&c[0], &c[1], &c[2]}, *ff[] = {&f[0], &f[1]};
    case_n("cat u8 x3 along H (some samples empty)", "cat", h0, rr, 3);
    case_n("cat u8 x3 along W (strided rows)", "cat", w1, cc, 3);
    case_n("cat f32 x2 along C", "cat", last, ff, 2);
    case_n("stack f32 x2 at axis 1", "stack", s1, ff, 2);
    case_n("stack f32 x2 at the end, named", "stack", s3, ff, 2);
    for (int k = 0; k < 3; k++) sl_tlist_free(&r[k]), sl_tlist_free(&c[k]);
    sl_tlist_free(&f[0]), sl_tlist_free(&f[1]);
}

static void test_color_twist(void) {
    const int n = 9;
    sl_tlist img, fimg, himg, args[2];
    int64_t lo[3] = {1, 1, 3}, hi[3] = {37, 41, 3}, lo1[1] = {1}, hi1[1] = {1};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "HWC");
    make_list(&himg, n, SL_DTYPE_F16, 3, lo, hi, "HWC");
    make_list(&args[0], n, SL_DTYPE_F32, 1, lo1, hi1, NULL); /* per-sample hue */
    make_list(&args[1], n, SL_DTYPE_F32, 1, lo1, hi1, NULL); /* per-sample saturation */
    for (int i = 0; i < n; i++) {
        ((float *)args[0].data[i])[0] = (float)(rnd() % 720) - 360.0f;
        ((float *)args[1].data[i])[0] = (float)(rnd() % 300) / 100.0f;
    }
    const char *t1[] = {"hue=@0", "saturation=@1", "brightness=1.2", "contrast=0.8", NULL};
    case_("color_twist u8 per-sample hue, saturation", "color_twist", t1, &img, args, 2, 0);
    const char *t2[] = {"hue=30.0", "contrast=1.5", "dtype=types.FLOAT16", NULL};
    case_("color_twist f32 -> f16", "color_twist", t2, &fimg, NULL, 0, 0);
    const char *h1[] = {"hue=@0", "saturation=@1", "value=0.9", NULL};
    case_("hsv u8 per-sample", "hsv", h1, &img, args, 2, 0);
    const char *h2[] = {"hue=-45.0", "value=1.3", "dtype=types.FLOAT", NULL};
    case_("hsv f16 -> f32", "hsv", h2, &himg, NULL, 0, 0);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
    sl_tlist_free(&himg);
    sl_tlist_free(&args[0]);
    sl_tlist_free(&args[1]);
}

static void test_warp(void) {
    const int n = 8;
    sl_tlist img, fimg, ang, mats;
    int64_t lo[3] = {1, 1, 1}, hi[3] = {40, 45, 4}, lo1[1] = {1}, hi1[1] = {1}, lo6[1] = {6},
            hi6[1] = {6};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "HWC");
    make_list(&ang, n, SL_DTYPE_F32, 1, lo1, hi1, NULL);
    make_list(&mats, n, SL_DTYPE_F32, 1, lo6, hi6, NULL);
    for (int i = 0; i < n; i++) {
        ((float *)ang.data[i])[0] = (float)(rnd() % 7200) / 10.0f - 360.0f;
        float *m = mats.data[i]; /* near the identity, with a shear and a shift */
        m[0] = 0.8f + (float)(rnd() % 400) / 1000.0f, m[1] = (float)(rnd() % 200) / 1000.0f;
        m[2] = (float)(rnd() % 600) / 100.0f - 3.0f, m[3] = -(float)(rnd() % 200) / 1000.0f;
        m[4] = 0.8f + (float)(rnd() % 400) / 1000.0f, m[5] = (float)(rnd() % 600) / 100.0f - 3.0f;
    }
    const char *r1[] = {"angle=@0", NULL};
    case_("rotate u8 per-sample angle, linear", "rotate", r1, &img, &ang, 1, 0);
    const char *r2[] = {"angle=@0", "fill_value=200.0", "interp_type=types.INTERP_NN", NULL};
    case_("rotate u8 per-sample angle, nearest, filled", "rotate", r2, &img, &ang, 1, 0);
    const char *r3[] = {"angle=33.0", "keep_size=True", NULL};
    case_("rotate f32 33 degrees, size kept", "rotate", r3, &fimg, NULL, 0, 0);
    const char *w1[] = {"matrix=@0", "size=[30.0, 20.0]", "fill_value=0.5", NULL};
    case_("warp_affine f32 per-sample matrix, filled", "warp_affine", w1, &fimg, &mats, 1, 0);
    const char *w2[] = {"matrix=[1.1, 0.2, -2.0, -0.1, 0.9, 1.5]", "inverse_map=False", NULL};
    case_("warp_affine u8 source-to-destination map", "warp_affine", w2, &img, NULL, 0, 0);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
    sl_tlist_free(&ang);
    sl_tlist_free(&mats);
}

static void test_blur(void) {
    const int n = 8;
    sl_tlist img, fimg, sig;
    int64_t lo[3] = {1, 1, 1}, hi[3] = {40, 45, 4}, lo1[1] = {2}, hi1[1] = {2};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "HWC");
    make_list(&sig, n, SL_DTYPE_F32, 1, lo1, hi1, NULL);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 2; d++) ((float *)sig.data[i])[d] = (float)(1 + rnd() % 399) / 100.0f;
    const char *b1[] = {"sigma=@0", NULL};
    case_("gaussian_blur u8 per-sample sigma [y, x]", "gaussian_blur", b1, &img, &sig, 1, 0);
    const char *b2[] = {"window_size=[7, 3]", "dtype=types.FLOAT", NULL};
    case_("gaussian_blur u8 -> f32, windows 7 x 3", "gaussian_blur", b2, &img, NULL, 0, 0);
    const char *b3[] = {"sigma=1.7", NULL};
    case_("gaussian_blur f32 sigma 1.7", "gaussian_blur", b3, &fimg, NULL, 0, 0);
    /* volumes, sequences, channels first, no layout (3 spatial axes), per-sample windows */
    sl_tlist vol, seq, cf, plain, win;
    int64_t vlo[4] = {1, 1, 1, 1}, vhi[4] = {6, 20, 22, 3}, clo[5] = {1, 1, 1, 1, 1},
            chi[5] = {2, 3, 5, 12, 9}, plo[3] = {1, 1, 1}, phi[3] = {5, 16, 18}, wlo[1] = {2},
            whi[1] = {2};
    make_list(&vol, n, SL_DTYPE_U8, 4, vlo, vhi, "DHWC");
    make_list(&seq, n, SL_DTYPE_F32, 4, vlo, vhi, "FCHW");
    make_list(&cf, n, SL_DTYPE_U8, 5, clo, chi, "CFDHW");
    make_list(&plain, n, SL_DTYPE_F32, 3, plo, phi, NULL);
    make_list(&win, n, SL_DTYPE_I32, 1, wlo, whi, NULL);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 2; d++) ((int32_t *)win.data[i])[d] = 1 + 2 * (int32_t)(rnd() % 5);
    const char *b4[] = {"sigma=[1.0, 0.8, 1.3]", NULL};
    case_("gaussian_blur u8 DHWC per-axis sigma", "gaussian_blur", b4, &vol, NULL, 0, 0);
    const char *b5[] = {"window_size=@0", NULL};
    case_("gaussian_blur f32 FCHW per-sample windows", "gaussian_blur", b5, &seq, &win, 1, 0);
    const char *b6[] = {"sigma=1.2", "dtype=types.FLOAT", NULL};
    case_("gaussian_blur u8 -> f32 CFDHW", "gaussian_blur", b6, &cf, NULL, 0, 0);
    const char *b7[] = {"window_size=[3, 5, 7]", "sigma=[0.0, 1.1, 0.0]", NULL};
    case_("gaussian_blur f32 layout-less DHW", "gaussian_blur", b7, &plain, NULL, 0, 0);
    sl_tlist_free(&vol);
    sl_tlist_free(&seq);
    sl_tlist_free(&cf);
    sl_tlist_free(&plain);
    sl_tlist_free(&win);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
    sl_tlist_free(&sig);
}

static void test_pad(void) {
    const int n = 9;
    sl_tlist img, fvol, hv;
    int64_t lo[3] = {1, 1, 3}, hi[3] = {30, 41, 3}, vlo[3] = {0, 1, 1}, vhi[3] = {7, 9, 5};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fvol, n, SL_DTYPE_F32, 3, vlo, vhi, "");
    make_list(&hv, n, SL_DTYPE_F16, 3, vlo, vhi, "");
    const char *p1[] = {"axis_names=\"HW\"", "fill_value=3", NULL};
    case_("pad u8 HWC to the batch's largest H, W", "pad", p1, &img, NULL, 0, 0);
    const char *p2[] = {"align=[4]", "fill_value=-2.5", NULL};
    case_("pad f32 every axis, aligned to 4 (some empty)", "pad", p2, &fvol, NULL, 0, 0);
    const char *p3[] = {"axes=[1, 2]", "shape=[6, -1]", "align=[1, 8]", NULL};
    case_("pad f16 axes 1, 2: at least 6, largest, align 8", "pad", p3, &hv, NULL, 0, 0);
    sl_tlist_free(&img);
    sl_tlist_free(&fvol);
    sl_tlist_free(&hv);
}

static void test_normalize(void) {
    const int n = 8;
    sl_tlist img, vol, args[2];
    int64_t lo[3] = {1, 1, 3}, hi[3] = {40, 33, 3}, lo1[1] = {1}, hi1[1] = {1};
    int64_t vlo[3] = {1, 2, 1}, vhi[3] = {9, 17, 50};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&vol, n, SL_DTYPE_F32, 3, vlo, vhi, "DHW");
    make_list(&args[0], n, SL_DTYPE_F32, 1, lo1, hi1, NULL); /* per-sample means */
    make_list(&args[1], n, SL_DTYPE_F32, 1, lo1, hi1, NULL); /* per-sample stddevs */
    for (int i = 0; i < n; i++) ((float *)args[1].data[i])[0] = 0.5f + (float)(rnd() % 1000) / 100;
    /* the statistics are summed in another order on the GPU: agreement to double rounding */
    const char *all[] = {NULL};
    case_("normalize u8 -> f32, every axis", "normalize", all, &img, NULL, 0, 1e-5);
    const char *chan[] = {"axis_names=\"HW\"", NULL};
    case_("normalize u8 HWC per channel", "normalize", chan, &img, NULL, 0, 1e-5);
    const char *bchan[] = {"axis_names=\"HW\"", "batch=True", NULL};
    case_("normalize u8 HWC per channel, batch", "normalize", bchan, &img, NULL, 0, 1e-5);
    const char *f16[] = {"axes=[0, 2]",         "ddof=1", "epsilon=0.5", "scale=2.0", "shift=3.0",
                         "dtype=types.FLOAT16", NULL};
    case_("normalize f32 axes [0, 2] ddof eps -> f16", "normalize", f16, &vol, NULL, 0, 1);
    const char *per[] = {"mean=@0", "stddev=@1", NULL};
    case_("normalize f32 per-sample mean, stddev", "normalize", per, &vol, args, 2, 1e-5);
    const char *gm[] = {"mean=10.0",   "axes=[1]",   "dtype=types.UINT8",
                        "shift=128.0", "scale=16.0", NULL};
    case_("normalize f32 given mean, axis 1 -> u8", "normalize", gm, &vol, NULL, 0, 1);
    sl_tlist_free(&img);
    sl_tlist_free(&vol);
    sl_tlist_free(&args[0]);
    sl_tlist_free(&args[1]);
}

static void flags_list(sl_tlist *l, int n) {
    int64_t lo[1] = {1}, hi[1] = {1};
    make_list(l, n, SL_DTYPE_I32, 1, lo, hi, NULL);
    for (int i = 0; i < n; i++) ((int32_t *)l->data[i])[0] = (int32_t)(rnd() % 2);
}

static void test_cmn(void) {
    const int n = 9;
    sl_tlist hwc, chw, f32, flags[2];
    int64_t lo[3] = {1, 1, 3}, hi[3] = {40, 37, 3};
    make_list(&hwc, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    int64_t clo[3] = {1, 2, 2}, chi[3] = {4, 30, 33};
    make_list(&chw, n, SL_DTYPE_U8, 3, clo, chi, "CHW");
    make_list(&f32, n, SL_DTYPE_F32, 3, lo, hi, "HWC");
    flags_list(&flags[0], n);
    flags_list(&flags[1], n);
    const char *a1[] = {"dtype=types.FLOAT", "output_layout=\"CHW\"", "std=[255.0]", NULL};
    case_("cmn u8 HWC -> f32 CHW /255", "crop_mirror_normalize", a1, &hwc, NULL, 0, 0);
    const char *a2[] = {"dtype=types.FLOAT16",    "output_layout=\"CHW\"",
                        "crop=[24.0, 20.0]",      "mean=[120.0, 110.0, 100.0]",
                        "std=[50.0, 60.0, 70.0]", "mirror=@0",
                        "mirror_vertical=@1",     "out_of_bounds_policy=\"pad\"",
                        "pad_output=True",        "fill_values=[1.0, 2.0, 3.0, 4.0]",
                        "crop_pos_x=0.3",         NULL};
    case_("cmn u8 HWC -> f16 CHW crop/mirror/pad", "crop_mirror_normalize", a2, &hwc, flags, 2, 1);
    const char *a3[] = {"dtype=types.UINT8",
                        "output_layout=\"HWC\"",
                        "crop=[16.0, 16.0]",
                        "mean=[10.0]",
                        "std=[0.5]",
                        "mirror=@0",
                        "out_of_bounds_policy=\"pad\"",
                        "scale=0.25",
                        "shift=3.0",
                        NULL};
    case_("cmn u8 HWC -> u8 HWC saturating", "crop_mirror_normalize", a3, &hwc, flags, 1, 0);
    const char *a4[] = {
        "dtype=types.INT8", "output_layout=\"HWC\"", "mean=[3.0]", "std=[2.0]", "mirror=@0", NULL};
    case_("cmn u8 CHW -> i8 HWC", "crop_mirror_normalize", a4, &chw, flags, 1, 0);
    const char *a5[] = {"dtype=types.FLOAT",
                        "output_layout=\"CHW\"",
                        "crop=[10.0, 12.0]",
                        "mean=[1.0, 2.0, 3.0]",
                        "std=[3.0, 2.0, 1.0]",
                        "mirror=@0",
                        "out_of_bounds_policy=\"trim_to_shape\"",
                        NULL};
    case_("cmn f32 HWC -> f32 CHW trim", "crop_mirror_normalize", a5, &f32, flags, 1, 0);
    /* volumes and sequences: a window in depth too, padded there; frames cropped as depth */
    sl_tlist vol, fseq;
    int64_t vlo[4] = {1, 1, 1, 3}, vhi[4] = {9, 20, 23, 3}, slo[4] = {1, 2, 2, 3},
            shi[4] = {7, 15, 18, 3};
    make_list(&vol, n, SL_DTYPE_U8, 4, vlo, vhi, "DHWC");
    make_list(&fseq, n, SL_DTYPE_U8, 4, slo, shi, "FHWC");
    const char *a6[] = {"dtype=types.FLOAT",
                        "output_layout=\"CDHW\"",
                        "crop=[5.0, 8.0, 9.0]",
                        "crop_pos_z=0.3",
                        "mean=[3.0]",
                        "mirror=@0",
                        "pad_output=True",
                        "out_of_bounds_policy=\"pad\"",
                        NULL};
    case_("cmn u8 DHWC -> f32 CDHW crop/pad", "crop_mirror_normalize", a6, &vol, flags, 1, 0);
    const char *a7[] = {"dtype=types.FLOAT16",
                        "output_layout=\"FCHW\"",
                        "crop_d=4.0",
                        "crop_h=6.0",
                        "crop_w=5.0",
                        "crop_pos_z=0.8",
                        "out_of_bounds_policy=\"trim_to_shape\"",
                        NULL};
    case_("cmn u8 FHWC frames as depth -> f16 FCHW", "crop_mirror_normalize", a7, &fseq, NULL, 0,
          0);
    sl_tlist_free(&vol);
    sl_tlist_free(&fseq);
    sl_tlist_free(&hwc);
    sl_tlist_free(&chw);
    sl_tlist_free(&f32);
    sl_tlist_free(&flags[0]);
    sl_tlist_free(&flags[1]);
}

static void test_one_hot_cast_flip(void) {
    const int n = 13;
    sl_tlist labels, vec, img, fimg, flags[2];
    int64_t lo1[1] = {1}, hi1[1] = {1};
    make_list(&labels, n, SL_DTYPE_I32, 1, lo1, hi1, NULL);
    int64_t lo2[1] = {1}, hi2[1] = {7};
    make_list(&vec, n, SL_DTYPE_I32, 1, lo2, hi2, NULL);
    const char *o1[] = {"num_classes=10", NULL};
    case_("one_hot scalar labels -> f32 (10,)", "one_hot", o1, &labels, NULL, 0, 0);
    const char *o2[] = {"num_classes=5", "axis=0",       "dtype=types.INT32",
                        "on_value=7",    "off_value=-1", NULL};
    case_("one_hot (k,) axis 0 -> i32 (5, k)", "one_hot", o2, &vec, NULL, 0, 0);
    const char *o3[] = {"num_classes=12", "dtype=types.FLOAT16", NULL};
    case_("one_hot (k,) -> f16 (k, 12)", "one_hot", o3, &vec, NULL, 0, 0);

    int64_t lo[3] = {1, 1, 1}, hi[3] = {30, 41, 4};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "CHW");
    const char *c1[] = {"dtype=types.FLOAT", NULL};
    case_("cast u8 -> f32", "cast", c1, &img, NULL, 0, 0);
    const char *c2[] = {"dtype=types.UINT8", NULL};
    case_("cast f32 -> u8 (saturating)", "cast", c2, &fimg, NULL, 0, 0);
    const char *c3[] = {"dtype=types.FLOAT16", NULL};
    case_("cast f32 -> f16", "cast", c3, &fimg, NULL, 0, 0);
    const char *c4[] = {"dtype=types.INT8", NULL};
    case_("cast i32 -> i8", "cast", c4, &vec, NULL, 0, 0);
    case_("cast u8 -> u8 (copy)", "cast", c2, &img, NULL, 0, 0);

    flags_list(&flags[0], n);
    flags_list(&flags[1], n);
    const char *f1[] = {"horizontal=@0", "vertical=@1", NULL};
    case_("flip u8 HWC per-sample h/v", "flip", f1, &img, flags, 2, 0);
    case_("flip f32 CHW per-sample h/v", "flip", f1, &fimg, flags, 2, 0);
    const char *f2[] = {NULL};
    case_("flip u8 HWC default (horizontal)", "flip", f2, &img, NULL, 0, 0);
    sl_tlist vol, cvol, flags3[3];
    int64_t lo4[4] = {1, 1, 1, 1}, hi4[4] = {6, 9, 11, 3};
    make_list(&vol, n, SL_DTYPE_U8, 4, lo4, hi4, "DHWC");
    make_list(&cvol, n, SL_DTYPE_F32, 4, lo4, hi4, "CDHW");
    for (int k = 0; k < 3; k++) flags_list(&flags3[k], n);
    const char *f3[] = {"horizontal=@0", "vertical=@1", "depthwise=@2", NULL};
    case_("flip u8 DHWC per-sample h/v/depthwise", "flip", f3, &vol, flags3, 3, 0);
    case_("flip f32 CDHW per-sample h/v/depthwise", "flip", f3, &cvol, flags3, 3, 0);
    for (int k = 0; k < 3; k++) sl_tlist_free(&flags3[k]);
    sl_tlist_free(&vol);
    sl_tlist_free(&cvol);
    sl_tlist_free(&labels);
    sl_tlist_free(&vec);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
    sl_tlist_free(&flags[0]);
    sl_tlist_free(&flags[1]);
}

static void test_brightness_contrast(void) {
    const int n = 11;
    sl_tlist img, fimg, args[2];
    int64_t lo[3] = {1, 1, 1}, hi[3] = {30, 41, 3}, lo1[1] = {1}, hi1[1] = {1};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "CHW");
    make_list(&args[0], n, SL_DTYPE_F32, 1, lo1, hi1, NULL);
    make_list(&args[1], n, SL_DTYPE_F32, 1, lo1, hi1, NULL);
    for (int i = 0; i < n; i++) {
        ((float *)args[0].data[i])[0] = 0.5f + (float)(rnd() % 1000) / 997.0f;
        ((float *)args[1].data[i])[0] = (float)(rnd() % 2000) / 999.0f;
    }
    const char *b1[] = {"brightness=@0", "contrast=@1", NULL};
    case_("brightness_contrast u8 per-sample", "brightness_contrast", b1, &img, args, 2, 0);
    const char *b2[] = {"brightness=@0", "contrast=@1", "dtype=types.FLOAT", NULL};
    case_("brightness_contrast u8 -> f32 per-sample", "brightness_contrast", b2, &img, args, 2, 0);
    const char *b3[] = {"brightness_shift=0.25", "contrast=1.5", "dtype=types.UINT8", NULL};
    case_("brightness_contrast f32 -> u8 (saturating)", "brightness_contrast", b3, &fimg, NULL, 0,
          0);
    const char *b4[] = {"brightness=@0", "contrast_center=10.0", "dtype=types.FLOAT16", NULL};
    case_("brightness_contrast f32 -> f16 centre 10", "brightness_contrast", b4, &fimg, args, 1, 0);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
    sl_tlist_free(&args[0]);
    sl_tlist_free(&args[1]);
}

static void test_transpose(void) {
    const int n = 9;
    sl_tlist img, fvol, vec, himg;
    int64_t lo[3] = {1, 1, 1}, hi[3] = {30, 41, 4}, lo1[1] = {1}, hi1[1] = {9};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fvol, n, SL_DTYPE_F32, 3, lo, hi, "");
    make_list(&himg, n, SL_DTYPE_F16, 3, lo, hi, "CHW");
    make_list(&vec, n, SL_DTYPE_I32, 1, lo1, hi1, NULL);
    const char *t1[] = {"perm=[2, 0, 1]", NULL};
    case_("transpose u8 HWC -> CHW", "transpose", t1, &img, NULL, 0, 0);
    const char *t2[] = {"perm=[1, 0, 2]", NULL};
    case_("transpose f32 [1, 0, 2]", "transpose", t2, &fvol, NULL, 0, 0);
    const char *t3[] = {NULL};
    case_("transpose f16 reversed", "transpose", t3, &himg, NULL, 0, 0);
    case_("transpose i32 1-D (a copy)", "transpose", t3, &vec, NULL, 0, 0);
    const char *k1[] = {"crop=[8.0, 9.0]", "out_of_bounds_policy=\"pad\"", "fill_values=[3.0]",
                        NULL};
    case_("crop u8 HWC 8x9, padded", "crop", k1, &img, NULL, 0, 0);
    const char *k2[] = {"crop_h=5.0", "crop_w=4.0", "out_of_bounds_policy=\"trim_to_shape\"", NULL};
    sl_tlist hchw; /* CHW with at most 4 channels (crop_mirror_normalize takes up to 16) */
    int64_t clo[3] = {1, 1, 1}, chi[3] = {4, 30, 41};
    make_list(&hchw, n, SL_DTYPE_F16, 3, clo, chi, "CHW");
    case_("crop f16 CHW 5x4, trimmed", "crop", k2, &hchw, NULL, 0, 0);
    sl_tlist_free(&hchw);
    sl_tlist_free(&img);
    sl_tlist_free(&fvol);
    sl_tlist_free(&himg);
    sl_tlist_free(&vec);
}

static void test_resize(void) {
    const int n = 7;
    sl_tlist img, fimg;
    int64_t lo[3] = {8, 8, 3}, hi[3] = {90, 120, 3};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "HWC");
    const char *r1[] = {"resize_x=37", "resize_y=29", NULL};
    case_("resize u8 linear antialias -> 29x37", "resize", r1, &img, NULL, 0, 1);
    const char *r2[] = {"resize_shorter=64", "interp_type=types.INTERP_CUBIC", NULL};
    case_("resize u8 cubic shorter=64", "resize", r2, &img, NULL, 0, 1);
    const char *r3[] = {"size=[24.0, 24.0]", "interp_type=types.INTERP_NN", NULL};
    case_("resize u8 nearest 24x24", "resize", r3, &img, NULL, 0, 0);
    const char *r4[] = {"resize_x=50", "resize_y=45", "interp_type=types.INTERP_TRIANGULAR", NULL};
    case_("resize f32 triangular 45x50", "resize", r4, &fimg, NULL, 0, 1e-3);
    const char *r5[] = {"size=[30.0, 20.0]", "roi_start=[2.5, 3.25]", "roi_end=[7.5, 30.0]",
                        "interp_type=types.INTERP_CUBIC", NULL};
    case_("resize f32 cubic, a fractional window", "resize", r5, &fimg, NULL, 0, 1e-3);
    const char *r6[] = {"size=[48, 40]", NULL};
    case_("random_resized_crop u8 linear 48x40", "random_resized_crop", r6, &img, NULL, 0, 1);
    const char *r7[] = {"size=32", "random_area=[0.3, 0.6]", "interp_type=types.INTERP_NN", NULL};
    case_("random_resized_crop u8 nearest 32x32", "random_resized_crop", r7, &img, NULL, 0, 0);
    const char *r8[] = {"size=[20.0, 26.0]", "roi_start=[0.9, 0.1]", "roi_end=[0.2, 0.8]",
                        "roi_relative=True", NULL};
    case_("resize u8 linear, a reversed (flipped) window", "resize", r8, &img, NULL, 0, 1);
    const char *c1[] = {"resize_shorter=64", "crop=[30.0, 24.0]", "crop_pos_x=0.2", "mirror=3",
                        NULL};
    case_("resize_crop_mirror u8 linear, both flips", "resize_crop_mirror", c1, &img, NULL, 0, 1);
    const char *c2[] = {"size=[40.0, 40.0]",           "crop_h=17.0", "crop_w=33.0", "mirror=1",
                        "interp_type=types.INTERP_NN", NULL};
    case_("resize_crop_mirror u8 nearest", "resize_crop_mirror", c2, &img, NULL, 0, 0);
    const char *t1[] = {"scales=[0.6, 1.7]", "axes=[0, 1]", "alignment=[0.0, 1.0]", NULL};
    case_("tensor_resize u8 scales, aligned", "tensor_resize", t1, &img, NULL, 0, 1);
    const char *t2[] = {"sizes=[11.0]", "axis_names=\"W\"", "interp_type=types.INTERP_CUBIC",
                        "dtype=types.FLOAT", NULL};
    case_("tensor_resize f32 one axis, cubic", "tensor_resize", t2, &fimg, NULL, 0, 1e-3);
    const char *t3[] = {"scales=[1.0, 1.0, 1.0]", NULL};
    case_("tensor_resize u8 nothing resized (a copy)", "tensor_resize", t3, &img, NULL, 0, 0);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
}

/* slice, shapes, cast_like, reductions, math, noise, erase, the displacements, colour spaces
 * and paste: CPU against CUDA (noise.shot is left
 * out: an ulp between CUDA's and the C library's log may flip one rejection step) */
static void test_generic_ops(void) {
    const int n = 8;
    sl_tlist img, fimg, win[2], half;
    int64_t lo[3] = {1, 1, 3}, hi[3] = {29, 31, 3}, lo1[1] = {2}, hi1[1] = {2};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "HWC");
    make_list(&win[0], n, SL_DTYPE_F32, 1, lo1, hi1, NULL); /* per-sample start [x, y] */
    make_list(&win[1], n, SL_DTYPE_F32, 1, lo1, hi1, NULL); /* per-sample shape [w, h] */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            ((float *)win[0].data[i])[k] = (float)(rnd() % 40) - 10.0f;
            ((float *)win[1].data[i])[k] = (float)(rnd() % 30);
        }
    const char *s1[] = {"start=@0", "shape=@1", "out_of_bounds_policy=\"pad\"",
                        "fill_values=[1.0, 2.0, 3.0]", NULL};
    case_("slice u8 HWC per-sample window, padded", "slice", s1, &img, win, 2, 0);
    const char *s2[] = {"start=@0", "shape=@1", "out_of_bounds_policy=\"trim_to_shape\"",
                        "dtype=types.FLOAT16", NULL};
    case_("slice f32 trimmed -> f16", "slice", s2, &fimg, win, 2, 0);
    const char *s3[] = {"rel_start=[0.5]", "rel_end=[1.0]", "axes=[2]", NULL};
    case_("slice u8 channels", "slice", s3, &img, NULL, 0, 0);
    const char *sh[] = {"dtype=types.INT32", NULL};
    case_("shapes int32", "shapes", sh, &img, NULL, 0, 0);
    make_list(&half, n, SL_DTYPE_F16, 1, lo1, hi1, NULL);
    sl_tlist *cl[2] = {&fimg, &half};
    case_n("cast_like f32 -> f16", "cast_like", NULL, cl, 2);
    const char *r_all[] = {NULL};
    case_("reductions.sum u8 -> u64, every axis", "reductions.sum", r_all, &img, NULL, 0, 0);
    const char *r_hw[] = {"axis_names=\"HW\"", NULL};
    case_("reductions.max u8 over H, W", "reductions.max", r_hw, &img, NULL, 0, 0);
    case_("reductions.min f32 over H, W", "reductions.min", r_hw, &fimg, NULL, 0, 0);
    const char *r_c[] = {"axes=[-1]", "keep_dims=True", NULL};
    case_("reductions.mean f32 over C, kept", "reductions.mean", r_c, &fimg, NULL, 0, 1e-4);
    case_("reductions.rms u8 every axis", "reductions.rms", r_all, &img, NULL, 0, 1e-3);
    case_("reductions.sum f32 every axis", "reductions.sum", r_all, &fimg, NULL, 0, 0.05);
    /* floating results: CUDA's double functions may part from the C library's in an ulp */
    case_("math.sin f32", "math.sin", NULL, &fimg, NULL, 0, 1e-6);
    sl_tlist u8f, mh, mg;
    like(&u8f, &fimg, SL_DTYPE_U8);
    sl_tlist *m2[2] = {&u8f, &fimg};
    run_both_n("math.atan2", NULL, m2, 2, NULL, 0, &mh, &mg);
    compare("math.atan2 u8, f32 -> f32", &mh, &mg, 1e-6);
    sl_tlist_free(&u8f);
    sl_tlist_free(&mh);
    sl_tlist_free(&mg);
    const char *g2[] = {"mean=3.0", "stddev=12.0", NULL};
    case_("noise.gaussian u8", "noise.gaussian", g2, &img, NULL, 0, 1);
    case_("noise.gaussian f32", "noise.gaussian", g2, &fimg, NULL, 0, 1e-4);
    const char *sp[] = {"prob=0.3", NULL};
    case_("noise.salt_and_pepper u8 HWC, per pixel", "noise.salt_and_pepper", sp, &img, NULL, 0, 0);
    const char *er[] = {"anchor=@0", "shape=@1", "axis_names=\"WH\"", "fill_value=[5.0, 6.0, 7.0]",
                        NULL};
    case_("erase u8 HWC per-sample region, per channel", "erase", er, &img, win, 2, 0);
    sl_tlist fv; /* a per-sample fill_value: one per channel */
    int64_t lo3[1] = {3}, hi3[1] = {3};
    make_list(&fv, n, SL_DTYPE_F32, 1, lo3, hi3, NULL);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) ((float *)fv.data[i])[k] = (float)(rnd() % 300) - 20.0f;
    const char *ef[] = {"anchor=[2.0, 3.0]", "shape=[10.0, 8.0]", "fill_value=@0", NULL};
    case_("erase u8 HWC per-sample fill_value", "erase", ef, &img, &fv, 1, 0);
    sl_tlist_free(&fv);
    const char *wa[] = {"ampl_x=3.0", "freq_y=0.3", "fill_value=9.0", NULL};
    case_("water u8 nearest", "water", wa, &img, NULL, 0, 0);
    const char *wl[] = {"interp_type=types.INTERP_LINEAR", NULL};
    case_("water f32 linear", "water", wl, &fimg, NULL, 0, 1e-3);
    case_("sphere u8", "sphere", NULL, &img, NULL, 0, 0);
    const char *jt[] = {"nDegree=3", NULL};
    case_("jitter u8", "jitter", jt, &img, NULL, 0, 0);
    const char *cs[] = {"image_type=types.RGB", "output_type=types.YCbCr", NULL};
    case_("color_space_conversion u8 RGB -> YCbCr", "color_space_conversion", cs, &img, NULL, 0, 0);
    const char *pa[] = {"ratio=1.7", "paste_x=0.2", "fill_value=[1.0, 2.0, 3.0]", NULL};
    case_("paste u8", "paste", pa, &img, NULL, 0, 0);
    sl_tlist *m4[2] = {&img, &img};
    case_n("math.pow u8 ** u8 (wraps)", "math.pow", NULL, m4, 2);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
    sl_tlist_free(&win[0]);
    sl_tlist_free(&win[1]);
    sl_tlist_free(&half);
}

/* the audio ops with a CUDA run: pre-emphasis (same bits), decibels (log10 on either side),
 * mel filters (the same sums in the same order), the spectrogram (cuFFT in float against the
 * CPU's double transform: within 1e-4 of the largest power) */
/* experimental.filter: per-sample filters of 1..5 x 1..5, every border, valid mode, a fill value
 * input; experimental.equalize: HWC and FCHW planes */
static void test_filter_equalize(void) {
    const int n = 7;
    sl_tlist img, fimg, k, fill, seq;
    int64_t lo[3] = {0, 1, 1}, hi[3] = {40, 45, 4}, klo[2] = {1, 1}, khi[2] = {5, 5};
    int64_t lo1[1] = {1}, slo[4] = {1, 1, 1, 1}, shi[4] = {3, 3, 30, 30};
    make_list(&img, n, SL_DTYPE_U8, 3, lo, hi, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, lo, hi, "HWC");
    make_list(&k, n, SL_DTYPE_F32, 2, klo, khi, NULL);
    for (int i = 0; i < n; i++) /* taps in [-1, 1] */
        for (size_t j = 0; j < sl_tlist_sample_nbytes(&k, i) / 4; j++)
            ((float *)k.data[i])[j] /= 250.0f;
    make_list(&fill, n, SL_DTYPE_U8, 1, lo1, lo1, NULL);
    sl_tlist *ik[2] = {&img, &k}, *fk[2] = {&fimg, &k}, *ikf[3] = {&img, &k, &fill};
    static const char *const borders[] = {"reflect_101", "reflect_1001", "wrap", "clamp",
                                          "constant"};
    char arg[64], what[80];
    for (int b = 0; b < 5; b++) {
        snprintf(arg, sizeof arg, "border=\"%s\"", borders[b]);
        const char *a1[] = {arg, NULL}, *a2[] = {arg, "dtype=types.FLOAT", NULL};
        snprintf(what, sizeof what, "filter u8 %s", borders[b]);
        case_n(what, "experimental.filter", a1, ik, 2);
        snprintf(what, sizeof what, "filter f32 %s -> f32", borders[b]);
        case_n(what, "experimental.filter", a2, fk, 2);
    }
    const char *c1[] = {"border=\"constant\"", "anchor=[0, 0]", NULL};
    case_n("filter u8 constant, fill value input", "experimental.filter", c1, ikf, 3);
    make_list(&seq, n, SL_DTYPE_U8, 4, slo, shi, "FCHW");
    sl_tlist *sk[2] = {&seq, &k};
    const char *none[] = {NULL};
    case_n("filter u8 FCHW", "experimental.filter", none, sk, 2);
    /* valid mode: images at least 5 x 5, as large as any filter */
    sl_tlist big;
    int64_t blo[3] = {5, 5, 1};
    make_list(&big, n, SL_DTYPE_U8, 3, blo, hi, "HWC");
    sl_tlist *bk[2] = {&big, &k};
    const char *v1[] = {"mode=\"valid\"", "dtype=types.FLOAT", NULL};
    case_n("filter u8 valid -> f32", "experimental.filter", v1, bk, 2);
    sl_tlist_free(&big);
    case_("equalize u8 HWC", "experimental.equalize", none, &img, NULL, 0, 0);
    case_("equalize u8 FCHW", "experimental.equalize", none, &seq, NULL, 0, 0);
    sl_tlist_free(&img);
    sl_tlist_free(&fimg);
    sl_tlist_free(&k);
    sl_tlist_free(&fill);
    sl_tlist_free(&seq);
}

static void test_audio(void) {
    sl_tlist sig, spec, pos;
    int64_t slo[1] = {1}, shi[1] = {9000};
    make_list(&sig, 5, SL_DTYPE_F32, 1, slo, shi, "t");
    for (int i = 0; i < sig.count; i++) /* audio-like values in [-1, 1.7] */
        for (int64_t j = 0; j < sl_tlist_shape(&sig, i)[0]; j++)
            ((float *)sig.data[i])[j] /= 150.0f;
    const char *p1[] = {"preemph_coeff=0.97", NULL}, *p2[] = {"border=\"reflect\"", NULL};
    case_("preemphasis_filter f32 clamp", "preemphasis_filter", p1, &sig, NULL, 0, 0);
    case_("preemphasis_filter f32 reflect", "preemphasis_filter", p2, &sig, NULL, 0, 0);
    const char *s1[] = {"nfft=512", "window_length=320", "window_step=160", NULL};
    const char *s2[] = {"window_length=256", "window_step=100", "center_windows=False",
                        "layout=\"tf\"",     "power=1",         NULL};
    sl_tlist h, g;
    const char *const *sargs[2] = {s1, s2};
    for (int k = 0; k < 2; k++) {
        run_both("spectrogram", sargs[k], &sig, NULL, 0, &h, &g);
        double most = 0;
        for (int i = 0; i < h.count; i++)
            for (size_t j = 0; j < sl_tlist_sample_nbytes(&h, i) / 4; j++)
                if (((float *)h.data[i])[j] > most) most = ((float *)h.data[i])[j];
        compare(k ? "spectrogram tf, amplitude, not centred" : "spectrogram ft, 512 of 320", &h, &g,
                1e-4 * most + 1e-6);
        sl_tlist_free(&h);
        sl_tlist_free(&g);
    }
    int64_t lo[2] = {257, 1}, hi[2] = {257, 40};
    make_list(&spec, 4, SL_DTYPE_F32, 2, lo, hi, "ft");
    const char *m1[] = {"nfilter=64", "sample_rate=16000.0", NULL};
    const char *m2[] = {"nfilter=40",
                        "sample_rate=16000.0",
                        "mel_formula=\"htk\"",
                        "normalize=False",
                        "freq_low=100.0",
                        "freq_high=7000.0",
                        NULL};
    case_("mel_filter_bank slaney, 64 of 257 bins", "mel_filter_bank", m1, &spec, NULL, 0, 1e-3);
    case_("mel_filter_bank htk, not normalised", "mel_filter_bank", m2, &spec, NULL, 0, 1e-3);
    like(&pos, &spec, SL_DTYPE_F32);
    for (int i = 0; i < pos.count; i++) /* magnitudes: positive, some zero */
        for (size_t j = 0; j < sl_tlist_sample_nbytes(&pos, i) / 4; j++) {
            float *v = &((float *)pos.data[i])[j];
            *v = *v < 0 ? (*v < -100 ? 0 : -*v) : *v;
        }
    const char *d1[] = {NULL}, *d2[] = {"multiplier=2.302585092994046", "reference=1.0",
                                        "cutoff_db=-16.635532333438686", NULL};
    case_("to_decibels, reference the maximum", "to_decibels", d1, &pos, NULL, 0, 1e-4);
    case_("to_decibels ln, floor 2^-24", "to_decibels", d2, &pos, NULL, 0, 1e-4);
    sl_tlist_free(&sig);
    sl_tlist_free(&spec);
    sl_tlist_free(&pos);
}

/* one integer (int32) per sample, of shape (1), drawn from [lo, lo + span) */
static void per_sample_ints(sl_tlist *l, int n, int lo, int span, sl_dtype t) {
    int64_t one[1] = {1};
    make_list(l, n, SL_DTYPE_I32, 1, one, one, NULL);
    l->dtype = t; /* (4-byte types only: I32 or INTERP) */
    for (int i = 0; i < n; i++) ((int32_t *)l->data[i])[0] = lo + (int32_t)(rnd() % (uint32_t)span);
}

/* The paths first built without a GPU: warp_affine and rotate with dtype and of DHWC volumes,
 * resize of volumes (per-sample resize_z and filters, CDHW, dtype), resize with per-sample
 * filters, tensor_subscript with per-sample bounds (1- to 8-byte elements, empty samples) and
 * lookup_table into every output width. Exact but for the resize sums (within 1 / 1e-3). */
static void test_untried_paths(void) {
    const int n = 6;
    sl_tlist img, fimg, vol, fvol, cvol, ang, axes, mats, zs, interp, i8, i64, lo, hi, step, at;
    int64_t l3[3] = {1, 1, 1}, h3[3] = {30, 33, 4}, l4[4] = {1, 1, 1, 1}, h4[4] = {9, 10, 12, 3},
            l4c[4] = {2, 1, 1, 1}, h4c[4] = {2, 9, 8, 10}, one[1] = {1}, three[1] = {3},
            twelve[1] = {12};
    make_list(&img, n, SL_DTYPE_U8, 3, l3, h3, "HWC");
    make_list(&fimg, n, SL_DTYPE_F32, 3, l3, h3, "HWC");
    make_list(&vol, n, SL_DTYPE_U8, 4, l4, h4, "DHWC");
    make_list(&fvol, n, SL_DTYPE_F32, 4, l4, h4, "DHWC");
    make_list(&cvol, n, SL_DTYPE_U8, 4, l4c, h4c, "CDHW");
    make_list(&ang, n, SL_DTYPE_F32, 1, one, one, NULL);
    make_list(&axes, n, SL_DTYPE_F32, 1, three, three, NULL);
    make_list(&mats, n, SL_DTYPE_F32, 1, twelve, twelve, NULL);
    make_list(&zs, n, SL_DTYPE_F32, 1, one, one, NULL);
    for (int i = 0; i < n; i++) {
        ((float *)ang.data[i])[0] = (float)(rnd() % 3600) / 10.0f - 180.0f;
        float *a = axes.data[i], *m = mats.data[i];
        a[0] = (float)(rnd() % 3), a[1] = (float)(rnd() % 3) - 1.0f, a[2] = 1.0f;
        for (int k = 0; k < 12; k++) /* a 3x4 map near the identity */
            m[k] = (k % 5 == 0 ? 0.8f : 0.0f) + (float)(rnd() % 300) / 1000.0f -
                   (k % 4 == 3 ? 1.0f : 0.1f);
        ((float *)zs.data[i])[0] = (float)(1 + rnd() % 14);
    }
    const char *w1[] = {"angle=@0", "dtype=types.FLOAT", NULL};
    case_("rotate u8 -> f32 per-sample angle", "rotate", w1, &img, &ang, 1, 0);
    const char *w2[] = {"matrix=[0.9, 0.3, -2.0, -0.2, 1.1, 1.0]", "dtype=types.UINT8",
                        "fill_value=300.0", NULL};
    case_("warp_affine f32 -> u8 saturating, filled", "warp_affine", w2, &fimg, NULL, 0, 0);
    const char *w3[] = {"angle=@0", "dtype=types.INT16", "interp_type=types.INTERP_NN", NULL};
    case_("rotate f32 -> i16 nearest", "rotate", w3, &fimg, &ang, 1, 0);
    const char *w4[] = {"matrix=@0", "fill_value=7.0", NULL};
    case_("warp_affine u8 DHWC per-sample 3x4 matrix", "warp_affine", w4, &vol, &mats, 1, 0);
    const char *w5[] = {"matrix=@0", "size=[4.0, 6.0, 5.0]", "dtype=types.FLOAT16",
                        "interp_type=types.INTERP_NN", NULL};
    case_("warp_affine f32 DHWC -> f16 nearest, sized", "warp_affine", w5, &fvol, &mats, 1, 0);
    sl_tlist rot_args[2] = {ang, axes};
    const char *w6[] = {"angle=@0", "axis=@1", "dtype=types.FLOAT", NULL};
    case_("rotate u8 DHWC per-sample angle, axis -> f32", "rotate", w6, &vol, rot_args, 2, 0);

    per_sample_ints(&interp, n, 0, 6, SL_DTYPE_INTERP); /* NN .. Lanczos3 */
    const char *r1[] = {"resize_z=@0", "resize_y=7", "resize_x=9", NULL};
    case_("resize u8 DHWC per-sample resize_z", "resize", r1, &vol, &zs, 1, 1);
    const char *r2[] = {"size=[5.0, 8.0, 6.0]", "interp_type=@0", "dtype=types.FLOAT", NULL};
    case_("resize f32 DHWC per-sample interp_type", "resize", r2, &fvol, &interp, 1, 1e-3);
    const char *r3[] = {"size=[3.0, 11.0, 4.0]", "interp_type=types.INTERP_CUBIC", NULL};
    case_("resize u8 CDHW cubic", "resize", r3, &cvol, NULL, 0, 1);
    const char *r4[] = {"size=[13.0, 37.0]", "min_filter=@0", "mag_filter=@0", NULL};
    case_("resize u8 per-sample min/mag filter", "resize", r4, &img, &interp, 1, 1);
    const char *r5[] = {"size=[15.0, 18.0]", "interp_type=@0", NULL};
    case_("random_resized_crop f32 per-sample interp_type", "random_resized_crop", r5, &fimg,
          &interp, 1, 1e-3);

    /* samples of 0 to 7 rows, 1 to 6 columns and 2 channels: two of them empty */
    const int64_t shapes[] = {5, 4, 2, 0, 3, 2, 7, 1, 2, 2, 6, 2, 0, 5, 2, 4, 4, 2};
    make_shaped(&i8, n, SL_DTYPE_U8, 3, shapes, "HWC");
    make_shaped(&i64, n, SL_DTYPE_F16, 3, shapes, "HWC"); /* (2-byte elements) */
    sl_tlist wide;
    like(&wide, &i8, SL_DTYPE_I64);
    per_sample_ints(&lo, n, -3, 6, SL_DTYPE_I32);
    per_sample_ints(&hi, n, -2, 9, SL_DTYPE_I32);
    per_sample_ints(&step, n, 1, 3, SL_DTYPE_I32);
    per_sample_ints(&at, n, -2, 4, SL_DTYPE_I32); /* within every sample's 2 channels */
    for (int i = 0; i < n; i++)
        if (i % 2) ((int32_t *)step.data[i])[0] *= -1;
    sl_tlist bounds[4] = {lo, hi, step, at};
    const char *t1[] = {"lo_0=@0", "hi_0=@1", "step_0=@2", "at_2=@3", NULL};
    case_("tensor_subscript u8 x[lo:hi:step, :, at]", "tensor_subscript", t1, &i8, bounds, 4, 0);
    const char *t2[] = {"lo_1=@0", "step_0=@2", NULL};
    case_("tensor_subscript 2-byte x[::step, lo:]", "tensor_subscript", t2, &i64, bounds, 4, 0);
    const char *t3[] = {"hi_1=@1", "step_1=@2", "at_2=@3", NULL};
    case_("tensor_subscript i64 x[:, :hi:step, at]", "tensor_subscript", t3, &wide, bounds, 4, 0);
    sl_tlist_free(&wide);
    like(&wide, &i8, SL_DTYPE_F32);
    case_("tensor_subscript f32 x[lo:hi:step, :, at]", "tensor_subscript", t1, &wide, bounds, 4, 0);

    sl_tlist_free(&i64);
    make_shaped(&i64, n, SL_DTYPE_I32, 3, shapes, "HWC"); /* -2 .. 11: keys, and not */
    const char *l1[] = {"keys=[0, 1, 2, 5, 9]", "values=[10.5, -1.0, 300.0, 7.0, 0.25]",
                        "default_value=-9.5", NULL};
    const char *dts[] = {"dtype=types.FLOAT", "dtype=types.UINT8", "dtype=types.INT64",
                         "dtype=types.FLOAT16", "dtype=types.INT16"};
    for (int k = 0; k < 5; k++) {
        const char *argv[] = {l1[0], l1[1], l1[2], dts[k], NULL};
        char what[64];
        snprintf(what, sizeof what, "lookup_table i32 -> %s", dts[k] + 12);
        case_(what, "lookup_table", argv, &i64, NULL, 0, 0);
        snprintf(what, sizeof what, "lookup_table u8 (empty samples) -> %s", dts[k] + 12);
        case_(what, "lookup_table", argv, &i8, NULL, 0, 0);
    }
    sl_tlist *lists[] = {&img,    &fimg, &vol, &fvol, &cvol, &ang, &axes, &mats, &zs,
                         &interp, &i8,   &i64, &wide, &lo,   &hi,  &step, &at};
    for (size_t k = 0; k < sizeof lists / sizeof *lists; k++) sl_tlist_free(lists[k]);
}

int main(void) {
    gpu_require(1);
    sl_err e;
    CHECK_OK(sl__cuda_stream_create(0, 0, &stream, &e), &e);
    test_cmn();
    test_one_hot_cast_flip();
    test_brightness_contrast();
    test_transpose();
    test_resize();
    test_arithmetic();
    test_cat_stack();
    test_normalize();
    test_color_twist();
    test_warp();
    test_blur();
    test_pad();
    test_generic_ops();
    test_audio();
    test_filter_equalize();
    test_untried_paths();
    sl__cuda_stream_destroy(stream);
    return check_done();
}
