/* SPDX-License-Identifier: Apache-2.0 */
/* clahe (DALI's fn.clahe): contrast limited adaptive histogram equalization of uint8 HW / HWC
 * images (1 or 3 channels), by OpenCV's rule, which DALI's CPU run calls: the image split into
 * tiles_y x tiles_x tiles (when a side does not divide, the image is first extended at its bottom
 * and right by tiles - side % tiles rows and columns, mirrored without repeating the edge, both
 * sides, as OpenCV does); each tile's 256-bin histogram clipped at int(clip_limit * area / 256)
 * (at least 1; none for clip_limit <= 0), the clipped counts spread over every bin and the rest
 * one by one from bin 0 in steps of 256 / rest; the tile's map the running sum times 255 / area,
 * rounded half to even; each pixel the bilinear blend, in float, of the maps of the four tiles
 * whose centres surround it. Three channels: each on its own (luma_only=False) or, by default,
 * the L* of CIE Lab (sRGB, D65, in float, as DALI's GPU run works it out) scaled to 0..255 and
 * rounded is equalized, and the colour rebuilt from the new L* and the pixel's own a*, b*. */
#include "operator/op.h"

#include "core/alloc.h"
#include "core/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const sl__arg_schema clahe_args[] = {
    {"tiles_x", SL_ARG_INT, NULL, "tiles along the width (positive)", SL_ARGF_REQUIRED, NULL},
    {"tiles_y", SL_ARG_INT, NULL, "tiles along the height (positive)", SL_ARGF_REQUIRED, NULL},
    {"clip_limit", SL_ARG_FLOAT, NULL,
     "clip each bin of a tile's histogram at clip_limit * tile area / bins (<= 0: no clipping)",
     SL_ARGF_REQUIRED, NULL},
    {"bins", SL_ARG_INT, "256", "histogram bins: 256 (DALI's CPU and GPU runs both use 256)", 0,
     NULL},
    {"luma_only", SL_ARG_BOOL, "True",
     "three channels: equalize the L* of CIE Lab only (True) or each channel on its own", 0, NULL},
    {NULL, 0, NULL, NULL, 0, NULL},
};

typedef struct clahe_state {
    int tx, ty;
    double clip;
    bool luma;
    sl__worker_scratch scratch;
} clahe_state;

static const char *const NAME = "clahe";

static void clahe_destroy(void *state) {
    clahe_state *s = state;
    if (!s) return;
    sl__worker_scratch_free(&s->scratch);
    free(s);
}

static sl_status clahe_create(const sl__args *a, const sl__op_init *init, void **out, sl_err *err) {
    int64_t tx = sl__args_int(a, "tiles_x"), ty = sl__args_int(a, "tiles_y");
    int64_t bins = sl__args_int(a, "bins");
    double clip = sl__args_float(a, "clip_limit");
    if (tx < 1 || ty < 1 || tx > 1024 || ty > 1024 || tx * ty > 65536)
        return sl_err_set(err, SL_EINVAL,
                          "%s: tiles_x = %lld, tiles_y = %lld: from 1 to 1024 each, at most 65536 "
                          "tiles",
                          NAME, (long long)tx, (long long)ty);
    if (bins != 256)
        return sl_err_set(err, SL_EINVAL,
                          "%s: bins = %lld: 256 only (the bins of uint8 values; DALI's CPU and "
                          "GPU runs both use 256)",
                          NAME, (long long)bins);
    if (!isfinite(clip) || fabs(clip) > 1e9)
        return sl_err_set(err, SL_EINVAL, "%s: clip_limit = %g: a finite number", NAME, clip);
    clahe_state *s = sl__calloc(1, sizeof *s, err);
    if (!s) return SL_ENOMEM;
    s->tx = (int)tx, s->ty = (int)ty, s->clip = (double)(float)clip; /* DALI's float argument */
    s->luma = sl__args_bool(a, "luma_only");
    sl_status st = sl__worker_scratch_init(&s->scratch, init->threads, err);
    if (st != SL_OK) {
        clahe_destroy(s);
        return st;
    }
    *out = s;
    return SL_OK;
}

