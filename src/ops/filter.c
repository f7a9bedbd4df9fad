/* SPDX-License-Identifier: Apache-2.0 */
/* experimental.filter (DALI's fn.experimental.filter, also fn.filter): correlates each image with
 * its own 2D float32 filter (the second input, one per sample), the filter not flipped. Images are
 * HW, HWC, CHW or sequences of them (FHW, FHWC, FCHW; no layout: 2 dims HW, 3 dims HWC), of
 * uint8, int8, uint16, int16, float16 or float32; channels are filtered apart. `anchor` (per
 * sample; -1, the default: the filter's middle, rounded down) places the filter: output (y, x)
 * sums filter[i][j] * in[y - ay + i][x - ax + j]. `border` says what lies outside the image:
 * reflect_101 (default), reflect_1001, wrap, clamp, or constant (the optional third input, a
 * scalar of the input's type per sample; 0 without it). mode "same" keeps the size; "valid"
 * keeps only the positions where the filter lies inside (the output shrinks by the filter's
 * extent less one; anchor and border are then not used). Computed in float (ops/filter.h, shared
 * with the CUDA run, so both give the same bits) and stored as `dtype` (the input's type, the
 * default, or float) with cast's rounding and saturation. */
#include "ops/filter.h"
#include "operator/argin.h"
#include "operator/gpu_args.h"
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema filt_args[] = {
    {"anchor", SL_ARG_INTS, "[-1]",
     "the filter's position over the input: [y, x] or one for both; -1: the filter's middle",
     SL_ARGF_PER_SAMPLE, NULL},
    {"border", SL_ARG_STR, "\"reflect_101\"",
     "outside the image: reflect_101, reflect_1001, wrap, clamp or constant", 0, NULL},
    {"mode", SL_ARG_STR, "\"same\"", "same (the input's size) or valid (only inside positions)", 0,
     NULL},
    {"dtype", SL_ARG_DTYPE, "None", "output type: the input's (default) or FLOAT", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

static const char *const BORDERS[] = {"reflect_101", "reflect_1001", "wrap", "clamp", "constant"};

typedef struct filt_state {
    const char *name;
    int border;
    bool valid;
    int dtype; /* -1: the input's */
    int node;  /* per-sample anchor, or -1 */
    int64_t anchor[2];
    sl__filt *f; /* per sample (setup) */
    int cap;
    sl__gpu_args gpu;
} filt_state;

static void filt_destroy(void *state) {
    filt_state *s = state;
    if (!s) return;
    sl__gpu_args_free(&s->gpu);
    free(s->f);
    free(s);
}

static sl_status filt_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    (void)init;
    const char *name = a->op->name;
    const char *b = sl__args_str(a, "border"), *m = sl__args_str(a, "mode");
    int border = -1;
    for (int k = 0; k < 5; k++)
        if (b && !strcmp(b, BORDERS[k])) border = k;
    if (border < 0)
        return sl_err_set(err, SL_EINVAL,
                          "%s: border \"%s\": reflect_101, reflect_1001, wrap, clamp or constant",
                          name, b ? b : "None");
    if (!m || (strcmp(m, "same") && strcmp(m, "valid")))
        return sl_err_set(err, SL_EINVAL, "%s: mode \"%s\": same or valid", name, m ? m : "None");
    filt_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->name = name;
    s->border = border;
    s->valid = !strcmp(m, "valid");
    s->dtype = sl__args_given(a, "dtype") ? (int)sl__args_dtype(a, "dtype") : -1;
    s->node = sl__args_node(a, "anchor");
    s->anchor[0] = s->anchor[1] = -1;
    if (s->node < 0) {
        const int64_t *v;
        int k = sl__args_ints(a, "anchor", &v);
        if (k < 1 || k > 2) {
            filt_destroy(s);
            return sl_err_set(err, SL_EINVAL, "%s: anchor wants [y, x] or one value for both",
                              name);
        }
        s->anchor[0] = v[0], s->anchor[1] = v[k - 1];
    }
    *out = s;
    return SL_OK;
}

static bool dtype_ok(sl_dtype t) {
    return t == SL_DTYPE_U8 || t == SL_DTYPE_I8 || t == SL_DTYPE_U16 || t == SL_DTYPE_I16 ||
           t == SL_DTYPE_F16 || t == SL_DTYPE_F32;
}

/* the sample's geometry from the input's layout: frames, h, w, c and where the channels are */
static sl_status geometry(const filt_state *s, const sl_tlist *in, sl__filt *f, sl_err *err) {
    const char *l = in->layout;
    if (!l[0]) l = in->ndim == 2 ? "HW" : in->ndim == 3 ? "HWC" : "";
    static const char *const OK[] = {"HW", "HWC", "CHW", "FHW", "FHWC", "FCHW"};
    int which = -1;
    for (int k = 0; k < 6; k++)
        if (!strcmp(l, OK[k]) && (int)strlen(l) == in->ndim) which = k;
    if (which < 0)
        return sl_err_set(err, SL_EINVAL,
                          "%s: images are HW, HWC, CHW, FHW, FHWC or FCHW (layout \"%s\", %d dims)",
                          s->name, in->layout, in->ndim);
    memset(f, 0, sizeof *f);
    f->chan_first = which == 2 || which == 5;
    return SL_OK;
}

static sl_status filt_setup(void *state, sl__op_io *io, sl_err *err) {
    filt_state *s = state;
    const sl_tlist *in = io->in[0], *k = io->in[1];
    const sl_tlist *fill = io->num_inputs > 2 ? io->in[2] : NULL;
    sl__filt g;
    SL_TRY(geometry(s, in, &g, err));
    if (!dtype_ok(in->dtype))
        return sl_err_set(err, SL_EINVAL,
                          "%s: input of type %s (uint8, int8, uint16, int16, float16, float32)",
                          s->name, sl_dtype_name(in->dtype));
    sl_dtype ot = s->dtype >= 0 ? (sl_dtype)s->dtype : in->dtype;
    if (ot != in->dtype && ot != SL_DTYPE_F32)
        return sl_err_set(err, SL_EINVAL, "%s: dtype %s: the input's (%s) or FLOAT", s->name,
                          sl_dtype_name(ot), sl_dtype_name(in->dtype));
    if (k->dtype != SL_DTYPE_F32 || k->ndim != 2)
        return sl_err_set(err, SL_EINVAL,
                          "%s: the filter must be a 2D float32 array (got %s, %d dims)", s->name,
                          sl_dtype_name(k->dtype), k->ndim);
    if (k->count != io->batch || (fill && fill->count != io->batch))
        return sl_err_set(err, SL_EINVAL, "%s: %d images but %d filters%s", s->name, io->batch,
                          k->count, fill ? " or fill values" : "");
    if (fill && fill->dtype != in->dtype)
        return sl_err_set(err, SL_EINVAL, "%s: fill_value of type %s, the input's is %s", s->name,
                          sl_dtype_name(fill->dtype), sl_dtype_name(in->dtype));
    if (io->batch > s->cap) {
        sl__filt *f = realloc(s->f, (size_t)io->batch * sizeof *f);
        if (!f) return sl_err_set(err, SL_ENOMEM, "%s: out of memory", s->name);
        s->f = f;
        s->cap = io->batch;
    }
    int nd = in->ndim;
    int64_t *shapes =
        sl__malloc((size_t)(io->batch ? io->batch : 1) * (size_t)nd * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; st == SL_OK && i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i), *ks = sl_tlist_shape(k, i);
        sl__filt *f = &s->f[i];
        *f = g;
        int o = nd == 4 || (nd == 3 && !strcmp(in->layout, "FHW")) ? 1 : 0;
        f->frames = o ? sh[0] : 1;
        if (f->chan_first) {
            f->c = sh[o], f->h = sh[o + 1], f->w = sh[o + 2];
        } else {
            f->h = sh[o], f->w = sh[o + 1], f->c = nd - o == 3 ? sh[o + 2] : 1;
        }
        f->r = (int)ks[0], f->s = (int)ks[1];
        f->border = s->border;
        if (ks[0] < 1 || ks[1] < 1 || ks[0] > 1024 || ks[1] > 1024) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                             "filter of %lld x %lld (1 to 1024 each way)", (long long)ks[0],
                             (long long)ks[1]);
            break;
        }
        if (fill && sl_tlist_sample_nbytes(fill, i) != sl_dtype_size(in->dtype)) {
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name, "fill_value must be one scalar");
            break;
        }
        int64_t an[2] = {s->anchor[0], s->anchor[1]};
        if (s->node >= 0) {
            double v[2];
            int m = sl__argin_values(io, s->node, i, v, 2);
            if (m < 1 || m > 2) {
                st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                 "anchor wants [y, x] or one value per sample");
                break;
            }
            an[0] = (int64_t)v[0], an[1] = (int64_t)v[m - 1];
        }
        for (int d = 0; d < 2 && st == SL_OK; d++) {
            int64_t ext = ks[d];
            if (an[d] == -1) an[d] = ext / 2;
            if (an[d] < 0 || an[d] >= ext)
                st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                 "anchor %lld outside the filter's extent %lld", (long long)an[d],
                                 (long long)ext);
        }
        f->ay = (int)an[0], f->ax = (int)an[1];
        f->oh = f->h, f->ow = f->w;
        if (s->valid) {
            f->ay = f->ax = 0;
            bool empty = f->h * f->w == 0;
            if (!empty && (f->h < f->r || f->w < f->s))
                st = sl__op_fail(err, SL_EINVAL, io, i, s->name,
                                 "mode \"valid\": image of %lld x %lld smaller than its filter "
                                 "%d x %d",
                                 (long long)f->h, (long long)f->w, f->r, f->s);
            f->oh = empty ? 0 : f->h - f->r + 1;
            f->ow = empty ? 0 : f->w - f->s + 1;
        }
        int64_t *os = shapes + (size_t)i * nd;
        memcpy(os, sh, (size_t)nd * sizeof *os);
        int hy = f->chan_first ? o + 1 : o;
        os[hy] = f->oh, os[hy + 1] = f->ow;
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK) st = sl_tlist_reset(out, io->batch, ot, nd, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    free(shapes);
    SL_TRY(st);
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

static int64_t out_elems(const sl__filt *f) {
    return f->frames * f->oh * f->ow * f->c;
}

/* Input row yy of a plane (rw = w * cc elements at in) as the padded float row the taps read:
 * element (xp, ch) for xp in 0 .. ow + s - 2 is input column xp - ax under the border rule (the
 * fill value outside), converted as sl__filt_elem converts it. src: rw floats of scratch. */
static void padded_row(const sl__filt *f, int64_t cc, const void *in, sl_dtype it, int64_t yy,
                       float fill, float *src, float *row) {
    int64_t px = f->ow + f->s - 1, rw = f->w * cc;
    if (yy < 0) {
        for (int64_t k = 0; k < px * cc; k++) row[k] = fill;
        return;
    }
    sl__dtype_conv_n(src, SL_DTYPE_F32, (const char *)in + (size_t)(yy * rw) * sl_dtype_size(it),
                     it, rw);
    /* columns a .. b - 1 lie inside the image: one copy; the rest under the border rule */
    int64_t a = f->ax < px ? f->ax : px, b = f->ax + f->w < px ? f->ax + f->w : px;
    if (b > a) memcpy(row + a * cc, src + (a - f->ax) * cc, (size_t)((b - a) * cc) * sizeof *row);
    for (int64_t xp = 0; xp < px; xp++) {
        if (xp == a && b > a) xp = b;
        if (xp >= px) break;
        int64_t xx = sl__filt_index(xp - f->ax, f->w, f->border);
        for (int64_t ch = 0; ch < cc; ch++) row[xp * cc + ch] = xx < 0 ? fill : src[xx * cc + ch];
    }
}

/* The CPU run a row at a time: the r input rows an output row reads, padded for the border, then
 * every tap over the whole row. Each element still sums its taps in sl__filt_elem's order with the
 * same float roundings (the same bits: tests/test_filter_rows.c), but the loops run over
 * contiguous floats. The r padded rows are buffers kept by the input row they hold (-1: the fill
 * row), so each input row is converted once per plane, not once per output row that reads it.
 * SL_ENOMEM when the scratch cannot be had. */
static sl_status filt_rows(const sl__filt *f, const void *in, sl_dtype it, const float *k,
                           float fill, void *out, sl_dtype ot) {
    int64_t cc = f->chan_first ? 1 : f->c; /* channels interleaved in a row */
    int64_t planes = f->frames * (f->chan_first ? f->c : 1);
    int64_t pw = (f->ow + f->s - 1) * cc, ow = f->ow * cc, rw = f->w * cc;
    int r = f->r;
    float *rows = malloc(((size_t)r * (size_t)pw + (size_t)ow + (size_t)rw) * sizeof *rows);
    int64_t *held = malloc((size_t)r * 2 * sizeof *held); /* per buffer, then per tap row */
    const float **use = malloc((size_t)r * sizeof *use);
    if (!rows || !held || !use) {
        free(rows), free(held), free(use);
        return SL_ENOMEM;
    }
    int64_t *want = held + r;
    float *acc = rows + (size_t)r * (size_t)pw, *src = acc + ow;
    size_t isz = sl_dtype_size(it), osz = sl_dtype_size(ot);
    for (int64_t p = 0; p < planes; p++) {
        const char *pin = (const char *)in + (size_t)(p * f->h * rw) * isz;
        char *pout = (char *)out + (size_t)(p * f->oh * ow) * osz;
        for (int b = 0; b < r; b++) held[b] = INT64_MIN; /* a new plane: nothing held */
        for (int64_t y = 0; y < f->oh; y++) {
            for (int i = 0; i < r; i++) want[i] = sl__filt_index(y - f->ay + i, f->h, f->border);
            for (int i = 0; i < r; i++) { /* a buffer that holds the row, else one no tap wants */
                int b = 0, spare = -1;
                while (b < r && held[b] != want[i]) {
                    bool wanted = false;
                    for (int j = 0; j < r && !wanted; j++) wanted = held[b] == want[j];
                    if (!wanted && spare < 0) spare = b;
                    b++;
                }
                if (b == r) { /* (r buffers, at most r rows wanted: a spare is there) */
                    b = spare;
                    padded_row(f, cc, pin, it, want[i], fill, src, rows + (size_t)b * (size_t)pw);
                    held[b] = want[i];
                }
                use[i] = rows + (size_t)b * (size_t)pw;
            }
            for (int64_t x = 0; x < ow; x++) acc[x] = 0;
            for (int i = 0; i < r; i++)
                for (int j = 0; j < f->s; j++) {
                    const float kk = k[i * f->s + j], *row = use[i] + j * cc;
                    for (int64_t x = 0; x < ow; x++) acc[x] = acc[x] + kk * row[x];
                }
            sl__dtype_conv_n(pout + (size_t)(y * ow) * osz, ot, acc, SL_DTYPE_F32, ow);
        }
    }
    free(rows), free(held), free(use);
    return SL_OK;
}

static sl_status filt_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    (void)worker;
    filt_state *s = state;
    const sl_tlist *in = io->in[0];
    const sl__filt *f = &s->f[i];
    float fill = 0;
    if (io->num_inputs > 2) fill = (float)sl__dtype_conv_load(io->in[2]->data[i], in->dtype, 0);
    if (out_elems(f) == 0) return SL_OK;
    if (filt_rows(f, in->data[i], in->dtype, io->in[1]->data[i], fill, io->out[0]->data[i],
                  io->out[0]->dtype) != SL_OK)
        return sl__op_fail(err, SL_ENOMEM, io, i, s->name, "out of memory for %d rows of %lld",
                           f->r, (long long)(f->ow + f->s - 1));
    return SL_OK;
}

