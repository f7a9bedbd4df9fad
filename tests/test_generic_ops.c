/* SPDX-License-Identifier: Apache-2.0 */
/* The generic ops and augmentations (src/ops/ops_list_generic.c) in one pipeline from text, so
 * that the sanitizer builds run every one of them: slice, shapes, cast_like, reinterpret,
 * constant, reductions.*, math.*, noise.*, random.choice / beta, erase, transforms.* with
 * warp_affine and coord_transform, water, sphere, jitter, color_space_conversion, paste,
 * laplacian, jpeg_compression_distortion, and python_function with a function registered from C
 * (sl_pipeline_add_function) that halves its input.
 * - Images come from a source (uint8 HWC, shapes varying by sample); three batches.
 * - Checked against formulas here: the function's halves, a slice, a sum, the shapes, a clamp,
 *   a constant, a reinterpret; every output has the batch's samples.
 * - 1 and 3 threads give the same bytes in every output (the random ops included).
 * - decoders.image_slice and image_crop on the Caffe2 fixture cut what decoders.image gives.
 * - A function that fails names the op and the batch; a source given as the function, and a
 *   function given as a source, are refused. (Python's tests check each op against numpy.) */
#include "check.h"

#include "sluice/pipeline.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 4, BATCHES = 3, NOUT = 16 };

static int64_t img_h(int64_t s) {
    return 3 + s % 7;
}
static int64_t img_w(int64_t s) {
    return 4 + (s * 5) % 9;
}

static sl_status img_shape(void *user, const sl_source_info *f, sl_dtype *dtype, int *ndim,
                           int64_t *shape, sl_err *err) {
    (void)user, (void)err;
    *dtype = SL_DTYPE_U8;
    *ndim = 3;
    shape[0] = img_h(f->sample), shape[1] = img_w(f->sample), shape[2] = 3;
    return SL_OK;
}

static uint8_t pixel(int64_t s, int64_t k) {
    return (uint8_t)((s * 37 + k * 11 + (k * k) % 13) & 0xff);
}

static sl_status img_fill(void *user, const sl_source_info *f, void *dst, size_t nbytes,
                          sl_err *err) {
    (void)user, (void)err;
    for (size_t k = 0; k < nbytes; k++) ((uint8_t *)dst)[k] = pixel(f->sample, (int64_t)k);
    return SL_OK;
}

/* the registered function: every input sample halved, in memory kept until the next call */
typedef struct halver {
    uint8_t *buf;
    size_t cap;
    int fail_batch; /* -1: never */
} halver;

static sl_status halve(void *user, sl_function_io *io, sl_err *err) {
    halver *h = user;
    if (io->iteration == h->fail_batch) return sl_err_set(err, SL_EIO, "the function gave up");
    if (io->num_inputs != 1 || io->num_outputs != 1)
        return sl_err_set(err, SL_EINVAL, "one input and one output");
    size_t total = 0;
    for (int i = 0; i < io->batch; i++) total += sl_tensor_nbytes(&io->inputs[i]);
    if (total > h->cap) {
        uint8_t *b = realloc(h->buf, total);
        if (!b) return sl_err_set(err, SL_ENOMEM, "out of memory");
        h->buf = b, h->cap = total;
    }
    size_t at = 0;
    for (int i = 0; i < io->batch; i++) {
        const sl_tensor *t = &io->inputs[i];
        size_t n = sl_tensor_nbytes(t);
        for (size_t k = 0; k < n; k++) h->buf[at + k] = ((const uint8_t *)t->data)[k] / 2;
        sl_tensor *o = &io->outputs[i];
        o->data = h->buf + at;
        o->dtype = SL_DTYPE_U8;
        o->ndim = t->ndim;
        memcpy(o->shape, t->shape, sizeof o->shape);
        at += n;
    }
    return SL_OK;
}

