/* SPDX-License-Identifier: Apache-2.0 */
/* resize of volumes (DALI's fn.resize of DHWC and CDHW data; FDHWC and FCDHW sequences frame by
 * frame), and the filter taps it shares with the images' resize (resize.c). Sizes as DALI's
 * ResizeAttr works them out, in its float steps: resize_x / resize_y / resize_z (the missing ones
 * from `mode`), `size` (d, h, w), resize_shorter / resize_longer (one length for every extent,
 * not_smaller / not_larger), `max_size`, `roi_start` / `roi_end` [z, y, x], `subpixel_scale`;
 * each extent rounded half away from zero, at least 1. Resampling is separable, as the images':
 * along x into float scratch, then y, then z, every output summing its taps in order (the
 * images' filters, per sample). The CUDA run makes the same three passes with resize.cu's two
 * kernels, so the two runs agree as the images' do. */
#include "ops/resize_int.h"
#include "operator/argin.h"
#include "operator/dtype_conv.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SLUICE_HAVE_CUDA
#include "ops/resize.h"
#endif

/* ---- taps (images and volumes) ----------------------------------------------------------------
 */

static double kernel(int f, double x) {
    x = fabs(x);
    if (f == F_CUBIC) {
        const double a = -0.5;
        if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
        if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
        return 0;
    }
    if (f == F_GAUSS) return x < 1.5 ? exp(-2 * x * x) : 0; /* sigma 0.5, cut at 3 sigma */
    if (f == F_LANCZOS) {                                   /* sinc(x) sinc(x / 3), |x| < 3 */
        if (x < 1e-9) return 1;
        if (x >= 3) return 0;
        double px = M_PI * x;
        return 3 * sin(px) * sin(px / 3) / (px * px);
    }
    return x < 1 ? 1 - x : 0; /* linear / triangular */
}

/* How far the filter reaches, in input pixels at scale 1 (the kernel is 0 beyond). */
static double support_of(int f) {
    return f == F_CUBIC ? 2 : f == F_NN ? 0.5 : f == F_GAUSS ? 1.5 : f == F_LANCZOS ? 3 : 1;
}

int sl__resize_taps(const resize_state *s, int i, int64_t in, double r0, double len, int64_t out,
                    int64_t *first, float *w, int max_taps) {
    return sl__resize_taps_of(s, i, in, r0, len, out, 0, out, false, first, w, max_taps);
}

int sl__resize_taps_of(const resize_state *s, int i, int64_t in, double r0, double len, int64_t n,
                       int64_t at, int64_t out, bool back, int64_t *first, float *w, int max_taps) {
    double scale = len / (double)n, as = fabs(scale); /* len < 0: a reversed (flipped) window */
    /* sample i's filters; antialias: only when shrinking */
    int filter = as > 1 ? s->filters[2 * i] : s->filters[2 * i + 1];
    double support = support_of(filter);
    double fs = s->antialias && as > 1 && filter != F_NN ? as : 1;
    int taps = filter == F_NN ? 1 : (int)ceil(support * fs) * 2 + 1;
    if (taps > max_taps) taps = max_taps;
    for (int64_t o = 0; o < out; o++) {
        int64_t of = back ? at + out - 1 - o : at + o; /* its output of the n */
        double c = r0 + ((double)of + 0.5) * scale - 0.5;
        float *wo = w + o * taps;
        if (filter == F_NN) {
            int64_t k = (int64_t)floor(r0 + ((double)of + 0.5) * scale);
            first[o] = k < 0 ? 0 : k >= in ? in - 1 : k;
            wo[0] = 1;
            continue;
        }
        int64_t lo = (int64_t)floor(c - support * fs) + 1;
        double sum = 0;
        double ws[512];
        for (int k = 0; k < taps; k++) {
            ws[k] = kernel(filter, ((double)(lo + k) - c) / fs);
            sum += ws[k];
        }
        /* taps outside the image are folded onto the edge (clamp) */
        first[o] = lo;
        for (int k = 0; k < taps; k++) wo[k] = (float)(sum != 0 ? ws[k] / sum : 0);
    }
    return taps;
}

int sl__resize_max_taps(double len, int64_t out) {
    double sc = fabs(len) / (double)out;
    int t = (int)ceil(3 * (sc > 1 ? sc : 1)) * 2 + 1; /* Lanczos3's */
    return t > 511 ? 511 : t;
}

