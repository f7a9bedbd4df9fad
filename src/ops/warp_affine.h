/* SPDX-License-Identifier: Apache-2.0 */
/* warp_affine and rotate (warp_affine.c): each destination element sampled from the source through
 * an affine map, shared by the CPU run and the CUDA run (ops/warp_affine.cu) so that the two give
 * the same bits: coordinates and bilinear weights in double with explicitly rounded operations.
 * Pixel centres are at +0.5: destination pixel (x, y) looks at source point m x (x + 0.5, y + 0.5,
 * 1); nearest neighbour takes the pixel that point falls in, linear the four around it (centres at
 * +0.5). Outside the source a sample is fill_value, or without one the nearest border pixel.
 * Volumes (DHWC, dims 3) the same in three dims: a 3x4 map, trilinear weights. */
#ifndef SLUICE_OPS_WARP_AFFINE_H
#define SLUICE_OPS_WARP_AFFINE_H

#include "sluice/status.h"

#include "operator/dtype_conv.h"

#include <math.h>
#include <stdint.h>

typedef struct sl__warp {
    /* 2D: source x = m0 x + m1 y + m2, source y = m3 x + m4 y + m5; 3D: source x = m0 x + m1 y +
     * m2 z + m3, y = m4 x + ... + m7, z = m8 x + ... + m11 */
    double m[12];
    int dims;           /* 2 (HWC) or 3 (DHWC) */
    int64_t d, h, w, c; /* the source's extents (d 1 in 2D) */
    int64_t od, oh, ow; /* the destination's */
    int nn;             /* nearest neighbour, else linear */
    int fill;           /* 1: fill_value outside the source; 0: the nearest border pixel */
    double fill_value;
} sl__warp;

/* a coordinate kept finite and within int64 reach (NaN counts as far outside) */
static inline SL__HD double sl__warp_bound(double v) {
    return v != v ? -1e9 : v < -1e9 ? -1e9 : v > 1e9 ? 1e9 : v;
}

/* channel ch of source voxel (z, y, x) (z 0 in 2D), or what stands in for it outside */
static inline SL__HD double sl__warp_px(const sl__warp *t, const void *in, sl_dtype it, int64_t z,
                                        int64_t y, int64_t x, int64_t ch) {
    if (y < 0 || y >= t->h || x < 0 || x >= t->w || z < 0 || z >= t->d) {
        if (t->fill) return t->fill_value;
        y = y < 0 ? 0 : y >= t->h ? t->h - 1 : y;
        x = x < 0 ? 0 : x >= t->w ? t->w - 1 : x;
        z = z < 0 ? 0 : z >= t->d ? t->d - 1 : z;
    }
    return sl__dtype_conv_load(in, it, ((z * t->h + y) * t->w + x) * t->c + ch);
}

/* element e (row-major (z, y, x, channel)) of a 3D destination */
static inline SL__HD double sl__warp_elem3(const sl__warp *t, const void *in, sl_dtype it,
                                           int64_t e) {
    int64_t ch = e % t->c, p = e / t->c, x = p % t->ow, y = (p / t->ow) % t->oh,
            z = p / t->ow / t->oh;
    double dx = (double)x + 0.5, dy = (double)y + 0.5, dz = (double)z + 0.5, s[3];
    for (int k = 0; k < 3; k++)
        s[k] = SL__DADD(SL__DADD(SL__DADD(SL__DMUL(t->m[4 * k], dx), SL__DMUL(t->m[4 * k + 1], dy)),
                                 SL__DMUL(t->m[4 * k + 2], dz)),
                        t->m[4 * k + 3]);
    if (t->nn)
        return sl__warp_px(t, in, it, (int64_t)floor(sl__warp_bound(s[2])),
                           (int64_t)floor(sl__warp_bound(s[1])),
                           (int64_t)floor(sl__warp_bound(s[0])), ch);
    double fx = sl__warp_bound(s[0]) - 0.5, fy = sl__warp_bound(s[1]) - 0.5,
           fz = sl__warp_bound(s[2]) - 0.5;
    double x0 = floor(fx), y0 = floor(fy), z0 = floor(fz), ax = fx - x0, ay = fy - y0, az = fz - z0;
    int64_t ix = (int64_t)x0, iy = (int64_t)y0, iz = (int64_t)z0;
    double plane[2];
    for (int k = 0; k < 2; k++) {
        double a = sl__warp_px(t, in, it, iz + k, iy, ix, ch);
        double b = sl__warp_px(t, in, it, iz + k, iy, ix + 1, ch);
        double c = sl__warp_px(t, in, it, iz + k, iy + 1, ix, ch);
        double d = sl__warp_px(t, in, it, iz + k, iy + 1, ix + 1, ch);
        double top = SL__DADD(a, SL__DMUL(ax, SL__DADD(b, -a)));
        double bottom = SL__DADD(c, SL__DMUL(ax, SL__DADD(d, -c)));
        plane[k] = SL__DADD(top, SL__DMUL(ay, SL__DADD(bottom, -top)));
    }
    return SL__DADD(plane[0], SL__DMUL(az, SL__DADD(plane[1], -plane[0])));
}

