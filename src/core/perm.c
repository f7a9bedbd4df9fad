/* SPDX-License-Identifier: Apache-2.0 */
/* The table-free permutation (see perm.h). */
#include "core/perm.h"

#include "core/rng.h"

void sl__perm_init(sl__perm *p, uint64_t n, uint64_t seed, uint64_t epoch) {
    int bits = 0;
    while (bits < 62 && ((uint64_t)1 << bits) < n) bits++;
    p->n = n;
    p->half = bits < 2 ? 1 : (bits + 1) / 2;
    p->mask = ((uint64_t)1 << p->half) - 1;
    uint64_t k = sl__rng_mix(seed, epoch);
    for (int r = 0; r < SL__PERM_ROUNDS; r++) p->keys[r] = k = sl__rng_mix(k, (uint64_t)r + 1);
}

/* one pass of the network over the 2h-bit domain: a bijection of it */
static uint64_t feistel(const sl__perm *p, uint64_t x) {
    uint64_t l = x >> p->half, r = x & p->mask;
    for (int k = 0; k < SL__PERM_ROUNDS; k++) {
        uint64_t f = sl__rng_mix(r, p->keys[k]) & p->mask;
        uint64_t t = l ^ f;
        l = r;
        r = t;
    }
    return l << p->half | r;
}

uint64_t sl__perm_at(const sl__perm *p, uint64_t i) {
    uint64_t x = feistel(p, i);
    while (x >= p->n) x = feistel(p, x);
    return x;
}