int64_t sl__resize_rows_read(const int64_t *first, int taps, int64_t out, int64_t in, int64_t *lo) {
    /* taps move forward with the output (backward through a reversed window) */
    int64_t a = first[0] < first[out - 1] ? first[0] : first[out - 1];
    int64_t b = (first[0] < first[out - 1] ? first[out - 1] : first[0]) + taps - 1;
    a = a < 0 ? 0 : a >= in ? in - 1 : a;
    b = b < 0 ? 0 : b >= in ? in - 1 : b;
    *lo = a;
    return b - a + 1;
}

static int64_t clampi(int64_t v, int64_t n) {
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

/* ---- volumes: geometry and sizes ------------------------------------------------------------ */

bool sl__resize_is_volume(const sl_tlist *in) {
    return in->ndim == 4 &&
           (!in->layout[0] || !strcmp(in->layout, "DHWC") || !strcmp(in->layout, "CDHW"));
}

/* sample i's planes (channels of CDHW, else 1), (D, H, W) and the channels of a voxel */
static void vol_dims(const resize_state *s, const sl_tlist *in, int i, int64_t *P, int64_t *dhw,
                     int64_t *C) {
    const int64_t *sh = sl_tlist_shape(in, i);
    const int64_t *d = s->cfirst ? sh + 1 : sh;
    dhw[0] = d[0], dhw[1] = d[1], dhw[2] = d[2];
    *P = s->cfirst ? sh[0] : 1;
    *C = s->cfirst ? 1 : sh[3];
}

/* sample i's window (z0, y0, x0, d, h, w) of a (D, H, W) volume */
static sl_status vol_window(const resize_state *s, const sl__op_io *io, int i, const int64_t *dhw,
                            double *r, sl_err *err) {
    static const char *const axis[3] = {"depth", "height", "width"};
    for (int d = 0; d < 3; d++) {
        double ext = (double)dhw[d];
        double a = s->nroi ? s->roi_start[d] : 0, b = s->nroi ? s->roi_end[d] : ext;
        if (s->has_roi && s->roi_rel) a *= ext, b *= ext;
        if (!(fabs(a) <= 1e7 && fabs(b) <= 1e7)) /* (also NaN) */
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "the window's %s runs from %g to %g: keep it within 1e7 pixels",
                               axis[d], a, b);
        if (b == a)
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "the window's %s runs from %g to %g: an empty window (roi_end "
                               "below roi_start flips the axis)",
                               axis[d], a, b);
        r[d] = a, r[3 + d] = b - a;
    }
    return SL_OK;
}

/* one number of per-sample argument node for sample i into *v */
static sl_status one_value(const resize_state *s, const sl__op_io *io, int i, int node,
                           const char *name, double *v, sl_err *err) {
    double x[2];
    if (node < 0) return SL_OK;
    if (sl__argin_values(io, node, i, x, 2) != 1)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "%s: the per-sample value must be one number on the CPU", name);
    *v = x[0];
    return SL_OK;
}

/* sample i's requested (d, h, w), 0 = not given, and the mode they are met by */
static sl_status vol_requested(const resize_state *s, const sl__op_io *io, int i, double *req,
                               int *mode, sl_err *err) {
    double rx = s->rx, ry = s->ry, rz = s->rz, shorter = s->shorter, longer = s->longer;
    double size[3] = {s->size[0], s->size[1], s->size[2]};
    int nsize = s->nsize;
    SL_TRY(one_value(s, io, i, s->node_rx, "resize_x", &rx, err));
    SL_TRY(one_value(s, io, i, s->node_ry, "resize_y", &ry, err));
    SL_TRY(one_value(s, io, i, s->node_rz, "resize_z", &rz, err));
    SL_TRY(one_value(s, io, i, s->node_shorter, "resize_shorter", &shorter, err));
    SL_TRY(one_value(s, io, i, s->node_longer, "resize_longer", &longer, err));
    if (s->node_size >= 0) {
        double v[4];
        nsize = sl__argin_values(io, s->node_size, i, v, 4);
        if (nsize == 1 || nsize == 3)
            for (int d = 0; d < 3; d++) size[d] = v[nsize == 1 ? 0 : d];
    }
    if (s->has_size && nsize != 1 && nsize != 3)
        return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                           "size: a volume wants (depth, height, width) or one length, not %d "
                           "values",
                           nsize);
    *mode = s->mode;
    if (s->has_size) {
        memcpy(req, size, sizeof size);
    } else if (shorter > 0 || s->node_shorter >= 0) {
        req[0] = req[1] = req[2] = shorter, *mode = MODE_NOT_SMALLER;
    } else if (longer > 0 || s->node_longer >= 0) {
        req[0] = req[1] = req[2] = longer, *mode = MODE_NOT_LARGER;
    } else {
        req[0] = rz, req[1] = ry, req[2] = rx;
    }
    for (int d = 0; d < 3; d++)
        if (!(req[d] >= 0 && req[d] <= 1e7)) /* (also NaN) */
            return sl__op_fail(err, SL_EINVAL, io, i, s->name,
                               "an output size of %g: sizes are from 0 to 1e7", req[d]);
    if (!(req[0] > 0 || req[1] > 0 || req[2] > 0))
        return sl__op_fail(err, SL_EINVAL, io, i, s->name, "every output size asked is 0");
    return SL_OK;
}

