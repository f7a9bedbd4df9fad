/* SPDX-License-Identifier: Apache-2.0 */
/* The loader core: exactly-once delivery per epoch for every (N, S, batch, shuffle, pad, stick)
 * combination of exactly_once()'s tables, against DALI's rules (docs/dali.md 2.3, 3.2-3.4) and its
 * worked MNIST numbers; checkpoints resume exactly; bad shard arguments are refused. */
#include "check.h"
#include "core/log.h"
#include "io/loader.h"

#include <stdlib.h>
#include <string.h>

#define EPOCHS 3

static int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

/* mode: 0 sequential, 1 window shuffle, 2 shuffle_after_epoch */
static void check_combo(int64_t n, int s, int b, int mode, bool pad, bool stick, int32_t *seen,
                        int64_t *buf) {
    /* seen[e * n + r]: deliveries of record r in epoch e, over all shards */
    memset(seen, 0, (size_t)EPOCHS * (size_t)n * sizeof *seen);
    int64_t per_shard = ceil_div(n, s);
    for (int id = 0; id < s; id++) {
        sl__loader_cfg c = {.n = n,
                            .num_shards = s,
                            .shard_id = id,
                            .random_shuffle = mode == 1,
                            .initial_fill = 1024,
                            .stick_to_shard = stick,
                            .pad_last_batch = pad,
                            .shuffle_after_epoch = mode == 2,
                            .seed = 1234u + (unsigned)id,
                            .perm_seed = 99};
        sl__loader *l;
        sl_err e;
        CHECK_OK(sl__loader_create(&c, &l, &e), &e);
        if (!l) return;
        int64_t t = 0; /* samples delivered */
        for (int ep = 0; ep < EPOCHS; ep++) {
            int vs = stick ? id : (id + ep) % s;
            int64_t lo = sl__loader_shard_begin(n, s, vs),
                    hi = sl__loader_shard_begin(n, s, vs + 1);
            int64_t want = hi - lo;
            int64_t total = pad ? ceil_div(per_shard, b) * b : want;
            for (int64_t k = 0; k < total; k++, t++) {
                bool padded;
                buf[k] = sl__loader_next(l, t % b == 0, &padded);
                if (pad && k >= want && !padded) {
                    CHECK_MSG(0,
                              "N=%lld S=%d B=%d mode=%d stick=%d shard %d epoch %d: sample %lld "
                              "not marked as padding",
                              (long long)n, s, b, mode, stick, id, ep, (long long)k);
                    return;
                }
            }
            for (int64_t k = 0; k < want; k++) {
                int64_t r = buf[k];
                if (mode != 2 && (r < lo || r >= hi)) {
                    CHECK_MSG(0,
                              "N=%lld S=%d B=%d mode=%d pad=%d stick=%d shard %d epoch %d: "
                              "record %lld outside shard %d [%lld, %lld)",
                              (long long)n, s, b, mode, pad, stick, id, ep, (long long)r, vs,
                              (long long)lo, (long long)hi);
                    sl__loader_free(l);
                    return;
                }
                if (!stick || mode == 2)
                    seen[(int64_t)ep * n + r]++;
                else
                    seen[r]++;
            }
            for (int64_t k = want; k < total; k++)
                if (buf[k] != buf[want - 1]) {
                    CHECK_MSG(0,
                              "N=%lld S=%d B=%d: padding sample %lld is %lld, not the shard's "
                              "last %lld",
                              (long long)n, s, b, (long long)k, (long long)buf[k],
                              (long long)buf[want - 1]);
                    break;
                }
            if (pad) CHECK_EQ_INT(total % b, 0);
            /* every record of the shard once in this epoch */
            if (stick && mode != 2) {
                for (int64_t r = lo; r < hi; r++)
                    if (seen[r] != ep + 1) {
                        CHECK_MSG(0,
                                  "N=%lld S=%d B=%d mode=%d pad=%d stick shard %d epoch %d: "
                                  "record %lld seen %d times",
                                  (long long)n, s, b, mode, pad, id, ep, (long long)r,
                                  seen[r] - ep);
                        sl__loader_free(l);
                        return;
                    }
            }
        }
        sl__loader_free(l);
    }
    /* rotating, or one permutation per epoch: every epoch, over all shards, delivers each record
     * exactly once (shuffle_after_epoch: shard i reads positions [lo, hi) of that epoch's list) */
    if (!stick || mode == 2)
        for (int ep = 0; ep < EPOCHS; ep++)
            for (int64_t r = 0; r < n; r++)
                if (seen[(int64_t)ep * n + r] != 1) {
                    CHECK_MSG(0,
                              "N=%lld S=%d B=%d mode=%d pad=%d: epoch %d record %lld delivered "
                              "%d times over all shards",
                              (long long)n, s, b, mode, pad, ep, (long long)r,
                              seen[(int64_t)ep * n + r]);
                    return;
                }
    check_count++;
}

