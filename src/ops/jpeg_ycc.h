/* SPDX-License-Identifier: Apache-2.0 */
/* libjpeg-turbo's chroma upsampling and YCbCr -> RGB conversion, bit for bit, for a decoder that
 * hands back a JPEG's planes as stored (nvJPEG's NVJPEG_OUTPUT_YUV). nvJPEG's own RGB output
 * upsamples chroma by replication, which puts it up to ~50 levels away from libjpeg-turbo (and so
 * from the CPU decoder, PIL and DALI's CPU path) at colour edges; decoding the planes and finishing
 * them with these functions makes the GPU path equal to the CPU one.
 *
 * What libjpeg-turbo 2.x does with its defaults (do_fancy_upsampling on, jdsample.c and
 * jdcolor.c), per chroma layout relative to luma:
 *   h2v1 (4:2:2), chroma width > 2: a triangle filter across, out = (3 * near + far + 1 or 2) >> 2
 *   h1v2 (4:4:0): the same down the rows
 *   h2v2 (4:2:0), chroma width > 2: both, on column sums 3 * near row + far row, then
 *        (3 * near + far + 8 or 7) >> 4
 *   anything else with whole ratios (4:4:4, 4:1:1, narrow images): replication
 * Edges replicate the first / last real row and column. Colour: libjpeg's fixed-point tables
 * (16 fraction bits, rounding constants folded in), clamped to 0..255.
 * Header-only so that the C tests and the CUDA kernel (src/ops/jpeg_ycc.cu) run the same code. */
#ifndef SLUICE_OPS_JPEG_YCC_H
#define SLUICE_OPS_JPEG_YCC_H

#include "sluice/status.h"

#include <stdint.h>

#ifdef __CUDACC__
#define SL__YCC_FN __host__ __device__ static inline
#else
#define SL__YCC_FN static inline
#endif

enum { SL__YCC_REPLICATE = 0, SL__YCC_H2V1 = 1, SL__YCC_H1V2 = 2, SL__YCC_H2V2 = 3 };

typedef struct sl__ycc_layout {
    int32_t h, w;   /* the image */
    int32_t ch, cw; /* the chroma planes: libjpeg's downsampled_height / downsampled_width */
    int32_t hs, vs; /* luma samples per chroma sample, across and down */
    int32_t mode;   /* SL__YCC_*: how libjpeg upsamples this layout */
} sl__ycc_layout;

/* The layout of a 3-component JPEG of h x w with sampling factors samp[k] = {h, v} (Y, Cb, Cr);
 * 0 when libjpeg's upsampling of it is not one of the above (luma not the largest, Cb and Cr
 * different, ratios not whole), in which case the caller decodes another way. */
static inline int sl__ycc_layout_of(int64_t h, int64_t w, const uint8_t samp[3][2],
                                    sl__ycc_layout *l) {
    int hy = samp[0][0], vy = samp[0][1], hc = samp[1][0], vc = samp[1][1];
    if (hc < 1 || vc < 1 || hy < hc || vy < vc || hy % hc || vy % vc) return 0;
    if (samp[2][0] != hc || samp[2][1] != vc || h < 1 || w < 1 || h > 65535 || w > 65535) return 0;
    l->h = (int32_t)h, l->w = (int32_t)w;
    l->hs = hy / hc, l->vs = vy / vc;
    l->cw = (int32_t)((w * hc + hy - 1) / hy);
    l->ch = (int32_t)((h * vc + vy - 1) / vy);
    l->mode = SL__YCC_REPLICATE;
    if (l->hs == 2 && l->vs == 1 && l->cw > 2) l->mode = SL__YCC_H2V1;
    if (l->hs == 1 && l->vs == 2) l->mode = SL__YCC_H1V2;
    if (l->hs == 2 && l->vs == 2 && l->cw > 2) l->mode = SL__YCC_H2V2;
    return 1;
}

