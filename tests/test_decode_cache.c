/* SPDX-License-Identifier: Apache-2.0 */
/* decoders.image's decoded-image cache (cache_size, cache_type, cache_threshold, cache_debug) on
 * a CPU pipeline over the Caffe2 fixture (256 Fashion-MNIST JPEGs, shuffled, 8 batches of 32 per
 * epoch): for 3 epochs the outputs are byte-identical with the cache on and off, and the decode
 * counter (cache_debug's per-batch misses, through the log callback) drops to zero from epoch 2
 * on ("threshold", everything fits), stays at 256 per epoch when no image reaches
 * cache_threshold, and with "largest" (which only notes sizes during the first epoch) drops to
 * zero from epoch 3 on. Only misses reach the thread pool: a batch served from the cache does not
 * wake it (the pipeline's per-op pool counters). Bad cache arguments are errors naming the
 * argument. */
#include "check.h"

#include "sluice/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 32, PER_EPOCH = 256 / BATCH, EPOCHS = 3 };

static const char *text_fmt =
    "def pipe(data_path):\n"
    "    jpegs, labels = fn.readers.caffe2(path=data_path, random_shuffle=True, initial_fill=64)\n"
    "    images = fn.decoders.image(jpegs, device=\"mixed\", output_type=types.%s%s)\n"
    "    return images, labels\n";

/* misses per batch, from cache_debug's lines */
static int misses[EPOCHS * PER_EPOCH];
static int nlines;

static void on_log(sl_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    const char *p = strstr(msg, "cache: batch ");
    long long b;
    int h, m;
    if (p && sscanf(p, "cache: batch %lld: %d hits, %d misses", &b, &h, &m) == 3 && b >= 0 &&
        b < EPOCHS * PER_EPOCH) {
        misses[b] = m;
        nlines++;
        CHECK_EQ_INT(h + m, BATCH);
    }
}

static sl_pipeline *make(const char *type, const char *cache, sl_err *e) {
    sl_pipeline_config c;
    sl_pipeline_config_init(&c);
    c.batch_size = BATCH;
    c.num_threads = 3;
    c.prefetch_cpu = 2;
    c.seed = 11;
    char text[1024];
    snprintf(text, sizeof text, text_fmt, type, cache);
    sl_pipeline_bind bind = {"data_path", fixture("caffe2-fmnist-256")};
    return check_pipeline(&c, text, "cache.py", 1, &bind, e);
}

/* decoders.image's thread-pool use: batches whose run_cpu went to the pool, samples run there */
static int64_t pool_jobs, pool_samples;

/* 3 epochs of images and labels, concatenated, with the keys */
static unsigned char *collect(const char *type, const char *cache, size_t *len, char **keys) {
    sl_err e;
    sl_err_clear(&e);
    sl_pipeline *p = make(type, cache, &e);
    CHECK_MSG(p != NULL, "%s: %s", cache, e.msg);
    if (!p) return NULL;
    size_t cap = 1 << 20, used = 0, kused = 0;
    unsigned char *buf = malloc(cap);
    *keys = calloc(EPOCHS * 256, 32);
    for (int i = 0; i < EPOCHS * PER_EPOCH; i++) {
        sl_batch *b = NULL;
        CHECK_OK(sl_pipeline_next(p, &b), NULL);
        if (!b) break;
        for (int o = 0; o < 2; o++) {
            sl_tensor t;
            CHECK_OK(sl_batch_tensor(b, o, &t, &e), &e);
            size_t nb = sl_tensor_nbytes(&t);
            while (used + nb > cap) buf = realloc(buf, cap *= 2);
            memcpy(buf + used, t.data, nb);
            used += nb;
        }
        for (int k = 0; k < BATCH; k++, kused += 32)
            snprintf(*keys + kused, 32, "%s", sl_batch_key(b, k));
        sl_pipeline_release(p, b);
    }
    sl_pipeline_stats st;
    sl_pipeline_get_stats(p, &st);
    pool_jobs = pool_samples = -1;
    for (int k = 0; k < st.num_ops; k++)
        if (!strcmp(st.ops[k].name, "decoders.image"))
            pool_jobs = st.ops[k].pool_jobs, pool_samples = st.ops[k].pool_samples;
    CHECK(pool_jobs >= 0);
    sl_pipeline_free(p);
    *len = used;
    return buf;
}