static sl_status clahe_setup(void *state, sl__op_io *io, sl_err *err) {
    (void)state;
    const sl_tlist *in = io->in[0];
    const char *l = in->layout;
    bool ok =
        in->ndim == 2 ? !l[0] || !strcmp(l, "HW") : in->ndim == 3 && (!l[0] || !strcmp(l, "HWC"));
    if (!ok)
        return sl_err_set(err, SL_EINVAL, "%s: images are HW or HWC (layout \"%s\", %d dims)", NAME,
                          l, in->ndim);
    if (in->dtype != SL_DTYPE_U8)
        return sl_err_set(err, SL_EINVAL, "%s: input of type %s (uint8 only, as DALI's)", NAME,
                          sl_dtype_name(in->dtype));
    for (int i = 0; i < io->batch; i++) {
        const int64_t *sh = sl_tlist_shape(in, i);
        int64_t c = in->ndim == 3 ? sh[2] : 1;
        if (c != 1 && c != 3)
            return sl__op_fail(err, SL_EINVAL, io, i, NAME, "%lld channels (1 or 3)", (long long)c);
        if (sh[0] < 1 || sh[1] < 1 || sh[0] > (1 << 30) / sh[1])
            return sl__op_fail(err, SL_EINVAL, io, i, NAME, "an image of %lld x %lld pixels",
                               (long long)sh[0], (long long)sh[1]);
    }
    sl_tlist *out = io->out[0];
    SL_TRY(sl_tlist_reset(out, io->batch, SL_DTYPE_U8, in->ndim, io->device, err));
    SL_TRY(sl_tlist_alloc(out, in->shapes, err));
    memcpy(out->layout, in->layout, sizeof out->layout);
    return SL_OK;
}

/* OpenCV's BORDER_REFLECT_101 of index p into [0, n) */
static int64_t reflect101(int64_t p, int64_t n) {
    if (n == 1) return 0;
    while (p < 0 || p >= n) p = p < 0 ? -p : 2 * n - p - 2;
    return p;
}

