/* SPDX-License-Identifier: Apache-2.0 */
/* The table-free permutation (core/perm.h) and the loader's global order built on it.
 * perm: a bijection of [0, n) for n from 1 to 10^6 and for sizes just past powers of two (where
 * the walk is longest); the same (seed, epoch) gives the same order, another epoch another; its
 * order looks random: over 10^6 records the fixed points are as many as a random permutation's
 * (a Poisson count of mean 1: at most 12 here, a chance of 1 in 10^9 for a truly random one) and
 * consecutive values are uncorrelated (|r| < 0.01; a random order's r has a spread of 0.001).
 * Loader: every record exactly once per epoch over a grid of data-set sizes (up to 10^6), shard
 * counts 1..8 (processes holding them at any offset read the same: a shard is only its id),
 * batches and both ends (filled from the epoch's start, or dropped), with the fill repeating the
 * epoch's first records; the order of global batches does not depend on the shard count. */
#include "check.h"
#include "core/log.h"
#include "core/perm.h"
#include "io/loader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_bijection(void) {
    const uint64_t sizes[] = {1,   2,   3,   4,   5,    7,    8,     9,     16,     17,
                              100, 255, 256, 257, 1000, 4097, 65535, 65537, 1000000};
    unsigned char *seen = malloc(1000000);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        uint64_t n = sizes[k];
        for (uint64_t epoch = 0; epoch < 3; epoch++) {
            sl__perm p;
            sl__perm_init(&p, n, 42, epoch);
            memset(seen, 0, n);
            uint64_t bad = 0;
            for (uint64_t i = 0; i < n; i++) {
                uint64_t v = sl__perm_at(&p, i);
                if (v >= n || seen[v]++) bad++;
            }
            CHECK_MSG(bad == 0, "n %llu epoch %llu: %llu values out of range or repeated",
                      (unsigned long long)n, (unsigned long long)epoch, (unsigned long long)bad);
        }
    }
    free(seen);
}

static void test_quality(void) {
    const uint64_t n = 1000000;
    sl__perm a, b, c;
    sl__perm_init(&a, n, 7, 0);
    sl__perm_init(&b, n, 7, 0);
    sl__perm_init(&c, n, 7, 1);
    int fixed = 0, same_b = 0, same_c = 0;
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    uint64_t prev = sl__perm_at(&a, 0);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = sl__perm_at(&a, i);
        fixed += v == i;
        same_b += v == sl__perm_at(&b, i);
        same_c += v == sl__perm_at(&c, i);
        if (i > 0) {
            double x = (double)prev, y = (double)v;
            sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
        }
        prev = v;
    }
    double m = (double)(n - 1);
    double r = (sxy / m - sx / m * sy / m) /
               sqrt((sxx / m - sx / m * sx / m) * (syy / m - sy / m * sy / m));
    printf("10^6 records: %d fixed points, adjacent correlation %.5f, %d places equal in the next "
           "epoch's order\n",
           fixed, r, same_c);
    CHECK_MSG(fixed <= 12, "%d fixed points", fixed);
    CHECK_MSG(fabs(r) < 0.01, "adjacent correlation %f", r);
    CHECK_EQ_INT(same_b, (int)n);
    CHECK_MSG(same_c <= 12, "epochs 0 and 1 agree in %d places", same_c);
}

/* one epoch of S loaders (shards) in global order: the record at every global position */
static void epoch_of(int64_t n, int S, int B, bool drop, bool shuffle, int64_t *pos,
                     int64_t *steps) {
    int64_t g = (int64_t)S * B;
    *steps = drop ? n / g : (n + g - 1) / g;
    for (int s = 0; s < S; s++) {
        sl__loader_cfg c;
        memset(&c, 0, sizeof c);
        c.n = n;
        c.num_shards = S;
        c.shard_id = s;
        c.random_shuffle = shuffle;
        c.initial_fill = 1;
        c.seed = 99;
        c.global_order = true;
        c.batch = B;
        c.global_drop = drop;
        sl__loader *l;
        sl_err e;
        CHECK_OK(sl__loader_create(&c, &l, &e), &e);
        if (check_failures) return;
        for (int64_t t = 0; t < *steps; t++)
            for (int i = 0; i < B; i++) pos[t * g + s * B + i] = sl__loader_next(l, i == 0, NULL);
        CHECK_EQ_INT(sl__loader_epoch(l), 0);
        sl__loader_next(l, true, NULL); /* the next epoch's first */
        CHECK_EQ_INT(sl__loader_epoch(l), *steps > 0 ? 1 : 0);
        sl__loader_free(l);
    }
}

static void test_loader_grid(void) {
    const int64_t sizes[] = {1, 5, 97, 1000, 100000, 1000000};
    const int batches[] = {1, 7, 32};
    int64_t *pos = malloc(sizeof *pos * (1000000 + 8 * 32));
    unsigned char *seen = malloc(1000000);
    int64_t *ref = malloc(sizeof *ref * (1000000 + 8 * 32));
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int S = 1; S <= 8; S++)
            for (int bi = 0; bi < 3; bi++)
                for (int drop = 0; drop < 2; drop++) {
                    int64_t n = sizes[k];
                    int B = batches[bi];
                    if (n >= 100000 && (S % 3 != 1 || bi == 1)) continue; /* S 1, 4, 7 there */
                    if (drop && n < (int64_t)S * B) continue;             /* refused: no batch */
                    int64_t steps, g = (int64_t)S * B;
                    epoch_of(n, S, B, drop, true, pos, &steps);
                    if (check_failures) goto out;
                    int64_t filled = steps * g, whole = SL_MIN(filled, n), bad = 0;
                    memset(seen, 0, (size_t)n);
                    for (int64_t q = 0; q < whole; q++)
                        if (pos[q] < 0 || pos[q] >= n || seen[pos[q]]++) bad++;
                    for (int64_t q = n; q < filled; q++) bad += pos[q] != pos[q % n];
                    CHECK_MSG(bad == 0 && (drop || whole == n),
                              "n %lld, %d shards, batch %d, %s: %lld bad places", (long long)n, S,
                              B, drop ? "drop" : "fill", (long long)bad);
                    /* the global batches do not depend on the shard count: one shard of the
                     * whole global batch reads the same */
                    int64_t steps1;
                    epoch_of(n, 1, (int)g, drop, true, ref, &steps1);
                    CHECK_EQ_INT(steps1, steps);
                    CHECK_MSG(!memcmp(ref, pos, sizeof *pos * (size_t)filled),
                              "n %lld: %d shards of %d read another order than 1 of %lld",
                              (long long)n, S, B, (long long)g);
                }
    /* refused: a drop that leaves no batch, and what has no meaning in global order */
    sl__loader_cfg c;
    memset(&c, 0, sizeof c);
    c.n = 10;
    c.num_shards = 2;
    c.batch = 8;
    c.initial_fill = 1;
    c.global_order = true;
    c.global_drop = true;
    sl__loader *l = NULL;
    sl_err e;
    CHECK_FAILS(sl__loader_create(&c, &l, &e), SL_EINVAL, &e, "leaves none");
    c.global_drop = false;
    c.pad_last_batch = true;
    CHECK_FAILS(sl__loader_create(&c, &l, &e), SL_EINVAL, &e, "pad_last_batch has no meaning");
out:
    free(pos);
    free(ref);
    free(seen);
}

int main(void) {
    test_bijection();
    test_quality();
    test_loader_grid();
    return check_done();
}
