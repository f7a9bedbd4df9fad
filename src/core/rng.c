/* SPDX-License-Identifier: Apache-2.0 */
/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC11) and numpy's
 * legacy MT19937 RandomState (init_genrand seeding, random_sample, legacy polar gauss). */
#include "core/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void sl__rng_philox_block(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void sl__rng_philox_init(sl__rng_philox *r, uint64_t seed, uint64_t stream) {
    r->key[0] = (uint32_t)seed;
    r->key[1] = (uint32_t)(seed >> 32);
    r->ctr[0] = 0;
    r->ctr[1] = 0;
    r->ctr[2] = (uint32_t)stream;
    r->ctr[3] = (uint32_t)(stream >> 32);
    r->idx = 4;
}

int sl__rng_philox_valid(const sl__rng_philox *r, uint64_t seed, uint64_t stream) {
    sl__rng_philox fresh;
    sl__rng_philox_init(&fresh, seed, stream);
    return r->idx >= 0 && r->idx <= 4 && r->key[0] == fresh.key[0] && r->key[1] == fresh.key[1] &&
           r->ctr[2] == fresh.ctr[2] && r->ctr[3] == fresh.ctr[3];
}

uint32_t sl__rng_philox_u32(sl__rng_philox *r) {
    if (r->idx == 4) {
        sl__rng_philox_block(r->ctr, r->key, r->buf);
        if (++r->ctr[0] == 0) ++r->ctr[1];
        r->idx = 0;
    }
    return r->buf[r->idx++];
}

uint64_t sl__rng_philox_u64(sl__rng_philox *r) {
    uint64_t hi = sl__rng_philox_u32(r);
    return hi << 32 | sl__rng_philox_u32(r);
}

double sl__rng_philox_uniform(sl__rng_philox *r) {
    return (double)(sl__rng_philox_u64(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t sl__rng_philox_below(sl__rng_philox *r, uint64_t n) {
    if (n <= 1) return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* reject the biased tail */
    uint64_t x;
    do x = sl__rng_philox_u64(r);
    while (x >= limit);
    return x % n;
}

double sl__rng_philox_normal(sl__rng_philox *r) {
    double u1 = sl__rng_philox_uniform(r), u2 = sl__rng_philox_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2);
}

uint64_t sl__rng_mix(uint64_t a, uint64_t b) {
    uint64_t z = a + 0x9E3779B97F4A7C15ULL * (b + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---- numpy legacy RandomState ---------------------------------------------------------------- */

#define MT_N 624
#define MT_M 397

void sl__rng_mt_seed(sl__rng_mt *r, uint32_t seed) {
    r->mt[0] = seed;
    for (int i = 1; i < MT_N; i++)
        r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->mti = MT_N;
    r->has_gauss = 0;
    r->gauss = 0.0;
}

static void mt_refill(sl__rng_mt *r) {
    static const uint32_t mag01[2] = {0u, 0x9908b0dfu};
    int k;
    uint32_t y;
    for (k = 0; k < MT_N - MT_M; k++) {
        y = (r->mt[k] & 0x80000000u) | (r->mt[k + 1] & 0x7fffffffu);
        r->mt[k] = r->mt[k + MT_M] ^ (y >> 1) ^ mag01[y & 1u];
    }
    for (; k < MT_N - 1; k++) {
        y = (r->mt[k] & 0x80000000u) | (r->mt[k + 1] & 0x7fffffffu);
        r->mt[k] = r->mt[k + (MT_M - MT_N)] ^ (y >> 1) ^ mag01[y & 1u];
    }
    y = (r->mt[MT_N - 1] & 0x80000000u) | (r->mt[0] & 0x7fffffffu);
    r->mt[MT_N - 1] = r->mt[MT_M - 1] ^ (y >> 1) ^ mag01[y & 1u];
    r->mti = 0;
}

uint32_t sl__rng_mt_u32(sl__rng_mt *r) {
    if (r->mti >= MT_N) mt_refill(r);
    uint32_t y = r->mt[r->mti++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double sl__rng_mt_random_sample(sl__rng_mt *r) {
    uint32_t a = sl__rng_mt_u32(r) >> 5, b = sl__rng_mt_u32(r) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

double sl__rng_mt_randn(sl__rng_mt *r) {
    if (r->has_gauss) {
        r->has_gauss = 0;
        return r->gauss;
    }
    double x1, x2, r2;
    do {
        x1 = 2.0 * sl__rng_mt_random_sample(r) - 1.0;
        x2 = 2.0 * sl__rng_mt_random_sample(r) - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    double f = sqrt(-2.0 * log(r2) / r2);
    r->gauss = f * x1;
    r->has_gauss = 1;
    return f * x2;
}
