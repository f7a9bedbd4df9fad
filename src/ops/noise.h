/* SPDX-License-Identifier: Apache-2.0 */
/* noise.gaussian, noise.salt_and_pepper, noise.shot (noise.c): the noise of one element, shared
 * by the CPU run and the CUDA run (noise.cu). Every element draws from its own Philox4x32-10
 * blocks (core/rng.c's generator): key = the op's seed, counter = (element << 8 | draw, the
 * sample's global index), so the noise depends on the seed and the sample's place in the epoch
 * only -- not on threads, devices or batch boundaries. noise.gaussian draws as random.normal
 * does (ops/random.c: element k of a sample from block k of the stream core/rng.c's
 * sl__rng_philox_normal reads), so that, as in DALI, noise.gaussian(x, seed=s) equals
 * x + random.normal(x, seed=s). */
#ifndef SLUICE_OPS_NOISE_H
#define SLUICE_OPS_NOISE_H

#include "sluice/status.h"
#include "sluice/tensor.h"

#include "operator/dtype_conv.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SL__NOISE_GAUSSIAN, SL__NOISE_SALT_PEPPER, SL__NOISE_SHOT };

typedef struct sl__noise_desc {
    const void *in;
    void *out;
    int64_t n;       /* elements */
    int64_t group;   /* salt and pepper: the channels that share one draw (the extent of the
                        layout's 'C'), or 1 */
    int64_t inner;   /* the elements after the channel dimension (1 for channel-last) */
    uint64_t stream; /* the sample's global index */
    double p[4];     /* gaussian: mean, stddev; salt and pepper: prob, salt_vs_pepper, salt,
                        pepper; shot: factor */
} sl__noise_desc;

/* Philox4x32-10 block (the same as core/rng.c's sl__rng_philox_block) */
static inline SL__HD void sl__noise_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                           uint32_t k0, uint32_t k1, uint32_t out[4]) {
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The random draws of one element: blocks (element << 8 | j), four 32-bit words each. */
typedef struct sl__noise_rng {
    uint32_t buf[4];
    int idx, block;
    uint64_t elem, stream, seed;
} sl__noise_rng;

static inline SL__HD void sl__noise_rng_init(sl__noise_rng *r, uint64_t seed, uint64_t stream,
                                             uint64_t elem) {
    r->idx = 4;
    r->block = 0;
    r->elem = elem;
    r->stream = stream;
    r->seed = seed;
}

static inline SL__HD uint32_t sl__noise_u32(sl__noise_rng *r) {
    if (r->idx == 4) {
        uint64_t c = r->elem << 8 | (uint64_t)(r->block++ & 255);
        sl__noise_philox((uint32_t)c, (uint32_t)(c >> 32), (uint32_t)r->stream,
                         (uint32_t)(r->stream >> 32), (uint32_t)r->seed, (uint32_t)(r->seed >> 32),
                         r->buf);
        r->idx = 0;
    }
    return r->buf[r->idx++];
}

/* uniform in (0, 1), 53 bits */
static inline SL__HD double sl__noise_uniform(sl__noise_rng *r) {
    uint64_t hi = sl__noise_u32(r), lo = sl__noise_u32(r);
    uint64_t bits = (hi << 21) ^ (lo >> 11);
    return ((double)bits + 0.5) * (1.0 / 9007199254740992.0);
}

/* Poisson(lambda): multiplication of uniforms below 30, else Hormann's PTRS (transformed
 * rejection with squeeze); a stream that runs out of blocks (never in practice) gives
 * round(lambda) */
static inline SL__HD double sl__noise_poisson(sl__noise_rng *r, double lambda) {
    if (!(lambda > 0)) return 0;
    if (lambda < 30) {
        double l = exp(-lambda), p = 1;
        int k = 0;
        while (r->block < 256) {
            p *= sl__noise_uniform(r);
            if (p <= l) return k;
            k++;
        }
        return nearbyint(lambda);
    }
    double slam = sqrt(lambda), loglam = log(lambda);
    double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b,
           inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    double vr = 0.9277 - 3.6224 / (b - 2);
    while (r->block < 255) {
        double u = sl__noise_uniform(r) - 0.5, v = sl__noise_uniform(r);
        double us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + lambda + 0.43);
        if (us >= 0.07 && v <= vr) return k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <=
            -lambda + k * loglam - lgamma(k + 1))
            return k;
    }
    return nearbyint(lambda);
}

/* N(0, 1) for element e of a sample, as random.normal draws it (core/rng.c's
 * sl__rng_philox_normal on its stream's block e): two 53-bit uniforms from the block's words,
 * Box-Muller's cosine branch. */
static inline SL__HD double sl__noise_normal_at(uint64_t seed, uint64_t stream, uint64_t e) {
    uint32_t b[4];
    sl__noise_philox((uint32_t)e, (uint32_t)(e >> 32), (uint32_t)stream, (uint32_t)(stream >> 32),
                     (uint32_t)seed, (uint32_t)(seed >> 32), b);
    double u1 = (double)((((uint64_t)b[0] << 32) | b[1]) >> 11) * (1.0 / 9007199254740992.0);
    double u2 = (double)((((uint64_t)b[2] << 32) | b[3]) >> 11) * (1.0 / 9007199254740992.0);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2);
}

/* Element e of sample d, of type t (input and output). */
static inline SL__HD void sl__noise_elem(const sl__noise_desc *d, int kind, sl_dtype t,
                                         uint64_t seed, int64_t e) {
    sl__noise_rng r;
    double x = sl__dtype_conv_load(d->in, t, e), y;
    switch (kind) {
    case SL__NOISE_GAUSSIAN: {
        /* the noise rounded to float, as random.normal's float32 output is, and added in float
         * (in double for a double input), as DALI adds it */
        float n = (float)(d->p[0] + d->p[1] * sl__noise_normal_at(seed, d->stream, (uint64_t)e));
        y = t == SL_DTYPE_F64 ? x + (double)n : (double)((float)x + n);
        break;
    }
    case SL__NOISE_SALT_PEPPER: {
        /* one draw per pixel: the element's index with the channel dimension taken out */
        int64_t pix = e / (d->group * d->inner) * d->inner + e % d->inner;
        sl__noise_rng_init(&r, seed, d->stream, (uint64_t)pix);
        double u = sl__noise_uniform(&r), w = sl__noise_uniform(&r);
        y = u < d->p[0] ? (w < d->p[1] ? d->p[2] : d->p[3]) : x;
        break;
    }
    default:
        sl__noise_rng_init(&r, seed, d->stream, (uint64_t)e);
        y = d->p[0] > 0 ? sl__noise_poisson(&r, x / d->p[0]) * d->p[0] : x;
        break;
    }
    sl__dtype_conv_store(d->out, t, e, y);
}

sl_status sl__cuda_noise(const sl__noise_desc *d, int n, int64_t max_elems, int kind, int dtype,
                         uint64_t seed, void *stream, sl_err *err);

#ifdef __cplusplus
}
#endif
#endif
