/* SPDX-License-Identifier: Apache-2.0 */
/* The detection ops' CUDA runs against their CPU runs: bb_flip ([x, y, w, h] and [l, t, r, b],
 * (N, 4) and (4N,), per-sample flip flags, empty samples) and box_encoder (boxes and SSD's
 * offsets, with scale, means and stds; anchors with exact duplicates so that ties are broken the
 * same way; samples without boxes, boxes on the border, degenerate boxes): the same inputs and
 * arguments, setup then run_cpu on the host, setup then run_gpu (GPU 0, a stream) on device
 * copies. Every output equal bit for bit, but the offsets' logarithms, within 1e-5 (glibc's and
 * CUDA's logf may part by an ulp). */
#include "check.h"
#include "gpu.h"
#include "opharness.h"

#include "core/cuda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 32);
}
static float unit(void) {
    return (float)(rnd() % 10001) / 10000.0f;
}

static void *stream;

/* boxes: count samples of n_i (4,) rows ([l, t, r, b] in [0, 1], some degenerate or on the
 * border; n_i in [0, nmax], sample 1 empty), as (n, 4) or, flat, (4n,) */
static void make_boxes(sl_tlist *l, int count, int nmax, bool flat) {
    sl_err e;
    int64_t *sh = calloc((size_t)count * 2, sizeof *sh);
    for (int i = 0; i < count; i++) {
        int64_t n = i == 1 ? 0 : rnd() % (uint32_t)(nmax + 1);
        if (flat)
            sh[i] = 4 * n;
        else
            sh[2 * i] = n, sh[2 * i + 1] = 4;
    }
    memset(l, 0, sizeof *l);
    CHECK_OK(sl_tlist_reset(l, count, SL_DTYPE_F32, flat ? 1 : 2, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(l, sh, &e), &e);
    for (int i = 0; i < count; i++) {
        float *b = l->data[i];
        size_t n = sl_tlist_sample_nbytes(l, i) / 16;
        for (size_t k = 0; k < n; k++) {
            float x0 = unit(), y0 = unit(), x1 = unit(), y1 = unit();
            b[4 * k] = fminf(x0, x1), b[4 * k + 1] = fminf(y0, y1);
            b[4 * k + 2] = fmaxf(x0, x1), b[4 * k + 3] = fmaxf(y0, y1);
            if (k % 7 == 3) b[4 * k] = 0.0f, b[4 * k + 2] = 1.0f; /* across the image */
            if (k % 11 == 5) b[4 * k + 3] = b[4 * k + 1];         /* degenerate */
        }
    }
    free(sh);
}

static void to_device(sl_tlist *d, const sl_tlist *h) {
    sl_err e;
    memset(d, 0, sizeof *d);
    CHECK_OK(sl_tlist_reset(d, h->count, h->dtype, h->ndim, sl_cuda(0), &e), &e);
    CHECK_OK(sl_tlist_alloc(d, h->shapes, &e), &e);
    for (int i = 0; i < h->count; i++)
        CHECK_OK(sl__cuda_memcpy(d->data[i], true, h->data[i], false, sl_tlist_sample_nbytes(h, i),
                                 NULL, &e),
                 &e);
}

static void to_host(sl_tlist *h, const sl_tlist *d) {
    sl_err e;
    memset(h, 0, sizeof *h);
    CHECK_OK(sl_tlist_reset(h, d->count, d->dtype, d->ndim, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(h, d->shapes, &e), &e);
    for (int i = 0; i < d->count; i++)
        CHECK_OK(sl__cuda_memcpy(h->data[i], false, d->data[i], true, sl_tlist_sample_nbytes(d, i),
                                 NULL, &e),
                 &e);
}

/* op on the CPU and on GPU 0 over ins (args: per-sample argument inputs, host); nout outputs
 * compared, output k within tol[k] */
static void both(const char *what, const char *op, const char *const *argv, sl_tlist *const *ins,
                 int nin, sl_tlist *const *args, int narg, int nout, const double *tol) {
    sl_err e;
    oph h, g;
    int n = ins[0]->count;
    CHECK_OK(oph_create(&h, op, argv, 1, n, 7, &e), &e);
    CHECK_OK(oph_run(&h, n, ins, nin, args, narg, NULL, 0, &e), &e);
    CHECK_OK(oph_create(&g, op, argv, 1, n, 7, &e), &e);
    CHECK(g.def->run_gpu != NULL && (g.def->devices & SL_OPDEV_GPU));
    sl_tlist din[4], *dins[4], *outs[OPH_MAX_OUT];
    for (int k = 0; k < nin; k++) to_device(&din[k], ins[k]), dins[k] = &din[k];
    for (int k = 0; k < nout; k++) outs[k] = &g.out[k];
    sl__op_io io;
    memset(&io, 0, sizeof io);
    io.batch = n;
    io.num_inputs = nin;
    io.in = dins;
    io.num_arg_inputs = narg;
    io.arg_in = args;
    io.num_outputs = nout;
    io.out = outs;
    io.seed = 7;
    io.device = sl_cuda(0);
    io.stream = stream;
    CHECK_OK(g.def->setup(g.state, &io, &e), &e);
    CHECK_OK(g.def->run_gpu(g.state, &io, &e), &e);
    CHECK_OK(sl__cuda_stream_sync(stream, &e), &e);
    for (int k = 0; k < nout; k++) {
        sl_tlist got;
        CHECK(g.out[k].device.kind == SL_DEVICE_CUDA);
        to_host(&got, &g.out[k]);
        const sl_tlist *want = &h.out[k];
        CHECK_EQ_INT(got.dtype, want->dtype);
        CHECK_EQ_INT(got.ndim, want->ndim);
        double worst = 0;
        for (int i = 0; i < n; i++) {
            size_t nb = sl_tlist_sample_nbytes(want, i);
            CHECK_MSG(nb == sl_tlist_sample_nbytes(&got, i),
                      "%s output %d sample %d: %zu vs %zu "
                      "bytes",
                      what, k, i, nb, sl_tlist_sample_nbytes(&got, i));
            if (nb != sl_tlist_sample_nbytes(&got, i)) continue;
            for (size_t j = 0; j < nb / 4; j++) {
                double d;
                if (want->dtype == SL_DTYPE_F32) {
                    float x = ((float *)want->data[i])[j], y = ((float *)got.data[i])[j];
                    d = memcmp(&x, &y, 4) ? fabs((double)x - y) + (isnan(x) != isnan(y)) : 0;
                } else {
                    d = ((int32_t *)want->data[i])[j] != ((int32_t *)got.data[i])[j];
                }
                if (d > worst) worst = d;
            }
        }
        CHECK_MSG(worst <= tol[k], "%s output %d: CPU and GPU differ by %g (tolerance %g)", what, k,
                  worst, tol[k]);
        printf("%-52s output %d: max |cpu - gpu| = %g\n", what, k, worst);
        sl_tlist_free(&got);
    }
    for (int k = 0; k < nin; k++) sl_tlist_free(&din[k]);
    oph_destroy(&h);
    oph_destroy(&g);
}

static void test_bb_flip(void) {
    sl_err e;
    sl_tlist boxes, flat, hflag, vflag;
    make_boxes(&boxes, 9, 30, false);
    make_boxes(&flat, 6, 12, true);
    int64_t one[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    memset(&hflag, 0, sizeof hflag);
    memset(&vflag, 0, sizeof vflag);
    CHECK_OK(sl_tlist_reset(&hflag, 9, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&hflag, one, &e), &e);
    CHECK_OK(sl_tlist_reset(&vflag, 9, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&vflag, one, &e), &e);
    for (int i = 0; i < 9; i++) {
        *(int32_t *)hflag.data[i] = i % 2;
        *(int32_t *)vflag.data[i] = (i / 2) % 2;
    }
    sl_tlist *in1[1] = {&boxes}, *in2[1] = {&flat}, *args[2] = {&hflag, &vflag};
    double tol[1] = {0};
    const char *a1[] = {NULL}, *a2[] = {"ltrb=True", "vertical=1", NULL};
    const char *a3[] = {"horizontal=@0", "vertical=@1", NULL};
    const char *a4[] = {"ltrb=True", "horizontal=@0", "vertical=@1", NULL};
    both("bb_flip xywh horizontal", "bb_flip", a1, in1, 1, NULL, 0, 1, tol);
    both("bb_flip ltrb both ways, flat (4N,)", "bb_flip", a2, in2, 1, NULL, 0, 1, tol);
    both("bb_flip xywh per-sample flags", "bb_flip", a3, in1, 1, args, 2, 1, tol);
    both("bb_flip ltrb per-sample flags", "bb_flip", a4, in1, 1, args, 2, 1, tol);
    sl_tlist_free(&boxes);
    sl_tlist_free(&flat);
    sl_tlist_free(&hflag);
    sl_tlist_free(&vflag);
}

static void test_box_encoder(void) {
    sl_err e;
    sl_tlist boxes, labels;
    make_boxes(&boxes, 7, 40, false);
    int64_t *ls = calloc(7, sizeof *ls);
    for (int i = 0; i < 7; i++) ls[i] = sl_tlist_shape(&boxes, i)[0];
    memset(&labels, 0, sizeof labels);
    CHECK_OK(sl_tlist_reset(&labels, 7, SL_DTYPE_I32, 1, sl_cpu(), &e), &e);
    CHECK_OK(sl_tlist_alloc(&labels, ls, &e), &e);
    for (int i = 0; i < 7; i++)
        for (int64_t k = 0; k < ls[i]; k++)
            ((int32_t *)labels.data[i])[k] = 1 + (int32_t)(rnd() % 80);
    free(ls);
    /* 600 anchors on a grid of sizes, each tenth a copy of an earlier one (ties) */
    enum { M = 600 };
    static char text[M * 4 * 16 + 64];
    size_t at = (size_t)snprintf(text, sizeof text, "anchors=[");
    float an[M * 4];
    for (int a = 0; a < M; a++) {
        if (a % 10 == 9) {
            memcpy(an + 4 * a, an + 4 * (a - 5), 4 * sizeof *an);
        } else {
            float cx = unit(), cy = unit(), w = 0.05f + unit() * 0.6f, h = 0.05f + unit() * 0.6f;
            an[4 * a] = fmaxf(cx - w / 2, 0), an[4 * a + 1] = fmaxf(cy - h / 2, 0);
            an[4 * a + 2] = fminf(cx + w / 2, 1), an[4 * a + 3] = fminf(cy + h / 2, 1);
        }
        for (int k = 0; k < 4; k++)
            at += (size_t)snprintf(text + at, sizeof text - at, "%s%.9g", a || k ? ", " : "",
                                   (double)an[4 * a + k]);
    }
    snprintf(text + at, sizeof text - at, "]");
    sl_tlist *ins[2] = {&boxes, &labels};
    const char *b1[] = {text, NULL};
    const char *b2[] = {text, "criteria=0.3", "offset=True", NULL};
    const char *b3[] = {text,
                        "offset=True",
                        "scale=10.0",
                        "means=[0.1, -0.2, 0.0, 0.05]",
                        "stds=[0.1, 0.1, 0.2, 0.2]",
                        NULL};
    double exact[2] = {0, 0}, logs[2] = {1e-5, 0};
    both("box_encoder boxes, criteria 0.5", "box_encoder", b1, ins, 2, NULL, 0, 2, exact);
    both("box_encoder offsets, criteria 0.3", "box_encoder", b2, ins, 2, NULL, 0, 2, logs);
    both("box_encoder offsets, scale, means, stds", "box_encoder", b3, ins, 2, NULL, 0, 2, logs);
    sl_tlist_free(&boxes);
    sl_tlist_free(&labels);
}

int main(void) {
    gpu_require(1);
    sl_err e;
    CHECK_OK(sl__cuda_stream_create(0, 0, &stream, &e), &e);
    test_bb_flip();
    test_box_encoder();
    sl__cuda_stream_destroy(stream);
    return check_done();
}