static void epoch_misses(int *out) {
    for (int ep = 0; ep < EPOCHS; ep++) {
        out[ep] = 0;
        for (int k = 0; k < PER_EPOCH; k++) out[ep] += misses[ep * PER_EPOCH + k];
    }
}

/* Runs with the cache, compares with the run without, checks the decodes per epoch. */
static void run(const char *type, const char *cache, const int want[EPOCHS]) {
    size_t n0, n1;
    char *k0, *k1;
    unsigned char *ref = collect(type, "", &n0, &k0);
    memset(misses, 0, sizeof misses);
    nlines = 0;
    unsigned char *got = collect(type, cache, &n1, &k1);
    if (ref && got) {
        CHECK_MSG(n0 == n1 && memcmp(ref, got, n0) == 0, "%s%s: outputs differ with the cache",
                  type, cache);
        CHECK_MSG(memcmp(k0, k1, EPOCHS * 256 * 32) == 0, "%s%s: keys differ", type, cache);
    }
    CHECK_EQ_INT(nlines, EPOCHS * PER_EPOCH);
    int dec[EPOCHS];
    epoch_misses(dec);
    printf("%-6s%-50s decodes per epoch: %d %d %d; pool: %lld batches, %lld samples\n", type, cache,
           dec[0], dec[1], dec[2], (long long)pool_jobs, (long long)pool_samples);
    /* hits are copied by setup itself: only misses go to the pool, and a batch without any does
     * not wake it (batches the CPU stage ran ahead are hits too when the last epoch's are) */
    int batches_with_misses = 0, total = 0;
    for (int b = 0; b < EPOCHS * PER_EPOCH; b++) batches_with_misses += misses[b] > 0;
    for (int ep = 0; ep < EPOCHS; ep++) total += dec[ep];
    if (want[EPOCHS - 1] == 0) {
        CHECK_MSG(pool_jobs == batches_with_misses, "%s%s: %lld pool batches, %d with misses", type,
                  cache, (long long)pool_jobs, batches_with_misses);
        CHECK_MSG(pool_samples == total, "%s%s: %lld samples on the pool, %d misses", type, cache,
                  (long long)pool_samples, total);
    } else {
        CHECK(pool_samples >= total);
    }
    for (int ep = 0; ep < EPOCHS; ep++)
        CHECK_MSG(dec[ep] == want[ep], "%s%s: epoch %d decoded %d images, want %d", type, cache, ep,
                  dec[ep], want[ep]);
    free(ref);
    free(got);
    free(k0);
    free(k1);
}

int main(void) {
    sl_log_set_callback(on_log, NULL);
    const int all_cached[EPOCHS] = {256, 0, 0};
    const int none_cached[EPOCHS] = {256, 256, 256};
    const int largest[EPOCHS] = {256, 256, 0};
    run("GRAY", ", cache_size=1, cache_debug=True", all_cached);
    run("RGB", ", cache_size=2, cache_type=\"threshold\", cache_debug=True", all_cached);
    /* 28x28 GRAY is 784 bytes: below the threshold nothing is kept; RGB (2352 bytes) is */
    run("GRAY", ", cache_size=1, cache_threshold=1000, cache_debug=True", none_cached);
    run("RGB", ", cache_size=1, cache_threshold=1000, cache_debug=True", all_cached);
    run("GRAY", ", cache_size=1, cache_type=\"largest\", cache_debug=True", largest);

    sl_err e;
    sl_err_clear(&e);
    CHECK(make("GRAY", ", cache_size=1, cache_type=\"lru\"", &e) == NULL);
    CHECK_MSG(strstr(e.msg, "cache_type") != NULL, "%s", e.msg);
    sl_err_clear(&e);
    CHECK(make("GRAY", ", cache_size=-1", &e) == NULL);
    CHECK_MSG(strstr(e.msg, "cache_size") != NULL, "%s", e.msg);
    sl_log_set_callback(NULL, NULL);
    return check_done();
}
