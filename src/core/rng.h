/* SPDX-License-Identifier: Apache-2.0 */
/* Random numbers.
 * (a) Philox4x32-10, a counter-based generator: the value at (key, counter) needs no state, so each
 *     sample's random decisions come from (seed, sample index) and do not depend on thread count or
 *     scheduling; sl__rng_philox is a small stream over it.
 * (b) numpy's legacy RandomState: MT19937 seeded by init_genrand, random_sample as 53-bit doubles,
 *     randn by the legacy polar method with its cached second value -- so models start from the
 *     very weights numpy.random.RandomState(seed) gives. */
#ifndef SLUICE_CORE_RNG_H
#define SLUICE_CORE_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One Philox4x32-10 block. */
void sl__rng_philox_block(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

typedef struct sl__rng_philox {
    uint32_t key[2];
    uint32_t ctr[4]; /* ctr[2..3] = stream, ctr[0..1] = block counter */
    uint32_t buf[4];
    int idx; /* next unused word of buf; 4 = empty */
} sl__rng_philox;

/* A stream identified by (seed, stream): e.g. (pipeline seed ^ op, sample index). */
void sl__rng_philox_init(sl__rng_philox *r, uint64_t seed, uint64_t stream);
/* Whether r is a state of the stream (seed, stream) that sl__rng_philox_u32 can go on from (its
 * buffer index in range): a state read back from a file must be, before it is used. */
int sl__rng_philox_valid(const sl__rng_philox *r, uint64_t seed, uint64_t stream);
uint32_t sl__rng_philox_u32(sl__rng_philox *r);
uint64_t sl__rng_philox_u64(sl__rng_philox *r);
/* [0, 1) with 53 random bits */
double sl__rng_philox_uniform(sl__rng_philox *r);
/* uniform integer in [0, n) without modulo bias; n >= 1 */
uint64_t sl__rng_philox_below(sl__rng_philox *r, uint64_t n);
/* standard normal (Box-Muller) */
double sl__rng_philox_normal(sl__rng_philox *r);

/* Mixes two 64-bit values into a seed (splitmix64 finaliser); for deriving per-op seeds. */
uint64_t sl__rng_mix(uint64_t a, uint64_t b);

typedef struct sl__rng_mt {
    uint32_t mt[624];
    int mti;
    int has_gauss;
    double gauss;
} sl__rng_mt;

void sl__rng_mt_seed(sl__rng_mt *r, uint32_t seed); /* init_genrand */
uint32_t sl__rng_mt_u32(sl__rng_mt *r);
double sl__rng_mt_random_sample(sl__rng_mt *r); /* numpy random_sample */
double sl__rng_mt_randn(sl__rng_mt *r);         /* numpy legacy gauss */

#ifdef __cplusplus
}
#endif
#endif
