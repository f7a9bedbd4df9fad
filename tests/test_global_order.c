/* SPDX-License-Identifier: Apache-2.0 */
/* Global order (sl_iter_config.global_order): the seed's reader, shuffled, with a random flip
 * after the decoder, over the 256-record Caffe2 fixture at a global batch of 24 gives, step by
 * step, the same global batch -- keys and decoded, flipped bytes, in order -- on cpu:1, cpu:2,
 * cpu:3 and cpu:4, for two epochs (each a new order of all 256 records, its last batch filled from
 * the epoch's start); under DROP 10 batches an epoch. A checkpoint taken on cpu:4 resumes on cpu:2
 * and cpu:3 with the uninterrupted run's batches; DALI-order and global-order checkpoints are
 * refused by the other order, and a global one by another global batch, each naming why. */
#include "check.h"

#include "sluice/iterator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GLOBAL 24
#define IMG    (28 * 28)
#define STEPS  22 /* two epochs of ceil(256 / 24) = 11 */

static const char *text =
    "def pipe(data_path, num_shards, shard_id):\n"
    "    jpegs, labels = fn.readers.caffe2(path=data_path, num_shards=num_shards, "
    "shard_id=shard_id, random_shuffle=True, name=\"r\")\n"
    "    images = fn.decoders.image(jpegs, output_type=types.GRAY)\n"
    "    return fn.flip(images, horizontal=fn.random.coin_flip()), labels\n";

/* one global batch: every sample's bytes and key, in global order */
typedef struct {
    unsigned char img[GLOBAL * IMG];
    char key[GLOBAL][16];
} gbatch;

static sl_pipeline_bind bind;

static sl_status make(int ndev, int policy, int batch, const void *ck, size_t ck_size, int global,
                      sl_iter **it, sl_err *e) {
    sl_iter_config c;
    sl_iter_config_init(&c);
    c.text = text;
    c.binds = &bind;
    c.nbinds = 1;
    char spec[16];
    snprintf(spec, sizeof spec, "cpu:%d", ndev);
    CHECK_OK(sl_iter_parse_devices(spec, &c, e), e);
    c.batch_size = batch;
    c.num_threads = 2;
    c.seed = 11;
    c.last_batch_policy = policy;
    c.global_order = global;
    c.resume_bytes = ck;
    c.resume_size = ck_size;
    return sl_iter_create(&c, it, e);
}

static void record(sl_iter *it, const sl_iter_batch *b, gbatch *g) {
    memset(g, 0, sizeof *g);
    int n = sl_iter_num_devices(it), per = GLOBAL / n;
    for (int d = 0; d < n; d++) {
        sl_tensor t;
        sl_err e;
        CHECK_OK(sl_iter_shard(b, 0, d, &t, &e), &e);
        if (check_failures) return;
        CHECK_EQ_INT(sl_tensor_nbytes(&t), per * IMG);
        memcpy(g->img + (size_t)d * per * IMG, t.data, (size_t)per * IMG);
        for (int i = 0; i < per; i++)
            snprintf(g->key[d * per + i], sizeof g->key[0], "%s", sl_iter_key(b, d, i));
    }
}

/* steps [from, to) of it into out[from..to), resetting at each epoch's end */
static void run(sl_iter *it, gbatch *out, int from, int to) {
    for (int s = from; s < to; s++) {
        const sl_iter_batch *b;
        sl_status st = sl_iter_next(it, &b);
        if (st == SL_EOF) {
            sl_iter_reset(it);
            st = sl_iter_next(it, &b);
        }
        CHECK_OK(st, sl_iter_errmsg(it));
        if (check_failures) return;
        record(it, b, &out[s]);
    }
}

static gbatch *ref;