/* two pipelines (at most 16 outputs each) */
static const char *TEXT_A =
    "def pipe():\n"
    "    img = fn.external_source(source=images, layout=\"HWC\")\n"
    "    half = fn.python_function(img, function=halver)\n"
    "    win = fn.slice(img, start=[1, 1], shape=[2, 2])\n"
    "    pad = fn.slice(img, rel_start=[0.5, -0.5], rel_shape=[1.0, 1.0],\n"
    "                   out_of_bounds_policy=\"pad\", fill_values=[1, 2, 3])\n"
    "    shp = fn.shapes(img)\n"
    "    flt = fn.cast_like(img, fn.constant(fdata=0.5, shape=[1]))\n"
    "    words = fn.reinterpret(fn.constant(idata=[1, 2, 3, 4], dtype=types.UINT8),\n"
    "                           dtype=types.UINT32)\n"
    "    total = fn.reductions.sum(img)\n"
    "    means = fn.reductions.mean(flt, axis_names=\"HW\")\n"
    "    spread = fn.reductions.std_dev(flt, means, axis_names=\"HW\", ddof=1)\n"
    "    extremes = fn.reductions.max(img, axes=[2], keep_dims=True)\n"
    "    clamped = fn.math.clamp(img, fn.constant(idata=50, shape=[]),\n"
    "                            fn.constant(idata=200, shape=[]))\n"
    "    roots = fn.math.sqrt(img)\n"
    "    noisy = fn.noise.gaussian(img, stddev=10.0)\n"
    "    salted = fn.noise.salt_and_pepper(img, prob=0.2)\n"
    "    shot = fn.noise.shot(flt, factor=4.0)\n"
    "    return (img, half, win, pad, shp, flt, words, total, means, spread, extremes, clamped,\n"
    "            roots, noisy, salted, shot)\n";

static const char *TEXT_B =
    "def pipe():\n"
    "    img = fn.external_source(source=images, layout=\"HWC\")\n"
    "    flt = fn.cast(img, dtype=types.FLOAT)\n"
    "    pick = fn.random.choice(fn.constant(idata=[3, 5, 7]), shape=[4])\n"
    "    beta = fn.random.beta(alpha=2.0, beta=0.5)\n"
    "    erased = fn.erase(img, anchor=[0, 0, 2, 2], shape=[1, 2, 5, 5], fill_value=[9, 8, 7])\n"
    "    mt = fn.transforms.rotation(fn.transforms.translation(offset=[1, 2]), angle=30,\n"
    "                                center=[4, 4])\n"
    "    warped = fn.warp_affine(img, matrix=mt)\n"
    "    pts = fn.coord_transform(fn.constant(fdata=[1, 2, 3, 4], shape=[2, 2]), MT=mt)\n"
    "    wet = fn.water(img, interp_type=types.INTERP_LINEAR)\n"
    "    ball = fn.sphere(img)\n"
    "    jit = fn.jitter(img, nDegree=3)\n"
    "    ycc = fn.color_space_conversion(img, image_type=types.RGB, output_type=types.YCbCr)\n"
    "    canvas = fn.paste(img, ratio=1.5, fill_value=[0, 0, 255])\n"
    "    edges = fn.laplacian(img, dtype=types.FLOAT)\n"
    "    jpeg = fn.jpeg_compression_distortion(img, quality=30)\n"
    "    return (pick, beta, erased, warped, pts, wet, ball, jit, ycc, canvas, edges, jpeg, mt,\n"
    "            fn.math.abs(flt), fn.reductions.min(flt), fn.transforms.combine(mt, mt))\n";

static sl_pipeline *make(const char *text, int threads, halver *h, const char *fname, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = threads;
    c.seed = 77;
    sl_pipeline *p = NULL;
    if (sl_pipeline_create(&c, &p, e)) return NULL;
    sl_source src;
    memset(&src, 0, sizeof src);
    src.shape = img_shape;
    src.fill = img_fill;
    sl_function fn;
    memset(&fn, 0, sizeof fn);
    fn.call = halve;
    fn.user = h;
    sl_status st = sl_pipeline_add_source(p, "images", &src);
    if (st == SL_OK) st = sl_pipeline_add_function(p, fname, &fn);
    if (st == SL_OK) st = sl_pipeline_parse(p, text, "generic.py", 0, NULL, e);
    if (st == SL_OK) st = sl_pipeline_build(p);
    if (st != SL_OK) {
        sl_err_set(e, st, "%s", sl_pipeline_errmsg(p));
        sl_pipeline_free(p);
        return NULL;
    }
    return p;
}