/* The output extents of a window of extents in[n] for out[n] (0: not given) under mode and the
 * limits mx[n] (0: none), in DALI's float steps (ResizeAttr's AdjustOutputSize). */
void sl__resize_adjust(int mode, const float *in, float *out, const float *mx, int n) {
    double scale[SL_MAX_DIMS];
    bool mask[SL_MAX_DIMS];
    int given = 0;
    for (int d = 0; d < n; d++) {
        mask[d] = out[d] != 0 && in[d] != 0;
        scale[d] = in[d] != 0 ? (double)(out[d] / in[d]) : 1;
        given += mask[d];
    }
    if (mode == MODE_DEFAULT || mode == MODE_STRETCH) {
        double avg = 1;
        for (int d = 0; d < n; d++)
            if (mask[d]) avg *= fabs(scale[d]);
        if (given > 1) avg = pow(avg, 1.0 / given);
        for (int d = 0; d < n; d++)
            if (!mask[d]) out[d] = mode == MODE_STRETCH ? in[d] : (float)(in[d] * avg);
        for (int d = 0; d < n; d++)
            if (mx[d] > 0 && fabsf(out[d]) > mx[d]) out[d] = mx[d];
        return;
    }
    double final = 0;
    bool first = true;
    for (int d = 0; d < n; d++) {
        if (!mask[d]) continue;
        float sc = (float)fabs(scale[d]);
        if (first || (mode == MODE_NOT_SMALLER && sc > final) ||
            (mode == MODE_NOT_LARGER && sc < final))
            final = sc;
        first = false;
    }
    for (int d = 0; d < n; d++)
        if (mx[d] > 0 && (double)mx[d] / in[d] < final) final = (double)mx[d] / in[d];
    for (int d = 0; d < n; d++)
        if (!mask[d] || fabs(scale[d]) != final) out[d] = (float)(in[d] * final);
}

/* sample i's output extents o[3] and window r (z0, y0, x0, d, h, w; scaled about its centre by
 * the rounding under subpixel_scale, as DALI's) */
static sl_status vol_plan(resize_state *s, const sl__op_io *io, int i, const int64_t *dhw,
                          double *r, int64_t *o, sl_err *err) {
    if (s->has_roi && s->nroi != 3)
        return sl_err_set(err, SL_EINVAL, "%s: roi_start/roi_end of a volume want [z, y, x]",
                          s->name);
    if (s->nmax == 2)
        return sl_err_set(err, SL_EINVAL, "%s: max_size of a volume wants [d, h, w] or one limit",
                          s->name);
    SL_TRY(vol_window(s, io, i, dhw, r, err));
    double req[3] = {0, 0, 0};
    int mode = MODE_DEFAULT;
    SL_TRY(vol_requested(s, io, i, req, &mode, err));
    float in[3], out[3];
    float mx[3];
    for (int d = 0; d < 3; d++) {
        in[d] = (float)fabs(r[3 + d]), out[d] = (float)req[d];
        mx[d] = s->nmax ? (float)s->max_size[s->nmax == 3 ? d : 0] : 0;
    }
    sl__resize_adjust(mode, in, out, mx, 3);
    for (int d = 0; d < 3; d++) {
        float want = fabsf(out[d]);
        long v = lroundf(want);
        o[d] = v < 1 ? 1 : v;
        if (!s->subpixel || (double)o[d] == (double)want) continue;
        double adj = (double)o[d] / (double)want;
        adj = adj > 10 ? 10 : adj;
        double centre = r[d] + r[3 + d] * 0.5;
        r[3 + d] *= adj;
        r[d] = centre - r[3 + d] * 0.5;
    }
    return SL_OK;
}