#ifdef SLUICE_HAVE_CUDA
static sl_status filt_run_gpu(void *state, sl__op_io *io, sl_err *err) {
    filt_state *s = state;
    const sl_tlist *in = io->in[0];
    int n = io->batch;
    for (int k = 1; k < io->num_inputs; k++)
        if (io->in[k]->device.kind != SL_DEVICE_CUDA)
            return sl_err_set(err, SL_EINVAL, "%s: on the GPU its %s must be on the GPU too",
                              s->name, k == 1 ? "filters" : "fill values");
    size_t bytes = sl__gpu_args_align((size_t)(n ? n : 1) * sizeof(sl__cuda_filt_desc));
    sl__cuda_filt_desc *d = sl__gpu_args_host(&s->gpu, io->device.id, bytes, err);
    if (!d) return err->status;
    int64_t most = 0;
    for (int i = 0; i < n; i++) {
        d[i].f = s->f[i];
        d[i].in = in->data[i];
        d[i].k = io->in[1]->data[i];
        d[i].fill = io->num_inputs > 2 ? io->in[2]->data[i] : NULL;
        d[i].out = io->out[0]->data[i];
        d[i].n = out_elems(&s->f[i]);
        if (d[i].n > most) most = d[i].n;
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, bytes, io->stream, &dd, err));
    return sl__cuda_filter(dd, n, most, in->dtype, io->out[0]->dtype, io->stream, err);
}
#define FILT_DEVICES .devices = SL_OPDEV_CPU | SL_OPDEV_GPU, .run_gpu = filt_run_gpu,
#else
#define FILT_DEVICES .devices = SL_OPDEV_CPU,
#endif

const sl__op_def sl__filter_op = {
    .name = "filter",
    .aliases = "experimental.filter",
    .doc = "Correlates each image with its own 2D filter (input 2; input 3: the constant "
           "border's value).",
    .min_inputs = 2,
    .max_inputs = 3,
    .args = filt_args,
    FILT_DEVICES.create = filt_create,
    .setup = filt_setup,
    .run_cpu = filt_run_cpu,
    .destroy = filt_destroy,
};