/* FNV-1a over every output's samples (shapes and bytes) */
static uint64_t digest(const sl_batch *b, uint64_t h) {
    for (int o = 0; o < NOUT; o++) {
        const sl_tlist *l = sl_batch_output(b, o);
        for (int i = 0; i < l->count; i++) {
            size_t n = sl_tlist_sample_nbytes(l, i);
            const int64_t *sh = sl_tlist_shape(l, i);
            for (int d = 0; d < l->ndim; d++) h = (h ^ (uint64_t)sh[d]) * 1099511628211ull;
            for (size_t k = 0; k < n; k++)
                h = (h ^ ((const uint8_t *)l->data[i])[k]) * 1099511628211ull;
        }
    }
    return h;
}

static void check_batch(const sl_batch *b, int64_t it) {
    for (int o = 0; o < NOUT; o++) CHECK_EQ_INT(sl_batch_output(b, o)->count, B);
    const sl_tlist *img = sl_batch_output(b, 0), *half = sl_batch_output(b, 1),
                   *win = sl_batch_output(b, 2), *shp = sl_batch_output(b, 4),
                   *words = sl_batch_output(b, 6), *total = sl_batch_output(b, 7),
                   *cl = sl_batch_output(b, 11);
    CHECK_EQ_INT(half->dtype, SL_DTYPE_U8);
    CHECK_EQ_INT(total->dtype, SL_DTYPE_U64);
    CHECK_EQ_INT(words->dtype, SL_DTYPE_U32);
    CHECK_EQ_INT(cl->dtype, SL_DTYPE_I32);
    for (int i = 0; i < B; i++) {
        int64_t s = it * B + i, h = img_h(s), w = img_w(s), n = h * w * 3;
        const uint8_t *px = img->data[i], *hv = half->data[i], *wv = win->data[i];
        const int32_t *cv = cl->data[i];
        int wrong = 0;
        uint64_t sum = 0;
        for (int64_t k = 0; k < n; k++) {
            wrong += px[k] != pixel(s, k) || hv[k] != px[k] / 2;
            wrong += cv[k] != (px[k] < 50 ? 50 : px[k] > 200 ? 200 : px[k]);
            sum += px[k];
        }
        CHECK_MSG(wrong == 0, "sample %lld: %d elements wrong", (long long)s, wrong);
        CHECK_EQ_INT(*(const uint64_t *)total->data[i], sum);
        const int64_t *ws = sl_tlist_shape(win, i), *ss = shp->data[i];
        CHECK_EQ_INT(ws[0], 2);
        CHECK_EQ_INT(ws[1], 2);
        CHECK(ss[0] == h && ss[1] == w && ss[2] == 3);
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++)
                for (int c = 0; c < 3; c++)
                    wrong += wv[(y * 2 + x) * 3 + c] != px[((y + 1) * w + x + 1) * 3 + c];
        CHECK_MSG(wrong == 0, "sample %lld: the slice is wrong", (long long)s);
        uint32_t want_word;
        memcpy(&want_word, (const uint8_t[]){1, 2, 3, 4}, 4);
        CHECK_EQ_INT(*(const uint32_t *)words->data[i], want_word);
    }
}

/* decoders.image_slice and image_crop on the Caffe2 fixture's JPEGs: the windows of the whole
 * images */