static void test_same_batches(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(1, -1, GLOBAL, NULL, 0, 1, &it, &e), &e);
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_len(it), 11);
    run(it, ref, 0, STEPS);
    sl_iter_free(it);
    /* each epoch: all 256 records once in its first 256 places, the 8 after them repeat its
     * first 8; the two epochs' orders differ */
    for (int ep = 0; ep < 2; ep++) {
        char seen[256] = {0};
        int dup = 0;
        for (int p = 0; p < 256; p++) {
            int k = atoi(ref[ep * 11 + p / GLOBAL].key[p % GLOBAL]);
            CHECK(k >= 0 && k < 256);
            if (k >= 0 && k < 256) dup += seen[k]++;
        }
        CHECK_MSG(dup == 0, "epoch %d: %d records twice", ep, dup);
        for (int p = 256; p < 264; p++)
            CHECK(!strcmp(ref[ep * 11 + 10].key[p % GLOBAL], ref[ep * 11].key[p - 256]));
    }
    CHECK(strcmp(ref[0].key[0], ref[11].key[0]) || strcmp(ref[0].key[1], ref[11].key[1]));
    gbatch *got = calloc(STEPS, sizeof *got);
    for (int n = 2; n <= 4; n++) {
        CHECK_OK(make(n, -1, GLOBAL, NULL, 0, 1, &it, &e), &e);
        if (check_failures) break;
        CHECK_EQ_INT(sl_iter_len(it), 11);
        run(it, got, 0, STEPS);
        sl_iter_free(it);
        for (int s = 0; s < STEPS; s++)
            CHECK_MSG(!memcmp(&got[s], &ref[s], sizeof *got), "cpu:%d step %d differs from cpu:1",
                      n, s);
    }
    free(got);
}

static void test_drop(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(3, SL_LAST_BATCH_DROP, GLOBAL, NULL, 0, 1, &it, &e), &e);
    if (check_failures) return;
    CHECK_EQ_INT(sl_iter_len(it), 10);
    const sl_iter_batch *b;
    int n = 0;
    while (sl_iter_next(it, &b) == SL_OK) n++;
    CHECK_EQ_INT(n, 10);
    sl_iter_free(it);
}

static void test_elastic_resume(void) {
    sl_iter *it;
    sl_err e;
    CHECK_OK(make(4, -1, GLOBAL, NULL, 0, 1, &it, &e), &e);
    if (check_failures) return;
    gbatch *got = calloc(STEPS, sizeof *got);
    run(it, got, 0, 5);
    void *ck;
    size_t n;
    CHECK_OK(sl_iter_save(it, NULL, 0, &ck, &n), sl_iter_errmsg(it));
    sl_iter_free(it);
    for (int ndev = 2; ndev <= 3; ndev++) {
        CHECK_OK(make(ndev, -1, GLOBAL, ck, n, 1, &it, &e), &e);
        if (check_failures) break;
        CHECK_EQ_INT(sl_iter_step(it), 5);
        run(it, got, 5, STEPS);
        sl_iter_free(it);
        for (int s = 5; s < STEPS; s++)
            CHECK_MSG(!memcmp(&got[s], &ref[s], sizeof *got), "resumed on cpu:%d: step %d", ndev,
                      s);
    }
    /* another global batch, another order: refused, saying why */
    CHECK_FAILS(make(2, -1, 2 * GLOBAL, ck, n, 1, &it, &e), SL_EINVAL, &e, "same global batch");
    CHECK_FAILS(make(4, -1, GLOBAL, ck, n, 0, &it, &e), SL_EINVAL, &e, "global order");
    free(ck);
    /* a DALI-order checkpoint resumes on its own shards only */
    CHECK_OK(make(2, -1, GLOBAL, NULL, 0, 0, &it, &e), &e);
    if (!check_failures) {
        run(it, got, 0, 2);
        CHECK_OK(sl_iter_save(it, NULL, 0, &ck, &n), sl_iter_errmsg(it));
        sl_iter_free(it);
        CHECK_FAILS(make(4, -1, GLOBAL, ck, n, 0, &it, &e), SL_EINVAL, &e,
                    "DALI's order resumes only on the same shards");
        CHECK_FAILS(make(2, -1, GLOBAL, ck, n, 1, &it, &e), SL_EINVAL, &e, "DALI's order");
        free(ck);
    }
    free(got);
}

int main(void) {
    bind = (sl_pipeline_bind){"data_path", fixture("caffe2-fmnist-256")};
    ref = calloc(STEPS, sizeof *ref);
    test_same_batches();
    if (!check_failures) test_elastic_resume();
    test_drop();
    free(ref);
    return check_done();
}