sl_status sl__resize_volume_setup(resize_state *s, sl__op_io *io, sl_err *err) {
    const sl_tlist *in = io->in[0];
    s->cfirst = !strcmp(in->layout, "CDHW");
    SL_TRY(sl__resize_grow(s, io->batch, err));
    int64_t *shapes = sl__malloc((size_t)io->batch * 4 * sizeof *shapes, err);
    if (!shapes) return SL_ENOMEM;
    sl_status st = SL_OK;
    for (int i = 0; i < io->batch && st == SL_OK; i++) {
        int64_t P, dhw[3], C, *o = s->vol_out + 3 * i;
        vol_dims(s, in, i, &P, dhw, &C);
        if (dhw[0] < 1 || dhw[1] < 1 || dhw[2] < 1)
            st = sl__op_fail(err, SL_EINVAL, io, i, s->name, "empty volume");
        if (st == SL_OK) st = sl__resize_sample_filters(s, io, i, err);
        if (st == SL_OK) st = vol_plan(s, io, i, dhw, s->vol_roi + 6 * i, o, err);
        int64_t *sh = shapes + 4 * i;
        if (s->cfirst)
            sh[0] = P, sh[1] = o[0], sh[2] = o[1], sh[3] = o[2];
        else
            sh[0] = o[0], sh[1] = o[1], sh[2] = o[2], sh[3] = C;
    }
    sl_tlist *out = io->out[0];
    if (st == SL_OK)
        st =
            sl_tlist_reset(out, io->batch, s->has_dtype ? s->dtype : in->dtype, 4, io->device, err);
    if (st == SL_OK) st = sl_tlist_alloc(out, shapes, err);
    if (st == SL_OK) snprintf(out->layout, sizeof out->layout, "%s", s->cfirst ? "CDHW" : "DHWC");
    free(shapes);
    return st;
}

/* ---- volumes: the CPU run ------------------------------------------------------------------- */

/* One plane (D, H, W, C) of sample i -> (OD, OH, OW, C): x into t1 (the slices and rows the
 * later passes read), y into t2, z into dst. */
static sl_status vol_plane(resize_state *s, sl__op_io *io, int i, int worker, const void *src,
                           void *dst, const int64_t *dhw, int64_t C, sl_err *err) {
    const int64_t *o = s->vol_out + 3 * i;
    const double *r = s->vol_roi + 6 * i;
    int64_t D = dhw[0], H = dhw[1], W = dhw[2], OD = o[0], OH = o[1], OW = o[2];
    int tm[3];
    for (int d = 0; d < 3; d++) tm[d] = sl__resize_max_taps(r[3 + d], o[d]);
    size_t need = sizeof(int64_t) * (size_t)(OD + OH + OW) +
                  sizeof(float) * (size_t)(OD * tm[0] + OH * tm[1] + OW * tm[2] + D * H * OW * C +
                                           D * OH * OW * C + OH * OW * C);
    int64_t *fz = sl__worker_scratch_get(&s->scratch, worker, need);
    if (!fz) return sl__op_fail(err, SL_ENOMEM, io, i, s->name, "out of memory");
    int64_t *fy = fz + OD, *fx = fy + OH;
    float *wz = (float *)(fx + OW), *wy = wz + OD * tm[0], *wx = wy + OH * tm[1];
    float *t1 = wx + OW * tm[2], *t2 = t1 + D * H * OW * C, *acc = t2 + D * OH * OW * C;
    int tz = sl__resize_taps(s, i, D, r[0], r[3], OD, fz, wz, tm[0]);
    int ty = sl__resize_taps(s, i, H, r[1], r[4], OH, fy, wy, tm[1]);
    int tx = sl__resize_taps(s, i, W, r[2], r[5], OW, fx, wx, tm[2]);
    int64_t z0, zn = sl__resize_rows_read(fz, tz, OD, D, &z0);
    int64_t y0, yn = sl__resize_rows_read(fy, ty, OH, H, &y0);
    sl_dtype it = io->in[0]->dtype, ot = io->out[0]->dtype;
    for (int64_t z = z0; z < z0 + zn; z++) /* x: (z, y, W, C) -> t1 (z, y, OW, C) */
        for (int64_t y = y0; y < y0 + yn; y++) {
            int64_t row = (z * H + y) * W;
            float *t = t1 + (z * H + y) * OW * C;
            for (int64_t x = 0; x < OW; x++)
                for (int64_t c = 0; c < C; c++) {
                    float a = 0;
                    for (int k = 0; k < tx; k++)
                        a += wx[x * tx + k] * (float)sl__dtype_conv_load(
                                                  src, it, (row + clampi(fx[x] + k, W)) * C + c);
                    t[x * C + c] = a;
                }
        }
    int64_t n = OW * C;
    for (int64_t z = z0; z < z0 + zn; z++) /* y: t1 (z, H, OW, C) -> t2 (z, OH, OW, C) */
        for (int64_t y = 0; y < OH; y++) {
            float *t = t2 + (z * OH + y) * n;
            for (int64_t j = 0; j < n; j++) t[j] = 0;
            for (int k = 0; k < ty; k++) {
                const float *src_row = t1 + (z * H + clampi(fy[y] + k, H)) * n;
                float w = wy[y * ty + k];
                for (int64_t j = 0; j < n; j++) t[j] += w * src_row[j];
            }
        }
    int64_t m = OH * n;
    for (int64_t z = 0; z < OD; z++) { /* z: t2 (D, OH, OW, C) -> dst (OD, OH, OW, C) */
        for (int64_t j = 0; j < m; j++) acc[j] = 0;
        for (int k = 0; k < tz; k++) {
            const float *slice = t2 + clampi(fz[z] + k, D) * m;
            float w = wz[z * tz + k];
            for (int64_t j = 0; j < m; j++) acc[j] += w * slice[j];
        }
        for (int64_t j = 0; j < m; j++) sl__dtype_conv_store(dst, ot, z * m + j, acc[j]);
    }
    return SL_OK;
}