/* (always inlined on the host: the CPU run calls it with constant types, which then fold) */
#if defined(__GNUC__) && !defined(__CUDACC__)
#define SL__WARP_INLINE __attribute__((always_inline)) inline
#else
#define SL__WARP_INLINE inline
#endif
static SL__WARP_INLINE SL__HD void sl__warp_px2_at(const sl__warp *t, const void *in, sl_dtype it,
                                                   void *out, sl_dtype ot, int64_t e, int64_t x,
                                                   int64_t y, int64_t c0, int64_t c1);

/* element e (row-major (y, x, channel)) of the destination */
static inline SL__HD void sl__warp_elem(const sl__warp *t, const void *in, sl_dtype it, void *out,
                                        sl_dtype ot, int64_t e) {
    if (t->dims == 3) {
        sl__dtype_conv_store(out, ot, e, sl__warp_elem3(t, in, it, e));
        return;
    }
    int64_t ch = e % t->c, p = e / t->c;
    sl__warp_px2_at(t, in, it, out, ot, e, p % t->ow, p / t->ow, ch, ch + 1);
}

/* elements e.. of a 2D destination: pixel (y, x), its channels c0 to c1 - 1, by sl__warp_elem's
 * rule (the source position found once for the pixel's channels; a caller that walks the pixels
 * itself, as the CPU run does, divides nothing) */
static SL__WARP_INLINE SL__HD void sl__warp_px2_at(const sl__warp *t, const void *in, sl_dtype it,
                                                   void *out, sl_dtype ot, int64_t e, int64_t x,
                                                   int64_t y, int64_t c0, int64_t c1) {
    double dx = (double)x + 0.5, dy = (double)y + 0.5;
    double sx = SL__DADD(SL__DADD(SL__DMUL(t->m[0], dx), SL__DMUL(t->m[1], dy)), t->m[2]);
    double sy = SL__DADD(SL__DADD(SL__DMUL(t->m[3], dx), SL__DMUL(t->m[4], dy)), t->m[5]);
    if (t->nn) {
        int64_t iy = (int64_t)floor(sl__warp_bound(sy)), ix = (int64_t)floor(sl__warp_bound(sx));
        for (int64_t ch = c0; ch < c1; ch++)
            sl__dtype_conv_store(out, ot, e + ch - c0, sl__warp_px(t, in, it, 0, iy, ix, ch));
        return;
    }
    double fx = sl__warp_bound(sx) - 0.5, fy = sl__warp_bound(sy) - 0.5;
    double x0 = floor(fx), y0 = floor(fy), ax = fx - x0, ay = fy - y0;
    int64_t ix = (int64_t)x0, iy = (int64_t)y0;
    for (int64_t ch = c0; ch < c1; ch++) {
        double a = sl__warp_px(t, in, it, 0, iy, ix, ch);
        double b = sl__warp_px(t, in, it, 0, iy, ix + 1, ch);
        double c = sl__warp_px(t, in, it, 0, iy + 1, ix, ch);
        double d = sl__warp_px(t, in, it, 0, iy + 1, ix + 1, ch);
        double top = SL__DADD(a, SL__DMUL(ax, SL__DADD(b, -a)));
        double bottom = SL__DADD(c, SL__DMUL(ax, SL__DADD(d, -c)));
        sl__dtype_conv_store(out, ot, e + ch - c0,
                             SL__DADD(top, SL__DMUL(ay, SL__DADD(bottom, -top))));
    }
}

/* ---- the CUDA run (warp_affine.cu) ---- */
#ifdef __cplusplus
extern "C" {
#endif

/* warp_affine and rotate: each destination element of a sample through its map (warp_affine.c,
 * ops/warp_affine.h) */
typedef struct sl__cuda_warp_desc {
    const void *in;
    void *out;
    sl__warp t;
} sl__cuda_warp_desc;
sl_status sl__cuda_warp(const sl__cuda_warp_desc *d, int n, int64_t max_elems, int in_dtype,
                        int out_dtype, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