static void exactly_once(void) {
    static const int64_t ns[] = {1, 7, 100, 1000, 60000};
    static const int ss[] = {1, 2, 3, 4, 7, 8};
    static const int bs[] = {1, 3, 200};
    int32_t *seen = malloc(EPOCHS * 60000 * sizeof *seen);
    int64_t *buf = malloc(80000 * sizeof *buf);
    int combos = 0;
    for (size_t ni = 0; ni < SL_ARRAY_LEN(ns); ni++)
        for (size_t si = 0; si < SL_ARRAY_LEN(ss); si++) {
            if (ns[ni] < ss[si]) {
                sl__loader_cfg c = {.n = ns[ni], .num_shards = ss[si], .shard_id = 0};
                sl__loader *l;
                sl_err e;
                CHECK_FAILS(sl__loader_create(&c, &l, &e), SL_EINVAL, &e,
                            "larger than the data set");
                continue;
            }
            for (size_t bi = 0; bi < SL_ARRAY_LEN(bs) && !check_failures; bi++)
                for (int mode = 0; mode < 3; mode++)
                    for (int pad = 0; pad < 2; pad++)
                        for (int stick = 0; stick < 2; stick++) {
                            check_combo(ns[ni], ss[si], bs[bi], mode, pad, stick, seen, buf);
                            combos++;
                        }
        }
    printf("exactly-once: %d combinations x %d epochs\n", combos, EPOCHS);
    free(seen);
    free(buf);
}

/* DALI's worked numbers (docs/dali.md 2.3): MNIST, global batch 200 */
static void worked_numbers(void) {
    static const struct {
        int64_t n;
        int s, b;
        int64_t shard_min, shard_max, size_padded, len;
    } rows[] = {
        {60000, 1, 200, 60000, 60000, 60000, 300}, {60000, 2, 100, 30000, 30000, 30000, 300},
        {60000, 4, 50, 15000, 15000, 15000, 300},  {60000, 8, 25, 7500, 7500, 7500, 300},
        {60000, 3, 66, 20000, 20000, 20000, 304},  {60000, 7, 28, 8571, 8572, 8572, 307},
        {10000, 1, 200, 10000, 10000, 10000, 50},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(rows); i++) {
        int64_t mn = INT64_MAX, mx = 0;
        for (int id = 0; id < rows[i].s; id++) {
            int64_t z = sl__loader_shard_size(rows[i].n, rows[i].s, id);
            mn = z < mn ? z : mn;
            mx = z > mx ? z : mx;
        }
        CHECK_EQ_INT(mn, rows[i].shard_min);
        CHECK_EQ_INT(mx, rows[i].shard_max);
        /* with pad_last_batch: epoch_size_padded / S samples per shard, len full batches each
         * epoch, on every shard */
        for (int id = 0; id < rows[i].s; id++) {
            sl__loader_cfg c = {
                .n = rows[i].n, .num_shards = rows[i].s, .shard_id = id, .pad_last_batch = true};
            sl__loader *l;
            sl_err e;
            CHECK_OK(sl__loader_create(&c, &l, &e), &e);
            sl_reader_meta m;
            sl__loader_meta(l, &m);
            CHECK_EQ_INT(m.epoch_size, rows[i].n);
            CHECK_EQ_INT(m.epoch_size_padded / rows[i].s, rows[i].size_padded);
            CHECK_EQ_INT(m.number_of_shards, rows[i].s);
            CHECK_EQ_INT(m.shard_id, id);
            CHECK(m.pad_last_batch && !m.stick_to_shard);
            /* count batches until the next epoch's first sample appears */
            int64_t batches = 0;
            for (;;) {
                int64_t epoch_before = sl__loader_epoch(l);
                bool first = true;
                for (int k = 0; k < rows[i].b; k++) {
                    sl__loader_next(l, k == 0, NULL);
                    if (k == 0 && sl__loader_epoch(l) != epoch_before) first = false;
                }
                if (!first) break;
                batches++;
            }
            CHECK_EQ_INT(batches, rows[i].len);
            sl__loader_free(l);
        }
        /* without padding the per-shard sizes are the plain shard sizes; the iterator rounds them
         * up: size = ceil(ceil(N/S)/B)*B -> 20064 for S=3, 8596 for S=7 */
        int64_t size = ceil_div(ceil_div(rows[i].n, rows[i].s), rows[i].b) * rows[i].b;
        if (rows[i].s == 3) CHECK_EQ_INT(size, 20064);
        if (rows[i].s == 7) CHECK_EQ_INT(size, 8596);
    }
}