sl_status sl__resize_volume_run(resize_state *s, sl__op_io *io, int i, int worker, sl_err *err) {
    const sl_tlist *in = io->in[0];
    int64_t P, dhw[3], C;
    vol_dims(s, in, i, &P, dhw, &C);
    const int64_t *o = s->vol_out + 3 * i;
    size_t ib = (size_t)(dhw[0] * dhw[1] * dhw[2] * C) * sl_dtype_size(in->dtype);
    size_t ob = (size_t)(o[0] * o[1] * o[2] * C) * sl_dtype_size(io->out[0]->dtype);
    /* no channels: no bytes, and maybe no memory (NULL + 0 is undefined) */
    if (ib == 0 || ob == 0) return SL_OK;
    for (int64_t p = 0; p < P; p++) /* CDHW: each channel a plane */
        SL_TRY(vol_plane(s, io, i, worker, (const char *)in->data[i] + (size_t)p * ib,
                         (char *)io->out[0]->data[i] + (size_t)p * ob, dhw, C, err));
    return SL_OK;
}

/* ---- volumes: the CUDA run ------------------------------------------------------------------ */

#ifdef SLUICE_HAVE_CUDA
/* Per plane: one x-pass descriptor (its D * H rows), one y-pass descriptor per slice (into t2,
 * float) and one z-pass descriptor (t2 as OD rows of OH * OW * C); taps as the CPU's. */
