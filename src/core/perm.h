/* SPDX-License-Identifier: Apache-2.0 */
/* A permutation of [0, n) without a table: a keyed Feistel network over the smallest even-bit
 * domain 2^(2h) >= n, walked until it lands inside [0, n) (cycle walking: the walk stays a
 * bijection of [0, n), and since 2^(2h) < 4n it takes under four steps on average). O(1) memory
 * and O(1) expected work per index, so an epoch's order over millions of records costs nothing
 * to make and can be entered at any position -- what the readers' global order needs. The key is
 * (seed, epoch): every shard, process and thread that knows them computes the same order. */
#ifndef SLUICE_CORE_PERM_H
#define SLUICE_CORE_PERM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL__PERM_ROUNDS 6

typedef struct sl__perm {
    uint64_t n;
    int half;      /* bits per Feistel half */
    uint64_t mask; /* (1 << half) - 1 */
    uint64_t keys[SL__PERM_ROUNDS];
} sl__perm;

/* The permutation of [0, n) (n >= 1, at most 2^62) for (seed, epoch). */
void sl__perm_init(sl__perm *p, uint64_t n, uint64_t seed, uint64_t epoch);
/* Its value at i, for i < n: a distinct index in [0, n) for every i. */
uint64_t sl__perm_at(const sl__perm *p, uint64_t i);

#ifdef __cplusplus
}
#endif
#endif