static void checkpoints(void) {
    for (int mode = 0; mode < 3; mode++) {
        sl__loader_cfg c = {.n = 1000,
                            .num_shards = 3,
                            .shard_id = 1,
                            .random_shuffle = mode == 1,
                            .initial_fill = 64,
                            .pad_last_batch = mode != 0,
                            .shuffle_after_epoch = mode == 2,
                            .seed = 7,
                            .perm_seed = 8};
        sl__loader *a, *b;
        sl_err e;
        CHECK_OK(sl__loader_create(&c, &a, &e), &e);
        CHECK_OK(sl__loader_create(&c, &b, &e), &e);
        for (int k = 0; k < 517; k++) sl__loader_next(a, k % 10 == 0, NULL);
        void *blob;
        size_t size;
        CHECK_OK(sl__loader_save(a, &blob, &size, &e), &e);
        CHECK_OK(sl__loader_restore(b, blob, size, &e), &e);
        int same = 1;
        for (int k = 517; k < 3000; k++)
            if (sl__loader_next(a, k % 10 == 0, NULL) != sl__loader_next(b, k % 10 == 0, NULL))
                same = 0;
        CHECK_MSG(same, "mode %d: restored loader diverges", mode);
        /* a differently configured loader refuses the blob */
        sl__loader_cfg c2 = c;
        c2.shard_id = 2;
        sl__loader *d;
        CHECK_OK(sl__loader_create(&c2, &d, &e), &e);
        CHECK_FAILS(sl__loader_restore(d, blob, size, &e), SL_EINVAL, &e, "differently configured");
        CHECK_FAILS(sl__loader_restore(d, blob, size - 1, &e), SL_EFORMAT, &e, "bytes");
        free(blob);
        sl__loader_free(a);
        sl__loader_free(b);
        sl__loader_free(d);
    }
}

static void shuffling(void) {
    /* the window shuffle reorders, deterministically per seed, within initial_fill */
    sl__loader_cfg c = {
        .n = 1000, .num_shards = 1, .random_shuffle = true, .initial_fill = 100, .seed = 5};
    sl__loader *a, *b;
    sl_err e;
    CHECK_OK(sl__loader_create(&c, &a, &e), &e);
    c.seed = 6;
    CHECK_OK(sl__loader_create(&c, &b, &e), &e);
    int moved = 0, differ = 0, far = 0;
    for (int64_t k = 0; k < 1000; k++) {
        int64_t r = sl__loader_next(a, false, NULL), q = sl__loader_next(b, false, NULL);
        moved += r != k;
        differ += r != q;
        far += r > k + 99; /* never more than initial_fill-1 ahead of its stored position */
    }
    CHECK(moved > 900);
    CHECK(differ > 900);
    CHECK_EQ_INT(far, 0);
    sl__loader_free(a);
    sl__loader_free(b);
    /* shuffle_after_epoch: the same permutation on every shard, a new one each epoch */
    sl__loader_cfg p = {.n = 100, .num_shards = 1, .shuffle_after_epoch = true, .perm_seed = 3};
    CHECK_OK(sl__loader_create(&p, &a, &e), &e);
    int64_t e0[100], same = 0;
    for (int k = 0; k < 100; k++) e0[k] = sl__loader_next(a, false, NULL);
    for (int k = 0; k < 100; k++) same += sl__loader_next(a, false, NULL) == e0[k];
    CHECK(same < 20);
    sl__loader_free(a);
    /* bad shard arguments */
    sl__loader_cfg bad = {.n = 10, .num_shards = 2, .shard_id = 2};
    CHECK_FAILS(sl__loader_create(&bad, &a, &e), SL_EINVAL, &e, "shard_id 2 is out of range");
    bad.shard_id = 0;
    bad.num_shards = 0;
    CHECK_FAILS(sl__loader_create(&bad, &a, &e), SL_EINVAL, &e, "num_shards");
}

int main(void) {
    exactly_once();
    worked_numbers();
    checkpoints();
    shuffling();
    return check_done();
}