sl_status sl__resize_volume_run_gpu(resize_state *s, sl__op_io *io, sl_err *err) {
    const sl_tlist *in = io->in[0];
    int n = io->batch, na = 0, nb = 0;
    size_t taps = 0;
    int64_t t1_total = 0, t2_total = 0, max_a = 0, max_b = 0, max_c = 0;
    for (int i = 0; i < n; i++) {
        int64_t P, dhw[3], C;
        vol_dims(s, in, i, &P, dhw, &C);
        const int64_t *o = s->vol_out + 3 * i;
        const double *r = s->vol_roi + 6 * i;
        for (int d = 0; d < 3; d++)
            taps += sl__gpu_args_align((size_t)o[d] * sizeof(int64_t)) +
                    sl__gpu_args_align((size_t)o[d] * (size_t)sl__resize_max_taps(r[3 + d], o[d]) *
                                       sizeof(float));
        na += (int)P, nb += (int)(P * dhw[0]);
        t1_total += P * dhw[0] * dhw[1] * o[2] * C;
        t2_total += P * dhw[0] * o[1] * o[2] * C;
        if (dhw[0] * dhw[1] * o[2] * C > max_a) max_a = dhw[0] * dhw[1] * o[2] * C;
        if (o[1] * o[2] * C > max_b) max_b = o[1] * o[2] * C;
        if (o[0] * o[1] * o[2] * C > max_c) max_c = o[0] * o[1] * o[2] * C;
    }
    float *scratch = sl__gpu_scratch_get(
        &s->gpu_tmp, io->device.id, (size_t)(t1_total + t2_total) * sizeof(float), io->stream, err);
    if (!scratch) return err->status;
    size_t da = sl__gpu_args_align((size_t)na * sizeof(sl__cuda_resize_desc)),
           db = sl__gpu_args_align((size_t)nb * sizeof(sl__cuda_resize_desc));
    char *h = sl__gpu_args_host(&s->gpu, io->device.id, 2 * da + db + taps, err);
    if (!h) return err->status;
    sl__cuda_resize_desc *A = (sl__cuda_resize_desc *)h, *B = (sl__cuda_resize_desc *)(h + da),
                         *Cd = (sl__cuda_resize_desc *)(h + da + db);
    memset(h, 0, 2 * da + db);
    size_t off = 2 * da + db;
    int a = 0, b = 0;
    int64_t t1 = 0, t2 = t1_total;
    for (int i = 0; i < n; i++) {
        int64_t P, dhw[3], C;
        vol_dims(s, in, i, &P, dhw, &C);
        const int64_t *o = s->vol_out + 3 * i;
        const double *r = s->vol_roi + 6 * i;
        int64_t first[3], weights[3];
        int nt[3];
        for (int d = 0; d < 3; d++) {
            int m = sl__resize_max_taps(r[3 + d], o[d]);
            first[d] = (int64_t)off, off += sl__gpu_args_align((size_t)o[d] * sizeof(int64_t));
            weights[d] = (int64_t)off;
            off += sl__gpu_args_align((size_t)o[d] * (size_t)m * sizeof(float));
            nt[d] = sl__resize_taps(s, i, dhw[d], r[d], r[3 + d], o[d], (int64_t *)(h + first[d]),
                                    (float *)(h + weights[d]), m);
        }
        int64_t D = dhw[0], H = dhw[1], W = dhw[2], OD = o[0], OH = o[1], OW = o[2];
        size_t ib = (size_t)(D * H * W * C) * sl_dtype_size(in->dtype),
               ob = (size_t)(OD * OH * OW * C) * sl_dtype_size(io->out[0]->dtype);
        for (int64_t p = 0; p < P; p++, a++) {
            sl__cuda_resize_desc *x = &A[a], *zd = &Cd[a];
            x->in = (const char *)in->data[i] + (size_t)p * ib;
            x->h = D * H, x->w = W, x->c = C, x->ow = OW, x->tx = nt[2];
            x->fx = first[2], x->wx = weights[2], x->tmp = t1, x->y0 = 0, x->rows = D * H;
            for (int64_t z = 0; z < D; z++, b++) {
                sl__cuda_resize_desc *y = &B[b];
                y->out = scratch + t2 + z * OH * OW * C;
                y->h = H, y->w = W, y->c = C, y->ow = OW, y->oh = OH, y->ty = nt[1];
                y->fy = first[1], y->wy = weights[1], y->tmp = t1 + z * H * OW * C;
            }
            zd->out = (char *)io->out[0]->data[i] + (size_t)p * ob;
            zd->h = D, zd->w = OW, zd->c = C, zd->ow = OH * OW, zd->oh = OD, zd->ty = nt[0];
            zd->fy = first[0], zd->wy = weights[0], zd->tmp = t2;
            t1 += D * H * OW * C, t2 += D * OH * OW * C;
        }
    }
    void *dd;
    SL_TRY(sl__gpu_args_send(&s->gpu, off, io->stream, &dd, err));
    char *dc = dd;
    SL_TRY(sl__cuda_resize_pass((const sl__cuda_resize_desc *)dc, dd, na, max_a, scratch, in->dtype,
                                false, io->stream, err));
    SL_TRY(sl__cuda_resize_pass((const sl__cuda_resize_desc *)(dc + da), dd, nb, max_b, scratch,
                                SL_DTYPE_F32, true, io->stream, err));
    return sl__cuda_resize_pass((const sl__cuda_resize_desc *)(dc + da + db), dd, na, max_c,
                                scratch, io->out[0]->dtype, true, io->stream, err);
}
#else
sl_status sl__resize_volume_run_gpu(resize_state *s, sl__op_io *io, sl_err *err) {
    (void)s, (void)io;
    return sl_err_set(err, SL_ENOTSUP, "resize: this build has no CUDA");
}
#endif
