/* SPDX-License-Identifier: Apache-2.0 */
/* water, sphere and jitter (displace.c): where an output pixel takes its value from, and the
 * sampling, shared by the CPU run and the CUDA run (displace.cu). Coordinates are continuous with
 * pixel (x, y) covering [x, x + 1) x [y, y + 1): nearest-neighbour sampling takes the pixel the
 * point falls in, linear sampling interpolates between the four pixel centres around it; a point
 * outside the image gives fill_value. */
#ifndef SLUICE_OPS_DISPLACE_H
#define SLUICE_OPS_DISPLACE_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include "ops/noise.h"
#include "operator/dtype_conv.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SL__DISP_WATER, SL__DISP_SPHERE, SL__DISP_JITTER };

typedef struct sl__displace_desc {
    const void *in;
    void *out;
    int64_t h, w, c;
    int apply;       /* mask: 0 copies the sample */
    uint64_t stream; /* jitter: the sample's global index */
} sl__displace_desc;

typedef struct sl__displace_params {
    int kind;
    bool linear;
    double fill;
    double ampl_x, ampl_y, freq_x, freq_y, phase_x, phase_y; /* water */
    int degree;                                              /* jitter */
    uint64_t seed;
} sl__displace_params;

/* The source point of output pixel (y, x). */
static inline SL__HD void sl__displace_point(const sl__displace_desc *d,
                                             const sl__displace_params *p, int64_t y, int64_t x,
                                             float *sx, float *sy) {
    if (p->kind == SL__DISP_WATER) {
        /* as DALI: the displacement of pixel (x, y) taken at its integer coordinates, the point
         * x + dx (not the centre x + 0.5 + dx), which DALI's own test checks against OpenCV's
         * remap of x + dx - 0.5; in double: CUDA's and the C library's sin and cos then agree
         * but for the last bit */
        double fx = (double)x, fy = (double)y;
        *sx = (float)SL__DADD(
            fx, SL__DMUL(p->ampl_x, sin(SL__DADD(SL__DMUL(p->freq_x, fy), p->phase_x))));
        *sy = (float)SL__DADD(
            fy, SL__DMUL(p->ampl_y, cos(SL__DADD(SL__DMUL(p->freq_y, fx), p->phase_y))));
    } else if (p->kind == SL__DISP_SPHERE) {
        float mx = (float)d->w * 0.5f, my = (float)d->h * 0.5f;
        int r = (int)(mx > my ? mx : my);
        float tx = (float)x + 0.5f - mx, ty = (float)y + 0.5f - my;
        float rad = r > 0 ? sqrtf(SL__FADD(SL__FMUL(tx, tx), SL__FMUL(ty, ty))) / (float)r : 0.0f;
        *sx = SL__FADD(mx, SL__FMUL(rad, tx));
        *sy = SL__FADD(my, SL__FMUL(rad, ty));
    } else {
        sl__noise_rng r;
        sl__noise_rng_init(&r, p->seed, d->stream, (uint64_t)(y * d->w + x));
        int half = p->degree / 2;
        int dx = (int)(sl__noise_u32(&r) % (uint32_t)p->degree) - half;
        int dy = (int)(sl__noise_u32(&r) % (uint32_t)p->degree) - half;
        *sx = (float)(x + dx) + 0.5f;
        *sy = (float)(y + dy) + 0.5f;
    }
}

/* Output element e (pixel e / c, channel e % c). */
static inline SL__HD void sl__displace_elem(const sl__displace_desc *d,
                                            const sl__displace_params *p, sl_dtype t, int es,
                                            int64_t e) {
    if (!d->apply) {
        const unsigned char *a = (const unsigned char *)d->in + e * es;
        unsigned char *o = (unsigned char *)d->out + e * es;
        for (int k = 0; k < es; k++) o[k] = a[k];
        return;
    }
    int64_t ch = e % d->c, pix = e / d->c, y = pix / d->w, x = pix % d->w;
    float sx, sy;
    sl__displace_point(d, p, y, x, &sx, &sy);
    double v = p->fill;
    if (!p->linear) {
        if (sx >= 0 && sy >= 0 && sx < (float)d->w && sy < (float)d->h) {
            int64_t ix = (int64_t)sx, iy = (int64_t)sy;
            const unsigned char *a =
                (const unsigned char *)d->in + ((iy * d->w + ix) * d->c + ch) * es;
            unsigned char *o = (unsigned char *)d->out + e * es;
            for (int k = 0; k < es; k++) o[k] = a[k];
            return;
        }
    } else if (sx >= 0 && sy >= 0 && sx < (float)d->w && sy < (float)d->h) {
        float fx = sx - 0.5f, fy = sy - 0.5f;
        float x0f = floorf(fx), y0f = floorf(fy);
        float ax = fx - x0f, ay = fy - y0f;
        int64_t x0 = (int64_t)x0f, y0 = (int64_t)y0f, x1 = x0 + 1, y1 = y0 + 1;
        x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0; /* border pixels repeat at the edges */
        x1 = x1 >= d->w ? d->w - 1 : x1, y1 = y1 >= d->h ? d->h - 1 : y1;
        double p00 = sl__dtype_conv_load(d->in, t, (y0 * d->w + x0) * d->c + ch);
        double p01 = sl__dtype_conv_load(d->in, t, (y0 * d->w + x1) * d->c + ch);
        double p10 = sl__dtype_conv_load(d->in, t, (y1 * d->w + x0) * d->c + ch);
        double p11 = sl__dtype_conv_load(d->in, t, (y1 * d->w + x1) * d->c + ch);
        double top = SL__DADD(p00, SL__DMUL(ax, SL__DADD(p01, -p00)));
        double bot = SL__DADD(p10, SL__DMUL(ax, SL__DADD(p11, -p10)));
        v = SL__DADD(top, SL__DMUL(ay, SL__DADD(bot, -top)));
    }
    sl__dtype_conv_store(d->out, t, e, v);
}

sl_status sl__cuda_displace(const sl__displace_desc *d, int n, int64_t max_elems,
                            const sl__displace_params *p, int dtype, int esize, void *stream,
                            sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