/* The upsampled chroma sample at image pixel (y, x) of the plane p (rows of pitch bytes). */
SL__YCC_FN int sl__ycc_chroma(const uint8_t *p, int64_t pitch, const sl__ycc_layout *l, int y,
                              int x) {
    if (l->mode == SL__YCC_REPLICATE) return p[(int64_t)(y / l->vs) * pitch + x / l->hs];
    if (l->mode == SL__YCC_H2V1) {
        const uint8_t *r = p + (int64_t)y * pitch;
        int j = x >> 1, v = 3 * r[j];
        if (x & 1) return j == l->cw - 1 ? r[j] : (v + r[j + 1] + 2) >> 2;
        return j == 0 ? r[j] : (v + r[j - 1] + 1) >> 2;
    }
    int r = y >> 1, far = y & 1 ? (r + 1 < l->ch ? r + 1 : r) : (r > 0 ? r - 1 : 0);
    const uint8_t *a = p + (int64_t)r * pitch, *b = p + (int64_t)far * pitch;
    if (l->mode == SL__YCC_H1V2) return (3 * a[x] + b[x] + 1 + (y & 1)) >> 2;
    int j = x >> 1, t = 3 * a[j] + b[j]; /* h2v2: column sums of the two rows */
    if (x & 1)
        return j == l->cw - 1 ? (4 * t + 7) >> 4 : (3 * t + 3 * a[j + 1] + b[j + 1] + 7) >> 4;
    return j == 0 ? (4 * t + 8) >> 4 : (3 * t + 3 * a[j - 1] + b[j - 1] + 8) >> 4;
}

SL__YCC_FN uint8_t sl__ycc_clamp(int v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* libjpeg's ycc_rgb_convert: FIX(1.40200) = 91881, FIX(1.77200) = 116130, FIX(0.71414) = 46802,
 * FIX(0.34414) = 22554, ONE_HALF = 32768; the shifts are arithmetic (floor). Writes R, G, B to
 * out[0..2], or B, G, R when bgr. */
SL__YCC_FN void sl__ycc_to_rgb(int y, int cb, int cr, int bgr, uint8_t *out) {
    int x = cr - 128, z = cb - 128;
    uint8_t r = sl__ycc_clamp(y + ((91881 * x + 32768) >> 16));
    uint8_t g = sl__ycc_clamp(y + ((-22554 * z - 46802 * x + 32768) >> 16));
    uint8_t b = sl__ycc_clamp(y + ((116130 * z + 32768) >> 16));
    out[0] = bgr ? b : r;
    out[1] = g;
    out[2] = bgr ? r : b;
}

/* One output pixel (HWC, 3 bytes) from the planes. */
SL__YCC_FN void sl__ycc_pixel(const uint8_t *yp, int64_t ypitch, const uint8_t *cb,
                              const uint8_t *cr, int64_t cpitch, const sl__ycc_layout *l, int y,
                              int x, int bgr, uint8_t *out) {
    sl__ycc_to_rgb(yp[(int64_t)y * ypitch + x], sl__ycc_chroma(cb, cpitch, l, y, x),
                   sl__ycc_chroma(cr, cpitch, l, y, x), bgr, out);
}

/* ---- the CUDA run (jpeg_ycc.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* nvJPEG's YUV planes -> HWC RGB (or BGR): the window (y0, x0, out_h, out_w) of the image that
 * layout l describes, exactly as libjpeg-turbo upsamples and converts it (ops/jpeg_ycc.h) */
typedef struct sl__cuda_ycc_desc {
    const uint8_t *y, *cb, *cr;
    int64_t ypitch, cpitch;
    sl__ycc_layout l;
    int32_t y0, x0, out_h, out_w;
    uint8_t *out;
} sl__cuda_ycc_desc;
sl_status sl__cuda_ycc(const sl__cuda_ycc_desc *d, int n, int64_t max_pixels, int bgr, void *stream,
                       sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