/* The tiles' maps (ty * tx of 256) of a plane (h, w; element k of pixel p at src[p * step]). */
static void tile_maps(const clahe_state *s, const uint8_t *src, int64_t step, int64_t h, int64_t w,
                      int64_t th, int64_t tw, uint8_t *luts) {
    int64_t area = th * tw;
    int64_t limit = 0;
    if (s->clip > 0) {
        double l = s->clip * (double)area / 256;
        limit = l >= (double)area ? area : (int64_t)l; /* (at area no bin is ever clipped) */
        limit = limit < 1 ? 1 : limit;
    }
    float scale = 255.0f / (float)area;
    for (int ty = 0; ty < s->ty; ty++)
        for (int tx = 0; tx < s->tx; tx++) {
            int64_t hist[256] = {0};
            for (int64_t y = ty * th; y < (ty + 1) * th; y++) {
                const uint8_t *row = src + reflect101(y, h) * w * step;
                for (int64_t x = tx * tw; x < (tx + 1) * tw; x++)
                    hist[row[reflect101(x, w) * step]]++;
            }
            if (limit > 0) {
                int64_t clipped = 0;
                for (int k = 0; k < 256; k++)
                    if (hist[k] > limit) clipped += hist[k] - limit, hist[k] = limit;
                int64_t batch = clipped / 256, rest = clipped - batch * 256;
                for (int k = 0; k < 256; k++) hist[k] += batch;
                if (rest) {
                    int64_t stride = 256 / rest > 1 ? 256 / rest : 1;
                    for (int64_t k = 0; k < 256 && rest > 0; k += stride, rest--) hist[k]++;
                }
            }
            uint8_t *lut = luts + (ty * s->tx + tx) * 256;
            int64_t sum = 0;
            for (int k = 0; k < 256; k++) {
                sum += hist[k];
                float v = rintf((float)sum * scale);
                lut[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
}

/* dst[p * step] for every pixel: the blend of the four tiles' maps around it */
static void blend(const clahe_state *s, const uint8_t *src, uint8_t *dst, int64_t step, int64_t h,
                  int64_t w, int64_t th, int64_t tw, const uint8_t *luts) {
    float itw = 1.0f / (float)tw, ith = 1.0f / (float)th;
    for (int64_t y = 0; y < h; y++) {
        float tyf = (float)y * ith - 0.5f;
        int ty1 = (int)floorf(tyf), ty2 = ty1 + 1;
        float ya = tyf - (float)ty1, ya1 = 1.0f - ya;
        ty1 = ty1 < 0 ? 0 : ty1, ty2 = ty2 > s->ty - 1 ? s->ty - 1 : ty2;
        const uint8_t *l1 = luts + (int64_t)ty1 * s->tx * 256,
                      *l2 = luts + (int64_t)ty2 * s->tx * 256;
        for (int64_t x = 0; x < w; x++) {
            float txf = (float)x * itw - 0.5f;
            int tx1 = (int)floorf(txf), tx2 = tx1 + 1;
            float xa = txf - (float)tx1, xa1 = 1.0f - xa;
            tx1 = tx1 < 0 ? 0 : tx1, tx2 = tx2 > s->tx - 1 ? s->tx - 1 : tx2;
            int v = src[(y * w + x) * step];
            float a = (float)l1[tx1 * 256 + v] * xa1, b = (float)l1[tx2 * 256 + v] * xa;
            float c = (float)l2[tx1 * 256 + v] * xa1, d = (float)l2[tx2 * 256 + v] * xa;
            float top = a + b, bottom = c + d;
            float r = rintf(top * ya1 + bottom * ya);
            dst[(y * w + x) * step] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
        }
    }
}

/* ---- CIE Lab (sRGB, D65), float ---------------------------------------------------------- */

/* v rounded half to even and saturated to uint8 (NaN: 0) */
static uint8_t sat8(float v) {
    v = rintf(v);
    return (uint8_t)(v >= 0 ? (v > 255 ? 255 : v) : 0);
}

static const float RGB2XYZ[9] = {0.412453f, 0.357580f, 0.180423f, 0.212671f, 0.715160f,
                                 0.072169f, 0.019334f, 0.119193f, 0.950227f};
static const float XYZ2RGB[9] = {3.240479f, -1.53715f, -0.498535f, -0.969256f, 1.875991f,
                                 0.041556f, 0.055648f, -0.204043f, 1.057311f};
static const float WHITE[3] = {0.950456f, 1.0f, 1.088754f}; /* D65 */

static float to_linear(float c) {
    return c <= 0.04045f ? c / 12.92f : powf((c + 0.055f) / 1.055f, 2.4f);
}

static float from_linear(float c) {
    return c <= 0.0031308f ? 12.92f * c : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
}

static float lab_f(float t) {
    const float e = 216.0f / 24389.0f;
    return t > e ? cbrtf(t) : (841.0f / 108.0f) * t + 16.0f / 116.0f;
}

static float lab_finv(float u) {
    const float d = 6.0f / 29.0f;
    return u > d ? u * u * u : 3 * d * d * (u - 4.0f / 29.0f);
}

/* pixel rgb -> (L* in 0..100, a*, b*) */
static void rgb_lab(const uint8_t *rgb, float *lab) {
    float lin[3], f[3];
    for (int k = 0; k < 3; k++) lin[k] = to_linear((float)rgb[k] / 255.0f);
    for (int r = 0; r < 3; r++) {
        float v =
            RGB2XYZ[3 * r] * lin[0] + RGB2XYZ[3 * r + 1] * lin[1] + RGB2XYZ[3 * r + 2] * lin[2];
        f[r] = lab_f(v / WHITE[r]);
    }
    lab[0] = 116.0f * f[1] - 16.0f, lab[1] = 500.0f * (f[0] - f[1]),
    lab[2] = 200.0f * (f[1] - f[2]);
}

static void lab_rgb(const float *lab, uint8_t *rgb) {
    float fy = (lab[0] + 16.0f) / 116.0f, f[3] = {lab[1] / 500.0f + fy, fy, fy - lab[2] / 200.0f};
    float xyz[3];
    for (int k = 0; k < 3; k++) xyz[k] = lab_finv(f[k]) * WHITE[k];
    for (int r = 0; r < 3; r++) {
        float v =
            XYZ2RGB[3 * r] * xyz[0] + XYZ2RGB[3 * r + 1] * xyz[1] + XYZ2RGB[3 * r + 2] * xyz[2];
        rgb[r] = sat8(from_linear(v) * 255.0f);
    }
}

static sl_status clahe_run_cpu(void *state, sl__op_io *io, int i, int worker, sl_err *err) {
    clahe_state *s = state;
    const sl_tlist *in = io->in[0];
    const int64_t *sh = sl_tlist_shape(in, i);
    int64_t h = sh[0], w = sh[1], c = in->ndim == 3 ? sh[2] : 1;
    int64_t th = h, tw = w;
    if (h % s->ty || w % s->tx) /* as OpenCV: both sides extended when either does not divide */
        th = h + s->ty - h % s->ty, tw = w + s->tx - w % s->tx;
    th /= s->ty, tw /= s->tx;
    bool luma = c == 3 && s->luma;
    size_t need = (size_t)s->tx * (size_t)s->ty * 256 + (luma ? (size_t)(h * w) * 10 + 4 : 0);
    uint8_t *luts = sl__worker_scratch_get(&s->scratch, worker, need);
    if (!luts) return sl__op_fail(err, SL_ENOMEM, io, i, NAME, "out of memory");
    const uint8_t *src = in->data[i];
    uint8_t *dst = io->out[0]->data[i];
    if (!luma) {
        for (int64_t k = 0; k < c; k++) {
            tile_maps(s, src + k, c, h, w, th, tw, luts);
            blend(s, src + k, dst + k, c, h, w, th, tw, luts);
        }
        return SL_OK;
    }
    uint8_t *l8 = luts + (size_t)s->tx * (size_t)s->ty * 256, *l8o = l8 + h * w;
    float *ab = (float *)(void *)(((uintptr_t)(l8o + h * w) + 3) & ~(uintptr_t)3); /* a*, b* */
    for (int64_t p = 0; p < h * w; p++) {
        float lab[3];
        rgb_lab(src + 3 * p, lab);
        l8[p] = sat8(lab[0] * 255.0f / 100.0f);
        ab[2 * p] = lab[1], ab[2 * p + 1] = lab[2];
    }
    tile_maps(s, l8, 1, h, w, th, tw, luts);
    blend(s, l8, l8o, 1, h, w, th, tw, luts);
    for (int64_t p = 0; p < h * w; p++) {
        float lab[3] = {(float)l8o[p] * 100.0f / 255.0f, ab[2 * p], ab[2 * p + 1]};
        lab_rgb(lab, dst + 3 * p);
    }
    return SL_OK;
}

const sl__op_def sl__clahe_op = {
    .name = "clahe",
    .doc = "Contrast limited adaptive histogram equalization of uint8 HW / HWC images (DALI's "
           "fn.clahe, by OpenCV's rule): tile histograms clipped and redistributed, the tiles' "
           "maps blended bilinearly; RGB on the L* of Lab (luma_only) or per channel.",
    .min_inputs = 1,
    .max_inputs = 1,
    .args = clahe_args,
    .devices = SL_OPDEV_CPU,
    .create = clahe_create,
    .setup = clahe_setup,
    .run_cpu = clahe_run_cpu,
    .destroy = clahe_destroy,
};