static void test_decoders(void) {
    char text[1024];
    snprintf(text, sizeof text,
             "def pipe():\n"
             "    jpegs, labels = fn.readers.caffe2(path=\"%s\")\n"
             "    return (fn.decoders.image(jpegs),\n"
             "            fn.decoders.image_slice(jpegs, start=[3, 2], shape=[12, 10]),\n"
             "            fn.decoders.image_crop(jpegs, crop=[20, 16], crop_pos_x=0.0))\n",
             fixture("caffe2-fmnist-256"));
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = B;
    c.num_threads = 2;
    sl_err e;
    sl_pipeline *p = check_pipeline(&c, text, "decoders.py", 0, NULL, &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    if (!p) return;
    sl_batch *b = NULL;
    CHECK_OK(sl_pipeline_next(p, &b), NULL);
    if (b) {
        const sl_tlist *full = sl_batch_output(b, 0), *sl = sl_batch_output(b, 1),
                       *cr = sl_batch_output(b, 2);
        for (int i = 0; i < B; i++) {
            const int64_t *fs = sl_tlist_shape(full, i);
            int64_t w = fs[1];
            const uint8_t *f = full->data[i], *a = sl->data[i], *q = cr->data[i];
            CHECK(sl_tlist_shape(sl, i)[0] == 10 && sl_tlist_shape(sl, i)[1] == 12);
            CHECK(sl_tlist_shape(cr, i)[0] == 20 && sl_tlist_shape(cr, i)[1] == 16);
            int64_t y0 = (int64_t)llroundf((float)(0.5 * (double)(fs[0] - 20)));
            int wrong = 0;
            for (int y = 0; y < 10; y++)
                for (int x = 0; x < 12 * 3; x++)
                    wrong += a[y * 36 + x] != f[((y + 2) * w + 3) * 3 + x];
            for (int y = 0; y < 20; y++)
                for (int x = 0; x < 16 * 3; x++) wrong += q[y * 48 + x] != f[(y + y0) * w * 3 + x];
            CHECK_MSG(wrong == 0, "sample %d: %d bytes of the windows differ", i, wrong);
        }
        sl_pipeline_release(p, b);
    }
    sl_pipeline_free(p);
}

int main(void) {
    test_decoders();
    uint64_t digests[2] = {14695981039346656037ull, 14695981039346656037ull};
    int threads[2] = {1, 3};
    const char *texts[2] = {TEXT_A, TEXT_B};
    for (int r = 0; r < 2; r++)
        for (int t = 0; t < 2; t++) {
            halver h = {NULL, 0, -1};
            sl_err e;
            sl_pipeline *p = make(texts[t], threads[r], &h, "halver", &e);
            CHECK_MSG(p != NULL, "%s", e.msg);
            for (int k = 0; p && k < BATCHES; k++) {
                sl_batch *b = NULL;
                sl_status st = sl_pipeline_next(p, &b);
                CHECK_MSG(st == SL_OK, "%s", sl_pipeline_errmsg(p));
                if (st != SL_OK) break;
                if (t == 0) check_batch(b, k);
                digests[r] = digest(b, digests[r]);
                sl_pipeline_release(p, b);
            }
            sl_pipeline_free(p);
            free(h.buf);
        }
    CHECK_MSG(digests[0] == digests[1], "1 and 3 threads gave different bytes");

    /* the function fails in batch 1: the error names the op and the batch */
    halver bad = {NULL, 0, 1};
    sl_err e;
    sl_pipeline *p = make(TEXT_A, 2, &bad, "halver", &e);
    CHECK_MSG(p != NULL, "%s", e.msg);
    sl_status st = SL_OK;
    for (int k = 0; p && k < BATCHES && st == SL_OK; k++) {
        sl_batch *b = NULL;
        st = sl_pipeline_next(p, &b);
        if (st == SL_OK) sl_pipeline_release(p, b);
    }
    CHECK_EQ_INT(st, SL_EIO);
    if (p)
        CHECK_MSG(!check_needle_missing(sl_pipeline_errmsg(p),
                                        "python_function: batch 1: the function gave up"),
                  "%s", sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
    free(bad.buf);

    /* a function under the source's name, and the other way round */
    halver h = {NULL, 0, -1};
    p = make(TEXT_A, 1, &h, "other", &e);
    CHECK(p == NULL);
    CHECK_MSG(!check_needle_missing(e.msg, "no source named 'halver'") ||
                  !check_needle_missing(e.msg, "halver"),
              "%s", e.msg);
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    CHECK_OK(sl_pipeline_create(&c, &p, &e), &e);
    sl_function fn = {halve, &h};
    sl_source src;
    memset(&src, 0, sizeof src);
    src.shape = img_shape;
    src.fill = img_fill;
    CHECK_OK(sl_pipeline_add_function(p, "f", &fn), NULL);
    CHECK_OK(sl_pipeline_add_source(p, "s", &src), NULL);
    CHECK_EQ_INT(sl_pipeline_add_function(p, "s", &fn), SL_EINVAL);
    sl_function none = {NULL, NULL};
    CHECK_EQ_INT(sl_pipeline_add_function(p, "g", &none), SL_EINVAL);
    CHECK_EQ_INT(sl_pipeline_parse(p,
                                   "def pipe():\n"
                                   "    x = fn.external_source(source=f)\n"
                                   "    return fn.python_function(x, function=s)\n",
                                   "mixed.py", 0, NULL, &e),
                 SL_OK);
    CHECK(sl_pipeline_build(p) != SL_OK);
    CHECK_MSG(!check_needle_missing(sl_pipeline_errmsg(p), "'f' is a function"), "%s",
              sl_pipeline_errmsg(p));
    sl_pipeline_free(p);
    return check_done();
}
